//! The raw-data appendix: each bundle's envelope and its records by kind, as compact
//! JSON (one record per line, float noise such as 102.03399999999999 written 102.034:
//! 12 significant digits, more than any figure resolves), folded. Big kinds are cut (a
//! 160-CPU core-to-core run has up to twelve thousand pairs) with a note saying where
//! the rest is; the core-to-core matrices are never cut, so every pair's latency is in
//! the page even when the heatmap shows blocks of CPUs.

use crate::doc::Section;
use crate::load::Loaded;
use numalab_schema::Record;
use serde_json::Value;

/// Text kept per record kind and bundle (the first record of a kind is always kept).
pub const KIND_LIMIT: usize = 128 * 1024;

/// Kinds kept whole whatever their size: the full core-to-core matrices, which the
/// report's heatmap aggregates above 64 CPUs.
pub const NEVER_CUT: [&str; 1] = ["c2c.matrix"];

/// Significant digits of the numbers that are not integers.
const DIGITS: usize = 12;

/// The appendix section.
pub fn appendix(set: &[Loaded]) -> Section {
    let mut s = Section::new("appendix", "Raw data");
    s.para(format!("Every record (compact JSON, one per line, numbers rounded to {DIGITS} significant digits: float noise only), by kind; the envelope says which tool, host, topology and configuration produced them. Kinds over {} KiB are cut with a note, except the core-to-core matrices (c2c.matrix, every pair); the bundle holds everything.", KIND_LIMIT / 1024));
    for l in set {
        let where_ = if l.path.as_os_str().is_empty() {
            "the bundle".to_string()
        } else {
            l.path.display().to_string()
        };
        s.details(
            format!("{}: envelope", l.label),
            serde_json::to_string(&l.bundle.envelope).unwrap_or_default(),
        );
        let mut kinds: Vec<&str> = Vec::new();
        for r in &l.bundle.records {
            if !kinds.contains(&r.kind.as_str()) {
                kinds.push(&r.kind);
            }
        }
        for k in kinds {
            let of: Vec<_> = l.bundle.records.iter().filter(|r| r.kind == k).collect();
            let limit = if NEVER_CUT.contains(&k) {
                usize::MAX
            } else {
                KIND_LIMIT
            };
            let mut text = String::new();
            let mut shown = 0;
            for r in &of {
                let line = compact(r);
                if !text.is_empty() && text.len() + line.len() > limit {
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

/// A record as one line of JSON (its fields in their order), the non-integer numbers
/// of its data rounded to [`DIGITS`] significant digits.
fn compact(record: &Record) -> String {
    let mut r = record.clone();
    round(&mut r.data);
    serde_json::to_string(&r).unwrap_or_default()
}

fn round(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            if let Some(r) = n
                .as_f64()
                .and_then(|x| format!("{x:.*e}", DIGITS - 1).parse::<f64>().ok())
                .and_then(serde_json::Number::from_f64)
            {
                *n = r;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(round),
        Value::Object(o) => o.values_mut().for_each(round),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn float_noise_goes_and_integers_stay() {
        let mut v = serde_json::json!({
            "a": 102.03399999999999,
            "b": [0.33549999999998903, 8030.826185000033, 1e-9],
            "n": 18446744073709551615u64,
            "i": -3,
            "s": "102.03399999999999"
        });
        super::round(&mut v);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"a":102.034,"b":[0.3355,8030.826185,1e-9],"i":-3,"n":18446744073709551615,"s":"102.03399999999999"}"#
        );
    }
}
