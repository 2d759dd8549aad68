//! Itinerary planning: a small multi-objective evolutionary search over tours.
//!
//! The second kind of request stands for the optimizer at the heart of a travel planner:
//! given a start point (a hotel), 10-30 points of interest (each with an attractiveness,
//! a visit duration and an entry price), a day's time budget and a money budget, find
//! tours that start and end at the hotel and trade off two objectives: the total
//! attractiveness collected (maximised) and the time spent travelling (minimised). A tour
//! must fit the day (travel plus visits) and the money budget.
//!
//! The search is NSGA-II in miniature: a population of tours (a permutation of the
//! points plus a bit mask of the visited ones), binary tournaments on (Pareto rank,
//! crowding distance), order crossover, swap/reversal/flip mutations, and Deb's
//! constraint rules (a feasible tour beats an infeasible one; between infeasible tours
//! the smaller violation wins). Fitness needs travel times between points; they are
//! looked up through [`Oracle`], which runs a one-to-many Dijkstra on the shared road
//! graph the first time a row of the distance matrix is needed. So every itinerary
//! request reads the graph, as the real engine does.
//!
//! Everything lives in fixed-size arrays and vectors reserved when the [`Planner`] is
//! built: a request allocates nothing. The search's randomness is seeded by the request,
//! so an answer is reproducible.

use crate::graph::GraphRef;
use crate::route::SearchState;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub use numalab_records::workload::EaParams;

/// Most points of interest in one request.
pub const MAX_POIS: usize = 30;
/// Points in the distance matrix: the hotel plus the points of interest.
const MAX_POINTS: usize = MAX_POIS + 1;

/// One planning problem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Instance {
    /// Seed of the search's randomness.
    pub seed: u64,
    /// Number of points of interest (1..=30).
    pub k: usize,
    /// Graph nodes: `nodes[0]` is the hotel, `nodes[1 + i]` point of interest i.
    pub nodes: [u32; MAX_POINTS],
    /// Attractiveness of each point of interest.
    pub value: [u32; MAX_POIS],
    /// Visit duration of each point of interest, ms.
    pub visit_ms: [u32; MAX_POIS],
    /// Entry price of each point of interest.
    pub price: [u32; MAX_POIS],
    /// Length of the day: travel plus visits must fit, ms.
    pub time_budget_ms: u64,
    /// Money available for entry prices.
    pub money_budget: u32,
}

impl Instance {
    /// An empty instance (used as a reusable buffer).
    pub fn empty() -> Self {
        Instance {
            seed: 0,
            k: 0,
            nodes: [0; MAX_POINTS],
            value: [0; MAX_POIS],
            visit_ms: [0; MAX_POIS],
            price: [0; MAX_POIS],
            time_budget_ms: 0,
            money_budget: 0,
        }
    }

    /// Sum of all attractiveness values (for normalising the hypervolume).
    pub fn total_value(&self) -> u32 {
        self.value[..self.k].iter().sum()
    }
}

/// Checks the parameters of the evolutionary search.
pub fn validate(ea: &EaParams) -> Result<(), crate::WorkloadError> {
    if !(4..=2000).contains(&ea.population) || !(1..=100_000).contains(&ea.generations) {
        return Err(crate::WorkloadError::Usage(format!(
            "evolutionary search with population {} and {} generations: the population must be 4-2000 and generations 1-100000",
            ea.population, ea.generations
        )));
    }
    Ok(())
}

/// A tour: visit the points of `order` whose bit is set in `mask`, in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Genome {
    /// A permutation of `0..k`.
    pub order: [u8; MAX_POIS],
    /// Bit i set: point of interest i is visited.
    pub mask: u32,
}

impl Genome {
    /// The visited points of interest, in order.
    pub fn tour(&self, k: usize) -> impl Iterator<Item = usize> + '_ {
        self.order[..k]
            .iter()
            .map(|&p| p as usize)
            .filter(move |&p| self.mask & (1 << p) != 0)
    }
}

