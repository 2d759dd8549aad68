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
use numalab_schema::units::{nanos as ns, percent as pct};
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

    /// The ANSI colour of the word on a terminal (33 yellow, 36 cyan), `None` for plain.
    pub fn colour(self) -> Option<&'static str> {
        match self {
            Severity::Warning => Some("33"),
            Severity::Notice => Some("36"),
            Severity::Info => None,
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

pub use crate::facts::machine_of;

/// Medians of the same quantity from two probes further apart than this (25%) are a
/// disagreement: beyond the run-to-run spread of one probe on a quiet machine.
const DISAGREEMENT: f64 = 1.25;

/// A ratio: "1.50x", "12x". `numalab_schema::units` has no ratio formatter; durations
/// and fractions use its `nanos` (as `ns`) and `percent` (as `pct`).
fn x(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}x")
    } else {
        format!("{v:.2}x")
    }
}

fn cmd(c: &[String]) -> String {
    crate::shorten(&c.join(" "), 60)
}

/// Every finding of a set of bundles, most important first.
pub fn findings(set: &[Loaded]) -> Vec<Finding> {
    findings_until(set, &|| false).unwrap_or_default()
}

/// [`findings`], giving up (`None`) once `stop` says so; it is asked between the rules
/// of each bundle (a rule over a 2,000-CPU matrix takes a while).
pub fn findings_until(set: &[Loaded], stop: &dyn Fn() -> bool) -> Option<Vec<Finding>> {
    let mut all = Vec::new();
    for (b, l) in set.iter().enumerate() {
        let mut out = Out {
            b,
            label: &l.label,
            list: Vec::new(),
        };
        // Within a severity, findings keep this order: the machine and its memory
        // first, then what ran on it, then the facts about the measurement itself.
        let machine = machine_of(l);
        let m = machine.as_ref();
        let rules: [&dyn Fn(&mut Out); 11] = [
            &|o| bundle_problems(l, o),
            &|o| topology(l, m, o),
            &|o| mem(l, m, o),
            &|o| c2c(l, m, o),
            &|o| workload(l, m, o),
            &|o| harness(l, o),
            &|o| pmu(l, o),
            &|o| steps(l, o),
            &|o| doctor(l, o),
            &|o| host(l, o),
            &|o| models(l, o),
        ];
        for rule in rules {
            if stop() {
                return None;
            }
            rule(&mut out);
        }
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
    Some(all)
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

/// What the findings' unit tests share: an in-memory bundle, a machine, and a way to
/// run one rule on a bundle.
#[cfg(test)]
mod testutil {
    use super::{Finding, Out, Severity};
    use crate::load::Loaded;
    use numalab_records::pmu::{Capability, EventStatus, PmuCheck};
    use numalab_schema::machine::{DistanceMatrix, Domain, MachineSource, NumaNode};
    use numalab_schema::record::{Host, Tool, SCHEMA_VERSION};
    use numalab_schema::{Bundle, Envelope, Machine, Origin, Record, RecordKind};

    /// A measured record.
    pub(super) fn rec<T: RecordKind>(key: &str, payload: &T) -> Record {
        Record::new(key, Origin::Measured, payload)
    }

    /// The envelope of a release build on an unknown bare-metal host.
    pub(super) fn envelope() -> Envelope {
        Envelope {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "numalab".into(),
                version: "0.0.0".into(),
                target: "x86_64-linux".into(),
                profile: "release".into(),
            },
            created_utc: "2024-01-01T00:00:00Z".into(),
            command: vec!["numalab".into(), "test".into()],
            config: serde_json::json!({}),
            origin: Origin::Measured,
            host: Host::unknown("00"),
        }
    }

    /// A bundle labelled "test" with this envelope and these records.
    pub(super) fn loaded_with(envelope: Envelope, records: Vec<Record>) -> Loaded {
        Loaded::from_bundle(
            "test",
            Bundle {
                schema_version: SCHEMA_VERSION,
                envelope,
                records,
            },
        )
    }

    /// A bundle labelled "test" with [`envelope`] and these records.
    pub(super) fn loaded(records: Vec<Record>) -> Loaded {
        loaded_with(envelope(), records)
    }

    /// Runs one rule on a bundle (as the first bundle of a report): what it said.
    pub(super) fn run(l: &Loaded, rule: impl FnOnce(&Loaded, &mut Out<'_>)) -> Vec<Finding> {
        let mut out = Out {
            b: 0,
            label: &l.label,
            list: Vec::new(),
        };
        rule(l, &mut out);
        out.list
    }

    /// The findings with this id.
    pub(super) fn of<'a>(f: &'a [Finding], id: &str) -> Vec<&'a Finding> {
        f.iter().filter(|x| x.id == id).collect()
    }

    /// The one finding with this id (fails the test when there are none or several).
    pub(super) fn one<'a>(f: &'a [Finding], id: &str) -> &'a Finding {
        let v = of(f, id);
        assert_eq!(v.len(), 1, "one {id} expected: {f:#?}");
        v[0]
    }

    /// Asserts that the finding `id` is there once, with this severity and every one
    /// of these pieces in its sentence; returns its sentence.
    pub(super) fn says(f: &[Finding], id: &str, severity: Severity, pieces: &[&str]) -> String {
        let x = one(f, id);
        assert_eq!(x.severity, severity, "{}", x.text);
        for p in pieces {
            assert!(x.text.contains(p), "{p:?} not in {:?}", x.text);
        }
        x.text.clone()
    }

    /// Asserts that no finding has this id.
    pub(super) fn absent(f: &[Finding], id: &str) {
        assert!(of(f, id).is_empty(), "no {id} expected: {f:#?}");
    }

    /// A PMU check: a hardware PMU (cycles and instructions count) or software events
    /// only, and the task clock's agreement with the thread's CPU time.
    pub(super) fn pmu_check(hardware: bool, agreement: Option<f64>) -> PmuCheck {
        let hw = || {
            if hardware {
                EventStatus::Works
            } else {
                EventStatus::NotSupported("ENOENT".into())
            }
        };
        PmuCheck {
            capability: Capability {
                paranoid: Some(2),
                privileged: false,
                cycles: hw(),
                instructions: hw(),
                task_clock: EventStatus::Works,
                page_faults: EventStatus::Works,
                context_switches: EventStatus::Works,
                pmus: vec![],
            },
            verdict: "only software events can be counted".into(),
            cpu: None,
            cpu_problem: None,
            counters: None,
            loop_iterations: 1_000_000,
            loop_task_clock_ns: None,
            loop_thread_cpu_ns: None,
            task_clock_agreement: agreement,
            loop_runs: Some(1),
            loop_cycles: None,
            loop_instructions: None,
            loop_ipc: None,
        }
    }

    /// A summary of one value (its median is the value).
    pub(super) fn summary(v: f64) -> numalab_stats::Summary {
        numalab_stats::Summary::of(&[v]).expect("a finite value")
    }

    /// A machine with these packages (CPU lists) and NUMA nodes with CPUs (OS index,
    /// CPUs; 1 GiB each, in the package holding their CPUs).
    pub(super) fn machine(packages: &[&[u32]], nodes: &[(u32, &[u32])]) -> Machine {
        let packages: Vec<Domain> = packages
            .iter()
            .enumerate()
            .map(|(i, cpus)| Domain {
                os_index: Some(i as u32),
                subtype: None,
                level: 0,
                cpus: cpus.to_vec(),
            })
            .collect();
        let numa_nodes = nodes
            .iter()
            .map(|(os, cpus)| NumaNode {
                os_index: *os,
                cpus: cpus.to_vec(),
                has_cpus: true,
                memory_bytes: 1 << 30,
                subtype: None,
                package: packages
                    .iter()
                    .position(|p| cpus.iter().all(|c| p.cpus.contains(c))),
            })
            .collect();
        let mut m = Machine {
            packages,
            numa_nodes,
            ..Machine::empty(MachineSource::Live)
        };
        m.compute_summary();
        m
    }

    /// Adds a memory-only node.
    pub(super) fn add_memory_node(m: &mut Machine, os: u32, bytes: u64, subtype: Option<&str>) {
        m.numa_nodes.push(NumaNode {
            os_index: os,
            cpus: vec![],
            has_cpus: false,
            memory_bytes: bytes,
            subtype: subtype.map(String::from),
            package: None,
        });
    }

    /// Adds the firmware's SLIT.
    pub(super) fn add_slit(m: &mut Machine, nodes: &[u32], values: &[&[u64]]) {
        m.distances.push(DistanceMatrix {
            name: Some("NUMALatency".into()),
            from_os: true,
            means: "latency".into(),
            nodes: nodes.to_vec(),
            values: values.iter().map(|r| r.to_vec()).collect(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use crate::records::{StepRecord, StepStatus, TopologyRecord};
    use numalab_schema::Warning;

    #[test]
    fn warnings_and_notices_are_coloured_info_is_plain() {
        assert_eq!(Severity::Warning.colour(), Some("33"));
        assert_eq!(Severity::Notice.colour(), Some("36"));
        assert_eq!(Severity::Info.colour(), None);
    }

    fn step(id: &str, outcome: StepStatus) -> StepRecord {
        StepRecord {
            step: id.into(),
            title: id.into(),
            outcome,
            seconds: 1.0,
            run: Some(1),
        }
    }

    #[test]
    fn ratios_keep_two_decimals_below_ten_and_none_above() {
        assert_eq!(x(1.5), "1.50x");
        assert_eq!(x(0.354), "0.35x");
        assert_eq!(x(12.4), "12x");
        assert_eq!(x(10.0), "10x");
    }

    #[test]
    fn durations_and_fractions_are_the_units_formatters() {
        // `ns` and `pct` are numalab_schema::units::{nanos, percent}: the findings write
        // durations and fractions like every other table of the report.
        assert_eq!(ns(85.25), numalab_schema::units::nanos(85.25));
        assert_eq!(ns(1234.0), "1.23 us");
        assert_eq!(pct(0.66), "66%");
    }

    #[test]
    fn commands_are_cut_to_sixty_characters() {
        let short = vec!["./bench".to_string(), "--n".into(), "4".into()];
        assert_eq!(cmd(&short), "./bench --n 4");
        let long: Vec<String> = (0..30).map(|i| format!("a{i}")).collect();
        let c = cmd(&long);
        assert_eq!(c.chars().count(), 60, "{c}");
        assert!(c.ends_with("...") && c.starts_with("a0 a1 a2"), "{c}");
    }

    #[test]
    fn the_machine_is_the_topology_record_else_the_envelope() {
        let in_envelope = machine(&[&[0, 1]], &[(0, &[0, 1])]);
        let in_record = machine(&[&[0, 1], &[2, 3]], &[(0, &[0, 1]), (1, &[2, 3])]);
        let mut env = envelope();
        env.host.topology = Some(in_envelope.clone());
        let only_envelope = loaded_with(env.clone(), vec![]);
        assert_eq!(machine_of(&only_envelope), Some(in_envelope));
        let both = loaded_with(
            env,
            vec![rec(
                "topo",
                &TopologyRecord {
                    machine: in_record.clone(),
                    summary_text: String::new(),
                },
            )],
        );
        assert_eq!(machine_of(&both), Some(in_record));
        assert_eq!(machine_of(&loaded(vec![])), None);
    }

    #[test]
    fn most_important_first_whatever_the_rules_order() {
        // The rules say a skipped step (info) before a failed one (warning), and the
        // doctor's "warn" (notice) after both; the list is sorted by severity, stably.
        let mut l = loaded(vec![
            rec(
                "s1",
                &step(
                    "power",
                    StepStatus::Skipped {
                        reason: "no sensors".into(),
                    },
                ),
            ),
            rec(
                "s2",
                &step(
                    "c2c",
                    StepStatus::Failed {
                        error: "boom".into(),
                    },
                ),
            ),
            rec(
                "doctor",
                &DoctorReport {
                    schema_version: 1,
                    hostname: None,
                    checks: vec![Check {
                        name: "smt".into(),
                        verdict: Verdict::Warn,
                        value: None,
                        detail: "SMT is on".into(),
                        remedy: None,
                    }],
                },
            ),
        ]);
        l.warnings
            .push(Warning::new("cut", "the last line was cut"));
        let f = findings(std::slice::from_ref(&l));
        let got: Vec<(&str, Severity)> = f.iter().map(|x| (x.id.as_str(), x.severity)).collect();
        assert_eq!(
            got,
            [
                ("bundle_problem", Severity::Warning),
                ("step_failed", Severity::Warning),
                ("doctor", Severity::Notice),
                ("step_skipped", Severity::Info)
            ],
            "{f:#?}"
        );
        assert!(f.iter().all(|x| x.source == "test" && !x.modeled));
        // One bundle: no label in front of the sentences.
        assert!(f.iter().all(|x| !x.text.starts_with("test: ")), "{f:#?}");
    }

    #[test]
    fn a_host_fact_is_said_once_per_machine_and_labelled_with_several_bundles() {
        let vm = |label: &str, host: &str| {
            let mut env = envelope();
            env.host.hypervisor = Some("KVM".into());
            env.host.hostname = Some(host.into());
            let mut l = loaded_with(env, vec![]);
            l.label = label.into();
            l
        };
        // Two runs on one VM: the sentence once, from the first bundle, labelled.
        let f = findings(&[vm("run-a", "vm1"), vm("run-b", "vm1")]);
        let v = of(&f, "virtual_machine");
        assert_eq!(v.len(), 1, "{f:#?}");
        assert_eq!(v[0].source, "run-a");
        assert!(v[0]
            .text
            .starts_with("run-a: measured in a virtual machine (KVM)"));
        // Two VMs: once each.
        let f = findings(&[vm("a", "vm1"), vm("b", "vm2")]);
        let sources: Vec<&str> = of(&f, "virtual_machine")
            .iter()
            .map(|x| x.source.as_str())
            .collect();
        assert_eq!(sources, ["a", "b"]);
    }

    #[test]
    fn an_empty_bundle_says_nothing() {
        assert!(findings(&[loaded(vec![])]).is_empty());
        assert!(findings(&[]).is_empty());
    }
}
