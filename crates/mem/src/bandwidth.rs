//! Memory bandwidth: STREAM-style kernels on pinned threads, data on chosen nodes.
//!
//! A plan is a list of groups (a set of threads and a memory policy: e.g. threads on
//! node 0, data bound to node 1) and the kernels to run on each. Each worker of a group
//! maps its share of the working set, binds it, first-touches it and checks where its
//! pages went ([`crate::pool`]). The kernels then run interleaved (copy, scale, add,
//! triad, copy, ...) so that slow drifts of the machine hit all of them alike: one
//! discarded warm-up round, which also sizes the inner repetitions so that every timed
//! sample lasts long enough for the clock, then the timed rounds. A sample is the time
//! from the earliest thread's start to the latest thread's end.
//!
//! `--size` is the working set of each kernel (all its arrays, all threads), as in
//! likwid-bench's `-w`: triad's three arrays share it, read's one array has it all.

use crate::kernels::{self, Arrays, Isa, Kernel};
use crate::pool::{self, Placed};
use crate::{
    budget, check_clock, llc_bytes, MemError, Outcome, PageRequest, PagesObtained, Placement, Sink,
    Timer,
};
use numalab_schema::{cpulist, Machine, Origin, Record, RecordKind, Warning};
use numalab_stats::Summary;
use numalab_topo::bind::{MemPolicy, Placer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// How to measure (the same for every group of a plan).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Kernels to run.
    pub kernels: Vec<Kernel>,
    /// Instruction set.
    pub isa: Isa,
    /// Whether the ISA was chosen by the user (it then appears in record keys).
    pub isa_forced: bool,
    /// Working set of each kernel, all arrays and threads, bytes.
    pub working_set_bytes: u64,
    /// Timed rounds.
    pub reps: usize,
    /// Shortest timed sample, ns (small working sets repeat the kernel inside a sample).
    pub min_sample_ns: f64,
    /// Pages to back the arrays.
    pub pages: PageRequest,
}

impl Options {
    /// Defaults for `machine`: the default kernels, the best ISA, a working set of 12x
    /// the last-level cache (so that each of triad's three arrays is at least 4x it),
    /// 10 rounds, base pages.
    pub fn defaults(machine: &Machine) -> Options {
        let (llc, _) = llc_bytes(machine);
        Options {
            kernels: Kernel::defaults(),
            isa: kernels::best(),
            isa_forced: false,
            working_set_bytes: default_working_set(llc),
            reps: 10,
            min_sample_ns: 20e6,
            pages: PageRequest::Base,
        }
    }

    /// The quick variant for `numalab evaluate --quick`: read, copy, triad, write-nt,
    /// 5 rounds, the same working set (smaller ones would measure the cache).
    pub fn quick(machine: &Machine) -> Options {
        Options {
            kernels: ["read", "copy", "triad", "write-nt"]
                .iter()
                .map(|k| Kernel::parse(k).expect("known kernel"))
                .collect(),
            reps: 5,
            min_sample_ns: 10e6,
            ..Options::defaults(machine)
        }
    }
}

/// 12x the last-level cache, at least 64 MiB, in whole MiB.
pub fn default_working_set(llc: u64) -> u64 {
    crate::round_up((12 * llc).max(64 << 20), 1 << 20)
}

/// A node pair of a matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixCell {
    /// Node of the threads.
    pub cpu_node: u32,
    /// Node of the data.
    pub mem_node: u32,
}

/// Threads and memory policy of one measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Record key prefix; a record's key is `{prefix}/{kernel}`.
    pub key_prefix: String,
    /// PUs of the threads, one thread each.
    pub pus: Vec<u32>,
    /// Where the data goes.
    pub policy: MemPolicy,
    /// The node pair, in a matrix.
    pub matrix: Option<MatrixCell>,
}

/// A checked bandwidth plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// How.
    pub options: Options,
    /// What, in order.
    pub groups: Vec<Group>,
    /// Facts the user should know (defaults applied, sizes assumed).
    pub notes: Vec<String>,
}

impl Plan {
    /// Every record key the plan produces, in order.
    pub fn keys(&self) -> Vec<String> {
        self.groups
            .iter()
            .flat_map(|g| self.options.kernels.iter().map(move |k| self.key(g, *k)))
            .collect()
    }

