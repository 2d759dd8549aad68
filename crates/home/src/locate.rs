//! Where each home sits on the floorplan `numalab layout` inferred: least squares on the
//! homes' latency profiles, as the mesh study located its tiles.
//!
//! # Model
//! A forwarded read by core B of a line homed at h and owned by core A costs REQ B->h,
//! the lookup, SNP h->A and DAT A->B. Over the probe cores B this is
//! `y[h][B] = alpha[h] + g[B] + beta . f(B, h)`: a constant per home (h->A and the
//! lookup), a constant per reader (A->B, the timer), and the hop features of the
//! floorplan's grid between B's stop and h (same stop, links of each kind) with
//! coefficients `beta` shared by all homes. (Flushed reads fit the same form when every
//! line of a home goes to one controller; with several controllers per home, use
//! forwarded profiles.)
//!
//! # Method
//! Alternating least squares: start every home at the stop of its fastest reader (the
//! nearest candidate stop to it); fit alpha, g and beta by weighted least squares (weight:
//! the home's lines, which set its profile's precision); move every home to its best
//! stop under those constants, homes with the clearest choice first and one home per
//! stop while free stops remain; repeat until no home moves (at most 50 rounds).
//! Confidence of a stop: the squared-error growth `delta` at the best other stop, with
//! the profile's element variance `sigma^2 / lines`, is `1 / (1 + exp(-delta / 2 var))`.

use numalab_layout::Grid;
use numalab_model::geometry::StopId;
use std::collections::BTreeMap;

/// Readers that must see two stops differently (see [`Floorplan::unresolved`]).
pub const RESOLVE_MARGIN: usize = 2;

/// A floorplan: the grid and where each CPU sits.
#[derive(Debug, Clone)]
pub struct Floorplan {
    /// Where it came from (a file name, or "inferred from the model's matrix").
    pub name: String,
    /// The grid (features between stops).
    pub grid: Grid,
    /// Stop of each CPU (OS id).
    pub cpu_stop: BTreeMap<u32, StopId>,
    /// Stops a home may sit at.
    pub candidates: Vec<StopId>,
}

impl Floorplan {
    /// From the records of `numalab layout infer`'s output at `path`: its last
    /// `layout.inference` record, refused (input) when it holds none.
    pub fn from_layout_records(
        records: &[numalab_schema::Record],
        path: &std::path::Path,
    ) -> Result<Floorplan, crate::HomeError> {
        use numalab_records::layout::InferenceRecord;
        let last = records
            .iter()
            .filter_map(|r| r.decode::<InferenceRecord>().and_then(Result::ok))
            .next_back()
            .ok_or_else(|| {
                crate::HomeError::input(
                    path.display().to_string(),
                    "holds no layout.inference record; run `numalab layout infer --out DIR` first",
                )
            })?;
        Floorplan::from_record(&last, &path.display().to_string())
    }

    /// The floorplan of the last `layout.inference` record of the `layout infer` output
    /// at `path`; an unreadable file or one without such a record is an input error.
    pub fn read(path: &std::path::Path) -> Result<Floorplan, crate::HomeError> {
        let bundle = numalab_layout::record::read_layout_bundle(path)?;
        Floorplan::from_layout_records(&bundle.records, path)
    }

    /// From a `layout.inference` record.
    pub fn from_record(
        rec: &numalab_records::layout::InferenceRecord,
        name: &str,
    ) -> Result<Floorplan, crate::HomeError> {
        use numalab_layout::record::InferenceRecordExt;
        let lm = rec.latency_model()?;
        let grid = lm.grid;
        let no: Vec<StopId> = rec
            .geometry
            .no_targets
            .iter()
            .map(|p| grid.stop(p[0], p[1]))
            .collect();
        let candidates = (0..grid.stops() as StopId)
            .filter(|s| !no.contains(s))
            .collect();
        Ok(Floorplan {
            name: name.to_string(),
            cpu_stop: rec.cores.iter().map(|c| (c.cpu, c.stop)).collect(),
            grid,
            candidates,
        })
    }

