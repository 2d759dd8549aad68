//! A floorplan chart: a grid of mesh stops (row 0 at the bottom, as the model numbers
//! them), each holding small labelled items (cores as squares, targets such as directory
//! slices or memory controllers as circles), optionally coloured by a value (a latency
//! heatmap drawn on the floorplan). Layout inference draws the inferred placement with
//! it; any picture of "what sits where on the chip" can.

use crate::escape;
use crate::svg::{ramp, trim};
use std::fmt::Write as _;

/// How a stop is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellState {
    /// A tile (may hold items).
    Tile,
    /// A tile known or inferred to be disabled (hatched grey).
    Disabled,
    /// Not a tile (a controller or I/O stop): light outline only.
    Other,
}

/// The shape of an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemShape {
    /// A core.
    Square,
    /// A target (slice, controller).
    Circle,
}

/// One thing drawn in a stop.
#[derive(Debug, Clone, PartialEq)]
pub struct FloorItem {
    /// Short text drawn on it (an OS id).
    pub label: String,
    /// Colour value (heatmap), if any.
    pub value: Option<f64>,
    /// Tooltip.
    pub tooltip: String,
    /// Drawn with a thick outline (the heatmap's source, a low-confidence placement).
    pub marked: bool,
    /// Square or circle.
    pub shape: ItemShape,
}

/// One stop.
#[derive(Debug, Clone, PartialEq)]
pub struct FloorCell {
    /// Column.
    pub x: u32,
    /// Row (0 at the bottom).
    pub y: u32,
    /// State.
    pub state: CellState,
    /// Small text in the corner (coordinates).
    pub label: String,
    /// Items in the stop.
    pub items: Vec<FloorItem>,
}

/// A floorplan.
#[derive(Debug, Clone, PartialEq)]
pub struct Floorplan {
    /// Title.
    pub title: String,
    /// Columns.
    pub cols: u32,
    /// Rows.
    pub rows: u32,
    /// Stops that have something to show (others are drawn as empty tiles).
    pub cells: Vec<FloorCell>,
    /// Unit of the values.
    pub unit: String,
    /// Lines of text under the plan (wrapped to the picture's width).
    pub notes: Vec<String>,
    /// Colour scale (low, high); values outside are drawn at the ends. None: the values'
    /// own range.
    pub range: Option<(f64, f64)>,
}

const CELL: f64 = 84.0;

/// Splits text into lines of at most `width` characters at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push(line);
    }
    out
}

