//! `numalab topo`: the machine description.

use crate::cli::TopoArgs;
use crate::output::{paint, print_json};
use crate::CliResult;
use numalab_topo::{render, Input};

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
