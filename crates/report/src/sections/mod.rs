//! From bundles to a [`Document`]: one builder per record kind, each turning typed
//! records into tables, charts and sentences. Kinds this numalab does not know, and
//! records it knows but cannot decode (a newer or damaged writer), are listed rather
//! than dropped, and every record is in the raw-data appendix.

mod appendix;
pub mod c2c;
pub mod harness;
pub mod home;
pub mod home_hash;
pub mod layout;
pub mod machine;
pub mod mem;
pub mod memaccess;
pub mod model;
pub mod pmu;
pub mod schedule;
pub mod uncore;
pub mod workload;

use crate::doc::{Document, Section};

use crate::load::Loaded;
use crate::table::{Cell, Column, Table};
use numalab_schema::interrupt::Interrupted;
use numalab_schema::Record;
use numalab_stats::Interval;

pub use crate::load::decodes;

/// Records of a bundle that cannot be shown ([`Loaded::unreadable`]).
pub fn unreadable(l: &Loaded) -> Vec<crate::load::Unreadable> {
    l.unreadable()
}

/// A number cell, or "n/a" with the reason.
pub(crate) fn opt(v: Option<f64>, digits: usize, why: &str) -> Cell {
    match v {
        Some(v) => Cell::num(v, digits),
        None => Cell::missing(why),
    }
}

/// An interval cell (scaled by `k`), or "n/a".
pub(crate) fn iv(v: Option<&Interval>, k: f64, digits: usize, why: &str) -> Cell {
    match v {
        Some(i) => Cell::Interval {
            estimate: i.estimate * k,
            low: i.low * k,
            high: i.high * k,
            digits,
        },
        None => Cell::missing(why),
    }
}

/// A table with columns given as (name, unit).
pub(crate) fn table(id: &str, title: &str, cols: &[(&str, Option<&str>)]) -> Table {
    Table::new(
        id,
        title,
        cols.iter().map(|(n, u)| Column::new(n, *u)).collect(),
    )
}

/// The heading suffix naming the bundle when a report holds several.
pub(crate) fn of(set: &[Loaded], l: &Loaded) -> String {
    if set.len() > 1 {
        format!(" ({})", l.label)
    } else {
        String::new()
    }
}

/// The report of a set of bundles.
pub fn document(set: &[Loaded]) -> Document {
    match document_until(set, &|| false) {
        Ok(d) => d,
        Err(_) => unreachable!("a stop that never fires cannot interrupt"),
    }
}

/// [`document`] that stops at Ctrl-C or SIGTERM: the process-wide stop flag
/// ([`numalab_schema::interrupt`]) is polled between the sections of each bundle.
pub fn try_document(set: &[Loaded]) -> Result<Document, Interrupted> {
    document_until(set, &numalab_schema::interrupt::requested)
}

