//! `numalab topo`: the machine description.

use crate::output::{paint, print_json};
use crate::{CliError, CliResult};
use clap::Args;
use numalab_report::memattrs as memattrs_from;
use numalab_schema::ErrorClass;
use numalab_topo::memattrs::{self, SetValue};
use numalab_topo::{render, Input};
use std::path::{Path, PathBuf};

/// `numalab topo`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab topo\n  numalab topo --tree\n  numalab topo --input other-machine.xml --json\n  numalab topo --input kunpeng.tar.bz2\n  numalab topo --export-xml this-machine.xml\n  numalab topo --memattrs-from results/ --export-xml measured.xml"
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
    /// Save this machine's topology as hwloc XML, for `--input` on another machine
    /// (with `--memattrs-from`, the topology of `--input` or this machine).
    #[arg(long, value_name = "FILE")]
    pub export_xml: Option<PathBuf>,
    /// Write the node-to-node bandwidth and latency measured in this bundle (an `--out`
    /// folder or results.jsonl of `mem bandwidth --matrix`, `mem latency --matrix` or
    /// `evaluate`) into the `--export-xml` file as hwloc memory attributes (Bandwidth,
    /// ReadBandwidth, WriteBandwidth in MiB/s, Latency in ns), for runtimes that load it
    /// with HWLOC_XMLFILE (docs/mem.md).
    #[arg(long, value_name = "BUNDLE")]
    pub memattrs_from: Option<PathBuf>,
}

/// Runs `numalab topo`.
pub fn run(args: TopoArgs) -> CliResult {
    if let Some(bundle) = &args.memattrs_from {
        let Some(xml) = &args.export_xml else {
            return Err(CliError::new(
                ErrorClass::Usage,
                format!(
                    "--memattrs-from {} needs --export-xml FILE: the measured values are written into that hwloc XML file",
                    bundle.display()
                ),
            ));
        };
        return export_memattrs(&args, bundle, xml);
    }
    if let (Some(input), Some(_)) = (&args.input, &args.export_xml) {
        return Err(CliError::new(
            ErrorClass::Usage,
            format!(
                "--export-xml saves this machine's topology and cannot be used with --input {} (that file already is one), unless --memattrs-from adds measured values to it",
                input.display()
            ),
        ));
    }
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

/// `--memattrs-from BUNDLE --export-xml FILE`: the bundle's node-pair matrices as hwloc
/// memory attributes of the topology (this machine, or `--input`).
fn export_memattrs(args: &TopoArgs, bundle_path: &Path, xml_path: &Path) -> CliResult {
    let input = match &args.input {
        Some(p) => Input::detect(p)?,
        None => Input::Live,
    };
    let loaded = numalab_topo::load::load(&input)?;
    let machine = numalab_topo::describe::describe(&loaded);
    let topo_name = match &args.input {
        Some(p) => p.display().to_string(),
        None => "this machine".to_string(),
    };
    let bundle = numalab_report::load::load(bundle_path)?;
    let bundle_name = bundle_path.display().to_string();
    let Some(recorded) = bundle.bundle.envelope.host.topology.as_ref() else {
        return Err(CliError::new(
            ErrorClass::Input,
            format!("{bundle_name}: the bundle records no topology, so it cannot be matched with {topo_name}; measure again with numalab 0.9 or later"),
        ));
    };
    let input_err = |e: String| CliError::new(ErrorClass::Input, e);
    let (values, notes) =
        memattrs_from::measured_values(&bundle, recorded, &bundle_name).map_err(input_err)?;
    memattrs_from::same_machine(recorded, &bundle_name, &machine, &topo_name).map_err(input_err)?;
    let export = memattrs::export_xml(&loaded, &values)?;
    crate::output::write_file(xml_path, export.xml.as_bytes(), "the XML", "--export-xml")?;
    for n in &notes {
        eprintln!("note: {n}");
    }
    eprintln!(
        "wrote {} with {} measured memory attribute value(s) from {bundle_name}; use it with HWLOC_XMLFILE={} HWLOC_THISSYSTEM=1",
        xml_path.display(),
        export.values.len(),
        xml_path.display()
    );
    if args.json {
        return print_json(&serde_json::json!({
            "xml": xml_path.display().to_string(),
            "bundle": bundle_name,
            "topology": topo_name,
            "values": export.values,
            "notes": notes,
        }));
    }
    for v in &export.values {
        println!("{}", set_line(v));
    }
    Ok(())
}

/// "Bandwidth node0 -> node1: 12,345 MiB/s (measured, mem.bandwidth read, 8 threads)".
fn set_line(v: &SetValue) -> String {
    let mut line = format!(
        "{} node{} -> node{}: {} {}",
        v.attribute,
        v.initiator_node,
        v.target_node,
        grouped(v.value),
        v.unit
    );
    if let Some(src) = &v.source {
        line.push_str(&format!(" ({src})"));
    }
    if let Some(old) = v.replaced {
        line.push_str(&format!(
            "; replaces {} {} already in the topology (firmware HMAT or an earlier export)",
            grouped(old),
            v.unit
        ));
    }
    line
}

/// 12345 -> "12,345".
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
