//! `numalab home`: where each cache line lives. `map` measures (or, with `--model`,
//! generates and scores) which home agent and memory interface serve each line of a
//! buffer and recovers the address hash; `bench` runs the mesh study's affinity
//! experiments. The work is in `numalab-home`; this module parses flags, writes records
//! through the shared [`Recorder`] and prints the report's home section.

use super::home_hash::{self, print, Bar};
use crate::recorder::{OutputArgs, Recorder};
use crate::CliResult;
use clap::{Args, Subcommand, ValueEnum};
use numalab_home::groundtruth::trial;
use numalab_home::keys;
use numalab_home::live::{HugeChoice, LiveProbe};
use numalab_home::map::{map, MapOptions};
use numalab_home::settings::{BenchRequest, MapRequest, MapSettings, ModelSettings};
use numalab_home::{bench, truth::DEFAULT_NOISE_NS};
use numalab_schema::record::Host;
use numalab_schema::{Origin, Record};
use std::path::{Path, PathBuf};

/// `numalab home`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab home map                                  # this machine, 64 MiB buffer\n  numalab home map --floorplan layout-out/ --bytes 1GiB --out home-out/\n  numalab home map --model knl-7210 --noise-ns 4\n  numalab home map --model neoverse-v1-64:numa1 --pages 64 --json\n  numalab home bench --model knl-7210\n  numalab home map --import maps/ --export-tables tables/   # PADDR_0x<base>.map files\n  numalab home compare maps/ home-out/\n  numalab home conflicts BaseSequence_SKX_24-slice.tbl"
)]
pub struct HomeArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: HomeCommand,
}

/// `numalab home` subcommands.
#[derive(Debug, Subcommand)]
pub enum HomeCommand {
    /// Which home agent and memory interface serve each line of a buffer; the address hash.
    Map(Box<MapArgs>),
    /// The affinity experiments: a reduction kernel versus affinity strength, a stencil
    /// with scatter versus co-located threads (on a model-generated machine).
    Bench(Box<BenchArgs>),
    /// Two maps of one part line by line, slice numbers relabelled where they differ.
    Compare(Box<home_hash::CompareArgs>),
    /// Strides and page combinations a hash crowds onto few slices; pages to use instead.
    Conflicts(Box<home_hash::ConflictsArgs>),
}

/// Huge pages on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HugeArg {
    /// 2 MiB hugetlbfs pages, else transparent huge pages, else base pages.
    Auto,
    /// Refuse to run without huge pages.
    Require,
    /// Base pages only.
    Never,
}

/// Settings shared by `map` and `bench`.
#[derive(Debug, Args)]
pub struct MapFlags {
    /// Reader CPUs, spread over the floorplan (an owner CPU comes on top).
    #[arg(long, value_name = "N", default_value_t = MapOptions::default().probe_cpus)]
    pub cpus: usize,
    /// Reads per line and CPU (the median is kept).
    #[arg(long, value_name = "N", default_value_t = MapOptions::default().repeats)]
    pub repeats: u32,
    /// Lines sampled on every page after the first (the first is measured in full).
    #[arg(long, value_name = "N", default_value_t = MapOptions::default().sample_lines)]
    pub sample_lines: usize,
    /// Do not look for memory interfaces (halves the reads).
    #[arg(long)]
    pub no_interfaces: bool,
    /// Keep the floorplan's CPU stops: do not place every CPU again from its latencies
    /// to the located homes.
    #[arg(long)]
    pub no_refine: bool,
    /// Seed of the line sample and the grouping (and of the model's machine).
    #[arg(long, default_value_t = MapOptions::default().seed)]
    pub seed: u64,
}

/// The model machine's flags.
#[derive(Debug, Args)]
pub struct ModelFlags {
    /// Standard deviation of the noise on every read and matrix cell, ns (--model).
    #[arg(long, value_name = "NS", default_value_t = DEFAULT_NOISE_NS)]
    pub noise_ns: f64,
    /// Buffer pages (--model).
    #[arg(long, value_name = "N", default_value_t = numalab_home::truth::DEFAULT_PAGES)]
    pub pages: usize,
    /// Page size of the model's buffer (--model): 2MiB huge pages, or e.g. 64KiB (the
    /// base page of many Arm kernels; the hash's page part then has fewer bits).
    #[arg(long, value_name = "SIZE", default_value = "2MiB")]
    pub page_size: String,
    /// Memory node of the buffer (--model).
    #[arg(long, value_name = "NODE", default_value_t = 0)]
    pub node: u32,
    /// Hide physical addresses, as without root (--model): the hash is then fitted on
    /// page offsets only.
    #[arg(long)]
    pub no_phys: bool,
    /// Override a preset value, KEY=VALUE (repeatable; see `numalab model show`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
}

