//! Carrying out a schedule: for real, every task at once, each pinned to its cores with its
//! memory policy (through `numalab_proc`: no shell unless the mix asks, timeouts, the whole
//! process group cleaned up), or on the machine model, where a task's predicted time is
//! scaled by the latencies its placement gives (see [`evaluate_on_model`]).

use crate::mix::{Mix, Task};
use crate::plan::{set_makespan, Assignment, HomeAffinity, Plan, Resources};
use numalab_layout::affinity::CostMatrix;
use numalab_layout::error::LayoutError;
use numalab_model::latency::{core_to_core_matrix, memory_read_cycles, Placement};
use numalab_model::Model;
use numalab_proc::{spawn, Spec};
pub use numalab_records::schedule::{ScheduleRun, TaskRun};
use numalab_topo::bind::MemPolicy;
use std::collections::BTreeMap;
use std::time::Instant;

fn vars(a: &Assignment, home: Option<&HomeAffinity>) -> Vec<(&'static str, String)> {
    let map = home
        .and_then(|h| h.map_path.clone())
        .filter(|_| a.home_distance.is_some());
    vec![
        ("threads", a.threads.to_string()),
        ("cpus", numalab_schema::cpulist::format(&a.cpus)),
        ("node", a.mem_node.unwrap_or(0).to_string()),
        ("home_map", map.unwrap_or_default()),
        (
            "home_distance",
            a.home_distance.map(|d| d.to_string()).unwrap_or_default(),
        ),
    ]
}

fn spec_of(task: &Task, a: &Assignment, home: Option<&HomeAffinity>) -> Result<Spec, LayoutError> {
    let (cpus, node) = (&a.cpus, a.mem_node);
    let v = vars(a, home);
    let argv = numalab_proc::substitute(&task.command, &v)
        .map_err(|e| LayoutError::Usage(format!("task {:?}: {e}", task.name)))?;
    let mut env = Vec::new();
    if let (Some(h), Some(d)) = (home.and_then(|h| h.map_path.as_ref()), a.home_distance) {
        env.push(("NUMALAB_HOME_MAP".to_string(), h.clone()));
        env.push(("NUMALAB_HOME_DISTANCE".to_string(), d.to_string()));
        env.push((
            "NUMALAB_HOME_CPUS".to_string(),
            numalab_schema::cpulist::format(cpus),
        ));
    }
    for (k, val) in &task.env {
        let s = numalab_proc::substitute(std::slice::from_ref(val), &v)
            .map_err(|e| LayoutError::Usage(format!("task {:?}, env {k}: {e}", task.name)))?;
        env.push((k.clone(), s.into_iter().next().unwrap_or_default()));
    }
    Ok(Spec {
        argv,
        shell: task.shell,
        env,
        timeout: task.timeout,
        cpus: Some(cpus.to_vec()),
        mem_policy: node.map(|n| MemPolicy::Bind(vec![n])),
        tail_bytes: 4096,
        ..Default::default()
    })
}

/// Checks every task's command can be substituted (before anything runs).
pub fn check_commands(
    mix: &Mix,
    plan: &Plan,
    home: Option<&HomeAffinity>,
) -> Result<(), LayoutError> {
    for (t, a) in mix.tasks.iter().zip(&plan.assignments) {
        spec_of(t, a, home)?;
    }
    Ok(())
}

