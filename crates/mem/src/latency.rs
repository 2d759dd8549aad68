//! Idle memory latency: a dependent pointer chase, per working-set size and per node
//! pair, with base pages and with huge pages.
//!
//! For each working set a random cyclic chain ([`crate::chase`]; by default every line
//! in uniformly random order, the one order of every memory-latency figure) is written
//! into memory placed on the asked node by the pinned thread that chases it. Each record
//! names what its figures are ([`Kind`]: idle or loaded, order, pages, locality, the
//! last-level cache the working set is set against). After a warm-up walk,
//! the chase is timed in many batches of a few thousand dependent loads (each batch
//! lasts at least 100x the clock's resolution and read cost; one clock read is
//! subtracted per batch); every point reports percentiles over batches. Plateaus and
//! steps of the curve are found by `numalab_stats::plateau` and named after the caches
//! of the CPU that chased, by size.

use crate::chase::{Chain, Order};
use crate::pool;
use crate::{
    budget, check_clock, frequency_of, llc_bytes, Cells, MemError, Outcome, PageRequest,
    PagesObtained, Sink, Timer,
};
use numalab_schema::machine::CacheKind;
use numalab_schema::{cpulist, units, Machine, Origin, Record, Warning};
use numalab_stats::plateau::{self, KneeOptions};
use numalab_stats::Summary;
use numalab_topo::bind::{MemPolicy, Placer, Region};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most timed batches per point `--batches` takes.
pub const MAX_BATCHES: usize = 1_000_000;

/// `--batches` between 5 (the fewest a summary takes) and [`MAX_BATCHES`]: every batch
/// is a sample kept in memory and in the record, and u64::MAX overflowed the samples'
/// buffer (a panic).
pub fn check_batches(batches: usize) -> Result<(), MemError> {
    if batches < 5 {
        return Err(MemError::Usage("--batches must be at least 5".into()));
    }
    if batches > MAX_BATCHES {
        return Err(MemError::Usage(format!(
            "--batches {batches}: at most {MAX_BATCHES}"
        )));
    }
    Ok(())
}

/// How to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Timed batches per point.
    pub batches: usize,
    /// Target duration of one batch, ns (raised to the clock's minimum interval).
    pub batch_ns: f64,
    /// Visiting order.
    pub order: Order,
    /// Seed of the random orders (recorded).
    pub seed: u64,
    /// Distance between the chain's slots, bytes: the cache line (every line is used),
    /// or twice it, so that only one line of each 128-byte pair is visited and an
    /// adjacent-line prefetcher brings nothing the chain will use.
    pub stride_bytes: u64,
}

impl Options {
    /// Sets the chase's stride: a power of two from 8 to 4096 bytes, else an error
    /// saying so.
    pub fn set_stride(&mut self, bytes: u64) -> Result<(), &'static str> {
        if !bytes.is_power_of_two() || !(8..=4096).contains(&bytes) {
            return Err("a power of two from 8 to 4096 bytes");
        }
        self.stride_bytes = bytes;
        Ok(())
    }
    /// Defaults on `machine`: 200 batches of 20 us, every line (stride = the L1 line
    /// size) in uniformly random order over the working set ([`Order::Global`]), the
    /// order every memory-latency figure of numalab uses (curves, node matrices, the
    /// loaded-latency probe), so that one name means one measurement.
    pub fn defaults(machine: &Machine) -> Options {
        let line = machine
            .caches
            .iter()
            .filter(|c| c.level == 1 && c.kind != CacheKind::Instruction)
            .find_map(|c| c.line_bytes)
            .unwrap_or(64) as u64;
        Options {
            batches: 200,
            batch_ns: 20_000.0,
            order: Order::Global,
            seed: numalab_stats::DEFAULT_SEED,
            stride_bytes: line.max(8),
        }
    }

    /// Defaults for idle memory latency (matrix, loaded latency): the same as
    /// [`Options::defaults`]. In uniformly random order an adjacent-line prefetcher
    /// brings a line the chase uses only if the chase reaches it while it is still
    /// cached, which over a working set 8x the last-level cache is rare, so every line
    /// is used, as in a plain C pointer chase.
    pub fn idle(machine: &Machine) -> Options {
        Options::defaults(machine)
    }

    /// The quick variant: 60 batches.
    pub fn quick(machine: &Machine) -> Options {
        Options {
            batches: 60,
            ..Options::defaults(machine)
        }
    }
}

/// Working-set sizes from `min` to `max` (bytes), `per_octave` points per doubling,
/// rounded to whole lines; ascending, no duplicates.
pub fn sizes(min: u64, max: u64, per_octave: u32, line: u64) -> Vec<u64> {
    let min = min.max(line);
    let per_octave = per_octave.max(1);
    let mut out = Vec::new();
    let mut i = 0u32;
    loop {
        let x = min as f64 * 2f64.powf(i as f64 / per_octave as f64);
        if x > max as f64 * 1.0001 {
            break;
        }
        let b = crate::round_up(x.round() as u64, line);
        if out.last() != Some(&b) {
            out.push(b);
        }
        i += 1;
    }
    if out.last().is_some_and(|&l| l < max) && max >= min {
        out.push(crate::round_up(max, line));
    }
    out
}

/// The default sweep for `cpu`: 4 KiB to 8x the last-level cache it sees (at least
/// 2x is needed to reach memory; 8x so the DRAM plateau shows even behind a victim
/// cache), at least 16 MiB.
pub fn default_sizes(machine: &Machine, cpu: u32, per_octave: u32, line: u64) -> Vec<u64> {
    sizes(4096, default_max(machine, cpu, false), per_octave, line)
}

/// The largest working set of the default sweep for `cpu`: 8x the last-level cache it
/// sees (4x for the quick sweep), at least 16 MiB.
fn default_max(machine: &Machine, cpu: u32, quick: bool) -> u64 {
    let (llc, _) = crate::llc_of_cpu(machine, cpu);
    (if quick { 4 * llc } else { 8 * llc }).max(16 << 20)
}

