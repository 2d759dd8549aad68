//! Charts as inline SVG: line charts (linear or log axes, uncertainty bands, marked
//! positions such as cache sizes or topology boundaries), heatmaps (node-pair and
//! core-to-core matrices) and bar charts of ratios with intervals. Colours come from
//! the Okabe-Ito palette, which stays distinguishable for colour-blind readers.

use crate::escape;
use std::fmt::Write as _;

const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
];

/// How axis values are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisFormat {
    /// Plain numbers with SI-like compaction (1.2k, 3M).
    Number,
    /// Bytes with binary prefixes (4 KiB, 32 MiB).
    Bytes,
}

fn fmt_axis(v: f64, f: AxisFormat) -> String {
    match f {
        AxisFormat::Bytes => {
            numalab_schema::units::bytes(v.max(0.0).round() as u64).replace(' ', "\u{a0}")
        }
        AxisFormat::Number => {
            let a = v.abs();
            if a >= 1e9 {
                format!("{:.3}G", v / 1e9)
                    .trim_end_matches('0')
                    .trim_end_matches('.')
                    .to_string()
                    .replace(".G", "G")
            } else if a >= 1e6 {
                format!("{}M", trim(v / 1e6))
            } else if a >= 1e4 {
                format!("{}k", trim(v / 1e3))
            } else {
                trim(v)
            }
        }
    }
}

pub(crate) fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// A title cut to about `width` pixels at 15 px (the whole title stays in `<title>`).
fn fit(title: &str, width: f64) -> String {
    let max = ((width - 20.0) / 8.0).max(10.0) as usize;
    if title.chars().count() <= max {
        title.to_string()
    } else {
        format!(
            "{}\u{2026}",
            title.chars().take(max - 1).collect::<String>()
        )
    }
}

/// "Nice" tick positions covering [lo, hi] on a linear axis.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let span = hi - lo;
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).ceil() * step;
    let mut out = Vec::new();
    let mut t = start;
    while t <= hi + step * 1e-9 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    out
}

/// Tick positions on a log axis: powers of `base` within [lo, hi], thinned to <= 8.
fn log_ticks(lo: f64, hi: f64, base: f64) -> Vec<f64> {
    let a = lo.log(base).ceil() as i32;
    let b = hi.log(base).floor() as i32;
    let n = (b - a + 1).max(1);
    let every = ((n as f64) / 8.0).ceil() as i32;
    (a..=b)
        .filter(|e| (e - a) % every.max(1) == 0)
        .map(|e| base.powi(e))
        .collect()
}

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

/// A heatmap of a matrix (None = not measured).
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    /// Title.
    pub title: String,
    /// Row labels (e.g. CPU or node ids).
    pub rows: Vec<String>,
    /// Column labels.
    pub cols: Vec<String>,
    /// Values, `values[r][c]`.
    pub values: Vec<Vec<Option<f64>>>,
    /// Unit of the values, shown in the legend.
    pub unit: String,
    /// Label of the row axis.
    pub row_label: String,
    /// Label of the column axis.
    pub col_label: String,
    /// Colour by this many classes on a log scale (legend: each class's lower bound)
    /// instead of a continuous linear ramp: latencies spanning orders of magnitude
    /// (core-to-core within a core vs across sockets) stay distinguishable.
    pub log_classes: Option<usize>,
}

pub(crate) fn ramp(t: f64) -> String {
    // Light yellow (low) to dark blue (high).
    let t = t.clamp(0.0, 1.0);
    let a = (255.0, 247.0, 188.0);
    let b = (8.0, 48.0, 107.0);
    let c = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", c(a.0, b.0), c(a.1, b.1), c(a.2, b.2))
}

/// Where a value falls on a heatmap's colour scale, in [0, 1].
#[derive(Debug, Clone, Copy)]
struct ColorScale {
    lo: f64,
    hi: f64,
    classes: Option<usize>,
}

impl ColorScale {
    fn position(&self, v: f64) -> f64 {
        match self.classes {
            None => {
                if self.hi > self.lo {
                    (v - self.lo) / (self.hi - self.lo)
                } else {
                    0.5
                }
            }
            Some(n) => self.class(v) as f64 / (n.max(2) - 1) as f64,
        }
    }

