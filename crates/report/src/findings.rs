//! Findings: what the records say, in sentences, computed from the records alone.
//!
//! A table of numbers explains nothing by itself; the findings are the few sentences a
//! reader needs first ("remote memory: 1.9x local latency, 0.35x local bandwidth", "the
//! workload kept 0.3 of 2 CPUs busy: the machine was shared"). Each rule reads one or
//! two record kinds, says nothing when its records are missing, and links to the chart
//! or table that shows the evidence. Pure: tested on recorded and hand-made bundles.

use crate::anchors;
use crate::load::Loaded;
use crate::records::{Check, DoctorReport, StepRecord, StepStatus, TopologyRecord, Verdict};
use numalab_c2c::record::MatrixRecord;
use numalab_harness::policy::PolicySummary;
use numalab_harness::scale::ScaleSummary;
use numalab_harness::sweep::SweepSummary;
use numalab_model::records as model;
use numalab_pmu::check::PmuCheck;
use numalab_pmu::profile::Profile;
use numalab_schema::{cpulist, Machine, Origin};
use numalab_workload::WorkloadRun;
use serde::{Deserialize, Serialize};

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Something limits the results or the machine (a shared machine, a failed step).
    Warning,
    /// A result worth acting on (a knee, remote memory costs, a mismatch with the firmware).
    Notice,
    /// A fact that frames the results (one NUMA node, a VM, what was not measured).
    Info,
}

impl Severity {
    /// The word shown next to the sentence.
    pub fn word(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Notice => "notice",
            Severity::Info => "info",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable rule id ("remote_memory", "shared_machine", ...).
    pub id: String,
    /// How much it matters.
    pub severity: Severity,
    /// The sentence.
    pub text: String,
    /// The anchor of the chart or table that shows it, in the HTML report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<String>,
    /// Whether the figures behind it are modeled rather than measured.
    #[serde(default)]
    pub modeled: bool,
    /// The bundle it comes from (its label).
    pub source: String,
}

/// Collects findings for one bundle.
struct Out<'a> {
    b: usize,
    label: &'a str,
    list: Vec<Finding>,
}

impl Out<'_> {
    fn push(&mut self, id: &str, severity: Severity, text: String, anchor: Option<String>) {
        self.list.push(Finding {
            id: id.into(),
            severity,
            text,
            anchor,
            modeled: false,
            source: self.label.into(),
        });
    }

    fn modeled(&mut self, id: &str, text: String, anchor: Option<String>) {
        self.push(id, Severity::Info, text, anchor);
        if let Some(f) = self.list.last_mut() {
            f.modeled = true;
        }
    }
}

/// The machine a bundle describes: its `topo.machine` record, else the envelope's.
pub fn machine_of(l: &Loaded) -> Option<Machine> {
    l.records_of::<TopologyRecord>()
        .into_iter()
        .next()
        .map(|(_, t)| t.machine)
        .or_else(|| l.bundle.envelope.host.topology.clone())
}

/// Medians of the same quantity from two probes further apart than this (25%) are a
/// disagreement: beyond the run-to-run spread of one probe on a quiet machine.
const DISAGREEMENT: f64 = 1.25;

fn x(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}x")
    } else {
        format!("{v:.2}x")
    }
}

fn ns(v: f64) -> String {
    numalab_schema::units::nanos(v)
}

