//! The memory system as the uncore counts it (`uncore.counts`, and the `uncore` field
//! other records embed): memory traffic per controller and per socket, LLC/SLC hit
//! ratio, directory and snoop traffic, socket-link bytes, each box's running
//! fraction, what could not be counted and why. [`render`] adds the tables to any
//! section, so the memory and profile sections can show an embedded report.

use super::{opt, table};
use crate::anchors;
use crate::doc::Section;
use crate::load::Loaded;
use crate::table::Cell;
use numalab_records::uncore::{Derived, UncoreCounts, UncoreReport};
use std::collections::BTreeMap;

fn cell(d: &Derived, k: f64, digits: usize) -> Cell {
    match (d.value, &d.reason) {
        (Some(v), _) => Cell::num(v * k, digits),
        (None, Some(r)) => Cell::missing(r.clone()),
        (None, None) => Cell::missing("not derived"),
    }
}

fn socket_cell(s: Option<u32>) -> Cell {
    match s {
        Some(s) => Cell::num(f64::from(s), 0),
        None => Cell::missing("CPU not in the CPU-to-package map"),
    }
}

fn fraction(f: Option<f64>) -> Cell {
    opt(f, 3, "not read")
}

/// One paragraph saying what was found and counted.
pub fn summary(r: &UncoreReport) -> String {
    if r.devices.is_empty() {
        return r
            .notes
            .iter()
            .find(|n| n.starts_with("no uncore PMU found"))
            .cloned()
            .unwrap_or_else(|| "No uncore PMU found.".into());
    }
    let mut by_class: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &r.devices {
        *by_class.entry(d.class.as_str()).or_default() += 1;
    }
    let classes: Vec<String> = by_class.iter().map(|(c, n)| format!("{n} {c}")).collect();
    let mut sockets: Vec<u32> = r.devices.iter().flat_map(|d| d.sockets.clone()).collect();
    sockets.sort_unstable();
    sockets.dedup();
    let counted = r
        .boxes
        .iter()
        .filter(|b| b.events.iter().any(|e| e.state == "counted"))
        .count();
    format!(
        "Uncore PMUs: {} device(s) ({}) on {} socket(s); {} of {} counter group(s) counted{}.",
        r.devices.len(),
        classes.join(", "),
        sockets.len().max(1),
        counted,
        r.boxes.len(),
        r.seconds
            .map(|s| format!(" over {s:.3} s"))
            .unwrap_or_default()
    )
}

