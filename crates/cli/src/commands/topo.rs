//! `numalab topo`: the machine description.

use crate::output::{paint, print_json};
use crate::{CliError, CliResult};
use clap::Args;
use numalab_records::mem::bandwidth::BandwidthRecord;
use numalab_records::mem::latency::{LatencyRecord, Load};
use numalab_schema::{ErrorClass, Machine, Origin};
use numalab_topo::memattrs::{self, Attribute, MeasuredValue, SetValue, Unit};
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
    let (values, notes) = measured_values(&bundle, recorded, &bundle_name)?;
    same_machine(recorded, &bundle_name, &machine, &topo_name)?;
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

/// Refuses a bundle measured on another machine than the topology describes: node
/// count, node OS indexes and their CPUs, CPU count.
fn same_machine(recorded: &Machine, bundle: &str, topo: &Machine, topo_name: &str) -> CliResult {
    let shape = |m: &Machine| {
        let nodes: Vec<String> = m
            .numa_nodes
            .iter()
            .map(|n| n.os_index.to_string())
            .collect();
        format!(
            "{} NUMA node(s) ({}) and {} CPU(s)",
            m.numa_nodes.len(),
            nodes.join(", "),
            m.pus.len()
        )
    };
    let nodes = |m: &Machine| -> Vec<(u32, Vec<u32>)> {
        m.numa_nodes
            .iter()
            .map(|n| (n.os_index, n.cpus.clone()))
            .collect()
    };
    if recorded.pus.len() == topo.pus.len() && nodes(recorded) == nodes(topo) {
        return Ok(());
    }
    let missing: Vec<String> = recorded
        .numa_nodes
        .iter()
        .filter(|n| topo.node(n.os_index).is_none())
        .map(|n| n.os_index.to_string())
        .collect();
    let detail = if missing.is_empty() {
        String::new()
    } else {
        format!(
            "; its node(s) {} are not in {topo_name}",
            missing.join(", ")
        )
    };
    Err(CliError::new(
        ErrorClass::Input,
        format!(
            "{bundle} was measured on a machine with {} ({}), but {topo_name} has {}{detail}: measured values only fit the machine they were measured on; give that machine's topology with --input FILE.xml, or measure this one",
            shape(recorded),
            bundle_host(recorded),
            shape(topo),
        ),
    ))
}

fn bundle_host(m: &Machine) -> String {
    m.cpu
        .model_name
        .clone()
        .unwrap_or_else(|| "unknown CPU".into())
}

