//! The one interface every exporter shares: typed tables.
//!
//! A record type knows how to describe itself as [`Table`]s; each output format
//! (JSON, CSV, Markdown, terminal, HTML) renders tables. Numbers stay numbers until the
//! last moment, missing values keep their reason ("n/a: no hardware PMU"), and
//! intervals stay intervals.
//!
//! The tables themselves ([`Table`], [`Column`], [`Cell`]) are data and build without
//! the `render` feature, so the analysis crates above (`numalab-history`) can build the
//! tables of their results; rendering them ([`render`]) is the feature.

#[cfg(feature = "render")]
use crate::escape;
#[cfg(feature = "render")]
use numalab_schema::text::csv_field;
use serde::Serialize;
#[cfg(feature = "render")]
use std::fmt::Write as _;

/// One cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    /// Text.
    Text(String),
    /// A number shown with `digits` decimals.
    Num {
        /// The value.
        value: f64,
        /// Decimals shown to people.
        #[serde(skip)]
        digits: usize,
    },
    /// A value with a confidence interval.
    Interval {
        /// Point estimate.
        estimate: f64,
        /// Lower bound.
        low: f64,
        /// Upper bound.
        high: f64,
        /// Decimals shown to people.
        #[serde(skip)]
        digits: usize,
    },
    /// Not available, and why.
    Missing {
        /// Why the value is not there.
        missing: String,
    },
}

impl Cell {
    /// A number with `digits` decimals.
    pub fn num(value: f64, digits: usize) -> Cell {
        if value.is_finite() {
            Cell::Num { value, digits }
        } else {
            Cell::Missing {
                missing: "not a finite number".into(),
            }
        }
    }

    /// Text.
    pub fn text(t: impl Into<String>) -> Cell {
        Cell::Text(t.into())
    }

    /// A missing value with its reason.
    pub fn missing(reason: impl Into<String>) -> Cell {
        Cell::Missing {
            missing: reason.into(),
        }
    }

    /// What people see.
    pub fn display(&self) -> String {
        match self {
            Cell::Text(t) => t.clone(),
            Cell::Num { value, digits } => format!("{value:.digits$}"),
            Cell::Interval {
                estimate,
                low,
                high,
                digits,
            } => format!("{estimate:.digits$} [{low:.digits$}, {high:.digits$}]"),
            Cell::Missing { .. } => "n/a".into(),
        }
    }

    #[cfg(feature = "render")]
    fn is_numeric(&self) -> bool {
        matches!(self, Cell::Num { .. } | Cell::Interval { .. })
    }
}

/// A column: name and unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Column {
    /// Name.
    pub name: String,
    /// Unit ("GB/s", "ns"), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl Column {
    /// A column with a unit.
    pub fn new(name: &str, unit: Option<&str>) -> Self {
        Column {
            name: name.into(),
            unit: unit.map(str::to_string),
        }
    }

    #[cfg(feature = "render")]
    fn header(&self) -> String {
        match &self.unit {
            Some(u) => format!("{} ({u})", self.name),
            None => self.name.clone(),
        }
    }
}

/// A table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Stable id, used as an HTML anchor and in JSON.
    pub id: String,
    /// Title.
    pub title: String,
    /// Columns.
    pub columns: Vec<Column>,
    /// Rows (each as long as `columns`).
    pub rows: Vec<Vec<Cell>>,
    /// Notes shown under the table (sources, caveats).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON array of tables.
    Json,
    /// CSV, one block per table.
    Csv,
    /// Markdown tables.
    Markdown,
    /// Aligned plain text.
    Terminal,
    /// HTML tables (a fragment; see `html` for whole pages).
    Html,
}

impl Format {
    /// The format a file name asks for, by its extension (any case): `.html`/`.htm`,
    /// `.md`/`.markdown`, `.csv`, `.json`, `.txt` (terminal text); none for another.
    pub fn of_path(p: &std::path::Path) -> Option<Format> {
        match p.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "html" | "htm" => Some(Format::Html),
            "md" | "markdown" => Some(Format::Markdown),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            "txt" => Some(Format::Terminal),
            _ => None,
        }
    }
}