/// A tour's objectives and constraints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evaluation {
    /// Attractiveness collected (maximised).
    pub value: u32,
    /// Time on the road, ms (minimised).
    pub travel_ms: u64,
    /// Travel plus visits, ms.
    pub total_ms: u64,
    /// Entry prices paid.
    pub money: u32,
    /// Constraint violation: 0 when feasible, otherwise the relative excess over the
    /// time budget plus the relative excess over the money budget.
    pub violation: f64,
}

impl Evaluation {
    /// Whether the tour fits both budgets.
    pub fn feasible(&self) -> bool {
        self.violation == 0.0
    }
}

/// Evaluates a tour with a distance function over point indices (0 = hotel).
pub fn evaluate_with(
    inst: &Instance,
    g: &Genome,
    mut dist: impl FnMut(usize, usize) -> u32,
) -> Evaluation {
    let mut prev = 0usize;
    let mut travel = 0u64;
    let mut visits = 0u64;
    let mut money = 0u32;
    let mut value = 0u32;
    for p in g.tour(inst.k) {
        travel += dist(prev, p + 1) as u64;
        visits += inst.visit_ms[p] as u64;
        money += inst.price[p];
        value += inst.value[p];
        prev = p + 1;
    }
    travel += dist(prev, 0) as u64;
    let total = travel + visits;
    let mut violation = 0.0;
    if total > inst.time_budget_ms {
        violation += (total - inst.time_budget_ms) as f64 / inst.time_budget_ms.max(1) as f64;
    }
    if money > inst.money_budget {
        violation += (money - inst.money_budget) as f64 / inst.money_budget.max(1) as f64;
    }
    Evaluation {
        value,
        travel_ms: travel,
        total_ms: total,
        money,
        violation,
    }
}

/// Travel times between an instance's points, filled from the graph on first use.
#[derive(Debug)]
pub struct Oracle {
    matrix: [u32; MAX_POINTS * MAX_POINTS],
    row_done: [bool; MAX_POINTS],
    row: [u32; MAX_POINTS],
    /// Lookups served.
    pub lookups: u64,
    /// One-to-many searches run on the graph.
    pub searches: u32,
    /// Nodes settled by those searches.
    pub settled: u64,
}

impl Default for Oracle {
    fn default() -> Self {
        Oracle {
            matrix: [0; MAX_POINTS * MAX_POINTS],
            row_done: [false; MAX_POINTS],
            row: [0; MAX_POINTS],
            lookups: 0,
            searches: 0,
            settled: 0,
        }
    }
}

impl Oracle {
    fn reset(&mut self) {
        self.row_done = [false; MAX_POINTS];
        self.lookups = 0;
        self.searches = 0;
        self.settled = 0;
    }

    /// Travel time between points `i` and `j` (0 = hotel); runs a one-to-many search
    /// from `i` when neither row is known yet (streets are two-way, so a row is also a
    /// column).
    pub fn get(
        &mut self,
        search: &mut SearchState,
        g: &GraphRef<'_>,
        inst: &Instance,
        i: usize,
        j: usize,
    ) -> u32 {
        self.lookups += 1;
        if i == j {
            return 0;
        }
        if self.row_done[i] {
            return self.matrix[i * MAX_POINTS + j];
        }
        if self.row_done[j] {
            return self.matrix[j * MAX_POINTS + i];
        }
        let points = inst.k + 1;
        self.settled += search.one_to_many(
            g,
            inst.nodes[i],
            &inst.nodes[..points],
            &mut self.row[..points],
        ) as u64;
        self.searches += 1;
        for x in 0..points {
            self.matrix[i * MAX_POINTS + x] = self.row[x];
            self.matrix[x * MAX_POINTS + i] = self.row[x];
        }
        self.row_done[i] = true;
        self.matrix[i * MAX_POINTS + j]
    }
}

#[derive(Debug, Clone, Copy)]
struct Ind {
    g: Genome,
    e: Evaluation,
    rank: u32,
    crowd: f64,
}

