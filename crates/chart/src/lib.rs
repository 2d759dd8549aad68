//! Charts as inline SVG, and escaping, for every crate that draws: reports, scaling
//! studies, core-to-core heatmaps, model floorplans. One implementation, so that every
//! picture numalab makes escapes its strings the same way and looks alike.

pub mod boxes;
pub mod floorplan;
pub mod mesh;
pub mod svg;

pub use boxes::{BoxDiagram, BoxGroup, BoxItem};
pub use floorplan::{CellState, FloorCell, FloorItem, Floorplan, ItemShape};
pub use mesh::{At, Mark, MeshPicture, MeshStop};
pub use svg::{
    AxisFormat, Bar, BarChart, Dot, DotKind, Heatmap, LineChart, Series, Strip, StripChart,
};

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