/// The sweep of `numalab mem latency` for `cpu`: `min` to `max` bytes (default: that of
/// the default or quick sweep), `per_octave` points per doubling (default 2, 1 when
/// quick), whole `line`s. A `min` above `max`, or `per_octave` 0 or past 1024, is a
/// usage error naming the values.
pub fn sweep(
    machine: &Machine,
    cpu: u32,
    min: u64,
    max: Option<u64>,
    per_octave: Option<u32>,
    quick: bool,
    line: u64,
) -> Result<Vec<u64>, MemError> {
    let max = max.unwrap_or_else(|| default_max(machine, cpu, quick));
    if min > max {
        return Err(MemError::Usage(format!(
            "--min {} is larger than --max {}",
            numalab_schema::units::bytes(min),
            numalab_schema::units::bytes(max)
        )));
    }
    if let Some(n @ (0 | 1025..)) = per_octave {
        return Err(MemError::Usage(format!(
            "--per-octave {n}: give 1 to 1024 working-set sizes per doubling"
        )));
    }
    let per_octave = per_octave.unwrap_or(if quick { 1 } else { 2 });
    Ok(sizes(min, max, per_octave, line))
}

/// The quick sweep for `cpu`: 4 KiB to 4x the last-level cache it sees (at least
/// 16 MiB), one point per octave.
pub fn quick_sizes(machine: &Machine, cpu: u32, line: u64) -> Vec<u64> {
    sizes(4096, default_max(machine, cpu, true), 1, line)
}

/// The largest working set of a default sweep (`--max` not given) fitted to the
/// memory of the nodes the chase of `cpus` under `policy` uses: `wanted` when its
/// region fits in what a probe may take from each of them ([`budget::SAFE_FRACTION`]
/// of its free memory, as an explicit `--max`: the chase maps one working set at a
/// time), else the largest whole 2 MiB (a huge page: the THP curve maps the same)
/// that fits in every one, with a note
/// saying so and whether the curve still goes past twice the CPU's last-level cache
/// (below that its end is the cache's, not memory's). When not even 2 MiB fits, or
/// no node has a budget, `wanted` stays and the plan's check refuses it with the
/// figures. A sweep of many cores on small nodes thus gets a shorter curve, not a
/// refusal.
pub fn fitted_sweep_max(
    machine: &Machine,
    budgets: &budget::Budgets,
    cpus: &[u32],
    policy: &MemPolicy,
    wanted: u64,
) -> (u64, Option<String>) {
    const HUGE: u64 = 2 << 20;
    let room = cpus
        .iter()
        .flat_map(|&c| pool::expected_nodes(machine, policy, c))
        .filter(|n| budgets.nodes.contains_key(n))
        .map(|n| (budgets.safe_bytes(n), n))
        .min();
    let Some((room, tightest)) = room else {
        return (wanted, None);
    };
    if region_bytes(wanted, PageRequest::Thp) <= room {
        return (wanted, None);
    }
    let fitted = room / HUGE * HUGE;
    if fitted == 0 {
        return (wanted, None);
    }
    let (llc, _) = crate::llc_of_cpu(machine, cpus.first().copied().unwrap_or(0));
    let reach = if fitted >= 2 * llc {
        format!(
            "it still ends at {:.1}x the last-level cache ({}), past it, in memory",
            fitted as f64 / llc.max(1) as f64,
            units::bytes(llc)
        )
    } else {
        format!(
            "it ends at {:.1}x the last-level cache ({}): its last points are the cache's, not memory's; `mem latency --matrix` fits the memory figure the same way",
            fitted as f64 / llc.max(1) as f64,
            units::bytes(llc)
        )
    };
    (
        fitted,
        Some(format!(
            "the sweep's largest working set reduced from the default {} to {}: {:.0}% of the free memory of node {tightest}, the tightest; {reach}; --max sets it, up to that",
            units::bytes(wanted),
            units::bytes(fitted),
            budget::SAFE_FRACTION * 100.0
        )),
    )
}

/// The plan `numalab mem latency --quick` runs (and `numalab evaluate --quick`): the
/// first CPU, local memory, base and transparent huge pages, the quick sweep.
pub fn quick_plan(machine: &Machine, budgets: &budget::Budgets) -> Result<Plan, MemError> {
    first_cpu_plan(machine, budgets, Options::quick(machine), |cpu, line| {
        quick_sizes(machine, cpu, line)
    })
}

/// The plan `numalab mem latency` runs without options (and `numalab evaluate`): the
/// first CPU, local memory, base and transparent huge pages, the default sweep (two
/// points per octave).
pub fn default_plan(machine: &Machine, budgets: &budget::Budgets) -> Result<Plan, MemError> {
    first_cpu_plan(machine, budgets, Options::defaults(machine), |cpu, line| {
        default_sizes(machine, cpu, 2, line)
    })
}

/// The plan of the quick and default runs with `opts`: the first CPU, local memory,
/// base and transparent huge pages, over the sweep `sizes` gives for that CPU (0 when
/// there is none) and `opts`' stride.
fn first_cpu_plan(
    machine: &Machine,
    budgets: &budget::Budgets,
    opts: Options,
    sizes: impl FnOnce(u32, u64) -> Vec<u64>,
) -> Result<Plan, MemError> {
    let cpus: Vec<u32> = machine.pu_ids().into_iter().take(1).collect();
    let mut sizes = sizes(cpus.first().copied().unwrap_or(0), opts.stride_bytes);
    let wanted = sizes.last().copied().unwrap_or(0);
    let (max, note) = fitted_sweep_max(machine, budgets, &cpus, &MemPolicy::FirstTouch, wanted);
    if max < wanted {
        sizes.retain(|&s| s < max);
        sizes.push(max);
    }
    let mut p = plan(
        machine,
        budgets,
        &cpus,
        &MemPolicy::FirstTouch,
        &[PageRequest::Base, PageRequest::Thp],
        sizes,
        opts,
    )?;
    p.notes.extend(note);
    Ok(p)
}

