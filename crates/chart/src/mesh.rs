//! A mesh chip picture: sockets side by side, each a grid of stops (row 0 at the bottom)
//! with the links between neighbours (thick red when slow), and in each stop a row of
//! small squares at the top (cores: numbered, coloured, with a tooltip), circles at the
//! bottom left (cache slices; one may be highlighted) and small bars at the bottom right
//! (memory controllers). The model's floorplan is drawn with it.

use crate::escape;
use std::fmt::Write as _;

const CELL: f64 = 90.0;
const MARGIN: f64 = 40.0;

/// Where a stop is: socket, column, row (0 at the bottom).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    /// Socket.
    pub socket: u32,
    /// Column.
    pub x: u32,
    /// Row (0 at the bottom).
    pub y: u32,
}

/// A stop: its place, fill colour and a small name in its corner.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshStop {
    /// Where.
    pub at: At,
    /// Fill colour (CSS).
    pub fill: String,
    /// Name drawn small in the top left corner.
    pub name: String,
    /// Link to the east neighbour: None, or Some(slow).
    pub east: Option<bool>,
    /// Link to the north neighbour: None, or Some(slow).
    pub north: Option<bool>,
}

/// A mark in a stop (a core, a slice, a controller).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// The stop it is in.
    pub at: At,
    /// Fill colour (CSS).
    pub fill: String,
    /// Tooltip.
    pub tooltip: String,
    /// Text drawn on it (cores: their number).
    pub label: String,
    /// Drawn with a thick outline.
    pub highlight: bool,
}

/// A mesh chip picture.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MeshPicture {
    /// Title (the SVG's `<title>`).
    pub title: String,
    /// Sockets, side by side.
    pub sockets: u32,
    /// Rows of each socket's grid.
    pub rows: u32,
    /// Columns of each socket's grid.
    pub cols: u32,
    /// Cores a stop holds at most (sizes the squares).
    pub per_stop: u32,
    /// Stops.
    pub stops: Vec<MeshStop>,
    /// Squares in a row at the top of their stop, in order.
    pub squares: Vec<Mark>,
    /// Circles at the bottom left of their stop, in order.
    pub circles: Vec<Mark>,
    /// Small bars at the bottom right of their stop, three to a row.
    pub bars: Vec<Mark>,
    /// The line under the picture.
    pub legend: String,
}

impl MeshPicture {
    fn centre(&self, at: At) -> (f64, f64) {
        let w_socket = f64::from(self.cols) * CELL;
        (
            MARGIN + f64::from(at.socket) * (w_socket + MARGIN) + (f64::from(at.x) + 0.5) * CELL,
            MARGIN + (f64::from(self.rows.saturating_sub(1 + at.y)) + 0.5) * CELL,
        )
    }

