//! The floorplan of a modeled machine as a self-contained SVG: stops and links, cores
//! (numbered, coloured by NUMA node), SLC slices, memory controllers, slow boundary links,
//! and optionally a latency heatmap drawn on the cores. Every string that reaches the
//! SVG (preset names, descriptions, labels) is escaped.

use crate::model::Model;
use crate::records::LatencyHeatmap;
use numalab_chart::{At, Mark, MeshPicture, MeshStop};

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

/// The floorplan as a mesh picture (drawn by `numalab_chart`).
pub fn picture(model: &Model, heat: Option<&LatencyHeatmap>) -> MeshPicture {
    let g = &model.geo;
    let at = |stop: u32| {
        let (socket, x, y) = g.coords(stop);
        At { socket, x, y }
    };
    // Stops, coloured by the node of their cores; links to the east and north (drawn
    // once), slow when they cost more than the preset's link.
    let link = |stop: u32, d: u32| {
        g.neighbor(stop, crate::geometry::Dir::from_index(d))
            .map(|_| {
                let base = if d == 0 {
                    model.spec.noc.link_cycles_x
                } else {
                    model.spec.noc.link_cycles_y
                };
                g.link_cost(stop * 4 + d) > base
            })
    };
    let stops = (0..g.stops())
        .map(|stop| {
            let node = model.cores.iter().find(|c| c.stop == stop).map(|c| c.node);
            MeshStop {
                at: at(stop),
                fill: node
                    .map_or("#f4f4f4", |n| NODE_COLORS[n as usize % NODE_COLORS.len()])
                    .to_string(),
                name: model.stop_name(stop),
                east: link(stop, 0),
                north: link(stop, 2),
            }
        })
        .collect();
    let (lo, hi) = heat.map_or((0.0, 1.0), |h| {
        (h.min_cycles, h.max_cycles.max(h.min_cycles + 1e-9))
    });
    let squares = model
        .cores
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (fill, tooltip) =
                match heat.and_then(|h| h.cells.iter().find(|cell| cell.core == i)) {
                    Some(cell) => (
                        heat_color((cell.latency_cycles - lo) / (hi - lo)),
                        format!(
                            "core {i}: {:.1} cycles, {:.1} ns",
                            cell.latency_cycles, cell.latency_ns
                        ),
                    ),
                    None => ("#4a78b5".to_string(), format!("core {i}, node {}", c.node)),
                };
            Mark {
                at: at(c.stop),
                fill,
                tooltip,
                label: i.to_string(),
                highlight: false,
            }
        })
        .collect();
    let circles = model
        .slices
        .iter()
        .enumerate()
        .map(|(i, sl)| {
            let target = heat.is_some_and(|h| h.home_slice == i);
            Mark {
                at: at(sl.stop),
                fill: if target { "#f1c40f" } else { "#9bc59d" }.into(),
                tooltip: format!("SLC slice {i} (node {})", sl.node),
                label: String::new(),
                highlight: target,
            }
        })
        .collect();
    let bars = model
        .mcs
        .iter()
        .enumerate()
        .map(|(i, mc)| {
            let pool = &model.pools[mc.pool];
            Mark {
                at: at(mc.stop),
                fill: if pool.kind == "DRAM" {
                    "#8e6c8a"
                } else {
                    "#c0392b"
                }
                .into(),
                tooltip: format!(
                    "memory controller {i}: {} ({}), {} channel(s)",
                    pool.name, pool.kind, mc.channels
                ),
                label: String::new(),
                highlight: false,
            }
        })
        .collect();
    let legend = match heat {
        Some(h) => format!(
            "{} | heatmap to {}: {:.1}-{:.1} cycles (blue-red), spread {:.1} cycles",
            model.label, h.target, h.min_cycles, h.max_cycles, h.spread_cycles
        ),
        None => format!(
            "{} | squares: cores (colour: NUMA node) | green circles: SLC/directory slices | bars: memory controllers | red links: slow boundary links",
            model.label
        ),
    };
    MeshPicture {
        title: format!("{} ({})", model.label, model.spec.description),
        sockets: g.sockets,
        rows: g.rows,
        cols: g.cols,
        per_stop: model.spec.cores.per_stop,
        stops,
        squares,
        circles,
        bars,
        legend,
    }
}

/// The floorplan SVG.
pub fn floorplan(model: &Model, heat: Option<&LatencyHeatmap>) -> String {
    picture(model, heat).to_svg()
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
