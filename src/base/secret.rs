//! Secrets (client keys, upstream keys) that cannot be printed by accident.

use std::borrow::Cow;
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

    /// `text` with every occurrence of the secret replaced by `<redacted>`. An upstream may
    /// echo the credential it was sent in an error message, and lingo translates those.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.0.is_empty() || !text.contains(&self.0) {
            return Cow::Borrowed(text);
        }
        Cow::Owned(text.replace(&self.0, "<redacted>"))
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

/// Compares a candidate with a secret in time that depends only on the secret's length (and
/// on the candidate's, which its sender knows), so that neither the key's bytes nor its
/// length can be guessed from response timings.
pub fn constant_time_eq(secret: &[u8], candidate: &[u8]) -> bool {
    let mut diff = u8::from(secret.len() != candidate.len());
    for (i, s) in secret.iter().enumerate() {
        let c = candidate.get(i).copied().unwrap_or(0);
        // Keep the optimiser from stopping at the first difference.
        diff = std::hint::black_box(diff | (s ^ c));
    }
    diff == 0
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
    fn redaction_finds_every_occurrence() {
        let s = Secret::new("fc-key");
        assert_eq!(s.redact("no key here"), "no key here");
        assert_eq!(
            s.redact("bad key fc-key (fc-key)"),
            "bad key <redacted> (<redacted>)"
        );
        assert_eq!(Secret::new("").redact("anything"), "anything");
    }

    #[test]
    fn constant_time_eq_matches_eq() {
        for (a, b) in [
            ("", ""),
            ("a", "a"),
            ("a", "b"),
            ("ab", "a"),
            ("a", "ab"),
            ("a", "a\0"),
            ("a\0", "a"),
            ("", "x"),
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
