//! The search: a placement's state (where each unit sits, the fitted constants, the
//! squared error), moves and swaps under simulated annealing, one restart at a time.

use super::*;

/// The state of one search.
pub(super) struct State<'p, 'a> {
    pub(super) p: &'p Problem<'a>,
    pub(super) unit_stop: Vec<StopId>,
    /// Core capacity used, per stop.
    pub(super) used: Vec<u32>,
    /// Units at each stop (core units and target units separately).
    pub(super) at: Vec<Vec<u32>>,
    pub(super) tat: Vec<Option<u32>>,
    pub(super) acc: Acc,
    pub(super) sol: Solution,
    pub(super) stamp: Vec<u32>,
    pub(super) gen: u32,
}

impl<'p, 'a> State<'p, 'a> {
    pub(super) fn empty(p: &'p Problem<'a>) -> Self {
        let n = p.grid.stops();
        State {
            p,
            unit_stop: vec![0; p.units.len()],
            used: vec![0; n],
            at: vec![Vec::new(); n],
            tat: vec![None; n],
            acc: Acc::new(p.grid.feature_count()),
            sol: Solution {
                beta: [0.0; crate::fit::MAXP],
                sse: 0.0,
                free: 0,
            },
            stamp: vec![0; p.m.obs.len()],
            gen: 0,
        }
    }

    /// The state of a given placement.
    pub(super) fn at_placement(
        p: &'p Problem<'a>,
        core_stop: &[StopId],
        target_stop: &[StopId],
    ) -> Self {
        let mut s = State::empty(p);
        for u in 0..p.core_units {
            s.place(u, core_stop[p.units[u][0] as usize]);
        }
        for u in p.core_units..p.units.len() {
            s.place(u, target_stop[u - p.core_units]);
        }
        s.recompute();
        s
    }

    /// Core units at given stops, targets at random.
    pub(super) fn from_units(
        p: &'p Problem<'a>,
        unit_stops: &[StopId],
        rng: &mut ChaCha8Rng,
    ) -> Self {
        let mut s = State::empty(p);
        for (u, &st) in unit_stops.iter().enumerate() {
            s.place(u, st);
        }
        s.place_targets_at_random(rng);
        s
    }

    pub(super) fn random(p: &'p Problem<'a>, rng: &mut ChaCha8Rng) -> Result<Self, LayoutError> {
        let mut s = State::empty(p);
        // Largest units first, each on a random stop with room.
        let mut order: Vec<usize> = (0..p.core_units).collect();
        order.shuffle(rng);
        order.sort_by_key(|&u| std::cmp::Reverse(p.units[u].len()));
        for u in order {
            let size = p.units[u].len() as u32;
            let fits: Vec<StopId> = p
                .core_stops
                .iter()
                .copied()
                .filter(|&st| s.used[st as usize] + size <= p.grid.capacity)
                .collect();
            let Some(&st) = fits.get(rng.random_range(0..fits.len().max(1))) else {
                return Err(LayoutError::Usage(
                    "the cores and their tile groups do not pack onto the tiles: raise the cores per tile or give fewer disabled tiles".into(),
                ));
            };
            s.place(u, st);
        }
        s.place_targets_at_random(rng);
        Ok(s)
    }

    /// Puts the target units on the target stops in a random order, then recomputes.
    pub(super) fn place_targets_at_random(&mut self, rng: &mut ChaCha8Rng) {
        let p = self.p;
        let mut tstops = p.target_stops.clone();
        tstops.shuffle(rng);
        for u in p.core_units..p.units.len() {
            self.place(u, tstops[u - p.core_units]);
        }
        self.recompute();
    }

    pub(super) fn place(&mut self, u: usize, st: StopId) {
        self.unit_stop[u] = st;
        if u < self.p.core_units {
            self.used[st as usize] += self.p.units[u].len() as u32;
            self.at[st as usize].push(u as u32);
        } else {
            self.tat[st as usize] = Some(u as u32);
        }
    }

    pub(super) fn unplace(&mut self, u: usize) {
        let st = self.unit_stop[u] as usize;
        if u < self.p.core_units {
            self.used[st] -= self.p.units[u].len() as u32;
            self.at[st].retain(|&v| v as usize != u);
        } else if self.tat[st] == Some(u as u32) {
            self.tat[st] = None;
        }
    }

