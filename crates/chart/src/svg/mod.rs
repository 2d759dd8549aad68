//! Charts as inline SVG: line charts (linear or log axes, uncertainty bands, marked
//! positions such as cache sizes or topology boundaries), heatmaps (node-pair and
//! core-to-core matrices) and bar charts of ratios with intervals. Colours come from
//! the Okabe-Ito palette, which stays distinguishable for colour-blind readers.

mod bar;
mod heatmap;
mod line;
mod strip;

pub use bar::{Bar, BarChart};
pub(crate) use heatmap::ramp;
pub use heatmap::Heatmap;
pub use line::{LineChart, Series};
pub use strip::{Dot, DotKind, Strip, StripChart};

pub(crate) const PALETTE: [&str; 8] = [
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

pub(crate) fn fmt_axis(v: f64, f: AxisFormat) -> String {
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
pub(crate) fn fit(title: &str, width: f64) -> String {
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
pub(crate) fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
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
pub(crate) fn log_ticks(lo: f64, hi: f64, base: f64) -> Vec<f64> {
    let a = lo.log(base).ceil() as i32;
    let b = hi.log(base).floor() as i32;
    let n = (b - a + 1).max(1);
    let every = ((n as f64) / 8.0).ceil() as i32;
    (a..=b)
        .filter(|e| (e - a) % every.max(1) == 0)
        .map(|e| base.powi(e))
        .collect()
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
            cell_titles: Vec::new(),
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
    fn cpu_blocks_carry_their_own_tooltips_escaped() {
        let h = Heatmap::cpu_blocks(
            "blocks",
            vec!["0".into(), "4".into()],
            vec![vec![Some(8.0), Some(120.0)], vec![Some(120.0), None]],
            vec![
                vec!["CPUs 0-3 <inside>: median 8 ns".into(), "a -> b".into()],
                vec!["b -> a".into(), "CPUs 4-7: no pair measured".into()],
            ],
        );
        let svg = h.to_svg();
        assert!(svg.contains("<title>CPUs 0-3 &lt;inside&gt;: median 8 ns</title>"));
        assert!(svg.contains("<title>a -&gt; b</title>"));
        assert!(svg.contains("<title>CPUs 4-7: no pair measured</title>"));
        assert!(!svg.contains("not measured</title>"));
        assert_eq!(svg.matches("<rect").count(), 4 + 10);
        assert!(svg.contains(">CPU block (lowest CPU)<"));
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