/// Adds the uncore tables of `r` to `s`; `id` prefixes the tables' anchors.
pub fn render(s: &mut Section, id: &str, r: &UncoreReport) {
    s.para(summary(r));
    if let Some(p) = &r.permission {
        s.para(format!(
            "Counting was refused: {} Remedy: {}.",
            p.message, p.remedy
        ));
    }
    let formula_notes: Vec<String> = r
        .formulas
        .iter()
        .map(|f| format!("{}: {} ({})", f.figure, f.formula, f.source))
        .collect();
    let mut t = table(
        &format!("{id}-controllers"),
        "Memory controllers",
        &[
            ("controller", None),
            ("socket", None),
            ("read", Some("GB/s")),
            ("write", Some("GB/s")),
            ("total", Some("GB/s")),
            ("read", Some("GB")),
            ("write", Some("GB")),
            ("total", Some("GB")),
            ("running fraction", None),
        ],
    );
    for c in &r.controllers {
        t.push(vec![
            Cell::text(&c.controller),
            socket_cell(c.socket),
            cell(&c.read_gbps, 1.0, 2),
            cell(&c.write_gbps, 1.0, 2),
            cell(&c.total_gbps, 1.0, 2),
            cell(&c.read_bytes, 1e-9, 3),
            cell(&c.write_bytes, 1e-9, 3),
            cell(&c.total_bytes, 1e-9, 3),
            fraction(c.running_fraction),
        ]);
    }
    t.notes.extend(
        formula_notes
            .iter()
            .filter(|n| n.contains("bytes") || n.contains("gbps"))
            .cloned(),
    );
    s.table(t);
    let mut t = table(
        &format!("{id}-sockets"),
        "Per socket",
        &[
            ("socket", None),
            ("controllers", None),
            ("read", Some("GB/s")),
            ("write", Some("GB/s")),
            ("total", Some("GB/s")),
            ("CAS reads of all CAS", Some("%")),
            ("CAS writes of all CAS", Some("%")),
            ("LLC hit ratio", Some("%")),
            ("LLC lookups", None),
            ("LLC read misses to local DRAM", Some("%")),
            ("LLC read misses to remote DRAM", Some("%")),
            ("directory lookups sending snoops", Some("%")),
            ("snoops sent", None),
            ("link bytes sent", Some("GB")),
        ],
    );
    for so in &r.sockets {
        t.push(vec![
            socket_cell(so.socket),
            Cell::num(so.controllers as f64, 0),
            cell(&so.read_gbps, 1.0, 2),
            cell(&so.write_gbps, 1.0, 2),
            cell(&so.total_gbps, 1.0, 2),
            cell(&so.read_percent_of_all_cas, 1.0, 2),
            cell(&so.write_percent_of_all_cas, 1.0, 2),
            cell(&so.llc_hit_ratio, 100.0, 1),
            cell(&so.llc_lookups, 1.0, 0),
            cell(&so.numa_reads_addressed_to_local_dram, 1.0, 1),
            cell(&so.numa_reads_addressed_to_remote_dram, 1.0, 1),
            cell(&so.directory_snoop_share, 100.0, 1),
            cell(&so.snoops_sent, 1.0, 0),
            cell(&so.link_tx_bytes, 1e-9, 3),
        ]);
    }
    t.notes.extend(
        formula_notes
            .iter()
            .filter(|n| {
                n.starts_with("llc")
                    || n.starts_with("read_percent_of_all_cas")
                    || n.starts_with("numa")
                    || n.starts_with("directory")
                    || n.starts_with("snoops")
            })
            .cloned(),
    );
    s.table(t);
    let mut t = table(
        &format!("{id}-links"),
        "Socket links",
        &[
            ("link", None),
            ("socket", None),
            ("sent", Some("GB/s")),
            ("sent", Some("GB")),
            ("running fraction", None),
        ],
    );
    for l in &r.links {
        t.push(vec![
            Cell::text(&l.link),
            socket_cell(l.socket),
            cell(&l.tx_gbps, 1.0, 2),
            cell(&l.tx_bytes, 1e-9, 3),
            fraction(l.running_fraction),
        ]);
    }
    t.notes.extend(
        formula_notes
            .iter()
            .filter(|n| n.starts_with("tx_bytes"))
            .cloned(),
    );
    s.table(t);
    // Every event that could not be opened, grouped by device, event and error.
    let mut grouped: BTreeMap<(String, String, String), Vec<u32>> = BTreeMap::new();
    for n in &r.not_opened {
        grouped
            .entry((n.device.clone(), n.event.clone(), n.error.clone()))
            .or_default()
            .push(n.cpu);
    }
    s.list(
        grouped
            .into_iter()
            .map(|((d, e, err), cpus)| {
                format!(
                    "Not opened: {d}/{e} on CPU {}: {err}",
                    numalab_schema::cpulist::format(&cpus)
                )
            })
            .collect(),
    );
    let multiplexed: Vec<String> = r
        .boxes
        .iter()
        .filter(|b| b.running_fraction.is_some_and(|f| f < 1.0))
        .map(|b| {
            format!(
                "{} CPU {} group {}: on counters {:.0}% of the time (counts scaled by time enabled / time running)",
                b.device,
                b.cpu,
                b.group,
                100.0 * b.running_fraction.unwrap_or(0.0)
            )
        })
        .collect();
    let mut notes: Vec<String> = r
        .notes
        .iter()
        .filter(|n| !(r.devices.is_empty() && n.starts_with("no uncore PMU found")))
        .cloned()
        .collect();
    if multiplexed.len() > 8 {
        notes.push(format!(
            "{} counter group(s) were multiplexed (on counters less than all the time); the raw counts below say which",
            multiplexed.len()
        ));
    } else {
        notes.extend(multiplexed);
    }
    s.list(notes);
    if !r.boxes.is_empty() {
        let mut text = String::new();
        for b in &r.boxes {
            text.push_str(&format!(
                "{} cpu {} group {} enabled {} ns running {} ns\n",
                b.device,
                b.cpu,
                b.group,
                b.time_enabled_ns.map_or("?".into(), |v| v.to_string()),
                b.time_running_ns.map_or("?".into(), |v| v.to_string()),
            ));
            for e in &b.events {
                text.push_str(&format!(
                    "  {:<40} {:<28} raw {:>16} {}{}\n",
                    e.name,
                    e.encoding,
                    e.raw.map_or("-".into(), |v| v.to_string()),
                    e.state,
                    e.reason
                        .as_ref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                ));
            }
        }
        s.details("Uncore counts per box and group", text);
    }
}