    fn key(&self, g: &Group, k: Kernel) -> String {
        if self.options.isa_forced {
            format!("{}/{}@{}", g.key_prefix, k, self.options.isa)
        } else {
            format!("{}/{}", g.key_prefix, k)
        }
    }
}

/// One bandwidth measurement: a kernel on a group of threads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthRecord {
    /// The kernel ("triad", "write-nt").
    pub kernel: Kernel,
    /// What it computes.
    pub formula: String,
    /// Instruction set used.
    pub isa: Isa,
    /// Threads.
    pub threads: usize,
    /// The node pair, in a matrix.
    pub matrix: Option<MatrixCell>,
    /// Where threads and pages really were.
    pub placement: Placement,
    /// Pages obtained.
    pub pages: PagesObtained,
    /// Bytes of one array, all threads.
    pub array_bytes: u64,
    /// Bytes of all the kernel's arrays, all threads.
    pub working_set_bytes: u64,
    /// Elements per array per thread.
    pub elements_per_thread: u64,
    /// Bytes per sample counted the STREAM way.
    pub stream_bytes_per_sample: u64,
    /// Bytes per sample actually moved, with write-allocate for plain stores.
    pub actual_bytes_per_sample: u64,
    /// Kernel passes per timed sample.
    pub inner_iterations: u64,
    /// Discarded warm-up rounds.
    pub warmup_rounds: usize,
    /// Raw samples: duration of each timed round, ns, from the earliest thread's start
    /// to the latest thread's end (the whole team, as STREAM times its parallel region).
    pub sample_ns: Vec<f64>,
    /// Per round, the duration of the slowest thread alone, ns (start skew excluded:
    /// likwid-bench's convention).
    pub slowest_thread_ns: Vec<f64>,
    /// STREAM-counted bandwidth, GB/s (10^9 bytes/s), over the samples.
    pub bandwidth_gbps: Summary,
    /// STREAM-counted bytes over the slowest thread's time, GB/s (likwid-bench's
    /// convention; higher than `bandwidth_gbps` by the threads' start skew).
    pub slowest_thread_gbps: Summary,
    /// Bandwidth in bytes actually moved, GB/s.
    pub actual_bandwidth_gbps: Summary,
    /// Median over rounds of slowest / fastest thread time (1.0 = balanced).
    pub imbalance: f64,
    /// Timer.
    pub timer: Timer,
}

impl RecordKind for BandwidthRecord {
    const KIND: &'static str = "mem.bandwidth";
}

fn check_kernels(opts: &Options) -> Result<(), MemError> {
    if opts.kernels.is_empty() {
        return Err(MemError::Usage("--kernel: no kernel given".into()));
    }
    if !opts.isa.available() {
        let have: Vec<&str> = kernels::available().iter().map(|i| i.name()).collect();
        return Err(MemError::Unsupported(format!(
            "--isa {}: this CPU cannot run it (it has {})",
            opts.isa,
            have.join(", ")
        )));
    }
    if let Some(k) = opts.kernels.iter().find(|k| k.nt && !opts.isa.has_nt()) {
        return Err(MemError::Unsupported(format!(
            "--kernel {k} needs non-temporal stores, which {} code lacks on this architecture; use a SIMD --isa",
            opts.isa
        )));
    }
    if opts.reps == 0 {
        return Err(MemError::Usage("--reps must be at least 1".into()));
    }
    Ok(())
}

/// Bytes one worker maps.
fn per_worker_bytes(opts: &Options, threads: usize) -> u64 {
    let page = match opts.pages {
        PageRequest::HugeTlb(b) => b,
        _ => numalab_topo::bind::base_page_size() as u64,
    };
    crate::round_up(
        (opts.working_set_bytes / threads as u64).max(3 * 4096),
        page,
    )
}

fn check_memory(
    machine: &Machine,
    budgets: &budget::Budgets,
    opts: &Options,
    pus: &[u32],
    policy: &MemPolicy,
) -> Result<(), MemError> {
    let each = per_worker_bytes(opts, pus.len());
    let mut need = BTreeMap::new();
    for &pu in pus {
        let nodes = pool::expected_nodes(machine, policy, pu);
        for n in &nodes {
            budget::need(&mut need, *n, each / nodes.len().max(1) as u64);
        }
    }
    budgets.check(&need, "mem bandwidth", "--size")?;
    if let PageRequest::HugeTlb(size) = opts.pages {
        crate::latency::check_hugetlb(machine, size, each * pus.len() as u64)?;
    }
    Ok(())
}