fn pct(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

fn cmd(c: &[String]) -> String {
    crate::shorten(&c.join(" "), 60)
}

/// Every finding of a set of bundles, most important first.
pub fn findings(set: &[Loaded]) -> Vec<Finding> {
    let mut all = Vec::new();
    for (b, l) in set.iter().enumerate() {
        let mut out = Out {
            b,
            label: &l.label,
            list: Vec::new(),
        };
        // Within a severity, findings keep this order: the machine and its memory
        // first, then what ran on it, then the facts about the measurement itself.
        bundle_problems(l, &mut out);
        let machine = machine_of(l);
        topology(l, machine.as_ref(), &mut out);
        mem(l, machine.as_ref(), &mut out);
        c2c(l, machine.as_ref(), &mut out);
        workload(l, machine.as_ref(), &mut out);
        harness(l, &mut out);
        pmu(l, &mut out);
        steps(l, &mut out);
        doctor(l, &mut out);
        host(l, &mut out);
        models(l, &mut out);
        all.extend(out.list);
    }
    // One sentence once per machine (several bundles of one host repeat host facts);
    // with several bundles, say which one each comes from.
    let host_of: std::collections::HashMap<&str, String> = set
        .iter()
        .map(|l| {
            let h = &l.bundle.envelope.host;
            (
                l.label.as_str(),
                format!("{:?}/{}", h.hostname, h.topology_hash),
            )
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    all.retain(|f| {
        let host = host_of.get(f.source.as_str()).cloned().unwrap_or_default();
        seen.insert((host, f.text.clone()))
    });
    let labels: std::collections::BTreeSet<&str> = set.iter().map(|l| l.label.as_str()).collect();
    if labels.len() > 1 {
        for f in &mut all {
            f.text = format!("{}: {}", f.source, f.text);
        }
    }
    all.sort_by_key(|f| f.severity);
    all
}

fn bundle_problems(l: &Loaded, out: &mut Out<'_>) {
    for w in &l.warnings {
        out.push("bundle_problem", Severity::Warning, w.to_string(), None);
    }
}

fn host(l: &Loaded, out: &mut Out<'_>) {
    let env = &l.bundle.envelope;
    if env.origin == Origin::Modeled {
        return;
    }
    if env.tool.profile == "debug" {
        out.push(
            "debug_build",
            Severity::Warning,
            "written by a debug build of numalab: measured speeds (bandwidth, throughput) are not representative; rebuild with --release".into(),
            None,
        );
    }
    // The doctor's own hypervisor check says the same, with a remedy.
    let doctor_says = l.records_of::<DoctorReport>().iter().any(|(_, d)| {
        d.checks
            .iter()
            .any(|c| c.name == "hypervisor" && c.verdict != Verdict::Ok)
    });
    if let Some(h) = env
        .host
        .hypervisor
        .as_deref()
        .filter(|h| !h.is_empty() && !doctor_says)
    {
        out.push(
            "virtual_machine",
            Severity::Info,
            format!("measured in a virtual machine ({h}): vCPUs share physical cores with other tenants and the NUMA layout is what the hypervisor shows; compare figures only within one run"),
            None,
        );
    }
}

fn topology(l: &Loaded, m: Option<&Machine>, out: &mut Out<'_>) {
    // Only bundles that set out to describe the machine (evaluate) say this.
    if l.records_of::<TopologyRecord>().is_empty() {
        return;
    }
    let Some(m) = m else { return };
    let anchor = Some(anchors::topology(out.b));
    let cpu_nodes = m.numa_nodes.iter().filter(|n| n.has_cpus).count();
    if m.packages.len() > 1 {
        let parts: Vec<String> = m
            .packages
            .iter()
            .enumerate()
            .map(|(i, p)| format!("CPUs {} on package {i}", cpulist::format(&p.cpus)))
            .collect();
        out.push(
            "packages",
            Severity::Info,
            format!(
                "{} packages, {} NUMA node(s): {}; threads placed past the first package's CPUs run on another socket, and their memory may be remote",
                m.packages.len(),
                m.numa_nodes.len(),
                parts.join(", ")
            ),
            anchor.clone(),
        );
    }
    if cpu_nodes <= 1 {
        out.push(
            "one_numa_node",
            Severity::Info,
            "one NUMA node with CPUs: local and remote memory cannot be told apart here; remote-memory costs need a machine with several nodes".into(),
            anchor.clone(),
        );
    }
    for n in m.numa_nodes.iter().filter(|n| !n.has_cpus) {
        out.push(
            "memory_only_node",
            Severity::Info,
            format!(
                "NUMA node {} has memory but no CPUs ({}{}): data placed there is remote to every thread",
                n.os_index,
                numalab_schema::units::bytes(n.memory_bytes),
                n.subtype.as_deref().map(|s| format!(", {s}")).unwrap_or_default()
            ),
            anchor.clone(),
        );
    }
}

fn steps(l: &Loaded, out: &mut Out<'_>) {
    let anchor = Some(anchors::steps(out.b));
    let latest =
        crate::records::latest_steps(l.records_of::<StepRecord>().into_iter().map(|(_, s)| s));
    for s in latest {
        match &s.outcome {
            StepStatus::Done => {}
            StepStatus::Failed { error } => out.push(
                "step_failed",
                Severity::Warning,
                format!("the {} step failed: {error}", s.title),
                anchor.clone(),
            ),
            StepStatus::Skipped { reason } => out.push(
                "step_skipped",
                Severity::Info,
                format!("not measured: {} ({reason})", s.title),
                anchor.clone(),
            ),
        }
    }
}

fn doctor(l: &Loaded, out: &mut Out<'_>) {
    let has_pmu_check = !l.records_of::<PmuCheck>().is_empty();
    let anchor = Some(anchors::doctor(out.b));
    for (_, d) in l.records_of::<DoctorReport>() {
        for c in &d.checks {
            let Check {
                name,
                verdict,
                detail,
                remedy,
                ..
            } = c;
            if name == "pmu" && has_pmu_check {
                continue;
            }
            let severity = match verdict {
                Verdict::Fail => Severity::Warning,
                Verdict::Warn => Severity::Notice,
                _ => continue,
            };
            let text = match remedy {
                Some(r) => format!("{name}: {detail} ({r})"),
                None => format!("{name}: {detail}"),
            };
            out.push("doctor", severity, text, anchor.clone());
        }
    }
}

fn pmu(l: &Loaded, out: &mut Out<'_>) {
    let anchor = Some(anchors::pmu(out.b));
    for (_, c) in l.records_of::<PmuCheck>() {
        if !c.capability.hardware_pmu() {
            out.push(
                "no_hardware_pmu",
                Severity::Notice,
                format!(
                    "no hardware PMU: counters (cycles, instructions, cache misses) were not measured; {}",
                    c.verdict
                ),
                anchor.clone(),
            );
        }
        if let Some(a) = c.task_clock_agreement.filter(|a| (a - 1.0).abs() > 0.05) {
            out.push(
                "pmu_clock_disagrees",
                Severity::Warning,
                format!(
                    "the perf task clock disagrees with the thread's CPU-time clock ({} of it): counts from this machine are suspect",
                    x(a)
                ),
                anchor.clone(),
            );
        }
    }
    for (r, p) in l.records_of::<Profile>() {
        if let Some(t) = &p.tree {
            let what = if p.command.is_empty() {
                p.source
                    .path
                    .clone()
                    .unwrap_or_else(|| "the profile".into())
            } else {
                format!("`{}`", cmd(&p.command))
            };
            out.push(
                "profile_verdict",
                Severity::Notice,
                format!("profile of {what}: {}", t.verdict),
                Some(anchors::pmu_tree(out.b, &r.key)),
            );
        }
    }
}

/// Diagonal and off-diagonal cells of a node-pair matrix: per CPU node, the local value
/// and each remote one.
struct NodeMatrix {
    cells: Vec<(u32, u32, f64)>,
}

impl NodeMatrix {
    fn local(&self, node: u32) -> Option<f64> {
        self.cells
            .iter()
            .find(|(c, m, _)| *c == node && *m == node)
            .map(|(_, _, v)| *v)
    }

    /// (cpu node, mem node, value, value / local) of every remote cell with a local one.
    fn remote_ratios(&self) -> Vec<(u32, u32, f64, f64)> {
        self.cells
            .iter()
            .filter(|(c, m, _)| c != m)
            .filter_map(|(c, m, v)| {
                let l = self.local(*c)?;
                (l > 0.0).then_some((*c, *m, *v, v / l))
            })
            .collect()
    }

    fn median_local(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .cells
            .iter()
            .filter(|(c, m, _)| c == m)
            .map(|(_, _, v)| *v)
            .collect();
        numalab_stats::median(&v)
    }
}

fn mem(l: &Loaded, m: Option<&Machine>, out: &mut Out<'_>) {
    use numalab_mem::bandwidth::BandwidthRecord;
    use numalab_mem::latency::LatencyRecord;
    use numalab_mem::loaded::LoadedRecord;
    use numalab_mem::migrate::MigrateRecord;
    let bw: Vec<BandwidthRecord> = l
        .records_of::<BandwidthRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let lat: Vec<LatencyRecord> = l
        .records_of::<LatencyRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    // Remote against local, from the node-pair matrices (the headline kind only).
    let headline = crate::sections::mem::headline_matrix(&lat);
    let lat_m = NodeMatrix {
        cells: headline
            .iter()
            .filter_map(|r| {
                let mc = r.matrix?;
                Some((
                    mc.cpu_node,
                    mc.mem_node,
                    r.points.first()?.latency_ns.median,
                ))
            })
            .collect(),
    };
    let headline_what = headline
        .first()
        .and_then(|r| {
            Some(crate::sections::mem::latency_kind_text(
                &r.kind(),
                r.points.first()?.working_set_bytes,
            ))
        })
        .unwrap_or_default();
    let kernel = crate::sections::mem::matrix_kernel(&bw);
    let bw_m = NodeMatrix {
        cells: bw
            .iter()
            .filter(|r| Some(r.kernel.name()) == kernel)
            .filter_map(|r| {
                let mc = r.matrix?;
                Some((mc.cpu_node, mc.mem_node, r.bandwidth_gbps.median))
            })
            .collect(),
    };
    let lr = lat_m.remote_ratios();
    let br = bw_m.remote_ratios();
    let med = |v: Vec<f64>| numalab_stats::median(&v);
    let lat_ratio = med(lr.iter().map(|x| x.3).collect());
    let bw_ratio = med(br.iter().map(|x| x.3).collect());
    let mut parts = Vec::new();
    if let (Some(r), Some(local)) = (lat_ratio, lat_m.median_local()) {
        parts.push(format!(
            "{} local latency ({} vs {}, idle, {headline_what})",
            x(r),
            ns(local),
            ns(local * r)
        ));
    }
    if let (Some(r), Some(local)) = (bw_ratio, bw_m.median_local()) {
        parts.push(format!(
            "{} local bandwidth ({}, {:.1} vs {:.1} GB/s)",
            x(r),
            kernel.clone().unwrap_or_default(),
            local,
            local * r
        ));
    }
    if !parts.is_empty() {
        let farthest = lr
            .iter()
            .max_by(|a, b| a.3.total_cmp(&b.3))
            .filter(|f| lat_ratio.is_some_and(|r| f.3 > r * 1.1))
            .map(|f| {
                format!(
                    "; farthest pair node {} -> {}: {} local latency",
                    f.0,
                    f.1,
                    x(f.3)
                )
            })
            .unwrap_or_default();
        out.push(
            "remote_memory",
            Severity::Notice,
            format!("remote memory: {}{farthest}", parts.join(", ")),
            Some(if lat_ratio.is_some() {
                anchors::mem_latency_matrix(out.b)
            } else {
                anchors::mem_bandwidth_matrix(out.b)
            }),
        );
    }
    // The firmware's distances against the measured latency.
    if let Some(slit) = m.and_then(|m| m.slit()) {
        let d = |a: u32, b: u32| -> Option<u64> {
            let i = slit.nodes.iter().position(|n| *n == a)?;
            let j = slit.nodes.iter().position(|n| *n == b)?;
            slit.values.get(i)?.get(j).copied()
        };
        let worst = lr
            .iter()
            .filter_map(|(c, mn, _, r)| {
                let (s, s0) = (d(*c, *mn)?, d(*c, *c)?);
                let sr = s as f64 / s0.max(1) as f64;
                Some((*c, *mn, s, sr, *r, (r / sr).ln().abs()))
            })
            .max_by(|a, b| a.5.total_cmp(&b.5));
        if let Some((c, mn, s, sr, r, off)) = worst {
            let (sev, verdict) = if off > 0.25f64.ln_1p() {
                (
                    Severity::Notice,
                    "the firmware's distances are an ordering, not a measurement: use the measured figures",
                )
            } else {
                (Severity::Info, "they agree within 25%")
            };
            out.push(
                "slit_vs_measured",
                sev,
                format!(
                    "SLIT says {s} ({} local) from node {c} to node {mn}, measured remote latency is {} local: {verdict}",
                    x(sr),
                    x(r)
                ),
                Some(anchors::id(out.b, "mem-latency-slit")),
            );
        }
    }
    // Where bandwidth stops growing with threads.
    let sweep: Vec<&BandwidthRecord> = bw.iter().filter(|r| r.matrix.is_none()).collect();
    let k = if sweep.iter().any(|r| r.kernel.name() == "triad") {
        Some("triad".to_string())
    } else {
        sweep.first().map(|r| r.kernel.name())
    };
    if let Some(k) = k {
        let mut pts: Vec<(f64, f64, usize)> = sweep
            .iter()
            .filter(|r| r.kernel.name() == k)
            .map(|r| {
                (
                    r.threads as f64,
                    r.bandwidth_gbps.median,
                    r.placement.cpu_nodes.len().max(1),
                )
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
        let ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
        let anchor = Some(anchors::mem_bandwidth(out.b));
        if let Some(i) = numalab_stats::knee::saturation(&xs, &ys, 0.1) {
            let per_node = (xs[i] / pts[i].2 as f64).round();
            let last = pts.len() - 1;
            out.push(
                "bandwidth_saturation",
                Severity::Notice,
                format!(
                    "{k} bandwidth saturates at about {per_node:.0} thread{} per node ({:.1} GB/s at {} thread{} on {} node{}; {:.1} GB/s at {})",
                    if per_node == 1.0 { "" } else { "s" },
                    ys[i],
                    xs[i],
                    if xs[i] == 1.0 { "" } else { "s" },
                    pts[i].2,
                    if pts[i].2 == 1 { "" } else { "s" },
                    ys[last],
                    xs[last]
                ),
                anchor,
            );
        } else if pts.len() >= 2 && pts[0].0 == 1.0 {
            let last = pts.len() - 1;
            out.push(
                "bandwidth_one_thread",
                Severity::Info,
                format!(
                    "{k} bandwidth: one thread reaches {} of what {} threads reach ({:.1} vs {:.1} GB/s)",
                    x(ys[0] / ys[last]),
                    xs[last],
                    ys[0],
                    ys[last]
                ),
                anchor,
            );
        }
    }
    // The latency curve's plateaus.
    for r in lat
        .iter()
        .filter(|r| r.matrix.is_none() && !r.levels.is_empty())
    {
        let levels: Vec<String> = r
            .levels
            .iter()
            .map(|lv| format!("{} {}", lv.name, ns(lv.latency_ns)))
            .collect();
        let k = r.kind();
        out.push(
            "latency_levels",
            Severity::Info,
            format!(
                "load-to-load latency of CPU {} ({}, {}): {}",
                r.cpu,
                r.order.describe(k.block_bytes),
                k.pages_text(),
                levels.join(", ")
            ),
            Some(anchors::mem_latency(out.b)),
        );
    }
    // Huge pages against base pages at the largest working set of the curves, the
    // same order and working set only: then the difference is translation.
    let curve_end = |huge: bool| {
        lat.iter()
            .filter(|r| {
                r.matrix.is_none() && r.kind().huge() == huge && r.pages.obtained != "thp-partial"
            })
            .find_map(|r| {
                r.points
                    .last()
                    .map(|p| (r.kind(), p.working_set_bytes, p.latency_ns.median))
            })
    };
    if let (Some((kb, wb, b)), Some((kt, wt, t))) = (curve_end(false), curve_end(true)) {
        if wb == wt && kb.same_but_pages(&kt) && (t / b - 1.0).abs() > 0.1 {
            out.push(
                "huge_pages",
                Severity::Info,
                format!(
                    "{}: huge pages give {} the latency of base pages ({} vs {}): {}",
                    crate::sections::mem::latency_kind_text(&kt, wt)
                        .replace(&format!(", {}", kt.pages_text()), ""),
                    x(t / b),
                    ns(t),
                    ns(b),
                    if t < b {
                        "address translation (TLB misses and page walks) costs that much on base pages"
                    } else {
                        "slower on huge pages in the same order, which translation cannot explain: the machine was not steady (a busy host or VM); rerun before trusting either"
                    }
                ),
                Some(anchors::mem_latency(out.b)),
            );
        }
    }
    // Page walks: the headline's local cells against the same cells on base pages.
    let mut walks: Vec<(u32, f64, f64, u64)> = Vec::new();
    for h in headline.iter().filter(|r| r.kind().huge()) {
        let (Some(mc), Some(hp)) = (h.matrix, h.points.first()) else {
            continue;
        };
        if mc.cpu_node != mc.mem_node {
            continue;
        }
        let base = lat.iter().find(|r| {
            r.matrix == Some(mc)
                && r.pages.obtained == "base"
                && r.kind().same_but_pages(&h.kind())
                && r.points.first().map(|p| p.working_set_bytes) == Some(hp.working_set_bytes)
        });
        if let Some(bp) = base.and_then(|r| r.points.first()) {
            walks.push((
                mc.cpu_node,
                hp.latency_ns.median,
                bp.latency_ns.median,
                hp.working_set_bytes,
            ));
        }
    }
    if let Some(&(node, huge, base, ws)) = walks.first() {
        let hk = headline[0].kind();
        let what = crate::sections::mem::latency_kind_text(&hk, ws)
            .replace(&format!(", {}", hk.pages_text()), "");
        let more = if walks.len() > 1 {
            format!(" (node {node}; {} local pairs measured)", walks.len())
        } else {
            String::new()
        };
        let text = if base > huge * 1.02 {
            format!(
                "page walks: idle local memory latency ({what}) is {} on huge pages and {} on base pages{more}: on base pages {} ({:.0}%) of each load is translation (TLB misses and page walks); the headline figure uses huge pages",
                ns(huge),
                ns(base),
                ns(base - huge),
                (base - huge) / base * 100.0
            )
        } else {
            format!(
                "page walks: idle local memory latency ({what}) is {} on huge pages and {} on base pages{more}: no translation cost shows beyond the noise",
                ns(huge),
                ns(base)
            )
        };
        out.push(
            "page_walks",
            Severity::Info,
            text,
            Some(anchors::id(out.b, "mem-latency-kinds")),
        );
    }
    // In a VM, nested paging inflates memory latency even on the guest's huge pages.
    let virtual_machine = l
        .bundle
        .envelope
        .host
        .hypervisor
        .as_deref()
        .filter(|h| !h.is_empty() && *h != "none");
    let memory_measured = lat.iter().any(|r| {
        r.points
            .iter()
            .any(|p| r.kind().is_memory(p.working_set_bytes))
    });
    if let (Some(hv), true) = (virtual_machine, memory_measured) {
        out.push(
            "memory_latency_vm",
            Severity::Notice,
            format!(
                "this is a virtual machine ({hv}): with nested paging a TLB miss walks the guest's and the host's page tables, and the host's page size cannot be seen from inside, so memory latency here is higher than the bare machine's, even on huge pages"
            ),
            Some(anchors::mem_latency(out.b)),
        );
    }
    // The same quantity from different probes of one run: idle memory latency of one
    // kind (order, pages, locality) and working set, by every probe that measured it.
    let mut dram: Vec<(String, numalab_mem::latency::Kind, u64, f64)> = Vec::new();
    for r in &lat {
        let local = r.matrix.is_none_or(|c| c.cpu_node == c.mem_node);
        let p = if r.matrix.is_some() {
            r.points.first()
        } else {
            r.points.last()
        };
        if let (true, Some(p)) = (local, p) {
            if r.kind().is_memory(p.working_set_bytes) {
                let probe = if r.matrix.is_some() {
                    "node matrix"
                } else {
                    "latency curve"
                };
                dram.push((
                    probe.to_string(),
                    r.kind(),
                    p.working_set_bytes,
                    p.latency_ns.median,
                ));
            }
        }
    }
    let loaded_records = l.records_of::<LoadedRecord>();
    for (_, r) in &loaded_records {
        if let Some(idle) = r.points.iter().find(|p| p.delay_ns.is_none()) {
            if r.idle_kind().is_memory(r.chase_bytes) {
                dram.push((
                    "loaded latency, idle point".into(),
                    r.idle_kind(),
                    r.chase_bytes,
                    idle.latency_ns.median,
                ));
            }
        }
    }
    let mut groups: Vec<(numalab_mem::latency::Kind, u64)> = Vec::new();
    for d in &dram {
        if !groups.contains(&(d.1.clone(), d.2)) {
            groups.push((d.1.clone(), d.2));
        }
    }
    for (kind, ws) in groups {
        let same: Vec<&(String, numalab_mem::latency::Kind, u64, f64)> =
            dram.iter().filter(|d| d.1 == kind && d.2 == ws).collect();
        let lo = same.iter().min_by(|a, b| a.3.total_cmp(&b.3));
        let hi = same.iter().max_by(|a, b| a.3.total_cmp(&b.3));
        if let (Some(lo), Some(hi)) = (lo, hi) {
            if lo.3 > 0.0 && hi.3 / lo.3 > DISAGREEMENT {
                out.push(
                    "latency_disagreement",
                    Severity::Notice,
                    format!(
                        "memory latency ({}) was {} by the {} and {} by the {} in this run ({} the lower): the same measurement gave different figures, so the machine's memory latency was not stable during the run (a busy host or VM); rerun on an idle machine before trusting either",
                        kind.label(ws),
                        ns(lo.3),
                        lo.0,
                        ns(hi.3),
                        hi.0,
                        x(hi.3 / lo.3)
                    ),
                    Some(anchors::mem_latency(out.b)),
                );
            }
        }
    }
    // Latency under load.
    for (_, r) in loaded_records {
        let (Some(idle), Some(full)) = (
            r.points.iter().find(|p| p.delay_ns.is_none()),
            r.points
                .iter()
                .filter(|p| p.delay_ns.is_some())
                .max_by(|a, b| a.traffic_gbps.total_cmp(&b.traffic_gbps)),
        ) else {
            continue;
        };
        let ratio = full.latency_ns.median / idle.latency_ns.median;
        out.push(
            "loaded_latency",
            if ratio > 1.5 {
                Severity::Notice
            } else {
                Severity::Info
            },
            format!(
                "under load, {} ({}) goes from {} idle to {} while {} other CPU(s) move {:.1} GB/s ({} idle)",
                if r.idle_kind().is_memory(r.chase_bytes) {
                    "memory latency"
                } else {
                    "the chaser's latency"
                },
                crate::sections::mem::latency_kind_text(&r.kind(), r.chase_bytes),
                ns(idle.latency_ns.median),
                ns(full.latency_ns.median),
                r.generator_cpus.len(),
                full.traffic_gbps,
                x(ratio)
            ),
            Some(anchors::mem_loaded(out.b)),
        );
    }
    // Page migration: the biggest cell of each pair, base-page unit first.
    let mig: Vec<MigrateRecord> = l
        .records_of::<MigrateRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let mut roles: Vec<&str> = Vec::new();
    for r in &mig {
        if !roles.contains(&r.pair_role.as_str()) {
            roles.push(&r.pair_role);
        }
    }
    for role in roles {
        let Some(big) = mig
            .iter()
            .filter(|r| r.pair_role == role)
            .max_by_key(|r| (r.pages * r.unit_bytes, std::cmp::Reverse(r.unit_bytes)))
        else {
            continue;
        };
        let text = if big.same_node {
            format!(
                "page migration between nodes not measured (one NUMA node); same-node copies of {} x {} pages, a baseline only: {}",
                big.pages,
                numalab_schema::units::bytes(big.unit_bytes),
                big.why
            )
        } else {
            format!(
                "page migration node {} -> {} ({role}), {} x {} pages: {}",
                big.src_node,
                big.dst_node,
                big.pages,
                numalab_schema::units::bytes(big.unit_bytes),
                big.why
            )
        };
        out.push(
            "migration",
            Severity::Info,
            text,
            Some(anchors::mem_migrate(out.b)),
        );
    }
}

/// Groups of a level per package, if the level's groups nest inside packages.
fn groups_per_package(m: &Machine, groups: &[Vec<u32>]) -> Option<usize> {
    if m.packages.is_empty() {
        return None;
    }
    let mut counts = vec![0usize; m.packages.len()];
    for g in groups {
        let p = m
            .packages
            .iter()
            .position(|p| g.iter().all(|c| p.cpus.contains(c)))?;
        counts[p] += 1;
    }
    let first = *counts.iter().find(|c| **c > 0)?;
    counts
        .iter()
        .all(|c| *c == 0 || *c == first)
        .then_some(first)
}

fn c2c(l: &Loaded, m: Option<&Machine>, out: &mut Out<'_>) {
    for (r, rec) in l.records_of::<MatrixRecord>() {
        let anchor = Some(anchors::c2c_heatmap(out.b, &r.key));
        let vals = crate::metrics::pair_values(&rec);
        let Some(s) = numalab_stats::Summary::of(&vals) else {
            continue;
        };
        let range = if s.n == 1 {
            format!("{} for the one pair measured", ns(s.median))
        } else {
            format!(
                "{} to {}, median {} over {} pairs",
                ns(s.min),
                ns(s.max),
                ns(s.median),
                s.n
            )
        };
        out.push(
            "c2c_range",
            Severity::Info,
            format!("core-to-core latency ({}): {range}", rec.variant),
            anchor.clone(),
        );
        let mut levels = Vec::new();
        for lv in &rec.levels {
            if let (Some(name), Some(i), Some(e)) = (&lv.hwloc, lv.intra_ns, lv.inter_ns) {
                levels.push(format!("{} inside {name}, {} between them", ns(i), ns(e)));
            }
        }
        if !levels.is_empty() {
            out.push(
                "c2c_levels",
                Severity::Info,
                format!("core-to-core latency by level: {}", levels.join("; ")),
                Some(anchors::c2c_structure(out.b, &r.key)),
            );
        }
        if let Some(m) = m {
            let nodes_per_pkg = groups_per_package(
                m,
                &m.numa_nodes
                    .iter()
                    .filter(|n| n.has_cpus)
                    .map(|n| n.cpus.clone())
                    .collect::<Vec<_>>(),
            )
            .unwrap_or(1);
            for (li, lv) in rec.levels.iter().enumerate() {
                if lv.hwloc.is_some() {
                    continue;
                }
                let groups: Vec<Vec<u32>> = rec
                    .groups
                    .get(li)
                    .map(|g| g.iter().map(|g| g.cpus.clone()).collect())
                    .unwrap_or_default();
                let Some(k) = groups_per_package(m, &groups) else {
                    continue;
                };
                // Only coarse splits (several cores per group) say something about NUMA
                // modes; SMT pairs and clusters are finer than any NUMA node.
                let cores_per_group = groups.first().map_or(0, |g| g.len());
                if k > nodes_per_pkg && k > 1 && cores_per_group >= 4 {
                    out.push(
                        "c2c_domains",
                        Severity::Notice,
                        format!(
                            "core-to-core latency shows {k} domains per package ({} between vs {} inside) but hwloc shows {nodes_per_pkg} NUMA node(s) per package: check the NUMA mode in the firmware (sub-NUMA clustering, NPS, quadrant mode)",
                            lv.inter_ns.map_or("?".into(), ns),
                            lv.intra_ns.map_or("?".into(), ns),
                        ),
                        anchor.clone(),
                    );
                }
            }
        }
        for s in &rec.topology_comparison {
            out.push(
                "c2c_vs_hwloc",
                Severity::Notice,
                format!("core-to-core latency vs hwloc: {s}"),
                Some(anchors::c2c_structure(out.b, &r.key)),
            );
        }
    }
}

fn workload(l: &Loaded, m: Option<&Machine>, out: &mut Out<'_>) {
    let runs = crate::metrics::complete_runs(l);
    if runs.is_empty() {
        return;
    }
    let table = Some(anchors::workload_table(out.b));
    let chart = Some(anchors::workload_chart(out.b));
    // Under-use of the CPUs given: the worst run.
    let low: Vec<&WorkloadRun> = runs.iter().filter(|r| r.cpu_utilization < 0.75).collect();
    if let Some(w) = low
        .iter()
        .min_by(|a, b| a.cpu_utilization.total_cmp(&b.cpu_utilization))
    {
        let busy = w.cpu_utilization * w.threads as f64;
        let others = w
            .worker_cpus_busy
            .map(|b| (b - w.cpu_utilization).max(0.0))
            .unwrap_or(0.0);
        let steal = w.worker_cpus_steal.unwrap_or(0.0);
        let cause = if others > 0.2 || steal > 0.05 {
            let mut c = format!(
                "the machine was shared (other processes used {} of these CPUs",
                pct(others)
            );
            if steal >= 0.005 {
                c.push_str(&format!(", the hypervisor stole {}", pct(steal)));
            }
            c.push(')');
            c
        } else {
            "the clients waited (page faults, locks or I/O), not other processes".into()
        };
        let more = if low.len() > 1 {
            format!("; {} of {} runs were below 75%", low.len(), runs.len())
        } else {
            String::new()
        };
        out.push(
            "workload_cpus_idle",
            Severity::Warning,
            format!(
                "the workload kept {busy:.1} of {} CPU{} busy at {} thread{}: {cause}{more}",
                w.threads,
                if w.threads == 1 { "" } else { "s" },
                w.threads,
                if w.threads == 1 { "" } else { "s" },
            ),
            table.clone(),
        );
    }
    // Scaling: one thread against the most threads, per data mode.
    let modes: std::collections::BTreeSet<&str> = runs.iter().map(|r| r.mode.name()).collect();
    for mode in &modes {
        let of: Vec<&WorkloadRun> = runs.iter().filter(|r| r.mode.name() == *mode).collect();
        let (Some(one), Some(full)) = (
            of.iter().find(|r| r.threads == 1),
            of.iter().max_by_key(|r| r.threads),
        ) else {
            continue;
        };
        if full.threads <= 1 || one.requests_per_s <= 0.0 {
            continue;
        }
        let total = full.requests_per_s / one.requests_per_s;
        let per = full.requests_per_s_per_thread / one.requests_per_s_per_thread;
        let shared = low.iter().any(|r| r.threads == full.threads);
        let (severity, text) = if per < 0.8 {
            (
                Severity::Notice,
                format!(
                    "reference workload ({mode}): per-thread throughput at {} threads is {} of one thread's (total requests/s: {} one thread's){}",
                    full.threads,
                    x(per),
                    x(total),
                    if shared {
                        ": the CPUs were shared during that run, so this is not the machine's scaling"
                    } else {
                        ""
                    }
                ),
            )
        } else {
            (
                Severity::Info,
                format!(
                    "reference workload ({mode}): {} threads give {} the requests/s of one thread ({} of one thread's per thread)",
                    full.threads,
                    x(total),
                    x(per)
                ),
            )
        };
        out.push("workload_scaling", severity, text, chart.clone());
    }
    // Shared against replicated data at the same load (experiments A: remote memory).
    let multi_node = m.is_some_and(|m| m.numa_nodes.iter().filter(|n| n.has_cpus).count() > 1);
    if multi_node {
        for shared in runs
            .iter()
            .filter(|r| r.mode.name() == "shared-first-touch")
        {
            if let Some(rep) = runs
                .iter()
                .find(|r| r.mode.name() == "replicated" && r.threads == shared.threads)
            {
                let ratio = rep.requests_per_s / shared.requests_per_s;
                if ratio > 1.1 {
                    out.push(
                        "workload_remote_data",
                        Severity::Notice,
                        format!(
                            "at {} threads, replicated data gives {} the requests/s of one shared copy: remote memory accesses limit the shared mode",
                            shared.threads,
                            x(ratio)
                        ),
                        table.clone(),
                    );
                }
            }
        }
    }
    if let Some(r) = runs
        .iter()
        .filter(|r| r.requests_per_joule.is_some())
        .max_by_key(|r| r.threads)
    {
        out.push(
            "workload_per_watt",
            Severity::Info,
            format!(
                "reference workload at {} threads: {:.1} requests per joule ({:.0} W, {})",
                r.threads,
                r.requests_per_joule.unwrap_or(0.0),
                r.power_watts.unwrap_or(0.0),
                r.power_covers.as_deref().unwrap_or("sensors")
            ),
            table.clone(),
        );
    }
}

fn harness(l: &Loaded, out: &mut Out<'_>) {
    for (_, s) in l.records_of::<ScaleSummary>() {
        let anchor = Some(anchors::scale_chart(out.b, &s.study_id));
        for f in &s.findings {
            out.push(
                "scale",
                Severity::Notice,
                format!("scaling of `{}` ({}): {f}", cmd(&s.command), s.placement),
                anchor.clone(),
            );
        }
    }
    for (_, s) in l.records_of::<PolicySummary>() {
        let anchor = Some(anchors::policy_chart(out.b, &s.study_id));
        // The study's findings already hold its class and recommendation.
        let lines = if s.findings.is_empty() {
            vec![format!("{} {}", s.classification, s.recommendation)]
        } else {
            s.findings.clone()
        };
        for f in lines {
            out.push(
                "policy",
                if s.single_node {
                    Severity::Info
                } else {
                    Severity::Notice
                },
                format!("memory policy of `{}`: {f}", cmd(&s.command)),
                anchor.clone(),
            );
        }
    }
    for (_, s) in l.records_of::<SweepSummary>() {
        let anchor = Some(anchors::sweep_chart(out.b, &s.study_id));
        for f in &s.findings {
            out.push(
                "sweep",
                Severity::Notice,
                format!("sweep of `{}`: {f}", cmd(&s.command)),
                anchor.clone(),
            );
        }
    }
}

fn models(l: &Loaded, out: &mut Out<'_>) {
    let triads: Vec<(String, model::StreamTriad)> = l
        .records_of::<model::StreamTriad>()
        .into_iter()
        .map(|(r, t)| (r.key.clone(), t))
        .collect();
    let mut done = Vec::new();
    for (_, t) in &triads {
        let group = (t.preset.clone(), t.engine.clone(), t.cores.clone());
        if done.contains(&group) {
            continue;
        }
        done.push(group.clone());
        let same: Vec<&model::StreamTriad> = triads
            .iter()
            .map(|(_, x)| x)
            .filter(|x| (x.preset.clone(), x.engine.clone(), x.cores.clone()) == group)
            .collect();
        let (Some(best), Some(worst)) = (
            same.iter()
                .max_by(|a, b| a.bandwidth_gbps.total_cmp(&b.bandwidth_gbps)),
            same.iter()
                .min_by(|a, b| a.bandwidth_gbps.total_cmp(&b.bandwidth_gbps)),
        ) else {
            continue;
        };
        let text = if same.len() > 1 && best.bandwidth_gbps > 0.0 {
            format!(
                "{} ({}): triad with the data on node {} reaches {} the bandwidth of node {} ({:.0} vs {:.0} GB/s, {:.0}% of that memory's peak)",
                t.preset,
                t.engine,
                worst.data_node,
                x(worst.bandwidth_gbps / best.bandwidth_gbps),
                best.data_node,
                worst.bandwidth_gbps,
                best.bandwidth_gbps,
                worst.percent_of_peak
            )
        } else {
            format!(
                "{} ({}): triad reaches {:.0} GB/s, {:.0}% of the peak of node {}'s memory",
                t.preset, t.engine, t.bandwidth_gbps, t.percent_of_peak, t.data_node
            )
        };
        out.modeled("model_triad", text, Some(anchors::model_triad(out.b)));
    }
    for (r, h) in l.records_of::<model::LatencyHeatmap>() {
        out.modeled(
            "model_latency_spread",
            format!(
                "{}: latency to {} spreads over {:.0} cycles ({:.0}-{:.0}, {} across cores): the average of {} hides it",
                h.preset,
                h.target,
                h.spread_cycles,
                h.min_cycles,
                h.max_cycles,
                ns(h.spread_ns),
                ns(h.mean_ns)
            ),
            Some(anchors::model(out.b, &r.key)),
        );
    }
    for (r, t) in l.records_of::<model::Traffic>() {
        out.modeled(
            "model_traffic",
            format!(
                "{}: {} traffic saturates at {:.3} packets per stop per cycle (zero-load latency {:.1} cycles)",
                t.preset, t.pattern, t.saturation_rate, t.zero_load_latency_cycles
            ),
            Some(anchors::model(out.b, &r.key)),
        );
    }
    let policies: Vec<(String, model::Policy)> = l
        .records_of::<model::Policy>()
        .into_iter()
        .map(|(r, p)| (r.key.clone(), p))
        .collect();
    let apps: std::collections::BTreeSet<String> = policies
        .iter()
        .map(|(_, p)| p.application.clone())
        .collect();
    for app in apps {
        let of: Vec<&(String, model::Policy)> = policies
            .iter()
            .filter(|(_, p)| p.application == app)
            .collect();
        if of.len() < 2 {
            continue;
        }
        let best = of
            .iter()
            .max_by(|a, b| a.1.bandwidth_gbps.total_cmp(&b.1.bandwidth_gbps))
            .expect("two or more");
        let worst = of
            .iter()
            .min_by(|a, b| a.1.bandwidth_gbps.total_cmp(&b.1.bandwidth_gbps))
            .expect("two or more");
        out.modeled(
            "model_policy",
            format!(
                "{} application: {} gives the most bandwidth ({:.0} GB/s), {} the least ({:.0} GB/s, controller imbalance {:.2})",
                app,
                best.1.configuration,
                best.1.bandwidth_gbps,
                worst.1.configuration,
                worst.1.bandwidth_gbps,
                worst.1.mc_imbalance
            ),
            Some(anchors::model_policy(out.b)),
        );
    }
    for (r, c) in l.records_of::<model::Check>() {
        if let Some(worst) = c.metrics.iter().max_by(|a, b| {
            a.relative_difference
                .abs()
                .total_cmp(&b.relative_difference.abs())
        }) {
            out.modeled(
                "model_check",
                format!(
                    "{} {} ({}): the analytic and discrete-event engines agree within {:.1}% (largest difference: {})",
                    c.preset,
                    c.experiment,
                    c.point,
                    worst.relative_difference.abs() * 100.0,
                    worst.name
                ),
                Some(anchors::model(out.b, &r.key)),
            );
        }
    }
}
