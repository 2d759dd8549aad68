//! Heatmaps: a matrix of values on a colour ramp, with labelled rows and columns.

use super::*;
use crate::escape;
use std::fmt::Write as _;

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
    /// Tooltips of the cells, `cell_titles[r][c]`, in place of "row -> column: value"
    /// (empty: the default; a cell without its own title gets the default too).
    pub cell_titles: Vec<Vec<String>>,
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
pub(crate) struct ColorScale {
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
            cell_titles: Vec::new(),
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

    /// A core-to-core heatmap of CPU blocks (a big machine's matrix aggregated): one row
    /// and column per block in display order, labelled `labels` (short: a block's lowest
    /// CPU), `values[r][c]` what the cells aggregate (`None`: no pair measured), each
    /// cell's tooltip from `titles[r][c]` (the blocks' CPUs, the statistic, how many
    /// pairs); coloured like [`Heatmap::cpu_matrix`].
    pub fn cpu_blocks(
        title: &str,
        labels: Vec<String>,
        values: Vec<Vec<Option<f64>>>,
        titles: Vec<Vec<String>>,
    ) -> Self {
        let mut h = Heatmap::new(title, labels.clone(), labels, values, "ns");
        h.row_label = "CPU block (lowest CPU)".into();
        h.col_label = "CPU block (lowest CPU)".into();
        h.log_classes = Some(10);
        h.cell_titles = titles;
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
        // Column labels sit side by side: as far apart as the longest is wide (about
        // 6.5 px a character at 11 px), so "100" and "104" do not run together.
        let widest = self
            .cols
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0);
        let col_every = label_every.max(((widest as f64 * 6.5 + 3.0) / cell).ceil() as usize);
        for (r, row) in self.values.iter().enumerate() {
            for (c, v) in row.iter().enumerate() {
                let x = ml + c as f64 * cell;
                let y = mt + r as f64 * cell;
                let own = self.cell_titles.get(r).and_then(|t| t.get(c)).cloned();
                let (fill, title) = match v {
                    Some(v) if v.is_finite() => (
                        ramp(scale.position(*v)),
                        own.unwrap_or_else(|| {
                            format!(
                                "{} -> {}: {v:.1} {}",
                                axis_item(&self.row_label, self.rows.get(r)),
                                axis_item(&self.col_label, self.cols.get(c)),
                                self.unit
                            )
                        }),
                    ),
                    _ => (
                        "#f0f0f0".to_string(),
                        own.unwrap_or_else(|| "not measured".to_string()),
                    ),
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
            .filter(|(i, _)| i % col_every == 0)
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
pub(crate) fn axis_item(label: &str, item: Option<&String>) -> String {
    let item = item.map(String::as_str).unwrap_or_default();
    if label.is_empty() {
        item.to_string()
    } else {
        format!("{label} {item}")
    }
}
