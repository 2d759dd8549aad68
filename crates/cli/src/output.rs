//! Terminal output helpers: colour only on a terminal and never with NO_COLOR, JSON
//! printing for `--json`.

use clap::ValueEnum;
use serde::Serialize;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

/// When to use colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

static COLOR: AtomicBool = AtomicBool::new(false);

/// Decides once whether stdout gets colour.
pub fn init_color(choice: ColorChoice) {
    let on = match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
        }
    };
    COLOR.store(on, Ordering::Relaxed);
}

/// Whether colour is on.
pub fn color() -> bool {
    COLOR.load(Ordering::Relaxed)
}

/// Wraps text in an ANSI colour when colour is on (31 red, 32 green, 33 yellow, 36 cyan, 1 bold).
pub fn paint(code: &str, text: &str) -> String {
    if color() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: Serialize>(value: &T) -> Result<(), crate::CliError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| {
        crate::CliError::new(
            numalab_schema::ErrorClass::Runtime,
            format!("cannot serialize output: {e}"),
        )
    })?;
    println!("{text}");
    Ok(())
}
