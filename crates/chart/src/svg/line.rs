//! Line charts: series with bands, log or linear axes, marks and reference lines.

use super::*;
use crate::escape;
use std::fmt::Write as _;

/// One line of a line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y) points, drawn in order.
    pub points: Vec<(f64, f64)>,
    /// Optional (x, low, high) band drawn behind the line (intervals, p10-p90).
    pub band: Vec<(f64, f64, f64)>,
    /// Drawn dashed and without points (a reference such as "ideal speedup").
    pub dashed: bool,
}

impl Series {
    /// A series without a band.
    pub fn new(name: &str, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
            band: Vec::new(),
            dashed: false,
        }
    }

    /// A dashed reference line.
    pub fn reference(name: &str, points: Vec<(f64, f64)>) -> Self {
        Series {
            dashed: true,
            ..Series::new(name, points)
        }
    }
}

/// A line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Logarithmic x axis (base 2 for bytes, 10 otherwise).
    pub x_log: bool,
    /// Logarithmic y axis (base 10).
    pub y_log: bool,
    /// X tick format.
    pub x_format: AxisFormat,
    /// Lines.
    pub series: Vec<Series>,
    /// Vertical marks: (x, label), e.g. cache sizes or "package 1 starts".
    pub marks: Vec<(f64, String)>,
    /// Tick positions of the x axis (e.g. the thread counts measured); empty: automatic.
    pub x_ticks: Vec<f64>,
}

