//! The numalab command line.
//!
//! Parsing happens in two steps (ripgrep's habit): clap validates flags without
//! touching hardware, then each command builds its plan against the topology. Every
//! command returns a [`CliError`] carrying an [`ErrorClass`]; [`main`] prints it as one
//! line and exits with the class's documented code.

pub mod cli;
pub mod commands;
pub mod output;
pub mod power;
pub mod recorder;

use numalab_schema::{Classify, ErrorClass};
use std::process::ExitCode;

/// A failure of a command, with its exit class.
#[derive(Debug)]
pub struct CliError {
    /// Exit class.
    pub class: ErrorClass,
    /// One line for the user: what, which input, what to do.
    pub message: String,
}

impl CliError {
    /// A new error.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        CliError {
            class,
            message: message.into(),
        }
    }
}

impl<E: Classify + std::error::Error> From<E> for CliError {
    fn from(e: E) -> Self {
        CliError {
            class: e.class(),
            message: e.to_string(),
        }
    }
}

/// Result of a command.
pub type CliResult = Result<(), CliError>;

/// Runs numalab with the process's arguments.
pub fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse_args(std::env::args_os().collect()) {
        Ok(c) => c,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (2).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                ErrorClass::Usage.exit_code()
            } else {
                0
            });
        }
    };
    output::init_color(cli.global.color);
    // Ctrl-C and SIGTERM ask long loops to stop at their next check (they keep what
    // they measured); a second Ctrl-C terminates at once.
    let stop = numalab_schema::interrupt::flag();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, stop);
        let _ = signal_hook::flag::register(sig, stop);
    }
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("numalab: {}", e.message);
            ExitCode::from(e.class.exit_code())
        }
    }
}
