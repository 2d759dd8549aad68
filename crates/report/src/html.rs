//! Self-contained HTML pages: inline CSS and SVG, no scripts from anywhere, no fonts or
//! images fetched, so a report works offline and as a mail attachment. Every string
//! that came from a user or a machine goes through [`crate::escape`].

use crate::escape;
use std::fmt::Write as _;

/// A page being assembled.
#[derive(Debug, Default)]
pub struct Page {
    title: String,
    body: String,
    toc: Vec<(String, String)>,
}

const CSS: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;color:#222;background:#fff}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
.meta{color:#666}.findings li{margin:.3em 0}.findings a{text-decoration:none}
table{border-collapse:collapse;margin:.8em 0}caption{text-align:left;font-weight:600;padding:.3em 0}
th,td{border:1px solid #ddd;padding:.25em .6em}th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.na{color:#999}ul.notes{color:#666;font-size:.9em}figure{margin:1em 0}figcaption{color:#555;font-size:.9em}
nav ul{columns:2;list-style:none;padding-left:0}details{margin:.5em 0}pre{background:#f7f7f7;padding:.6em;overflow:auto;max-height:30em}
.warn{color:#a60}.sev-high{color:#b00}
.findings li{padding:.15em 0}.sev{display:inline-block;min-width:4.6em;font-size:.75em;font-weight:600;text-transform:uppercase;border-radius:3px;padding:0 .35em;margin-right:.3em;text-align:center}
.sev-warning .sev{background:#fde2cf;color:#8a3b00}.sev-notice .sev{background:#e6eefb;color:#1d4f91}.sev-info .sev{background:#eee;color:#555}
.badge{font-size:.75em;background:#f3e8ff;color:#6b2fa3;border-radius:3px;padding:0 .35em}
p.modeled{background:#f3e8ff;border-left:4px solid #8e5bbf;padding:.4em .8em}
.problems{background:#fff4e5;border-left:4px solid #e69f00;padding:.3em .8em;margin:1em 0}
ul.outline{list-style:none;padding-left:.5em}ul.outline li::before{content:'\\2022  ';color:#999}ul.outline li.em{font-weight:600}
.scroll{overflow-x:auto}svg{max-width:100%;height:auto}
";

impl Page {
    /// A page with a title.
    pub fn new(title: &str) -> Self {
        Page {
            title: title.into(),
            ..Default::default()
        }
    }

    /// Raw HTML (callers escape what they put in).
    pub fn raw(&mut self, html: &str) -> &mut Self {
        self.body.push_str(html);
        self.body.push('\n');
        self
    }

    /// A section heading with an anchor; listed in the table of contents.
    pub fn section(&mut self, id: &str, title: &str) -> &mut Self {
        let _ = writeln!(
            self.body,
            "<h2 id=\"{}\">{}</h2>",
            escape(id),
            escape(title)
        );
        self.toc.push((id.into(), title.into()));
        self
    }

    /// A paragraph of text.
    pub fn para(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
        self
    }

    /// A figure: an SVG (already escaped by its builder) with an anchor and a caption.
    pub fn figure(&mut self, id: &str, svg: &str, caption: &str) -> &mut Self {
        let _ = writeln!(
            self.body,
            "<figure id=\"{}\">{svg}<figcaption>{}</figcaption></figure>",
            escape(id),
            escape(caption)
        );
        self
    }

    /// Preformatted text in a collapsible block (raw data appendix).
    pub fn details(&mut self, summary: &str, text: &str) -> &mut Self {
        let _ = writeln!(
            self.body,
            "<details><summary>{}</summary><pre>{}</pre></details>",
            escape(summary),
            escape(text)
        );
        self
    }

    /// The finished document.
    pub fn finish(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
             <title>{}</title><style>{CSS}</style></head>\n<body>\n<h1>{}</h1>\n",
            escape(&self.title),
            escape(&self.title)
        );
        if self.toc.len() > 2 {
            out.push_str("<nav><ul>");
            for (id, t) in &self.toc {
                let _ = write!(
                    out,
                    "<li><a href=\"#{}\">{}</a></li>",
                    escape(id),
                    escape(t)
                );
            }
            out.push_str("</ul></nav>\n");
        }
        out.push_str(&self.body);
        out.push_str("</body></html>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_escapes_and_has_no_external_references() {
        let mut p = Page::new("host <evil> & co");
        p.section("s1", "Findings")
            .para("a < b")
            .section("s2", "Two")
            .section("s3", "Three");
        p.details("raw", "{\"x\": \"</pre><script>\"}");
        let html = p.finish();
        assert!(html.contains("host &lt;evil&gt; &amp; co"));
        assert!(!html.contains("<script>"));
        assert!(!html.contains("http://") && !html.contains("https://"));
        assert!(html.contains("default-src 'none'"));
        assert!(html.contains("<a href=\"#s2\">Two</a>"));
    }
}
