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
//! Without `--size` the default is fitted to the nodes' memory budgets (with notes).
//!
//! After the timed rounds every worker checks each kernel's results against the closed
//! form ([`crate::kernels::verify`]); a wrong result fails the cell instead of giving a
//! figure, and records say `verified`.
//!
//! Where the machine has memory-controller PMUs (Intel iMC, AMD UMC/DF, Arm CMN:
//! `numalab-uncore`), every kernel then runs one more untimed pass (its inner
//! repetitions, all threads) with the controllers counted system-wide, and the record
//! puts the probe's bytes beside the controllers' ([`UncoreSource`]); the timed samples
//! are not disturbed by the counting. Where it has none, the record says so.

use crate::kernels::IsaExt;
use crate::kernels::{self, verify, Arrays, Isa, Kernel};
use crate::pool::{self, Placed};
use crate::{
    budget, check_clock, llc_bytes, Cells, MemError, Outcome, PageRequest, PagesObtained, Sink,
    Timer,
};
use numalab_records::mem::bandwidth::{TrialPoint, VariantChoice};
use numalab_schema::{cpulist, units, Machine, Origin, Record, Warning};
use numalab_stats::Summary;
use numalab_topo::bind::{MemPolicy, Placer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The most repetitions `--reps` takes (as `--repeat` and `--batches`).
pub const MAX_REPS: usize = 1_000_000;

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
    /// Whether the working set was given (`--size`): it is then refused when it does not
    /// fit; a default one is reduced to fit the nodes' budgets, with a note.
    #[serde(default)]
    pub size_given: bool,
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
            size_given: false,
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

pub use crate::checks::{
    check_policy_nodes, check_threads, cpu_nodes, memory_node, memory_nodes, pages_warning,
};
pub use numalab_records::mem::{BandwidthRecord, MatrixCell, Verification};

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
    if opts.reps > MAX_REPS {
        return Err(MemError::Usage(format!(
            "--reps {}: at most {MAX_REPS} repetitions",
            opts.reps
        )));
    }
    Ok(())
}

/// Bytes one worker maps.
pub fn per_worker_bytes(opts: &Options, threads: usize) -> u64 {
    let page = match opts.pages {
        PageRequest::HugeTlb(b) => b,
        _ => numalab_topo::bind::base_page_size() as u64,
    };
    crate::round_up(
        (opts.working_set_bytes / threads as u64).max(3 * 4096),
        page,
    )
}

/// Bytes per node the workers of a group map.
fn memory_need(
    machine: &Machine,
    opts: &Options,
    pus: &[u32],
    policy: &MemPolicy,
) -> BTreeMap<u32, u64> {
    let each = per_worker_bytes(opts, pus.len());
    let mut need = BTreeMap::new();
    for &pu in pus {
        let nodes = pool::expected_nodes(machine, policy, pu);
        for n in &nodes {
            budget::need(&mut need, *n, each / nodes.len().max(1) as u64);
        }
    }
    need
}

fn check_memory(
    machine: &Machine,
    budgets: &budget::Budgets,
    opts: &Options,
    pus: &[u32],
    policy: &MemPolicy,
) -> Result<(), MemError> {
    // The page size first (as mem latency): the request's fault before the moment's.
    if let PageRequest::HugeTlb(size) = opts.pages {
        let each = per_worker_bytes(opts, pus.len());
        crate::checks::check_hugetlb(machine, size, each * pus.len() as u64)?;
    }
    let need = memory_need(machine, opts, pus, policy);
    budgets.check(&need, "mem bandwidth", "--size")
}