impl Floorplan {
    /// The SVG document.
    pub fn to_svg(&self) -> String {
        let (ml, mt) = (40.0, 46.0);
        let legend_w = 120.0;
        let w = (ml + CELL * f64::from(self.cols) + legend_w).max(560.0);
        let per_line = ((w - ml - 10.0) / 6.2) as usize;
        let lines: Vec<String> = self
            .notes
            .iter()
            .flat_map(|n| wrap(n, per_line.max(20)))
            .collect();
        let notes_h = 16.0 * lines.len() as f64;
        let h = mt + CELL * f64::from(self.rows) + 30.0 + notes_h;
        let vals: Vec<f64> = self
            .cells
            .iter()
            .flat_map(|c| c.items.iter().filter_map(|i| i.value))
            .filter(|v| v.is_finite())
            .collect();
        let (lo, hi) = match self.range {
            Some(r) if !vals.is_empty() => r,
            _ => (
                vals.iter().copied().fold(f64::INFINITY, f64::min),
                vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ),
        };
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w:.0} {h:.0}\" width=\"{w:.0}\" height=\"{h:.0}\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\">\
             <title>{}</title><text x=\"{:.1}\" y=\"20\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"600\">{}</text>\
             <defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#999\" stroke-width=\"2\"/></pattern></defs>",
            escape(&self.title),
            (ml + CELL * f64::from(self.cols)) / 2.0,
            escape(&self.title)
        );
        let origin = |x: u32, y: u32| -> (f64, f64) {
            (
                ml + f64::from(x) * CELL,
                mt + f64::from(self.rows.saturating_sub(1).saturating_sub(y)) * CELL,
            )
        };
        // Empty tiles first, then the given cells over them.
        for y in 0..self.rows {
            for x in 0..self.cols {
                if self.cells.iter().any(|c| c.x == x && c.y == y) {
                    continue;
                }
                let (cx, cy) = origin(x, y);
                let _ = write!(
                    out,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"5\" fill=\"#fafafa\" stroke=\"#bbb\"/>",
                    cx + 3.0,
                    cy + 3.0,
                    CELL - 6.0,
                    CELL - 6.0
                );
            }
        }
        for c in &self.cells {
            if c.x >= self.cols || c.y >= self.rows {
                continue;
            }
            let (cx, cy) = origin(c.x, c.y);
            let (fill, stroke, dash) = match c.state {
                CellState::Tile => ("#f2f2f2", "#888", ""),
                CellState::Disabled => ("url(#hatch)", "#888", ""),
                CellState::Other => ("#ffffff", "#bbb", " stroke-dasharray=\"4 3\""),
            };
            let _ = write!(
                out,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"5\" fill=\"{fill}\" stroke=\"{stroke}\"{dash}/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"8\" fill=\"#777\">{}</text>",
                cx + 3.0,
                cy + 3.0,
                CELL - 6.0,
                CELL - 6.0,
                cx + 7.0,
                cy + 13.0,
                escape(&c.label)
            );
            let squares: Vec<&FloorItem> = c
                .items
                .iter()
                .filter(|i| i.shape == ItemShape::Square)
                .collect();
            let circles: Vec<&FloorItem> = c
                .items
                .iter()
                .filter(|i| i.shape == ItemShape::Circle)
                .collect();
            let per_row = 3usize;
            let size = 22.0;
            for (k, it) in squares.iter().enumerate() {
                let ix = cx + 8.0 + (k % per_row) as f64 * (size + 3.0);
                let iy = cy + 18.0 + (k / per_row) as f64 * (size + 3.0);
                let (fill, text) = item_colour(it.value, lo, hi);
                let sw = if it.marked { 3 } else { 1 };
                let _ = write!(
                    out,
                    "<g><title>{}</title><rect x=\"{ix:.1}\" y=\"{iy:.1}\" width=\"{size:.1}\" height=\"{size:.1}\" fill=\"{fill}\" stroke=\"#223\" stroke-width=\"{sw}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\" text-anchor=\"middle\" fill=\"{text}\">{}</text></g>",
                    escape(&it.tooltip),
                    ix + size / 2.0,
                    iy + size / 2.0 + 3.0,
                    escape(&it.label)
                );
            }
            for (k, it) in circles.iter().enumerate() {
                let r = 8.0;
                let ix = cx + CELL - 14.0 - k as f64 * (2.0 * r + 2.0);
                let iy = cy + CELL - 14.0;
                let (fill, text) = item_colour(it.value, lo, hi);
                let (fill, text) = if it.value.is_none() {
                    ("#9bc59d".to_string(), "#000")
                } else {
                    (fill, text)
                };
                let sw = if it.marked { 3 } else { 1 };
                let _ = write!(
                    out,
                    "<g><title>{}</title><circle cx=\"{ix:.1}\" cy=\"{iy:.1}\" r=\"{r}\" fill=\"{fill}\" stroke=\"#333\" stroke-width=\"{sw}\"/><text x=\"{ix:.1}\" y=\"{:.1}\" font-size=\"7\" text-anchor=\"middle\" fill=\"{text}\">{}</text></g>",
                    escape(&it.tooltip),
                    iy + 2.5,
                    escape(&it.label)
                );
            }
        }
        // Axis labels.
        for x in 0..self.cols {
            let (cx, _) = origin(x, 0);
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">x={x}</text>",
                cx + CELL / 2.0,
                mt + CELL * f64::from(self.rows) + 14.0
            );
        }
        for y in 0..self.rows {
            let (_, cy) = origin(0, y);
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#555\">y={y}</text>",
                ml - 4.0,
                cy + CELL / 2.0 + 4.0
            );
        }
        if lo.is_finite() {
            let lx = ml + CELL * f64::from(self.cols) + 20.0;
            for k in 0..10 {
                let _ = write!(
                    out,
                    "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"14\" height=\"12\" fill=\"{}\"/>",
                    mt + (9 - k) as f64 * 12.0,
                    ramp(k as f64 / 9.0)
                );
            }
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\">{} {}</text><text x=\"{:.1}\" y=\"{:.1}\">{} {}</text>",
                lx + 18.0,
                mt + 10.0,
                escape(&trim((hi * 10.0).round() / 10.0)),
                escape(&self.unit),
                lx + 18.0,
                mt + 118.0,
                escape(&trim((lo * 10.0).round() / 10.0)),
                escape(&self.unit)
            );
        }
        for (k, n) in lines.iter().enumerate() {
            let _ = write!(
                out,
                "<text x=\"{ml:.1}\" y=\"{:.1}\" font-size=\"11\">{}</text>",
                mt + CELL * f64::from(self.rows) + 34.0 + 16.0 * k as f64,
                escape(n)
            );
        }
        out.push_str("</svg>");
        out
    }
}

