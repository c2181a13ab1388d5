//! What the parts of a compilation share: the context that collects every error with its
//! place, and the checks each part uses (durations, sizes, secrets, URLs). The parts
//! (`upstream`, `routes`) and the driver (`compile`) build on it, never the other way.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper::Uri;

use super::Secrets;
use super::error::{ConfigError, ConfigErrors};
use super::raw::{self, At};
use crate::base::dialect::Dialect;
use crate::base::secret::{Secret, SecretSource};
use crate::base::units;

/// Looks up an environment variable; injectable so tests need not touch the process
/// environment (`set_var` is unsafe in edition 2024).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// What the parts of a compilation share: where relative paths start, how to read the
/// environment, and the errors and warnings found so far.
pub struct Ctx<'a> {
    source: &'a Path,
    dir: &'a Path,
    env: EnvLookup<'a>,
    errors: Vec<ConfigError>,
    pub warnings: Vec<String>,
    /// Every file read besides the table itself.
    files: Vec<PathBuf>,
    /// Whether secrets are read.
    secrets: Secrets,
    /// The sources of the secrets not read ([`Secrets::ShapeOnly`]), in the order met.
    unread: Vec<SecretSource>,
}

// === impl Ctx ===

impl<'a> Ctx<'a> {
    pub fn new(source: &'a Path, dir: &'a Path, env: EnvLookup<'a>, secrets: Secrets) -> Self {
        Ctx {
            source,
            dir,
            env,
            errors: Vec::new(),
            warnings: Vec::new(),
            files: Vec::new(),
            secrets,
            unread: Vec::new(),
        }
    }

    /// The warnings and the files read, or every error found.
    pub fn finish(self) -> Result<(Vec<String>, Vec<PathBuf>), ConfigErrors> {
        if !self.errors.is_empty() {
            return Err(ConfigErrors::sorted(self.errors));
        }
        Ok((self.warnings, self.files))
    }
}

