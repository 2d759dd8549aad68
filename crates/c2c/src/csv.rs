//! Import and export of the CSV format of the `core-to-core-latency` tool, so that the
//! many matrices published with it can be analysed, and ours compared with theirs.
//!
//! The format (see `tests/fixtures/PROVENANCE.md`): no header; N lines of N
//! comma-separated fields; row i, column j are the i-th and j-th CPUs benchmarked; cell
//! (i, j) with i > j is half the round-trip time in ns; cells with i <= j are empty. The
//! file does not name the CPUs: for full runs they are the OS CPU ids in ascending order,
//! so an imported matrix gets ids 0..N-1 unless the caller knows better.
//!
//! Published files have quirks: truncated runs, cells of 0.0, runs without pinning. A file
//! that cannot be a matrix is an error naming the line and what to do; a file that is a
//! matrix with doubtful cells is imported with [`Import::problems`] filled in, and the
//! structure inference then reports a low confidence.

use crate::matrix::LatencyMatrix;
use std::io::Write;
use std::path::Path;

/// The largest cell accepted, in ns: 1 s. A cache line moves between cores in tens to
/// hundreds of ns; a larger cell is a wrong unit or a damaged file, refused naming the
/// cell (a 1e300 cell used to be printed as a 300-digit latency).
pub const MAX_LATENCY_NS: f64 = 1e9;

/// Why a CSV file cannot be read as a matrix.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// The file cannot be read.
    #[error("{path}: {}", numalab_schema::input::io_reason(source))]
    Io {
        /// The file.
        path: String,
        /// The failure.
        source: std::io::Error,
    },
    /// The file cannot be read as an input (missing, a device, too large, a link loop).
    #[error("{path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why, in words, with the remedy.
        reason: String,
    },
    /// The content is not a core-to-core matrix.
    #[error("{path}: {reason} (expected the core-to-core-latency CSV layout: no header, N lines of N comma-separated fields, half round-trip ns in the lower triangle)")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong, with the line number.
        reason: String,
    },
}

impl numalab_schema::Classify for CsvError {
    fn class(&self) -> numalab_schema::ErrorClass {
        numalab_schema::ErrorClass::Input
    }
}

/// An imported matrix and what was doubtful in it.
#[derive(Debug, Clone)]
pub struct Import {
    /// The matrix (CPU ids 0..N-1).
    pub matrix: LatencyMatrix,
    /// Doubtful content, one sentence each (zero cells, negative cells, missing cells).
    pub problems: Vec<String>,
}

/// Reads a core-to-core-latency CSV file.
pub fn read(path: &Path) -> Result<Import, CsvError> {
    let name = numalab_schema::text::path_text(path);
    let text = numalab_schema::input::read(
        path,
        "a core-to-core CSV matrix",
        numalab_schema::input::C2C_CSV,
    )
    .map_err(|e| CsvError::Unreadable {
        path: name.clone(),
        reason: e.reason,
    })?;
    parse(&text, &name)
}

/// Parses CSV bytes; `name` is used in messages.
pub fn parse(bytes: &[u8], name: &str) -> Result<Import, CsvError> {
    let bad = |reason: String| CsvError::Malformed {
        path: name.to_string(),
        reason,
    };
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(bad("the file is empty".into()));
    }
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(::csv::Trim::All)
        .from_reader(bytes);
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (i, rec) in reader.records().enumerate() {
        let rec = rec.map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
        if rec.iter().all(|f| f.is_empty()) && rec.len() <= 1 {
            continue;
        }
        rows.push(rec.iter().map(str::to_string).collect());
    }
    let n = rows.len();
    if n < 2 {
        return Err(bad(format!("{n} line(s): a matrix needs at least 2 CPUs")));
    }
    let mut problems = Vec::new();
    let mut m = LatencyMatrix::new((0..n as u32).collect());
    let (mut zeros, mut negative, mut missing) = (0usize, 0usize, 0usize);
    for (i, row) in rows.iter().enumerate() {
        if row.len() != n {
            return Err(bad(format!(
                "line {} has {} fields but the file has {n} lines (a truncated or hand-edited file?)",
                i + 1,
                row.len()
            )));
        }
        for (j, field) in row.iter().enumerate() {
            if field.is_empty() {
                if j < i {
                    missing += 1;
                }
                continue;
            }
            let v: f64 = field.parse().map_err(|_| {
                bad(format!(
                    "line {}, field {}: {:?} is not a number",
                    i + 1,
                    j + 1,
                    field
                ))
            })?;
            if !v.is_finite() {
                return Err(bad(format!(
                    "line {}, field {}: {field:?} is not a finite number",
                    i + 1,
                    j + 1
                )));
            }
            if v > MAX_LATENCY_NS {
                return Err(bad(format!(
                    "line {}, field {}: {field:?} ns is not a core-to-core latency (over 1 s, the largest accepted); check the file's unit (ns) or remove the cell",
                    i + 1,
                    j + 1
                )));
            }
            if j == i {
                continue;
            }
            if v == 0.0 {
                zeros += 1;
                continue;
            }
            if v < 0.0 {
                negative += 1;
                continue;
            }
            // Either triangle is accepted; both given means the mean.
            match m.get(i, j) {
                Some(prev) if j > i => m.set(i, j, (prev + v) / 2.0),
                _ => m.set(i, j, v),
            }
        }
    }
    if m.measured_pairs() == 0 {
        return Err(bad("no cell holds a positive latency".into()));
    }
    if zeros > 0 {
        problems.push(format!(
            "{zeros} cell(s) are 0.0, which no ping-pong can measure: they are treated as missing"
        ));
    }
    if negative > 0 {
        problems.push(format!(
            "{negative} cell(s) are negative: they are treated as missing"
        ));
    }
    let absent = m.total_pairs() - m.measured_pairs();
    if absent > 0 && missing > 0 {
        problems.push(format!(
            "{absent} of {} pairs have no value",
            m.total_pairs()
        ));
    }
    Ok(Import {
        matrix: m,
        problems,
    })
}

