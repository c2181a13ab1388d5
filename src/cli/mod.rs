//! Command line -> [`Command`].
//!
//! lexopt rather than clap: three commands and a few options do not justify clap's build
//! time. Parsing is separate from acting on the result so it can be tested without spawning
//! the binary; [`mod@help`] holds what `--help` prints.

use std::ffi::{OsStr, OsString};
use std::net::SocketAddr;
use std::path::PathBuf;

pub mod help;

use crate::config::Secrets;
use crate::observe::LogFormat;

/// The route table read when no path is given.
pub const DEFAULT_CONFIG: &str = "proxy.yaml";

/// Where `lingo mock` listens by default (next to a real model server's 11434).
pub const DEFAULT_MOCK_LISTEN: &str = "127.0.0.1:11435";

/// The environment variable that sets the log format when `--log-format` does not.
pub const LOG_FORMAT_VAR: &str = "LINGO_LOG_FORMAT";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Serve {
        config: PathBuf,
        /// `--log-format`, if given (see [`log_format`]).
        log_format: Option<LogFormat>,
    },
    Check {
        path: PathBuf,
        secrets: Secrets,
    },
    /// `knobs` is in the mock's `key=value,...` syntax.
    Mock {
        listen: SocketAddr,
        knobs: String,
        log_format: Option<LogFormat>,
    },
    Help(Topic),
    Version,
}

/// Whose help to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    Lingo,
    Serve,
    Check,
    Mock,
}

/// A command line lingo does not understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CliError {
    #[error("unknown command `{0}`; the commands are serve (the default), check, mock and help")]
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
    let mut serving = Serving::default();
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help(Topic::Lingo)),
            Short('V') | Long("version") => return Ok(Command::Version),
            // A command comes first: `lingo --config x check` is a mistake.
            Value(command) if serving.is_empty() => {
                return match topic(&command)? {
                    Topic::Lingo => help(&mut parser),
                    Topic::Serve => serve(&mut parser),
                    Topic::Check => check(&mut parser),
                    Topic::Mock => mock(&mut parser),
                };
            }
            arg => {
                let option = Serving::option(arg)?;
                serving.set(option, &mut parser)?;
            }
        }
    }
    Ok(serving.command())
}

/// The `--log-format` to use: the option's if given, else `LINGO_LOG_FORMAT`'s (`env`),
/// else text.
pub fn log_format(option: Option<LogFormat>, env: Option<OsString>) -> Result<LogFormat, CliError> {
    match (option, env) {
        (Some(format), _) => Ok(format),
        (None, None) => Ok(LogFormat::default()),
        (None, Some(value)) => LogFormat::parse(&value.to_string_lossy()).ok_or_else(|| {
            CliError::Invalid(format!(
                "{LOG_FORMAT_VAR} is `{}`; it is {}",
                value.to_string_lossy(),
                LogFormat::NAMES
            ))
        }),
    }
}

/// The command a word names (`help` is [`Topic::Lingo`]).
fn topic(word: &OsStr) -> Result<Topic, CliError> {
    match word.to_string_lossy().as_ref() {
        "help" => Ok(Topic::Lingo),
        "serve" => Ok(Topic::Serve),
        "check" => Ok(Topic::Check),
        "mock" => Ok(Topic::Mock),
        other => Err(CliError::UnknownCommand(other.to_owned())),
    }
}

/// The rest of `help [COMMAND]`.
fn help(parser: &mut lexopt::Parser) -> Result<Command, CliError> {
    use lexopt::prelude::*;

    let mut topic_asked = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Value(word) if topic_asked.is_none() => topic_asked = Some(topic(&word)?),
            other => return Err(other.unexpected().into()),
        }
    }
    Ok(Command::Help(topic_asked.unwrap_or(Topic::Lingo)))
}

/// The options of `serve`, given with or without the command's name.
#[derive(Default)]
struct Serving {
    config: Option<PathBuf>,
    log_format: Option<LogFormat>,
}