/// The sections of a bundle's `uncore.counts` records.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let recs = l.records_of::<UncoreCounts>();
    if recs.is_empty() {
        return Vec::new();
    }
    let mut s = Section::new(
        &anchors::id(b, "uncore"),
        &format!("Memory system counters (uncore){of}"),
    );
    for (rec, u) in &recs {
        if recs.len() > 1 || u.context.is_some() {
            s.para(format!(
                "{}{}",
                rec.key,
                u.context
                    .as_ref()
                    .map(|c| format!(": {c}"))
                    .unwrap_or_default()
            ));
        }
        render(
            &mut s,
            &anchors::id(b, &format!("uncore-{}", rec.key)),
            &u.report,
        );
    }
    vec![s]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Format;
    use numalab_records::uncore::{
        BoxCounts, ControllerFigures, EventCount, Formula, LinkFigures, NotOpened,
        PermissionProblem, SocketFigures, UncoreDevice,
    };
    use numalab_schema::{Origin, Record};

    fn loaded(records: Vec<Record>) -> Loaded {
        crate::load::test_loaded("mem", Origin::Measured, records)
    }

    fn report() -> UncoreReport {
        let why = "hnf_mc_reqs counts reads and writes together";
        UncoreReport {
            sysfs_root: "/".into(),
            devices: vec![UncoreDevice {
                name: "uncore_imc_0".into(),
                class: "intel_imc".into(),
                pmu_type: 40,
                cpus: vec![0, 56],
                sockets: vec![0, 1],
                named_events: 3,
                counters: Some(4),
                counters_source: "table".into(),
            }],
            boxes: vec![BoxCounts {
                device: "uncore_imc_0".into(),
                class: "intel_imc".into(),
                cpu: 0,
                socket: Some(0),
                group: 0,
                time_enabled_ns: Some(2_000_000_000),
                time_running_ns: Some(1_000_000_000),
                running_fraction: Some(0.5),
                events: vec![EventCount {
                    name: "cas_count_read".into(),
                    role: "cas_read".into(),
                    encoding: "type=40,config=0xcf05".into(),
                    raw: Some(93_750_000),
                    value: Some(187_500_000.0),
                    state: "counted".into(),
                    reason: None,
                }],
            }],
            controllers: vec![ControllerFigures {
                controller: "uncore_imc_0".into(),
                device: "uncore_imc_0".into(),
                class: "intel_imc".into(),
                cpu: 0,
                socket: Some(0),
                seconds: Some(2.0),
                running_fraction: Some(0.5),
                read_bytes: Derived::of(12e9),
                write_bytes: Derived::absent(why),
                total_bytes: Derived::absent(why),
                read_gbps: Derived::of(6.0),
                write_gbps: Derived::absent(why),
                total_gbps: Derived::absent(why),
            }],
            sockets: vec![SocketFigures {
                socket: Some(0),
                controllers: 1,
                read_bytes: Derived::of(12e9),
                write_bytes: Derived::absent(why),
                total_bytes: Derived::absent(why),
                read_gbps: Derived::of(6.0),
                write_gbps: Derived::absent(why),
                total_gbps: Derived::absent(why),
                llc_lookups: Derived::of(1.6e9),
                llc_misses: Derived::of(4e8),
                llc_hit_ratio: Derived::of(0.75),
                directory_lookups: Derived::absent("none"),
                directory_snoop_share: Derived::absent("none"),
                snoops_sent: Derived::absent("CMN only"),
                link_tx_bytes: Derived::of(64e9),
                numa_reads_addressed_to_local_dram: Derived::of(62.5),
                numa_reads_addressed_to_remote_dram: Derived::absent(
                    "IA_MISS_DRD_REMOTE not opened",
                ),
                all_cas_bytes: Derived::absent("UNC_M_CAS_COUNT.ALL not opened"),
                read_percent_of_all_cas: Derived::absent("UNC_M_CAS_COUNT.ALL not opened"),
                write_percent_of_all_cas: Derived::absent("UNC_M_CAS_COUNT.ALL not opened"),
            }],
            links: vec![LinkFigures {
                link: "uncore_upi_0".into(),
                device: "uncore_upi_0".into(),
                class: "intel_upi".into(),
                cpu: 0,
                socket: Some(0),
                seconds: Some(2.0),
                running_fraction: Some(1.0),
                tx_bytes: Derived::of(64e9),
                tx_gbps: Derived::of(32.0),
            }],
            formulas: vec![Formula {
                figure: "tx_bytes (intel_upi)".into(),
                formula: "ALL_DATA * 64 / 9".into(),
                source: "Intel".into(),
            }],
            not_opened: vec![
                NotOpened {
                    device: "uncore_upi_1".into(),
                    cpu: 0,
                    event: "UNC_UPI_TxL_FLITS.ALL_DATA".into(),
                    kind: "denied".into(),
                    error: "refused".into(),
                },
                NotOpened {
                    device: "uncore_upi_1".into(),
                    cpu: 56,
                    event: "UNC_UPI_TxL_FLITS.ALL_DATA".into(),
                    kind: "denied".into(),
                    error: "refused".into(),
                },
            ],
            permission: Some(PermissionProblem {
                paranoid: Some(2),
                message: "perf_event_paranoid is 2".into(),
                remedy: "sysctl kernel.perf_event_paranoid=0".into(),
            }),
            seconds: Some(2.0),
            ..Default::default()
        }
    }

    #[test]
    fn a_report_becomes_tables_with_reasons_for_absent_figures() {
        let rec = Record::new(
            "uncore/1",
            Origin::Measured,
            &UncoreCounts {
                context: Some("numalab mem bandwidth".into()),
                report: report(),
            },
        );
        let l = loaded(vec![rec]);
        assert_eq!(crate::sections::decodes(&l.bundle.records[0]), Some(true));
        let secs = sections(0, &l, "");
        assert_eq!(secs.len(), 1);
        let s = &secs[0];
        let tables: Vec<_> = s.tables().collect();
        assert_eq!(tables.len(), 3);
        assert_eq!(tables[0].id, "uncore-uncore-1-controllers");
        let row = &tables[0].rows[0];
        assert_eq!(row[2], Cell::num(6.0, 2));
        assert!(
            matches!(&row[3], Cell::Missing { missing } if missing.contains("reads and writes together"))
        );
        assert!(
            matches!(&tables[1].rows[0][5], Cell::Missing { missing } if missing.contains("UNC_M_CAS_COUNT.ALL"))
        );
        assert_eq!(tables[1].rows[0][7], Cell::num(75.0, 1));
        assert_eq!(tables[1].rows[0][9], Cell::num(62.5, 1));
        assert!(
            matches!(&tables[1].rows[0][10], Cell::Missing { missing } if missing.contains("DRD_REMOTE"))
        );
        assert!(tables[2].notes.iter().any(|n| n.contains("64 / 9")));
        let text = s.to_text(Format::Markdown, false);
        assert!(text.contains("Not opened: uncore_upi_1/UNC_UPI_TxL_FLITS.ALL_DATA on CPU 0,56"));
        assert!(text.contains("sysctl kernel.perf_event_paranoid=0"));
        assert!(text.contains("on counters 50% of the time"));
    }

    #[test]
    fn no_uncore_pmu_is_said_plainly() {
        let r = UncoreReport {
            sysfs_root: "/".into(),
            other_pmus: vec!["software".into(), "msr".into()],
            notes: vec!["no uncore PMU found under /sys/bus/event_source/devices: the kernel lists software, msr".into()],
            ..Default::default()
        };
        let mut s = Section::new("x", "x");
        render(&mut s, "x", &r);
        assert_eq!(s.tables().count(), 0);
        let text = s.to_text(Format::Terminal, false);
        assert!(text.contains("no uncore PMU found") && text.contains("software, msr"));
        assert_eq!(text.matches("no uncore PMU found").count(), 1);
    }
}
