//! `numalab topo`: the machine description.

use crate::output::{paint, print_json};
use crate::CliResult;
use clap::Args;
use numalab_topo::{render, Input};
use std::path::PathBuf;

/// `numalab topo`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab topo\n  numalab topo --tree\n  numalab topo --input other-machine.xml --json\n  numalab topo --input kunpeng.tar.bz2\n  numalab topo --export-xml this-machine.xml"
)]
pub struct TopoArgs {
    /// Describe another machine: an hwloc XML file (hwloc 1.x or 2.x format), a sysfs
    /// snapshot folder (hwloc-gather-topology), or such a snapshot as .tar.bz2/.tar.gz.
    #[arg(long, value_name = "PATH")]
    pub input: Option<PathBuf>,
    /// Also print a condensed tree (identical siblings folded).
    #[arg(long)]
    pub tree: bool,
    /// Print the full machine description as JSON (see docs/schema.md).
    #[arg(long)]
    pub json: bool,
    /// Save this machine's topology as hwloc XML, for `--input` on another machine.
    #[arg(long, value_name = "FILE", conflicts_with = "input")]
    pub export_xml: Option<PathBuf>,
}

/// Runs `numalab topo`.
pub fn run(args: TopoArgs) -> CliResult {
    let input = match &args.input {
        Some(p) => Input::detect(p)?,
        None => Input::Live,
    };
    let machine = numalab_topo::machine(&input)?;
    if let Some(path) = &args.export_xml {
        numalab_topo::export_live_xml(path)?;
        eprintln!("wrote this machine's topology to {}", path.display());
    }
    if args.json {
        return print_json(&machine);
    }
    let summary = render::summary(&machine);
    let mut lines = summary.lines();
    if let Some(first) = lines.next() {
        println!("{}", paint("1", first));
    }
    for l in lines {
        println!("{l}");
    }
    if args.tree {
        println!();
        print!("{}", render::tree(&machine));
    }
    Ok(())
}
