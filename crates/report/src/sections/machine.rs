//! The machine itself: the summary at the top (bundles, steps, key figures), the
//! topology picture with the firmware's distances and caches, the doctor's checks,
//! power sensors, and every warning the records carry.

use super::{opt, table};
use crate::anchors;
use crate::doc::Section;
use crate::load::Loaded;
use crate::metrics::metrics;
use crate::records::{DoctorReport, PowerCheck, StepRecord, StepStatus, Verdict};
use crate::table::Cell;
use numalab_schema::machine::CacheKind;
use numalab_schema::{cpulist, units};

/// Bundles, evaluation steps and key figures.
pub fn summary(set: &[Loaded]) -> Section {
    let mut s = Section::new("summary", "Summary");
    let mut t = table(
        "bundles",
        "Bundles",
        &[
            ("bundle", None),
            ("origin", None),
            ("CPU", None),
            ("kernel", None),
            ("hypervisor", None),
            ("topology hash", None),
            ("written", None),
            ("records", None),
        ],
    );
    for l in set {
        let e = &l.bundle.envelope;
        let h = &e.host;
        let text = |v: &Option<String>| match v {
            Some(v) if !v.is_empty() => Cell::text(v),
            _ => Cell::missing("not recorded"),
        };
        t.push(vec![
            Cell::text(&l.label),
            Cell::text(match e.origin {
                numalab_schema::Origin::Measured => "measured",
                numalab_schema::Origin::Modeled => "modeled",
                numalab_schema::Origin::Imported => "imported",
            }),
            text(&h.cpu_model),
            text(&h.kernel),
            match &h.hypervisor {
                Some(v) if !v.is_empty() => Cell::text(v),
                _ => Cell::text("none"),
            },
            Cell::text(&h.topology_hash),
            Cell::text(&e.created_utc),
            Cell::num(l.record_count() as f64, 0),
        ]);
    }
    s.table(t);
    for (b, l) in set.iter().enumerate() {
        let steps =
            crate::records::latest_steps(l.records_of::<StepRecord>().into_iter().map(|(_, s)| s));
        if steps.is_empty() {
            continue;
        }
        let mut t = table(
            &anchors::steps(b),
            &format!("Evaluation steps{}", super::of(set, l)),
            &[
                ("step", None),
                ("what", None),
                ("status", None),
                ("detail", None),
                ("time", Some("s")),
            ],
        );
        for st in steps {
            let (status, detail) = match &st.outcome {
                StepStatus::Done => ("done", String::new()),
                StepStatus::Skipped { reason } => ("skipped", reason.clone()),
                StepStatus::Failed { error } => ("FAILED", error.clone()),
            };
            t.push(vec![
                Cell::text(&st.step),
                Cell::text(&st.title),
                Cell::text(status),
                Cell::text(detail),
                Cell::num(st.seconds, 1),
            ]);
        }
        s.table(t);
    }
    let mut k = table(
        "key-figures",
        "Key figures",
        &[
            ("bundle", None),
            ("perspective", None),
            ("figure", None),
            ("median", None),
            ("unit", None),
            ("of peak", Some("%")),
            ("samples", None),
        ],
    );
    let mut peak_notes: Vec<String> = Vec::new();
    for l in set {
        let peak = crate::peak::of(l);
        let mut shown = false;
        for m in metrics(l) {
            let Some(med) = numalab_stats::median(&m.samples) else {
                continue;
            };
            let value = match (m.samples.len() >= 3, m.bounds) {
                (true, _) => match numalab_stats::median_interval(&m.samples) {
                    Some(i) => Cell::Interval {
                        estimate: i.estimate,
                        low: i.low,
                        high: i.high,
                        digits: 2,
                    },
                    None => Cell::num(med, 2),
                },
                (false, Some((lo, hi))) => Cell::Interval {
                    estimate: med,
                    low: lo,
                    high: hi,
                    digits: 2,
                },
                _ => Cell::num(med, 2),
            };
            k.push(vec![
                Cell::text(&l.label),
                Cell::text(&m.group),
                Cell::text(m.label()),
                value,
                Cell::text(&m.unit),
                crate::peak::metric_share(peak.as_ref(), &m.id, med),
                Cell::num(m.samples.len() as f64, 0),
            ]);
            shown |= m.id.starts_with("mem.bandwidth.");
        }
        if shown {
            peak_notes.push(format!("{}: {}", l.label, crate::peak::note(peak.as_ref())));
        }
    }
    k.notes.extend(peak_notes);
    k.notes.push("medians with 95% bootstrap intervals where there are 3 or more samples (time slices of a run, repetitions, pairs); `numalab compare` puts these figures of two bundles side by side".into());
    s.table(k);
    s
}