    fn class(&self, v: f64) -> usize {
        let n = self.classes.unwrap_or(10).max(2);
        if self.hi <= self.lo || v <= self.lo || self.lo <= 0.0 {
            return 0;
        }
        let t = (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln());
        ((t * n as f64).floor() as usize).min(n - 1)
    }

    fn bound(&self, class: usize) -> f64 {
        let n = self.classes.unwrap_or(10).max(2) as f64;
        (self.lo.ln() + (self.hi.ln() - self.lo.ln()) * class as f64 / n).exp()
    }
}

impl Heatmap {
    /// A heatmap with a linear colour ramp.
    pub fn new(
        title: &str,
        rows: Vec<String>,
        cols: Vec<String>,
        values: Vec<Vec<Option<f64>>>,
        unit: &str,
    ) -> Self {
        Heatmap {
            title: title.into(),
            rows,
            cols,
            values,
            unit: unit.into(),
            row_label: String::new(),
            col_label: String::new(),
            log_classes: None,
        }
    }

    /// A core-to-core heatmap: `cpus` in matrix order, cells at `positions` (display
    /// order) with `value(i, j)` between the i-th and j-th CPUs, coloured by ten
    /// log-scale classes (latencies within a core and across sockets differ by orders
    /// of magnitude), unmeasured pairs grey.
    pub fn cpu_matrix(
        title: &str,
        cpus: &[u32],
        positions: &[usize],
        value: impl Fn(usize, usize) -> Option<f64>,
    ) -> Self {
        let labels: Vec<String> = positions.iter().map(|&p| cpus[p].to_string()).collect();
        let values = positions
            .iter()
            .map(|&a| positions.iter().map(|&b| value(a, b)).collect())
            .collect();
        let mut h = Heatmap::new(title, labels.clone(), labels, values, "ns");
        h.row_label = "CPU".into();
        h.col_label = "CPU".into();
        h.log_classes = Some(10);
        h
    }

    /// The SVG document.
    pub fn to_svg(&self) -> String {
        let n_r = self.rows.len().max(1);
        let n_c = self.cols.len().max(1);
        let cell = (560.0 / n_c.max(n_r) as f64).clamp(2.0, 48.0);
        let (ml, mt) = (60.0, 46.0);
        let w = (ml + cell * n_c as f64 + 110.0).max(380.0);
        let vals: Vec<f64> = self
            .values
            .iter()
            .flatten()
            .flatten()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        let lo = vals
            .iter()
            .copied()
            .filter(|v| self.log_classes.is_none() || *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let scale = ColorScale {
            lo,
            hi,
            // One value (or none) needs no classes: the linear legend says it.
            classes: self.log_classes.filter(|_| lo > 0.0 && hi > lo),
        };
        let legend_h = match scale.classes {
            Some(n) => n as f64 * 16.0 + 10.0,
            None => 130.0,
        };
        let h = (mt + cell * n_r as f64 + 40.0).max(mt + legend_h);
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w:.0} {h:.0}\" width=\"{w:.0}\" height=\"{h:.0}\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\">\
             <title>{}</title><text x=\"{:.1}\" y=\"20\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"600\">{}</text>",
            escape(&self.title),
            w / 2.0,
            escape(&fit(&self.title, w))
        );
        let label_every = ((14.0 / cell).ceil() as usize).max(1);
        for (r, row) in self.values.iter().enumerate() {
            for (c, v) in row.iter().enumerate() {
                let x = ml + c as f64 * cell;
                let y = mt + r as f64 * cell;
                let (fill, title) = match v {
                    Some(v) if v.is_finite() => (
                        ramp(scale.position(*v)),
                        format!(
                            "{} -> {}: {v:.1} {}",
                            axis_item(&self.row_label, self.rows.get(r)),
                            axis_item(&self.col_label, self.cols.get(c)),
                            self.unit
                        ),
                    ),
                    _ => ("#f0f0f0".to_string(), "not measured".to_string()),
                };
                let _ = write!(
                    out,
                    "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cell:.2}\" height=\"{cell:.2}\" fill=\"{fill}\"><title>{}</title></rect>",
                    escape(&title)
                );
                if cell >= 30.0 {
                    if let Some(v) = v {
                        let dark = hi > lo && scale.position(*v) > 0.55;
                        let _ = write!(
                            out,
                            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"10\" fill=\"{}\">{}</text>",
                            x + cell / 2.0,
                            y + cell / 2.0 + 3.5,
                            if dark { "#fff" } else { "#000" },
                            escape(&trim((v * 10.0).round() / 10.0))
                        );
                    }
                }
            }
        }
        for (i, l) in self
            .rows
            .iter()
            .enumerate()
            .filter(|(i, _)| i % label_every == 0)
        {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                ml - 4.0,
                mt + (i as f64 + 0.5) * cell + 4.0,
                escape(l)
            );
        }
        for (i, l) in self
            .cols
            .iter()
            .enumerate()
            .filter(|(i, _)| i % label_every == 0)
        {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                ml + (i as f64 + 0.5) * cell,
                mt - 4.0,
                escape(l)
            );
        }
        let _ = write!(
            out,
            "<text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            mt + cell * n_r as f64 / 2.0,
            mt + cell * n_r as f64 / 2.0,
            escape(&self.row_label),
            ml + cell * n_c as f64 / 2.0,
            mt + cell * n_r as f64 + 24.0,
            escape(&self.col_label)
        );
        if let (true, Some(n)) = (lo.is_finite(), scale.classes) {
            let lx = ml + cell * n_c as f64 + 20.0;
            for k in 0..n {
                let y = mt + k as f64 * 16.0;
                let _ = write!(
                    out,
                    "<rect x=\"{lx:.1}\" y=\"{y:.1}\" width=\"14\" height=\"14\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\">&#8805; {} {}</text>",
                    ramp(k as f64 / (n.max(2) - 1) as f64),
                    lx + 18.0,
                    y + 11.0,
                    escape(&trim((scale.bound(k) * 10.0).round() / 10.0)),
                    escape(&self.unit)
                );
            }
        } else if lo.is_finite() {
            let lx = ml + cell * n_c as f64 + 20.0;
            for k in 0..10 {
                let t = k as f64 / 9.0;
                let _ = write!(
                    out,
                    "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"14\" height=\"12\" fill=\"{}\"/>",
                    mt + (9 - k) as f64 * 12.0,
                    ramp(t)
                );
            }
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\">{} {}</text><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                lx + 18.0,
                mt + 10.0,
                escape(&trim(hi)),
                escape(&self.unit),
                lx + 18.0,
                mt + 118.0,
                escape(&trim(lo))
            );
        }
        out.push_str("</svg>");
        out
    }
}