/// What an itinerary request returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ItineraryAnswer {
    /// Highest attractiveness among feasible tours found (0: only the empty tour).
    pub best_value: u32,
    /// Travel time of that tour, ms.
    pub best_value_travel_ms: u64,
    /// Feasible, non-dominated tours in the final population (distinct objective pairs).
    pub front_size: u32,
    /// Hypervolume of the first population's feasible tours, normalised to 0-1
    /// (reference point: no attractiveness, travel = the whole day).
    pub initial_hypervolume: f64,
    /// Hypervolume of the final population.
    pub hypervolume: f64,
    /// Tours evaluated.
    pub evaluations: u64,
    /// Distance lookups.
    pub lookups: u64,
    /// One-to-many graph searches run.
    pub searches: u32,
    /// Graph nodes settled by them.
    pub settled: u64,
}

/// Per-thread planner state, reused by every request.
#[derive(Debug)]
pub struct Planner {
    params: EaParams,
    pop: Vec<Ind>,
    next: Vec<Ind>,
    idx: Vec<u32>,
    front_min: Vec<u64>,
    /// The distance oracle of the current request.
    pub oracle: Oracle,
    rng: ChaCha8Rng,
}

/// Deb's constraint domination (the definition the fast ranking implements; used by
/// its test).
#[cfg(test)]
fn dominates(a: &Evaluation, b: &Evaluation) -> bool {
    match (a.feasible(), b.feasible()) {
        (true, false) => true,
        (false, true) => false,
        (false, false) => a.violation < b.violation,
        (true, true) => {
            a.value >= b.value
                && a.travel_ms <= b.travel_ms
                && (a.value > b.value || a.travel_ms < b.travel_ms)
        }
    }
}

/// Pareto ranks under Deb's constraint domination, in O(n log n) for two objectives.
///
/// Feasible tours come first. Sorted by value (descending, ties by travel ascending),
/// every earlier tour has at least the value of the current one, so an earlier tour
/// dominates it exactly when its travel is not larger (identical objective pairs are
/// adjacent and share a rank). A tour therefore joins the first front whose smallest
/// travel so far exceeds its own (those minima increase with the front index: binary
/// search). Infeasible tours follow, one front per distinct violation, smallest first.
fn assign_ranks(pop: &mut [Ind], idx: &mut Vec<u32>, front_min: &mut Vec<u64>) {
    idx.clear();
    idx.extend(0..pop.len() as u32);
    idx.sort_unstable_by(|&a, &b| {
        let (x, y) = (&pop[a as usize].e, &pop[b as usize].e);
        y.feasible().cmp(&x.feasible()).then_with(|| {
            if x.feasible() {
                y.value.cmp(&x.value).then(x.travel_ms.cmp(&y.travel_ms))
            } else {
                x.violation.total_cmp(&y.violation)
            }
        })
    });
    front_min.clear();
    let mut prev: Option<u32> = None;
    let mut next_rank = 0;
    for &i in idx.iter() {
        let i = i as usize;
        let e = pop[i].e;
        let same_as_prev = prev.is_some_and(|p| {
            let q = &pop[p as usize].e;
            if e.feasible() {
                q.feasible() && q.value == e.value && q.travel_ms == e.travel_ms
            } else {
                !q.feasible() && q.violation == e.violation
            }
        });
        let rank = if same_as_prev {
            pop[prev.unwrap() as usize].rank
        } else if e.feasible() {
            let f = front_min.partition_point(|&m| m <= e.travel_ms);
            if f == front_min.len() {
                front_min.push(e.travel_ms);
            } else {
                front_min[f] = front_min[f].min(e.travel_ms);
            }
            next_rank = front_min.len() as u32;
            f as u32
        } else {
            let r = next_rank;
            next_rank += 1;
            r
        };
        pop[i].rank = rank;
        pop[i].crowd = 0.0;
        prev = Some(i as u32);
    }
}

impl Planner {
    /// A planner for these parameters (reserves everything a request needs).
    pub fn new(params: EaParams) -> Self {
        let cap = 2 * params.population;
        Planner {
            params,
            pop: Vec::with_capacity(cap),
            next: Vec::with_capacity(cap),
            idx: Vec::with_capacity(cap),
            front_min: Vec::with_capacity(cap),
            oracle: Oracle::default(),
            rng: ChaCha8Rng::seed_from_u64(0),
        }
    }

