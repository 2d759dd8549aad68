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

mod run;
mod verdict;

pub use run::{measure_reference, pages_not_moved, run};
pub use verdict::verdict;

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

    /// Sets the page counts to the powers of two from `min` to `max` pages (each rounded
    /// down to a power of two; a bound not given keeps this sweep's own). An error says
    /// which bound is wrong: 0 pages, or a minimum above the maximum.
    pub fn count_range(&mut self, min: Option<u64>, max: Option<u64>) -> Result<(), String> {
        if min == Some(0) || max == Some(0) {
            return Err("--min-pages and --max-pages: give 1 page or more".into());
        }
        let pow2_floor = |n: u64| 1u64 << (63 - n.leading_zeros());
        let lo = pow2_floor(min.or(self.counts.first().copied()).unwrap_or(1 << 8));
        let hi = pow2_floor(max.or(self.counts.last().copied()).unwrap_or(1 << 17));
        if lo > hi {
            return Err(format!(
                "--min-pages {lo} is larger than --max-pages {hi} (powers of two, rounded down)"
            ));
        }
        self.counts = (lo.trailing_zeros()..=hi.trailing_zeros())
            .map(|e| 1u64 << e)
            .collect();
        Ok(())
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
    // The bound of `mem bandwidth --reps` (issue 50: 18446744073709551615 was accepted).
    let max = crate::bandwidth::MAX_REPS;
    if options.reps > max {
        return Err(MemError::Usage(format!(
            "--reps {}: at most {max} rounds per cell",
            options.reps
        )));
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
        budget::need(&mut need, p.src, unit.saturating_mul(count));
        budget::need(&mut need, p.dst, unit.saturating_mul(count));
        need
    };
    let fits_sweep = |p: &Pair, unit: u64, count: u64| -> bool {
        need_of(p, unit, count)
            .iter()
            .all(|(n, b)| *b <= budgets.sweep_bytes(*n))
    };
    // A default sweep whose smallest count does not fit a node starts lower (halving,
    // down to one page) rather than being refused: fewer pages a cell, with a note.
    let mut lowered = None;
    if !counts_given {
        let fits_all = |c: u64| {
            options
                .unit_bytes
                .iter()
                .all(|&u| pairs.iter().all(|p| fits_sweep(p, u, c)))
        };
        let first = options.counts[0];
        let mut c = first;
        while c > 1 && !fits_all(c) {
            c /= 2;
        }
        if c < first && fits_all(c) {
            let lower: Vec<u64> = (c.trailing_zeros()..first.trailing_zeros())
                .map(|e| 1u64 << e)
                .collect();
            options.counts.splice(0..0, lower);
            lowered = Some(format!(
                "default sweep started at {c} pages instead of {first}: {first} pages of {} (source and copy) do not fit in {:.0}% of the free memory of a node used",
                fmt_bytes(*options.unit_bytes.iter().max().unwrap()),
                budget::SWEEP_FRACTION * 100.0
            ));
        }
    }
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
    notes.extend(lowered);
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

/// The plan `numalab mem migrate` runs without options (and `numalab evaluate`): the
/// nearest and farthest pairs (node 0 -> 0 on one node), 2^8..2^17 pages of 64 KiB and
/// of the base page, clamped to free memory.
pub fn default_plan(machine: &Machine, budgets: &budget::Budgets) -> Result<Plan, MemError> {
    plan(
        machine,
        budgets,
        &PairChoice::NearestFarthest,
        None,
        Options::defaults(),
        false,
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 50: `mem migrate --max-pages 0` was reported as 1 page; 0 is refused (a
    /// sweep of no pages measures nothing), as is `--min-pages 0`.
    #[test]
    fn mem_migrate_max_pages_0_is_refused_not_reported_as_1() {
        for (min, max) in [(None, Some(0)), (Some(0), None), (Some(0), Some(0))] {
            let mut o = Options::defaults();
            let e = o.count_range(min, max).unwrap_err();
            assert!(e.contains("give 1 page or more"), "{e}");
        }
        let mut o = Options::defaults();
        o.count_range(Some(1), Some(1)).unwrap();
        assert_eq!(o.counts, [1]);
    }

    #[test]
    fn page_count_bounds_round_down_to_powers_of_two_and_refuse_nonsense() {
        let mut o = Options::quick();
        o.count_range(Some(300), Some(5000)).unwrap();
        assert_eq!(o.counts, vec![256, 512, 1024, 2048, 4096]);
        let mut o = Options::defaults();
        o.count_range(None, Some(1024)).unwrap();
        assert_eq!(o.counts, vec![256, 512, 1024]);
        let mut o = Options::quick();
        o.count_range(Some(4096), None).unwrap_err();
        let e = o.count_range(Some(0), None).unwrap_err();
        assert!(e.contains("1 page or more"), "{e}");
        let e = o.count_range(Some(2048), Some(300)).unwrap_err();
        assert!(
            e.contains("--min-pages 2048 is larger than --max-pages 256"),
            "{e}"
        );
    }

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
        // Said once: the winner's sentence names the overlap with the runner-up.
        assert!(why.contains("overlap those of stream_copy"), "{why}");
        assert!(!why.contains("not clearly different"), "{why}");
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
        assert!(!why.contains("not clearly different"), "{why}");
        assert!(!why.contains("write-allocate"), "{why}");
        // When move_pages wins, the copies' overlap is its own sentence.
        let rs = [
            result(Method::MovePages, Some(9.0), 100.0),
            result(Method::Memcpy, Some(6.0), 1.0),
            result(Method::StreamCopy, Some(6.02), 1.0),
        ];
        let (w, why) = verdict(&rs, false, &local(8.0), 4096, 4096);
        assert_eq!(w, Some(Method::MovePages));
        assert!(why.contains("not clearly different"), "{why}");
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