/// The topology: picture, summary, distances, caches, frequencies.
pub fn topology(b: usize, l: &Loaded, of: &str) -> Option<Section> {
    let rec = l
        .records_of::<crate::records::TopologyRecord>()
        .into_iter()
        .next()
        .map(|(_, t)| t);
    // Bundles of other commands carry the topology in their envelope; show it only
    // once per report page, for bundles that set out to describe the machine.
    let m = match &rec {
        Some(t) => t.machine.clone(),
        None => return None,
    };
    let mut s = Section::new(&anchors::topology(b), &format!("Topology{of}"));
    if let Some(t) = &rec {
        s.list(t.summary_text.lines().map(str::to_string).collect());
    }
    s.chart(
        &format!("{}-picture", anchors::topology(b)),
        crate::topology::picture(&m),
        "Packages and their NUMA nodes (CPUs, memory); memory-only nodes apart",
    );
    for d in &m.distances {
        let mut cols: Vec<(String, Option<&str>)> = vec![("from \\ to".into(), None)];
        cols.extend(d.nodes.iter().map(|n| (format!("node {n}"), None)));
        let cols_ref: Vec<(&str, Option<&str>)> =
            cols.iter().map(|(a, u)| (a.as_str(), *u)).collect();
        let name = d.name.clone().unwrap_or_else(|| d.means.clone());
        let mut t = table(
            &format!(
                "{}-distances-{}",
                anchors::topology(b),
                anchors::slug(&name)
            ),
            &format!(
                "Node distances: {name} ({}, {})",
                d.means,
                if d.from_os {
                    "from the firmware"
                } else {
                    "given by the user"
                }
            ),
            &cols_ref,
        );
        for (i, row) in d.values.iter().enumerate() {
            let mut r = vec![Cell::text(format!(
                "node {}",
                d.nodes.get(i).copied().unwrap_or(0)
            ))];
            r.extend(row.iter().map(|v| Cell::num(*v as f64, 0)));
            t.push(r);
        }
        t.notes.push("the firmware's SLIT is an ordering (10 = local), not a measurement: compare it with the measured latencies".into());
        s.table(t);
    }
    for a in &m.memory_attributes {
        let mut t = table(
            &format!("{}-hmat-{}", anchors::topology(b), anchors::slug(&a.name)),
            &format!(
                "Memory attribute {} ({}, {} is better)",
                a.name,
                a.unit,
                if a.higher_is_better {
                    "higher"
                } else {
                    "lower"
                }
            ),
            &[
                ("initiator CPUs", None),
                ("target node", None),
                ("value", Some(a.unit.as_str())),
            ],
        );
        for v in &a.values {
            t.push(vec![
                Cell::text(
                    v.initiator_cpus
                        .as_ref()
                        .map_or("any".into(), |c| cpulist::format(c)),
                ),
                Cell::num(f64::from(v.target_node), 0),
                Cell::num(v.value as f64, 0),
            ]);
        }
        s.table(t);
    }
    let mut caches = table(
        &format!("{}-caches", anchors::topology(b)),
        "Caches",
        &[
            ("level", None),
            ("kind", None),
            ("size", None),
            ("line", Some("B")),
            ("ways", None),
            ("instances", None),
            ("CPUs per instance", None),
        ],
    );
    let mut kinds: Vec<(u32, String, Option<u64>)> = Vec::new();
    for c in &m.caches {
        let kind = match c.kind {
            CacheKind::Data => "data",
            CacheKind::Instruction => "instruction",
            CacheKind::Unified => "unified",
            CacheKind::MemorySide => "memory-side",
        };
        let key = (c.level, kind.to_string(), c.size_bytes);
        if kinds.contains(&key) {
            continue;
        }
        kinds.push(key);
        let same: Vec<_> = m
            .caches
            .iter()
            .filter(|x| x.level == c.level && x.kind == c.kind && x.size_bytes == c.size_bytes)
            .collect();
        caches.push(vec![
            Cell::text(format!("L{}", c.level)),
            Cell::text(kind),
            c.size_bytes.map_or(Cell::missing("size unknown"), |b| {
                Cell::text(units::bytes(b))
            }),
            opt(c.line_bytes.map(f64::from), 0, "line size unknown"),
            opt(c.ways.map(f64::from), 0, "associativity unknown"),
            Cell::num(same.len() as f64, 0),
            Cell::num(c.cpus.len() as f64, 0),
        ]);
    }
    s.table(caches);
    let mut f = table(
        &format!("{}-frequencies", anchors::topology(b)),
        "CPU frequencies",
        &[
            ("CPUs", None),
            ("min", Some("MHz")),
            ("max", Some("MHz")),
            ("base", Some("MHz")),
            ("governor", None),
            ("from", None),
        ],
    );
    for d in &m.frequencies {
        let mhz = |v: Option<u64>| opt(v.map(|k| k as f64 / 1000.0), 0, "not reported");
        f.push(vec![
            Cell::text(cpulist::format(&d.cpus)),
            mhz(d.min_khz),
            mhz(d.max_khz),
            mhz(d.base_khz),
            d.governor
                .as_ref()
                .map_or(Cell::missing("no governor"), Cell::text),
            Cell::text(&d.origin),
        ]);
    }
    if f.rows.is_empty() {
        s.para("CPU frequencies: not reported on this machine (no cpufreq interface), so cycles cannot be derived from times.");
    }
    s.table(f);
    Some(s)
}

