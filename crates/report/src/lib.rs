//! Turning records into things people read.
//!
//! Every result numalab keeps is a typed record; this crate renders them without
//! re-measuring anything and without parsing our own text output: [`table`] is the one
//! interface every exporter shares (JSON, CSV, Markdown, terminal, HTML), [`svg`] draws
//! charts as inline SVG, [`html`] assembles a self-contained page (no network request,
//! every string escaped).

pub mod compare;
pub mod html;
pub mod svg;
pub mod table;
pub mod topology;

/// Escapes text for HTML and SVG (element content and attribute values).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(
            super::escape("<script>alert('x') & \"y\"</script>\u{1b}[31m"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;\u{fffd}[31m"
        );
    }
}
