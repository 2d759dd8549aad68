//! The three schedules of experiments.md C4. All tasks of the mix run at once, each on its
//! own cores (one thread per core); a schedule chooses each task's thread count, its
//! cores and its memory node.
//!
//! - **fair**: cores in proportion to data size (the largest allowed thread count not
//!   above the task's share, at least its smallest), OS placement: consecutive blocks of
//!   OS CPU numbers in mix order, memory left to first touch.
//! - **load**: thread counts from the predicted run times, chosen to minimise the
//!   predicted makespan (the longest task). With every task on its own cores this is
//!   exact: for a candidate makespan M each task needs the fewest allowed threads whose
//!   predicted time is at most M; the smallest M whose needs fit on the cores is the
//!   optimum, found by bisection over the finitely many predicted times. Cores left over
//!   go, one allowed step at a time, to the task predicted to finish last. OS placement.
//! - **optimized**: load's thread counts, placed on the floorplan: each task (largest
//!   first) gets the free cores with the least mean latency between them, grown greedily
//!   from every possible first core, and its memory is bound to the NUMA node holding most
//!   of them. Without a floorplan, the topology's compact order (cores sharing caches,
//!   clusters and nodes together) stands in for it. With a home map, each task's data is
//!   also placed on lines homed within a chosen distance of its cores (home affinity:
//!   the model evaluation reads only such lines; a real run hands the map to the task's
//!   allocator in `NUMALAB_HOME_MAP` and `NUMALAB_HOME_DISTANCE`).

use crate::history::RuntimeModel;
use crate::mix::Mix;
use numalab_layout::affinity::CostMatrix;
use numalab_layout::error::LayoutError;
pub use numalab_records::schedule::{Assignment, Plan};
use std::collections::BTreeMap;

/// The cores a schedule may use and what is known about where they are.
#[derive(Debug, Clone)]
pub struct Resources {
    /// Available CPUs, ascending OS ids.
    pub cpus: Vec<u32>,
    /// NUMA node of each CPU.
    pub node_of: BTreeMap<u32, u32>,
    /// The CPUs in topology-compact order.
    pub compact: Vec<u32>,
    /// Latency between CPUs (an inferred floorplan, or the model's), if known.
    pub distance: Option<CostMatrix>,
    /// "this machine", "model knl-7210", ...
    pub source: String,
    /// A home map to enforce home affinity with in the optimized schedule.
    pub home: Option<HomeAffinity>,
}

/// Home affinity for the optimized schedule: each task's data on lines homed within
/// `distance` hops of its cores (experiments.md C4, "optimized").
#[derive(Debug, Clone, PartialEq)]
pub struct HomeAffinity {
    /// Largest distance, hops, between a task's cores and its lines' homes.
    pub distance: u32,
    /// Where the map comes from ("the model's address map", a `home.map` file).
    pub source: String,
    /// The map file a task's allocator opens (live runs), handed over in
    /// `NUMALAB_HOME_MAP` (and `{home_map}`).
    pub map_path: Option<String>,
}

/// Predicted run times: from fitted models (seconds) or, for tasks without history, none.
pub struct Predictor<'a> {
    /// Per task.
    pub models: &'a [Option<RuntimeModel>],
}

impl Predictor<'_> {
    /// Whether every task has a model.
    pub fn complete(&self) -> bool {
        self.models.iter().all(Option::is_some)
    }

    /// The time used to choose thread counts: the model's prediction, or, when some task
    /// has no history, data size / threads for every task (a proxy: work proportional to
    /// data, perfect scaling).
    pub fn choose(&self, mix: &Mix, i: usize, t: usize) -> f64 {
        if self.complete() {
            self.models[i].as_ref().map_or(f64::NAN, |m| m.predict(t))
        } else {
            mix.tasks[i].data_bytes as f64 / t as f64
        }
    }
}

/// Checks that every task and the whole mix fit on `p` cores.
pub fn check_fits(mix: &Mix, p: usize) -> Result<(), LayoutError> {
    for t in &mix.tasks {
        if t.threads[0] > p {
            return Err(LayoutError::Usage(format!(
                "task {:?} needs at least {} threads but only {p} cores are available; allow fewer threads in {} or give more cores",
                t.name, t.threads[0], mix.source
            )));
        }
    }
    let need: usize = mix.tasks.iter().map(|t| t.threads[0]).sum();
    if need > p {
        return Err(LayoutError::Usage(format!(
            "the tasks run at once, one core per thread: their smallest thread counts need {need} cores but only {p} are available; allow fewer threads or remove tasks from {}",
            mix.source
        )));
    }
    Ok(())
}