fn item_colour(v: Option<f64>, lo: f64, hi: f64) -> (String, &'static str) {
    match v {
        Some(v) if v.is_finite() => {
            let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
            (ramp(t), if t > 0.55 { "#fff" } else { "#000" })
        }
        _ => ("#4a78b5".to_string(), "#fff"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Floorplan {
        Floorplan {
            title: "Inferred <floorplan>".into(),
            cols: 2,
            rows: 2,
            cells: vec![
                FloorCell {
                    x: 0,
                    y: 0,
                    state: CellState::Tile,
                    label: "(0,0)".into(),
                    items: vec![
                        FloorItem {
                            label: "0".into(),
                            value: None,
                            tooltip: "CPU 0 (source)".into(),
                            marked: true,
                            shape: ItemShape::Square,
                        },
                        FloorItem {
                            label: "s0".into(),
                            value: None,
                            tooltip: "slice 0".into(),
                            marked: false,
                            shape: ItemShape::Circle,
                        },
                    ],
                },
                FloorCell {
                    x: 1,
                    y: 1,
                    state: CellState::Tile,
                    label: "(1,1)".into(),
                    items: vec![FloorItem {
                        label: "1".into(),
                        value: Some(42.5),
                        tooltip: "CPU 1: 42.5 ns".into(),
                        marked: false,
                        shape: ItemShape::Square,
                    }],
                },
                FloorCell {
                    x: 1,
                    y: 0,
                    state: CellState::Disabled,
                    label: "(1,0)".into(),
                    items: Vec::new(),
                },
            ],
            unit: "ns".into(),
            notes: vec!["residual 0.4 ns & <more>".into()],
            range: None,
        }
    }

    #[test]
    fn floorplan_snapshot() {
        insta::assert_snapshot!(plan().to_svg());
    }

    #[test]
    fn long_notes_wrap_at_spaces() {
        let w = wrap("aaa bbb ccc ddd", 7);
        assert_eq!(w, vec!["aaa bbb", "ccc ddd"]);
        assert_eq!(
            wrap("averyveryverylongword x", 5),
            vec!["averyveryverylongword", "x"]
        );
    }

    #[test]
    fn floorplan_escapes_and_places_rows_bottom_up() {
        let svg = plan().to_svg();
        assert!(svg.contains("Inferred &lt;floorplan&gt;"));
        assert!(svg.contains("residual 0.4 ns &amp; &lt;more&gt;"));
        assert!(!svg.contains("<more>"));
        // Row 1 is drawn above row 0: the tile at (1,1) has the smaller SVG y.
        let y_of = |label: &str| -> f64 {
            let i = svg.find(&format!(">{label}</text>")).unwrap();
            let pre = &svg[..i];
            let j = pre.rfind("y=\"").unwrap();
            pre[j + 3..].split('"').next().unwrap().parse().unwrap()
        };
        assert!(y_of("(1,1)") < y_of("(0,0)"));
        assert_eq!(svg.matches("<circle").count(), 1);
        assert!(svg.contains("url(#hatch)"));
    }
}
