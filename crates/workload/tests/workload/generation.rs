//! The road network: deterministic, connected, and shaped like a city's streets.

use super::graph;
use numalab_workload::graph::{GraphSpec, GraphStats, GRID_SPACING_M, HIGHWAY_KMH};

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let a = graph(42, 30_000);
    let b = graph(42, 30_000);
    assert_eq!(a.offsets, b.offsets);
    assert_eq!(a.adj, b.adj);
    assert_eq!(a.fingerprint(), b.fingerprint());
    let c = graph(43, 30_000);
    assert_ne!(a.fingerprint(), c.fingerprint());
    assert_ne!(a.adj, c.adj);
}

/// Pins the generator: a change to it changes every graph, and results measured on
/// two machines (or two numalab versions) would no longer be comparable. If this fails
/// on purpose, say so in the changelog and update the value.
#[test]
fn generator_output_is_pinned() {
    let g = graph(1, 10_000);
    assert_eq!(format!("{:016x}", g.fingerprint()), "511ac3abf04d251e");
}

#[test]
fn shape_is_a_street_network() {
    let g = graph(7, 100_000);
    let s = GraphStats::of(&g.view(), true);
    assert_eq!(s.nodes, 100_000);
    assert_eq!(s.components, Some(1), "every intersection is reachable");
    assert!(
        (2.7..3.3).contains(&s.mean_degree),
        "mean degree {}",
        s.mean_degree
    );
    let share = |d: usize| s.degree_histogram.get(d).copied().unwrap_or(0) as f64 / 1e5;
    assert_eq!(share(0), 0.0, "no isolated nodes");
    assert!((0.01..0.10).contains(&share(1)), "dead ends {}", share(1));
    assert!((0.15..0.35).contains(&share(2)), "degree 2: {}", share(2));
    assert!((0.35..0.55).contains(&share(3)), "T junctions {}", share(3));
    assert!((0.15..0.35).contains(&share(4)), "crossings {}", share(4));
    let high: f64 = (5..s.degree_histogram.len()).map(share).sum();
    assert!(high > 0.0 && high < 0.05, "degree 5+: {high}");
    assert!(
        s.degree_histogram.len() <= 11,
        "max degree {}",
        s.degree_histogram.len() - 1
    );
    // A 100 m street at 30-70 km/h takes 4-16 s; the median is a residential street.
    assert!(s.weight_min_ms >= 1);
    assert!(
        (7_000..14_000).contains(&s.weight_median_ms),
        "median {} ms",
        s.weight_median_ms
    );
}

#[test]
fn highways_are_faster_per_metre() {
    let spec = GraphSpec {
        seed: 3,
        nodes: 40_000,
    };
    let g = graph(spec.seed, spec.nodes);
    let v = g.view();
    let w = v.width();
    let mut express = 0;
    for u in 0..v.nodes() {
        for e in v.edges(u).chunks_exact(2) {
            let (ux, uy) = v.xy(u);
            let (tx, ty) = v.xy(e[0]);
            let cells = ux.abs_diff(tx) + uy.abs_diff(ty);
            if cells == 8 {
                express += 1;
                // 8 cells of ~100 m at 110 km/h: about 26 s; local roads need 40+ s.
                let ideal_ms = 8.0 * GRID_SPACING_M * 3600.0 / HIGHWAY_KMH;
                assert!(
                    (e[1] as f32) < ideal_ms * 1.3,
                    "express edge {u}->{} takes {} ms",
                    e[0],
                    e[1]
                );
            } else {
                assert!(
                    cells <= 2,
                    "edge {u}->{} spans {cells} cells (width {w})",
                    e[0]
                );
            }
        }
    }
    assert!(express > 100, "only {express} express edges");
}
