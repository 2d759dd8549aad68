//! A report as data: sections of paragraphs, tables, charts and outlines, built once from
//! the records and rendered by every exporter. The HTML page draws the charts; the text
//! formats (terminal, Markdown, CSV, JSON) render the same tables, so a figure in the
//! page and in `--format csv` can never disagree.

use crate::escape;
use crate::findings::{Finding, Severity};
use crate::html::Page;
use crate::table::{md_field, plain, render, Format, Table};
use numalab_schema::interrupt::Interrupted;
use serde::Serialize;
use std::fmt::Write as _;

/// One item of an outline (a decision tree, a list of levels).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutlineItem {
    /// Depth (0 = top).
    pub depth: usize,
    /// Text.
    pub text: String,
    /// On the path that matters (the dominant branch, a notable metric).
    pub emphasis: bool,
}

/// A piece of a section.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "block", rename_all = "snake_case")]
pub enum Block {
    /// A paragraph.
    Para {
        /// Text.
        text: String,
    },
    /// Sentences as a bullet list.
    List {
        /// Items.
        items: Vec<String>,
    },
    /// A table.
    Table {
        /// The table.
        table: Table,
    },
    /// A chart (HTML only; text formats show its caption).
    Chart {
        /// Anchor.
        id: String,
        /// The SVG document (its builder escaped every string in it).
        #[serde(skip)]
        svg: String,
        /// Caption.
        caption: String,
    },
    /// An outline.
    Outline {
        /// Items in order.
        items: Vec<OutlineItem>,
    },
    /// Preformatted text, folded (raw data).
    Details {
        /// The visible line.
        summary: String,
        /// The text.
        #[serde(skip)]
        text: String,
    },
}

/// A section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    /// Anchor.
    pub id: String,
    /// Heading.
    pub title: String,
    /// The figures are modeled, not measured.
    pub modeled: bool,
    /// Content.
    pub blocks: Vec<Block>,
}

impl Section {
    /// An empty section.
    pub fn new(id: &str, title: &str) -> Self {
        Section {
            id: id.into(),
            title: title.into(),
            modeled: false,
            blocks: Vec::new(),
        }
    }

    /// Adds a paragraph.
    pub fn para(&mut self, text: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Para { text: text.into() });
        self
    }

    /// Adds a list (nothing when empty).
    pub fn list(&mut self, items: Vec<String>) -> &mut Self {
        if !items.is_empty() {
            self.blocks.push(Block::List { items });
        }
        self
    }

    /// Adds a table (nothing when it has no rows).
    pub fn table(&mut self, table: Table) -> &mut Self {
        if !table.rows.is_empty() {
            self.blocks.push(Block::Table { table });
        }
        self
    }

    /// Adds a chart.
    pub fn chart(&mut self, id: &str, svg: String, caption: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Chart {
            id: id.into(),
            svg,
            caption: caption.into(),
        });
        self
    }

    /// Adds an outline.
    pub fn outline(&mut self, items: Vec<OutlineItem>) -> &mut Self {
        if !items.is_empty() {
            self.blocks.push(Block::Outline { items });
        }
        self
    }

    /// Adds folded preformatted text.
    pub fn details(&mut self, summary: impl Into<String>, text: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Details {
            summary: summary.into(),
            text: text.into(),
        });
        self
    }

    /// Its tables.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.blocks.iter().filter_map(|b| match b {
            Block::Table { table } => Some(table),
            _ => None,
        })
    }

    /// The section in Markdown or on a terminal: its heading, paragraphs, lists and
    /// tables; charts are named by their captions when `charts` is set, left out
    /// otherwise (a command's own output, where no HTML report exists).
    pub fn to_text(&self, format: Format, charts: bool) -> String {
        let mut out = String::new();
        self.write_text(&mut out, format, charts);
        numalab_schema::text::visible(&out, true)
    }

    fn write_text(&self, out: &mut String, format: Format, charts: bool) {
        let md = format == Format::Markdown;
        let t = |s: &str| if md { md_field(s) } else { plain(s) };
        let title = t(&if self.modeled {
            format!("{} (modeled)", self.title)
        } else {
            self.title.clone()
        });
        if md {
            let _ = write!(out, "## {title}\n\n");
        } else {
            let _ = write!(out, "{title}\n{}\n\n", "-".repeat(title.chars().count()));
        }
        for b in &self.blocks {
            match b {
                Block::Para { text } => {
                    let _ = writeln!(out, "{}\n", t(text));
                }
                Block::List { items } => {
                    for i in items {
                        let _ = writeln!(out, "- {}", t(i));
                    }
                    out.push('\n');
                }
                Block::Table { table } => {
                    out.push_str(&render(std::slice::from_ref(table), format));
                }
                Block::Chart { caption, .. } => {
                    if charts {
                        let _ = writeln!(out, "[chart in the HTML report: {}]\n", t(caption));
                    }
                }
                Block::Outline { items } => {
                    for i in items {
                        let _ = writeln!(
                            out,
                            "{}{} {}",
                            "  ".repeat(i.depth),
                            if i.emphasis { "*" } else { "-" },
                            t(&i.text)
                        );
                    }
                    out.push('\n');
                }
                Block::Details { summary, .. } => {
                    let _ = writeln!(out, "[{}: in the HTML report and the bundle]\n", t(summary));
                }
            }
        }
    }
}

