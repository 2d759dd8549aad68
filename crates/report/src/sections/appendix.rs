//! The raw-data appendix: each bundle's envelope and its records by kind, as the JSON
//! they were written in, folded. Big kinds are cut (a 160-CPU core-to-core run has
//! twelve thousand pairs) with a note saying where the rest is.

use crate::doc::Section;
use crate::load::Loaded;

/// Text kept per record kind and bundle.
const KIND_LIMIT: usize = 512 * 1024;

/// The appendix section.
pub fn appendix(set: &[Loaded]) -> Section {
    let mut s = Section::new("appendix", "Raw data");
    s.para("Every record as written (JSON, one per line), by kind; the envelope says which tool, host, topology and configuration produced them.");
    for l in set {
        let where_ = if l.path.as_os_str().is_empty() {
            "the bundle".to_string()
        } else {
            l.path.display().to_string()
        };
        s.details(
            format!("{}: envelope", l.label),
            serde_json::to_string_pretty(&l.bundle.envelope).unwrap_or_default(),
        );
        let mut kinds: Vec<&str> = Vec::new();
        for r in &l.bundle.records {
            if !kinds.contains(&r.kind.as_str()) {
                kinds.push(&r.kind);
            }
        }
        for k in kinds {
            let of: Vec<_> = l.bundle.records.iter().filter(|r| r.kind == k).collect();
            let mut text = String::new();
            let mut shown = 0;
            for r in &of {
                let line = serde_json::to_string(r).unwrap_or_default();
                if !text.is_empty() && text.len() + line.len() > KIND_LIMIT {
                    break;
                }
                text.push_str(&line);
                text.push('\n');
                shown += 1;
            }
            if shown < of.len() {
                text.push_str(&format!(
                    "... {} more record(s) of this kind in {where_}\n",
                    of.len() - shown
                ));
            }
            s.details(
                format!(
                    "{}: {k} ({} record{})",
                    l.label,
                    of.len(),
                    if of.len() == 1 { "" } else { "s" }
                ),
                text,
            );
        }
    }
    s
}