    /// The parameters.
    pub fn params(&self) -> EaParams {
        self.params
    }

    fn evaluate(
        &mut self,
        search: &mut SearchState,
        g: &GraphRef<'_>,
        inst: &Instance,
        ge: &Genome,
    ) -> Evaluation {
        let oracle = &mut self.oracle;
        evaluate_with(inst, ge, |i, j| oracle.get(search, g, inst, i, j))
    }

    fn random_genome(&mut self, k: usize) -> Genome {
        let mut order = [0u8; MAX_POIS];
        for (i, o) in order.iter_mut().enumerate().take(k) {
            *o = i as u8;
        }
        for i in (1..k).rev() {
            let j = self.rng.random_range(0..=i);
            order.swap(i, j);
        }
        let mut mask = 0u32;
        for p in 0..k {
            if self.rng.random_bool(0.3) {
                mask |= 1 << p;
            }
        }
        Genome { order, mask }
    }

    fn tournament(&mut self) -> usize {
        let n = self.pop.len();
        let a = self.rng.random_range(0..n);
        let b = self.rng.random_range(0..n);
        let (x, y) = (&self.pop[a], &self.pop[b]);
        if x.rank < y.rank || (x.rank == y.rank && x.crowd > y.crowd) {
            a
        } else {
            b
        }
    }

    fn crossover(&mut self, a: &Genome, b: &Genome, k: usize) -> Genome {
        let mut child = Genome {
            order: [0; MAX_POIS],
            mask: 0,
        };
        let mut i = self.rng.random_range(0..k);
        let mut j = self.rng.random_range(0..k);
        if i > j {
            std::mem::swap(&mut i, &mut j);
        }
        let j = j + 1;
        let mut used = 0u32;
        for p in i..j {
            child.order[p] = a.order[p];
            used |= 1 << a.order[p];
        }
        let mut pos = 0;
        for &v in &b.order[..k] {
            if used & (1 << v) != 0 {
                continue;
            }
            if pos == i {
                pos = j;
            }
            child.order[pos] = v;
            pos += 1;
        }
        let r: u32 = self.rng.random();
        let all = (1u32 << k) - 1;
        child.mask = ((a.mask & r) | (b.mask & !r)) & all;
        child
    }

    fn mutate(&mut self, g: &mut Genome, k: usize) {
        if k >= 2 && self.rng.random_bool(0.4) {
            let i = self.rng.random_range(0..k);
            let j = self.rng.random_range(0..k);
            g.order.swap(i, j);
        }
        if k >= 3 && self.rng.random_bool(0.3) {
            let mut i = self.rng.random_range(0..k);
            let mut j = self.rng.random_range(0..k);
            if i > j {
                std::mem::swap(&mut i, &mut j);
            }
            g.order[i..=j].reverse();
        }
        if self.rng.random_bool(0.6) {
            g.mask ^= 1 << self.rng.random_range(0..k);
        }
    }

    /// Pareto ranks (Deb's constraint domination) and crowding distances of `pop`.
    fn rank_and_crowd(&mut self) {
        let n = self.pop.len();
        assign_ranks(&mut self.pop, &mut self.idx, &mut self.front_min);
        // Crowding distance within each front.
        self.idx.clear();
        self.idx.extend(0..n as u32);
        let pop = &mut self.pop;
        self.idx.sort_unstable_by_key(|&i| pop[i as usize].rank);
        let mut start = 0;
        while start < n {
            let r = pop[self.idx[start] as usize].rank;
            let mut end = start;
            while end < n && pop[self.idx[end] as usize].rank == r {
                end += 1;
            }
            let front = &mut self.idx[start..end];
            if front.len() <= 2 {
                for &i in front.iter() {
                    pop[i as usize].crowd = f64::INFINITY;
                }
            } else {
                for objective in 0..2 {
                    let val = |pop: &[Ind], i: u32| -> f64 {
                        let e = &pop[i as usize].e;
                        if objective == 0 {
                            e.value as f64
                        } else {
                            e.travel_ms as f64
                        }
                    };
                    front.sort_unstable_by(|&a, &b| val(pop, a).total_cmp(&val(pop, b)));
                    let lo = val(pop, front[0]);
                    let hi = val(pop, front[front.len() - 1]);
                    let first = front[0] as usize;
                    let last = front[front.len() - 1] as usize;
                    pop[first].crowd = f64::INFINITY;
                    pop[last].crowd = f64::INFINITY;
                    if hi > lo {
                        for w in 1..front.len() - 1 {
                            let d = (val(pop, front[w + 1]) - val(pop, front[w - 1])) / (hi - lo);
                            pop[front[w] as usize].crowd += d;
                        }
                    }
                }
            }
            start = end;
        }
    }

