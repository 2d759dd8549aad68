//! Page migration throughput between NUMA nodes, three ways.
//!
//! Data on node A has to end up on node B. An application can:
//! 1. `memcpy` it, with one thread, into new memory bound to B (then switch pointers);
//! 2. ask the kernel to move the pages in place with `move_pages(2)` (same virtual
//!    addresses; the kernel unmaps, copies and remaps each page);
//! 3. copy it with a vectorised streaming copy (SIMD loads, non-temporal stores: the
//!    destination lines are not read first).
//!
//! Each cell of a plan is one node pair, one page unit (64 KiB, and the base page) and
//! one page count; the three methods run in rotating order in every round, on one
//! pinned thread, on fresh memory (the source is bound to A and first-touched; the
//! destination of a copy is a fresh mapping bound to B, so the copy pays B's page
//! faults, as a real migration does, unless `prefault` is set). Throughput is payload
//! bytes per second, and a percentage of a reference: the link peak the user gives,
//! or else the measured local copy bandwidth of one thread (the best of the plain and
//! streaming copy kernels, payload bytes). Every method is checked: the copied data is
//! compared, and the kernel is asked where the destination pages are; pages
//! `move_pages` could not move are counted per error and reported, never hidden.
//!
//! On a machine with one node the only pair is node 0 -> node 0: a sanity baseline
//! in which `move_pages` moves nothing (the kernel leaves a page already on the target
//! node where it is), so its time is the system call's page walk, not a migration.

use crate::bandwidth::{self, memory_node, memory_nodes, Group};
use crate::kernels::IsaExt;
use crate::kernels::{self, Isa, Kernel, Op};
use crate::pool;
use crate::{budget, check_clock, MemError, Outcome, Sink, Timer};
use numalab_schema::units::bytes as fmt_bytes;
use numalab_schema::{Machine, Origin, Record, Warning};
use numalab_stats::Summary;
use numalab_topo::bind::{base_page_size, MemPolicy, PageKind, PagePlacement, Placer, Region};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use numalab_records::mem::migrate::{conclude, Method, MethodResult, MigrateRecord, Reference};

/// How to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Page units, bytes (64 KiB and the base page by default).
    pub unit_bytes: Vec<u64>,
    /// Page counts (powers of two by default, 2^8 to 2^17, clamped to free memory).
    pub counts: Vec<u64>,
    /// Methods.
    pub methods: Vec<Method>,
    /// Rounds per cell.
    pub reps: usize,
    /// Fault the destination in before timing copies.
    pub prefault: bool,
    /// Reference throughput given by the user (GB/s); None: measure the local copy.
    pub link_peak_gbps: Option<f64>,
    /// ISA of the streaming copy.
    pub isa: Isa,
}

impl Options {
    /// Defaults: 64 KiB and base pages, 2^8..2^17 pages, all methods, 3 rounds.
    pub fn defaults() -> Options {
        let mut units = vec![64 << 10, base_page_size() as u64];
        units.dedup();
        Options {
            unit_bytes: units,
            counts: (8..=17).map(|e| 1u64 << e).collect(),
            methods: Method::ALL.to_vec(),
            reps: 3,
            prefault: false,
            link_peak_gbps: None,
            isa: kernels::best(),
        }
    }

    /// The quick variant: 2^8..2^11 pages, 2 rounds.
    pub fn quick() -> Options {
        Options {
            counts: (8..=11).map(|e| 1u64 << e).collect(),
            reps: 2,
            ..Options::defaults()
        }
    }
}

/// A source and target node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pair {
    /// Source node.
    pub src: u32,
    /// Target node.
    pub dst: u32,
    /// "nearest", "farthest", "nearest and farthest", "pair" (--all or --from/--to) or
    /// "same-node baseline".
    pub role: String,
    /// SLIT distance, when the firmware gives one.
    pub distance: Option<u64>,
    /// The CPU that moves the pages.
    pub cpu: u32,
}

/// One cell: a pair, a unit and a count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Record key.
    pub key: String,
    /// Index into [`Plan::pairs`].
    pub pair: usize,
    /// Page unit, bytes.
    pub unit_bytes: u64,
    /// Pages (units).
    pub pages: u64,
}

/// A checked migration plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// How.
    pub options: Options,
    /// Node pairs.
    pub pairs: Vec<Pair>,
    /// Cells, pair by pair, unit by unit, ascending count.
    pub cells: Vec<Cell>,
    /// What the default sweep was clamped to, and why.
    pub clamp_note: Option<String>,
    /// Facts the user should know.
    pub notes: Vec<String>,
}

impl Plan {
    /// Every record key, in order.
    pub fn keys(&self) -> Vec<String> {
        self.cells.iter().map(|c| c.key.clone()).collect()
    }
}

/// Which pairs to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairChoice {
    /// The nearest and the farthest pair by SLIT distance (the default).
    NearestFarthest,
    /// Every ordered pair of distinct nodes with memory.
    All,
    /// One pair (source may equal target: a baseline).
    Explicit(u32, u32),
}

