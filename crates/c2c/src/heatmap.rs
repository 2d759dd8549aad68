//! Heatmaps of a latency matrix: in the terminal (readable without colour) and as SVG.
//!
//! Each cell is one pair (or, on big machines in the terminal, the median of a block of
//! pairs). Latencies are binned into ten classes on a log scale between the smallest and
//! the largest value; the terminal shows the class as a digit (0 = fastest, 9 = slowest)
//! so the picture survives `NO_COLOR`, a pipe or a screen reader, and adds a background
//! colour when colour is on. Rows and columns follow the OS CPU order or the inferred
//! groups (`--order group`), which makes blocks visible even when the OS numbers SMT
//! siblings far apart.

use crate::matrix::LatencyMatrix;
use crate::structure::Structure;
use std::fmt::Write as _;

/// Row and column order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Matrix order (OS CPU ids).
    Os,
    /// By inferred group, coarsest level first.
    Group,
}

/// Positions of the matrix in display order.
pub fn order(m: &LatencyMatrix, structure: Option<&Structure>, order: Order) -> Vec<usize> {
    match (order, structure) {
        (Order::Group, Some(s)) => {
            let levels: Vec<Vec<Vec<u32>>> = s
                .levels
                .iter()
                .map(|l| l.groups.iter().map(|g| g.cpus.clone()).collect())
                .collect();
            order_by_groups(m.cpus(), &levels)
        }
        _ => (0..m.n()).collect(),
    }
}

pub use numalab_records::c2c::order_by_groups;

/// Ten log-scale classes between `lo` and `hi`.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    lo: f64,
    hi: f64,
}

impl Scale {
    /// The scale of a matrix's measured values (`None` if nothing is measured).
    pub fn of(m: &LatencyMatrix) -> Option<Scale> {
        let v = m.measured_values();
        let lo = v
            .iter()
            .copied()
            .filter(|x| *x > 0.0)
            .fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0f64, f64::max);
        (lo.is_finite() && hi > 0.0).then_some(Scale { lo, hi })
    }

    /// Class 0-9 of a value.
    pub fn class(&self, v: f64) -> usize {
        if self.hi <= self.lo || v <= self.lo {
            return 0;
        }
        let t = (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln());
        ((t * 10.0).floor() as usize).min(9)
    }

    /// Lower bound of a class, ns.
    pub fn bound(&self, class: usize) -> f64 {
        (self.lo.ln() + (self.hi.ln() - self.lo.ln()) * class as f64 / 10.0).exp()
    }
}

/// RGB of a class: light yellow (fast) to dark red (slow).
fn rgb(class: usize) -> (u8, u8, u8) {
    const P: [(u8, u8, u8); 10] = [
        (255, 255, 204),
        (255, 237, 160),
        (254, 217, 118),
        (254, 178, 76),
        (253, 141, 60),
        (252, 78, 42),
        (227, 26, 28),
        (189, 0, 38),
        (128, 0, 38),
        (77, 0, 30),
    ];
    P[class.min(9)]
}

/// The terminal heatmap: at most `max_cells` columns (blocks of pairs beyond that).
pub fn terminal(m: &LatencyMatrix, positions: &[usize], color: bool, max_cells: usize) -> String {
    let Some(scale) = Scale::of(m) else {
        return "(no measured pair)\n".into();
    };
    let n = positions.len();
    let block = n.div_ceil(max_cells.max(1)).max(1);
    let cells = n.div_ceil(block);
    let label = |i: usize| -> String {
        let a = m.cpus()[positions[i * block]];
        if block == 1 {
            format!("{a}")
        } else {
            let b = m.cpus()[positions[((i + 1) * block).min(n) - 1]];
            format!("{a}..{b}")
        }
    };
    let width = (0..cells).map(|i| label(i).len()).max().unwrap_or(1);
    let mut out = String::new();
    for r in 0..cells {
        let _ = write!(out, "{:>width$} ", label(r));
        for c in 0..cells {
            let mut vals = Vec::new();
            for a in r * block..((r + 1) * block).min(n) {
                for b in c * block..((c + 1) * block).min(n) {
                    if let Some(v) = m.get(positions[a], positions[b]) {
                        vals.push(v);
                    }
                }
            }
            match numalab_stats::median(&vals) {
                Some(v) => {
                    let k = scale.class(v);
                    if color {
                        let (red, green, blue) = rgb(k);
                        let fg = if k >= 5 { "255;255;255" } else { "0;0;0" };
                        let _ = write!(
                            out,
                            "\x1b[48;2;{red};{green};{blue}m\x1b[38;2;{fg}m{k}\x1b[0m"
                        );
                    } else {
                        let _ = write!(out, "{k}");
                    }
                }
                None => out.push(if r == c && block == 1 { '\\' } else { '.' }),
            }
        }
        out.push('\n');
    }
    let _ = write!(out, "{:>width$} ", "");
    out.push_str("classes (log scale):");
    for k in 0..10 {
        let _ = write!(out, " {k}>={:.0}", scale.bound(k));
    }
    out.push_str(" ns; '.' not measured");
    if block > 1 {
        let _ = write!(out, "; each cell = median of {block}x{block} pairs");
    }
    out.push('\n');
    out
}