/// Fits a default working set (not given with `--size`) to the machine: when some
/// group would need more of a node than its safe share, the working set becomes the
/// largest whole number of MiB every group fits in, and the notes say so, and how far
/// past the last-level cache it still is (below 4x the cache the figures are
/// cache-influenced). When not even 1 MiB fits, nothing changes and the plan's check
/// refuses with the figures. An explicit size is never changed.
fn fit_working_set(
    machine: &Machine,
    budgets: &budget::Budgets,
    opts: &mut Options,
    groups: &[(Vec<u32>, MemPolicy)],
) -> Vec<String> {
    const MIB: u64 = 1 << 20;
    if opts.size_given || groups.is_empty() {
        return Vec::new();
    }
    let fits = |ws: u64| {
        let mut o = opts.clone();
        o.working_set_bytes = ws;
        groups.iter().all(|(pus, policy)| {
            budgets
                .check(&memory_need(machine, &o, pus, policy), "", "")
                .is_ok()
        })
    };
    let wanted = opts.working_set_bytes;
    if fits(wanted) {
        return Vec::new();
    }
    // Largest whole MiB that fits: lo fits (0: none does), hi does not.
    let (mut lo, mut hi) = (0u64, wanted / MIB);
    while hi > lo + 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid * MIB) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if lo == 0 {
        return Vec::new();
    }
    let fitted = lo * MIB;
    // The node that limits: the largest need relative to its safe share at the wanted
    // size.
    let tightest = groups
        .iter()
        .flat_map(|(pus, policy)| memory_need(machine, opts, pus, policy))
        .filter(|(n, _)| budgets.nodes.contains_key(n))
        .max_by(|(na, a), (nb, b)| {
            let ra = *a as f64 / budgets.safe_bytes(*na).max(1) as f64;
            let rb = *b as f64 / budgets.safe_bytes(*nb).max(1) as f64;
            ra.total_cmp(&rb)
        })
        .map(|(n, _)| n);
    opts.working_set_bytes = fitted;
    let why = match tightest.and_then(|n| budgets.nodes.get(&n)) {
        Some(b) => format!(
            "{:.0}% of what NUMA node {} can give ({}: {})",
            budget::SAFE_FRACTION * 100.0,
            b.node,
            units::bytes(b.free_bytes),
            b.source
        ),
        None => "the nodes' memory budgets".into(),
    };
    let mut notes = vec![format!(
        "working set reduced from the default {} to {} to fit {why}; --size sets it (and is refused beyond that)",
        units::bytes(wanted),
        units::bytes(fitted)
    )];
    let (llc, _) = llc_bytes(machine);
    let ratio = fitted as f64 / llc.max(1) as f64;
    if fitted < 4 * llc {
        notes.push(format!(
            "the working set is only {ratio:.1}x the last-level cache ({}): the figures are cache-influenced (part of the traffic is served by the cache), not the memory's bandwidth",
            units::bytes(llc)
        ));
    } else if fitted < 12 * llc {
        notes.push(format!(
            "still {ratio:.1}x the last-level cache ({}), so the kernels stream from memory, but below STREAM's rule (each of triad's three arrays 4x the cache, 12x in all)",
            units::bytes(llc)
        ));
    }
    notes
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
    }
    let mut options = options;
    let fit_notes = fit_working_set(
        machine,
        budgets,
        &mut options,
        &threads
            .iter()
            .map(|&t| (cpus[..t].to_vec(), policy.clone()))
            .collect::<Vec<_>>(),
    );
    for &t in &threads {
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
    let mut notes = default_notes(machine);
    notes.extend(fit_notes);
    Ok(Plan {
        notes,
        options,
        groups,
    })
}

fn default_notes(machine: &Machine) -> Vec<String> {
    llc_bytes(machine).1.into_iter().collect()
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
    let mut cells = Vec::new();
    for (cpu_node, pus_all) in &rows {
        let counts: Vec<usize> = if threads.is_empty() {
            vec![pus_all.len()]
        } else {
            threads.to_vec()
        };
        for &t in &counts {
            check_threads(t, pus_all, &format!("NUMA node {cpu_node}"))?;
            for &mem_node in &cols {
                cells.push((*cpu_node, pus_all[..t].to_vec(), mem_node));
            }
        }
    }
    let mut options = options;
    let fit_notes = fit_working_set(
        machine,
        budgets,
        &mut options,
        &cells
            .iter()
            .map(|(_, pus, m)| (pus.clone(), MemPolicy::Bind(vec![*m])))
            .collect::<Vec<_>>(),
    );
    let mut groups = Vec::new();
    for (cpu_node, pus, mem_node) in cells {
        let t = pus.len();
        let policy = MemPolicy::Bind(vec![mem_node]);
        check_memory(machine, budgets, &options, &pus, &policy)?;
        groups.push(Group {
            key_prefix: format!(
                "mem/bandwidth/matrix/cpu-node{cpu_node}/mem-node{mem_node}{}/t{t}",
                pages_suffix(options.pages)
            ),
            pus,
            policy,
            matrix: Some(MatrixCell { cpu_node, mem_node }),
        });
    }
    let mut notes = default_notes(machine);
    notes.extend(fit_notes);
    if cols.len() == 1 && rows.len() == 1 {
        notes.push("one NUMA node: the matrix is 1x1 (local only)".into());
    }
    Ok(Plan {
        options,
        groups,
        notes,
    })
}