    /// Keeps the best `population` individuals by (rank, crowding).
    fn select(&mut self) {
        let n = self.pop.len();
        self.idx.clear();
        self.idx.extend(0..n as u32);
        let pop = &self.pop;
        self.idx.sort_unstable_by(|&a, &b| {
            let (x, y) = (&pop[a as usize], &pop[b as usize]);
            x.rank.cmp(&y.rank).then(y.crowd.total_cmp(&x.crowd))
        });
        self.next.clear();
        for &i in self.idx.iter().take(self.params.population) {
            self.next.push(self.pop[i as usize]);
        }
        std::mem::swap(&mut self.pop, &mut self.next);
    }

    /// Normalised hypervolume of the feasible tours in the population.
    fn hypervolume(&mut self, inst: &Instance) -> f64 {
        let pop = &self.pop;
        self.idx.clear();
        self.idx
            .extend((0..pop.len() as u32).filter(|&i| pop[i as usize].e.feasible()));
        self.idx
            .sort_unstable_by(|&a, &b| pop[b as usize].e.value.cmp(&pop[a as usize].e.value));
        let t = inst.time_budget_ms as f64;
        let mut min_travel = f64::INFINITY;
        let mut hv = 0.0;
        for w in 0..self.idx.len() {
            let e = &pop[self.idx[w] as usize].e;
            min_travel = min_travel.min(e.travel_ms as f64);
            let next_value = if w + 1 < self.idx.len() {
                pop[self.idx[w + 1] as usize].e.value
            } else {
                0
            };
            hv += (e.value - next_value) as f64 * (t - min_travel).max(0.0);
        }
        let scale = inst.total_value() as f64 * t;
        if scale > 0.0 {
            hv / scale
        } else {
            0.0
        }
    }

    /// Plans one itinerary.
    pub fn plan(
        &mut self,
        search: &mut SearchState,
        g: &GraphRef<'_>,
        inst: &Instance,
    ) -> ItineraryAnswer {
        assert!(
            (1..=MAX_POIS).contains(&inst.k),
            "an itinerary has 1 to {MAX_POIS} points of interest"
        );
        let k = inst.k;
        self.rng = ChaCha8Rng::seed_from_u64(inst.seed);
        self.oracle.reset();
        self.pop.clear();
        let p = self.params.population;
        let mut evaluations = 0u64;
        for _ in 0..p {
            let ge = self.random_genome(k);
            let e = self.evaluate(search, g, inst, &ge);
            evaluations += 1;
            self.pop.push(Ind {
                g: ge,
                e,
                rank: 0,
                crowd: 0.0,
            });
        }
        self.rank_and_crowd();
        let initial_hypervolume = self.hypervolume(inst);
        for _ in 0..self.params.generations {
            for _ in 0..p {
                let a = self.tournament();
                let b = self.tournament();
                let (ga, gb) = (self.pop[a].g, self.pop[b].g);
                let mut child = if self.rng.random_bool(0.9) {
                    self.crossover(&ga, &gb, k)
                } else {
                    ga
                };
                self.mutate(&mut child, k);
                let e = self.evaluate(search, g, inst, &child);
                evaluations += 1;
                self.pop.push(Ind {
                    g: child,
                    e,
                    rank: 0,
                    crowd: 0.0,
                });
            }
            self.rank_and_crowd();
            self.select();
        }
        self.rank_and_crowd();
        let hypervolume = self.hypervolume(inst);
        let mut best_value = 0;
        let mut best_travel = 0;
        for ind in self.pop.iter().filter(|i| i.e.feasible()) {
            if ind.e.value > best_value
                || (ind.e.value == best_value && ind.e.travel_ms < best_travel)
            {
                best_value = ind.e.value;
                best_travel = ind.e.travel_ms;
            }
        }
        // Distinct feasible non-dominated objective pairs (no allocation: the
        // population is small, so a quadratic scan is fine).
        let mut front_size = 0;
        for (i, a) in self.pop.iter().enumerate() {
            if a.rank != 0 || !a.e.feasible() {
                continue;
            }
            let dup = self.pop[..i].iter().any(|b| {
                b.rank == 0
                    && b.e.feasible()
                    && b.e.value == a.e.value
                    && b.e.travel_ms == a.e.travel_ms
            });
            if !dup {
                front_size += 1;
            }
        }
        ItineraryAnswer {
            best_value,
            best_value_travel_ms: best_travel,
            front_size,
            initial_hypervolume,
            hypervolume,
            evaluations,
            lookups: self.oracle.lookups,
            searches: self.oracle.searches,
            settled: self.oracle.settled,
        }
    }

