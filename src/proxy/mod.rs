//! The proxy: one request's life, read top-down in [`pipeline`], run by one of [`run`]'s
//! modules, every error answered by [`respond`].

pub mod pipeline;
pub mod respond;
pub mod run;