/// The default working set of idle latency (matrix, loaded latency): 8x the largest
/// last-level cache one CPU sees, at least 256 MiB.
pub fn default_idle_size(machine: &Machine) -> u64 {
    let llc = machine
        .pu_ids()
        .into_iter()
        .map(|p| crate::llc_of_cpu(machine, p).0)
        .max()
        .unwrap_or_else(|| llc_bytes(machine).0);
    crate::round_up((8 * llc).max(256 << 20), 1 << 20)
}

/// The default idle working set ([`default_idle_size`]) fitted to the memory of
/// `nodes`: unchanged when it fits in what a default may take from each of them
/// ([`budget::SWEEP_FRACTION`] of its free memory), else the largest whole MiB that
/// fits in every one, as long as that stays at least 8x the largest last-level cache
/// a CPU sees (a smaller chase would time the cache, not the memory); below that, that
/// floor itself when it fits what a probe may take ([`budget::SAFE_FRACTION`]), else
/// the default is kept and the plan's check refuses it with the figures and why. When no CPU's cache
/// size is known (hwloc reports none, as in an emulated Arm server), the floor cannot
/// be checked: the size is fitted all the same and the note says the figure may be a
/// cache's if the machine has a last-level cache above an eighth of it. A machine whose
/// nodes are small (or mostly in use) thus still gets its matrix, and says so: the
/// second value is the note for the plan when the size was reduced.
pub fn fitted_idle_size(
    machine: &Machine,
    budgets: &budget::Budgets,
    nodes: &[u32],
) -> (u64, Option<String>) {
    let wanted = default_idle_size(machine);
    let room = nodes
        .iter()
        .filter(|n| budgets.nodes.contains_key(n))
        .map(|&n| (budgets.sweep_bytes(n), n))
        .min();
    let Some((room, tightest)) = room else {
        return (wanted, None);
    };
    if wanted <= room {
        return (wanted, None);
    }
    let caches: Vec<(u64, Option<String>)> = machine
        .pu_ids()
        .into_iter()
        .map(|p| crate::llc_of_cpu(machine, p))
        .collect();
    let llc_known = caches.iter().any(|(_, assumed)| assumed.is_none());
    let llc = caches
        .iter()
        .map(|c| c.0)
        .max()
        .unwrap_or_else(|| llc_bytes(machine).0);
    let floor = crate::round_up(8 * llc, 1 << 20);
    let fitted = room / (1 << 20) * (1 << 20);
    if !llc_known && fitted >= 1 << 20 {
        return (
            fitted,
            Some(format!(
                "working set reduced from the default {} to {}: {:.0}% of the free memory of node {tightest}, the tightest; no cache size is known here, so if this machine's last-level cache is larger than {} the figures are a cache's, not memory's",
                units::bytes(wanted),
                units::bytes(fitted),
                budget::SWEEP_FRACTION * 100.0,
                units::bytes(fitted / 8)
            )),
        );
    }
    if fitted < floor {
        // The smallest chase that reaches memory, where the nodes' safe share (what an
        // explicit --size may take) holds it: a figure, rather than a refusal that a
        // smaller size would avoid.
        let safe_room = nodes
            .iter()
            .filter(|n| budgets.nodes.contains_key(n))
            .map(|&n| budgets.safe_bytes(n))
            .min()
            .unwrap_or(0);
        if floor <= safe_room && floor < wanted {
            return (
                floor,
                Some(format!(
                    "working set reduced from the default {} to {}, 8x the largest last-level cache ({}), the smallest chase that reaches memory: more than the {:.0}% of free memory a default takes from node {tightest}, within the {:.0}% a probe may take",
                    units::bytes(wanted),
                    units::bytes(floor),
                    units::bytes(llc),
                    budget::SWEEP_FRACTION * 100.0,
                    budget::SAFE_FRACTION * 100.0
                )),
            );
        }
        return (wanted, None);
    }
    (
        fitted,
        Some(format!(
            "working set reduced from the default {} to {}: {:.0}% of the free memory of node {tightest}, the tightest; still {}x the largest last-level cache ({}), so the chase reaches memory",
            units::bytes(wanted),
            units::bytes(fitted),
            budget::SWEEP_FRACTION * 100.0,
            fitted / llc.max(1),
            units::bytes(llc)
        )),
    )
}

/// One curve or matrix cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Record key.
    pub key: String,
    /// The chasing CPU.
    pub cpu: u32,
    /// Where the data goes.
    pub policy: MemPolicy,
    /// Node pair, for matrix cells (cpu node, memory node).
    pub matrix: Option<numalab_records::mem::MatrixCell>,
    /// Pages asked for.
    pub pages: PageRequest,
    /// Working sets, ascending.
    pub sizes: Vec<u64>,
}

/// A checked latency plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// How.
    pub options: Options,
    /// What.
    pub cells: Vec<Cell>,
    /// Facts the user should know.
    pub notes: Vec<String>,
}

impl Plan {
    /// Every record key, in order.
    pub fn keys(&self) -> Vec<String> {
        self.cells.iter().map(|c| c.key.clone()).collect()
    }
}

pub use crate::checks::check_hugetlb;
pub use numalab_records::mem::latency::{Kind, LatencyRecord, Level, Load, Locality, Point, Step};

/// Bytes a chase region maps for a largest working set `max`.
fn region_bytes(max: u64, pages: PageRequest) -> u64 {
    match pages {
        PageRequest::Base => crate::round_up(max, numalab_topo::bind::base_page_size() as u64),
        PageRequest::Thp => crate::round_up(max.max(2 << 20), 2 << 20),
        PageRequest::HugeTlb(s) => crate::round_up(max, s),
    }
}