/// A whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Document {
    /// Title.
    pub title: String,
    /// Lines under the title (what the bundles are).
    pub subtitle: Vec<String>,
    /// Problems met while reading the bundles.
    pub problems: Vec<String>,
    /// Findings, most important first.
    pub findings: Vec<Finding>,
    /// Sections in order.
    pub sections: Vec<Section>,
}

/// What [`crate::sections::try_document`] and [`Document::try_render`] return when
/// stopped: the report is dropped whole, nothing of it is written.
pub const REPORT_INTERRUPTED: Interrupted = Interrupted {
    during: "rendering the report",
    left: "nothing was written",
};

fn severity_class(s: Severity) -> &'static str {
    match s {
        Severity::Warning => "sev-warning",
        Severity::Notice => "sev-notice",
        Severity::Info => "sev-info",
    }
}

impl Document {
    /// Every table, in order.
    pub fn tables(&self) -> Vec<Table> {
        self.sections
            .iter()
            .flat_map(|s| s.tables().cloned())
            .collect()
    }

    /// The self-contained HTML page.
    pub fn to_html(&self) -> String {
        self.html_until(&|| false)
            .expect("a stop that never fires cannot interrupt")
    }

    /// [`Document::render`] that stops at Ctrl-C or SIGTERM: the process-wide stop flag
    /// ([`numalab_schema::interrupt`]) is polled between sections; an interrupted report
    /// is dropped whole ([`REPORT_INTERRUPTED`]).
    pub fn try_render(&self, format: Format) -> Result<String, Interrupted> {
        let stop = numalab_schema::interrupt::requested;
        match self.render_until(format, &stop) {
            Some(t) if !stop() => Ok(t),
            _ => Err(REPORT_INTERRUPTED),
        }
    }

    /// [`Document::render`], or `None` once `stop` says so (asked between sections).
    pub(crate) fn render_until(&self, format: Format, stop: &dyn Fn() -> bool) -> Option<String> {
        match format {
            Format::Html => self.html_until(stop),
            f => self.text_until(f, stop),
        }
    }

    /// The HTML page, or `None` once `stop` says so (asked between sections).
    fn html_until(&self, stop: &dyn Fn() -> bool) -> Option<String> {
        let mut page = Page::new(&self.title);
        for line in &self.subtitle {
            page.raw(&format!("<p class=\"meta\">{}</p>", escape(line)));
        }
        if !self.problems.is_empty() {
            let mut s = String::from(
                "<div class=\"problems\" id=\"problems\"><strong>Reading the bundles:</strong><ul>",
            );
            for p in &self.problems {
                let _ = write!(s, "<li>{}</li>", escape(p));
            }
            s.push_str("</ul></div>");
            page.raw(&s);
        }
        page.section("findings", "Findings");
        if self.findings.is_empty() {
            page.para("No findings: the bundles hold nothing the rules recognise.");
        } else {
            let mut s = String::from("<ol class=\"findings\">");
            for f in &self.findings {
                let _ = write!(
                    s,
                    "<li class=\"{}\"><span class=\"sev\">{}</span> {}",
                    severity_class(f.severity),
                    f.severity.word(),
                    escape(&f.text)
                );
                if f.modeled {
                    s.push_str(" <span class=\"badge\">modeled</span>");
                }
                if let Some(a) = &f.anchor {
                    let _ = write!(s, " <a href=\"#{}\">&#8594; evidence</a>", escape(a));
                }
                s.push_str("</li>");
            }
            s.push_str("</ol>");
            page.raw(&s);
        }
        for sec in &self.sections {
            if stop() {
                return None;
            }
            page.section(&sec.id, &sec.title);
            if sec.modeled {
                page.raw("<p class=\"modeled\">Modeled, not measured: these figures come from numalab's machine model (origin \"modeled\" in the records).</p>");
            }
            for b in &sec.blocks {
                match b {
                    Block::Para { text } => {
                        page.para(text);
                    }
                    Block::List { items } => {
                        let mut s = String::from("<ul>");
                        for i in items {
                            let _ = write!(s, "<li>{}</li>", escape(i));
                        }
                        s.push_str("</ul>");
                        page.raw(&s);
                    }
                    Block::Table { table } => {
                        page.raw(&format!(
                            "<div class=\"scroll\">{}</div>",
                            render(std::slice::from_ref(table), Format::Html)
                        ));
                    }
                    Block::Chart { id, svg, caption } => {
                        page.figure(id, svg, caption);
                    }
                    Block::Outline { items } => {
                        let mut s = String::from("<ul class=\"outline\">");
                        for i in items {
                            let _ = write!(
                                s,
                                "<li style=\"margin-left:{}em\"{}>{}</li>",
                                i.depth * 2,
                                if i.emphasis { " class=\"em\"" } else { "" },
                                escape(&i.text)
                            );
                        }
                        s.push_str("</ul>");
                        page.raw(&s);
                    }
                    Block::Details { summary, text } => {
                        page.details(summary, text);
                    }
                }
            }
        }
        Some(page.finish())
    }