    /// The feasible non-dominated tours of the last plan, with their evaluations
    /// (allocates; for tests and reports, not for the request path).
    pub fn front(&self) -> Vec<(Genome, Evaluation)> {
        let mut out: Vec<(Genome, Evaluation)> = Vec::new();
        for ind in &self.pop {
            if ind.rank == 0
                && ind.e.feasible()
                && !out
                    .iter()
                    .any(|(_, e)| e.value == ind.e.value && e.travel_ms == ind.e.travel_ms)
            {
                out.push((ind.g, ind.e));
            }
        }
        out.sort_by_key(|(_, e)| e.value);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranks by repeated peeling of non-dominated sets (the definition).
    fn peel(evals: &[Evaluation]) -> Vec<u32> {
        let n = evals.len();
        let mut rank = vec![u32::MAX; n];
        let mut r = 0;
        while rank.contains(&u32::MAX) {
            let current: Vec<usize> = (0..n)
                .filter(|&i| {
                    rank[i] == u32::MAX
                        && !(0..n).any(|j| rank[j] == u32::MAX && dominates(&evals[j], &evals[i]))
                })
                .collect();
            for i in current {
                rank[i] = r;
            }
            r += 1;
        }
        rank
    }

    #[test]
    fn fast_ranks_equal_the_definition() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for round in 0..200 {
            let n = rng.random_range(1..60);
            let mut pop: Vec<Ind> = (0..n)
                .map(|_| {
                    // Small value ranges force ties and duplicates.
                    let infeasible = rng.random_bool(0.3);
                    Ind {
                        g: Genome {
                            order: [0; MAX_POIS],
                            mask: 0,
                        },
                        e: Evaluation {
                            value: rng.random_range(0..6),
                            travel_ms: rng.random_range(0..6),
                            total_ms: 0,
                            money: 0,
                            violation: if infeasible {
                                rng.random_range(1..4) as f64 / 4.0
                            } else {
                                0.0
                            },
                        },
                        rank: 0,
                        crowd: 0.0,
                    }
                })
                .collect();
            let want = peel(&pop.iter().map(|i| i.e).collect::<Vec<_>>());
            let mut idx = Vec::new();
            let mut fm = Vec::new();
            assign_ranks(&mut pop, &mut idx, &mut fm);
            let got: Vec<u32> = pop.iter().map(|i| i.rank).collect();
            assert_eq!(got, want, "round {round}");
        }
    }

    #[test]
    fn crossover_keeps_a_permutation() {
        let mut p = Planner::new(EaParams::default());
        for k in [1usize, 2, 3, 10, 30] {
            for _ in 0..200 {
                let a = p.random_genome(k);
                let b = p.random_genome(k);
                let mut c = p.crossover(&a, &b, k);
                p.mutate(&mut c, k);
                let mut seen = c.order[..k].to_vec();
                seen.sort_unstable();
                assert_eq!(seen, (0..k as u8).collect::<Vec<_>>());
                assert_eq!(c.mask >> k, 0, "mask bits beyond k");
            }
        }
    }
}
