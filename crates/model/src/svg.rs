//! The floorplan of a modeled machine as a self-contained SVG: stops and links, cores
//! (numbered, coloured by NUMA node), SLC slices, memory controllers, slow boundary links,
//! and optionally a latency heatmap drawn on the cores. Every string that reaches the
//! SVG (preset names, descriptions, labels) is escaped.

use crate::model::Model;
use crate::records::LatencyHeatmap;
use std::fmt::Write;

const CELL: f64 = 90.0;
const MARGIN: f64 = 40.0;
const NODE_COLORS: [&str; 8] = [
    "#dbe9f6", "#fde2c8", "#d9f0d3", "#eadcf2", "#f9d6d5", "#fff3bf", "#d5f0f0", "#e8e8e8",
];

/// The one escaper every picture and page of numalab uses.
pub use numalab_chart::escape;

/// A colour from blue (low) to red (high) for `t` in [0, 1].
fn heat_color(t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let r = (40.0 + 215.0 * t) as u8;
    let b = (255.0 - 215.0 * t) as u8;
    let g = (120.0 + 80.0 * (1.0 - (2.0 * t - 1.0).abs())) as u8;
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The floorplan SVG.
pub fn floorplan(model: &Model, heat: Option<&LatencyHeatmap>) -> String {
    let g = &model.geo;
    let w_socket = f64::from(g.cols) * CELL;
    let width = MARGIN * 2.0 + w_socket * f64::from(g.sockets) + MARGIN * f64::from(g.sockets - 1);
    let height = MARGIN * 2.0 + f64::from(g.rows) * CELL + 60.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="10">"#
    );
    let title = format!("{} ({})", model.label, model.spec.description);
    let _ = writeln!(s, "<title>{}</title>", escape(&title));
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    // Stop centre; y grows upward in the model, downward in SVG.
    let centre = |stop: u32| -> (f64, f64) {
        let (k, x, y) = g.coords(stop);
        (
            MARGIN + f64::from(k) * (w_socket + MARGIN) + (f64::from(x) + 0.5) * CELL,
            MARGIN + (f64::from(g.rows - 1 - y) + 0.5) * CELL,
        )
    };
    // Stops, coloured by the node of their cores.
    for stop in 0..g.stops() {
        let (cx, cy) = centre(stop);
        let node = model.cores.iter().find(|c| c.stop == stop).map(|c| c.node);
        let fill = node.map_or("#f4f4f4", |n| NODE_COLORS[n as usize % NODE_COLORS.len()]);
        let _ = writeln!(
            s,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="6" fill="{fill}" stroke="#999"/>"##,
            cx - CELL * 0.42,
            cy - CELL * 0.42,
            CELL * 0.84,
            CELL * 0.84
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="#777" font-size="8">{}</text>"##,
            cx - CELL * 0.40,
            cy - CELL * 0.30,
            escape(&model.stop_name(stop))
        );
        // Links to the east and north (drawn once), thick when slow.
        for (d, dx, dy) in [(0u32, 1.0, 0.0), (2u32, 0.0, -1.0)] {
            if let Some(_t) = g.neighbor(stop, crate::geometry::Dir::from_index(d)) {
                let cost = g.link_cost(stop * 4 + d);
                let base = if d == 0 {
                    model.spec.noc.link_cycles_x
                } else {
                    model.spec.noc.link_cycles_y
                };
                let slow = cost > base;
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
    // Heat range.
    let (lo, hi) = heat.map_or((0.0, 1.0), |h| {
        (h.min_cycles, h.max_cycles.max(h.min_cycles + 1e-9))
    });
    // Cores: small squares in a row at the top of the stop.
    let mut per_stop: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    for (i, c) in model.cores.iter().enumerate() {
        let k = per_stop.entry(c.stop).or_default();
        let (cx, cy) = centre(c.stop);
        let n = model.spec.cores.per_stop.max(1);
        let size = (CELL * 0.7 / f64::from(n)).min(22.0);
        let x = cx - CELL * 0.35 + f64::from(*k) * (CELL * 0.7 / f64::from(n));
        let y = cy - CELL * 0.22;
        *k += 1;
        let (fill, tip) = match heat.and_then(|h| h.cells.iter().find(|cell| cell.core == i)) {
            Some(cell) => (
                heat_color((cell.latency_cycles - lo) / (hi - lo)),
                format!(
                    "core {i}: {:.1} cycles, {:.1} ns",
                    cell.latency_cycles, cell.latency_ns
                ),
            ),
            None => ("#4a78b5".to_string(), format!("core {i}, node {}", c.node)),
        };
        let _ = writeln!(
            s,
            r##"<g><title>{}</title><rect x="{x:.1}" y="{y:.1}" width="{size:.1}" height="{size:.1}" fill="{fill}" stroke="#223"/><text x="{:.1}" y="{:.1}" font-size="7" fill="white">{i}</text></g>"##,
            escape(&tip),
            x + 1.5,
            y + size * 0.65
        );
    }
    // Slices: circles at the bottom left of the stop.
    let mut per_stop: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    for (i, sl) in model.slices.iter().enumerate() {
        let k = per_stop.entry(sl.stop).or_default();
        let (cx, cy) = centre(sl.stop);
        let x = cx - CELL * 0.30 + f64::from(*k) * 16.0;
        let y = cy + CELL * 0.12;
        *k += 1;
        let target = heat.is_some_and(|h| h.home_slice == i);
        let _ = writeln!(
            s,
            r##"<g><title>{}</title><circle cx="{x:.1}" cy="{y:.1}" r="7" fill="{}" stroke="#333" stroke-width="{}"/></g>"##,
            escape(&format!("SLC slice {i} (node {})", sl.node)),
            if target { "#f1c40f" } else { "#9bc59d" },
            if target { 3 } else { 1 }
        );
    }
    // Memory controllers: rectangles at the bottom right.
    let mut per_stop: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    for (i, mc) in model.mcs.iter().enumerate() {
        let k = per_stop.entry(mc.stop).or_default();
        let (cx, cy) = centre(mc.stop);
        let x = cx + CELL * 0.05 + f64::from(*k % 3) * 12.0;
        let y = cy + CELL * 0.05 + f64::from(*k / 3) * 14.0;
        *k += 1;
        let pool = &model.pools[mc.pool];
        let _ = writeln!(
            s,
            r##"<g><title>{}</title><rect x="{x:.1}" y="{y:.1}" width="10" height="12" fill="{}" stroke="#333"/></g>"##,
            escape(&format!(
                "memory controller {i}: {} ({}), {} channel(s)",
                pool.name, pool.kind, mc.channels
            )),
            if pool.kind == "DRAM" {
                "#8e6c8a"
            } else {
                "#c0392b"
            }
        );
    }
    let legend_y = height - 30.0;
    let mut legend = format!(
        "{} | squares: cores (colour: NUMA node) | green circles: SLC/directory slices | bars: memory controllers | red links: slow boundary links",
        model.label
    );
    if let Some(h) = heat {
        legend = format!(
            "{} | heatmap to {}: {:.1}-{:.1} cycles (blue-red), spread {:.1} cycles",
            model.label, h.target, h.min_cycles, h.max_cycles, h.spread_cycles
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{MARGIN}" y="{legend_y:.1}" font-size="11">{}</text>"#,
        escape(&legend)
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_draws_every_device() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
        let mut m = Model::load("neoverse-v1-64", &[]).unwrap();
        m.label = "<script>alert(1)</script>".into();
        let svg = floorplan(&m, None);
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;"));
        assert_eq!(svg.matches("<circle").count(), 64);
        assert_eq!(svg.matches("memory controller ").count(), 8);
        assert_eq!(svg.matches("<title>core ").count(), 64);
        // Quadrant boundary links are drawn slow: 8 rows cross column 4, 8 columns cross row 4.
        assert_eq!(
            svg.matches("stroke=\"#c0392b\" stroke-width=\"4\"").count(),
            16
        );
    }
}