fn check_cell_memory(
    machine: &Machine,
    budgets: &budget::Budgets,
    cell: &Cell,
    flag: &str,
) -> Result<(), MemError> {
    let max = *cell.sizes.last().unwrap_or(&0);
    let bytes = region_bytes(max, cell.pages);
    // The page size first: a size the machine does not have is the request's fault,
    // whatever memory is free at the moment.
    if let PageRequest::HugeTlb(s) = cell.pages {
        check_hugetlb(machine, s, bytes)?;
    }
    let mut need = BTreeMap::new();
    for n in pool::expected_nodes(machine, &cell.policy, cell.cpu) {
        budget::need(&mut need, n, bytes);
    }
    budgets.check(&need, "mem latency", flag)
}

fn check_cpu(machine: &Machine, cpu: u32) -> Result<(), MemError> {
    if machine.pu(cpu).is_none() {
        return Err(MemError::Usage(format!(
            "CPU {cpu} does not exist (CPUs: {}); see `numalab topo`",
            cpulist::format(&machine.pu_ids())
        )));
    }
    Ok(())
}

/// Plans latency curves: one per CPU in `cpus` and per page request, data placed by
/// `policy`, over `sizes`.
pub fn plan(
    machine: &Machine,
    budgets: &budget::Budgets,
    cpus: &[u32],
    policy: &MemPolicy,
    pages: &[PageRequest],
    sizes: Vec<u64>,
    options: Options,
) -> Result<Plan, MemError> {
    crate::checks::check_policy_nodes(machine, policy)?;
    if sizes.is_empty() {
        return Err(MemError::Usage(
            "the working-set range is empty (--min must not exceed --max)".into(),
        ));
    }
    check_batches(options.batches)?;
    let mut cells = Vec::new();
    for &cpu in cpus {
        check_cpu(machine, cpu)?;
        for &p in pages {
            let cell = Cell {
                key: format!("mem/latency/cpu{cpu}/{policy}/{}", p.name()),
                cpu,
                policy: policy.clone(),
                matrix: None,
                pages: p,
                sizes: sizes.clone(),
            };
            check_cell_memory(machine, budgets, &cell, "--max")?;
            cells.push(cell);
        }
    }
    Ok(Plan {
        options,
        cells,
        notes: llc_bytes(machine).1.into_iter().collect(),
    })
}

/// [`plan_matrix`] at `size` bytes, or when none is given at the default idle size
/// fitted to the memory nodes ([`fitted_idle_size`]; its note among the plan's).
pub fn fitted_plan_matrix(
    machine: &Machine,
    budgets: &budget::Budgets,
    pages: &[PageRequest],
    size: Option<u64>,
    options: Options,
) -> Result<Plan, MemError> {
    let (chosen, note) = match size {
        Some(s) => (s, None),
        None => fitted_idle_size(machine, budgets, &crate::bandwidth::memory_nodes(machine)),
    };
    let mut p = plan_matrix(machine, budgets, pages, chosen, options).map_err(|e| match e {
        MemError::Usage(m) if size.is_none() && budget::is_refusal(&m) => {
            MemError::Usage(format!("{m}{}", below_floor(machine)))
        }
        e => e,
    })?;
    p.notes.extend(note);
    Ok(p)
}

/// Why a default idle chase was not made smaller to fit (said after the refusal's
/// figures): below 8x the largest last-level cache a CPU sees, the chase would time
/// the cache, not memory.
pub(crate) fn below_floor(machine: &Machine) -> String {
    let llc = machine
        .pu_ids()
        .into_iter()
        .map(|p| crate::llc_of_cpu(machine, p).0)
        .max()
        .unwrap_or_else(|| llc_bytes(machine).0);
    format!(
        "; the default is not made smaller than 8x the largest last-level cache a CPU sees ({}, 8x {}): a smaller chase would time the cache, not memory, so these nodes are too small (or too full) for an idle-memory figure; a --size below that is taken, and its figure is partly the cache's",
        units::bytes(crate::round_up(8 * llc, 1 << 20)),
        units::bytes(llc)
    )
}

/// Plans the idle-latency matrix: from the first PU of every node with CPUs to memory
/// bound to every node with memory, at one working set.
pub fn plan_matrix(
    machine: &Machine,
    budgets: &budget::Budgets,
    pages: &[PageRequest],
    size: u64,
    options: Options,
) -> Result<Plan, MemError> {
    let rows = crate::checks::cpu_nodes(machine);
    let cols = crate::checks::memory_nodes(machine);
    if rows.is_empty() || cols.is_empty() {
        return Err(MemError::Unsupported(
            "the topology has no NUMA node with CPUs or none with memory".into(),
        ));
    }
    let mut cells = Vec::new();
    for (cpu_node, pus) in &rows {
        for &mem_node in &cols {
            for &p in pages {
                let cell = Cell {
                    key: format!(
                        "mem/latency/matrix/cpu-node{cpu_node}/mem-node{mem_node}/{}",
                        p.name()
                    ),
                    cpu: pus[0],
                    policy: MemPolicy::Bind(vec![mem_node]),
                    matrix: Some(numalab_records::mem::MatrixCell {
                        cpu_node: *cpu_node,
                        mem_node,
                    }),
                    pages: p,
                    sizes: vec![size],
                };
                check_cell_memory(machine, budgets, &cell, "--size")?;
                cells.push(cell);
            }
        }
    }
    Ok(Plan {
        options,
        cells,
        notes: llc_bytes(machine).1.into_iter().collect(),
    })
}

