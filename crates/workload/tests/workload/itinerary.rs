//! Itinerary planning: the evolutionary search improves its objectives, respects the
//! budgets, reports true objective values, and matches exhaustive search on tiny
//! instances.

use super::graph;
use numalab_workload::itinerary::{EaParams, Instance, Planner};
use numalab_workload::reference::{self, distance_matrix};
use numalab_workload::request::{Request, RequestGen, RequestKind, DAY_MS, MONEY_BUDGET};
use numalab_workload::route::SearchState;

fn instances(g: &numalab_workload::graph::GraphRef<'_>, seed: u64, n: usize) -> Vec<Instance> {
    let mut gen = RequestGen::new(g, seed, 0, 0.0);
    let mut req = Request::default();
    (0..n)
        .map(|_| {
            gen.next(&mut req);
            assert_eq!(req.kind, RequestKind::Itinerary);
            req.itinerary
        })
        .collect()
}

#[test]
fn search_improves_and_respects_the_budgets() {
    let g = graph(11, 40_000);
    let v = g.view();
    let mut search = SearchState::new(v.nodes());
    let mut planner = Planner::new(EaParams::default());
    let mut improved = 0;
    let list = instances(&v, 11, 8);
    for (n, inst) in list.iter().enumerate() {
        assert!((10..=30).contains(&inst.k));
        let a = planner.plan(&mut search, &v, inst);
        assert!(
            a.hypervolume >= a.initial_hypervolume,
            "instance {n}: hypervolume fell from {} to {}",
            a.initial_hypervolume,
            a.hypervolume
        );
        if a.hypervolume > a.initial_hypervolume * 1.05 {
            improved += 1;
        }
        assert!(a.best_value > 0, "instance {n}: no feasible non-empty tour");
        assert!(a.searches as usize <= inst.k + 1);
        assert_eq!(a.evaluations, 40 * 251);
        // Every tour on the front is feasible and its figures are the true ones,
        // recomputed with reference Dijkstra distances.
        let m = distance_matrix(&v, inst);
        let front = planner.front();
        assert_eq!(front.len() as u32, a.front_size);
        for (genome, e) in &front {
            let check = reference::evaluate(inst, &m, genome);
            assert_eq!(
                check, *e,
                "instance {n}: reported objectives are not the tour's"
            );
            assert!(check.total_ms <= DAY_MS && check.money <= MONEY_BUDGET);
            let visited: Vec<usize> = genome.tour(inst.k).collect();
            let mut dedup = visited.clone();
            dedup.sort_unstable();
            dedup.dedup();
            assert_eq!(dedup.len(), visited.len(), "a point visited twice");
        }
        assert_eq!(front.last().map(|(_, e)| e.value), Some(a.best_value));
        // The same request gives the same answer (seeded search).
        assert_eq!(planner.plan(&mut search, &v, inst), a);
    }
    assert!(
        improved >= 6,
        "the search improved only {improved} of 8 instances"
    );
}

#[test]
fn matches_exhaustive_search_on_tiny_instances() {
    let g = graph(12, 20_000);
    let v = g.view();
    let mut search = SearchState::new(v.nodes());
    let mut planner = Planner::new(EaParams::default());
    for (n, mut inst) in instances(&v, 12, 6).into_iter().enumerate() {
        inst.k = 6 + n % 2; // 6 or 7 points: 13,700 tours to try at most
                            // A tighter day so that the budget binds.
        inst.time_budget_ms = 4 * 3600 * 1000;
        let m = distance_matrix(&v, &inst);
        let exact = reference::itinerary_front(&inst, &m);
        planner.plan(&mut search, &v, &inst);
        let found: Vec<(u32, u64)> = planner
            .front()
            .iter()
            .map(|(_, e)| (e.value, e.travel_ms))
            .collect();
        for &(fv, ft) in &found {
            assert!(
                !exact
                    .iter()
                    .any(|&(ev, et)| fv >= ev && ft <= et && (fv > ev || ft < et)),
                "instance {n}: found ({fv}, {ft}) beats the exact front {exact:?}"
            );
        }
        let hv_exact = reference::hypervolume(&exact, inst.total_value(), inst.time_budget_ms);
        let hv_found = reference::hypervolume(&found, inst.total_value(), inst.time_budget_ms);
        assert!(
            hv_found >= 0.99 * hv_exact,
            "instance {n}: hypervolume {hv_found} vs exact {hv_exact}\nfound {found:?}\nexact {exact:?}"
        );
        assert_eq!(
            found.iter().map(|p| p.0).max(),
            exact.iter().map(|p| p.0).max(),
            "instance {n}: best attractiveness"
        );
    }
}

#[test]
fn oracle_distances_are_reference_distances() {
    let g = graph(13, 10_000);
    let v = g.view();
    let inst = instances(&v, 13, 1)[0];
    let m = distance_matrix(&v, &inst);
    let mut search = SearchState::new(v.nodes());
    let mut oracle = numalab_workload::itinerary::Oracle::default();
    for i in (0..=inst.k).rev() {
        for (j, want) in m[i].iter().enumerate() {
            assert_eq!(
                oracle.get(&mut search, &v, &inst, i, j),
                *want,
                "{i} -> {j}"
            );
        }
    }
    assert!(oracle.searches as usize <= inst.k + 1);
}