/// Fair thread counts: proportional to data size.
pub fn fair_threads(mix: &Mix, p: usize) -> Vec<usize> {
    let total: f64 = mix.tasks.iter().map(|t| t.data_bytes as f64).sum();
    let mut t: Vec<usize> = mix
        .tasks
        .iter()
        .map(|task| {
            let share = p as f64 * task.data_bytes as f64 / total;
            task.threads
                .iter()
                .rev()
                .find(|&&a| a as f64 <= share + 1e-9)
                .copied()
                .unwrap_or(task.threads[0])
        })
        .collect();
    // Minimums raised above their share can overflow: shrink the most over-served task.
    while t.iter().sum::<usize>() > p {
        let share = |i: usize| p as f64 * mix.tasks[i].data_bytes as f64 / total;
        let k = (0..t.len())
            .filter(|&i| t[i] > mix.tasks[i].threads[0])
            .max_by(|&a, &b| (t[a] as f64 / share(a)).total_cmp(&(t[b] as f64 / share(b))));
        let Some(k) = k else { break };
        let allowed = &mix.tasks[k].threads;
        let pos = allowed.iter().position(|&a| a == t[k]).unwrap_or(0);
        t[k] = allowed[pos.saturating_sub(1)];
    }
    t
}

/// Load-balanced thread counts minimising the largest `time(i, t)`.
pub fn load_threads(mix: &Mix, p: usize, time: &dyn Fn(usize, usize) -> f64) -> Vec<usize> {
    let n = mix.tasks.len();
    let mut cands: Vec<f64> = (0..n)
        .flat_map(|i| mix.tasks[i].threads.iter().map(move |&t| (i, t)))
        .map(|(i, t)| time(i, t))
        .filter(|v| v.is_finite())
        .collect();
    cands.sort_by(f64::total_cmp);
    cands.dedup();
    let need = |m: f64| -> Option<Vec<usize>> {
        let v: Option<Vec<usize>> = (0..n)
            .map(|i| {
                mix.tasks[i]
                    .threads
                    .iter()
                    .copied()
                    .find(|&t| time(i, t) <= m * (1.0 + 1e-12))
            })
            .collect();
        v.filter(|v| v.iter().sum::<usize>() <= p)
    };
    let (mut lo, mut hi) = (0usize, cands.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if need(cands[mid]).is_some() {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let mut t = cands
        .get(lo)
        .and_then(|&m| need(m))
        .unwrap_or_else(|| mix.tasks.iter().map(|x| x.threads[0]).collect());
    // Spare cores: to the task predicted last, while its next allowed count fits and helps.
    loop {
        let spare = p - t.iter().sum::<usize>();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| time(b, t[b]).total_cmp(&time(a, t[a])));
        let step = order.into_iter().find_map(|i| {
            let next = mix.tasks[i].threads.iter().copied().find(|&x| x > t[i])?;
            (next - t[i] <= spare && time(i, next) < time(i, t[i])).then_some((i, next))
        });
        match step {
            Some((i, next)) => t[i] = next,
            None => break,
        }
    }
    t
}

/// Consecutive blocks of the CPUs in the given order, in task order.
pub fn blocks(threads: &[usize], order: &[u32]) -> Vec<Vec<u32>> {
    let mut at = 0;
    threads
        .iter()
        .map(|&t| {
            let mut b: Vec<u32> = order[at..at + t].to_vec();
            b.sort_unstable();
            at += t;
            b
        })
        .collect()
}

/// Compact clusters on the floorplan (largest task first), or compact-order blocks.
pub fn clusters(threads: &[usize], res: &Resources) -> Vec<Vec<u32>> {
    let Some(d) = &res.distance else {
        // Largest first in compact order keeps big tasks on whole caches/nodes.
        let mut order: Vec<usize> = (0..threads.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(threads[i]));
        let mut out = vec![Vec::new(); threads.len()];
        let mut at = 0;
        for i in order {
            let mut b: Vec<u32> = res.compact[at..at + threads[i]].to_vec();
            b.sort_unstable();
            out[i] = b;
            at += threads[i];
        }
        return out;
    };
    let pos: Vec<usize> = res
        .cpus
        .iter()
        .filter_map(|c| d.cpus.iter().position(|x| x == c))
        .collect();
    let mut free: Vec<bool> = vec![true; pos.len()];
    let mut order: Vec<usize> = (0..threads.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(threads[i]));
    let mut out = vec![Vec::new(); threads.len()];
    for i in order {
        let k = threads[i];
        let mut best: Option<(f64, Vec<usize>)> = None;
        for s in (0..pos.len()).filter(|&s| free[s]) {
            let mut set = vec![s];
            let mut sum = vec![0.0; pos.len()];
            let mut total = 0.0;
            while set.len() < k {
                for c in 0..pos.len() {
                    sum[c] += d.get(pos[c], pos[*set.last().unwrap_or(&s)]);
                }
                let next = (0..pos.len())
                    .filter(|&c| free[c] && !set.contains(&c))
                    .min_by(|&a, &b| sum[a].total_cmp(&sum[b]).then(a.cmp(&b)));
                let Some(c) = next else { break };
                total += sum[c];
                set.push(c);
            }
            if set.len() < k {
                continue;
            }
            if best.as_ref().is_none_or(|b| total < b.0 - 1e-12) {
                best = Some((total, set));
            }
        }
        let set = best.map(|b| b.1).unwrap_or_default();
        for &c in &set {
            free[c] = false;
        }
        let mut cpus: Vec<u32> = set.iter().map(|&c| res.cpus[c]).collect();
        cpus.sort_unstable();
        out[i] = cpus;
    }
    out
}

/// The node holding most of the CPUs (lowest id on ties).
pub fn majority_node(cpus: &[u32], res: &Resources) -> Option<u32> {
    let mut count: BTreeMap<u32, usize> = BTreeMap::new();
    for c in cpus {
        if let Some(&n) = res.node_of.get(c) {
            *count.entry(n).or_default() += 1;
        }
    }
    count
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|x| x.0)
}