/// The SLIT distance between two nodes.
pub fn distance(machine: &Machine, a: u32, b: u32) -> Option<u64> {
    let m = machine.slit()?;
    let i = m.nodes.iter().position(|&n| n == a)?;
    let j = m.nodes.iter().position(|&n| n == b)?;
    m.values.get(i)?.get(j).copied()
}

/// The CPU that moves pages from `src` to `dst`: the first PU of the target node if it
/// has CPUs (the thread that will use the data pulls it), else of the source node, else
/// the machine's first PU.
pub fn mover_cpu(machine: &Machine, src: u32, dst: u32) -> u32 {
    let first = |n: u32| {
        machine
            .node(n)
            .filter(|n| n.has_cpus)
            .and_then(|n| n.cpus.first().copied())
    };
    first(dst)
        .or_else(|| first(src))
        .unwrap_or_else(|| machine.pu_ids().first().copied().unwrap_or(0))
}

/// Chooses the node pairs.
pub fn pairs(
    machine: &Machine,
    choice: &PairChoice,
    cpu: Option<u32>,
) -> Result<(Vec<Pair>, Vec<String>), MemError> {
    let nodes = memory_nodes(machine);
    let mut notes = Vec::new();
    let mk = |src: u32, dst: u32, role: &str| Pair {
        src,
        dst,
        role: role.to_string(),
        distance: distance(machine, src, dst),
        cpu: cpu.unwrap_or_else(|| mover_cpu(machine, src, dst)),
    };
    let out = match choice {
        PairChoice::Explicit(a, b) => {
            memory_node(machine, *a)?;
            memory_node(machine, *b)?;
            let role = if a == b { "same-node baseline" } else { "pair" };
            vec![mk(*a, *b, role)]
        }
        _ if nodes.len() == 1 => {
            notes.push(format!(
                "one NUMA node with memory: node {0} -> node {0} is a same-node sanity baseline, not a migration",
                nodes[0]
            ));
            vec![mk(nodes[0], nodes[0], "same-node baseline")]
        }
        PairChoice::All => {
            let mut v = Vec::new();
            for &a in &nodes {
                for &b in &nodes {
                    if a != b {
                        v.push(mk(a, b, "pair"));
                    }
                }
            }
            v
        }
        PairChoice::NearestFarthest => {
            let mut cand: Vec<(u64, u32, u32)> = Vec::new();
            for &a in &nodes {
                for &b in &nodes {
                    if a != b {
                        if let Some(d) = distance(machine, a, b) {
                            cand.push((d, a, b));
                        }
                    }
                }
            }
            if cand.is_empty() {
                notes.push(format!(
                    "no SLIT distances: measuring node {} -> node {} only; use --all for every pair",
                    nodes[0], nodes[1]
                ));
                vec![mk(nodes[0], nodes[1], "pair")]
            } else {
                cand.sort();
                let near = cand[0];
                let far_d = cand.last().unwrap().0;
                let far = *cand.iter().find(|c| c.0 == far_d).unwrap();
                if near.0 == far.0 {
                    vec![mk(near.1, near.2, "nearest and farthest")]
                } else {
                    let ties = |d: u64| cand.iter().filter(|c| c.0 == d).count();
                    if ties(near.0) > 1 || ties(far.0) > 1 {
                        notes.push(format!(
                            "several pairs share the nearest ({}) or farthest ({}) distance; the lowest-numbered is measured (use --all or --from/--to for others)",
                            near.0, far.0
                        ));
                    }
                    vec![mk(near.1, near.2, "nearest"), mk(far.1, far.2, "farthest")]
                }
            }
        }
    };
    for p in &out {
        if machine.pu(p.cpu).is_none() {
            return Err(MemError::Usage(format!(
                "--cpu {}: no such CPU; see `numalab topo`",
                p.cpu
            )));
        }
    }
    Ok((out, notes))
}

/// Bytes a cell keeps mapped at once: source and destination.
fn footprint(unit: u64, pages: u64) -> u64 {
    2 * unit * pages
}