/// `numalab home map`.
#[derive(Debug, Args)]
pub struct MapArgs {
    /// Generate a machine from a model preset (NAME[:VARIANT,...]) with a known floorplan
    /// and hash, map it through the replay probe and score the map against the truth.
    #[arg(long, value_name = "PRESET")]
    pub model: Option<String>,
    /// Buffer size on this machine (refused above half the available memory).
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "64MiB",
        conflicts_with = "model"
    )]
    pub bytes: String,
    /// Huge pages for the buffer.
    #[arg(long, value_enum, default_value_t = HugeArg::Auto, conflicts_with = "model")]
    pub huge: HugeArg,
    /// A floorplan of this machine (`numalab layout infer --out DIR` or `--json` output):
    /// probe CPUs are spread over it and homes located on it.
    #[arg(long, value_name = "LAYOUT", conflicts_with = "model")]
    pub floorplan: Option<PathBuf>,
    /// Pages measured (default: all of the buffer's).
    #[arg(long, value_name = "N")]
    pub measure_pages: Option<usize>,
    /// Measure nothing: recover the hash of per-page maps (PADDR_0x<base>.map), or read
    /// a BaseSequence_*.tbl pair or a home.map record, in the published form.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["model", "floorplan"])]
    pub import: Option<PathBuf>,
    /// Write the hash as BaseSequence_<n>-slice.tbl and PermSelectMasks_<n>-slice.tbl.
    #[arg(long, value_name = "DIR")]
    pub export_tables: Option<PathBuf>,
    /// Map settings.
    #[command(flatten)]
    pub map: MapFlags,
    /// Model settings.
    #[command(flatten)]
    pub model_flags: ModelFlags,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `numalab home bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Model preset (NAME[:VARIANT,...]): the machine is generated, mapped, and the
    /// experiments run with memory from the inferred map and latencies from the truth.
    #[arg(
        long,
        value_name = "PRESET",
        required_unless_present = "map",
        conflicts_with = "map"
    )]
    pub model: Option<String>,
    /// A home map of this machine (`numalab home map --floorplan LAYOUT --out DIR`, as
    /// root): the reduction kernel runs here on lines from the home-aware allocator.
    #[arg(long, value_name = "MAP")]
    pub map: Option<PathBuf>,
    /// Timed rounds per point (--map; the median round is kept).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub rounds: usize,
    /// Threads of the reduction kernel.
    #[arg(long, value_name = "N", default_value_t = bench::DEFAULT_THREADS)]
    pub threads: usize,
    /// Lines each thread reads.
    #[arg(long, value_name = "N", default_value_t = bench::DEFAULT_LINES)]
    pub lines: usize,
    /// Largest affinity strength swept, hops.
    #[arg(long, value_name = "HOPS", default_value_t = bench::DEFAULT_MAX_DISTANCE)]
    pub max_distance: u32,
    /// Thread counts of the stencil, comma separated.
    #[arg(long, value_name = "LIST", default_value = "4,8,16")]
    pub stencil: String,
    /// Map settings (--model).
    #[command(flatten)]
    pub map_flags: MapFlags,
    /// Model settings.
    #[command(flatten)]
    pub model_flags: ModelFlags,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `numalab home`.
pub fn run(args: HomeArgs) -> CliResult {
    match args.command {
        HomeCommand::Map(a) => run_map(&a),
        HomeCommand::Bench(a) => run_bench(&a),
        HomeCommand::Compare(a) => home_hash::run_compare(&a),
        HomeCommand::Conflicts(a) => home_hash::run_conflicts(&a),
    }
}

impl MapFlags {
    /// The map settings as the library takes them.
    fn settings(&self) -> MapSettings {
        MapSettings {
            cpus: self.cpus,
            repeats: self.repeats,
            sample_lines: self.sample_lines,
            interfaces: !self.no_interfaces,
            refine: !self.no_refine,
            seed: self.seed,
        }
    }
}

impl ModelFlags {
    /// The model machine as the library takes it.
    fn settings(&self) -> ModelSettings {
        ModelSettings {
            noise_ns: self.noise_ns,
            pages: self.pages,
            page_size: self.page_size.clone(),
            node: self.node,
            phys: !self.no_phys,
            sets: self.sets.clone(),
        }
    }
}

fn run_map(a: &MapArgs) -> CliResult {
    if let Some(path) = &a.import {
        return home_hash::run_import(path, a.export_tables.as_deref(), &a.output);
    }
    let req = MapRequest {
        model: a.model.clone(),
        bytes: a.bytes.clone(),
        huge: match a.huge {
            HugeArg::Auto => HugeChoice::Auto,
            HugeArg::Require => HugeChoice::Require,
            HugeArg::Never => HugeChoice::Never,
        },
        floorplan: a.floorplan.clone(),
        measure_pages: a.measure_pages,
        map: a.map.settings(),
        model_settings: a.model_flags.settings(),
    };
    if let Some(preset) = &a.model {
        let t = req.trial(preset)?;
        let host = Host::unknown(format!("model:{preset}"));
        let mut rec = Recorder::new(&a.output, req.config(), Origin::Modeled, host)?;
        let out = trial(&t, &mut Bar::new(rec.json()))?;
        for r in keys::trial_records(&keys::trial(preset, &t), &out) {
            rec.push(r)?;
        }
        if let Some(dir) = &a.export_tables {
            home_hash::export_tables(out.mapped.record.slice_hash.as_ref(), dir)?;
        }
        return print(rec);
    }
    let (live, floorplan, opts) = req.live()?;
    let machine = numalab_topo::live()?;
    let mut probe = LiveProbe::new(live)?;
    let host = numalab_topo::system::host(&machine);
    let mut rec = Recorder::new(&a.output, req.config(), Origin::Measured, host)?;
    let mapped = map(
        &mut probe,
        floorplan.as_ref(),
        &opts,
        &mut Bar::new(rec.json()),
    )?;
    if let Some(dir) = &a.export_tables {
        home_hash::export_tables(mapped.record.slice_hash.as_ref(), dir)?;
    }
    rec.push(keys::live_map(mapped.record, &probe.notes))?;
    print(rec)
}

fn run_bench(a: &BenchArgs) -> CliResult {
    if let Some(path) = &a.map {
        return run_bench_live(a, path);
    }
    let req = BenchRequest {
        model: a.model.clone().unwrap_or_default(),
        threads: a.threads,
        lines: a.lines,
        max_distance: a.max_distance,
        stencil: a.stencil.clone(),
    };
    let (map, model) = (a.map_flags.settings(), a.model_flags.settings());
    let b = req.options(&map, &model)?;
    let host = Host::unknown(format!("model:{}", req.model));
    let mut rec = Recorder::new(&a.output, req.config(&map, &model), Origin::Modeled, host)?;
    let (out, record) = bench::run(&b, &mut Bar::new(rec.json()))?;
    let prefix = keys::trial(&req.model, &b.trial);
    for r in keys::bench_records(&prefix, &out, &record) {
        rec.push(r)?;
    }
    print(rec)
}

fn run_bench_live(a: &BenchArgs, path: &Path) -> CliResult {
    let opts = numalab_home::bench_live::LiveBenchOptions {
        threads: a.threads,
        lines_per_thread: a.lines,
        max_distance: a.max_distance,
        rounds: a.rounds,
    };
    let mut live = numalab_home::bench_live::prepare(path, &opts)?;
    let machine = numalab_topo::live()?;
    let host = numalab_topo::system::host(&machine);
    let config = opts.config(path, live.pool_bytes);
    let mut rec = Recorder::new(&a.output, config, Origin::Measured, host)?;
    let (map, pool) = (&live.map, &mut live.pool);
    let record = numalab_home::bench_live::run(map, &opts, pool, &mut Bar::new(rec.json()))?;
    rec.push(Record::new(keys::LIVE_BENCH, Origin::Measured, &record))?;
    print(rec)
}