    /// The floorplan's image under a map of stops (a symmetry of the mesh): every CPU
    /// moved, the stops homes may sit at kept (they are the chip's, not the frame's).
    pub fn turned(&self, map: &[StopId]) -> Floorplan {
        Floorplan {
            cpu_stop: self
                .cpu_stop
                .iter()
                .map(|(&c, &s)| (c, map[s as usize]))
                .collect(),
            ..self.clone()
        }
    }

    /// Stops of `cpus`, `None` for a CPU the floorplan does not place.
    pub fn stops_of(&self, cpus: &[u32]) -> Vec<Option<StopId>> {
        cpus.iter().map(|c| self.cpu_stop.get(c).copied()).collect()
    }

    /// Pairs of candidate stops the readers cannot tell apart: for every reader the hop
    /// features (links of each kind) to the two stops differ by the same amount, so
    /// their latency profiles differ by a constant at most, which a home's own constant
    /// absorbs (and which the owner's distance to the two stops can cancel exactly).
    pub fn unresolved(&self, readers: &[u32]) -> Vec<(StopId, StopId)> {
        let stops: Vec<StopId> = readers
            .iter()
            .filter_map(|c| self.cpu_stop.get(c).copied())
            .collect();
        let mut out = Vec::new();
        for (i, &a) in self.candidates.iter().enumerate() {
            for &b in &self.candidates[..i] {
                if !self.resolves(&stops, a, b) {
                    out.push((a, b));
                }
            }
        }
        out
    }

    /// The hop features (links of each kind, without the same-stop indicator, which
    /// need not cost anything) of r -> a minus those of r -> b.
    fn diff(&self, r: StopId, a: StopId, b: StopId) -> Vec<f64> {
        self.grid.features(r, a)[1..]
            .iter()
            .zip(&self.grid.features(r, b)[1..])
            .map(|(x, y)| x - y)
            .collect()
    }

    /// Whether at least [`RESOLVE_MARGIN`] readers (at `readers`' stops) see the two stops differently from
    /// the largest group of readers that sees them alike: one misplaced reader then does
    /// not leave two homes unresolved.
    pub fn resolves(&self, readers: &[StopId], a: StopId, b: StopId) -> bool {
        let diffs: Vec<Vec<f64>> = readers.iter().map(|&r| self.diff(r, a, b)).collect();
        let largest = diffs
            .iter()
            .map(|d| diffs.iter().filter(|e| *e == d).count())
            .max()
            .unwrap_or(0);
        diffs.len() - largest >= RESOLVE_MARGIN
    }

    /// `chosen` (owner first, then readers) with readers added from `cpus`, at most
    /// `extra`, each the one that resolves the most pairs of candidate stops the readers
    /// so far cannot tell apart (see [`Floorplan::unresolved`]); and the pairs still
    /// unresolved.
    pub fn resolving(
        &self,
        cpus: &[u32],
        mut chosen: Vec<u32>,
        extra: usize,
    ) -> (Vec<u32>, Vec<(StopId, StopId)>) {
        let readers = |c: &[u32]| c.iter().skip(1).copied().collect::<Vec<u32>>();
        let mut open = self.unresolved(&readers(&chosen));
        for _ in 0..extra {
            if open.is_empty() {
                break;
            }
            let stops: Vec<StopId> = readers(&chosen)
                .iter()
                .filter_map(|c| self.cpu_stop.get(c).copied())
                .collect();
            let best = cpus
                .iter()
                .filter(|c| !chosen.contains(c))
                .filter_map(|&c| self.cpu_stop.get(&c).map(|&s| (c, s)))
                .map(|(c, s)| {
                    let mut with = stops.clone();
                    with.push(s);
                    let n = open
                        .iter()
                        .filter(|&&(a, b)| self.resolves(&with, a, b))
                        .count();
                    (n, std::cmp::Reverse(c))
                })
                .max();
            match best {
                Some((n, std::cmp::Reverse(c))) if n > 0 => {
                    chosen.push(c);
                    open = self.unresolved(&readers(&chosen));
                }
                _ => break,
            }
        }
        (chosen, open)
    }

