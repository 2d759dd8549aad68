//! Exports of points: CSV for spreadsheets, JSON for programs.
//!
//! Values are written verbatim: CSV fields holding a comma, a quote, a carriage return
//! or a newline are quoted (RFC 4180, quotes doubled), nothing else is altered.

use crate::query::{Point, Query};
use crate::{History, HistoryError};
use serde::Serialize;
use std::io::Write;

/// Version of the JSON export document.
pub const EXPORT_VERSION: u32 = 1;

/// The CSV header of [`History::export_csv`].
pub const CSV_HEADER: [&str; 18] = [
    "time_utc",
    "run_id",
    "label",
    "host",
    "machine",
    "metric_id",
    "group",
    "name",
    "unit",
    "higher_is_better",
    "setup",
    "samples",
    "median",
    "mad",
    "min",
    "max",
    "bounds",
    "tags",
];

/// One CSV field, quoted when it must be (the one implementation, in `schema::text`).
pub use numalab_schema::text::csv_field;

fn num(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn csv_line(p: &Point) -> String {
    let fields = [
        p.time_utc.clone(),
        p.run_id.to_string(),
        p.label.clone(),
        p.host.clone().unwrap_or_default(),
        p.machine.clone(),
        p.metric_id.clone(),
        p.group.clone(),
        p.name.clone(),
        p.unit.clone(),
        p.higher_is_better.to_string(),
        p.setup.clone().unwrap_or_default(),
        p.samples.to_string(),
        num(p.median),
        num(p.mad),
        num(p.min),
        num(p.max),
        p.bounds
            .map(|(a, b)| format!("{a} {b}"))
            .unwrap_or_default(),
        p.tags.to_string(),
    ];
    let mut line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
    line.last_mut().expect("fields").push_str("\r\n");
    line.join(",")
}

#[derive(Serialize)]
struct Document<'a> {
    format: &'static str,
    version: u32,
    points: &'a [Point],
}

impl History {
    /// Writes the points of `q` as CSV ([`CSV_HEADER`], CRLF line ends, RFC 4180
    /// quoting); returns the number of points.
    pub fn export_csv(&self, q: &Query, mut out: impl Write) -> Result<usize, HistoryError> {
        let points = self.query(q)?;
        out.write_all(format!("{}\r\n", CSV_HEADER.join(",")).as_bytes())?;
        for p in &points {
            out.write_all(csv_line(p).as_bytes())?;
        }
        out.flush()?;
        Ok(points.len())
    }

    /// Writes the points of `q` as one JSON document `{"format":
    /// "numalab-history-points", "version": 1, "points": [...]}` (fields of
    /// [`Point`]); returns the number of points.
    pub fn export_json(&self, q: &Query, mut out: impl Write) -> Result<usize, HistoryError> {
        let points = self.query(q)?;
        let doc = Document {
            format: "numalab-history-points",
            version: EXPORT_VERSION,
            points: &points,
        };
        serde_json::to_writer_pretty(&mut out, &doc).map_err(std::io::Error::from)?;
        out.write_all(b"\n")?;
        out.flush()?;
        Ok(points.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("cr\rhere"), "\"cr\rhere\"");
        assert_eq!(csv_field("<script>'; --"), "<script>'; --");
    }
}
