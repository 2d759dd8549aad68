//! `numalab mem`: memory bandwidth, latency, loaded latency and page migration.
//!
//! Flags are validated by clap without touching hardware; `numalab-mem` reads the
//! options ([`numalab_mem::request`]) and builds a checked plan against the live
//! topology (unknown CPUs or nodes, too many threads, sizes beyond the safe share of a
//! node's free memory are refused before anything runs); it runs with the hwloc placer,
//! records go to the journal as each cell completes, and the report's section of them
//! is printed (or the JSON bundle with `--json`).

use crate::output::print_sections;
use crate::recorder::{OutputArgs, ProgressSink, Recorder};
use crate::{CliError, CliResult};
use clap::{Args, Subcommand};
use numalab_mem::budget::Budgets;
use numalab_mem::probe::{self, Probe};
use numalab_mem::request::{defaults, Bandwidth, Latency, Loaded, Migrate};
use numalab_mem::{memconfig, MemError};
use numalab_report::sections;
use numalab_schema::{Machine, Origin};
use numalab_topo::bind::HwlocPlacer;

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
    #[arg(long, value_name = "POLICY", default_value = defaults::POLICY)]
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
    #[arg(long, value_name = "SEL", default_value = defaults::CPUS)]
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
    #[arg(long = "page-kinds", value_name = "LIST", default_value = defaults::PAGE_KINDS)]
    pub page_kinds: String,
    /// Smallest working set.
    #[arg(long, value_name = "BYTES", default_value = defaults::MIN)]
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
    #[arg(long, value_name = "ORDER", default_value = defaults::ORDER)]
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
    #[arg(long, value_name = "POLICY", default_value = defaults::POLICY)]
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
    #[arg(long, value_name = "SEL", default_value = defaults::CPUS)]
    pub cpus: String,
    /// How many of the other CPUs generate traffic [default: all].
    #[arg(long, value_name = "N")]
    pub generators: Option<usize>,
    /// Traffic: read, or rw (copy: 1 read : 1 write).
    #[arg(long, value_name = "KIND", default_value = defaults::TRAFFIC)]
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

/// Plans a probe on this machine and runs it: the recorder with the plan as
/// configuration, the plan's notes, the probe with a progress bar, its tables (text
/// mode), the exit class.
fn execute(
    output: &OutputArgs,
    bmc: Option<(&crate::power::BmcArgs, &str)>,
    plan: impl FnOnce(&Machine, &Budgets) -> Result<Probe, MemError>,
) -> CliResult {
    let machine = numalab_topo::live()?;
    let budgets = Budgets::live(&machine);
    let plan = plan(&machine, &budgets)?;
    let power = bmc.map(|(args, _)| args.open()).transpose()?.flatten();
    let placer = HwlocPlacer::new()?;
    let config = serde_json::to_value(&plan).unwrap_or_default();
    let host = numalab_topo::system::host(&machine);
    let mut rec = Recorder::new(output, config, Origin::Measured, host)?;
    if !rec.json() {
        for n in plan.notes() {
            eprintln!("numalab: note: {n}");
        }
    }
    let mut sink = ProgressSink::with_bar(&mut rec);
    let what = bmc.map_or("", |(_, w)| w);
    let watch = power.as_ref().and_then(|p| crate::power::start(p, what));
    if plan.uses_memconfig() {
        let _ = memconfig::push_once(&mut sink); // a refusal shows at the probe's first push
    }
    let outcome = plan.run(&machine, &budgets, &placer, &mut sink);
    if let Some(w) = watch {
        crate::power::finish(w, &what.replace(' ', "-"), &mut sink);
    }
    sink.finish();
    if !rec.json() {
        // The report's tables of this run's and earlier runs' records of the same
        // journal, for the plan's keys.
        let keys = plan.report_keys();
        let shown = rec.latest().into_iter().filter(|r| keys.contains(&r.key));
        print_sections(rec.envelope(), shown, sections::mem::sections);
    }
    rec.finish()?;
    for line in probe::outcome_lines(&outcome) {
        eprintln!("numalab: {line}");
    }
    match probe::verdict(&outcome) {
        None => Ok(()),
        Some((class, message)) => Err(CliError::new(class, message)),
    }
}

fn run_bandwidth(a: BandwidthArgs) -> CliResult {
    let parsed = Bandwidth {
        kernel: a.kernel,
        isa: a.isa,
        threads: a.threads,
        cpus: a.cpus,
        size: a.size,
        matrix: a.matrix,
        reps: a.reps,
        pages: a.common.pages,
        policy: a.common.policy,
        quick: a.common.quick,
    }
    .parse()?;
    execute(&a.output, Some((&a.bmc, "mem bandwidth")), |m, b| {
        parsed.plan(m, b).map(Probe::Bandwidth)
    })
}

fn run_latency(a: LatencyArgs) -> CliResult {
    let parsed = Latency {
        cpus: a.cpus,
        page_kinds: a.page_kinds,
        min: a.min,
        max: a.max,
        per_octave: a.per_octave,
        matrix: a.matrix,
        size: a.size,
        order: a.order,
        batches: a.batches,
        stride: a.stride,
        seed: a.seed,
        pages: a.pages,
        policy: a.policy,
        quick: a.quick,
    }
    .parse()?;
    execute(&a.output, None, |m, b| {
        parsed.plan(m, b).map(Probe::Latency)
    })
}

fn run_loaded(a: LoadedArgs) -> CliResult {
    let parsed = Loaded {
        cpus: a.cpus,
        generators: a.generators,
        traffic: a.traffic,
        delays: a.delays,
        point_ms: a.point_ms,
        size: a.size,
        traffic_size: a.traffic_size,
        pages: a.common.pages,
        policy: a.common.policy,
        quick: a.common.quick,
    }
    .parse()?;
    execute(&a.output, Some((&a.bmc, "mem loaded")), |m, b| {
        parsed.plan(m, b).map(Probe::Loaded)
    })
}

fn run_migrate(a: MigrateArgs) -> CliResult {
    let parsed = Migrate {
        from: a.from,
        to: a.to,
        all: a.all,
        unit: a.unit,
        min_pages: a.min_pages,
        max_pages: a.max_pages,
        methods: a.methods,
        reps: a.reps,
        prefault: a.prefault,
        link_peak: a.link_peak,
        cpu: a.cpu,
        isa: a.isa,
        quick: a.quick,
    }
    .parse()?;
    execute(&a.output, None, |m, b| {
        parsed.plan(m, b).map(Probe::Migrate)
    })
}