/// The doctor's checks.
pub fn doctor(b: usize, l: &Loaded, of: &str) -> Option<Section> {
    let (_, d) = l.records_of::<DoctorReport>().into_iter().next()?;
    let mut s = Section::new(
        &anchors::doctor(b),
        &format!("What this machine allows{of}"),
    );
    let mut t = table(
        &format!("{}-checks", anchors::doctor(b)),
        "numalab doctor",
        &[
            ("check", None),
            ("verdict", None),
            ("found", None),
            ("remedy", None),
        ],
    );
    for c in &d.checks {
        t.push(vec![
            Cell::text(&c.name),
            Cell::text(match c.verdict {
                Verdict::Ok => "ok",
                Verdict::Warn => "warn",
                Verdict::Fail => "FAIL",
                Verdict::Info => "info",
            }),
            Cell::text(&c.detail),
            c.remedy.as_ref().map_or(Cell::text(""), Cell::text),
        ]);
    }
    s.table(t);
    Some(s)
}

/// Power sensors and frequency controls.
pub fn power(b: usize, l: &Loaded, of: &str) -> Option<Section> {
    let (_, p) = l.records_of::<PowerCheck>().into_iter().next()?;
    let mut s = Section::new(&anchors::power(b), &format!("Power and frequency{of}"));
    let mut t = table(
        &format!("{}-sensors", anchors::power(b)),
        "Sensors",
        &[
            ("sensor", None),
            ("kind", None),
            ("label", None),
            ("covers", None),
        ],
    );
    for x in &p.sensors {
        t.push(vec![
            Cell::text(&x.id),
            Cell::text(match x.kind {
                numalab_records::sensors::SensorKind::Energy => "energy",
                numalab_records::sensors::SensorKind::Power => "power",
                numalab_records::sensors::SensorKind::Temperature => "temperature",
            }),
            Cell::text(&x.label),
            Cell::text(&x.covers),
        ]);
    }
    if t.rows.is_empty() {
        s.para("No readable power or temperature sensors: power figures are not available.");
    }
    s.table(t);
    let mut f = table(
        &format!("{}-cpufreq", anchors::power(b)),
        "cpufreq domains",
        &[
            ("CPUs", None),
            ("current", Some("MHz")),
            ("max", Some("MHz")),
            ("governor", None),
        ],
    );
    for d in &p.frequencies {
        f.push(vec![
            Cell::text(cpulist::format(&d.cpus)),
            opt(d.current_khz.map(|k| k as f64 / 1000.0), 0, "not reported"),
            opt(d.max_khz.map(|k| k as f64 / 1000.0), 0, "not reported"),
            d.governor
                .as_ref()
                .map_or(Cell::missing("no governor"), Cell::text),
        ]);
    }
    s.table(f);
    Some(s)
}