/// Plans migration cells. `counts_given` says whether the page counts came from the
/// user (then they are checked against the safe share of free memory and refused if
/// too large) or are the default sweep (then clamped to [`budget::SWEEP_FRACTION`]
/// of the budget, and the plan says so).
pub fn plan(
    machine: &Machine,
    budgets: &budget::Budgets,
    choice: &PairChoice,
    cpu: Option<u32>,
    mut options: Options,
    counts_given: bool,
) -> Result<Plan, MemError> {
    if options.methods.is_empty() || options.unit_bytes.is_empty() || options.counts.is_empty() {
        return Err(MemError::Usage(
            "mem migrate: nothing to measure (no method, unit or page count)".into(),
        ));
    }
    if options.reps == 0 {
        return Err(MemError::Usage("--reps must be at least 1".into()));
    }
    if let Some(p) = options.link_peak_gbps {
        if !(p.is_finite() && p > 0.0) {
            return Err(MemError::Usage(format!(
                "--link-peak {p}: give a positive GB/s figure"
            )));
        }
    }
    let base = base_page_size() as u64;
    for &u in &options.unit_bytes {
        if u == 0 || u % base != 0 {
            return Err(MemError::Usage(format!(
                "--unit {}: a page unit must be a multiple of the base page ({})",
                fmt_bytes(u),
                fmt_bytes(base)
            )));
        }
    }
    if options.methods.contains(&Method::StreamCopy) && !options.isa.has_nt() {
        return Err(MemError::Unsupported(format!(
            "the streaming copy needs non-temporal stores, which {} lacks here; use a SIMD --isa",
            options.isa
        )));
    }
    let (pairs, mut notes) = pairs(machine, choice, cpu)?;
    options.counts.sort_unstable();
    options.counts.dedup();
    // What a cell needs per node: the source and the destination exist together.
    let need_of = |p: &Pair, unit: u64, count: u64| -> BTreeMap<u32, u64> {
        let mut need = BTreeMap::new();
        budget::need(&mut need, p.src, unit * count);
        budget::need(&mut need, p.dst, unit * count);
        need
    };
    let fits_sweep = |p: &Pair, unit: u64, count: u64| -> bool {
        need_of(p, unit, count)
            .iter()
            .all(|(n, b)| *b <= budgets.sweep_bytes(*n))
    };
    let mut clamp_note = None;
    if counts_given {
        let biggest_unit = *options.unit_bytes.iter().max().unwrap();
        let biggest = *options.counts.last().unwrap();
        for p in &pairs {
            budgets.check(
                &need_of(p, biggest_unit, biggest),
                &format!("mem migrate node {} -> node {}", p.src, p.dst),
                "--max-pages",
            )?;
        }
    } else {
        let biggest = *options.counts.last().unwrap();
        let mut clamped = Vec::new();
        for &u in &options.unit_bytes {
            let top = options
                .counts
                .iter()
                .copied()
                .filter(|&c| pairs.iter().all(|p| fits_sweep(p, u, c)))
                .max();
            match top {
                None => {
                    let p = &pairs[0];
                    return Err(MemError::Usage(format!(
                        "mem migrate: even {} pages of {} (source and copy) do not fit in {:.0}% of the free memory of node {} ({} there: {}); free some memory, or give --max-pages to use up to {:.0}%",
                        options.counts[0],
                        fmt_bytes(u),
                        budget::SWEEP_FRACTION * 100.0,
                        p.dst,
                        fmt_bytes(budgets.nodes.get(&p.dst).map_or(0, |b| b.free_bytes)),
                        budgets.nodes.get(&p.dst).map_or(String::new(), |b| b.source.clone()),
                        budget::SAFE_FRACTION * 100.0
                    )));
                }
                Some(t) if t < biggest => clamped.push(format!(
                    "{} pages up to 2^{} ({})",
                    fmt_bytes(u),
                    63 - t.leading_zeros(),
                    fmt_bytes(u * t)
                )),
                Some(_) => {}
            }
        }
        if !clamped.is_empty() {
            let p = &pairs[0];
            let b = budgets.nodes.get(&p.dst);
            clamp_note = Some(format!(
                "default sweep clamped to what fits in {:.0}% of free memory ({}): {}; 2^{} pages of {} would need {} at once (source and copy)",
                budget::SWEEP_FRACTION * 100.0,
                b.map_or("unknown".to_string(), |b| format!("{} on node {}; {}", fmt_bytes(b.free_bytes), p.dst, b.source)),
                clamped.join(", "),
                63 - biggest.leading_zeros(),
                fmt_bytes(*options.unit_bytes.iter().max().unwrap()),
                fmt_bytes(footprint(*options.unit_bytes.iter().max().unwrap(), biggest)),
            ));
        }
    }
    let mut cells = Vec::new();
    for (pi, p) in pairs.iter().enumerate() {
        for &u in &options.unit_bytes {
            for &c in &options.counts {
                if !counts_given && !fits_sweep(p, u, c) {
                    continue;
                }
                cells.push(Cell {
                    key: format!(
                        "mem/migrate/node{}-node{}/{}/pages-{c}",
                        p.src,
                        p.dst,
                        fmt_bytes(u).replace(' ', "")
                    ),
                    pair: pi,
                    unit_bytes: u,
                    pages: c,
                });
            }
        }
    }
    if let Some(n) = &clamp_note {
        notes.push(n.clone());
    }
    if base != 64 << 10 && options.unit_bytes.contains(&(64 << 10)) {
        notes.push(format!(
            "this kernel's pages are {}: a 64 KiB page is measured as a unit of {} base pages (no 64 KiB pages here)",
            fmt_bytes(base),
            (64 << 10) / base
        ));
    }
    Ok(Plan {
        options,
        pairs,
        cells,
        clamp_note,
        notes,
    })
}