/// Builds the three schedules.
pub fn build(mix: &Mix, res: &Resources, pred: &Predictor) -> Result<Vec<Plan>, LayoutError> {
    let p = res.cpus.len();
    check_fits(mix, p)?;
    let fair = fair_threads(mix, p);
    let load = load_threads(mix, p, &|i, t| pred.choose(mix, i, t));
    let os = |threads: &[usize]| blocks(threads, &res.cpus);
    let mut plans = Vec::new();
    for (name, threads, cpus, bind) in [
        ("fair", fair.clone(), os(&fair), false),
        ("load", load.clone(), os(&load), false),
        ("optimized", load.clone(), clusters(&load, res), true),
    ] {
        let mut notes = Vec::new();
        if !pred.complete() {
            notes.push("some tasks have no history: thread counts follow data size / threads (a proxy), and no run time is predicted".into());
        }
        let home = res.home.as_ref().filter(|_| name == "optimized");
        if let Some(h) = home {
            notes.push(format!(
                "home affinity: each task's data on lines homed within {} hop(s) of its cores ({})",
                h.distance, h.source
            ));
        }
        if name == "optimized" && res.distance.is_none() {
            notes.push(format!(
                "no floorplan for {}: cores chosen in the topology's compact order",
                res.source
            ));
        }
        let assignments: Vec<Assignment> = (0..mix.tasks.len())
            .map(|i| {
                let m = pred.models[i].as_ref().filter(|_| pred.complete());
                let predicted = m.map(|m| m.predict(threads[i]));
                Assignment {
                    task: mix.tasks[i].name.clone(),
                    threads: threads[i],
                    cpulist: numalab_schema::cpulist::format(&cpus[i]),
                    mem_node: if bind {
                        majority_node(&cpus[i], res)
                    } else {
                        None
                    },
                    cpus: cpus[i].clone(),
                    home_distance: home.map(|h| h.distance),
                    predicted_s: predicted,
                    predicted_band_s: m.zip(predicted).map(|(m, v)| {
                        [
                            v * (1.0 - m.residual_rel).max(0.0),
                            v * (1.0 + m.residual_rel),
                        ]
                    }),
                }
            })
            .collect();
        let mut plan = Plan {
            schedule: name.to_string(),
            assignments,
            predicted_makespan_s: None,
            predicted_band_s: None,
            notes,
        };
        set_makespan(&mut plan);
        plans.push(plan);
    }
    Ok(plans)
}

/// Sets the plan's predicted makespan and band from its assignments.
pub fn set_makespan(plan: &mut Plan) {
    let v: Option<Vec<f64>> = plan.assignments.iter().map(|a| a.predicted_s).collect();
    plan.predicted_makespan_s = v.map(|v| v.into_iter().fold(0.0, f64::max));
    let b: Option<Vec<[f64; 2]>> = plan
        .assignments
        .iter()
        .map(|a| a.predicted_band_s)
        .collect();
    plan.predicted_band_s = b.map(|b| {
        [
            b.iter().map(|x| x[0]).fold(0.0, f64::max),
            b.iter().map(|x| x[1]).fold(0.0, f64::max),
        ]
    });
}
