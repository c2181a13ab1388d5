//! Loading a route table: file -> raw -> table.
//!
//! 1. **file**: the text of `proxy.yaml` ([`load`] reads it; [`load_str`] takes it as is).
//! 2. **raw**: [`raw`] parses it into serde structs that mirror the file, refusing unknown
//!    keys and duplicate keys. Only this step knows the YAML crate.
//! 3. **table**: [`compile`] checks everything else (addresses, URLs, names, secrets, TLS
//!    files, durations, duplicate routes) and builds the immutable [`RouteTable`], reporting
//!    every problem with its line and column.
//!
//! `lingo check`, startup and reload all go through [`load`], so a table that passes
//! `check` is exactly a table that loads (`lingo check --no-secrets` too, with its secrets
//! checked for their shape only: [`Secrets::ShapeOnly`]).

use std::path::Path;

mod backends;
pub mod compile;
mod ctx;
pub mod error;
mod indent;
mod quota;
pub mod raw;
mod routes;
pub mod summary;
mod tls;
mod upstream;
mod webhooks;

pub use ctx::EnvLookup;
pub use error::{ConfigError, ConfigErrors};
pub use routes::translator_status;
pub use summary::summary;

use crate::table::RouteTable;

/// Whether loading reads the secrets a table names, or checks only how they are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Secrets {
    /// `{ env: VAR }` and `{ file: PATH }` are read: what serving needs.
    #[default]
    Read,
    /// Neither is read, each stands for a key of its own (`lingo check --no-secrets`): a
    /// table loaded so is for reading, never for serving.
    ShapeOnly,
}

/// Reads, parses and compiles the table at `path`, with secrets from the process environment.
pub fn load(path: &Path) -> Result<RouteTable, ConfigErrors> {
    load_with(path, Secrets::Read)
}

/// [`load`], reading the table's secrets or not.
pub fn load_with(path: &Path, secrets: Secrets) -> Result<RouteTable, ConfigErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            message: format!("cannot read the file: {e}"),
        }])
    })?;
    let env = |name: &str| std::env::var(name).ok();
    load_str_with(&text, path, &env, secrets)
}

/// Parses and compiles `text` as if read from `source` (named in errors; relative secret and
/// TLS paths resolve against its directory), with secrets from the process environment.
pub fn load_str(text: &str, source: &Path) -> Result<RouteTable, ConfigErrors> {
    load_str_with_env(text, source, &|name| std::env::var(name).ok())
}

/// [`load_str`] with environment variables looked up through `env` (tests pass a map).
pub fn load_str_with_env(
    text: &str,
    source: &Path,
    env: EnvLookup<'_>,
) -> Result<RouteTable, ConfigErrors> {
    load_str_with(text, source, env, Secrets::Read)
}

fn load_str_with(
    text: &str,
    source: &Path,
    env: EnvLookup<'_>,
    secrets: Secrets,
) -> Result<RouteTable, ConfigErrors> {
    let file = raw::parse(text).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            file: source.to_path_buf(),
            line: e.line,
            column: e.column,
            message: e.message,
        }])
    })?;
    compile::compile(file, source, env, secrets)
}

#[cfg(test)]
mod tests;
