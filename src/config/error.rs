//! Load errors in the shape editors and CI logs understand: `file:line:column: reason`.
//!
//! Loading reports every problem it finds at once ([`ConfigErrors`]), so fixing a table is
//! one round trip rather than one per mistake. Messages are plain words and never contain
//! a secret's value.

use std::fmt;
use std::path::PathBuf;

/// One problem in a route table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based; 0 when the problem has no place in the file (e.g. it cannot be read).
    pub line: usize,
    /// 1-based; 0 when unknown.
    pub column: usize,
    pub message: String,
}

/// Every problem found while loading, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

// === impl ConfigError ===

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        match (self.line, self.column) {
            (0, _) => write!(f, "{file}: {}", self.message),
            (line, 0) => write!(f, "{file}:{line}: {}", self.message),
            (line, column) => write!(f, "{file}:{line}:{column}: {}", self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

// === impl ConfigErrors ===

impl ConfigErrors {
    /// Sorts by place in the file, keeping the order found for errors on the same spot.
    pub(crate) fn sorted(mut errors: Vec<ConfigError>) -> Self {
        errors.sort_by_key(|e| (e.line, e.column));
        ConfigErrors(errors)
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(line: usize, column: usize, message: &str) -> ConfigError {
        ConfigError {
            file: "proxy.yaml".into(),
            line,
            column,
            message: message.into(),
        }
    }

    #[test]
    fn display_omits_unknown_places() {
        let cases = [
            (12, 5, "proxy.yaml:12:5: bad"),
            (12, 0, "proxy.yaml:12: bad"),
            (0, 0, "proxy.yaml: bad"),
        ];
        for (line, column, expected) in cases {
            assert_eq!(error(line, column, "bad").to_string(), expected);
        }
    }

    #[test]
    fn errors_print_one_per_line_in_file_order() {
        let errors =
            ConfigErrors::sorted(vec![error(9, 1, "b"), error(0, 0, "a"), error(3, 2, "c")]);
        assert_eq!(
            errors.to_string(),
            "proxy.yaml: a\nproxy.yaml:3:2: c\nproxy.yaml:9:1: b"
        );
    }
}