/// The figures of the bundle's node-pair matrices, one per (attribute, node pair):
///
/// - Bandwidth: the read-only kernel where the matrix measured it, else triad
///   (STREAM-counted GB/s); the record with the most threads (all CPUs of the
///   initiator node, as `--matrix` runs it) and, among records of other ISAs, the
///   highest; its median over the timed rounds.
/// - ReadBandwidth: the read kernel, WriteBandwidth: the write kernel (plain stores,
///   STREAM-counted: bytes written), where measured; chosen the same way.
/// - Latency: the idle latency matrix of the headline page kind (the report's: huge
///   pages when every cell got them), the median at the largest working set of each
///   cell (DRAM, beyond the last-level cache).
fn measured_values(
    bundle: &numalab_report::Loaded,
    recorded: &Machine,
    name: &str,
) -> Result<(Vec<MeasuredValue>, Vec<String>), CliError> {
    let mut notes = Vec::new();
    let bw: Vec<BandwidthRecord> = bundle
        .records_of::<BandwidthRecord>()
        .into_iter()
        .filter(|(rec, r)| rec.origin == Origin::Measured && r.matrix.is_some())
        .map(|(_, r)| r)
        .collect();
    let lat: Vec<LatencyRecord> = bundle
        .records_of::<LatencyRecord>()
        .into_iter()
        .filter(|(rec, r)| {
            rec.origin == Origin::Measured && r.matrix.is_some() && r.kind().load == Load::Idle
        })
        .map(|(_, r)| r)
        .collect();
    if bw.is_empty() && lat.is_empty() {
        return Err(CliError::new(
            ErrorClass::Input,
            format!("{name}: no measured node-pair matrix (mem.bandwidth or mem.latency records with a node pair); run `numalab mem bandwidth --matrix --out DIR` first (and `numalab mem latency --matrix --out DIR`, or `numalab evaluate --out DIR`), then give DIR"),
        ));
    }
    let node_cpus = |node: u32| recorded.node(node).map_or(0, |n| n.cpus.len());
    let mut out = Vec::new();
    let kernels: Vec<String> = bw.iter().map(|r| r.kernel.name()).collect();
    let has = |k: &str| kernels.iter().any(|n| n == k);
    let mut plan: Vec<(Attribute, &str)> = Vec::new();
    if has("read") {
        plan.push((Attribute::Bandwidth, "read"));
        plan.push((Attribute::ReadBandwidth, "read"));
    } else if has("triad") {
        plan.push((Attribute::Bandwidth, "triad"));
    }
    if has("write") {
        plan.push((Attribute::WriteBandwidth, "write"));
    }
    if bw.is_empty() {
        notes.push(format!("{name} has no bandwidth matrix: Bandwidth not set (run `numalab mem bandwidth --matrix --out DIR`)"));
    } else if plan.is_empty() {
        let mut ks = kernels.clone();
        ks.sort();
        ks.dedup();
        return Err(CliError::new(
            ErrorClass::Input,
            format!("{name}: its bandwidth matrix measured {} but neither read nor triad, the kernels Bandwidth is taken from; run `numalab mem bandwidth --matrix --kernel read,triad --out DIR` first", ks.join(", ")),
        ));
    }
    for (attr, kernel) in plan {
        let mut pairs: Vec<(u32, u32)> = bw
            .iter()
            .filter(|r| r.kernel.name() == kernel)
            .filter_map(|r| r.matrix.map(|m| (m.cpu_node, m.mem_node)))
            .collect();
        pairs.sort();
        pairs.dedup();
        for (i, t) in pairs {
            let cell: Vec<&BandwidthRecord> = bw
                .iter()
                .filter(|r| {
                    r.kernel.name() == kernel
                        && r.matrix.is_some_and(|m| m.cpu_node == i && m.mem_node == t)
                })
                .collect();
            let most = cell.iter().map(|r| r.threads).max().unwrap_or(0);
            let Some(best) = cell
                .iter()
                .filter(|r| r.threads == most)
                .max_by(|a, b| a.bandwidth_gbps.median.total_cmp(&b.bandwidth_gbps.median))
            else {
                continue;
            };
            let cpus = node_cpus(i);
            let threads = if cpus > 0 && best.threads < cpus {
                format!("{} of node{i}'s {cpus} CPUs", best.threads)
            } else {
                format!("{} threads", best.threads)
            };
            out.push(MeasuredValue {
                initiator_node: i,
                target_node: t,
                attribute: attr,
                value: best.bandwidth_gbps.median,
                unit: Unit::GBps,
                source: Some(format!(
                    "measured, mem.bandwidth {kernel}, {threads}, median {:.1} GB/s",
                    best.bandwidth_gbps.median
                )),
            });
        }
    }
    if lat.is_empty() {
        notes.push(format!("{name} has no idle latency matrix: Latency not set (run `numalab mem latency --matrix --out DIR`)"));
    }
    let headline = numalab_report::facts::headline_matrix(&lat);
    let mut seen = std::collections::BTreeSet::new();
    for r in headline {
        let Some(m) = r.matrix else { continue };
        let Some(p) = r.points.iter().max_by_key(|p| p.working_set_bytes) else {
            continue;
        };
        if !seen.insert((m.cpu_node, m.mem_node)) {
            continue;
        }
        let kind = r.kind();
        if let Some(llc) = kind.llc_bytes {
            if p.working_set_bytes <= llc {
                notes.push(format!(
                    "node{} -> node{}: the latency working set ({} bytes) fits the last-level cache ({llc} bytes): that Latency is not DRAM's",
                    m.cpu_node, m.mem_node, p.working_set_bytes
                ));
            }
        }
        out.push(MeasuredValue {
            initiator_node: m.cpu_node,
            target_node: m.mem_node,
            attribute: Attribute::Latency,
            value: p.latency_ns.median,
            unit: Unit::Ns,
            source: Some(format!(
                "measured, mem.latency idle, {}, median {:.1} ns",
                numalab_report::facts::latency_kind_text(&kind, p.working_set_bytes),
                p.latency_ns.median
            )),
        });
    }
    Ok((out, notes))
}
