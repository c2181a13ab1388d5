//! Command line -> [`Command`].
//!
//! lexopt rather than clap: two commands and one option do not justify clap's build time.
//! Parsing is separate from acting on the result so it can
//! be tested without spawning the binary.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The route table read when no path is given.
pub const DEFAULT_CONFIG: &str = "proxy.yaml";

/// Where `lingo mock` listens by default (next to a real model server's 11434).
pub const DEFAULT_MOCK_LISTEN: &str = "127.0.0.1:11435";

pub const USAGE: &str = "\
usage:
  lingo [--config PATH]   serve with the route table at PATH (default proxy.yaml)
  lingo check [PATH]      load and check the route table, print what it means
  lingo mock [--listen ADDR] [--KNOB VALUE ...]
                          run the built-in mock backend alone (default 127.0.0.1:11435);
                          knobs: --tokens N --token-delay D --first-token-delay D
                          --embedding-size N --status CODE --error-after N --cut-after N
                          --speaks chat-completions (answer /v1/* inference calls)
  lingo --help            print this help
  lingo --version         print the version

options:
  -c, --config PATH       the route table to serve";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Serve {
        config: PathBuf,
    },
    Check {
        path: PathBuf,
    },
    /// `knobs` is in the mock's `key=value,...` syntax.
    Mock {
        listen: SocketAddr,
        knobs: String,
    },
    Help,
    Version,
}

/// A command line lingo does not understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CliError {
    #[error("unknown command `{0}`; the command is `check` (or none, to serve)")]
    UnknownCommand(String),
    #[error("unknown option `{0}`")]
    UnknownOption(String),
    #[error("`{0}` needs a value")]
    MissingValue(String),
    #[error("unexpected argument `{0}`")]
    UnexpectedArgument(String),
    #[error("{0}")]
    Invalid(String),
}

/// Parses the process's arguments.
pub fn parse() -> Result<Command, CliError> {
    parse_from(std::env::args_os().skip(1))
}

/// Parses `args`, which do not include the program name.
pub fn parse_from(args: impl IntoIterator<Item = OsString>) -> Result<Command, CliError> {
    use lexopt::prelude::*;

    let mut parser = lexopt::Parser::from_args(args);
    let mut config: Option<PathBuf> = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help),
            Short('V') | Long("version") => return Ok(Command::Version),
            Short('c') | Long("config") => config = Some(parser.value()?.into()),
            Value(command) if config.is_none() => {
                return match command.to_string_lossy().as_ref() {
                    "check" => check(&mut parser),
                    "mock" => mock(&mut parser),
                    other => Err(CliError::UnknownCommand(other.to_owned())),
                };
            }
            other => return Err(other.unexpected().into()),
        }
    }
    let config = config.unwrap_or_else(|| DEFAULT_CONFIG.into());
    Ok(Command::Serve { config })
}

/// The rest of `check [PATH]`; PATH defaults to [`DEFAULT_CONFIG`].
fn check(parser: &mut lexopt::Parser) -> Result<Command, CliError> {
    use lexopt::prelude::*;

    let mut path: Option<PathBuf> = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help),
            Value(value) if path.is_none() => path = Some(value.into()),
            other => return Err(other.unexpected().into()),
        }
    }
    let path = path.unwrap_or_else(|| DEFAULT_CONFIG.into());
    Ok(Command::Check { path })
}

/// The rest of `mock [--listen ADDR] [--KNOB VALUE ...]`. Knob flags are passed on as
/// `knob=value` for the mock to check, so the flags and the `X-Mock` header share one syntax.
fn mock(parser: &mut lexopt::Parser) -> Result<Command, CliError> {
    use lexopt::prelude::*;

    let mut listen = DEFAULT_MOCK_LISTEN.to_owned();
    let mut knobs = Vec::new();
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help),
            Short('l') | Long("listen") => listen = parser.value()?.string()?,
            Long(knob) => {
                let knob = knob.replace('-', "_");
                let value = parser.value()?.string()?;
                knobs.push(format!("{knob}={value}"));
            }
            other => return Err(other.unexpected().into()),
        }
    }
    let listen = listen
        .parse()
        .map_err(|_| CliError::Invalid(format!("`{listen}` is not an IP:PORT address")))?;
    Ok(Command::Mock {
        listen,
        knobs: knobs.join(","),
    })
}

// === impl CliError ===

impl From<lexopt::Error> for CliError {
    fn from(error: lexopt::Error) -> Self {
        match error {
            lexopt::Error::UnexpectedOption(option) => CliError::UnknownOption(option),
            lexopt::Error::UnexpectedArgument(arg) => {
                CliError::UnexpectedArgument(arg.to_string_lossy().into_owned())
            }
            lexopt::Error::MissingValue { option } => {
                CliError::MissingValue(option.unwrap_or_default())
            }
            other => CliError::Invalid(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &str) -> Result<Command, CliError> {
        parse_from(args.split_whitespace().map(OsString::from))
    }

    fn serve(config: &str) -> Result<Command, CliError> {
        Ok(Command::Serve {
            config: config.into(),
        })
    }

    fn check(path: &str) -> Result<Command, CliError> {
        Ok(Command::Check { path: path.into() })
    }

    #[test]
    fn commands() {
        let cases = [
            ("", serve("proxy.yaml")),
            ("--config other.yaml", serve("other.yaml")),
            ("--config=other.yaml", serve("other.yaml")),
            ("-c other.yaml", serve("other.yaml")),
            ("check", check("proxy.yaml")),
            ("check my.yaml", check("my.yaml")),
            ("--help", Ok(Command::Help)),
            ("-h", Ok(Command::Help)),
            ("check --help", Ok(Command::Help)),
            ("--version", Ok(Command::Version)),
            ("-V", Ok(Command::Version)),
            (
                "mock",
                Ok(Command::Mock {
                    listen: DEFAULT_MOCK_LISTEN.parse().unwrap(),
                    knobs: String::new(),
                }),
            ),
            (
                "mock --listen 127.0.0.1:9 --tokens 3 --token-delay 100ms",
                Ok(Command::Mock {
                    listen: "127.0.0.1:9".parse().unwrap(),
                    knobs: "tokens=3,token_delay=100ms".into(),
                }),
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(parse(args), expected, "lingo {args}");
        }
    }

    #[test]
    fn errors() {
        let cases = [
            (
                "serve",
                "unknown command `serve`; the command is `check` (or none, to serve)",
            ),
            ("--bogus", "unknown option `--bogus`"),
            ("--config", "`--config` needs a value"),
            ("-c", "`-c` needs a value"),
            ("check a.yaml b.yaml", "unexpected argument `b.yaml`"),
            ("check --config x", "unknown option `--config`"),
            ("--config x extra", "unexpected argument `extra`"),
            (
                "mock --listen nowhere",
                "`nowhere` is not an IP:PORT address",
            ),
            ("mock --tokens", "`--tokens` needs a value"),
        ];
        for (args, expected) in cases {
            assert_eq!(
                parse(args).unwrap_err().to_string(),
                expected,
                "lingo {args}"
            );
        }
    }
}