    #[inline]
    pub(super) fn stops_of(&self, o: &Obs) -> (StopId, StopId) {
        let a = self.unit_stop[self.p.unit_of_core[o.a as usize] as usize];
        let b = match self.p.m.kind {
            Kind::CoreToCore => self.unit_stop[self.p.unit_of_core[o.b as usize] as usize],
            Kind::CoreToTarget => self.unit_stop[self.p.core_units + o.b as usize],
        };
        (a, b)
    }

    pub(super) fn recompute(&mut self) {
        let mut acc = Acc::new(self.p.grid.feature_count());
        for o in &self.p.m.obs {
            let (a, b) = self.stops_of(o);
            acc.add(self.p.grid.features(a, b), o.y - self.p.offset, 1.0);
        }
        self.acc = acc;
        self.sol = acc.solve(2);
    }

    /// The statistics after moving units (`moves`: unit, new stop); positions are
    /// restored before returning.
    pub(super) fn trial(&mut self, moves: &[(usize, StopId)]) -> Acc {
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.gen = 1;
        }
        let mut acc = self.acc;
        let grid = self.p.grid;
        let moved = |u: u32, cur: StopId| -> StopId {
            moves
                .iter()
                .find(|m| m.0 == u as usize)
                .map_or(cur, |m| m.1)
        };
        for &(u, _) in moves {
            for &k in &self.p.obs_of_unit[u] {
                if self.stamp[k as usize] == self.gen {
                    continue;
                }
                self.stamp[k as usize] = self.gen;
                let (ua, ub) = self.p.ends[k as usize];
                let (a, b) = (self.unit_stop[ua as usize], self.unit_stop[ub as usize]);
                let (na, nb) = (moved(ua, a), moved(ub, b));
                if (na, nb) != (a, b) {
                    acc.replace(
                        grid.features(a, b),
                        grid.features(na, nb),
                        self.p.yc[k as usize],
                    );
                }
            }
        }
        acc
    }

    pub(super) fn apply(&mut self, moves: &[(usize, StopId)], acc: Acc, sol: Solution) {
        for &(u, _) in moves {
            self.unplace(u);
        }
        for &(u, st) in moves {
            self.place(u, st);
        }
        self.acc = acc;
        self.sol = sol;
    }

    /// A random move of unit `u` to stop `b`: the unit moves; if `b` lacks room, units
    /// there (chosen at random) move to the stop `u` frees. None if that does not fit.
    pub(super) fn exchange(
        &self,
        u: usize,
        b: StopId,
        rng: Option<&mut ChaCha8Rng>,
    ) -> Option<Vec<(usize, StopId)>> {
        let a = self.unit_stop[u];
        if a == b {
            return None;
        }
        if u >= self.p.core_units {
            return Some(match self.tat[b as usize] {
                None => vec![(u, b)],
                Some(v) => vec![(u, b), (v as usize, a)],
            });
        }
        let cap = self.p.grid.capacity;
        let size = self.p.units[u].len() as u32;
        let free_b = cap - self.used[b as usize];
        if free_b >= size {
            return Some(vec![(u, b)]);
        }
        let mut there = self.at[b as usize].clone();
        if let Some(rng) = rng {
            there.shuffle(rng);
        } else {
            // Deterministic: same-size units first.
            there.sort_by_key(|&v| (self.p.units[v as usize].len() as u32 != size, v));
        }
        let mut moves = vec![(u, b)];
        let mut freed = free_b;
        let mut sent = 0;
        for v in there {
            if freed >= size {
                break;
            }
            let vs = self.p.units[v as usize].len() as u32;
            freed += vs;
            sent += vs;
            moves.push((v as usize, a));
        }
        let free_a = cap - self.used[a as usize] + size;
        (freed >= size && sent <= free_a).then_some(moves)
    }

    pub(super) fn allowed(&self, u: usize) -> &[StopId] {
        if u < self.p.core_units {
            &self.p.core_stops
        } else {
            &self.p.target_stops
        }
    }

    /// Annealing with the temperature going from `t0` to `t1` (in units of the residual
    /// variance: a move that adds `t` times the variance of one observation to the squared
    /// error is accepted with probability 1/e).
    pub(super) fn anneal(&mut self, sweeps: usize, t0: f64, t1: f64, rng: &mut ChaCha8Rng) {
        let units = self.p.units.len();
        let steps = sweeps * units;
        if steps == 0 {
            return;
        }
        let nobs = self.p.m.obs.len() as f64;
        let eps = self.p.floor * nobs * 1e-6;
        let ratio = (t1 / t0).powf(1.0 / steps as f64);
        let mut temp = t0;
        let mut since = 0usize;
        for step in 0..steps {
            if step % 4096 == 0 && numalab_schema::interrupt::requested() {
                return;
            }
            temp *= ratio;
            let u = rng.random_range(0..units);
            let stops = self.allowed(u);
            let b = stops[rng.random_range(0..stops.len())];
            let Some(moves) = self.exchange(u, b, Some(rng)) else {
                continue;
            };
            let acc = self.trial(&moves);
            let sol = acc.solve(2);
            // In units of the residual variance: n (ln SSE' - ln SSE) ~ (SSE' - SSE) / s^2.
            let d = nobs * ((sol.sse + eps).ln() - (self.sol.sse + eps).ln());
            if d <= 0.0 || rng.random::<f64>() < (-d / temp).exp() {
                self.apply(&moves, acc, sol);
                since += 1;
                if since >= 2000 {
                    self.recompute();
                    since = 0;
                }
            }
        }
        self.recompute();
    }

    /// Every way to put unit u at stop b: a plain move when b has room, else a swap with
    /// each unit there that frees enough room and fits where u was, else all of them.
    pub(super) fn candidates(&self, u: usize, b: StopId) -> Vec<Vec<(usize, StopId)>> {
        let a = self.unit_stop[u];
        if a == b {
            return Vec::new();
        }
        if u >= self.p.core_units {
            return self.exchange(u, b, None).into_iter().collect();
        }
        let cap = self.p.grid.capacity;
        let size = self.p.units[u].len() as u32;
        let free_b = cap - self.used[b as usize];
        if free_b >= size {
            return vec![vec![(u, b)]];
        }
        let free_a = cap - self.used[a as usize] + size;
        let mut out: Vec<Vec<(usize, StopId)>> = self.at[b as usize]
            .iter()
            .filter(|&&v| {
                let vs = self.p.units[v as usize].len() as u32;
                free_b + vs >= size && vs <= free_a
            })
            .map(|&v| vec![(u, b), (v as usize, a)])
            .collect();
        if out.is_empty() {
            out.extend(self.exchange(u, b, None));
        }
        out
    }

    /// Best alternative for unit u: (moves, statistics, solution) of the best other stop.
    pub(super) fn best_alternative(&mut self, u: usize) -> Option<Candidate> {
        let mut best: Option<Candidate> = None;
        let stops: Vec<StopId> = self.allowed(u).to_vec();
        for b in stops {
            for moves in self.candidates(u, b) {
                let acc = self.trial(&moves);
                let sol = acc.solve(2);
                if best.as_ref().is_none_or(|x| sol.sse < x.2.sse) {
                    best = Some((moves, acc, sol));
                }
            }
        }
        best
    }

    pub(super) fn polish(&mut self) {
        for _ in 0..100 {
            let mut improved = false;
            for u in 0..self.p.units.len() {
                if let Some((moves, acc, sol)) = self.best_alternative(u) {
                    if sol.sse < self.sol.sse * (1.0 - 1e-12) - 1e-18 {
                        self.apply(&moves, acc, sol);
                        improved = true;
                    }
                }
            }
            self.recompute();
            if !improved || numalab_schema::interrupt::requested() {
                return;
            }
        }
    }

    pub(super) fn core_stops(&self) -> Vec<StopId> {
        (0..self.p.m.cpus.len())
            .map(|c| self.unit_stop[self.p.unit_of_core[c] as usize])
            .collect()
    }

    pub(super) fn target_stops(&self) -> Vec<StopId> {
        self.unit_stop[self.p.core_units..].to_vec()
    }
}
