//! A box diagram: labelled groups side by side (four to a row), each holding labelled
//! boxes stacked inside, and a row of loose boxes apart under its own heading. The
//! machine picture of reports draws packages with their NUMA nodes inside and the
//! memory-only nodes apart with it; any "what contains what" picture can.

use crate::escape;
use std::fmt::Write as _;

/// One box: its first line in black, the others in grey.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoxItem {
    /// Lines of text.
    pub lines: Vec<String>,
}

/// A group: a heading (bold), a second line (grey), and the boxes inside.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoxGroup {
    /// Heading.
    pub title: String,
    /// The line under the heading.
    pub subtitle: String,
    /// Boxes inside, top to bottom.
    pub items: Vec<BoxItem>,
}

/// A box diagram.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoxDiagram {
    /// Title (the SVG's `<title>`).
    pub title: String,
    /// Groups, left to right, four to a row.
    pub groups: Vec<BoxGroup>,
    /// Heading of the loose boxes.
    pub loose_title: String,
    /// Boxes outside every group (drawn in a tinted row under the groups).
    pub loose: Vec<BoxItem>,
}

const GROUP_W: f64 = 300.0;
const GAP: f64 = 20.0;
const ITEM_H: f64 = 46.0;
const LOOSE_W: f64 = 160.0;

impl BoxDiagram {
    /// The SVG document; every string escaped.
    pub fn to_svg(&self) -> String {
        let groups = self.groups.len().max(1);
        let most = self
            .groups
            .iter()
            .map(|g| g.items.len())
            .max()
            .unwrap_or(1)
            .max(1);
        let cols = groups.min(4);
        let rows = groups.div_ceil(cols);
        let group_h = 56.0 + most as f64 * (ITEM_H + 8.0);
        let w = cols as f64 * (GROUP_W + GAP) + GAP;
        let h = rows as f64 * (group_h + GAP)
            + GAP
            + if self.loose.is_empty() {
                0.0
            } else {
                ITEM_H + 30.0
            };
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w:.0} {h:.0}\" width=\"{w:.0}\" height=\"{h:.0}\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\"><title>{}</title>",
            escape(&self.title)
        );
        let line = |i: usize, l: &str, x: f64, y: f64| -> String {
            let fill = if i == 0 { "" } else { " fill=\"#555\"" };
            format!("<text x=\"{x:.1}\" y=\"{y:.1}\"{fill}>{}</text>", escape(l))
        };
        for (p, g) in self.groups.iter().enumerate() {
            let x = GAP + (p % cols) as f64 * (GROUP_W + GAP);
            let y = GAP + (p / cols) as f64 * (group_h + GAP);
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{GROUP_W}\" height=\"{group_h:.1}\" rx=\"6\" fill=\"#f4f6fa\" stroke=\"#567\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" font-weight=\"600\">{}</text>\
                 <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\">{}</text>",
                x + 10.0,
                y + 18.0,
                escape(&g.title),
                x + 10.0,
                y + 36.0,
                escape(&g.subtitle)
            );
            for (i, item) in g.items.iter().enumerate() {
                let ny = y + 48.0 + i as f64 * (ITEM_H + 8.0);
                let _ = write!(
                    out,
                    "<rect x=\"{:.1}\" y=\"{ny:.1}\" width=\"{:.1}\" height=\"{ITEM_H}\" rx=\"4\" fill=\"#fff\" stroke=\"#89a\"/>",
                    x + 10.0,
                    GROUP_W - 20.0,
                );
                for (k, l) in item.lines.iter().enumerate().take(2) {
                    out.push_str(&line(k, l, x + 18.0, ny + 18.0 + 18.0 * k as f64));
                }
            }
        }
        if !self.loose.is_empty() {
            let y = h - ITEM_H - 20.0;
            let _ = write!(
                out,
                "<text x=\"{GAP}\" y=\"{:.1}\" fill=\"#555\">{}</text>",
                y - 6.0,
                escape(&self.loose_title)
            );
            for (i, item) in self.loose.iter().enumerate() {
                let x = GAP + i as f64 * (LOOSE_W + 10.0);
                let _ = write!(
                    out,
                    "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{LOOSE_W}\" height=\"{ITEM_H}\" rx=\"4\" fill=\"#fffbe8\" stroke=\"#a98\"/>",
                );
                for (k, l) in item.lines.iter().enumerate().take(2) {
                    out.push_str(&line(k, l, x + 8.0, y + 26.0 + 16.0 * k as f64));
                }
            }
        }
        out.push_str("</svg>");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_wrap_at_four_and_every_string_is_escaped() {
        let item = |a: &str| BoxItem {
            lines: vec![a.into(), "grey".into()],
        };
        let d = BoxDiagram {
            title: "t<".into(),
            groups: (0..5)
                .map(|i| BoxGroup {
                    title: format!("G{i} <b>"),
                    subtitle: "sub".into(),
                    items: vec![item("one"), item("two")],
                })
                .collect(),
            loose_title: "apart".into(),
            loose: vec![item("x & y")],
        };
        let svg = d.to_svg();
        // 5 groups: two rows of four columns; 10 inner boxes and 1 loose one.
        assert_eq!(svg.matches("<rect").count(), 5 + 10 + 1);
        assert!(svg.contains("G4 &lt;b&gt;") && !svg.contains("<b>"));
        assert!(svg.contains("x &amp; y") && svg.contains("<title>t&lt;</title>"));
        // Width of four columns, height of two rows of groups plus the loose row.
        let group_h = 56.0 + 2.0 * (ITEM_H + 8.0);
        let w = 4.0 * (GROUP_W + GAP) + GAP;
        let h = 2.0 * (group_h + GAP) + GAP + ITEM_H + 30.0;
        assert!(
            svg.contains(&format!("viewBox=\"0 0 {w:.0} {h:.0}\"")),
            "{svg}"
        );
        // The group's second line and an item's second line are grey.
        assert_eq!(svg.matches("fill=\"#555\">grey<").count(), 11);
    }
}
