//! One module per command; [`run`] dispatches.

pub mod doctor;
pub mod generate;
pub mod mem;
pub mod topo;

use crate::cli::{Cli, Command};
use crate::CliResult;

/// Runs the parsed command.
pub fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Topo(a) => topo::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Generate(a) => generate::run(a),
        Command::Mem(a) => mem::run(a),
    }
}