impl Ctx<'_> {
    pub fn error<T>(&mut self, at: &At<T>, message: impl Into<String>) {
        self.errors.push(ConfigError {
            file: self.source.to_path_buf(),
            line: at.line,
            column: at.column,
            message: message.into(),
        });
    }

    /// A file the table reads (certificate, key, CA, secret): relative paths start at the
    /// table's directory. Recorded, since a change to it is a change to the table.
    pub fn path(&mut self, path: &str) -> PathBuf {
        let path = self.dir.join(path);
        self.files.push(path.clone());
        path
    }

    /// A path beside the table (relative paths start at its directory) that the table does
    /// not read: not watched for changes (see [`Ctx::path`]).
    pub fn beside(&self, path: &str) -> PathBuf {
        self.dir.join(path)
    }

    /// Parses a dialect name; `what` says whose (`upstream \`models\``).
    pub fn dialect(&mut self, at: &At<String>, what: &str) -> Option<Dialect> {
        let dialect = Dialect::parse(&at.value);
        if dialect.is_none() {
            let names: Vec<_> = Dialect::ALL.iter().map(|d| d.as_str()).collect();
            let message = format!(
                "{what}: unknown dialect `{}`; speaks is one of {}",
                at.value,
                names.join(", ")
            );
            self.error(at, message);
        }
        dialect
    }

    /// Parses a duration; zero is refused unless `zero_ok` (a zero timeout would fail
    /// every request).
    pub fn duration(&mut self, at: &At<String>, what: &str, zero_ok: bool) -> Option<Duration> {
        match units::parse_duration(&at.value) {
            Ok(d) if d.is_zero() && !zero_ok => {
                self.error(at, format!("{what} must be more than 0"))
            }
            Ok(d) => return Some(d),
            Err(e) => self.error(at, format!("{what}: {e}")),
        }
        None
    }

    /// Parses a retry schedule: successive delays (zero allowed), at most `max` of them.
    pub fn schedule(
        &mut self,
        raw: &At<Vec<At<String>>>,
        what: &str,
        max: usize,
    ) -> Option<Vec<Duration>> {
        if raw.value.len() > max {
            let message = format!("{what} has {} delays; at most {max}", raw.value.len());
            self.error(raw, message);
            return None;
        }
        let delays: Vec<_> = raw
            .value
            .iter()
            .map(|d| self.duration(d, what, true))
            .collect();
        delays.into_iter().collect()
    }

    /// Parses a size; zero is refused (it would refuse every request body).
    pub fn size(&mut self, at: &At<String>, what: &str) -> Option<u64> {
        match units::parse_size(&at.value) {
            Ok(0) => self.error(at, format!("{what} must be more than 0")),
            Ok(n) => return Some(n),
            Err(e) => self.error(at, format!("{what}: {e}")),
        }
        None
    }

    /// A count that must be at least 1 (a zero limit would refuse everything).
    pub fn count(&mut self, at: Option<At<u64>>, what: &str, default: usize) -> usize {
        match at {
            None => default,
            Some(at) if at.value == 0 => {
                self.error(&at, format!("{what} must be more than 0"));
                default
            }
            Some(at) => usize::try_from(at.value).unwrap_or(usize::MAX),
        }
    }

    /// Resolves a secret (with [`Secrets::ShapeOnly`], checks its shape and stands a
    /// placeholder for it). Messages name the variable or file, never the value.
    pub fn secret(&mut self, at: &At<raw::Secret>, what: &str) -> Option<(Secret, SecretSource)> {
        let (value, source) = match &at.value {
            raw::Secret {
                env: Some(var),
                file: None,
                value: None,
            } => self.env_secret(at, var, what)?,
            raw::Secret {
                env: None,
                file: Some(path),
                value: None,
            } => self.file_secret(at, path, what)?,
            raw::Secret {
                env: None,
                file: None,
                value: Some(value),
            } => (value.clone(), SecretSource::Inline),
            _ => {
                let message = format!(
                    "{what}: a secret is exactly one of {{ env: VAR }}, {{ file: PATH }} or {{ value: \"...\" }}"
                );
                self.error(at, message);
                return None;
            }
        };
        if value.is_empty() {
            let empty = match &source {
                SecretSource::Env(var) => format!("environment variable `{var}` is empty"),
                SecretSource::File(path) => format!("secret file `{}` is empty", path.display()),
                SecretSource::Inline => "the inline secret is empty".to_owned(),
            };
            self.error(at, format!("{what}: {empty}"));
            return None;
        }
        Some((Secret::new(value), source))
    }

    /// `{ env: VAR }`: the variable's value.
    fn env_secret(
        &mut self,
        at: &At<raw::Secret>,
        var: &str,
        what: &str,
    ) -> Option<(String, SecretSource)> {
        // What the environment cannot hold (`std::env::var` refuses these names).
        if var.is_empty() || var.contains(['=', '\0']) {
            let message = format!("{what}: `{var}` is not an environment variable name");
            self.error(at, message);
            return None;
        }
        let source = SecretSource::Env(var.to_owned());
        if self.secrets == Secrets::ShapeOnly {
            return Some((self.placeholder(&source), source));
        }
        match (self.env)(var) {
            Some(value) => Some((value, source)),
            None => {
                let message = format!("{what}: environment variable `{var}` is not set");
                self.error(at, message);
                None
            }
        }
    }

    /// `{ file: PATH }`: the file's text, trailing white space dropped.
    fn file_secret(
        &mut self,
        at: &At<raw::Secret>,
        path: &str,
        what: &str,
    ) -> Option<(String, SecretSource)> {
        if path.is_empty() {
            self.error(at, format!("{what}: the secret's `file:` is empty"));
            return None;
        }
        if self.secrets == Secrets::ShapeOnly {
            let source = SecretSource::File(self.dir.join(path));
            return Some((self.placeholder(&source), source));
        }
        let path = self.path(path);
        match std::fs::read_to_string(&path) {
            Ok(text) => Some((text.trim_end().to_owned(), SecretSource::File(path))),
            Err(e) => {
                let message = format!("{what}: cannot read secret file `{}`: {e}", path.display());
                self.error(at, message);
                None
            }
        }
    }

    /// What stands for a secret that is not read: the same for the same source (two clients
    /// on one variable share a key, as they would when it is read), a header's worth of text.
    fn placeholder(&mut self, source: &SecretSource) -> String {
        let n = match self.unread.iter().position(|s| s == source) {
            Some(n) => n,
            None => {
                self.unread.push(source.clone());
                self.unread.len() - 1
            }
        };
        format!("unread-secret-{n}")
    }
}

/// Checks an optional setting: `Some(None)` when it is absent, `None` when it is present but
/// wrong (`check` has recorded why), so callers can tell "not set" from "failed".
pub fn optional<T, U>(raw: Option<T>, check: impl FnOnce(T) -> Option<U>) -> Option<Option<U>> {
    match raw {
        None => Some(None),
        Some(raw) => check(raw).map(Some),
    }
}

/// Parses an absolute `http`/`https` URL with a host and no query, fragment or credentials;
/// a trailing `/` on the path is dropped (the root path stays `/`: a `Uri` cannot be emptier).
/// The message completes a sentence starting with the URL's role ("url ...").
pub fn http_url(text: &str) -> Result<Uri, String> {
    let uri: Uri = text
        .parse()
        .map_err(|_| format!("`{text}` is not a URL (for example http://127.0.0.1:11434)"))?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(format!("`{text}` must start with http:// or https://"));
    };
    if scheme != "http" && scheme != "https" {
        return Err(format!("`{text}` must start with http:// or https://"));
    }
    if authority.as_str().contains('@') {
        // Not echoed: the part before `@` is a credential.
        return Err("must not carry credentials; use `auth:` instead".into());
    }
    if authority.host().is_empty() {
        return Err(format!("`{text}` has no host"));
    }
    if text.contains(['?', '#']) {
        return Err(format!("`{text}` must not have a query or fragment"));
    }
    let path = match uri.path().trim_end_matches('/') {
        "" => "/",
        path => path,
    };
    Uri::builder()
        .scheme(scheme)
        .authority(authority.clone())
        .path_and_query(path)
        .build()
        .map_err(|_| format!("`{text}` is not a URL"))
}
