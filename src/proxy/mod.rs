//! The proxy: one request's life, read top-down in [`pipeline`]: its [`exchange`], the
//! [`plan`] decided once, the [`run`] that carries it out, and [`respond`], the only place an
//! error becomes a response.

pub mod exchange;
pub mod limited;
pub mod pipeline;
pub mod plan;
pub mod respond;
pub mod run;
