//! The numalab command line.
//!
//! Parsing happens in two steps (ripgrep's habit): clap validates flags without
//! touching hardware, then each command builds its plan against the topology. Every
//! command returns a [`CliError`] carrying an [`ErrorClass`]; [`main`] prints it as one
//! line and exits with the class's documented code.

#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod cli;
pub mod commands;
pub mod output;
pub mod power;
pub mod recorder;
// The process-wide system calls, the one module allowed `unsafe`.
#[allow(unsafe_code)]
pub mod sys;

use numalab_schema::{Classify, ErrorClass};
use std::process::ExitCode;

/// A failure of a command, with its exit class.
#[derive(Debug)]
pub struct CliError {
    /// Exit class.
    pub class: ErrorClass,
    /// One line for the user: what, which input, what to do (printed made terminal-safe).
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
    stdout_failures_exit();
    // Ctrl-C and SIGTERM ask long loops to stop at their next check (they keep what
    // they measured); a second Ctrl-C terminates at once.
    let stop = numalab_schema::interrupt::flag();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, stop);
        let _ = signal_hook::flag::register(sig, stop);
    }
    let code = match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("numalab: {}", numalab_schema::text::message(&e.message));
            return ExitCode::from(e.class.exit_code());
        }
    };
    // What is still buffered (output without a last newline) is flushed here, where a
    // failure can still change the exit code.
    match std::io::Write::flush(&mut std::io::stdout()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("numalab: {}", stdout_failure(&e.to_string()));
            ExitCode::from(ErrorClass::Runtime.exit_code())
        }
        _ => code,
    }
}

/// The message for output that standard output did not take (its OS error in words).
fn stdout_failure(reason: &str) -> String {
    numalab_schema::text::message(&format!(
        "cannot write to standard output ({reason}); the output is incomplete"
    ))
}

/// `println!` panics when standard output fails (a full disk: `numalab topo --json >
/// /dev/full`). That is not a bug of numalab but a write that failed: exit 1 (runtime),
/// as the table says, with the reason in words, instead of exit 101 and a panic message.
/// (A closed pipe never gets here: SIGPIPE ends the process first, as other tools do.)
fn stdout_failures_exit() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if let Some(reason) = payload.strip_prefix("failed printing to stdout: ") {
            eprintln!("numalab: {}", stdout_failure(reason));
            std::process::exit(i32::from(ErrorClass::Runtime.exit_code()));
        }
        if payload.starts_with("failed printing to stderr") {
            // Nowhere to say it.
            std::process::exit(i32::from(ErrorClass::Runtime.exit_code()));
        }
        default(info);
    }));
}