/// Runs every task of the plan at once and waits for all. A task that cannot start stops
/// the others and is an error (nothing would work); a task that fails is recorded.
pub fn run_plan(
    mix: &Mix,
    plan: &Plan,
    home: Option<&HomeAffinity>,
) -> Result<ScheduleRun, LayoutError> {
    let specs: Vec<Spec> = mix
        .tasks
        .iter()
        .zip(&plan.assignments)
        .map(|(t, a)| spec_of(t, a, home))
        .collect::<Result<_, _>>()?;
    let start = Instant::now();
    let mut running = Vec::new();
    for (k, s) in specs.iter().enumerate() {
        match spawn(s) {
            Ok(r) => running.push(r),
            Err(e) => {
                // Stop what was started: dropping a running task kills and reaps its group.
                drop(running);
                return Err(LayoutError::Runtime(format!(
                    "task {:?} could not start: {e}",
                    mix.tasks[k].name
                )));
            }
        }
    }
    let outcomes: Vec<(numalab_proc::Outcome, f64)> = std::thread::scope(|scope| {
        let hs: Vec<_> = running
            .into_iter()
            .map(|r| {
                scope.spawn(move || {
                    let o = r.wait();
                    (o, start.elapsed().as_secs_f64())
                })
            })
            .collect();
        hs.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    if numalab_schema::interrupt::requested() {
        return Err(LayoutError::Interrupted);
    }
    let mut tasks = Vec::new();
    let mut makespan: f64 = 0.0;
    for ((o, end), (t, a)) in outcomes
        .into_iter()
        .zip(mix.tasks.iter().zip(&plan.assignments))
    {
        makespan = makespan.max(end);
        let ok = o.success();
        tasks.push(TaskRun {
            task: t.name.clone(),
            threads: a.threads,
            cpulist: a.cpulist.clone(),
            mem_policy: a.mem_node.map_or("first-touch".to_string(), |n| {
                MemPolicy::Bind(vec![n]).to_string()
            }),
            argv: o.argv.clone(),
            ok,
            exit_code: o.exit_code,
            signal: o.signal_name.clone(),
            timed_out: o.timed_out,
            wall_s: o.wall_ns as f64 / 1e9,
            end_s: end,
            cpus_busy: o.cpus_busy(),
            stdout_tail: last_kib(&o.stdout_tail),
            stderr_tail: (!ok).then(|| o.stderr_tail.clone()),
        });
    }
    Ok(ScheduleRun {
        makespan_s: makespan,
        ok: tasks.iter().all(|t| t.ok),
        tasks,
    })
}

fn last_kib(s: &str) -> String {
    let start = s.len().saturating_sub(1024);
    let start = (start..=s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    s[start..].to_string()
}

/// The cores of a modeled machine: OS order, the model's nodes, and its core-to-core
/// latencies (zero-load, ns) as the floorplan.
pub fn model_resources(model: &Model) -> Resources {
    let n = model.cores.len();
    let cyc = core_to_core_matrix(model, &Placement::slices(model), None);
    let mut ns = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            if i != j {
                ns[i * n + j] = model.ns(0.5 * (cyc[i][j] + cyc[j][i]));
            }
        }
    }
    let cpus: Vec<u32> = (0..n as u32).collect();
    Resources {
        node_of: model
            .cores
            .iter()
            .enumerate()
            .map(|(i, c)| (i as u32, c.node))
            .collect(),
        compact: cpus.clone(),
        distance: Some(CostMatrix {
            cpus: cpus.clone(),
            ns,
            source: "model".into(),
            notes: Vec::new(),
        }),
        cpus,
        source: format!("model {}", model.label),
        home: None,
    }
}

/// Mean zero-load read latency (cycles) from these cores to a node's memory: lines of the
/// node spread over homes and controllers by the model's address map (4096 lines). With
/// home affinity `Some(d)`, each core reads only lines homed within `d` hops of it (the
/// nearest homes' lines when none is that close).
fn memory_latency(model: &Model, cores: &[u32], node: Option<u32>, home: Option<u32>) -> f64 {
    let mut s = 0.0;
    let mut n = 0.0;
    for &c in cores {
        let stop = model.cores[c as usize].stop;
        let nd = node.unwrap_or(model.cores[c as usize].node);
        let lines: Vec<(f64, u32)> = (0..4096u64)
            .map(|line| {
                let loc = model.locate(nd, line);
                let h = model.slices[loc.home].stop;
                (
                    memory_read_cycles(model, stop, h, loc.mc),
                    model.geo.hops(stop, h),
                )
            })
            .collect();
        let limit = home.map(|d| {
            let nearest = lines.iter().map(|l| l.1).min().unwrap_or(0);
            d.max(nearest)
        });
        for (cyc, hops) in lines {
            if limit.is_none_or(|d| hops <= d) {
                s += cyc;
                n += 1.0;
            }
        }
    }
    if n > 0.0 {
        s / n
    } else {
        0.0
    }
}

fn pair_latency(d: &CostMatrix, cores: &[u32]) -> Option<f64> {
    if cores.len() < 2 {
        return None;
    }
    let mut s = 0.0;
    let mut k = 0.0;
    for (i, &a) in cores.iter().enumerate() {
        for &b in &cores[..i] {
            s += d.get(a as usize, b as usize);
            k += 1.0;
        }
    }
    Some(s / k)
}

/// Scales each task's predicted time by what its placement costs on the model:
/// `T = T_fit (1 - m - c + m Lmem / Lmem_ref + c Lc2c / Lc2c_ref)`, where `m` and `c`
/// are the task's `memory_bound` and `communication_bound`, `Lmem` the mean zero-load
/// read latency from its cores to its memory node (first touch: each core's own node),
/// `Lc2c` the mean core-to-core latency between its cores, and `_ref` the same for the
/// reference placement the history is taken to describe: OS cores 0..t-1, first touch.
/// Returns the factor of each task of each plan.
pub fn evaluate_on_model(
    mix: &Mix,
    plans: &mut [Plan],
    model: &Model,
    res: &Resources,
) -> Vec<Vec<f64>> {
    let d = res.distance.clone().unwrap_or(CostMatrix {
        cpus: Vec::new(),
        ns: Vec::new(),
        source: String::new(),
        notes: Vec::new(),
    });
    let mut reference: BTreeMap<usize, (f64, Option<f64>)> = BTreeMap::new();
    let mut out = Vec::new();
    for plan in plans.iter_mut() {
        let mut factors = Vec::new();
        for (t, a) in mix.tasks.iter().zip(plan.assignments.iter_mut()) {
            let (mref, cref) = *reference.entry(a.threads).or_insert_with(|| {
                let cores: Vec<u32> = (0..a.threads as u32).collect();
                (
                    memory_latency(model, &cores, None, None),
                    pair_latency(&d, &cores),
                )
            });
            let mem = memory_latency(model, &a.cpus, a.mem_node, a.home_distance);
            let c2c = pair_latency(&d, &a.cpus);
            let mut f = 1.0 - t.memory_bound - t.communication_bound;
            f += t.memory_bound * if mref > 0.0 { mem / mref } else { 1.0 };
            f += t.communication_bound
                * match (c2c, cref) {
                    (Some(x), Some(r)) if r > 0.0 => x / r,
                    _ => 1.0,
                };
            if let Some(p) = a.predicted_s.as_mut() {
                *p *= f;
            }
            if let Some(b) = a.predicted_band_s.as_mut() {
                b[0] *= f;
                b[1] *= f;
            }
            factors.push(f);
        }
        set_makespan(plan);
        plan.notes.push(format!(
            "evaluated on {}: each task's fitted time scaled by its placement's latencies (factors {})",
            res.source,
            factors.iter().map(|f| format!("{f:.3}")).collect::<Vec<_>>().join(", ")
        ));
        out.push(factors);
    }
    out
}
