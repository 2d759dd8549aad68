//! `numalab mem`: memory bandwidth, latency, loaded latency and page migration.
//!
//! Flags are validated by clap without touching hardware; then each subcommand builds a
//! checked plan from `numalab-mem` against the live topology (unknown CPUs or nodes,
//! too many threads, sizes beyond the safe share of a node's free memory are refused
//! here, before anything runs), runs it with the hwloc placer, and prints the report's section of its records (or
//! the JSON bundle with `--json`). Records go to the journal as each cell completes.

use crate::recorder::ProgressSink;
use crate::recorder::{OutputArgs, Recorder};
use crate::{CliError, CliResult};
use clap::{Args, Subcommand};
use numalab_mem::bandwidth;
use numalab_mem::budget::Budgets;
use numalab_mem::chase::Order;
use numalab_mem::kernels::{self, Isa, IsaExt, Kernel};
use numalab_mem::latency;
use numalab_mem::loaded::{self, Traffic};
use numalab_mem::memconfig::KEY as MEMCONFIG_KEY;
use numalab_mem::migrate::{self, Method, PairChoice};
use numalab_mem::{MemError, Outcome, PageRequest};
use numalab_schema::{cpulist, units, ErrorClass, Machine, Origin};
use numalab_topo::bind::{HwlocPlacer, MemPolicy};
use numalab_topo::select::CpuSelection;

/// `numalab mem`.
#[derive(Debug, Args)]
pub struct MemArgs {
    /// What to measure.
    #[command(subcommand)]
    pub command: MemCommand,
}

/// The memory probes.
#[derive(Debug, Subcommand)]
pub enum MemCommand {
    /// Bandwidth of STREAM-style kernels (read, write, copy, scale, add, triad), scalar
    /// and SIMD, on pinned threads with data on chosen nodes; `--matrix` for every node pair.
    #[command(
        after_help = "Examples:\n  numalab mem bandwidth\n  numalab mem bandwidth --kernel triad,copy,read --threads 1,2\n  numalab mem bandwidth --cpus node:0 --policy bind:1 --size 1GiB\n  numalab mem bandwidth --matrix --kernel triad --json\n\nGB/s are 10^9 bytes/s counted the STREAM way; \"actual\" adds the write-allocate read of every plainly stored line."
    )]
    Bandwidth(Box<BandwidthArgs>),
    /// Idle latency by pointer chasing over a working-set sweep, with cache levels found
    /// on the curve; `--matrix` for every node pair.
    #[command(
        after_help = "Examples:\n  numalab mem latency\n  numalab mem latency --pages base,thp --max 1GiB\n  numalab mem latency --matrix --size 1GiB --pages thp"
    )]
    Latency(Box<LatencyArgs>),
    /// Latency under load: one thread chases pointers while the others generate traffic
    /// at throttled intensities from idle to saturation.
    #[command(
        after_help = "Examples:\n  numalab mem loaded\n  numalab mem loaded --cpus node:0 --traffic rw"
    )]
    Loaded(Box<LoadedArgs>),
    /// Page migration between nodes three ways (memcpy, move_pages, streaming SIMD copy)
    /// for 2^8..2^17 pages of 64 KiB and of the base page size.
    #[command(
        after_help = "Examples:\n  numalab mem migrate\n  numalab mem migrate --all --link-peak 25\n  numalab mem migrate --from 0 --to 3 --unit 64KiB --max-pages 4096\n\nOn a one-node machine the only pair is node 0 -> node 0, a sanity baseline."
    )]
    Migrate(Box<MigrateArgs>),
}

/// Options shared by the probes.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Pages backing the memory: base, thp (transparent huge pages), hugetlb or
    /// hugetlb:SIZE (reserved hugetlbfs pages) [default: base for bandwidth, thp for
    /// loaded].
    #[arg(long, value_name = "KIND")]
    pub pages: Option<String>,
    /// Where data goes: first-touch (each thread's own node), bind:N, interleave:LIST
    /// (or interleave:all), preferred:N.
    #[arg(long, value_name = "POLICY", default_value = "first-touch")]
    pub policy: String,
    /// Short run for `numalab evaluate --quick` and smoke tests (fewer kernels, points
    /// and repetitions; sizes stay large enough to measure memory).
    #[arg(long)]
    pub quick: bool,
}