/// "CPU 3" from the axis label "CPU" and the item "3".
fn axis_item(label: &str, item: Option<&String>) -> String {
    let item = item.map(String::as_str).unwrap_or_default();
    if label.is_empty() {
        item.to_string()
    } else {
        format!("{label} {item}")
    }
}

/// One bar with an optional interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Label.
    pub label: String,
    /// Value.
    pub value: f64,
    /// Interval (low, high), if known.
    pub interval: Option<(f64, f64)>,
    /// Drawn in the highlight colour (the best value, the recommendation).
    pub highlight: bool,
    /// Why there is no value (drawn instead of the bar; `value` is ignored).
    pub missing: Option<String>,
}

impl Bar {
    /// A bar with a value.
    pub fn new(label: &str, value: f64, interval: Option<(f64, f64)>) -> Self {
        Bar {
            label: label.into(),
            value,
            interval,
            highlight: false,
            missing: None,
        }
    }

    /// A bar without a value, and why.
    pub fn missing(label: &str, why: &str) -> Self {
        Bar {
            missing: Some(why.into()),
            ..Bar::new(label, f64::NAN, None)
        }
    }
}

/// Horizontal bars, e.g. ratios between two machines with a reference line at 1.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// Title.
    pub title: String,
    /// Axis label.
    pub x_label: String,
    /// Bars.
    pub bars: Vec<Bar>,
    /// A reference line (1.0 for ratios).
    pub reference: Option<f64>,
}