    /// Up to `k` CPUs of `cpus` spread over the floorplan: farthest-point sampling on
    /// Manhattan distance between their stops, one CPU per stop, from the first CPU.
    pub fn spread(&self, cpus: &[u32], k: usize) -> Vec<u32> {
        let placed: Vec<(u32, StopId)> = cpus
            .iter()
            .filter_map(|&c| self.cpu_stop.get(&c).map(|&s| (c, s)))
            .collect();
        let mut chosen: Vec<(u32, StopId)> = Vec::new();
        if let Some(&first) = placed.first() {
            chosen.push(first);
        }
        while chosen.len() < k {
            let next = placed
                .iter()
                .filter(|(_, s)| !chosen.iter().any(|(_, t)| t == s))
                .map(|&(c, s)| {
                    let d = chosen
                        .iter()
                        .map(|&(_, t)| self.grid.manhattan(s, t))
                        .min()
                        .unwrap_or(0);
                    (d, std::cmp::Reverse(c), s)
                })
                .max();
            match next {
                Some((_, std::cmp::Reverse(c), s)) => chosen.push((c, s)),
                None => break,
            }
        }
        chosen.into_iter().map(|(c, _)| c).collect()
    }
}

/// A located home.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// Stop.
    pub stop: StopId,
    /// Confidence (see the module doc).
    pub confidence: f64,
    /// RMS residual of its profile, ns.
    pub residual_ns: f64,
}

/// Solves a dense linear system by Gaussian elimination with partial pivoting; a
/// singular direction gets 0.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    let scale = a
        .iter()
        .flat_map(|r| r.iter())
        .fold(0.0f64, |m, x| m.max(x.abs()))
        .max(1e-300);
    let mut pivot_of_col = vec![None; n];
    let mut row = 0;
    for col in 0..n {
        let Some(p) = (row..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs())) else {
            break;
        };
        if a[p][col].abs() <= 1e-10 * scale {
            continue;
        }
        a.swap(row, p);
        b.swap(row, p);
        let pivot_row = a[row].clone();
        let pivot_b = b[row];
        for (i, (ai, bi)) in a.iter_mut().zip(b.iter_mut()).enumerate() {
            if i != row {
                let f = ai[col] / pivot_row[col];
                if f != 0.0 {
                    for (x, p) in ai[col..].iter_mut().zip(&pivot_row[col..]) {
                        *x -= f * p;
                    }
                    *bi -= f * pivot_b;
                }
            }
        }
        pivot_of_col[col] = Some(row);
        row += 1;
    }
    (0..n)
        .map(|c| pivot_of_col[c].map_or(0.0, |r| b[r] / a[r][c]))
        .collect()
}

