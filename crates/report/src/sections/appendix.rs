//! The raw-data appendix: each bundle's envelope and its records by kind, as compact
//! JSON (one record per line, float noise such as 102.03399999999999 written 102.034:
//! 12 significant digits, more than any figure resolves), folded. Big kinds are cut (a
//! 160-CPU core-to-core run has up to twelve thousand pairs) with a note saying where
//! the rest is; the core-to-core matrices are never cut, so every pair's latency is in
//! the page even when the heatmap shows blocks of CPUs.
//!
//! The appendix is bounded whatever the bundle: a record's line is at most
//! [`RECORD_LIMIT`] ([`MATRIX_RECORD_LIMIT`] for the matrices) and the appendix at most
//! [`TOTAL_LIMIT`]; what is left out is replaced by a line saying how many bytes and
//! where they are. A record over its limit is never decoded or written whole (its size
//! is the length of its line in the journal, or counted while serialising).

use crate::doc::Section;
use crate::load::Loaded;
use serde_json::Value;

/// Text kept per record kind and bundle (the first record of a kind is always kept).
pub const KIND_LIMIT: usize = 128 * 1024;

/// Kinds kept whole whatever their size: the full core-to-core matrices, which the
/// report's heatmap aggregates above 64 CPUs.
pub const NEVER_CUT: [&str; 1] = ["c2c.matrix"];

/// Longest line of one record (a longer one is replaced by a note): 1 MiB, several
/// times the largest record numalab writes besides the matrices (a loaded-latency
/// record is about 120 KiB).
pub const RECORD_LIMIT: usize = 1 << 20;

/// Longest line of one core-to-core matrix (a 1,000-CPU matrix is about 12 MB).
pub const MATRIX_RECORD_LIMIT: usize = 16 << 20;

/// Most text in the whole appendix, all bundles together.
pub const TOTAL_LIMIT: usize = 32 << 20;

/// Significant digits of the numbers that are not integers.
const DIGITS: usize = 12;

/// The appendix section.
pub fn appendix(set: &[Loaded]) -> Section {
    let mut s = Section::new("appendix", "Raw data");
    s.para(format!("Every record (compact JSON, one per line, numbers rounded to {DIGITS} significant digits: float noise only), by kind; the envelope says which tool, host, topology and configuration produced them. Kinds over {} KiB are cut with a note, except the core-to-core matrices (c2c.matrix, every pair); the bundle holds everything.", KIND_LIMIT / 1024));
    let mut total = 0usize;
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
        let mut payloads = l.payloads();
        for kind in l.kinds() {
            let k = kind.kind.as_str();
            // The records held of the kind (for a journal, the indexed ones: the first
            // ones of the kind); `kind.count` counts them all.
            let of: Vec<usize> = (0..l.bundle.records.len())
                .filter(|&i| l.bundle.records[i].kind == k)
                .collect();
            let (limit, record_limit) = if NEVER_CUT.contains(&k) {
                (usize::MAX, MATRIX_RECORD_LIMIT)
            } else {
                (KIND_LIMIT, RECORD_LIMIT)
            };
            let mut text = String::new();
            let mut shown = 0;
            let mut over_total = false;
            for &i in &of {
                if total + text.len() >= TOTAL_LIMIT {
                    over_total = true;
                    break;
                }
                let line = match record_line(l, &mut payloads, i, record_limit) {
                    Ok(line) => line,
                    Err(left_out) => format!(
                        "... record {:?}: {} of JSON left out (over the {} a record may take here); it is in {where_}",
                        l.bundle.records[i].key,
                        numalab_schema::units::bytes(left_out),
                        numalab_schema::units::bytes(record_limit as u64)
                    ),
                };
                if !text.is_empty() && text.len() + line.len() > limit {
                    break;
                }
                text.push_str(&line);
                text.push('\n');
                shown += 1;
            }
            if shown < kind.count {
                let held: u64 = of[shown..].iter().filter_map(|&i| l.stored_len(i)).sum();
                let read: u64 = of[..shown].iter().filter_map(|&i| l.stored_len(i)).sum();
                // Bytes of the records left out: of the held ones, else (a journal's
                // records past its index) the kind's bytes less those shown.
                let left = if of.len() < kind.count {
                    kind.bytes.saturating_sub(read)
                } else {
                    held
                };
                let bytes = if left > 0 {
                    format!(" ({})", numalab_schema::units::bytes(left))
                } else {
                    String::new()
                };
                let why = if over_total {
                    format!(
                        " (the appendix holds at most {})",
                        numalab_schema::units::bytes(TOTAL_LIMIT as u64)
                    )
                } else {
                    String::new()
                };
                text.push_str(&format!(
                    "... {} more record(s) of this kind{bytes} in {where_}{why}\n",
                    kind.count - shown
                ));
            }
            total += text.len();
            s.details(
                format!(
                    "{}: {k} ({} record{})",
                    l.label,
                    kind.count,
                    if kind.count == 1 { "" } else { "s" }
                ),
                text,
            );
        }
    }
    s
}

/// Record `i` as one line of JSON (its fields in their order, the non-integer numbers
/// of its data rounded to [`DIGITS`] significant digits), or the size of what is left out when
/// it is longer than `limit` (or cannot be read back: then 0).
fn record_line(
    l: &Loaded,
    payloads: &mut crate::load::Payloads<'_>,
    i: usize,
    limit: usize,
) -> Result<String, u64> {
    // A journal's record over the limit is not even read.
    if let Some(len) = l.stored_len(i).filter(|&n| n > limit as u64) {
        return Err(len);
    }
    let record = payloads.get(i).ok_or(0u64)?;
    let mut out = Capped {
        text: Vec::new(),
        limit,
        len: 0,
    };
    let mut r = record.into_owned();
    round(&mut r.data);
    if serde_json::to_writer(&mut out, &r).is_err() {
        return Err(out.len);
    }
    if out.len > limit as u64 {
        return Err(out.len);
    }
    Ok(String::from_utf8(out.text).unwrap_or_default())
}

/// A writer that keeps the first `limit` bytes and counts the rest.
struct Capped {
    text: Vec<u8>,
    limit: usize,
    len: u64,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.len += buf.len() as u64;
        if self.len <= self.limit as u64 {
            self.text.extend_from_slice(buf);
        } else {
            self.text = Vec::new();
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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