    /// The report in `format`: the self-contained page for HTML ([`Document::to_html`]),
    /// else the text of [`Document::to_text`].
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Html => self.to_html(),
            f => self.to_text(f),
        }
    }

    /// The report in a text format: findings and tables (charts are named by their
    /// captions; raw data stays in the bundle).
    pub fn to_text(&self, format: Format) -> String {
        self.text_until(format, &|| false)
            .expect("a stop that never fires cannot interrupt")
    }

    /// [`Document::to_text`], or `None` once `stop` says so (asked between sections).
    fn text_until(&self, format: Format, stop: &dyn Fn() -> bool) -> Option<String> {
        let text = self.to_text_raw(format, stop)?;
        Some(match format {
            // Whatever a cell or a sentence let through, no control character reaches
            // a terminal or a file a terminal will print: ESC, BEL and the rest become
            // visible escapes (JSON escapes them itself, HTML escapes every string).
            Format::Markdown | Format::Terminal | Format::Csv => {
                numalab_schema::text::visible(&text, true)
            }
            Format::Html | Format::Json => text,
        })
    }

    fn to_text_raw(&self, format: Format, stop: &dyn Fn() -> bool) -> Option<String> {
        Some(match format {
            Format::Html => self.html_until(stop)?,
            Format::Csv => render(&self.tables(), Format::Csv),
            Format::Json => {
                #[derive(Serialize)]
                struct Out<'a> {
                    title: &'a str,
                    problems: &'a [String],
                    findings: &'a [Finding],
                    tables: Vec<Table>,
                }
                serde_json::to_string_pretty(&Out {
                    title: &self.title,
                    problems: &self.problems,
                    findings: &self.findings,
                    tables: self.tables(),
                })
                .expect("tables serialize")
                    + "\n"
            }
            Format::Markdown | Format::Terminal => {
                let md = format == Format::Markdown;
                // Every string from a bundle is made harmless for the target: markup
                // escaped in Markdown, control characters replaced on a terminal.
                let t = |s: &str| if md { md_field(s) } else { plain(s) };
                let mut out = String::new();
                let h = |level: usize, text: &str| {
                    let text = t(text);
                    if md {
                        format!("{} {text}\n\n", "#".repeat(level))
                    } else {
                        let rule = if level == 1 { "=" } else { "-" };
                        format!("{text}\n{}\n\n", rule.repeat(text.chars().count()))
                    }
                };
                out.push_str(&h(1, &self.title));
                for l in &self.subtitle {
                    let _ = writeln!(out, "{}", t(l));
                }
                if !self.subtitle.is_empty() {
                    out.push('\n');
                }
                for p in &self.problems {
                    let _ = writeln!(out, "problem: {}", t(p));
                }
                out.push_str(&h(2, "Findings"));
                for f in &self.findings {
                    let _ = writeln!(
                        out,
                        "- {}{}: {}",
                        f.severity.word(),
                        if f.modeled { " (modeled)" } else { "" },
                        t(&f.text)
                    );
                }
                out.push('\n');
                for sec in &self.sections {
                    if stop() {
                        return None;
                    }
                    sec.write_text(&mut out, format, true);
                }
                out
            }
        })
    }
}