/// More distinct messages of one warning code than this are one row of the table.
const AGGREGATE_ABOVE: usize = 3;

/// Every warning the records carry, grouped.
pub fn warnings(set: &[Loaded]) -> Option<Section> {
    let mut t = table(
        "warnings-table",
        "Warnings carried by the records",
        &[
            ("bundle", None),
            ("code", None),
            ("record kinds", None),
            ("times", None),
            ("message", None),
            ("remedy", None),
        ],
    );
    for l in set {
        // One row per distinct warning: the warning, the kinds that carry it, how often
        // (tallied over every record as the bundle was read).
        let rows = l.record_warnings();
        let seen: Vec<(&numalab_schema::Warning, Vec<&str>, usize)> = rows
            .iter()
            .map(|r| {
                (
                    &r.warning,
                    r.kinds.iter().map(String::as_str).collect(),
                    r.count,
                )
            })
            .collect();
        // A code repeated with many different messages (one per pair of an older
        // core-to-core journal, one per run) is one row, where its first message was:
        // how many, three of them.
        let messages = |code: &str| seen.iter().filter(|(w, _, _)| w.code == code).count();
        // What the run folded at its end (`warnings.folded`): its lines name each
        // message's record.
        let recorded: Vec<numalab_schema::fold::Folded> = l
            .records_of::<numalab_records::warnings::FoldedWarnings>()
            .into_iter()
            .flat_map(|(_, f)| f.codes)
            .collect();
        let mut aggregated: Vec<&str> = Vec::new();
        for (w, kinds, n) in &seen {
            if messages(&w.code) <= AGGREGATE_ABOVE {
                t.push(vec![
                    Cell::text(&l.label),
                    Cell::text(&w.code),
                    Cell::text(kinds.join(", ")),
                    Cell::num(*n as f64, 0),
                    Cell::text(&w.message),
                    Cell::text(w.remedy.clone().unwrap_or_default()),
                ]);
                continue;
            }
            if aggregated.contains(&w.code.as_str()) {
                continue;
            }
            aggregated.push(&w.code);
            let same: Vec<&(&numalab_schema::Warning, Vec<&str>, usize)> =
                seen.iter().filter(|(x, _, _)| x.code == w.code).collect();
            let mut all_kinds: Vec<&str> = Vec::new();
            for k in same.iter().flat_map(|(_, k, _)| k) {
                if !all_kinds.contains(k) {
                    all_kinds.push(k);
                }
            }
            let times: usize = same.iter().map(|(_, _, n)| n).sum();
            // The worst three by their figure (the terminal's rule, `fold::severity`),
            // else the first three.
            let mut ranked: Vec<&str> = same.iter().map(|(x, _, _)| x.message.as_str()).collect();
            let rank = |m: &str| numalab_schema::fold::severity(m).unwrap_or(f64::NEG_INFINITY);
            ranked.sort_by(|a, b| rank(b).total_cmp(&rank(a)));
            let by_figure = ranked
                .iter()
                .any(|m| numalab_schema::fold::severity(m).is_some());
            let examples: Vec<&str> = ranked.into_iter().take(3).collect();
            // The run's own line when it folded these very messages (the last run of
            // the journal that folded this code), with the records named.
            let message = match recorded
                .iter()
                .rev()
                .find(|f| f.code == w.code && f.messages == same.len())
            {
                Some(f) => recorded_row(f),
                None => format!(
                    "{} different messages, {} {} (all of them in the raw data)",
                    same.len(),
                    if by_figure { "the worst:" } else { "e.g." },
                    examples.join("; ")
                ),
            };
            t.push(vec![
                Cell::text(&l.label),
                Cell::text(&w.code),
                Cell::text(all_kinds.join(", ")),
                Cell::num(times as f64, 0),
                Cell::text(message),
                Cell::text(w.remedy.clone().unwrap_or_default()),
            ]);
        }
    }
    if t.rows.is_empty() {
        return None;
    }
    let mut s = Section::new("warnings", "Warnings");
    s.table(t);
    Some(s)
}