/// An option [`Serving`] takes.
enum ServeOption {
    Config,
    LogFormat,
}

impl Serving {
    fn is_empty(&self) -> bool {
        self.config.is_none() && self.log_format.is_none()
    }

    /// Which of serve's options `arg` is; any other is refused.
    fn option(arg: lexopt::Arg<'_>) -> Result<ServeOption, CliError> {
        use lexopt::prelude::*;

        match arg {
            Short('c') | Long("config") => Ok(ServeOption::Config),
            Long("log-format") => Ok(ServeOption::LogFormat),
            other => Err(other.unexpected().into()),
        }
    }

    /// Takes the option's value.
    fn set(&mut self, option: ServeOption, parser: &mut lexopt::Parser) -> Result<(), CliError> {
        match option {
            ServeOption::Config => self.config = Some(parser.value()?.into()),
            ServeOption::LogFormat => self.log_format = Some(log_format_option(parser)?),
        }
        Ok(())
    }

    fn command(self) -> Command {
        Command::Serve {
            config: self.config.unwrap_or_else(|| DEFAULT_CONFIG.into()),
            log_format: self.log_format,
        }
    }
}

/// The rest of `serve [--config PATH] [--log-format FORMAT]`.
fn serve(parser: &mut lexopt::Parser) -> Result<Command, CliError> {
    use lexopt::prelude::*;

    let mut serving = Serving::default();
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help(Topic::Serve)),
            arg => {
                let option = Serving::option(arg)?;
                serving.set(option, parser)?;
            }
        }
    }
    Ok(serving.command())
}

/// The rest of `check [--no-secrets] [PATH]`; PATH defaults to [`DEFAULT_CONFIG`].
fn check(parser: &mut lexopt::Parser) -> Result<Command, CliError> {
    use lexopt::prelude::*;

    let mut path: Option<PathBuf> = None;
    let mut secrets = Secrets::Read;
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help(Topic::Check)),
            Long("no-secrets") => secrets = Secrets::ShapeOnly,
            Value(value) if path.is_none() => path = Some(value.into()),
            other => return Err(other.unexpected().into()),
        }
    }
    let path = path.unwrap_or_else(|| DEFAULT_CONFIG.into());
    Ok(Command::Check { path, secrets })
}

/// The rest of `mock [--listen ADDR] [--log-format FORMAT] [--KNOB VALUE ...]`. Knob flags
/// are passed on as `knob=value` for the mock to check, so the flags and the `X-Mock` header
/// share one syntax.
fn mock(parser: &mut lexopt::Parser) -> Result<Command, CliError> {
    use lexopt::prelude::*;

    let mut listen = DEFAULT_MOCK_LISTEN.to_owned();
    let mut log_format = None;
    let mut knobs = Vec::new();
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help(Topic::Mock)),
            Short('l') | Long("listen") => listen = parser.value()?.string()?,
            Long("log-format") => log_format = Some(log_format_option(parser)?),
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
        log_format,
    })
}

/// The value of `--log-format`.
fn log_format_option(parser: &mut lexopt::Parser) -> Result<LogFormat, CliError> {
    use lexopt::prelude::*;

    let value = parser.value()?.string()?;
    LogFormat::parse(&value).ok_or_else(|| {
        CliError::Invalid(format!(
            "`--log-format {value}`: the format is {}",
            LogFormat::NAMES
        ))
    })
}

// === impl Topic ===

impl Topic {
    /// What `--help` prints for this command.
    pub fn help(self) -> String {
        match self {
            Topic::Lingo => help::LINGO.replace("{USAGE}", help::USAGE),
            Topic::Serve => help::SERVE.to_owned(),
            Topic::Check => help::CHECK.to_owned(),
            Topic::Mock => help::MOCK.to_owned(),
        }
    }
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
mod tests;