/// Locates homes: `profiles[h][b]` is home h's mean latency from reader b (ns), `lines[h]`
/// its lines, `readers[b]` the readers' stops, `sigma` the noise of one profile element
/// of one line (ns).
pub fn locate(
    fp: &Floorplan,
    readers: &[StopId],
    profiles: &[Vec<f64>],
    lines: &[usize],
    sigma: f64,
) -> Vec<Located> {
    let h_n = profiles.len();
    let c_n = readers.len();
    let nf = fp.grid.feature_count();
    if h_n == 0 || c_n == 0 || fp.candidates.is_empty() {
        return Vec::new();
    }
    // Start: the candidate nearest the fastest reader.
    let mut at: Vec<StopId> = profiles
        .iter()
        .map(|p| {
            let b = (0..c_n).min_by(|&i, &j| p[i].total_cmp(&p[j])).unwrap_or(0);
            *fp.candidates
                .iter()
                .min_by_key(|&&s| fp.grid.manhattan(s, readers[b]))
                .unwrap_or(&fp.candidates[0])
        })
        .collect();
    let w: Vec<f64> = lines.iter().map(|&n| n.max(1) as f64).collect();
    let mut g = vec![0.0; c_n];
    let mut beta = vec![0.0; nf];
    // Unknowns: alpha (h_n), g[1..] (c_n - 1), beta (nf).
    let nu = h_n + c_n - 1 + nf;
    let fit = |at: &[StopId], g: &mut Vec<f64>, beta: &mut Vec<f64>| {
        let mut a = vec![vec![0.0; nu]; nu];
        let mut rhs = vec![0.0; nu];
        let mut x = vec![0.0; nu];
        for h in 0..h_n {
            for b in 0..c_n {
                x.iter_mut().for_each(|v| *v = 0.0);
                x[h] = 1.0;
                if b > 0 {
                    x[h_n + b - 1] = 1.0;
                }
                for (k, f) in fp.grid.features(readers[b], at[h]).iter().enumerate() {
                    x[h_n + c_n - 1 + k] = *f;
                }
                let y = profiles[h][b];
                for i in 0..nu {
                    if x[i] == 0.0 {
                        continue;
                    }
                    rhs[i] += w[h] * x[i] * y;
                    for j in 0..nu {
                        a[i][j] += w[h] * x[i] * x[j];
                    }
                }
            }
        }
        let sol = solve(a, rhs);
        g[0] = 0.0;
        g[1..c_n].copy_from_slice(&sol[h_n..h_n + c_n - 1]);
        beta.copy_from_slice(&sol[h_n + c_n - 1..]);
    };
    // Squared error of home h at stop s (alpha at its best), unweighted.
    let cost = |h: usize, s: StopId, g: &[f64], beta: &[f64]| -> f64 {
        let r: Vec<f64> = (0..c_n)
            .map(|b| {
                let f = fp.grid.features(readers[b], s);
                profiles[h][b] - g[b] - f.iter().zip(beta).map(|(x, c)| x * c).sum::<f64>()
            })
            .collect();
        let m = r.iter().sum::<f64>() / c_n as f64;
        r.iter().map(|x| (x - m) * (x - m)).sum()
    };
    for _ in 0..50 {
        fit(&at, &mut g, &mut beta);
        // Every home's costs at every candidate.
        let costs: Vec<Vec<f64>> = (0..h_n)
            .map(|h| {
                fp.candidates
                    .iter()
                    .map(|&s| cost(h, s, &g, &beta))
                    .collect()
            })
            .collect();
        let mut order: Vec<(f64, usize)> = costs
            .iter()
            .enumerate()
            .map(|(h, c)| {
                let mut v = c.clone();
                v.sort_by(f64::total_cmp);
                let gap = if v.len() > 1 { v[1] - v[0] } else { 0.0 };
                (-gap * w[h], h)
            })
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut taken = vec![false; fp.candidates.len()];
        let free_stops = fp.candidates.len() >= h_n;
        let mut next = at.clone();
        for &(_, h) in &order {
            let best = (0..fp.candidates.len())
                .filter(|&i| !free_stops || !taken[i])
                .min_by(|&i, &j| costs[h][i].total_cmp(&costs[h][j]));
            if let Some(i) = best {
                taken[i] = true;
                next[h] = fp.candidates[i];
            }
        }
        if next == at {
            break;
        }
        at = next;
    }
    fit(&at, &mut g, &mut beta);
    let var = sigma.max(1e-6).powi(2);
    (0..h_n)
        .map(|h| {
            let here = cost(h, at[h], &g, &beta);
            let other = fp
                .candidates
                .iter()
                .filter(|&&s| s != at[h])
                .map(|&s| cost(h, s, &g, &beta))
                .fold(f64::INFINITY, f64::min);
            let delta = (other - here) * w[h];
            let confidence = if other.is_finite() {
                1.0 / (1.0 + (-delta / (2.0 * var)).exp())
            } else {
                1.0
            };
            Located {
                stop: at[h],
                confidence,
                residual_ns: (here / c_n as f64).sqrt(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Access;
    use crate::truth::{TruthMachine, TruthOptions};
    use numalab_layout::HopCosts;

    #[test]
    fn a_layout_output_without_an_inference_record_is_refused() {
        let path = std::path::Path::new("layout-out");
        let other = numalab_schema::Record::new(
            "memconfig",
            numalab_schema::Origin::Measured,
            &numalab_records::memconfig::MemConfig::default(),
        );
        for records in [vec![], vec![other]] {
            let e = Floorplan::from_layout_records(&records, path).unwrap_err();
            assert_eq!(
                numalab_schema::Classify::class(&e),
                numalab_schema::ErrorClass::Input
            );
            assert_eq!(
                e.to_string(),
                "layout-out: holds no layout.inference record; run `numalab layout infer --out DIR` first"
            );
        }
    }

    #[test]
    fn a_floorplan_that_cannot_be_read_says_what_to_give() {
        let dir = std::env::temp_dir().join(format!("numalab-fp-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = Floorplan::read(&dir).unwrap_err();
        assert_eq!(
            numalab_schema::Classify::class(&e),
            numalab_schema::ErrorClass::Input
        );
        let text = e.to_string();
        assert!(!text.starts_with("floorplan: "), "{text}");
        assert!(
            text.ends_with("; give the output of `numalab layout infer --out DIR` or `--json`"),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn homes_are_found_at_their_stops_on_the_true_floorplan() {
        let m = TruthMachine::generate(&TruthOptions {
            noise_ns: 0.0,
            pages: 1,
            page_bytes: 64 << 10,
            ..TruthOptions::new("knl-7210")
        })
        .unwrap();
        let grid = numalab_layout::groundtruth::preset_grid(&m.model, HopCosts::Fit).unwrap();
        let fp = Floorplan {
            name: "truth".into(),
            candidates: grid.target_stops(),
            cpu_stop: m
                .layout
                .core_stop
                .iter()
                .enumerate()
                .map(|(c, &s)| (c as u32, s))
                .collect(),
            grid,
        };
        let cpus: Vec<u32> = (0..64).collect();
        let probe = fp.spread(&cpus, 17);
        assert_eq!(probe.len(), 17);
        let owner = probe[0];
        let readers: Vec<u32> = probe[1..].to_vec();
        let stops: Vec<StopId> = readers.iter().map(|c| fp.cpu_stop[c]).collect();
        let profiles: Vec<Vec<f64>> = (0..m.home_stops.len() as u8)
            .map(|h| {
                readers
                    .iter()
                    .map(|&r| m.latency_ns(Access::Forwarded, r, Some(owner), h, 0))
                    .collect()
            })
            .collect();
        let lines = vec![100; profiles.len()];
        let loc = locate(&fp, &stops, &profiles, &lines, 0.5);
        let right = loc
            .iter()
            .zip(&m.home_stops)
            .filter(|(l, &t)| l.stop == t)
            .count();
        assert_eq!(right, m.home_stops.len(), "{loc:?}");
        assert!(loc
            .iter()
            .all(|l| l.residual_ns < 1e-6 && l.confidence > 0.99));
    }

    #[test]
    fn the_solver_handles_a_singular_system() {
        let x = solve(vec![vec![1.0, 1.0], vec![1.0, 1.0]], vec![2.0, 2.0]);
        assert!((x[0] + x[1] - 2.0).abs() < 1e-9 || x.iter().all(|v| v.is_finite()));
        let y = solve(vec![vec![2.0, 0.0], vec![0.0, 4.0]], vec![2.0, 8.0]);
        assert_eq!(y, vec![1.0, 2.0]);
    }
}
