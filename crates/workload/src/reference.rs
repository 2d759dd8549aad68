//! Reference implementations the fast paths are checked against: textbook Dijkstra
//! (one direction, a fresh heap and distance vector per call) and an exhaustive search
//! of every tour on small itinerary instances. Slow and allocating on purpose: they are
//! simple enough to be obviously right.

use crate::graph::GraphRef;
use crate::itinerary::{evaluate_with, Evaluation, Genome, Instance, MAX_POIS};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Distances from `s` to every node (`None` = unreachable).
pub fn dijkstra(g: &GraphRef<'_>, s: u32) -> Vec<Option<u64>> {
    let n = g.nodes() as usize;
    let mut dist: Vec<Option<u64>> = vec![None; n];
    let mut heap = BinaryHeap::new();
    dist[s as usize] = Some(0);
    heap.push(Reverse((0u64, s)));
    while let Some(Reverse((d, u))) = heap.pop() {
        if dist[u as usize].is_some_and(|x| d > x) {
            continue;
        }
        for e in g.edges(u).chunks_exact(2) {
            let nd = d + e[1] as u64;
            let v = e[0] as usize;
            if dist[v].is_none_or(|x| nd < x) {
                dist[v] = Some(nd);
                heap.push(Reverse((nd, e[0])));
            }
        }
    }
    dist
}

/// The full travel-time matrix between an instance's points (0 = hotel), by
/// [`dijkstra`] from each point.
pub fn distance_matrix(g: &GraphRef<'_>, inst: &Instance) -> Vec<Vec<u32>> {
    let points = inst.k + 1;
    (0..points)
        .map(|i| {
            let d = dijkstra(g, inst.nodes[i]);
            (0..points)
                .map(|j| d[inst.nodes[j] as usize].map_or(u32::MAX, |x| x as u32))
                .collect()
        })
        .collect()
}

/// Evaluates a tour with a full matrix.
pub fn evaluate(inst: &Instance, matrix: &[Vec<u32>], g: &Genome) -> Evaluation {
    evaluate_with(inst, g, |i, j| matrix[i][j])
}

/// The exact Pareto front (attractiveness up, travel down) of feasible tours, by trying
/// every subset of points and every order of each subset. Only for small `k` (<= 8).
pub fn itinerary_front(inst: &Instance, matrix: &[Vec<u32>]) -> Vec<(u32, u64)> {
    let k = inst.k;
    assert!(k <= 8, "exhaustive search is for tiny instances");
    let mut points: Vec<(u32, u64)> = Vec::new();
    for mask in 0u32..(1 << k) {
        let members: Vec<u8> = (0..k as u8).filter(|p| mask & (1 << p) != 0).collect();
        let mut best: Option<Evaluation> = None;
        permute(&mut members.clone(), 0, &mut |perm| {
            let mut order = [0u8; MAX_POIS];
            order[..perm.len()].copy_from_slice(perm);
            // Fill the rest of the permutation with the unvisited points.
            let mut pos = perm.len();
            for p in 0..k as u8 {
                if mask & (1 << p) == 0 {
                    order[pos] = p;
                    pos += 1;
                }
            }
            let e = evaluate(inst, matrix, &Genome { order, mask });
            if e.feasible() && best.is_none_or(|b| e.travel_ms < b.travel_ms) {
                best = Some(e);
            }
        });
        if let Some(b) = best {
            points.push((b.value, b.travel_ms));
        }
    }
    pareto(&points)
}

fn permute(v: &mut Vec<u8>, i: usize, f: &mut impl FnMut(&[u8])) {
    if i == v.len() {
        f(v);
        return;
    }
    for j in i..v.len() {
        v.swap(i, j);
        permute(v, i + 1, f);
        v.swap(i, j);
    }
}

/// The non-dominated subset of (value, travel) points, sorted by value, duplicates
/// removed.
pub fn pareto(points: &[(u32, u64)]) -> Vec<(u32, u64)> {
    let mut out: Vec<(u32, u64)> = points
        .iter()
        .copied()
        .filter(|&(v, t)| {
            !points
                .iter()
                .any(|&(v2, t2)| v2 >= v && t2 <= t && (v2 > v || t2 < t))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Normalised hypervolume of (value, travel) points, as the planner computes it.
pub fn hypervolume(points: &[(u32, u64)], total_value: u32, time_budget_ms: u64) -> f64 {
    let front = pareto(points);
    let t = time_budget_ms as f64;
    let mut hv = 0.0;
    let mut prev = 0;
    // Ascending value: each step of value is reachable with this point's travel.
    for &(v, tr) in &front {
        hv += (v - prev) as f64 * (t - tr as f64).max(0.0);
        prev = v;
    }
    hv / (total_value as f64 * t)
}
