//! `numalab doctor`: prints what `numalab_doctor` finds this machine allows.

use crate::output::{paint, print_json};
use crate::CliResult;
use clap::Args;

pub use numalab_doctor::{collect, Verdict};

/// `numalab doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the checks as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `numalab doctor`.
pub fn run(args: DoctorArgs) -> CliResult {
    let machine = numalab_topo::live()?;
    let report = collect(&machine);
    if args.json {
        return print_json(&report);
    }
    for c in &report.checks {
        let tag = match c.verdict {
            Verdict::Ok => paint("32", "ok  "),
            Verdict::Warn => paint("33", "warn"),
            Verdict::Fail => paint("31", "FAIL"),
            Verdict::Info => paint("36", "info"),
        };
        println!("{tag}  {:<15} {}", c.name, c.detail);
        if let Some(r) = &c.remedy {
            println!("      {:<15} -> {r}", "");
        }
    }
    Ok(())
}
