//! Shortest paths: the fast searches equal textbook Dijkstra.

use super::graph;
use numalab_workload::graph::GraphRef;
use numalab_workload::reference::dijkstra;
use numalab_workload::route::{SearchState, UNREACHED};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[test]
fn bidirectional_equals_reference_on_many_pairs() {
    for (seed, nodes, sources) in [
        (1u64, 16u32, 16usize),
        (2, 103, 20),
        (3, 2_000, 15),
        (4, 12_000, 6),
    ] {
        let g = graph(seed, nodes);
        let v = g.view();
        let mut st = SearchState::new(nodes);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for _ in 0..sources {
            let s = rng.random_range(0..nodes);
            let reference = dijkstra(&v, s);
            for _ in 0..40 {
                let t = rng.random_range(0..nodes);
                let got = st.route(&v, s, t);
                let want = reference[t as usize].map(|d| d as u32);
                assert_eq!(got.distance_ms, want, "graph {nodes}/{seed}: {s} -> {t}");
                assert!(got.settled <= 2 * nodes, "settled {}", got.settled);
                // Two-way streets: the reverse trip takes as long.
                assert_eq!(st.route(&v, t, s).distance_ms, want);
            }
        }
    }
}

#[test]
fn one_to_many_equals_reference_and_state_is_reused() {
    let g = graph(5, 5_000);
    let v = g.view();
    let mut st = SearchState::new(v.nodes());
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for round in 0..20 {
        let s = rng.random_range(0..v.nodes());
        let k = rng.random_range(1..31);
        let mut targets: Vec<u32> = (0..k).map(|_| rng.random_range(0..v.nodes())).collect();
        targets.push(s); // the source itself
        targets.push(targets[0]); // a duplicate
        let mut out = vec![0; targets.len()];
        st.one_to_many(&v, s, &targets, &mut out);
        let reference = dijkstra(&v, s);
        for (t, d) in targets.iter().zip(&out) {
            assert_eq!(
                Some(*d as u64),
                reference[*t as usize],
                "round {round}: {s} -> {t}"
            );
        }
        // Interleave a route query: both searches must leave the state clean.
        let t = rng.random_range(0..v.nodes());
        assert_eq!(
            st.route(&v, s, t).distance_ms.map(u64::from),
            reference[t as usize]
        );
    }
}

#[test]
fn unreachable_and_trivial_queries() {
    // Two components: 0-1 and 2-3 (CSR by hand).
    let offsets = [0u32, 1, 2, 3, 4];
    let adj = [1u32, 5, 0, 5, 3, 7, 2, 7];
    let v = GraphRef::new(2, &offsets, &adj);
    let mut st = SearchState::new(4);
    assert_eq!(st.route(&v, 0, 1).distance_ms, Some(5));
    assert_eq!(st.route(&v, 0, 3).distance_ms, None);
    assert_eq!(st.route(&v, 2, 2).distance_ms, Some(0));
    let mut out = [0; 3];
    st.one_to_many(&v, 2, &[3, 0, 2], &mut out);
    assert_eq!(out, [7, UNREACHED, 0]);
    assert_eq!(st.route(&v, 3, 2).distance_ms, Some(7));
}