/// Writes a matrix in the same layout (lower triangle, ns, empty where unmeasured). The
/// CPU ids are not part of the format: the rows follow the matrix order.
pub fn write(m: &LatencyMatrix, out: &mut dyn Write) -> std::io::Result<()> {
    let n = m.n();
    for i in 0..n {
        let fields: Vec<String> = (0..n)
            .map(|j| {
                if j < i {
                    m.get(i, j).map(|v| format!("{v}")).unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .collect();
        writeln!(out, "{}", fields.join(","))?;
    }
    Ok(())
}

/// The matrix in core-to-core-latency's CSV layout ([`write`]), as bytes.
pub fn to_bytes(m: &LatencyMatrix) -> Vec<u8> {
    let mut out = Vec::new();
    write(m, &mut out).expect("writing to memory cannot fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_bytes_is_the_written_layout() {
        let mut m = LatencyMatrix::new(vec![0, 1]);
        m.set(1, 0, 7.5);
        assert_eq!(to_bytes(&m), b",\n7.5,\n");
    }

    #[test]
    fn round_trip_keeps_values_and_holes() {
        let mut m = LatencyMatrix::new(vec![0, 1, 2]);
        m.set(1, 0, 10.5);
        m.set(2, 0, 100.25);
        let mut out = Vec::new();
        write(&m, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            ",,\n10.5,,\n100.25,,\n"
        );
        let back = parse(&out, "x").unwrap();
        assert_eq!(back.matrix.get(0, 1), Some(10.5));
        assert_eq!(back.matrix.get(0, 2), Some(100.25));
        assert_eq!(back.matrix.get(1, 2), None);
        assert_eq!(back.problems.len(), 1, "{:?}", back.problems);
    }

    /// Issue 50: a 1e300 ns cell was printed as a 300-digit latency; it is refused
    /// naming the cell, the bound and the remedy.
    #[test]
    fn c2c_cell_of_1e300_ns_is_refused_naming_the_cell() {
        let e = parse(b",,\n80,,\n90,1e300,\n", "big.csv")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3, field 2") && e.contains("over 1 s") && e.contains("unit (ns)"),
            "{e}"
        );
        // The bound itself is a latency.
        assert!(parse(b",\n1000000000,\n", "b.csv").is_ok());
    }

    #[test]
    fn malformed_inputs_are_errors_naming_the_line() {
        let cases: &[(&str, &str)] = &[
            ("", "empty"),
            ("\n\n", "empty"),
            (",\n", "at least 2 CPUs"),
            (",,\n1,,\n", "line 1 has 3 fields but the file has 2 lines"),
            (",,\n5,,\n6,x,\n", "field 2: \"x\" is not a number"),
            (",\n0,\n", "no cell holds a positive latency"),
            (",\nNaN,\n", "not a finite number"),
            (
                ",\n1e300,\n",
                "line 2, field 1: \"1e300\" ns is not a core-to-core latency",
            ),
            (",\n1000000001,\n", "over 1 s"),
        ];
        for (text, want) in cases {
            let e = parse(text.as_bytes(), "f.csv").unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(e.starts_with("f.csv: "), "{e}");
        }
    }

    #[test]
    fn zero_and_negative_cells_are_flagged_not_used() {
        let import = parse(b",,\n0.0,,\n30,-2,\n", "z.csv").unwrap();
        assert_eq!(import.matrix.get(1, 0), None);
        assert_eq!(import.matrix.get(2, 1), None);
        assert_eq!(import.matrix.get(2, 0), Some(30.0));
        let text = import.problems.join(" ");
        assert!(text.contains("1 cell(s) are 0.0"), "{text}");
        assert!(text.contains("1 cell(s) are negative"), "{text}");
    }
}