fn policy_name(p: &MemPolicy) -> String {
    p.to_string()
}

fn pages_suffix(p: PageRequest) -> String {
    match p {
        PageRequest::Base => String::new(),
        other => format!("/{}", other.name()),
    }
}

/// Checks a thread count against a CPU list.
pub fn check_threads(threads: usize, cpus: &[u32], what: &str) -> Result<(), MemError> {
    if threads == 0 {
        return Err(MemError::Usage("--threads must be at least 1".into()));
    }
    if threads > cpus.len() {
        return Err(MemError::Usage(format!(
            "--threads {threads}: more threads than PUs in {what} ({} PUs: {}); numalab runs one thread per PU",
            cpus.len(),
            cpulist::format(cpus)
        )));
    }
    Ok(())
}

/// Plans measurements on `cpus` (one group per thread count; `threads[i]` uses the
/// first PUs of the list) with data placed by `policy`.
pub fn plan(
    machine: &Machine,
    budgets: &budget::Budgets,
    cpus: &[u32],
    threads: &[usize],
    policy: &MemPolicy,
    options: Options,
) -> Result<Plan, MemError> {
    check_kernels(&options)?;
    check_policy_nodes(machine, policy)?;
    let mut groups = Vec::new();
    let threads: Vec<usize> = if threads.is_empty() {
        vec![cpus.len()]
    } else {
        threads.to_vec()
    };
    for &t in &threads {
        check_threads(t, cpus, "the CPU selection")?;
        let pus = cpus[..t].to_vec();
        check_memory(machine, budgets, &options, &pus, policy)?;
        groups.push(Group {
            key_prefix: format!(
                "mem/bandwidth/cpus-{}/{}{}/t{t}",
                cpulist::format(&pus),
                policy_name(policy),
                pages_suffix(options.pages)
            ),
            pus,
            policy: policy.clone(),
            matrix: None,
        });
    }
    Ok(Plan {
        notes: default_notes(machine),
        options,
        groups,
    })
}

fn default_notes(machine: &Machine) -> Vec<String> {
    llc_bytes(machine).1.into_iter().collect()
}

/// Checks that the nodes a policy names exist and have memory.
pub fn check_policy_nodes(machine: &Machine, policy: &MemPolicy) -> Result<(), MemError> {
    let nodes: Vec<u32> = match policy {
        MemPolicy::Bind(n) | MemPolicy::Interleave(n) => n.clone(),
        MemPolicy::Preferred(n) => vec![*n],
        MemPolicy::FirstTouch => return Ok(()),
    };
    for n in nodes {
        memory_node(machine, n)?;
    }
    Ok(())
}

/// Nodes that can hold data: nodes with memory (all nodes when hwloc knows no sizes).
pub fn memory_nodes(machine: &Machine) -> Vec<u32> {
    let with: Vec<u32> = machine
        .numa_nodes
        .iter()
        .filter(|n| n.memory_bytes > 0)
        .map(|n| n.os_index)
        .collect();
    let mut v = if with.is_empty() {
        machine.numa_nodes.iter().map(|n| n.os_index).collect()
    } else {
        with
    };
    v.sort_unstable();
    v
}

/// Checks one node exists and has memory.
pub fn memory_node(machine: &Machine, node: u32) -> Result<(), MemError> {
    let have = memory_nodes(machine);
    if have.contains(&node) {
        return Ok(());
    }
    let why = if machine.node(node).is_some() {
        "has no memory"
    } else {
        "does not exist"
    };
    Err(MemError::Usage(format!(
        "NUMA node {node} {why} (nodes with memory: {}); see `numalab topo`",
        cpulist::format(&have)
    )))
}

/// Nodes with CPUs, ascending, with their PUs: the node each PU's local memory is on
/// (a memory-only node that hwloc lists with the CPUs of its locality, such as HBM
/// or MCDRAM in flat mode, is a column of a matrix, not a row).
pub fn cpu_nodes(machine: &Machine) -> Vec<(u32, Vec<u32>)> {
    let mut by_node: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for p in &machine.pus {
        if let Some(n) = p.numa_node {
            by_node.entry(n).or_default().push(p.os_index);
        }
    }
    if by_node.is_empty() {
        for n in machine
            .numa_nodes
            .iter()
            .filter(|n| n.has_cpus && !n.cpus.is_empty())
        {
            by_node.insert(n.os_index, n.cpus.clone());
        }
    }
    by_node
        .into_iter()
        .map(|(n, mut pus)| {
            pus.sort_unstable();
            (n, pus)
        })
        .collect()
}