/// The plan `numalab mem migrate --quick` runs (and `numalab evaluate --quick`): the
/// nearest and farthest pairs (node 0 -> 0 on one node), 2^8..2^11 pages of 64 KiB
/// and of the base page, clamped to free memory.
pub fn quick_plan(machine: &Machine, budgets: &budget::Budgets) -> Result<Plan, MemError> {
    plan(
        machine,
        budgets,
        &PairChoice::NearestFarthest,
        None,
        Options::quick(),
        false,
    )
}

fn errno_name(e: i32) -> String {
    match e {
        libc::ENOMEM => "ENOMEM (target node full)".into(),
        libc::EBUSY => "EBUSY (page busy)".into(),
        libc::EACCES => "EACCES (page shared with other processes)".into(),
        libc::EFAULT => "EFAULT (not a mapped page)".into(),
        libc::ENOENT => "ENOENT (page not present)".into(),
        libc::EINVAL => "EINVAL".into(),
        libc::EIO => "EIO".into(),
        other => format!("errno {other}"),
    }
}

/// Measures the local one-thread copy bandwidth on `cpu` (payload GB/s, best of the
/// plain and streaming copy kernels).
pub fn measure_reference(
    machine: &Machine,
    budgets: &budget::Budgets,
    placer: &dyn Placer,
    cpu: u32,
    isa: Isa,
) -> Result<Reference, MemError> {
    let node = machine.pu(cpu).and_then(|p| p.numa_node);
    let policy = node.map_or(MemPolicy::FirstTouch, |n| MemPolicy::Bind(vec![n]));
    let mut opts = bandwidth::Options::defaults(machine);
    opts.kernels = vec![Kernel::plain(Op::Copy)];
    if isa.has_nt() {
        opts.kernels.push(Kernel {
            op: Op::Copy,
            nt: true,
        });
    }
    opts.isa = isa;
    opts.reps = 5;
    // Copy: two arrays of 4x the LLC each.
    opts.working_set_bytes = (2 * 4 * crate::llc_bytes(machine).0).max(128 << 20);
    if let Some(n) = node {
        let safe = budgets.safe_bytes(n);
        if opts.working_set_bytes > safe {
            opts.working_set_bytes = (safe / 2).max(16 << 20);
        }
    }
    let p = bandwidth::Plan {
        groups: vec![Group {
            key_prefix: "reference".into(),
            pus: vec![cpu],
            policy,
            matrix: None,
        }],
        options: opts.clone(),
        notes: Vec::new(),
    };
    let mut recs: Vec<Record> = Vec::new();
    let out = bandwidth::run(&p, machine, placer, &mut recs);
    if out.interrupted {
        return Err(MemError::Interrupted);
    }
    if let Some((_, e)) = out.failed.into_iter().next() {
        return Err(e);
    }
    let best = recs
        .iter()
        .filter_map(|r| r.decode::<bandwidth::BandwidthRecord>()?.ok())
        .max_by(|a, b| a.bandwidth_gbps.median.total_cmp(&b.bandwidth_gbps.median))
        .ok_or_else(|| MemError::Runtime("the reference copy produced no result".into()))?;
    Ok(Reference {
        kind: "local_copy".into(),
        gbps: best.bandwidth_gbps.median / 2.0,
        detail: format!(
            "one thread on CPU {cpu}, {} kernel ({}), {} per array on node {}: {:.2} GB/s STREAM-counted = {:.2} GB/s of payload",
            best.kernel,
            best.isa,
            fmt_bytes(best.array_bytes),
            node.map_or("?".into(), |n| n.to_string()),
            best.bandwidth_gbps.median,
            best.bandwidth_gbps.median / 2.0
        ),
    })
}