impl Table {
    /// A new empty table.
    pub fn new(id: &str, title: &str, columns: Vec<Column>) -> Self {
        Table {
            id: id.into(),
            title: title.into(),
            columns,
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Adds a row (padded or cut to the number of columns).
    pub fn push(&mut self, mut row: Vec<Cell>) {
        row.resize(self.columns.len(), Cell::missing("no value"));
        self.rows.push(row);
    }

    /// Reasons of missing cells, in order of first appearance, for footnotes.
    #[cfg(feature = "render")]
    fn missing_reasons(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for row in &self.rows {
            for c in row {
                if let Cell::Missing { missing } = c {
                    if !out.contains(missing) {
                        out.push(missing.clone());
                    }
                }
            }
        }
        out
    }
}

/// Text for a terminal: control characters (escape sequences a hostile string could
/// use to rewrite the screen) become visible escapes (`\x1b`).
pub fn plain(s: &str) -> String {
    numalab_schema::text::visible(s, true)
}

/// Text for Markdown: markup characters escaped, one line. Link syntax from data is
/// neutralised: a `]` directly followed by `(` or `:` gets a backslash before that
/// character, so `[x](javascript:...)` and `![x](...)` are not inline links or images
/// and `[r]: javascript:...` defines no reference (so no `[r]` elsewhere can become a
/// link); `<...>` autolinks are escaped as HTML. Brackets elsewhere (intervals such as
/// `[0.98, 1.07]`) stay as they are.
pub fn md_field(s: &str) -> String {
    // Markdown passes raw HTML through, so markup characters are escaped too.
    s.replace("](", "]\\(")
        .replace("]:", "]\\:")
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "\\|")
        .replace('\n', " ")
}

/// Renders tables in a format.
#[cfg(feature = "render")]
pub fn render(tables: &[Table], format: Format) -> String {
    let mut out = String::new();
    match format {
        Format::Json => {
            out = serde_json::to_string_pretty(tables).expect("tables serialize");
            out.push('\n');
        }
        Format::Csv => {
            for (i, t) in tables.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                let _ = writeln!(out, "# {}", t.title);
                let header: Vec<String> =
                    t.columns.iter().map(|c| csv_field(&c.header())).collect();
                let _ = writeln!(out, "{}", header.join(","));
                for row in &t.rows {
                    let cells: Vec<String> = row
                        .iter()
                        .map(|c| match c {
                            // Full precision for machines; intervals as three numbers.
                            Cell::Num { value, .. } => value.to_string(),
                            Cell::Interval {
                                estimate,
                                low,
                                high,
                                ..
                            } => csv_field(&format!("{estimate} [{low}, {high}]")),
                            Cell::Missing { .. } => String::new(),
                            Cell::Text(t) => csv_field(t),
                        })
                        .collect();
                    let _ = writeln!(out, "{}", cells.join(","));
                }
            }
        }
        Format::Markdown => {
            for t in tables {
                let _ = writeln!(out, "### {}\n", md_field(&t.title));
                let header: Vec<String> = t.columns.iter().map(|c| md_field(&c.header())).collect();
                let _ = writeln!(out, "| {} |", header.join(" | "));
                let align: Vec<&str> = (0..t.columns.len())
                    .map(|i| {
                        if t.rows.iter().any(|r| r[i].is_numeric()) {
                            "---:"
                        } else {
                            "---"
                        }
                    })
                    .collect();
                let _ = writeln!(out, "|{}|", align.join("|"));
                for row in &t.rows {
                    let cells: Vec<String> = row.iter().map(|c| md_field(&c.display())).collect();
                    let _ = writeln!(out, "| {} |", cells.join(" | "));
                }
                for (i, r) in t.missing_reasons().iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "{}n/a: {}",
                        if i == 0 { "\n" } else { "" },
                        md_field(r)
                    );
                }
                for n in &t.notes {
                    let _ = writeln!(out, "\n{}", md_field(n));
                }
                out.push('\n');
            }
        }
        Format::Terminal => {
            for t in tables {
                let _ = writeln!(out, "{}", plain(&t.title));
                let header: Vec<String> = t.columns.iter().map(|c| plain(&c.header())).collect();
                let cells: Vec<Vec<String>> = t
                    .rows
                    .iter()
                    .map(|r| r.iter().map(|c| plain(&c.display())).collect())
                    .collect();
                let widths: Vec<usize> = (0..header.len())
                    .map(|i| {
                        cells
                            .iter()
                            .map(|r| r[i].chars().count())
                            .chain(std::iter::once(header[i].chars().count()))
                            .max()
                            .unwrap_or(0)
                    })
                    .collect();
                let numeric: Vec<bool> = (0..header.len())
                    .map(|i| t.rows.iter().any(|r| r[i].is_numeric()))
                    .collect();
                let line = |vals: &[String]| -> String {
                    vals.iter()
                        .enumerate()
                        .map(|(i, v)| {
                            let pad = widths[i] - v.chars().count();
                            if numeric[i] {
                                format!("{}{v}", " ".repeat(pad))
                            } else {
                                format!("{v}{}", " ".repeat(pad))
                            }
                        })
                        .collect::<Vec<_>>()
                        .join("  ")
                        .trim_end()
                        .to_string()
                };
                let _ = writeln!(out, "  {}", line(&header));
                for r in &cells {
                    let _ = writeln!(out, "  {}", line(r));
                }
                for r in t.missing_reasons() {
                    let _ = writeln!(out, "  n/a: {}", plain(&r));
                }
                for n in &t.notes {
                    let _ = writeln!(out, "  {}", plain(n));
                }
                out.push('\n');
            }
        }
        Format::Html => {
            for t in tables {
                let _ = writeln!(out, "<table id=\"{}\">", escape(&t.id));
                let _ = writeln!(out, "<caption>{}</caption>", escape(&t.title));
                out.push_str("<thead><tr>");
                for c in &t.columns {
                    let _ = write!(out, "<th>{}</th>", escape(&c.header()));
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                for row in &t.rows {
                    out.push_str("<tr>");
                    for c in row {
                        match c {
                            Cell::Missing { missing } => {
                                let _ = write!(
                                    out,
                                    "<td class=\"na\" title=\"{}\">n/a</td>",
                                    escape(missing)
                                );
                            }
                            c if c.is_numeric() => {
                                let _ =
                                    write!(out, "<td class=\"num\">{}</td>", escape(&c.display()));
                            }
                            c => {
                                let _ = write!(out, "<td>{}</td>", escape(&c.display()));
                            }
                        }
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody></table>\n");
                let reasons = t.missing_reasons();
                if !reasons.is_empty() || !t.notes.is_empty() {
                    out.push_str("<ul class=\"notes\">");
                    for r in reasons {
                        let _ = write!(out, "<li>n/a: {}</li>", escape(&r));
                    }
                    for n in &t.notes {
                        let _ = write!(out, "<li>{}</li>", escape(n));
                    }
                    out.push_str("</ul>\n");
                }
            }
        }
    }
    out
}

#[cfg(all(test, feature = "render"))]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_asks_for_the_format_of_its_extension() {
        let of = |p: &str| Format::of_path(std::path::Path::new(p));
        assert_eq!(of("r.HTM"), Some(Format::Html));
        assert_eq!(of("r.markdown"), Some(Format::Markdown));
        assert_eq!(of("out/r.csv"), Some(Format::Csv));
        assert_eq!(of("r.json"), Some(Format::Json));
        assert_eq!(of("r.txt"), Some(Format::Terminal));
        assert_eq!(of("r.pdf"), None);
        assert_eq!(of("report"), None);
    }

    fn sample() -> Vec<Table> {
        let mut t = Table::new(
            "bw",
            "Bandwidth by kernel",
            vec![
                Column::new("kernel", None),
                Column::new("bandwidth", Some("GB/s")),
                Column::new("ratio", None),
            ],
        );
        t.push(vec![
            Cell::text("triad"),
            Cell::num(12.3456, 2),
            Cell::Interval {
                estimate: 1.02,
                low: 0.98,
                high: 1.07,
                digits: 2,
            },
        ]);
        t.push(vec![
            Cell::text("copy, \"nt\" | <b>"),
            Cell::num(10.0, 2),
            Cell::missing("no baseline on this machine"),
        ]);
        t.notes.push("figures from a shared VM".into());
        vec![t]
    }

    #[test]
    fn terminal() {
        insta::assert_snapshot!(render(&sample(), Format::Terminal));
    }

    /// Issue 50: a string from a bundle such as `[x](javascript:alert(1))` stayed a live
    /// link in the Markdown report; every link, image and reference-definition syntax is
    /// now escaped, also behind a backslash of the data's own.
    #[test]
    fn markdown_javascript_links_from_data_are_not_live() {
        for (data, want) in [
            ("[x](javascript:alert(1))", "[x]\\(javascript:alert(1))"),
            ("![i](http://e/x.png)", "![i]\\(http://e/x.png)"),
            ("\\[x\\](javascript:1)", "\\[x\\]\\(javascript:1)"),
            ("[x]\\(javascript:1)", "[x]\\(javascript:1)"),
            ("[r]: javascript:1", "[r]\\: javascript:1"),
            ("<javascript:1>", "&lt;javascript:1&gt;"),
            ("1.02 [0.98, 1.07]", "1.02 [0.98, 1.07]"),
        ] {
            assert_eq!(md_field(data), want, "{data}");
        }
        let mut t = Table::new("t", "[t](javascript:0)", vec![Column::new("name", None)]);
        t.push(vec![Cell::text("[x](javascript:alert(1))")]);
        let md = render(&[t], Format::Markdown);
        assert!(!md.contains("[x]("), "{md}");
        assert!(!md.contains("[t]("), "{md}");
    }

    #[test]
    fn markdown() {
        insta::assert_snapshot!(render(&sample(), Format::Markdown));
    }

    #[test]
    fn csv() {
        insta::assert_snapshot!(render(&sample(), Format::Csv));
    }

    #[test]
    fn html() {
        insta::assert_snapshot!(render(&sample(), Format::Html));
    }

    #[test]
    fn json() {
        insta::assert_snapshot!(render(&sample(), Format::Json));
    }
}