/// The warnings table's row of a code the run folded (`warnings.folded`): how many
/// messages, the worst three of them (the first one's included) with their records.
fn recorded_row(f: &numalab_schema::fold::Folded) -> String {
    let rank = |m: &str| numalab_schema::fold::severity(m).unwrap_or(f64::NEG_INFINITY);
    let mut all: Vec<&numalab_schema::fold::Named> =
        std::iter::once(&f.first).chain(&f.named).collect();
    if f.ranked {
        all.sort_by(|a, b| rank(&b.message).total_cmp(&rank(&a.message)));
    }
    let named: Vec<String> = all
        .iter()
        .take(numalab_schema::fold::WORST)
        .map(|n| format!("{}: {}", n.key, n.message))
        .collect();
    format!(
        "{} different messages, {} {} (as the run said at its end; all of them in the raw data)",
        f.messages,
        if f.ranked { "the worst:" } else { "e.g." },
        named.join("; ")
    )
}

#[cfg(test)]
mod warning_rows {
    use numalab_schema::{Origin, Record, Warning};

    fn rec(key: &str, w: Vec<Warning>) -> Record {
        let mut r = Record::new(
            key,
            Origin::Measured,
            &crate::records::PowerCheck {
                sensors: Vec::new(),
                frequencies: Vec::new(),
            },
        );
        r.warnings = w;
        r
    }

    /// One warning per pair of an old 160-CPU core-to-core journal is one row with the
    /// count and three examples; warnings of few messages keep their own rows.
    #[test]
    fn a_code_with_many_messages_is_one_row() {
        let mut records: Vec<Record> = (0..40)
            .map(|i| {
                rec(
                    &format!("c2c/cas/{i}-0"),
                    vec![
                        Warning::new("noisy", format!("CPU {i}-0: p90 is over twice"))
                            .with_remedy("isolate the CPUs"),
                    ],
                )
            })
            .collect();
        records.push(rec("a", vec![Warning::new("clock", "the clock is coarse")]));
        records.push(rec("b", vec![Warning::new("clock", "the clock is coarse")]));
        let l = crate::load::test_loaded("vm", Origin::Measured, records);
        let s = super::warnings(&[l]).expect("a section");
        let t = s
            .blocks
            .iter()
            .find_map(|b| match b {
                crate::doc::Block::Table { table } => Some(table),
                _ => None,
            })
            .expect("a table");
        assert_eq!(t.rows.len(), 2, "{:?}", t.rows);
        let noisy = t.rows.iter().find(|r| r[1].display() == "noisy").unwrap();
        assert_eq!(noisy[3].display(), "40");
        let msg = noisy[4].display();
        assert!(
            msg.starts_with("40 different messages, e.g. CPU 0-0"),
            "{msg}"
        );
        assert_eq!(msg.matches("CPU ").count(), 3, "{msg}");
        assert_eq!(noisy[5].display(), "isolate the CPUs");
        let clock = t.rows.iter().find(|r| r[1].display() == "clock").unwrap();
        assert_eq!(clock[3].display(), "2");
    }