/// [`document`], giving up once `stop` says so.
fn document_until(set: &[Loaded], stop: &dyn Fn() -> bool) -> Result<Document, Interrupted> {
    let mut labels: Vec<&str> = Vec::new();
    for l in set {
        if !labels.contains(&l.label.as_str()) {
            labels.push(&l.label);
        }
    }
    let title = format!("numalab report: {}", labels.join(", "));
    let mut subtitle: Vec<String> = set
        .iter()
        .map(|l| {
            let e = &l.bundle.envelope;
            format!(
                "{}: {} record(s), {} by numalab {} ({}, {}) on {}: {}",
                l.label,
                l.record_count(),
                match e.origin {
                    numalab_schema::Origin::Measured => "measured",
                    numalab_schema::Origin::Modeled => "modeled",
                    numalab_schema::Origin::Imported => "imported",
                },
                e.tool.version,
                e.tool.target,
                e.tool.profile,
                e.created_utc,
                e.command.join(" ")
            )
        })
        .collect();
    // The machine's name and the options of every run, at the top.
    for l in set {
        let h = &l.bundle.envelope.host;
        let mut what: Vec<String> = Vec::new();
        if let Some(m) = &h.cpu_model {
            what.push(m.clone());
        }
        if let Some(t) = &h.topology {
            what.push(format!(
                "{} CPU(s), {} package(s), {} NUMA node(s)",
                t.pu_ids().len(),
                t.packages.len().max(1),
                t.numa_nodes.len().max(1)
            ));
        }
        match (&l.bundle.envelope.origin, &h.hypervisor) {
            (numalab_schema::Origin::Modeled, _) => what.push("a modeled machine".into()),
            (numalab_schema::Origin::Imported, _) => {
                what.push("imported figures, not measured by numalab".into())
            }
            (_, Some(v)) => what.push(format!("virtual machine ({v})")),
            (_, None) => what.push("no hypervisor detected".into()),
        }
        let runs = l.records_of::<crate::records::RunRecord>();
        if !runs.is_empty() {
            let each: Vec<String> = runs
                .iter()
                .map(|(_, r)| {
                    let mut o = vec![if r.quick { "--quick" } else { "full" }.to_string()];
                    if !r.skip.is_empty() {
                        o.push(format!("left out: {}", r.skip.join(", ")));
                    }
                    format!("run {} at {} ({})", r.run, r.started_utc, o.join("; "))
                })
                .collect();
            what.push(format!("evaluate {}", each.join(", ")));
        }
        subtitle.push(format!("{}: {}", l.label, what.join("; ")));
    }
    let mut problems = Vec::new();
    for l in set {
        for w in &l.warnings {
            problems.push(format!("{}: {w}", l.label));
        }
        for u in unreadable(l) {
            let (kind, n) = (&u.kind, u.count);
            problems.push(if u.damaged {
                let first = match &u.first {
                    Some((key, why)) => format!(" (the first, {key}: {why})"),
                    None => String::new(),
                };
                format!("{}: {n} record(s) of kind {kind} could not be decoded{first} (written by a newer numalab, or damaged); they are in the raw-data appendix", l.label)
            } else {
                format!("{}: {n} record(s) of kind {kind}, which this numalab does not know (a newer one wrote them?); they are in the raw-data appendix", l.label)
            });
        }
        for (kind, n) in l.over_bound() {
            problems.push(crate::load::over_bound_note(&l.label, &kind, n));
        }
    }
    let mut sections = vec![machine::summary(set)];
    for (b, l) in set.iter().enumerate() {
        let o = of(set, l);
        // One command's sections at a time, with a check for Ctrl-C between them.
        let kinds: [&dyn Fn() -> Vec<Section>; 14] = [
            &|| machine::topology(b, l, &o).into_iter().collect(),
            &|| machine::doctor(b, l, &o).into_iter().collect(),
            &|| mem::sections(b, l, &o),
            &|| c2c::sections(b, l, &o),
            &|| workload::sections(b, l, &o),
            &|| harness::sections(b, l, &o),
            &|| pmu::sections(b, l, &o),
            &|| memaccess::sections(b, l, &o),
            &|| machine::power(b, l, &o).into_iter().collect(),
            &|| model::sections(b, l, &o),
            &|| layout::sections(b, l, &o),
            &|| schedule::sections(b, l, &o),
            &|| home::sections(b, l, &o),
            &|| uncore::sections(b, l, &o),
        ];
        for kind in kinds {
            if stop() {
                return Err(REPORT_INTERRUPTED);
            }
            sections.extend(kind());
        }
    }
    if stop() {
        return Err(REPORT_INTERRUPTED);
    }
    sections.extend(machine::warnings(set));
    sections.push(appendix::appendix(set));
    if stop() {
        return Err(REPORT_INTERRUPTED);
    }
    let findings = crate::findings::findings_until(set, stop).ok_or(REPORT_INTERRUPTED)?;
    if stop() {
        return Err(REPORT_INTERRUPTED);
    }
    Ok(Document {
        title,
        subtitle,
        problems,
        findings,
        sections,
    })
}

pub use crate::doc::REPORT_INTERRUPTED;

/// Which sections of the report a command's records get (`sections::mem::sections`,
/// ...): the bundle's index, the bundle, an anchor prefix.
pub type SectionsOf = fn(usize, &Loaded, &str) -> Vec<crate::doc::Section>;

/// A command's records as terminal text: the report's `sections` of them, the same
/// tables (one definition per record kind) that the HTML, Markdown and CSV reports
/// use, without the charts; the run is named by its host name ("this run" without one).
pub fn terminal_text(
    envelope: &numalab_schema::Envelope,
    records: Vec<Record>,
    sections: SectionsOf,
) -> String {
    let loaded = Loaded::from_bundle(
        envelope.host.hostname.as_deref().unwrap_or("this run"),
        numalab_schema::Bundle {
            schema_version: numalab_schema::record::SCHEMA_VERSION,
            envelope: envelope.clone(),
            records,
        },
    );
    sections(0, &loaded, "")
        .iter()
        .map(|s| s.to_text(crate::table::Format::Terminal, false))
        .collect()
}

#[cfg(test)]
mod interrupt {
    use super::*;
    use crate::table::Format;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn fixture() -> Vec<Loaded> {
        ["vm-evaluate", "c2c-dual-xeon-gold-6242"]
            .iter()
            .map(|b| {
                let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join(format!("../../tests/fixtures/bundles/{b}/results.jsonl"));
                crate::load::load(&p).unwrap()
            })
            .collect()
    }