/// Runs a plan, one record per cell.
pub fn run(plan: &Plan, machine: &Machine, placer: &dyn Placer, sink: &mut dyn Sink) -> Outcome {
    let (clock, clock_warnings) = check_clock();
    let total: u64 = plan.cells.iter().map(|c| c.sizes.len() as u64).sum();
    let mut cells = Cells::new(sink, "latency", total);
    let mut done_points = 0u64;
    for cell in &plan.cells {
        if cells.stop() {
            break;
        }
        if cells.skip(&cell.key) {
            done_points += cell.sizes.len() as u64;
            continue;
        }
        let result = run_cell(plan, cell, machine, placer, &clock, &mut |i| {
            cells.progress(done_points + i)
        });
        done_points += cell.sizes.len() as u64;
        match result {
            Ok(rec) => {
                let mut w = clock_warnings.clone();
                w.extend(rec.placement.warning());
                w.extend(crate::checks::pages_warning(&rec.pages));
                if rec.frequency.is_none() {
                    w.push(Warning::new(
                        "no_frequency",
                        "the CPU frequency is unknown here (no cpufreq), so latencies are given in ns only, not cycles",
                    ));
                }
                let record = Record::new(cell.key.clone(), Origin::Measured, &rec).with_warnings(w);
                cells.deliver(record)
            }
            Err(MemError::Interrupted) => {
                cells.interrupted();
                break;
            }
            Err(e) => cells.fail(cell.key.clone(), e),
        }
    }
    cells.finish()
}

/// Times the chase at one working set; returns the point.
pub fn measure_point(
    chain: &Chain<'_>,
    bytes: u64,
    opts: &Options,
    clock: &numalab_clock::ClockCheck,
    freq: Option<&crate::Frequency>,
) -> Point {
    let lines = chain.lines() as u64;
    // Warm-up: the whole cycle twice when it is small, else a million steps.
    let warm = (2 * lines).min(1 << 20).max(lines.min(1 << 20));
    let mut p = chain.walk(chain.start(), warm);
    // Pilot: size batches to the target duration.
    let pilot = 2048u64;
    let t0 = numalab_clock::now_ns();
    p = chain.walk(p, pilot);
    let t1 = numalab_clock::now_ns();
    let per_load = ((t1 - t0) as f64 / pilot as f64).max(0.1);
    let target = opts.batch_ns.max(clock.min_interval_ns());
    let loads = ((target / per_load).ceil() as u64).clamp(256, 1 << 24);
    let overhead = clock.read_overhead_ns;
    let mut samples = Vec::with_capacity(opts.batches);
    for _ in 0..opts.batches {
        let t0 = numalab_clock::now_ns();
        p = chain.walk(p, loads);
        let t1 = numalab_clock::now_ns();
        samples.push((((t1 - t0) as f64 - overhead) / loads as f64).max(0.0));
    }
    std::hint::black_box(p);
    let summary = Summary::of(&samples).expect("at least 5 batches");
    Point {
        working_set_bytes: bytes,
        lines,
        loads_per_batch: loads,
        cycles_p50: freq.map(|f| summary.median * f.khz as f64 / 1e6),
        sample_ns: samples,
        latency_ns: summary,
    }
}