impl LineChart {
    /// An empty chart.
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Self {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_log: false,
            y_log: false,
            x_format: AxisFormat::Number,
            series: Vec::new(),
            marks: Vec::new(),
            x_ticks: Vec::new(),
        }
    }

    /// The SVG document.
    pub fn to_svg(&self) -> String {
        let (w, h) = (720.0, 400.0);
        let (ml, mr, mt, mb) = (70.0, 20.0, 40.0, 55.0);
        let pw = w - ml - mr;
        let ph = h - mt - mb;
        let pts = self
            .series
            .iter()
            .flat_map(|s| {
                s.points
                    .iter()
                    .map(|p| (p.0, p.1))
                    .chain(s.band.iter().flat_map(|b| [(b.0, b.1), (b.0, b.2)]))
            })
            .filter(|(x, y)| {
                x.is_finite()
                    && y.is_finite()
                    && (!self.x_log || *x > 0.0)
                    && (!self.y_log || *y > 0.0)
            });
        let (mut x0, mut x1, mut y0, mut y1) = (
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
        );
        for (x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        // The legend: entries in rows under the axis label, clear of the lines.
        let mut legend = Vec::new();
        let (mut lx, mut row) = (ml, 0usize);
        for s in &self.series {
            let width = 24.0 + 6.6 * s.name.chars().count() as f64;
            if lx + width > w - mr && lx > ml {
                row += 1;
                lx = ml;
            }
            legend.push((lx, row));
            lx += width + 14.0;
        }
        let rows = if self.series.is_empty() { 0 } else { row + 1 };
        let ht = h + rows as f64 * 18.0;
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {ht}\" width=\"{w}\" height=\"{ht}\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\">\
             <title>{}</title><text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"600\">{}</text>",
            escape(&self.title),
            w / 2.0,
            escape(&fit(&self.title, w))
        );
        if !x0.is_finite() {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#777\">no data</text></svg>",
                w / 2.0,
                h / 2.0
            );
            return out;
        }
        if !self.y_log && y0 > 0.0 {
            y0 = 0.0;
        }
        if x1 == x0 {
            x1 = x0 + 1.0;
        }
        if y1 == y0 {
            y1 = y0 + 1.0;
        }
        let xbase = if self.x_format == AxisFormat::Bytes {
            2.0
        } else {
            10.0
        };
        let tx = |x: f64| -> f64 {
            if self.x_log {
                ml + (x.ln() - x0.ln()) / (x1.ln() - x0.ln()) * pw
            } else {
                ml + (x - x0) / (x1 - x0) * pw
            }
        };
        let ty = |y: f64| -> f64 {
            if self.y_log {
                mt + ph - (y.ln() - y0.ln()) / (y1.ln() - y0.ln()) * ph
            } else {
                mt + ph - (y - y0) / (y1 - y0) * ph
            }
        };
        // Axes and grid.
        let _ = write!(out, "<rect x=\"{ml}\" y=\"{mt}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>");
        let xt = if !self.x_ticks.is_empty() {
            self.x_ticks
                .iter()
                .copied()
                .filter(|t| t.is_finite() && *t >= x0 && *t <= x1)
                .collect()
        } else if self.x_log {
            log_ticks(x0, x1, xbase)
        } else {
            linear_ticks(x0, x1)
        };
        for t in xt {
            let x = tx(t);
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{mt}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                mt + ph,
                mt + ph + 16.0,
                escape(&fmt_axis(t, self.x_format))
            );
        }
        let yt = if self.y_log {
            log_ticks(y0, y1, 10.0)
        } else {
            linear_ticks(y0, y1)
        };
        for t in yt {
            let y = ty(t);
            let _ = write!(
                out,
                "<line x1=\"{ml}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                ml + pw,
                ml - 6.0,
                y + 4.0,
                escape(&fmt_axis(t, AxisFormat::Number))
            );
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text><text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            ml + pw / 2.0,
            h - 12.0,
            escape(&self.x_label),
            mt + ph / 2.0,
            escape(&self.y_label)
        );
        // Marks (labels staggered so that close marks stay readable).
        for (k, (x, label)) in self.marks.iter().enumerate() {
            if !(x.is_finite() && *x >= x0 && *x <= x1) {
                continue;
            }
            let px = tx(*x);
            // Labels of marks near the right edge go to the left of the line.
            let (lx, anchor) = if px > ml + pw * 0.8 {
                (px - 3.0, "end")
            } else {
                (px + 3.0, "start")
            };
            let _ = write!(
                out,
                "<line x1=\"{px:.1}\" y1=\"{mt}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/><text x=\"{lx:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#555\" text-anchor=\"{anchor}\">{}</text>",
                mt + ph,
                mt + 12.0 + (k % 3) as f64 * 11.0,
                escape(label)
            );
        }
        // Bands, lines, legend.
        for (i, s) in self.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let band: Vec<&(f64, f64, f64)> = s
                .band
                .iter()
                .filter(|b| b.0.is_finite() && b.1.is_finite() && b.2.is_finite())
                .collect();
            if band.len() > 1 {
                let mut d = String::new();
                for (j, b) in band.iter().enumerate() {
                    let _ = write!(
                        d,
                        "{}{:.1},{:.1} ",
                        if j == 0 { "M" } else { "L" },
                        tx(b.0),
                        ty(b.2)
                    );
                }
                for b in band.iter().rev() {
                    let _ = write!(d, "L{:.1},{:.1} ", tx(b.0), ty(b.1));
                }
                let _ = write!(
                    out,
                    "<path d=\"{d}Z\" fill=\"{color}\" fill-opacity=\"0.15\" stroke=\"none\"/>"
                );
            }
            let pts: Vec<String> = s
                .points
                .iter()
                .filter(|(x, y)| {
                    x.is_finite()
                        && y.is_finite()
                        && (!self.x_log || *x > 0.0)
                        && (!self.y_log || *y > 0.0)
                })
                .map(|(x, y)| format!("{:.1},{:.1}", tx(*x), ty(*y)))
                .collect();
            let dash = if s.dashed {
                " stroke-dasharray=\"5 4\""
            } else {
                ""
            };
            let _ = write!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>",
                pts.join(" ")
            );
            for p in pts.iter().filter(|_| !s.dashed) {
                let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
                let _ = write!(
                    out,
                    "<circle cx=\"{x}\" cy=\"{y}\" r=\"2.5\" fill=\"{color}\"/>"
                );
            }
            let (kx, row) = legend[i];
            let ly = h + 4.0 + row as f64 * 18.0;
            let _ = write!(
                out,
                "<line x1=\"{kx:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/><text x=\"{:.1}\" y=\"{ly:.1}\">{}</text>",
                ly - 4.0,
                kx + 16.0,
                ly - 4.0,
                kx + 20.0,
                escape(&s.name)
            );
        }
        out.push_str("</svg>");
        out
    }
}
