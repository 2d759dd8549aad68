//! Bar charts: one bar per label with an interval, a reference line, missing bars named.

use super::*;
use crate::escape;
use std::fmt::Write as _;

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
