//! Slice hashes in the published form: a hash imported or recovered from per-page maps
//! (`home.hash`), two maps compared (`home.compare`), and the strides and page
//! combinations a hash crowds onto few slices (`home.conflicts`).

use super::{opt, table};
use crate::anchors;
use crate::doc::Section;
use crate::load::Loaded;
use crate::table::Cell;
use numalab_records::home::slices::{
    HomeCompareRecord, HomeConflictsRecord, HomeHashRecord, SliceHash,
};

/// Adds the sections' content for the bundle's slice-hash records to `s`; false when
/// there is none.
pub fn add(s: &mut Section, b: usize, l: &Loaded) -> bool {
    let hashes = l.records_of::<HomeHashRecord>();
    let compares = l.records_of::<HomeCompareRecord>();
    let conflicts = l.records_of::<HomeConflictsRecord>();
    for (i, (_, r)) in hashes.iter().enumerate() {
        hash(s, b, i, r);
    }
    for (_, r) in &compares {
        compare(s, r);
    }
    for (i, (_, r)) in conflicts.iter().enumerate() {
        conflict(s, b, i, r);
    }
    !(hashes.is_empty() && compares.is_empty() && conflicts.is_empty())
}

/// Whether the bundle holds any slice-hash record.
pub fn any(l: &Loaded) -> bool {
    !(l.records_of::<HomeHashRecord>().is_empty()
        && l.records_of::<HomeCompareRecord>().is_empty()
        && l.records_of::<HomeConflictsRecord>().is_empty())
}

fn pct(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |v| format!("{:.3}%", 100.0 * v))
}

/// The published form of a hash, as a paragraph and its mask table.
pub fn slice_hash(s: &mut Section, id: &str, h: &SliceHash) {
    let seen = h
        .base_sequence
        .iter()
        .filter(|&&x| x != numalab_records::home::LINE_UNKNOWN)
        .count();
    s.para(format!(
        "In the published form: a base sequence of {} lines ({} of them seen) over {} slices, permutation select masks over address bits {}-{}{}; {}.",
        h.len(),
        seen,
        h.slices,
        h.low_bit,
        h.high_bit,
        if !h.fully_covered() {
            format!(", for addresses that match {:#x} in the bits the data never varied", h.reference)
        } else {
            String::new()
        },
        if h.determined { "every covered bit determined" } else { "some bits known only in combination" }
    ));
    let mut t = table(id, "Permutation select masks: bit k of the permutation is the parity of the address under mask k", &[("bit", None), ("mask", None)]);
    for (k, m) in h.masks.iter().enumerate() {
        t.push(vec![Cell::num(k as f64, 0), Cell::text(format!("{m:#x}"))]);
    }
    s.table(t);
}

fn hash(s: &mut Section, b: usize, i: usize, r: &HomeHashRecord) {
    if r.status == "tables" {
        s.para(format!(
            "Slice hash from {} ({}): read as published.",
            r.source, r.input
        ));
    } else {
        s.para(format!(
            "Slice hash from {} ({}): {}. {} page(s), {} lines with a slice number; {} of {} blocks fitted. The hash gives {} of the fitted lines, {} of {} held-back lines and {} of the lines of {} held-back page(s).",
            r.source,
            r.input,
            if r.status == "recovered" { "recovered" } else { "not found" },
            r.pages,
            r.lines,
            r.blocks_fitted,
            r.blocks,
            pct(r.agreement_fitted),
            pct(r.agreement_held),
            r.lines_held,
            pct(r.agreement_held_pages),
            r.pages_held
        ));
    }
    if let Some(h) = &r.hash {
        slice_hash(s, &anchors::id(b, &format!("home-slicehash-{i}")), h);
    }
    if !r.notes.is_empty() {
        s.list(r.notes.clone());
    }
}

fn compare(s: &mut Section, r: &HomeCompareRecord) {
    s.para(format!(
        "{} against {}, over {} ({} lines): the same slice number for {:.3}% of them, {:.3}% after relabelling B's numbers{}.",
        r.a,
        r.b,
        r.lines_from,
        r.lines,
        100.0 * r.agreement,
        100.0 * r.agreement_relabelled,
        if r.relabelling.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                r.relabelling
                    .iter()
                    .take(64)
                    .map(|[a, b]| format!("B {b} = A {a}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ));
    if !r.notes.is_empty() {
        s.list(r.notes.clone());
    }
}

fn conflict(s: &mut Section, b: usize, i: usize, r: &HomeConflictsRecord) {
    s.para(format!(
        "Conflicts of the hash of {} ({} slices, pages of {} KiB): the imbalance is the lines on the busiest slice over the mean per slice (1 is even).",
        r.hash_from,
        r.slices,
        r.page_bytes >> 10
    ));
    let mut t = table(
        &anchors::id(b, &format!("home-strides-{i}")),
        "Lines at a power-of-two stride: slices they reach",
        &[
            ("stride", Some("B")),
            ("lines", None),
            ("slices hit", None),
            ("imbalance", None),
        ],
    );
    for st in &r.strides {
        t.push(vec![
            Cell::num(st.stride_bytes as f64, 0),
            Cell::num(st.lines as f64, 0),
            Cell::num(f64::from(st.slices_hit), 0),
            Cell::num(st.imbalance, 2),
        ]);
    }
    s.table(t);
    let mut t = table(
        &anchors::id(b, &format!("home-combinations-{i}")),
        "Buffers of N pages read at a stride within each page: contiguous pages, random pages, and the pages chosen against the hash",
        &[
            ("stride", Some("B")),
            ("pages", None),
            ("contiguous, worst", None),
            ("contiguous, median", None),
            ("random", None),
            ("chosen", None),
        ],
    );
    for c in &r.combinations {
        t.push(vec![
            Cell::num(c.stride_bytes as f64, 0),
            Cell::num(f64::from(c.pages), 0),
            Cell::num(c.contiguous_worst, 2),
            Cell::num(c.contiguous_median, 2),
            opt(Some(c.random_mean), 2, ""),
            Cell::num(c.chosen, 2),
        ]);
    }
    s.table(t);
    s.list(r.advice.iter().chain(&r.notes).cloned().collect());
}