    /// The SVG document; every string escaped.
    pub fn to_svg(&self) -> String {
        let w_socket = f64::from(self.cols) * CELL;
        let sockets = self.sockets.max(1);
        let width = MARGIN * 2.0 + w_socket * f64::from(sockets) + MARGIN * f64::from(sockets - 1);
        let height = MARGIN * 2.0 + f64::from(self.rows) * CELL + 60.0;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="10">"#
        );
        let _ = writeln!(s, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
        for st in &self.stops {
            let (cx, cy) = self.centre(st.at);
            let _ = writeln!(
                s,
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="6" fill="{}" stroke="#999"/>"##,
                cx - CELL * 0.42,
                cy - CELL * 0.42,
                CELL * 0.84,
                CELL * 0.84,
                escape(&st.fill)
            );
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" fill="#777" font-size="8">{}</text>"##,
                cx - CELL * 0.40,
                cy - CELL * 0.30,
                escape(&st.name)
            );
            for (link, dx, dy) in [(st.east, 1.0, 0.0), (st.north, 0.0, -1.0)] {
                if let Some(slow) = link {
                    let _ = writeln!(
                        s,
                        r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="{}"/>"#,
                        cx + dx * CELL * 0.42,
                        cy + dy * CELL * 0.42,
                        cx + dx * CELL * 0.58,
                        cy + dy * CELL * 0.58,
                        if slow { "#c0392b" } else { "#555" },
                        if slow { 4 } else { 2 }
                    );
                }
            }
        }
        let slot = |at: At, counts: &mut Vec<(At, u32)>| -> u32 {
            match counts.iter_mut().find(|(a, _)| *a == at) {
                Some((_, k)) => {
                    *k += 1;
                    *k - 1
                }
                None => {
                    counts.push((at, 1));
                    0
                }
            }
        };
        let n = self.per_stop.max(1);
        let size = (CELL * 0.7 / f64::from(n)).min(22.0);
        let mut counts = Vec::new();
        for m in &self.squares {
            let k = slot(m.at, &mut counts);
            let (cx, cy) = self.centre(m.at);
            let x = cx - CELL * 0.35 + f64::from(k) * (CELL * 0.7 / f64::from(n));
            let y = cy - CELL * 0.22;
            let _ = writeln!(
                s,
                r##"<g><title>{}</title><rect x="{x:.1}" y="{y:.1}" width="{size:.1}" height="{size:.1}" fill="{}" stroke="#223"/><text x="{:.1}" y="{:.1}" font-size="7" fill="white">{}</text></g>"##,
                escape(&m.tooltip),
                escape(&m.fill),
                x + 1.5,
                y + size * 0.65,
                escape(&m.label)
            );
        }
        let mut counts = Vec::new();
        for m in &self.circles {
            let k = slot(m.at, &mut counts);
            let (cx, cy) = self.centre(m.at);
            let x = cx - CELL * 0.30 + f64::from(k) * 16.0;
            let y = cy + CELL * 0.12;
            let _ = writeln!(
                s,
                r##"<g><title>{}</title><circle cx="{x:.1}" cy="{y:.1}" r="7" fill="{}" stroke="#333" stroke-width="{}"/></g>"##,
                escape(&m.tooltip),
                escape(&m.fill),
                if m.highlight { 3 } else { 1 }
            );
        }
        let mut counts = Vec::new();
        for m in &self.bars {
            let k = slot(m.at, &mut counts);
            let (cx, cy) = self.centre(m.at);
            let x = cx + CELL * 0.05 + f64::from(k % 3) * 12.0;
            let y = cy + CELL * 0.05 + f64::from(k / 3) * 14.0;
            let _ = writeln!(
                s,
                r##"<g><title>{}</title><rect x="{x:.1}" y="{y:.1}" width="10" height="12" fill="{}" stroke="#333"/></g>"##,
                escape(&m.tooltip),
                escape(&m.fill)
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{MARGIN}" y="{:.1}" font-size="11">{}</text>"#,
            height - 30.0,
            escape(&self.legend)
        );
        s.push_str("</svg>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_links_and_marks_are_placed_and_escaped() {
        let at = |socket, x, y| At { socket, x, y };
        let mark = |a: At, t: &str| Mark {
            at: a,
            fill: "#123".into(),
            tooltip: t.into(),
            label: "<0>".into(),
            highlight: t == "hot",
        };
        let p = MeshPicture {
            title: "<chip>".into(),
            sockets: 2,
            rows: 1,
            cols: 2,
            per_stop: 2,
            stops: vec![
                MeshStop {
                    at: at(0, 0, 0),
                    fill: "#fff".into(),
                    name: "s0".into(),
                    east: Some(true),
                    north: None,
                },
                MeshStop {
                    at: at(1, 1, 0),
                    fill: "#fff".into(),
                    name: "s3".into(),
                    east: None,
                    north: Some(false),
                },
            ],
            squares: vec![mark(at(0, 0, 0), "a"), mark(at(0, 0, 0), "b")],
            circles: vec![mark(at(1, 1, 0), "hot")],
            bars: vec![mark(at(1, 1, 0), "mc")],
            legend: "x & y".into(),
        };
        let svg = p.to_svg();
        assert!(svg.contains("<title>&lt;chip&gt;</title>") && svg.contains("x &amp; y"));
        assert!(svg.contains("&lt;0&gt;") && !svg.contains("<0>"));
        // One slow link (east of s0), one normal one.
        assert_eq!(
            svg.matches("stroke=\"#c0392b\" stroke-width=\"4\"").count(),
            1
        );
        assert_eq!(svg.matches("stroke=\"#555\" stroke-width=\"2\"").count(), 1);
        // Two sockets of 2 columns: width = 2 margins + 4 cells + 1 margin between.
        assert!(svg.contains("width=\"480\""), "{svg}");
        // The second square of a stop sits half a stop's row further right.
        assert!(
            svg.contains("<rect x=\"53.5\"") && svg.contains("<rect x=\"85.0\""),
            "{svg}"
        );
        assert!(svg.contains("stroke-width=\"3\""));
    }
}
