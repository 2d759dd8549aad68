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
use numalab_records::c2c::MatrixRecord;
use numalab_records::harness::{PolicySummary, ScaleSummary, SweepSummary};
use numalab_records::model;
use numalab_records::pmu::{PmuCheck, Profile};
use numalab_records::workload::WorkloadRun;
use numalab_schema::{cpulist, Machine, Origin};
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
    numalab_schema::units::percent(v)
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

mod c2c;
mod harness;
mod machine;
mod mem;
mod models;
mod pmu;
mod workload;

use c2c::c2c;
use harness::harness;
use machine::{bundle_problems, doctor, host, steps, topology};
use mem::mem;
use models::models;
use pmu::pmu;
use workload::workload;
