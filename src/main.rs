//! The `lingo` binary: parse the command line, run it, map the outcome to an exit code.

use std::process::ExitCode;

use lingo::cli::{self, Command};
use lingo::mock::knobs::Knobs;
use lingo::table::MockSpec;
use lingo::{config, observe, server};

mod allocator;

/// mimalloc rather than the system's malloc: 15-20% less CPU per request forwarded (malloc
/// and free were a tenth of lingo's time), built (`.cargo/config.toml`) to commit memory as
/// it is used, so that an open stream costs about what it did with glibc; called as
/// `allocator` says. docs/benchmarks.md.
#[global_allocator]
static ALLOCATOR: allocator::Mimalloc = allocator::Mimalloc;

fn main() -> ExitCode {
    let command = match cli::parse() {
        Ok(command) => command,
        Err(e) => {
            eprintln!("error: {e}\n\n{}", cli::USAGE);
            return ExitCode::from(2);
        }
    };
    match command {
        Command::Help => println!("{}", cli::USAGE),
        Command::Version => println!("lingo {}", env!("CARGO_PKG_VERSION")),
        Command::Check { path } => match config::load(&path) {
            Ok(table) => print!("{}", config::summary(&table)),
            Err(errors) => {
                for e in &errors.0 {
                    eprintln!("error: {e}");
                }
                return ExitCode::FAILURE;
            }
        },
        Command::Serve { config } => {
            observe::init();
            if let Err(e) = runtime().block_on(server::serve(&config)) {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
        Command::Mock { listen, knobs } => {
            observe::init();
            let mut defaults = Knobs::from_spec(&MockSpec::default());
            if let Err(e) = defaults.apply(&knobs) {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
            // Ends on SIGTERM or Ctrl-C with success, as lingo does: a build instrumented to
            // count what runs (benches/pgo.sh) writes its counts only on a normal exit.
            let served = runtime().block_on(async {
                tokio::select! {
                    served = lingo::mock::serve(listen, defaults) => served,
                    () = server::shutdown_signal() => Ok(()),
                }
            });
            if let Err(e) = served {
                eprintln!("error: cannot serve the mock on {listen}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the tokio runtime starts")
}
