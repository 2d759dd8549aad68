//! `numalab topo`: the machine description.

use crate::output::{paint, print_json};
use crate::{CliError, CliResult};
use clap::Args;
use numalab_report::memattrs as memattrs_from;
use numalab_schema::ErrorClass;
use numalab_topo::memattrs;
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
    let (input, xml) = (args.input.as_deref(), args.export_xml.as_deref());
    memattrs_from::check_export_flags(input, xml, args.memattrs_from.as_deref())
        .map_err(|e| CliError::new(ErrorClass::Usage, e))?;
    if let (Some(bundle), Some(xml)) = (&args.memattrs_from, xml) {
        return export_memattrs(&args, bundle, xml);
    }
    let input = Input::given_or_live(args.input.as_deref())?;
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
    let input = Input::given_or_live(args.input.as_deref())?;
    let loaded = numalab_topo::load::load(&input)?;
    let machine = numalab_topo::describe::describe(&loaded);
    let topo_name = match &args.input {
        Some(p) => p.display().to_string(),
        None => "this machine".to_string(),
    };
    let bundle = numalab_report::load::load(bundle_path)?;
    let bundle_name = bundle_path.display().to_string();
    let (values, notes) = memattrs_from::values_for(&bundle, &bundle_name, &machine, &topo_name)
        .map_err(|e| CliError::new(ErrorClass::Input, e))?;
    let export = memattrs::export_xml(&loaded, &values)?;
    crate::output::write_file(xml_path, export.xml.as_bytes(), "the XML", "--export-xml")?;
    for n in &notes {
        eprintln!("note: {n}");
    }
    let xml_name = xml_path.display().to_string();
    eprintln!(
        "{}",
        memattrs_from::exported(&xml_name, export.values.len(), &bundle_name)
    );
    if args.json {
        return print_json(&serde_json::json!({
            "xml": xml_name,
            "bundle": bundle_name,
            "topology": topo_name,
            "values": export.values,
            "notes": notes,
        }));
    }
    for v in &export.values {
        println!("{}", v.line());
    }
    Ok(())
}