    /// Per-cell placement warnings with their shares are one row naming the three
    /// lowest shares, worst first.
    #[test]
    fn a_folded_row_names_the_worst_three_by_their_figure() {
        let records: Vec<Record> = [80.0, 12.5, 90.0, 45.0, 30.0]
            .iter()
            .enumerate()
            .map(|(i, share)| {
                rec(
                    &format!("mem/bandwidth/matrix/cell{i}"),
                    vec![Warning::new(
                        "placement_mismatch",
                        format!("only {share:.1}% of the pages are on node(s) 1 as asked"),
                    )],
                )
            })
            .collect();
        let l = crate::load::test_loaded("vm", Origin::Measured, records);
        let s = super::warnings(&[l]).expect("a section");
        let t = s
            .blocks
            .iter()
            .find_map(|b| match b {
                crate::doc::Block::Table { table } => Some(table),
                _ => None,
            })
            .expect("a table");
        assert_eq!(t.rows.len(), 1, "{:?}", t.rows);
        let msg = t.rows[0][4].display();
        assert!(
            msg.starts_with("5 different messages, the worst: only 12.5% of the pages"),
            "{msg}"
        );
        let at = |x: &str| msg.find(x).unwrap_or_else(|| panic!("{x} in {msg}"));
        assert!(at("only 12.5%") < at("only 30.0%") && at("only 30.0%") < at("only 45.0%"));
        assert!(!msg.contains("80.0%") && !msg.contains("90.0%"), "{msg}");
    }

    /// A journal that carries the run's folded line (`warnings.folded`) gets that line
    /// in its row, each message named with its record, the first one's included; a
    /// folded record that does not cover the messages the records hold is not used.
    #[test]
    fn a_recorded_fold_names_the_records_of_the_worst_three() {
        let mut fold = numalab_schema::fold::Fold::default();
        let mut records: Vec<Record> = [40.0, 80.0, 12.5, 90.0, 45.0, 30.0]
            .iter()
            .enumerate()
            .map(|(i, share)| {
                let w = Warning::new(
                    "placement_mismatch",
                    format!("only {share:.1}% of the pages are on node(s) 1 as asked"),
                );
                let key = format!("mem/bandwidth/matrix/cell{i}");
                fold.note(&key, &w);
                rec(&key, vec![w])
            })
            .collect();
        let row = |records: Vec<Record>| {
            let l = crate::load::test_loaded("vm", Origin::Measured, records);
            let s = super::warnings(&[l]).expect("a section");
            let t = s
                .blocks
                .iter()
                .find_map(|b| match b {
                    crate::doc::Block::Table { table } => Some(table.clone()),
                    _ => None,
                })
                .expect("a table");
            assert_eq!(t.rows.len(), 1, "{:?}", t.rows);
            t.rows[0][4].display()
        };
        let folded =
            numalab_records::warnings::FoldedWarnings::record(&fold, Origin::Measured, |_| false)
                .unwrap();
        // Without the record's key the table says it from the records alone.
        assert!(!row(records.clone()).contains("cell2:"));
        records.push(folded.clone());
        let msg = row(records.clone());
        assert!(
            msg.starts_with(
                "6 different messages, the worst: mem/bandwidth/matrix/cell2: only 12.5%"
            ),
            "{msg}"
        );
        let at = |x: &str| msg.find(x).unwrap_or_else(|| panic!("{x} in {msg}"));
        assert!(at("cell2: only 12.5%") < at("cell5: only 30.0%"));
        assert!(at("cell5: only 30.0%") < at("cell0: only 40.0%"));
        assert!(msg.contains("as the run said at its end"), "{msg}");
        // One message more in the records than the run folded: computed again.
        records.push(rec(
            "mem/bandwidth/matrix/cell9",
            vec![Warning::new(
                "placement_mismatch",
                "only 5.0% of the pages are on node(s) 1 as asked",
            )],
        ));
        let msg = row(records);
        assert!(
            msg.starts_with("7 different messages, the worst: only 5.0%"),
            "{msg}"
        );
    }
}