/// The thread counts of a run on `cpus` CPUs when none are given: every CPU at once,
/// and for a quick run one thread first when there are several (`numalab mem bandwidth
/// --quick` and `numalab evaluate --quick` alike).
pub fn default_threads(cpus: usize, quick: bool) -> Vec<usize> {
    if quick && cpus > 1 {
        vec![1, cpus]
    } else {
        vec![cpus]
    }
}

/// The plan `numalab mem bandwidth --quick` runs (and `numalab evaluate --quick`):
/// the quick kernels on one thread and on every PU, data first-touched locally.
pub fn quick_plan(machine: &Machine, budgets: &budget::Budgets) -> Result<Plan, MemError> {
    let cpus = machine.pu_ids();
    plan(
        machine,
        budgets,
        &cpus,
        &default_threads(cpus.len(), true),
        &MemPolicy::FirstTouch,
        Options::quick(machine),
    )
}

mod run;
#[cfg(test)]
use run::CORRUPT_FOR_TEST;
pub use run::{cell_quality_warnings, run, run_with, LiveUncore, UncoreSource};

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::bind::FakePlacer;
    use std::path::Path;

    fn fixture(name: &str) -> Machine {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/topology")
            .join(name);
        numalab_topo::machine(&numalab_topo::Input::detect(&p).unwrap()).unwrap()
    }

    fn small(machine: &Machine) -> Options {
        let mut o = Options::defaults(machine);
        o.kernels = Kernel::all()
            .into_iter()
            .filter(|k| !k.nt || o.isa.has_nt())
            .collect();
        o.working_set_bytes = 192 << 10;
        o.size_given = true;
        o.reps = 2;
        o.min_sample_ns = 10_000.0;
        o
    }

    /// Every kernel's record says it was verified, with the ISA's vector width; a
    /// kernel whose result check sees a wrong element fails its cell with a clear error
    /// and writes no figure.
    #[test]
    fn results_are_verified_and_a_wrong_kernel_fails_its_cell() {
        let m = fixture("32em64t-2n8c+dax+nvme+mic+dimms.xml");
        let b = budget::Budgets::uniform(&m, 64 << 30);
        let placer = FakePlacer::for_machine(&m);
        let good = plan(&m, &b, &[0, 1], &[2], &MemPolicy::FirstTouch, small(&m)).unwrap();
        let mut recs: Vec<Record> = Vec::new();
        let out = run(&good, &m, &placer, &mut recs);
        assert!(out.failed.is_empty(), "{:?}", out.failed);
        assert_eq!(out.written, good.options.kernels.len());
        for r in &recs {
            let json = serde_json::to_value(r).unwrap();
            let data = &json["data"];
            assert_eq!(data["verified"], true, "{json}");
            // No ISA given: the one that ran is a candidate of the trial, with its width.
            let isa = Isa::from_name(data["isa"].as_str().unwrap()).unwrap();
            assert!(
                kernels::candidates(good.options.isa).contains(&isa),
                "{json}"
            );
            assert_eq!(data["vector_bits"], isa.vector_bits(), "{json}");
            assert_eq!(data["variant"]["how"], "trial", "{json}");
            let v: Verification = serde_json::from_value(data["verification"].clone()).unwrap();
            assert!(v.elements_checked > 0);
            assert_eq!(v.checksum, v.expected_checksum);
        }
        // A corrupted check on another group (its own key prefix: tests run in
        // parallel).
        // The ISA given (as `--isa`): no trial, that ISA in every record and error.
        let mut forced = small(&m);
        forced.isa_forced = true;
        let bad = plan(&m, &b, &[2, 3], &[2], &MemPolicy::FirstTouch, forced).unwrap();
        *CORRUPT_FOR_TEST.lock().unwrap() = Some(bad.groups[0].key_prefix.clone());
        let mut recs: Vec<Record> = Vec::new();
        let out = run(&bad, &m, &placer, &mut recs);
        *CORRUPT_FOR_TEST.lock().unwrap() = None;
        // read writes nothing, so it cannot be corrupted this way; every other kernel
        // fails.
        let writing = bad
            .options
            .kernels
            .iter()
            .filter(|k| !k.spec().writes.is_empty())
            .count();
        assert_eq!(out.failed.len(), writing, "{:?}", out.failed);
        assert_eq!(out.written, bad.options.kernels.len() - writing);
        for (key, e) in &out.failed {
            let e = e.to_string();
            assert!(e.contains("failed its result check"), "{key}: {e}");
            assert!(e.contains("no bandwidth is reported"), "{e}");
            assert!(e.contains("expected"), "{e}");
            assert!(e.contains(&bad.options.isa.label()), "{e}");
        }
        let read_key = format!("/read@{}", bad.options.isa);
        assert!(
            recs.iter().all(|r| r.key.ends_with(&read_key)),
            "{:?}",
            recs.iter().map(|r| &r.key).collect::<Vec<_>>()
        );
        for r in &recs {
            let json = serde_json::to_value(r).unwrap();
            assert_eq!(json["data"]["variant"]["how"], "given", "{json}");
            assert_eq!(json["data"]["isa"], bad.options.isa.name(), "{json}");
        }
    }

    /// Like the emulated Arm server: 4 NUMA nodes of 512 MiB (about 400 MiB free each) and a
    /// last-level cache hwloc does not know (32 MiB assumed: a 384 MiB default). Quick
    /// and default plans shrink the working set to fit 50% of a node, and say so; an
    /// explicit --size beyond it is refused with the figures.
    #[test]
    fn default_sizes_fit_small_nodes_and_explicit_ones_are_refused() {
        // (An hwloc XML fixture with 4 NUMA nodes: the arm64 hwloc under qemu-user
        // cannot load sysfs snapshots such as the Kunpeng one.)
        let mut m = fixture("llnl-cascade-lake-ap-snl-hwloc1.xml");
        assert_eq!(m.numa_nodes.len(), 4);
        for n in &mut m.numa_nodes {
            n.memory_bytes = 512 << 20;
        }
        let with_llc = m.clone();
        m.caches.clear();
        let b = budget::Budgets::uniform(&m, 400 << 20);
        let p = quick_plan(&m, &b).unwrap();
        assert_eq!(p.options.working_set_bytes, 200 << 20, "{:?}", p.notes);
        assert!(p.notes.iter().any(|n| n.contains(
            "working set reduced from the default 384 MiB to 200 MiB to fit 50% of what NUMA node 0 can give"
        )), "{:?}", p.notes);
        assert!(
            p.notes.iter().any(|n| n.contains("below STREAM's rule")),
            "{:?}",
            p.notes
        );
        // Default (not quick) plans and matrices too.
        let cpus = m.pu_ids();
        let d = plan(
            &m,
            &b,
            &cpus,
            &[1],
            &MemPolicy::FirstTouch,
            Options::defaults(&m),
        )
        .unwrap();
        assert_eq!(d.options.working_set_bytes, 200 << 20);
        let x = plan_matrix(&m, &b, &[1], Options::quick(&m)).unwrap();
        assert_eq!(x.options.working_set_bytes, 200 << 20);
        assert_eq!(x.groups.len(), 16);
        // Room enough: nothing changes, no note.
        let roomy = budget::Budgets::uniform(&m, 4 << 30);
        let p = quick_plan(&m, &roomy).unwrap();
        assert_eq!(p.options.working_set_bytes, 384 << 20);
        assert!(!p.notes.iter().any(|n| n.contains("reduced")));
        // With the real caches (4 x 32 MiB L3) 200 MiB cannot get well past them.
        let p = quick_plan(&with_llc, &b).unwrap();
        assert!(
            p.notes.iter().any(|n| n.contains("cache-influenced")),
            "{:?}",
            p.notes
        );
        // An explicit size is checked as given.
        let mut o = Options::quick(&m);
        o.working_set_bytes = 384 << 20;
        o.size_given = true;
        let e = plan(&m, &b, &cpus, &[1], &MemPolicy::FirstTouch, o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs 384 MiB on NUMA node 0"), "{e}");
        assert!(e.contains("--size (at most 200 MiB)"), "{e}");
        // Nothing fits: the refusal, not a silent 0.
        let tiny = budget::Budgets::uniform(&m, 1 << 20);
        assert!(quick_plan(&m, &tiny).is_err());
    }
}