/// Runs a plan: the reference first (once per mover CPU, unless a link peak is given),
/// then every cell.
pub fn run(
    plan: &Plan,
    machine: &Machine,
    budgets: &budget::Budgets,
    placer: &dyn Placer,
    sink: &mut dyn Sink,
) -> Outcome {
    let mut out = Outcome::default();
    let (clock, clock_warnings) = check_clock();
    let todo: Vec<&Cell> = plan.cells.iter().filter(|c| !sink.done(&c.key)).collect();
    out.skipped = plan.cells.len() - todo.len();
    let mut refs: BTreeMap<u32, Reference> = BTreeMap::new();
    let total = todo.len() as u64;
    for (i, cell) in todo.iter().enumerate() {
        if numalab_schema::interrupt::requested() {
            out.interrupted = true;
            break;
        }
        sink.progress("migrate", i as u64, total);
        let pair = &plan.pairs[cell.pair];
        let reference = match plan.options.link_peak_gbps {
            Some(g) => Reference {
                kind: "link_peak".into(),
                gbps: g,
                detail: format!("--link-peak {g} GB/s, given by the user"),
            },
            None => match refs.get(&pair.cpu) {
                Some(r) => r.clone(),
                None => {
                    match measure_reference(machine, budgets, placer, pair.cpu, plan.options.isa) {
                        Ok(r) => {
                            refs.insert(pair.cpu, r.clone());
                            r
                        }
                        Err(MemError::Interrupted) => {
                            out.interrupted = true;
                            break;
                        }
                        Err(e) => {
                            out.failed.push((cell.key.clone(), e));
                            continue;
                        }
                    }
                }
            },
        };
        match run_cell(plan, cell, machine, placer, &clock, reference) {
            Ok(rec) => {
                let mut w = clock_warnings.clone();
                for m in &rec.methods {
                    let not: u64 = m.pages_not_moved.values().sum();
                    if not > 0 {
                        w.push(
                            Warning::new(
                                "pages_not_moved",
                                format!(
                                    "{}: {not} of {} pages were not moved to node {} ({}); they stayed where they were and were freed at the end of the round",
                                    m.method.name(),
                                    rec.base_pages,
                                    rec.dst_node,
                                    m.pages_not_moved
                                        .iter()
                                        .map(|(k, v)| format!("{v} {k}"))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            )
                            .with_remedy("free memory on the target node, or check that no other process shares the pages"),
                        );
                    }
                    if !m.data_verified {
                        w.push(Warning::new(
                            "data_mismatch",
                            format!(
                                "{}: the destination does not hold the source data",
                                m.method.name()
                            ),
                        ));
                    }
                }
                if rec.source.fraction_on(&[rec.src_node]) < 0.99 {
                    w.push(Warning::new(
                        "placement_mismatch",
                        format!(
                            "only {:.1}% of the source pages were on node {} before moving",
                            rec.source.fraction_on(&[rec.src_node]) * 100.0,
                            rec.src_node
                        ),
                    ));
                }
                let record = Record::new(cell.key.clone(), Origin::Measured, &rec).with_warnings(w);
                out.deliver(sink, record)
            }
            Err(MemError::Interrupted) => {
                out.interrupted = true;
                break;
            }
            Err(e) => out.failed.push((cell.key.clone(), e)),
        }
    }
    sink.progress("migrate", total, total);
    out
}

/// What one round of one method found.
struct Round {
    ns: u64,
    on_target: u64,
    not_moved: BTreeMap<String, u64>,
    destination: PagePlacement,
    verified: bool,
    source: PagePlacement,
}

fn sample_check(src: &[u64], dst: &[u64], stride: usize) -> bool {
    src.len() == dst.len()
        && (0..src.len())
            .step_by(stride.max(1))
            .all(|i| src[i] == dst[i])
        && src.last() == dst.last()
}

fn one_round(
    method: Method,
    pair: &Pair,
    bytes: u64,
    prefault: bool,
    isa: Isa,
    placer: &dyn Placer,
    stamp: u64,
) -> Result<Round, MemError> {
    let base = base_page_size();
    // Source on the source node, first touched here, with a pattern unique to the round.
    let mut src = Region::new(bytes as usize, PageKind::Base)?;
    placer.bind_region(&src, &MemPolicy::Bind(vec![pair.src]))?;
    for (i, w) in src.as_mut_typed::<u64>().iter_mut().enumerate() {
        *w = stamp ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    let source = PagePlacement::from_page_nodes(&placer.page_nodes(&src)?);
    let stride = base / 8;
    match method {
        Method::MovePages => {
            let expect: Vec<u64> = src
                .as_typed::<u64>()
                .iter()
                .step_by(stride)
                .copied()
                .collect();
            let t0 = numalab_clock::now_ns();
            let status = match placer.move_region(&src, pair.dst) {
                Ok(s) => s,
                Err(e) => {
                    // Say where the pages ended up before the memory is freed.
                    let now = placer
                        .page_nodes(&src)
                        .map(|n| PagePlacement::from_page_nodes(&n))
                        .unwrap_or_default();
                    let on = now
                        .pages_per_node
                        .iter()
                        .filter(|(n, _)| *n == pair.dst)
                        .map(|(_, c)| c)
                        .sum::<u64>();
                    return Err(MemError::Runtime(format!(
                        "{e}; when it failed {on} of {} pages were on node {} (pages per node: {:?}); the test memory was then freed, nothing stays half-moved",
                        src.pages(),
                        pair.dst,
                        now.pages_per_node
                    )));
                }
            };
            let t1 = numalab_clock::now_ns();
            let mut on_target = 0;
            let mut not_moved = BTreeMap::new();
            for s in &status {
                match s {
                    Ok(n) if *n == pair.dst => on_target += 1,
                    Ok(n) => *not_moved.entry(format!("left on node {n}")).or_insert(0) += 1,
                    Err(e) => *not_moved.entry(errno_name(*e)).or_insert(0) += 1,
                }
            }
            let destination = PagePlacement::from_page_nodes(&placer.page_nodes(&src)?);
            let got: Vec<u64> = src
                .as_typed::<u64>()
                .iter()
                .step_by(stride)
                .copied()
                .collect();
            Ok(Round {
                ns: t1 - t0,
                on_target,
                not_moved,
                destination,
                verified: got == expect,
                source,
            })
        }
        Method::Memcpy | Method::StreamCopy => {
            let mut dst = Region::new(bytes as usize, PageKind::Base)?;
            placer.bind_region(&dst, &MemPolicy::Bind(vec![pair.dst]))?;
            if prefault {
                dst.touch();
            }
            let t0 = numalab_clock::now_ns();
            if method == Method::Memcpy {
                dst.as_mut_slice().copy_from_slice(src.as_slice());
            } else {
                kernels::copy(isa, src.as_typed::<f64>(), dst.as_mut_typed::<f64>(), true)?;
            }
            let t1 = numalab_clock::now_ns();
            std::hint::black_box(dst.as_slice().as_ptr());
            let nodes = placer.page_nodes(&dst)?;
            let destination = PagePlacement::from_page_nodes(&nodes);
            let on_target = nodes.iter().filter(|n| **n == Some(pair.dst)).count() as u64;
            let mut not_moved = BTreeMap::new();
            for n in nodes.iter().filter(|n| **n != Some(pair.dst)) {
                let k = match n {
                    Some(n) => format!("landed on node {n}"),
                    None => "not present".into(),
                };
                *not_moved.entry(k).or_insert(0) += 1;
            }
            Ok(Round {
                ns: t1 - t0,
                on_target,
                not_moved,
                destination,
                verified: sample_check(src.as_typed::<u64>(), dst.as_typed::<u64>(), stride),
                source,
            })
        }
    }
}

/// Time to fault in a fresh destination region (one write per base page), ns.
fn fault_round(pair: &Pair, bytes: u64, placer: &dyn Placer) -> Result<u64, MemError> {
    let mut dst = Region::new(bytes as usize, PageKind::Base)?;
    placer.bind_region(&dst, &MemPolicy::Bind(vec![pair.dst]))?;
    let t0 = numalab_clock::now_ns();
    dst.touch();
    Ok(numalab_clock::now_ns() - t0)
}

fn run_cell(
    plan: &Plan,
    cell: &Cell,
    machine: &Machine,
    placer: &dyn Placer,
    clock: &numalab_clock::ClockCheck,
    reference: Reference,
) -> Result<MigrateRecord, MemError> {
    let pair = &plan.pairs[cell.pair];
    let opts = &plan.options;
    let bytes = cell.unit_bytes * cell.pages;
    let base = base_page_size() as u64;
    let methods = opts.methods.clone();
    let rounds = pool::run_pinned(
        placer,
        &[pair.cpu],
        |_| Ok(()),
        |_, _, _| -> Result<(Vec<Vec<Round>>, Vec<f64>), MemError> {
            let mut per: Vec<Vec<Round>> = methods.iter().map(|_| Vec::new()).collect();
            let mut faults = Vec::new();
            let copies = methods.iter().any(|m| *m != Method::MovePages);
            for r in 0..opts.reps {
                for k in 0..methods.len() {
                    if numalab_schema::interrupt::requested() {
                        return Err(MemError::Interrupted);
                    }
                    // Rotate the order so no method always runs first.
                    let mi = (k + r) % methods.len();
                    let stamp = (r as u64) << 32 | mi as u64 | 0x5a5a_0000;
                    per[mi].push(one_round(
                        methods[mi],
                        pair,
                        bytes,
                        opts.prefault,
                        opts.isa,
                        placer,
                        stamp,
                    )?);
                }
                if copies {
                    faults.push(fault_round(pair, bytes, placer)? as f64);
                }
            }
            Ok((per, faults))
        },
    )?
    .into_iter()
    .next()
    .expect("one worker")?;
    let (rounds, faults) = rounds;
    let fault_ns_per_base_page = numalab_stats::median(&faults).map(|f| f / (bytes / base) as f64);
    let same = pair.src == pair.dst;
    let source = rounds
        .first()
        .and_then(|r| r.first())
        .map(|r| r.source.clone())
        .unwrap_or_default();
    let mut results = Vec::new();
    for (mi, method) in methods.iter().enumerate() {
        let rs = &rounds[mi];
        let sample_ns: Vec<f64> = rs.iter().map(|r| r.ns as f64).collect();
        let last = rs.last().expect("at least one round");
        let moved_nothing = same && *method == Method::MovePages;
        let throughput = if moved_nothing {
            None
        } else {
            Summary::of(
                &sample_ns
                    .iter()
                    .map(|ns| bytes as f64 / ns.max(1.0))
                    .collect::<Vec<_>>(),
            )
        };
        let median_ns = numalab_stats::median(&sample_ns).unwrap_or(0.0);
        results.push(MethodResult {
            method: *method,
            percent_of_reference: throughput.as_ref().map(|t| 100.0 * t.median / reference.gbps),
            throughput_gbps: throughput,
            ns_per_page: median_ns / cell.pages as f64,
            pages_on_target: last.on_target,
            pages_not_moved: last.not_moved.clone(),
            destination: last.destination.clone(),
            data_verified: rs.iter().all(|r| r.verified),
            note: moved_nothing.then(|| {
                "source and target are the same node: the kernel left every page where it was, so no bytes moved; the time is the system call's cost of checking the pages".to_string()
            }),
            sample_ns,
        });
    }
    let (winner, mut why) = verdict(&results, same, &reference, cell.unit_bytes, base);
    if let Some(f) = fault_ns_per_base_page.filter(|_| !opts.prefault) {
        let fault_total = f * (bytes / base) as f64;
        let copy_ns = results
            .iter()
            .filter(|r| r.method != Method::MovePages)
            .filter_map(|r| numalab_stats::median(&r.sample_ns))
            .fold(f64::INFINITY, f64::min);
        if copy_ns.is_finite() && copy_ns > 0.0 {
            why.push_str(&format!(
                "; faulting in the fresh destination alone takes {:.0} ns per base page, {:.0}% of the fastest copy's time (--prefault measures the copy without it)",
                f,
                100.0 * fault_total / copy_ns
            ));
        }
    }
    Ok(MigrateRecord {
        src_node: pair.src,
        dst_node: pair.dst,
        pair_role: pair.role.clone(),
        distance: pair.distance,
        cpu: pair.cpu,
        cpu_node: machine.pu(pair.cpu).and_then(|p| p.numa_node),
        unit_bytes: cell.unit_bytes,
        pages: cell.pages,
        base_pages: bytes / base,
        bytes,
        unit_note: (cell.unit_bytes != base
            && cell.unit_bytes.is_multiple_of(base)
            && cell.unit_bytes > base)
            .then(|| {
                format!(
                    "a {} unit is {} base pages of {} (this system has no {} pages)",
                    fmt_bytes(cell.unit_bytes),
                    cell.unit_bytes / base,
                    fmt_bytes(base),
                    fmt_bytes(cell.unit_bytes)
                )
            }),
        same_node: same,
        prefault: opts.prefault,
        destination_fault_ns_per_base_page: fault_ns_per_base_page,
        source,
        methods: results,
        winner,
        why,
        reference,
        clamp_note: plan.clamp_note.clone(),
        isa: opts.isa,
        timer: Timer {
            check: clock.clone(),
            subtracted_ns: 0.0,
        },
    })
}

/// Which method won a cell and why, from its figures alone.
pub fn verdict(
    results: &[MethodResult],
    same_node: bool,
    reference: &Reference,
    unit_bytes: u64,
    base_page: u64,
) -> (Option<Method>, String) {
    let med = |m: Method| -> Option<f64> {
        results
            .iter()
            .find(|r| r.method == m)
            .and_then(|r| r.throughput_gbps.as_ref())
            .map(|t| t.median)
    };
    let winner = results
        .iter()
        .filter_map(|r| Some((r.method, r.throughput_gbps.as_ref()?.median)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let Some((w, w_gbps)) = winner else {
        return (None, "no method moved any data".into());
    };
    let summary = |m: Method| -> Option<&Summary> {
        results
            .iter()
            .find(|r| r.method == m)
            .and_then(|r| r.throughput_gbps.as_ref())
    };
    // Two methods are told apart only when their samples do not overlap.
    let apart = |a: Method, b: Method| -> bool {
        match (summary(a), summary(b)) {
            (Some(x), Some(y)) => x.min > y.max || y.min > x.max,
            _ => true,
        }
    };
    let runner_up = results
        .iter()
        .filter(|r| r.method != w)
        .filter_map(|r| Some((r.method, r.throughput_gbps.as_ref()?.median)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let mut why = vec![format!(
        "{} wins at {:.2} GB/s ({:.0}% of the {}){}",
        w.name(),
        w_gbps,
        100.0 * w_gbps / reference.gbps,
        if reference.kind == "link_peak" {
            "link peak"
        } else {
            "local one-thread copy"
        },
        match runner_up {
            Some((r, _)) if !apart(w, r) => format!(
                ", but its samples overlap those of {}: not a clear win on this run",
                r.name()
            ),
            _ => String::new(),
        }
    )];
    let ratio = |a: f64, b: f64| a / b;
    if let (Some(s), Some(m)) = (med(Method::StreamCopy), med(Method::Memcpy)) {
        let r = ratio(s, m);
        if !apart(Method::StreamCopy, Method::Memcpy) {
            why.push(format!(
                "the streaming copy and memcpy are not clearly different on this run (streaming copy / memcpy = {r:.2}x in medians, but their samples overlap)"
            ));
        } else if r > 1.05 {
            why.push(format!(
                "the streaming copy is {r:.2}x memcpy: its non-temporal stores skip reading the destination lines before writing them (write-allocate), a third less memory traffic"
            ));
        } else if r < 0.95 {
            why.push(format!(
                "memcpy is {:.2}x the streaming copy: the C library's memcpy is tuned for this CPU (e.g. `rep movsb` or its own non-temporal path), or the copy stays in cache at this size",
                1.0 / r
            ));
        } else {
            why.push("memcpy and the streaming copy are within 5%: the C library's memcpy also uses non-temporal stores for large copies, or both are limited by the same core".into());
        }
    }
    if let Some(mp) = results.iter().find(|r| r.method == Method::MovePages) {
        let per_base = mp.ns_per_page / (unit_bytes / base_page).max(1) as f64;
        match (med(Method::MovePages), same_node) {
            (_, true) => why.push(format!(
                "move_pages had nothing to move (same node) and spent {:.0} ns per base page checking",
                per_base
            )),
            (Some(g), false) => {
                let best_copy = [med(Method::Memcpy), med(Method::StreamCopy)]
                    .into_iter()
                    .flatten()
                    .fold(0.0, f64::max);
                if best_copy > 0.0 && g < best_copy {
                    why.push(format!(
                        "move_pages reaches {:.2}x the best copy: it pays per-page kernel work ({:.0} ns per {} page: isolate, unmap, TLB shootdown, copy, remap) on top of the copy, but keeps the virtual addresses",
                        g / best_copy,
                        per_base,
                        fmt_bytes(base_page)
                    ));
                } else if best_copy > 0.0 {
                    why.push(format!(
                        "move_pages is {:.2}x the best copy: the copies pay a page fault per destination page ({} faults here), the kernel allocates target pages in bulk",
                        g / best_copy,
                        if unit_bytes >= base_page { "many" } else { "some" }
                    ));
                }
            }
            _ => {}
        }
    }
    if reference.kind == "local_copy" && !same_node {
        let pct = 100.0 * w_gbps / reference.gbps;
        if pct >= 80.0 {
            why.push(format!(
                "at {pct:.0}% of what one thread copies locally, a single core is the limit, not the link"
            ));
        } else {
            why.push(format!(
                "at {pct:.0}% of one thread's local copy, the remote path (latency and link) limits the core below its local rate"
            ));
        }
    }
    (Some(w), why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(m: Method, gbps: Option<f64>, ns_per_page: f64) -> MethodResult {
        MethodResult {
            method: m,
            sample_ns: vec![1.0],
            throughput_gbps: gbps.map(|g| Summary::of(&[g * 0.99, g, g * 1.01]).unwrap()),
            percent_of_reference: gbps.map(|g| g * 10.0),
            ns_per_page,
            pages_on_target: 0,
            pages_not_moved: BTreeMap::new(),
            destination: PagePlacement::default(),
            data_verified: true,
            note: None,
        }
    }

    fn local(g: f64) -> Reference {
        Reference {
            kind: "local_copy".into(),
            gbps: g,
            detail: String::new(),
        }
    }

    #[test]
    fn verdict_names_the_winner_and_the_reasons() {
        let rs = [
            result(Method::Memcpy, Some(6.0), 10000.0),
            result(Method::MovePages, Some(2.0), 30000.0),
            result(Method::StreamCopy, Some(8.0), 8000.0),
        ];
        let (w, why) = verdict(&rs, false, &local(9.0), 65536, 4096);
        assert_eq!(w, Some(Method::StreamCopy));
        assert!(
            why.contains("stream_copy wins at 8.00 GB/s (89% of the local one-thread copy)"),
            "{why}"
        );
        assert!(why.contains("1.33x memcpy"), "{why}");
        assert!(why.contains("move_pages reaches 0.25x"), "{why}");
        assert!(why.contains("1875 ns per 4 KiB page"), "{why}");
        assert!(why.contains("a single core is the limit"), "{why}");
        let (w, why) = verdict(&rs, false, &local(20.0), 65536, 4096);
        assert_eq!(w, Some(Method::StreamCopy));
        assert!(why.contains("remote path"), "{why}");
    }

    #[test]
    fn same_node_baseline_gives_move_pages_no_throughput() {
        let rs = [
            result(Method::Memcpy, Some(6.0), 1.0),
            result(Method::MovePages, None, 400.0),
            result(Method::StreamCopy, Some(5.9), 1.0),
        ];
        let (w, why) = verdict(&rs, true, &local(9.0), 4096, 4096);
        assert_eq!(w, Some(Method::Memcpy));
        assert!(why.contains("nothing to move (same node)"), "{why}");
        assert!(why.contains("not clearly different"), "{why}");
        assert!(!why.contains("single core"), "{why}");
        let none = [result(Method::MovePages, None, 1.0)];
        assert_eq!(verdict(&none, true, &local(1.0), 4096, 4096).0, None);
    }

    #[test]
    fn overlapping_samples_are_not_called_a_win_or_explained() {
        let mut a = result(Method::Memcpy, Some(6.0), 1.0);
        a.throughput_gbps = Summary::of(&[3.0, 6.0, 9.0]);
        let rs = [a, result(Method::StreamCopy, Some(7.0), 1.0)];
        let (w, why) = verdict(&rs, false, &local(8.0), 4096, 4096);
        assert_eq!(w, Some(Method::StreamCopy));
        assert!(
            why.contains("overlap those of memcpy: not a clear win"),
            "{why}"
        );
        assert!(why.contains("not clearly different"), "{why}");
        assert!(!why.contains("write-allocate"), "{why}");
    }

    #[test]
    fn methods_parse() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.name()).unwrap(), m);
        }
        assert_eq!(Method::parse("move-pages").unwrap(), Method::MovePages);
        assert!(Method::parse("dma").is_err());
    }
}
