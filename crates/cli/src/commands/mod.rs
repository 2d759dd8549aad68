//! One module per command; [`run`] dispatches.

pub mod c2c;
pub mod doctor;
pub mod evaluate;
pub mod generate;
pub mod harness;
pub mod layout;
pub mod mem;
pub mod model;
pub mod profile;
pub mod report;
pub mod schedule;
pub mod topo;
pub mod workload;

use crate::cli::{Cli, Command};
use crate::CliResult;

/// Runs the parsed command.
pub fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Topo(a) => topo::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Evaluate(a) => evaluate::run(a),
        Command::Scale(a) => harness::scale(a),
        Command::Policy(a) => harness::policy(a),
        Command::Sweep(a) => harness::sweep(a),
        Command::Generate(a) => generate::run(a),
        Command::Workload(a) => workload::run(a),
        Command::C2c(a) => c2c::run(a),
        Command::Profile(a) => profile::run(a),
        Command::Model(a) => model::run(a),
        Command::Report(a) => report::run(a),
        Command::Compare(a) => report::compare(a),
        Command::Mem(a) => mem::run(a),
        Command::Layout(a) => layout::run(a),
        Command::Schedule(a) => schedule::run(a),
    }
}
