//! Strip charts: one horizontal strip of dots per row (a node per dot), the row's
//! median and a band around it, chosen dots coloured and labelled. For a distribution
//! over many nodes where the few that stand out must be named.

use super::*;
use crate::escape;
use std::fmt::Write as _;

/// How a dot is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DotKind {
    /// An ordinary member.
    Normal,
    /// Stands out for the worse (drawn in the warning colour).
    Worse,
    /// Stands out for the better.
    Better,
}

/// One dot of a strip.
#[derive(Debug, Clone, PartialEq)]
pub struct Dot {
    /// Position on the x axis.
    pub x: f64,
    /// Kind.
    pub kind: DotKind,
    /// Written next to the dot (outliers); `None`: unlabelled. Labelled dots also get a
    /// tooltip with `tip`.
    pub label: Option<String>,
    /// Tooltip text of a labelled dot.
    pub tip: String,
}

/// One row: a distribution.
#[derive(Debug, Clone, PartialEq)]
pub struct Strip {
    /// Row label (left of the strip).
    pub label: String,
    /// The dots.
    pub dots: Vec<Dot>,
    /// The median line.
    pub median: Option<f64>,
    /// A band (low, high) drawn behind the dots (e.g. the median +- 1.4826 MAD).
    pub band: Option<(f64, f64)>,
}

/// Strips sharing one x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct StripChart {
    /// Title.
    pub title: String,
    /// Axis label.
    pub x_label: String,
    /// The rows.
    pub strips: Vec<Strip>,
    /// Labels drawn at most per strip (the first ones in `dots` order).
    pub max_labels: usize,
}

/// A dot's vertical offset in [-1, 1]: deterministic, spread (golden-ratio sequence).
fn jitter(i: usize) -> f64 {
    let f = (i as f64 * 0.618_033_988_75).fract();
    2.0 * f - 1.0
}

impl StripChart {
    /// The SVG document.
    pub fn to_svg(&self) -> String {
        let row = 56.0;
        let (ml, mr, mt) = (200.0, 30.0, 40.0);
        let pw = 520.0;
        let w = ml + pw + mr;
        let h = mt + row * self.strips.len().max(1) as f64 + 46.0;
        let values = self.strips.iter().flat_map(|s| {
            s.dots
                .iter()
                .map(|d| d.x)
                .chain(s.median)
                .chain(s.band.into_iter().flat_map(|(a, b)| [a, b]))
        });
        let (mut lo, mut hi) = values
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        if !lo.is_finite() {
            (lo, hi) = (0.0, 1.0);
        }
        if hi - lo < 1e-12 {
            (lo, hi) = (lo - 1.0, hi + 1.0);
        }
        let pad = (hi - lo) * 0.05;
        let (lo, hi) = (lo - pad, hi + pad);
        let tx = |v: f64| ml + (v - lo) / (hi - lo) * pw;
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w:.0} {h:.0}\" width=\"{w:.0}\" height=\"{h:.0}\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\">\
             <title>{}</title><text x=\"{:.1}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"600\">{}</text>",
            escape(&self.title),
            w / 2.0,
            escape(&fit(&self.title, w))
        );
        let bottom = h - 40.0;
        for t in linear_ticks(lo, hi) {
            let x = tx(t);
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" stroke=\"#ddd\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                mt - 4.0,
                bottom + 14.0,
                escape(&fmt_axis(t, AxisFormat::Number))
            );
        }
        for (r, s) in self.strips.iter().enumerate() {
            let y0 = mt + r as f64 * row;
            let mid = y0 + row / 2.0;
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                ml - 8.0,
                mid + 4.0,
                escape(&s.label)
            );
            if let Some((a, b)) = s.band.filter(|(a, b)| a.is_finite() && b.is_finite()) {
                let _ = write!(
                    out,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\" fill-opacity=\"0.18\"/>",
                    tx(a.min(b)),
                    y0 + 6.0,
                    (tx(a.max(b)) - tx(a.min(b))).max(0.5),
                    row - 12.0,
                    PALETTE[0]
                );
            }
            if let Some(m) = s.median.filter(|m| m.is_finite()) {
                let _ = write!(
                    out,
                    "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#000\" stroke-dasharray=\"4 3\"/>",
                    y0 + 4.0,
                    y0 + row - 4.0,
                    x = tx(m)
                );
            }
            // Ordinary dots first, then the marked ones on top of them.
            let mut labelled = 0;
            for pass in [false, true] {
                for (i, d) in s.dots.iter().enumerate() {
                    if !d.x.is_finite() || (d.kind != DotKind::Normal) != pass {
                        continue;
                    }
                    let (x, y) = (tx(d.x), mid + jitter(i) * (row / 2.0 - 12.0));
                    let colour = match d.kind {
                        DotKind::Normal => PALETTE[0],
                        DotKind::Worse => PALETTE[1],
                        DotKind::Better => PALETTE[2],
                    };
                    let r = if pass { 4.0 } else { 2.5 };
                    match d.label.as_ref().filter(|_| labelled < self.max_labels) {
                        Some(label) => {
                            labelled += 1;
                            let _ = write!(
                                out,
                                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{colour}\"><title>{}</title></circle><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{colour}\">{}</text>",
                                escape(&d.tip),
                                x + 5.0,
                                y - 5.0,
                                escape(label)
                            );
                        }
                        None => {
                            let _ = write!(
                                out,
                                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{colour}\" fill-opacity=\"{}\"/>",
                                if pass { "1" } else { "0.6" }
                            );
                        }
                    }
                }
            }
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text></svg>",
            ml + pw / 2.0,
            h - 8.0,
            escape(&self.x_label)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(x: f64, kind: DotKind, label: Option<&str>) -> Dot {
        Dot {
            x,
            kind,
            label: label.map(str::to_string),
            tip: format!("tip {x}"),
        }
    }

    #[test]
    fn dots_labels_and_escaping() {
        let c = StripChart {
            title: "Bandwidth <triad>".into(),
            x_label: "deviation (%)".into(),
            strips: vec![Strip {
                label: "triad & co".into(),
                dots: vec![
                    dot(0.0, DotKind::Normal, None),
                    dot(1.0, DotKind::Normal, None),
                    dot(-20.0, DotKind::Worse, Some("<n2>")),
                    dot(9.0, DotKind::Better, Some("n9")),
                    dot(f64::NAN, DotKind::Normal, None),
                ],
                median: Some(0.0),
                band: Some((-1.0, 1.0)),
            }],
            max_labels: 1,
        };
        let svg = c.to_svg();
        // Four finite dots; the NaN one is left out.
        assert_eq!(svg.matches("<circle").count(), 4, "{svg}");
        // One label at most: the first marked dot, escaped.
        assert!(svg.contains("&lt;n2&gt;") && !svg.contains("<n2>"));
        assert!(!svg.contains(">n9<"));
        assert!(svg.contains("Bandwidth &lt;triad&gt;") && svg.contains("triad &amp; co"));
        // The worse dot is left of the median line, in the warning colour.
        assert!(svg.contains(PALETTE[1]) && svg.contains("stroke-dasharray"));
    }

    #[test]
    fn an_empty_chart_is_still_a_document() {
        let c = StripChart {
            title: "t".into(),
            x_label: "x".into(),
            strips: vec![],
            max_labels: 3,
        };
        let svg = c.to_svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