impl BarChart {
    /// The SVG document.
    pub fn to_svg(&self) -> String {
        let row = 24.0;
        let (ml, mr, mt) = (230.0, 60.0, 40.0);
        let pw = 440.0;
        let w = ml + pw + mr;
        let h = mt + row * self.bars.len().max(1) as f64 + 40.0;
        let maxv = self
            .bars
            .iter()
            .flat_map(|b| std::iter::once(b.value).chain(b.interval.map(|i| i.1)))
            .chain(self.reference)
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max)
            .max(1e-12);
        let tx = |v: f64| ml + v.max(0.0) / maxv * pw;
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w:.0} {h:.0}\" width=\"{w:.0}\" height=\"{h:.0}\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\">\
             <title>{}</title><text x=\"{:.1}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"600\">{}</text>",
            escape(&self.title),
            w / 2.0,
            escape(&fit(&self.title, w))
        );
        for (i, b) in self.bars.iter().enumerate() {
            let y = mt + i as f64 * row;
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                ml - 6.0,
                y + 15.0,
                escape(&b.label)
            );
            if let Some(why) = &b.missing {
                let _ = write!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#a33\">{}</text>",
                    ml + 4.0,
                    y + 15.0,
                    escape(why)
                );
                continue;
            }
            if b.value.is_finite() {
                // The value label goes right of both the bar and its interval.
                let right = b.interval.map_or(b.value, |i| i.1.max(b.value));
                let _ = write!(
                    out,
                    "<rect x=\"{ml}\" y=\"{:.1}\" width=\"{:.1}\" height=\"16\" fill=\"{}\"><title>{}</title></rect><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    y + 3.0,
                    tx(b.value) - ml,
                    if b.highlight { PALETTE[2] } else { PALETTE[0] },
                    escape(&match b.interval {
                        Some((lo, hi)) => format!("{}: {} [{}, {}]", b.label, trim(b.value), trim(lo), trim(hi)),
                        None => format!("{}: {}", b.label, trim(b.value)),
                    }),
                    tx(right) + 4.0,
                    y + 15.0,
                    escape(&trim((b.value * 100.0).round() / 100.0))
                );
            }
            if let Some((lo, hi)) = b.interval {
                let _ = write!(
                    out,
                    "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#000\"/>",
                    tx(lo),
                    y + 11.0,
                    tx(hi),
                    y + 11.0
                );
            }
        }
        if let Some(r) = self.reference {
            let x = tx(r);
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#b00\" stroke-dasharray=\"4 3\"/>",
                mt - 4.0,
                h - 36.0
            );
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text></svg>",
            ml + pw / 2.0,
            h - 10.0,
            escape(&self.x_label)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice() {
        assert_eq!(linear_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(log_ticks(4096.0, 1048576.0, 2.0).first(), Some(&4096.0));
        assert!(log_ticks(1.0, 1e30, 2.0).len() <= 8);
    }

    #[test]
    fn line_chart_snapshot() {
        let mut c = LineChart::new("Latency <by> working set", "working set", "latency (ns)");
        c.x_log = true;
        c.x_format = AxisFormat::Bytes;
        let mut s = Series::new(
            "4 KiB pages",
            vec![
                (4096.0, 1.2),
                (65536.0, 4.0),
                (1048576.0, 12.0),
                (67108864.0, 95.0),
            ],
        );
        s.band = vec![
            (4096.0, 1.1, 1.4),
            (65536.0, 3.8, 4.3),
            (1048576.0, 11.0, 13.0),
            (67108864.0, 90.0, 101.0),
        ];
        c.series.push(s);
        c.marks.push((32768.0, "L1d 32 KiB".into()));
        insta::assert_snapshot!(c.to_svg());
    }

    #[test]
    fn heatmap_snapshot() {
        let h = Heatmap {
            title: "Core-to-core latency".into(),
            rows: vec!["0".into(), "1".into()],
            cols: vec!["0".into(), "1".into()],
            values: vec![vec![None, Some(59.2)], vec![Some(59.2), None]],
            unit: "ns".into(),
            row_label: "CPU".into(),
            col_label: "CPU".into(),
            log_classes: None,
        };
        insta::assert_snapshot!(h.to_svg());
    }

    #[test]
    fn bar_chart_snapshot() {
        let b = BarChart {
            title: "A / B".into(),
            x_label: "ratio".into(),
            bars: vec![
                Bar::new("triad bandwidth", 1.9, Some((1.8, 2.0))),
                Bar::new("idle latency", 0.8, None),
            ],
            reference: Some(1.0),
        };
        insta::assert_snapshot!(b.to_svg());
    }

    #[test]
    fn log_classes_keep_small_differences_visible_and_list_bounds() {
        // 10 ns inside a core, 100 ns across a package, 1000 ns across sockets: a
        // linear ramp would paint the first two nearly alike.
        let mut h = Heatmap::new(
            "c2c",
            vec!["0".into(), "1".into(), "2".into()],
            vec!["0".into(), "1".into(), "2".into()],
            vec![
                vec![None, Some(10.0), Some(1000.0)],
                vec![Some(10.0), None, Some(100.0)],
                vec![Some(1000.0), Some(100.0), None],
            ],
            "ns",
        );
        h.row_label = "CPU".into();
        h.col_label = "CPU".into();
        let linear = h.to_svg();
        h.log_classes = Some(4);
        let classes = h.to_svg();
        let fill_of = |svg: &str, tip: &str| -> String {
            let end = svg.find(tip).unwrap();
            let start = svg[..end].rfind("fill=\"").unwrap() + 6;
            svg[start..start + 7].to_string()
        };
        let (a, b) = ("CPU 0 -&gt; CPU 1: 10.0 ns", "CPU 1 -&gt; CPU 2: 100.0 ns");
        assert_ne!(fill_of(&classes, a), fill_of(&classes, b));
        assert_eq!(classes.matches("&#8805; ").count(), 4);
        assert!(classes.contains("&#8805; 10 ns") && classes.contains("&#8805; 316.2 ns"));
        assert!(!linear.contains("&#8805;"));
    }

    #[test]
    fn bars_highlight_and_missing_values() {
        let mut best = Bar::new("V=<40>", 4.0, Some((3.5, 4.5)));
        best.highlight = true;
        let svg = BarChart {
            title: "sweep".into(),
            x_label: "speedup".into(),
            bars: vec![
                Bar::new("V=10", 1.0, None),
                best,
                Bar::missing("V=80", "build failed"),
            ],
            reference: None,
        }
        .to_svg();
        assert!(svg.contains("V=&lt;40&gt;: 4 [3.5, 4.5]"));
        assert_eq!(svg.matches(PALETTE[2]).count(), 1);
        assert!(svg.contains(">build failed<"));
        assert_eq!(svg.matches("<rect").count(), 2);
    }

    #[test]
    fn dashed_references_and_explicit_ticks() {
        let mut c = LineChart::new("speedup", "threads", "x");
        c.x_log = true;
        c.x_ticks = vec![1.0, 2.0, 4.0, 8.0];
        c.series
            .push(Series::new("measured", vec![(1.0, 1.0), (8.0, 5.0)]));
        c.series
            .push(Series::reference("ideal", vec![(1.0, 1.0), (8.0, 8.0)]));
        let svg = c.to_svg();
        // The reference line and its legend key are dashed, nothing else.
        assert_eq!(svg.matches("stroke-dasharray=\"5 4\"").count(), 2);
        // The legend sits under the plot: one row, the image 18 px taller.
        assert!(svg.contains("viewBox=\"0 0 720 418\""));
        // Points are drawn for the measured line only.
        assert_eq!(svg.matches("<circle").count(), 2);
        for t in ["1", "2", "4", "8"] {
            assert!(
                svg.contains(&format!("text-anchor=\"middle\">{t}</text>")),
                "{t}"
            );
        }
    }

    #[test]
    fn long_titles_are_cut_to_the_width_and_kept_whole_in_the_tooltip() {
        let title = "speedup of /a/very/long/path/to/a/program --with --many --options --that --go --on --and --on --forever";
        let svg = LineChart::new(title, "x", "y").to_svg();
        assert!(svg.contains(&format!("<title>{title}</title>")));
        let shown = svg
            .split("font-weight=\"600\">")
            .nth(1)
            .and_then(|t| t.split('<').next())
            .unwrap();
        assert!(
            shown.ends_with('\u{2026}') && shown.chars().count() <= 88,
            "{shown}"
        );
        let small = Heatmap::new(
            title,
            vec!["0".into()],
            vec!["0".into()],
            vec![vec![Some(1.0)]],
            "ns",
        )
        .to_svg();
        assert!(
            small.contains("width=\"380\""),
            "a 1x1 heatmap keeps room for its title"
        );
    }

    #[test]
    fn empty_chart_says_no_data() {
        let c = LineChart::new("t", "x", "y");
        assert!(c.to_svg().contains("no data"));
    }
}