fn run_cell(
    plan: &Plan,
    cell: &Cell,
    machine: &Machine,
    placer: &dyn Placer,
    clock: &numalab_clock::ClockCheck,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<LatencyRecord, MemError> {
    let opts = &plan.options;
    let max = *cell.sizes.last().expect("sizes checked non-empty");
    let bytes = region_bytes(max, cell.pages);
    let freq = frequency_of(machine, cell.cpu);
    let progress = std::sync::Mutex::new(progress);
    let results =
        pool::run_pinned(
            placer,
            &[cell.cpu],
            |_| pool::place(placer, bytes, cell.pages, &cell.policy, 0.0),
            |_,
             placed,
             _|
             -> Result<
                (Vec<Point>, numalab_topo::bind::PagePlacement, PagesObtained),
                MemError,
            > {
                let block = crate::chase::BLOCK_BYTES as usize;
                let region: &mut Region = &mut placed.region;
                let mut points = Vec::new();
                for (i, &ws) in cell.sizes.iter().enumerate() {
                    if numalab_schema::interrupt::requested() {
                        return Err(MemError::Interrupted);
                    }
                    let chain = Chain::build(
                        region,
                        ws as usize,
                        opts.stride_bytes as usize,
                        block,
                        opts.order,
                        opts.seed ^ ws,
                    );
                    points.push(measure_point(&chain, ws, opts, clock, freq.as_ref()));
                    (progress.lock().unwrap())(i as u64 + 1);
                }
                Ok((points, placed.pages.clone(), placed.obtained.clone()))
            },
        )?;
    let (points, pages_now, obtained) = results.into_iter().next().expect("one worker")?;
    let (levels, steps) = if cell.sizes.len() >= 4 {
        analyse(machine, cell.cpu, &points, freq.as_ref())
    } else {
        (Vec::new(), Vec::new())
    };
    let placement = pool::placement(machine, placer, &[cell.cpu], &cell.policy, &[pages_now]);
    let (llc, llc_assumed) = crate::llc_of_cpu(machine, cell.cpu);
    let kind = Kind::measured(
        Load::Idle,
        opts.order,
        opts.stride_bytes,
        &obtained,
        &placement,
        llc_assumed.is_none().then_some(llc),
    );
    Ok(LatencyRecord {
        cpu: cell.cpu,
        matrix: cell.matrix,
        placement,
        pages: obtained,
        order: opts.order,
        seed: opts.seed,
        stride_bytes: opts.stride_bytes,
        kind: Some(kind),
        points,
        levels,
        steps,
        frequency: freq,
        timer: Timer {
            check: clock.clone(),
            subtracted_ns: clock.read_overhead_ns,
        },
    })
}

/// The most a cache hit can cost as a share of a load from memory, for a plateau to be
/// named after that cache. A hit in the outermost cache of any machine numalab knows
/// takes well under half of a memory load (an L3 or SLC 10-45 ns against memory's
/// 80-150 ns on x86 and Arm servers; memory-side caches such as MCDRAM are hwloc
/// MemCache objects, not CPU caches), so a plateau above half of memory's latency at a
/// cache's sizes is memory, whatever the cache's nominal size.
pub const CACHE_HIT_MAX_OF_MEMORY: f64 = 0.5;

/// How far past the largest cache a working set must be for its latency to stand for
/// memory's when the curve found no memory plateau (4x: a victim or inclusive cache and
/// its neighbours' shares cannot hold a quarter of it).
pub const MEMORY_PAST_CACHE: f64 = 4.0;

/// Names the plateaus of a curve after the caches of `cpu`.
pub fn analyse(
    machine: &Machine,
    cpu: u32,
    points: &[Point],
    freq: Option<&crate::Frequency>,
) -> (Vec<Level>, Vec<Step>) {
    let xs: Vec<f64> = points.iter().map(|p| p.working_set_bytes as f64).collect();
    let ys: Vec<f64> = points
        .iter()
        .map(|p| p.latency_ns.median.max(1e-3))
        .collect();
    let Ok(plateaus) = plateau::plateaus(&xs, &ys, &KneeOptions::default()) else {
        return (Vec::new(), Vec::new());
    };
    let transitions = plateau::transitions(&xs, &ys, &plateaus).unwrap_or_default();
    // Caches serving this CPU (data or unified), by level.
    let mut caches: Vec<(String, u64)> = machine
        .caches
        .iter()
        .filter(|c| {
            c.cpus.contains(&cpu)
                && matches!(c.kind, CacheKind::Data | CacheKind::Unified)
                && c.size_bytes.is_some()
        })
        .map(|c| {
            let name = if c.kind == CacheKind::Data {
                format!("L{}d", c.level)
            } else {
                format!("L{}", c.level)
            };
            (name, c.size_bytes.unwrap())
        })
        .collect();
    caches.sort_by_key(|c| c.1);
    // The smallest cache that holds each plateau's middle working set, unless the
    // plateau runs on to twice its size (then it is not that cache's plateau).
    let mut named: Vec<(String, Option<u64>)> = plateaus
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mid = (xs[p.start] * xs[p.end]).sqrt();
            let fits = |c: &&(String, u64)| c.1 as f64 >= mid && xs[p.end] < 2.0 * c.1 as f64;
            match caches.iter().find(fits) {
                Some(c) => (c.0.clone(), Some(c.1)),
                None if !caches.is_empty() => ("memory".to_string(), None),
                None => (format!("plateau {}", i + 1), None),
            }
        })
        .collect();
    // A plateau at a cache's sizes whose latency is memory's is not served by that cache
    // (on a VM or a shared host this CPU may get a small share of a large L3): it is
    // named "memory at <cache> sizes", with no cache size. Memory's latency is the last
    // plateau's when that is memory; when the curve found no memory plateau (latency
    // still rising at its end, or too noisy there) it is the largest working set's, if
    // that is past every cache by MEMORY_PAST_CACHE.
    let memory_ns = match (plateaus.last(), named.last().map(|(n, c)| (n.as_str(), *c))) {
        (Some(last), Some(("memory", None))) => Some(last.level),
        _ => caches
            .last()
            .zip(xs.last().zip(ys.last()))
            .filter(|(c, (x, _))| **x >= MEMORY_PAST_CACHE * c.1 as f64)
            .map(|(_, (_, y))| *y),
    };
    if let Some(memory_ns) = memory_ns {
        for (p, (name, cache)) in plateaus.iter().zip(named.iter_mut()) {
            if cache.is_some() && p.level > CACHE_HIT_MAX_OF_MEMORY * memory_ns {
                *name = format!("memory at {name} sizes");
                *cache = None;
            }
        }
    }
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    let levels: Vec<Level> = plateaus
        .iter()
        .zip(named)
        .map(|(p, (mut name, cache))| {
            let n = used.entry(name.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                name = format!("{name} ({})", *n);
            }
            Level {
                name,
                cache_bytes: cache,
                from_bytes: xs[p.start] as u64,
                to_bytes: xs[p.end] as u64,
                latency_ns: p.level,
                cycles: freq.map(|f| p.level * f.khz as f64 / 1e6),
            }
        })
        .collect();
    let steps = transitions
        .iter()
        .zip(levels.windows(2))
        .map(|(t, w)| Step {
            from: w[0].name.clone(),
            to: w[1].name.clone(),
            at_bytes: t.x_mid as u64,
            ratio: t.ratio,
        })
        .collect();
    (levels, steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Placement;

    fn kind(order: Order, pages: &str, llc: Option<u64>) -> Kind {
        Kind {
            load: Load::Idle,
            order,
            block_bytes: (order == Order::PageLocal).then_some(4096),
            stride_bytes: 64,
            pages: pages.into(),
            locality: Locality::Local,
            llc_bytes: llc,
        }
    }

    #[test]
    fn a_kind_names_everything_that_makes_the_figure() {
        let k = kind(Order::Global, "thp", Some(32 << 20));
        assert_eq!(
            k.label(256 << 20),
            "idle, random over 256 MiB (8x LLC), huge pages (THP), local"
        );
        let p = kind(Order::PageLocal, "base", Some(32 << 20));
        assert_eq!(
            p.label(16 << 20),
            "idle, random within 4 KiB blocks of 16 MiB (0.5x LLC), base pages, local"
        );
        assert_eq!(
            kind(Order::Global, "base", None).size_text(1 << 30),
            "1 GiB"
        );
        assert_eq!(k.size_text(1 << 20), "1 MiB (1/32 of LLC)");
        // Memory latency: random over the whole buffer, well past the LLC.
        assert!(k.is_memory(128 << 20));
        assert!(!k.is_memory(64 << 20), "2x the LLC is not enough");
        assert!(
            !p.is_memory(1 << 30),
            "a block order is never memory latency"
        );
        assert!(kind(Order::Global, "base", None).is_memory(64 << 20));
        // Only the page kind may differ for a translation comparison.
        let b = kind(Order::Global, "base", Some(32 << 20));
        assert!(b.same_but_pages(&k));
        assert!(!p.same_but_pages(&k));
        let remote = Kind {
            locality: Locality::Remote,
            ..b.clone()
        };
        assert!(!remote.same_but_pages(&k));
        assert!(k.huge() && !b.huge());
    }

    #[test]
    fn locality_comes_from_where_the_pages_are() {
        let mut p = Placement {
            backend: "fake".into(),
            cpus: vec![0],
            cpu_nodes: vec![0],
            policy: MemPolicy::Bind(vec![1]),
            expected_nodes: vec![1],
            pages_per_node: vec![(1, 100)],
            pages_not_present: 0,
            fraction_expected: 1.0,
        };
        assert_eq!(Locality::of(&p), Locality::Remote);
        p.pages_per_node = vec![(0, 100)];
        assert_eq!(Locality::of(&p), Locality::Local);
        p.pages_per_node = vec![(0, 50), (1, 50)];
        assert_eq!(Locality::of(&p), Locality::Mixed);
        // Nothing found: by the nodes asked for.
        p.pages_per_node = vec![];
        assert_eq!(Locality::of(&p), Locality::Remote);
    }
    #[test]
    fn the_default_idle_size_is_fitted_to_small_nodes() {
        // Found in the multi-node guest (nodes of 384-640 MiB): the matrix's default
        // 256 MiB was refused on every node, so `numalab evaluate` had no latency
        // matrix at all. A default is fitted to the nodes; an explicit size is not.
        // Two nodes of 2 cores with a 1 MiB L2 each: 8x the cache is 8 MiB.
        let m = numalab_topo::synthetic("pack:1 numa:2 l2:2(size=1MB) core:1 pu:1").unwrap();
        let big = budget::Budgets::uniform(&m, 64 << 30);
        let (size, note) = fitted_idle_size(&m, &big, &[0, 1]);
        assert_eq!((size, note), (default_idle_size(&m), None));
        let mut small = budget::Budgets::uniform(&m, 600 << 20);
        small.nodes.get_mut(&1).unwrap().free_bytes = 370 << 20;
        let (size, note) = fitted_idle_size(&m, &small, &[0, 1]);
        assert_eq!(size, 92 << 20, "25% of node 1's 370 MiB, whole MiB");
        let note = note.unwrap();
        assert!(note.contains("node 1") && note.contains("92 MiB"), "{note}");
        // The fitted size passes the plan's check on every node.
        let plan = plan_matrix(&m, &small, &[PageRequest::Base], size, Options::idle(&m)).unwrap();
        assert_eq!(plan.cells.len(), 4);
        // The default itself is refused there: that is what the fitting is for.
        assert!(plan_matrix(
            &m,
            &small,
            &[PageRequest::Base],
            default_idle_size(&m),
            Options::idle(&m)
        )
        .is_err());
        // Too little memory to stay above 8x the cache: the default is kept (and refused).
        let tiny = budget::Budgets::uniform(&m, 1 << 20);
        assert_eq!(
            fitted_idle_size(&m, &tiny, &[0, 1]),
            (default_idle_size(&m), None)
        );
    }

    #[test]
    fn without_a_known_cache_the_default_is_fitted_with_a_warning_note() {
        // Found in the emulated Arm server: hwloc reports no cache sizes there, the
        // floor (8x an assumed 32 MiB) exceeded every 512 MiB node, and the latency
        // matrix was refused. Fitted now, saying what the unknown cache means.
        let m = numalab_topo::synthetic("pack:1 numa:2 core:1 pu:1").unwrap();
        assert!(m.caches.iter().all(|c| c.size_bytes.is_none()));
        let small = budget::Budgets::uniform(&m, 420 << 20);
        let (size, note) = fitted_idle_size(&m, &small, &[0, 1]);
        assert_eq!(size, 105 << 20, "25% of 420 MiB");
        let note = note.unwrap();
        assert!(
            note.contains("no cache size is known") && note.contains("13.1 MiB"),
            "{note}"
        );
        // Nothing fits: the default is kept (and refused by the plan).
        let none = budget::Budgets::uniform(&m, 2 << 20);
        assert_eq!(
            fitted_idle_size(&m, &none, &[0, 1]),
            (default_idle_size(&m), None)
        );
    }

    fn point(ws: u64, ns: f64) -> Point {
        Point {
            working_set_bytes: ws,
            lines: ws / 64,
            loads_per_batch: 1000,
            sample_ns: vec![ns; 5],
            latency_ns: Summary::of(&[ns; 5]).unwrap(),
            cycles_p50: None,
        }
    }

    #[test]
    fn plateaus_are_named_after_the_caches_of_the_cpu() {
        // L1d 16 KiB, L2 2 MiB (per 2 cores), L3 6 MiB (per node) on CPU 0.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/topology/64amd64-4p2n4ca2co.xml");
        let m = numalab_topo::machine(&numalab_topo::Input::detect(&path).unwrap()).unwrap();
        let curve = |ws: u64| -> f64 {
            if ws <= 16 << 10 {
                1.0
            } else if ws <= 2 << 20 {
                5.0
            } else if ws <= 6 << 20 {
                20.0
            } else {
                100.0
            }
        };
        let points: Vec<Point> = sizes(4096, 256 << 20, 2, 64)
            .into_iter()
            .map(|ws| point(ws, curve(ws)))
            .collect();
        let (levels, steps) = analyse(&m, 0, &points, None);
        let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, vec!["L1d", "L2", "L3", "memory"], "{levels:?}");
        assert_eq!(levels[1].cache_bytes, Some(2 << 20));
        assert!((levels[3].latency_ns - 100.0).abs() < 1e-9);
        assert_eq!(steps.len(), 3);
        assert!(
            steps[0].at_bytes > 16 << 10 && steps[0].at_bytes <= 32 << 10,
            "{steps:?}"
        );
        // A plateau running far past the last cache is memory even if its middle fits.
        let points: Vec<Point> = sizes(4096, 256 << 20, 1, 64)
            .into_iter()
            .map(|ws| point(ws, if ws <= 16 << 10 { 1.0 } else { 100.0 }))
            .collect();
        let (levels, _) = analyse(&m, 0, &points, None);
        let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, vec!["L1d", "memory"], "{levels:?}");
    }

    /// This development VM's curve on base pages: the L3 is 32 MiB by the topology,
    /// but loads at 4-32 MiB take 173 ns against memory's 205 ns (huge pages: 173 ns at
    /// 16 MiB and beyond). That plateau is memory at L3 sizes, not the L3.
    #[test]
    fn a_plateau_at_cache_sizes_with_memory_latency_is_not_that_cache() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/topology/64amd64-4p2n4ca2co.xml");
        let m = numalab_topo::machine(&numalab_topo::Input::detect(&path).unwrap()).unwrap();
        // L1d 16 KiB, L2 2 MiB, L3 6 MiB on CPU 0; `at_l3` is the latency at L3 sizes.
        let run = |at_l3: f64| {
            let points: Vec<Point> = sizes(4096, 256 << 20, 2, 64)
                .into_iter()
                .map(|ws| {
                    let ns = if ws <= 16 << 10 {
                        1.0
                    } else if ws <= 2 << 20 {
                        5.0
                    } else if ws <= 6 << 20 {
                        at_l3
                    } else {
                        100.0
                    };
                    point(ws, ns)
                })
                .collect();
            analyse(&m, 0, &points, None)
        };
        let (levels, steps) = run(84.0);
        let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            vec!["L1d", "L2", "memory at L3 sizes", "memory"],
            "{levels:?}"
        );
        assert_eq!(levels[2].cache_bytes, None);
        assert_eq!(levels[1].cache_bytes, Some(2 << 20));
        assert_eq!(steps[1].to, "memory at L3 sizes");
        assert_eq!(steps[2].from, "memory at L3 sizes");
        // Just under half of memory's latency it is still the L3 (the boundary).
        let (levels, _) = run(49.0);
        assert_eq!(levels[2].name, "L3", "{levels:?}");
        assert_eq!(levels[2].cache_bytes, Some(6 << 20));
        let (levels, _) = run(51.0);
        assert_eq!(levels[2].name, "memory at L3 sizes", "{levels:?}");
    }

    /// This development VM (another host, a 300 MiB L3 by the topology) on huge pages:
    /// 137 ns from 16 to 512 MiB, then 170-246 ns up to 1.2 GiB, too few points for a
    /// memory plateau. The 137 ns plateau was named "L3": no L3 hit takes over half of a
    /// load from memory, here the largest working set's 232 ns.
    #[test]
    fn without_a_memory_plateau_the_largest_working_set_stands_for_memory() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/topology/64amd64-4p2n4ca2co.xml");
        let m = numalab_topo::machine(&numalab_topo::Input::detect(&path).unwrap()).unwrap();
        // L1d 16 KiB, L2 2 MiB, L3 6 MiB on CPU 0: 137 ns at 2-8 MiB (a plateau the L3
        // holds by size), then a last point of 232 ns at `end`.
        let run = |end: u64| {
            let mut points: Vec<Point> = sizes(4096, 8 << 20, 2, 64)
                .into_iter()
                .map(|ws| {
                    point(
                        ws,
                        if ws <= 16 << 10 {
                            1.0
                        } else if ws <= 2 << 20 {
                            5.0
                        } else {
                            137.0
                        },
                    )
                })
                .collect();
            points.push(point(end, 232.0));
            analyse(&m, 0, &points, None)
        };
        let (levels, _) = run(24 << 20);
        let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, vec!["L1d", "L2", "memory at L3 sizes"], "{levels:?}");
        assert_eq!(levels[2].cache_bytes, None);
        // A largest working set under 4x the L3 does not stand for memory: the plateau
        // keeps the cache's name (nothing says what memory costs).
        let (levels, _) = run(20 << 20);
        assert_eq!(levels.last().unwrap().name, "L3", "{levels:?}");
    }

    #[test]
    fn sweep_sizes_are_ascending_line_multiples_ending_at_max() {
        let s = sizes(4096, 1 << 20, 2, 64);
        assert_eq!(s.first(), Some(&4096));
        assert_eq!(s.last(), Some(&(1 << 20)));
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(s.iter().all(|b| b % 64 == 0));
        assert_eq!(s.len(), 17);
        assert_eq!(sizes(4096, 5000, 1, 64), vec![4096, 5056]);
    }

    #[test]
    fn the_command_sweep_defaults_to_the_default_and_quick_sweeps_and_refuses_min_over_max() {
        // An 8 MB L3: the default sweep ends at 64 MB, the quick one at 32 MB.
        let m = numalab_topo::synthetic("pack:1 numa:1 l3:1(size=8MB) core:2 pu:1").unwrap();
        let full = sweep(&m, 0, 4096, None, None, false, 64).unwrap();
        assert_eq!(full, default_sizes(&m, 0, 2, 64));
        assert_eq!(full.last(), Some(&64_000_000));
        let quick = sweep(&m, 0, 4096, None, None, true, 64).unwrap();
        assert_eq!(quick, quick_sizes(&m, 0, 64));
        assert_eq!(quick.last(), Some(&32_000_000));
        let given = sweep(&m, 0, 1 << 20, Some(4 << 20), Some(1), false, 64).unwrap();
        assert_eq!(given, vec![1 << 20, 2 << 20, 4 << 20]);
        let e = sweep(&m, 0, 8 << 20, Some(1 << 20), None, false, 64).unwrap_err();
        assert!(matches!(e, MemError::Usage(_)), "{e:?}");
        assert_eq!(e.to_string(), "--min 8 MiB is larger than --max 1 MiB");
        let mut o = Options::defaults(&m);
        assert!(o.set_stride(3000).is_err() && o.set_stride(4).is_err());
        o.set_stride(256).unwrap();
        assert_eq!(o.stride_bytes, 256);
    }
}
