//! Secrets (client keys, upstream keys) that cannot be printed by accident.

use std::fmt;
use std::path::PathBuf;

/// A secret value read from the environment, a file or the table itself.
///
/// `Debug` and `Display` are redacted so a secret can sit in any struct that is logged.
/// The only way to the value is [`Secret::expose`], which makes every use greppable.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

// === impl Secret ===

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret's value. Call sites must not log or echo it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Where a secret came from: safe to print (`lingo check`, logs), unlike the secret itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretSource {
    /// `{ env: VAR }`
    Env(String),
    /// `{ file: PATH }`, resolved against the table's directory.
    File(PathBuf),
    /// `{ value: "..." }`, written in the table itself.
    Inline,
}

// === impl SecretSource ===

impl fmt::Display for SecretSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretSource::Env(var) => write!(f, "env {var}"),
            SecretSource::File(path) => write!(f, "file {}", path.display()),
            SecretSource::Inline => f.write_str("inline value"),
        }
    }
}

/// Compares two byte strings in time that depends only on their lengths, so that a client
/// key cannot be guessed byte by byte from response timings.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_prints() {
        let s = Secret::new("sk-very-secret");
        assert!(!format!("{s:?} {s}").contains("very"));
        assert_eq!(s.expose(), "sk-very-secret");
    }

    #[test]
    fn constant_time_eq_matches_eq() {
        for (a, b) in [
            ("", ""),
            ("a", "a"),
            ("a", "b"),
            ("ab", "a"),
            ("key1", "key2"),
        ] {
            assert_eq!(
                constant_time_eq(a.as_bytes(), b.as_bytes()),
                a == b,
                "{a} {b}"
            );
        }
    }
}