/// The widest terminal heatmap `numalab c2c` prints, in cells.
pub const TERMINAL_CELLS: usize = 64;

/// The terminal's picture of a matrix as `numalab c2c` prints it: the one pair of two
/// CPUs as a line ("CPU 1 <-> CPU 0: 52.0 ns", then a blank line; nothing when it
/// was not measured), else the [`terminal`] heatmap of at most [`TERMINAL_CELLS`].
pub fn picture(m: &LatencyMatrix, positions: &[usize], color: bool) -> String {
    match (m.n(), m.get(1, 0)) {
        (2, Some(v)) => format!(
            "CPU {} <-> CPU {}: {}\n\n",
            m.cpus()[1],
            m.cpus()[0],
            numalab_schema::units::nanos(v)
        ),
        (2, None) => String::new(),
        _ => terminal(m, positions, color, TERMINAL_CELLS),
    }
}

/// The SVG heatmap of a matrix measured with `variant` ("cas", "flag", "imported"),
/// titled "core-to-core latency (VARIANT), N CPUs".
pub fn titled_svg(m: &LatencyMatrix, positions: &[usize], variant: &str) -> String {
    svg(
        m,
        positions,
        &format!("core-to-core latency ({variant}), {} CPUs", m.n()),
    )
}

/// The one escaper every picture and page of numalab uses.
pub use numalab_chart::escape;

/// The heatmap as a chart: cells in display order, coloured by the same ten log-scale
/// classes as the terminal map, a tooltip per cell, unmeasured pairs grey.
pub fn chart(m: &LatencyMatrix, positions: &[usize], title: &str) -> numalab_chart::Heatmap {
    numalab_chart::Heatmap::cpu_matrix(title, m.cpus(), positions, |a, b| m.get(a, b))
}

/// A self-contained SVG heatmap with a title, CPU labels, a legend and a tooltip per cell.
pub fn svg(m: &LatencyMatrix, positions: &[usize], title: &str) -> String {
    chart(m, positions, title).to_svg()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_blocks() -> LatencyMatrix {
        // CPUs 0,2 and 1,3 are close (OS order interleaves the blocks).
        let mut m = LatencyMatrix::new(vec![0, 1, 2, 3]);
        for i in 0..4 {
            for j in 0..i {
                m.set(i, j, if i % 2 == j % 2 { 10.0 } else { 100.0 });
            }
        }
        m
    }

    #[test]
    fn terminal_map_is_readable_without_colour() {
        let m = two_blocks();
        let pos: Vec<usize> = (0..4).collect();
        let t = terminal(&m, &pos, false, 80);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "0 \\909");
        assert_eq!(lines[1], "1 9\\90");
        assert!(!t.contains('\x1b'));
        assert!(
            lines[4].contains("0>=10 ") && lines[4].contains("9>=79"),
            "{}",
            lines[4]
        );
        assert!(terminal(&m, &pos, true, 80).contains("\x1b[48;2;"));
    }

    #[test]
    fn group_order_puts_blocks_together_and_big_maps_are_blocked() {
        let m = two_blocks();
        let s = crate::structure::infer(&m);
        assert_eq!(s.levels.len(), 1, "{s:?}");
        let pos = order(&m, Some(&s), Order::Group);
        assert_eq!(pos, vec![0, 2, 1, 3]);
        let t = terminal(&m, &pos, false, 80);
        assert_eq!(t.lines().next().unwrap(), "0 \\099");
        let blocked = terminal(&m, &pos, false, 2);
        assert!(blocked.starts_with("0..2 09\n1..3 90\n"), "{blocked}");
        assert!(blocked.contains("median of 2x2 pairs"));
    }

    #[test]
    fn two_cpus_are_one_line_and_more_a_heatmap() {
        let mut pair = LatencyMatrix::new(vec![4, 9]);
        assert_eq!(picture(&pair, &[0, 1], false), "");
        pair.set(1, 0, 52.0);
        assert_eq!(
            picture(&pair, &[0, 1], false),
            "CPU 9 <-> CPU 4: 52.0 ns\n\n"
        );
        let m = two_blocks();
        let pos: Vec<usize> = (0..4).collect();
        assert_eq!(picture(&m, &pos, false), terminal(&m, &pos, false, 64));
        let s = titled_svg(&m, &pos, "flag");
        assert!(s.contains("core-to-core latency (flag), 4 CPUs"));
    }

    #[test]
    fn svg_escapes_every_string() {
        let m = two_blocks();
        let pos: Vec<usize> = (0..4).collect();
        let s = svg(&m, &pos, "a <b> & \"c\" 'd'");
        assert!(s.contains("a &lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;"));
        assert!(!s.contains("<b>"));
        assert_eq!(s.matches("<rect").count(), 16 + 10);
        assert!(s.contains("<title>CPU 1 -&gt; CPU 0: 100.0 ns</title>"));
        // The two latencies fall in the first and the last class.
        assert!(s.contains("&#8805; 10 ns") && s.contains("&#8805; 79.4 ns"));
    }
}