/// Plans the node-pair matrix: for every node i with CPUs and every node j with
/// memory, threads on node i (all its PUs, or the first `threads` of them) and data
/// bound to node j.
pub fn plan_matrix(
    machine: &Machine,
    budgets: &budget::Budgets,
    threads: &[usize],
    options: Options,
) -> Result<Plan, MemError> {
    check_kernels(&options)?;
    let rows = cpu_nodes(machine);
    let cols = memory_nodes(machine);
    if rows.is_empty() || cols.is_empty() {
        return Err(MemError::Unsupported(
            "the topology has no NUMA node with CPUs or none with memory".into(),
        ));
    }
    let mut groups = Vec::new();
    for (cpu_node, pus_all) in &rows {
        let counts: Vec<usize> = if threads.is_empty() {
            vec![pus_all.len()]
        } else {
            threads.to_vec()
        };
        for &t in &counts {
            check_threads(t, pus_all, &format!("NUMA node {cpu_node}"))?;
            let pus = pus_all[..t].to_vec();
            for &mem_node in &cols {
                let policy = MemPolicy::Bind(vec![mem_node]);
                check_memory(machine, budgets, &options, &pus, &policy)?;
                groups.push(Group {
                    key_prefix: format!(
                        "mem/bandwidth/matrix/cpu-node{cpu_node}/mem-node{mem_node}{}/t{t}",
                        pages_suffix(options.pages)
                    ),
                    pus: pus.clone(),
                    policy,
                    matrix: Some(MatrixCell {
                        cpu_node: *cpu_node,
                        mem_node,
                    }),
                });
            }
        }
    }
    let mut notes = default_notes(machine);
    if cols.len() == 1 && rows.len() == 1 {
        notes.push("one NUMA node: the matrix is 1x1 (local only)".into());
    }
    Ok(Plan {
        options,
        groups,
        notes,
    })
}

/// The plan `numalab mem bandwidth --quick` runs (and `numalab evaluate --quick`):
/// the quick kernels on one thread and on every PU, data first-touched locally.
pub fn quick_plan(machine: &Machine, budgets: &budget::Budgets) -> Result<Plan, MemError> {
    let cpus = machine.pu_ids();
    let threads = if cpus.len() > 1 {
        vec![1, cpus.len()]
    } else {
        vec![1]
    };
    plan(
        machine,
        budgets,
        &cpus,
        &threads,
        &MemPolicy::FirstTouch,
        Options::quick(machine),
    )
}

/// What one worker measured.
struct WorkerTimes {
    /// Per kernel (plan order), per round: (start, end) ns.
    rounds: Vec<Vec<(u64, u64)>>,
    /// Per kernel, elements per array of this worker.
    elements: Vec<usize>,
    sink: f64,
}

/// Runs a plan: each group in turn, records to `sink` as each completes. A group that
/// fails is reported in the outcome and the others go on.
pub fn run(plan: &Plan, machine: &Machine, placer: &dyn Placer, sink: &mut dyn Sink) -> Outcome {
    let mut out = Outcome::default();
    let (clock, clock_warnings) = check_clock();
    let total = plan.groups.len() as u64;
    for (gi, group) in plan.groups.iter().enumerate() {
        if numalab_schema::interrupt::requested() {
            out.interrupted = true;
            break;
        }
        let todo: Vec<Kernel> = plan
            .options
            .kernels
            .iter()
            .copied()
            .filter(|k| !sink.done(&plan.key(group, *k)))
            .collect();
        out.skipped += plan.options.kernels.len() - todo.len();
        sink.progress("bandwidth", gi as u64, total);
        if todo.is_empty() {
            continue;
        }
        match run_group(plan, group, &todo, machine, placer, &clock) {
            Ok(records) => {
                for (k, rec) in records {
                    let key = plan.key(group, k);
                    let mut warnings = clock_warnings.clone();
                    warnings.extend(rec.placement.warning());
                    warnings.extend(pages_warning(&rec.pages));
                    if rec.imbalance > 1.25 {
                        warnings.push(Warning::new(
                            "imbalance",
                            format!(
                                "the slowest thread took {:.2}x as long as the fastest: another process may share these CPUs, or threads share a congested resource",
                                rec.imbalance
                            ),
                        ).with_remedy("rerun on an idle machine; check `numalab doctor`"));
                    }
                    if rec.bandwidth_gbps.relative_mad() > 0.1 {
                        warnings.push(Warning::new(
                            "noisy",
                            format!(
                                "samples spread by {:.0}% (MAD/median): the machine was not quiet",
                                rec.bandwidth_gbps.relative_mad() * 100.0
                            ),
                        ));
                    }
                    let record =
                        Record::new(key.clone(), Origin::Measured, &rec).with_warnings(warnings);
                    match sink.push(record) {
                        Ok(()) => out.written += 1,
                        Err(e) => out.failed.push((key, e)),
                    }
                }
            }
            Err(MemError::Interrupted) => {
                out.interrupted = true;
                break;
            }
            Err(e) => out.failed.push((group.key_prefix.clone(), e)),
        }
    }
    sink.progress("bandwidth", total, total);
    out
}