/// `numalab mem bandwidth`.
#[derive(Debug, Args)]
pub struct BandwidthArgs {
    /// Kernels, comma separated: read, write, write-nt, copy, copy-nt, scale, scale-nt,
    /// add, add-nt, triad, triad-nt, or all [default: read, write, write-nt, copy,
    /// scale, add, triad].
    #[arg(long, value_name = "LIST")]
    pub kernel: Option<String>,
    /// Instruction set: scalar, sse2, avx2, avx512 (x86-64), neon, sve (AArch64)
    /// [default: the widest this CPU has; on AArch64 SVE only when its vectors are
    /// wider than NEON's 128 bits].
    #[arg(long, value_name = "ISA")]
    pub isa: Option<String>,
    /// Thread counts, e.g. 4 or 1,2,4,8 for a sweep; thread i runs on the i-th CPU of
    /// --cpus [default: one per CPU].
    #[arg(long, value_name = "N[,N...]")]
    pub threads: Option<String>,
    /// CPUs: 0-3,8 or node:N or package:N or core:N or all.
    #[arg(long, value_name = "SEL", default_value = "all")]
    pub cpus: String,
    /// Working set of each kernel, all arrays and threads together (as likwid-bench -w)
    /// [default: 12x the last-level cache, so each of triad's arrays is >= 4x it].
    #[arg(long, value_name = "BYTES")]
    pub size: Option<String>,
    /// Every node pair: threads on node i, data bound to node j.
    #[arg(long, conflicts_with_all = ["cpus", "policy"])]
    pub matrix: bool,
    /// Timed rounds per kernel [default: 10, --quick 5].
    #[arg(long, value_name = "N")]
    pub reps: Option<usize>,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub bmc: crate::power::BmcArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `numalab mem latency`.
#[derive(Debug, Args)]
pub struct LatencyArgs {
    /// CPUs that chase (one curve each) [default: the first CPU].
    #[arg(long, value_name = "SEL")]
    pub cpus: Option<String>,
    /// Page kinds, comma separated (one curve each): base, thp, hugetlb[:SIZE].
    #[arg(long = "page-kinds", value_name = "LIST", default_value = "base,thp")]
    pub page_kinds: String,
    /// Smallest working set.
    #[arg(long, value_name = "BYTES", default_value = "4KiB")]
    pub min: String,
    /// Largest working set [default: 8x the last-level cache].
    #[arg(long, value_name = "BYTES")]
    pub max: Option<String>,
    /// Points per doubling of the working set [default: 2, --quick 1].
    #[arg(long, value_name = "N")]
    pub per_octave: Option<u32>,
    /// Every node pair at one working set (idle latency matrix).
    #[arg(long, conflicts_with_all = ["cpus", "policy"])]
    pub matrix: bool,
    /// Working set of --matrix [default: 8x the last-level cache, at least 256 MiB].
    #[arg(long, value_name = "BYTES")]
    pub size: Option<String>,
    /// Line order: global (uniformly random over the working set: memory latency as
    /// the field means it, translation included) or page (random 4 KiB blocks, random
    /// lines in each: row-buffer- and prefetch-friendly, reported under its own name).
    #[arg(long, value_name = "ORDER", default_value = "global")]
    pub order: String,
    /// Timed batches per point [default: 200, --quick 60].
    #[arg(long, value_name = "N")]
    pub batches: Option<usize>,
    /// Distance between the chain's slots, bytes [default: the cache line, every line
    /// used]; two lines leave the other line of each pair unused, for studying an
    /// adjacent-line prefetcher.
    #[arg(long, value_name = "BYTES")]
    pub stride: Option<String>,
    /// Seed of the random order (recorded).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Pages backing the memory: base, thp, hugetlb or hugetlb:SIZE (overrides
    /// --page-kinds with one kind).
    #[arg(long, value_name = "KIND")]
    pub pages: Option<String>,
    /// Where data goes: first-touch, bind:N, interleave:LIST, preferred:N.
    #[arg(long, value_name = "POLICY", default_value = "first-touch")]
    pub policy: String,
    /// Short run (one point per octave, fewer batches, to 4x the last-level cache).
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `numalab mem loaded`.
#[derive(Debug, Args)]
pub struct LoadedArgs {
    /// CPUs: the first chases, the others generate traffic.
    #[arg(long, value_name = "SEL", default_value = "all")]
    pub cpus: String,
    /// How many of the other CPUs generate traffic [default: all].
    #[arg(long, value_name = "N")]
    pub generators: Option<usize>,
    /// Traffic: read, or rw (copy: 1 read : 1 write).
    #[arg(long, value_name = "KIND", default_value = "read")]
    pub traffic: String,
    /// Delay between 4 KiB chunks per generator, ns, comma separated; `idle` = no
    /// traffic [default: idle,16000,8000,4000,2000,1000,500,250,100,0].
    #[arg(long, value_name = "LIST")]
    pub delays: Option<String>,
    /// Duration of each point, ms [default: 400, --quick 150].
    #[arg(long, value_name = "MS")]
    pub point_ms: Option<u64>,
    /// Chaser working set [default: 8x the last-level cache, at least 256 MiB].
    #[arg(long, value_name = "BYTES")]
    pub size: Option<String>,
    /// Working set of all generators together, shared equally [default: 4x the
    /// machine's total last-level cache, at least 64 MiB].
    #[arg(long, value_name = "BYTES")]
    pub traffic_size: Option<String>,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub bmc: crate::power::BmcArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `numalab mem migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Source node (with --to) [default: the nearest and the farthest pair by SLIT].
    #[arg(long, value_name = "NODE", requires = "to")]
    pub from: Option<u32>,
    /// Target node (with --from).
    #[arg(long, value_name = "NODE", requires = "from")]
    pub to: Option<u32>,
    /// Every ordered pair of distinct nodes with memory.
    #[arg(long, conflicts_with = "from")]
    pub all: bool,
    /// Page units, comma separated: sizes (64KiB) or `base` [default: 64KiB,base].
    #[arg(long, value_name = "LIST")]
    pub unit: Option<String>,
    /// Fewest pages (rounded to a power of two) [default: 256 = 2^8].
    #[arg(long, value_name = "N")]
    pub min_pages: Option<u64>,
    /// Most pages (rounded to a power of two) [default: 131072 = 2^17, clamped to free
    /// memory; an explicit value is checked and refused if it does not fit].
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// Methods, comma separated: memcpy, move_pages, stream_copy [default: all].
    #[arg(long, value_name = "LIST")]
    pub methods: Option<String>,
    /// Rounds per cell [default: 3, --quick 2].
    #[arg(long, value_name = "N")]
    pub reps: Option<usize>,
    /// Fault the destination pages in before timing the copies (default: a copy pays
    /// its destination's page faults, as a real migration does).
    #[arg(long)]
    pub prefault: bool,
    /// Reference for percentages: the link's peak, GB/s [default: the measured local
    /// copy bandwidth of one thread].
    #[arg(long, value_name = "GBPS")]
    pub link_peak: Option<f64>,
    /// The CPU that moves the pages [default: first CPU of the target node, else of the
    /// source node].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<u32>,
    /// ISA of the streaming copy [default: the widest].
    #[arg(long, value_name = "ISA")]
    pub isa: Option<String>,
    /// Short run: 2^8..2^11 pages, 2 rounds.
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `numalab mem`.
pub fn run(args: MemArgs) -> CliResult {
    match args.command {
        MemCommand::Bandwidth(a) => run_bandwidth(*a),
        MemCommand::Latency(a) => run_latency(*a),
        MemCommand::Loaded(a) => run_loaded(*a),
        MemCommand::Migrate(a) => run_migrate(*a),
    }
}

fn usage(msg: impl Into<String>) -> CliError {
    CliError::new(ErrorClass::Usage, msg)
}

fn mem_err(e: MemError) -> CliError {
    use numalab_schema::Classify;
    CliError::new(e.class(), e.to_string())
}

fn parse_size(flag: &str, text: &str) -> Result<u64, CliError> {
    let b = units::parse_bytes(text).map_err(|e| usage(format!("{flag}: {e}")))?;
    if b == 0 {
        return Err(usage(format!("{flag} {text:?}: must be larger than 0")));
    }
    Ok(b)
}

fn parse_list<T>(
    flag: &str,
    text: &str,
    f: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, CliError> {
    let items: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() {
        return Err(usage(format!("{flag}: the list is empty")));
    }
    items
        .into_iter()
        .map(|s| {
            f(s).map_err(|e| {
                usage(if e.starts_with("--") {
                    e
                } else {
                    format!("{flag}: {e}")
                })
            })
        })
        .collect()
}

fn parse_pages(text: &str) -> Result<PageRequest, CliError> {
    PageRequest::parse(text).map_err(usage)
}

/// Parses a memory policy against the machine ([`numalab_topo::select::parse_policy`]).
pub fn parse_policy(text: &str, machine: &Machine) -> Result<MemPolicy, CliError> {
    numalab_topo::select::parse_policy(text, machine).map_err(|e| usage(e.to_string()))
}

fn resolve_cpus(text: &str, machine: &Machine) -> Result<Vec<u32>, CliError> {
    let sel = CpuSelection::parse(text).map_err(|e| usage(e.to_string()))?;
    sel.resolve(machine).map_err(|e| usage(e.to_string()))
}

fn parse_isa(text: Option<&str>) -> Result<(Isa, bool), CliError> {
    match text {
        None => Ok((kernels::best(), false)),
        Some(t) => {
            let isa =
                numalab_mem::kernels::parse_isa(t).map_err(|e| usage(format!("--isa: {e}")))?;
            if !isa.available() {
                let have: Vec<&str> = kernels::available().iter().map(|i| i.name()).collect();
                return Err(CliError::new(
                    ErrorClass::Unsupported,
                    format!(
                        "--isa {t}: this CPU cannot run {isa} code (it has {})",
                        have.join(", ")
                    ),
                ));
            }
            Ok((isa, true))
        }
    }
}

fn start(
    output: &OutputArgs,
    config: serde_json::Value,
    machine: &Machine,
) -> Result<Recorder, CliError> {
    Recorder::new(
        output,
        config,
        Origin::Measured,
        numalab_topo::system::host(machine),
    )
}

/// Runs a checked plan of any probe: the recorder with the plan as configuration, the
/// plan's notes, the probe with a progress bar, its tables (text mode, from this run's and
/// earlier runs' records of the plan's keys), then the exit class.
fn execute<P: serde::Serialize>(
    output: &OutputArgs,
    machine: &Machine,
    plan: &P,
    notes: &[String],
    keys: &[String],
    bmc: Option<(&crate::power::BmcArgs, &str)>,
    run: impl FnOnce(&HwlocPlacer, &mut ProgressSink<'_>) -> Outcome,
) -> CliResult {
    let power = match bmc {
        Some((args, _)) => args.open()?,
        None => None,
    };
    let placer = HwlocPlacer::new()?;
    let mut rec = start(
        output,
        serde_json::to_value(plan).unwrap_or_default(),
        machine,
    )?;
    note(notes, rec.json());
    let mut sink = ProgressSink::with_bar(&mut rec);
    let what = bmc.map_or("", |(_, w)| w);
    let watch = power.as_ref().and_then(|p| crate::power::start(p, what));
    let outcome = run(&placer, &mut sink);
    if let Some(w) = watch {
        crate::power::finish(w, &what.replace(' ', "-"), &mut sink);
    }
    sink.finish();
    if !rec.json() {
        // This run's records and earlier runs' of the same journal, for the plan's keys.
        let shown = rec.latest().into_iter().filter(|r| keys.contains(&r.key));
        crate::output::print_sections(
            rec.envelope(),
            shown,
            numalab_report::sections::mem::sections,
        );
    }
    rec.finish()?;
    conclude(&outcome)
}

/// Records the memory configuration once per journal ([`numalab_mem::memconfig`]). A
/// sink that refuses it is reported by the probe's own first push, which meets the same
/// sink.
fn push_memconfig(sink: &mut ProgressSink<'_>) {
    use numalab_schema::sink::Sink;
    if !sink.done(MEMCONFIG_KEY) {
        let _ = sink.push(numalab_mem::memconfig::record());
    }
}

/// Ends a run: exit class from the outcome, failures on stderr.
fn conclude(outcome: &Outcome) -> CliResult {
    for (key, e) in &outcome.failed {
        eprintln!("numalab: {key}: {e}");
    }
    if outcome.skipped > 0 {
        eprintln!(
            "numalab: {} result(s) were already in the journal and were not measured again",
            outcome.skipped
        );
    }
    match outcome.class() {
        None => Ok(()),
        Some(ErrorClass::Interrupted) => Err(CliError::new(
            ErrorClass::Interrupted,
            "interrupted; everything measured so far was kept",
        )),
        Some(ErrorClass::Partial) => Err(CliError::new(
            ErrorClass::Partial,
            format!(
                "{} step(s) failed; the others produced results",
                outcome.failed.len()
            ),
        )),
        Some(class) => Err(CliError::new(
            class,
            outcome
                .failed
                .first()
                .map(|f| f.1.to_string())
                .unwrap_or_default(),
        )),
    }
}

fn note(lines: &[String], json: bool) {
    if !json {
        for n in lines {
            eprintln!("numalab: note: {n}");
        }
    }
}

fn run_bandwidth(a: BandwidthArgs) -> CliResult {
    let kernels_list = match a.kernel.as_deref() {
        None => None,
        Some("all") => Some(Kernel::all()),
        Some(t) => Some(parse_list("--kernel", t, Kernel::parse)?),
    };
    let threads = match &a.threads {
        None => Vec::new(),
        Some(t) => cpulist::parse(t)
            .map_err(|e| usage(format!("--threads {t:?}: {}", e.reason)))?
            .into_iter()
            .map(|n| n as usize)
            .collect(),
    };
    let size = a
        .size
        .as_deref()
        .map(|s| parse_size("--size", s))
        .transpose()?;
    let pages = parse_pages(a.common.pages.as_deref().unwrap_or("base"))?;
    let (isa, forced) = parse_isa(a.isa.as_deref())?;
    let machine = numalab_topo::live()?;
    let mut opts = if a.common.quick {
        bandwidth::Options::quick(&machine)
    } else {
        bandwidth::Options::defaults(&machine)
    };
    if let Some(k) = kernels_list {
        opts.kernels = k;
    }
    opts.isa = isa;
    opts.isa_forced = forced;
    if let Some(s) = size {
        opts.working_set_bytes = s;
        opts.size_given = true;
    }
    if let Some(r) = a.reps {
        opts.reps = r;
    }
    opts.pages = pages;
    let budgets = Budgets::live(&machine);
    let plan = if a.matrix {
        bandwidth::plan_matrix(&machine, &budgets, &threads, opts)
    } else {
        let cpus = resolve_cpus(&a.cpus, &machine)?;
        let policy = parse_policy(&a.common.policy, &machine)?;
        let threads = if threads.is_empty() && a.common.quick && cpus.len() > 1 {
            vec![1, cpus.len()]
        } else {
            threads
        };
        bandwidth::plan(&machine, &budgets, &cpus, &threads, &policy, opts)
    }
    .map_err(mem_err)?;
    let mut keys = plan.keys();
    keys.push(MEMCONFIG_KEY.into());
    execute(
        &a.output,
        &machine,
        &plan,
        &plan.notes,
        &keys,
        Some((&a.bmc, "mem bandwidth")),
        |placer, sink| {
            push_memconfig(sink);
            bandwidth::run(&plan, &machine, placer, sink)
        },
    )
}

fn run_latency(a: LatencyArgs) -> CliResult {
    let page_kinds = match &a.pages {
        Some(p) => vec![parse_pages(p)?],
        None => parse_list("--page-kinds", &a.page_kinds, PageRequest::parse)?,
    };
    let order = Order::parse(&a.order).map_err(usage)?;
    let min = parse_size("--min", &a.min)?;
    let max = a
        .max
        .as_deref()
        .map(|s| parse_size("--max", s))
        .transpose()?;
    let size = a
        .size
        .as_deref()
        .map(|s| parse_size("--size", s))
        .transpose()?;
    let machine = numalab_topo::live()?;
    let mut opts = match (a.quick, a.matrix) {
        (true, _) => latency::Options::quick(&machine),
        (false, true) => latency::Options::idle(&machine),
        (false, false) => latency::Options::defaults(&machine),
    };
    opts.order = order;
    if let Some(b) = a.batches {
        opts.batches = b;
    }
    if let Some(st) = &a.stride {
        let b = parse_size("--stride", st)?;
        opts.set_stride(b)
            .map_err(|e| usage(format!("--stride {st}: {e}")))?;
    }
    if let Some(s) = a.seed {
        opts.seed = s;
    }
    let budgets = Budgets::live(&machine);
    let plan = if a.matrix {
        // A default that does not fit small nodes is reduced (and says so); an
        // explicit --size is checked as given.
        latency::fitted_plan_matrix(&machine, &budgets, &page_kinds, size, opts)
    } else {
        let cpus = match &a.cpus {
            Some(c) => resolve_cpus(c, &machine)?,
            None => machine.pu_ids().into_iter().take(1).collect(),
        };
        let policy = parse_policy(&a.policy, &machine)?;
        let first = *cpus.first().ok_or_else(|| usage("--cpus selects no CPU"))?;
        let line = opts.stride_bytes;
        let sizes = latency::sweep(&machine, first, min, max, a.per_octave, a.quick, line);
        sizes.and_then(|s| latency::plan(&machine, &budgets, &cpus, &policy, &page_kinds, s, opts))
    }
    .map_err(mem_err)?;
    execute(
        &a.output,
        &machine,
        &plan,
        &plan.notes,
        &plan.keys(),
        None,
        |placer, sink| latency::run(&plan, &machine, placer, sink),
    )
}

fn run_loaded(a: LoadedArgs) -> CliResult {
    let traffic = Traffic::parse(&a.traffic).map_err(usage)?;
    let delays = match &a.delays {
        None => None,
        Some(t) => Some(parse_list("--delays", t, |s| {
            if s.eq_ignore_ascii_case("idle") {
                Ok(None)
            } else {
                s.parse::<u64>()
                    .map(Some)
                    .map_err(|_| format!("{s:?} is not a delay in ns (or idle)"))
            }
        })?),
    };
    let size = a
        .size
        .as_deref()
        .map(|s| parse_size("--size", s))
        .transpose()?;
    let gsize = a
        .traffic_size
        .as_deref()
        .map(|s| parse_size("--traffic-size", s))
        .transpose()?;
    let pages = a.common.pages.as_deref().map(parse_pages).transpose()?;
    let machine = numalab_topo::live()?;
    let cpus = resolve_cpus(&a.cpus, &machine)?;
    let policy = parse_policy(&a.common.policy, &machine)?;
    let mut opts = if a.common.quick {
        loaded::Options::quick(&machine)
    } else {
        loaded::Options::defaults(&machine)
    };
    opts.traffic = traffic;
    if let Some(p) = pages {
        opts.pages = p;
    }
    if let Some(d) = delays {
        opts.delays_ns = d;
    }
    if let Some(ms) = a.point_ms {
        opts.point_ms = ms.max(1);
    }
    if let Some(s) = size {
        opts.chase_bytes = s;
    }
    if let Some(s) = gsize {
        opts.generators_bytes = s;
    }
    let fit = loaded::Fit {
        chase: size.is_none(),
        generators: gsize.is_none(),
        generator_count: a.generators.is_none(),
    };
    let budgets = Budgets::live(&machine);
    let plan = loaded::fitted_plan(&machine, &budgets, &cpus, a.generators, &policy, opts, fit)
        .map_err(mem_err)?;
    let keys = [plan.key.clone(), MEMCONFIG_KEY.into()];
    execute(
        &a.output,
        &machine,
        &plan,
        &plan.notes,
        &keys,
        Some((&a.bmc, "mem loaded")),
        |placer, sink| {
            push_memconfig(sink);
            loaded::run(&plan, &machine, placer, sink)
        },
    )
}

fn run_migrate(a: MigrateArgs) -> CliResult {
    let base = numalab_topo::bind::base_page_size() as u64;
    let units_list = match &a.unit {
        None => None,
        Some(t) => Some(parse_list("--unit", t, |s| {
            if s.eq_ignore_ascii_case("base") {
                Ok(base)
            } else {
                units::parse_bytes(s)
            }
        })?),
    };
    let methods = a
        .methods
        .as_deref()
        .map(|t| parse_list("--methods", t, Method::parse))
        .transpose()?;
    let (isa, _) = parse_isa(a.isa.as_deref())?;
    if let Some(p) = a.link_peak {
        if !(p.is_finite() && p > 0.0) {
            return Err(usage(format!(
                "--link-peak {p}: give a positive GB/s figure"
            )));
        }
    }
    let mut opts = if a.quick {
        migrate::Options::quick()
    } else {
        migrate::Options::defaults()
    };
    let counts_given = a.min_pages.is_some() || a.max_pages.is_some();
    opts.count_range(a.min_pages, a.max_pages).map_err(usage)?;
    if let Some(u) = units_list {
        opts.unit_bytes = u;
    }
    if let Some(m) = methods {
        opts.methods = m;
    }
    if let Some(r) = a.reps {
        opts.reps = r;
    }
    opts.prefault = a.prefault;
    opts.link_peak_gbps = a.link_peak;
    opts.isa = isa;
    let machine = numalab_topo::live()?;
    let choice = match (a.from, a.to, a.all) {
        (Some(f), Some(t), _) => PairChoice::Explicit(f, t),
        (_, _, true) => PairChoice::All,
        _ => PairChoice::NearestFarthest,
    };
    let budgets = Budgets::live(&machine);
    let plan =
        migrate::plan(&machine, &budgets, &choice, a.cpu, opts, counts_given).map_err(mem_err)?;
    execute(
        &a.output,
        &machine,
        &plan,
        &plan.notes,
        &plan.keys(),
        None,
        |placer, sink| migrate::run(&plan, &machine, &budgets, placer, sink),
    )
}