    /// A stop at any check of the report's building ends it as interrupted (exit 130),
    /// nothing of the report returned; never stopped, it is the whole report.
    #[test]
    fn a_stop_between_sections_drops_the_whole_report() {
        let set = fixture();
        let asked = AtomicUsize::new(0);
        let whole = document_until(&set, &|| {
            asked.fetch_add(1, Ordering::SeqCst);
            false
        })
        .unwrap();
        assert_eq!(whole.sections.len(), document(&set).sections.len());
        let asked = asked.into_inner();
        // One check per command's sections of each bundle, and at the end.
        assert!(asked > 2 * 14, "asked {asked} times");
        for after in [1, 2, 15, asked] {
            let n = AtomicUsize::new(0);
            let e = document_until(&set, &|| n.fetch_add(1, Ordering::SeqCst) + 1 >= after)
                .unwrap_err();
            assert_eq!(e, REPORT_INTERRUPTED);
            assert_eq!(n.into_inner(), after, "no check after the stop");
        }
        assert_eq!(
            REPORT_INTERRUPTED.to_string(),
            "interrupted (Ctrl-C, SIGTERM) while rendering the report; nothing was written"
        );
        // The findings ask too, between their rules (one over a 2,000-CPU matrix takes a
        // while): a stop at the first rule gives none, at the eleventh (the last of the
        // first bundle's) those of no bundle either.
        let n = AtomicUsize::new(0);
        assert_eq!(
            crate::findings::findings_until(&set, &|| n.fetch_add(1, Ordering::SeqCst) >= 10),
            None
        );
        assert_eq!(n.into_inner(), 11);
        assert_eq!(
            crate::findings::findings_until(&set, &|| false),
            Some(crate::findings::findings(&set))
        );
        // Rendering too: a stop between sections gives nothing, for every format.
        for format in [Format::Html, Format::Markdown, Format::Terminal] {
            assert!(!whole.render(format).is_empty());
            let n = AtomicUsize::new(0);
            assert_eq!(
                whole.render_until(format, &|| n.fetch_add(1, Ordering::SeqCst) >= 3),
                None,
                "{format:?}"
            );
            assert_eq!(
                whole.render_until(format, &|| false),
                Some(whole.render(format))
            );
        }
    }
}

#[cfg(test)]
mod terminal {
    use super::*;

    fn titled(_: usize, l: &Loaded, _: &str) -> Vec<crate::doc::Section> {
        vec![
            crate::doc::Section::new("a", &format!("{} with {}", l.label, l.bundle.records.len())),
            crate::doc::Section::new("b", "second"),
        ]
    }

    #[test]
    fn the_terminal_gets_every_section_of_the_records_in_turn() {
        let envelope = numalab_schema::Envelope::of_this_process(
            "0",
            serde_json::Value::Null,
            numalab_schema::Origin::Measured,
            numalab_schema::record::Host::unknown("h"),
        );
        let text = terminal_text(&envelope, vec![], titled);
        let first = text.find("this run with 0").expect(&text);
        let second = text.find("second").expect(&text);
        assert!(first < second, "{text}");
    }
}

#[cfg(test)]
mod kinds {
    /// Every record kind numalab defines (each `const KIND` in numalab-records, where all
    /// of numalab's records live) is one the report knows: the first report of an
    /// evaluate run once called the `memconfig.smbios` record that evaluate had just
    /// written "a kind this numalab does not know". A kind added without teaching the
    /// report fails here.
    #[test]
    fn the_report_knows_every_record_kind_numalab_writes() {
        fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    files(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../records/src");
        let mut paths = Vec::new();
        files(&src, &mut paths);
        let mut kinds = Vec::new();
        for p in paths {
            let text = std::fs::read_to_string(&p).unwrap();
            for line in text.lines() {
                if let Some(rest) = line.trim().strip_prefix("const KIND: &'static str = \"") {
                    kinds.push(rest.trim_end_matches("\";").to_string());
                }
            }
        }
        assert!(kinds.len() >= 30, "the scan found only {kinds:?}");
        let unknown: Vec<&String> = kinds
            .iter()
            .filter(|k| {
                let r = numalab_schema::Record {
                    key: "k".into(),
                    kind: (*k).clone(),
                    origin: numalab_schema::Origin::Measured,
                    time_utc: String::new(),
                    data: serde_json::Value::Null,
                    warnings: Vec::new(),
                };
                super::decodes(&r).is_none()
            })
            .collect();
        assert!(unknown.is_empty(), "the report does not know {unknown:?}");
    }
}