/// A warning when huge pages were asked for but not (fully) obtained.
pub fn pages_warning(p: &PagesObtained) -> Option<Warning> {
    if p.requested == PageRequest::Thp && p.obtained != "thp" {
        let frac = p.huge_fraction() * 100.0;
        return Some(
            Warning::new(
                "thp_not_obtained",
                format!(
                    "transparent huge pages were asked for but back only {frac:.0}% of the memory: the results are for (mostly) base pages"
                ),
            )
            .with_remedy("check /sys/kernel/mm/transparent_hugepage/enabled (madvise or always) and defrag, or reserve hugetlbfs pages and use --pages hugetlb"),
        );
    }
    None
}

fn run_group(
    plan: &Plan,
    group: &Group,
    kernels: &[Kernel],
    machine: &Machine,
    placer: &dyn Placer,
    clock: &numalab_clock::ClockCheck,
) -> Result<Vec<(Kernel, BandwidthRecord)>, MemError> {
    let opts = &plan.options;
    let threads = group.pus.len();
    let bytes = per_worker_bytes(opts, threads);
    let nk = kernels.len();
    // warm[k][w] = warm-up duration of kernel k on worker w.
    let warm: Mutex<Vec<Vec<u64>>> = Mutex::new(vec![vec![0; threads]; nk]);
    let stop = AtomicBool::new(false);
    let min_sample = opts.min_sample_ns.max(clock.min_interval_ns());
    let placed_info: Mutex<Vec<Option<(numalab_topo::bind::PagePlacement, PagesObtained)>>> =
        Mutex::new(vec![None; threads]);
    let inner_all: Mutex<Vec<u64>> = Mutex::new(vec![1; nk]);
    let times = pool::run_pinned(
        placer,
        &group.pus,
        |i| {
            let p = pool::place(placer, bytes, opts.pages, &group.policy, 1.0)?;
            placed_info.lock().unwrap()[i] = Some((p.pages.clone(), p.obtained.clone()));
            Ok(p)
        },
        |i, placed: &mut Placed, barrier| {
            let buf = placed.region.as_mut_typed::<f64>();
            let mut sink = 0.0;
            let elements: Vec<usize> = kernels
                .iter()
                .map(|&k| Arrays::split(buf, k).elements(k))
                .collect();
            // Warm-up round: discarded, sizes the inner repetitions.
            for (ki, &k) in kernels.iter().enumerate() {
                barrier.wait();
                let t0 = numalab_clock::now_ns();
                let mut arr = Arrays::split(buf, k);
                sink += kernels::run(k, opts.isa, &mut arr, 3.0).unwrap_or(0.0);
                let t1 = numalab_clock::now_ns();
                warm.lock().unwrap()[ki][i] = t1 - t0;
            }
            barrier.wait();
            let inner: Vec<u64> = warm
                .lock()
                .unwrap()
                .iter()
                .map(|ws| {
                    let longest = ws.iter().copied().max().unwrap_or(1).max(1) as f64;
                    (min_sample / longest).ceil().max(1.0) as u64
                })
                .collect();
            if i == 0 {
                *inner_all.lock().unwrap() = inner.clone();
            }
            let mut rounds = vec![Vec::with_capacity(opts.reps); nk];
            for _ in 0..opts.reps {
                if i == 0 {
                    stop.store(numalab_schema::interrupt::requested(), Ordering::SeqCst);
                }
                barrier.wait();
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                for (ki, &k) in kernels.iter().enumerate() {
                    barrier.wait();
                    let t0 = numalab_clock::now_ns();
                    for _ in 0..inner[ki] {
                        let mut arr = Arrays::split(buf, k);
                        sink += kernels::run(k, opts.isa, &mut arr, 3.0).unwrap_or(0.0);
                    }
                    let t1 = numalab_clock::now_ns();
                    rounds[ki].push((t0, t1));
                }
            }
            std::hint::black_box(sink);
            WorkerTimes {
                rounds,
                elements,
                sink,
            }
        },
    )?;
    if stop.load(Ordering::SeqCst) {
        return Err(MemError::Interrupted);
    }
    let info = placed_info.into_inner().unwrap();
    let per_worker: Vec<_> = info.iter().flatten().map(|(p, _)| p.clone()).collect();
    let obtained: Vec<_> = info.iter().flatten().map(|(_, o)| o.clone()).collect();
    let placement = pool::placement(machine, placer, &group.pus, &group.policy, &per_worker);
    let pages = PagesObtained::merge(&obtained).expect("at least one worker");
    let inner = inner_all.into_inner().unwrap();
    let mut out = Vec::new();
    for (ki, &k) in kernels.iter().enumerate() {
        let elems: u64 = times.iter().map(|t| t.elements[ki] as u64).sum();
        let per_thread = times[0].elements[ki] as u64;
        let rounds = times[0].rounds[ki].len();
        let mut sample_ns = Vec::with_capacity(rounds);
        let mut slowest_ns = Vec::with_capacity(rounds);
        let mut imbalance = Vec::with_capacity(rounds);
        for r in 0..rounds {
            let start = times.iter().map(|t| t.rounds[ki][r].0).min().unwrap();
            let end = times.iter().map(|t| t.rounds[ki][r].1).max().unwrap();
            sample_ns.push((end - start) as f64);
            let d: Vec<u64> = times
                .iter()
                .map(|t| t.rounds[ki][r].1 - t.rounds[ki][r].0)
                .collect();
            let (lo, hi) = (*d.iter().min().unwrap(), *d.iter().max().unwrap());
            imbalance.push(hi as f64 / lo.max(1) as f64);
            slowest_ns.push(hi.max(1) as f64);
        }
        let stream = elems * k.stream_bytes_per_element() * inner[ki];
        let actual = elems * k.actual_bytes_per_element() * inner[ki];
        let gbps =
            |bytes: u64| -> Vec<f64> { sample_ns.iter().map(|ns| bytes as f64 / ns).collect() };
        let slowest_gbps: Vec<f64> = slowest_ns.iter().map(|ns| stream as f64 / ns).collect();
        let (Some(bw), Some(abw), Some(tbw)) = (
            Summary::of(&gbps(stream)),
            Summary::of(&gbps(actual)),
            Summary::of(&slowest_gbps),
        ) else {
            return Err(MemError::Runtime(format!(
                "kernel {k}: no samples were taken"
            )));
        };
        std::hint::black_box(times.iter().map(|t| t.sink).sum::<f64>());
        out.push((
            k,
            BandwidthRecord {
                kernel: k,
                formula: k.spec().formula.clone(),
                isa: opts.isa,
                threads,
                matrix: group.matrix,
                placement: placement.clone(),
                pages: pages.clone(),
                array_bytes: elems * 8,
                working_set_bytes: elems * 8 * k.arrays() as u64,
                elements_per_thread: per_thread,
                stream_bytes_per_sample: stream,
                actual_bytes_per_sample: actual,
                inner_iterations: inner[ki],
                warmup_rounds: 1,
                sample_ns,
                slowest_thread_ns: slowest_ns,
                bandwidth_gbps: bw,
                slowest_thread_gbps: tbw,
                actual_bandwidth_gbps: abw,
                imbalance: numalab_stats::median(&imbalance).unwrap_or(1.0),
                timer: Timer {
                    check: clock.clone(),
                    subtracted_ns: 0.0,
                },
            },
        ));
    }
    Ok(out)
}
