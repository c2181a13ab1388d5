//! The `lingo` binary: parse the command line, run it, map the outcome to an exit code.
//!
//! Exit codes: 0 done, 1 the route table does not load or lingo cannot start, 2 a command
//! line lingo does not understand. Output to a reader that went away (`lingo --help | head
//! -1`) ends the command quietly with 0: the reader had what it wanted, and a shell pipeline
//! with `pipefail` should not fail for it.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use lingo::cli::{self, Command};
use lingo::config::Secrets;
use lingo::mock::knobs::Knobs;
use lingo::observe::LogFormat;
use lingo::table::MockSpec;
use lingo::{config, observe, server};

mod allocator;

/// mimalloc rather than the system's malloc: less CPU per request forwarded (malloc and free
/// are a large share of lingo's time), built (`.cargo/config.toml`) to commit memory as it
/// is used, so that an open stream costs about what it does with glibc; called as
/// `allocator` says.
#[global_allocator]
static ALLOCATOR: allocator::Mimalloc = allocator::Mimalloc;

/// The version and the commit it was built from (`build.rs`).
const VERSION: &str = concat!(
    "lingo ",
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("LINGO_COMMIT"),
    ")"
);

fn main() -> ExitCode {
    let command = match cli::parse() {
        Ok(command) => command,
        Err(e) => return usage_error(&e),
    };
    match command {
        Command::Help(topic) => print(&format!("{}\n", topic.help())),
        Command::Version => print(&format!("{VERSION}\n")),
        Command::Check { path, secrets } => check(&path, secrets),
        Command::Serve { config, log_format } => match log_format_or_env(log_format) {
            Ok(format) => serve(&config, format),
            Err(code) => code,
        },
        Command::Mock {
            listen,
            knobs,
            log_format,
        } => match log_format_or_env(log_format) {
            Ok(format) => mock(listen, &knobs, format),
            Err(code) => code,
        },
    }
}

/// Writes `text` to stdout: 0, also when the reader has gone away; 1 when stdout fails
/// otherwise (a full disk), said on stderr.
fn print(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            say(&format!("error: cannot write the output: {e}"));
            ExitCode::FAILURE
        }
    }
}

/// Writes a line to stderr; a stderr that cannot be written has no one to tell.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A command line lingo does not understand: the reason, then the usage (every command).
fn usage_error(e: &dyn std::fmt::Display) -> ExitCode {
    say(&format!(
        "error: {e}\n\n{}\n\n`lingo --help` says more.",
        cli::help::USAGE
    ));
    ExitCode::from(2)
}

/// `--log-format`, else `LINGO_LOG_FORMAT`, else text; a bad variable is a usage error.
fn log_format_or_env(option: Option<LogFormat>) -> Result<LogFormat, ExitCode> {
    let env = std::env::var_os(cli::LOG_FORMAT_VAR);
    cli::log_format(option, env).map_err(|e| usage_error(&e))
}

fn check(path: &Path, secrets: Secrets) -> ExitCode {
    match config::load_with(path, secrets) {
        Ok(table) => {
            let mut text = config::summary(&table);
            if secrets == Secrets::ShapeOnly {
                text.push_str("\nsecrets: not read (--no-secrets); their shape is checked\n");
            }
            print(&text)
        }
        Err(errors) => {
            for e in &errors.0 {
                say(&format!("error: {e}"));
            }
            ExitCode::FAILURE
        }
    }
}

fn serve(config: &Path, format: LogFormat) -> ExitCode {
    observe::init(format);
    match runtime().block_on(server::serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(server::StartError::Config(errors)) => {
            tracing::error!(
                errors = %errors,
                "the route table does not load; nothing is served (`lingo check {}` lists the problems)",
                config.display()
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            tracing::error!("cannot start: {e}");
            ExitCode::FAILURE
        }
    }
}

fn mock(listen: SocketAddr, knobs: &str, format: LogFormat) -> ExitCode {
    let mut defaults = Knobs::from_spec(&MockSpec::default());
    if let Err(e) = defaults.apply(knobs) {
        return usage_error(&e);
    }
    observe::init(format);
    // Ends on SIGTERM or Ctrl-C with success, as lingo does: a build instrumented to count
    // what runs (benches/pgo.sh) writes its counts only on a normal exit.
    let served = runtime().block_on(async {
        tokio::select! {
            served = lingo::mock::serve(listen, defaults) => served,
            () = server::shutdown_signal() => Ok(()),
        }
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("cannot serve the mock on {listen}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the tokio runtime starts")
}
