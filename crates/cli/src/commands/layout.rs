//! `numalab layout`: where the cores sit on a mesh, inferred from a latency matrix
//! (`infer`), checked against ground truth from the model (`groundtruth`), and used to
//! place cooperating threads (`affinity`). The work is in `numalab-layout`; this module
//! hands the flags to `numalab_layout::flags` (checked there before anything is read),
//! writes records through the shared [`Recorder`] and prints the report's layout sections
//! for them.

use crate::output::print_sections;
use crate::recorder::{OutputArgs, Recorder};
use crate::CliResult;
use clap::{Args, Subcommand, ValueEnum};
use numalab_layout::affinity;
use numalab_layout::draw::Heat;
use numalab_layout::flags::{Campaign, GroundtruthFlags, InferFlags};
use numalab_layout::job::InferJob;
use numalab_layout::{Kind, LayoutError, Options as Search};
use numalab_model::spec::Routing;
use numalab_report::sections::layout::sections;
use numalab_schema::{Origin, Record};
use std::path::PathBuf;

/// `numalab layout`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab layout infer --input knl.csv --preset knl-7210 --svg knl.svg --heatmap-from 0\n  numalab layout infer --input results/ --geometry 8x8 --hop-cost fit\n  numalab layout groundtruth --preset knl-7210 --noise-ns 0,1,2,4 --seed 1\n  numalab layout affinity --threads 8 --layout layout-out/\n  numalab layout affinity --threads 4 --input c2c-out/ --comm traffic.txt"
)]
pub struct LayoutArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: LayoutCommand,
}

/// `numalab layout` subcommands.
#[derive(Debug, Subcommand)]
pub enum LayoutCommand {
    /// Infer the floorplan (core and target positions on a mesh) from a latency matrix.
    Infer(Box<InferArgs>),
    /// Recovery accuracy on model-generated matrices with known placements, versus noise.
    Groundtruth(GroundtruthArgs),
    /// Choose cores for K cooperating threads; predicted gain over scatter.
    Affinity(AffinityArgs),
}

/// Routing on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoutingArg {
    /// X (columns) first.
    Xy,
    /// Y (rows) first (Xeon Phi).
    Yx,
}

impl From<RoutingArg> for Routing {
    fn from(r: RoutingArg) -> Routing {
        match r {
            RoutingArg::Xy => Routing::Xy,
            RoutingArg::Yx => Routing::Yx,
        }
    }
}

/// `numalab layout infer`.
#[derive(Debug, Args)]
pub struct InferArgs {
    /// The matrix: a c2c results folder, journal or JSON bundle (`numalab c2c --out/--json`),
    /// model latency heatmaps, a core-to-core-latency CSV, or a core x target CSV
    /// (header `cpu,<target>,...`).
    #[arg(long, value_name = "PATH")]
    pub input: PathBuf,
    /// Mesh size, ROWSxCOLS (e.g. 7x6: 7 rows, 6 columns).
    #[arg(
        long,
        value_name = "ROWSxCOLS",
        conflicts_with = "preset",
        required_unless_present = "preset"
    )]
    pub geometry: Option<String>,
    /// Take the mesh from a model preset: size, routing, hop costs, cores per tile, which
    /// stops are tiles (NAME[:VARIANT,...], see `numalab model list`).
    #[arg(long, value_name = "PRESET")]
    pub preset: Option<String>,
    /// Dimension-order routing (default: the preset's, else xy). Only matters when link
    /// costs differ from link to link.
    #[arg(long, value_enum)]
    pub routing: Option<RoutingArg>,
    /// Hop costs in cycles as VERTICAL,HORIZONTAL (e.g. 1,2), or `fit` to fit one cost per
    /// kind of link (default: the preset's costs; `fit` with --geometry).
    #[arg(long, value_name = "V,H|fit")]
    pub hop_cost: Option<String>,
    /// Cores a tile holds (default: the preset's; with --geometry 1, or the size of the
    /// c2c structure's finest groups when the matrix needs it).
    #[arg(long, value_name = "N")]
    pub cores_per_tile: Option<u32>,
    /// Tiles known to be disabled (no cores), as column:row pairs, e.g. 2:0,3:0.
    #[arg(long, value_name = "TILES")]
    pub disabled: Option<String>,
    /// Do not keep the c2c structure's finest groups (e.g. the 2 cores of a tile) together.
    #[arg(long)]
    pub no_tile_groups: bool,
    /// Seed of the first restart.
    #[arg(long, default_value_t = Search::default().seed)]
    pub seed: u64,
    /// Restarts (half from spectral starts, half random).
    #[arg(long, default_value_t = Search::default().restarts)]
    pub restarts: usize,
    /// Annealing moves per unit and random restart.
    #[arg(long, default_value_t = Search::default().sweeps, hide = true)]
    pub sweeps: usize,
    /// Write the floorplan as SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Colour the SVG by the measured latency from this CPU (core-to-core matrices).
    #[arg(
        long,
        value_name = "CPU",
        requires = "svg",
        conflicts_with = "heatmap_to"
    )]
    pub heatmap_from: Option<u32>,
    /// Colour the SVG by the measured latency to this target (core x target matrices).
    #[arg(long, value_name = "TARGET", requires = "svg")]
    pub heatmap_to: Option<String>,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Matrix kinds on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MatrixArg {
    /// Core to core.
    C2c,
    /// Core to every directory slice (targets placed too).
    Targets,
}

/// `numalab layout groundtruth`.
#[derive(Debug, Args)]
pub struct GroundtruthArgs {
    /// Model preset whose mesh is used (NAME[:VARIANT,...]).
    #[arg(long, value_name = "PRESET")]
    pub preset: String,
    /// Noise levels (standard deviation of Gaussian noise per cell, ns).
    #[arg(long, value_name = "LIST", default_value = "0,0.5,1,2,4,8")]
    pub noise_ns: String,
    /// Seed (trial k uses seed + k: placement, disabled tiles, noise and search).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Trials per noise level.
    #[arg(long, default_value_t = 3)]
    pub trials: usize,
    /// Which matrix to generate.
    #[arg(long, value_enum, default_value_t = MatrixArg::C2c)]
    pub matrix: MatrixArg,
    /// Fit the hop costs instead of giving the preset's.
    #[arg(long)]
    pub fit_hop_costs: bool,
    /// Tell the search which tiles are disabled.
    #[arg(long)]
    pub disabled_known: bool,
    /// Restarts per inference.
    #[arg(long, default_value_t = 4)]
    pub restarts: usize,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `numalab layout affinity`.
#[derive(Debug, Args)]
pub struct AffinityArgs {
    /// Cooperating threads.
    #[arg(long, value_name = "K")]
    pub threads: usize,
    /// Communication matrix: K lines of K non-negative weights (traffic from thread i to j).
    #[arg(long, value_name = "FILE")]
    pub comm: Option<PathBuf>,
    /// An inferred floorplan (`layout infer --out DIR` or `--json` output).
    #[arg(long, value_name = "LAYOUT", required_unless_present = "input")]
    pub layout: Option<PathBuf>,
    /// Without a floorplan: a core-to-core matrix (c2c output or CSV); its groups fill
    /// unmeasured pairs.
    #[arg(long, value_name = "MATRIX", conflicts_with = "layout")]
    pub input: Option<PathBuf>,
    /// Seed of the search.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `numalab layout`.
pub fn run(args: LayoutArgs) -> CliResult {
    match args.command {
        LayoutCommand::Infer(a) => run_infer(&a),
        LayoutCommand::Groundtruth(a) => run_groundtruth(&a),
        LayoutCommand::Affinity(a) => run_affinity(&a),
    }
}

fn run_infer(a: &InferArgs) -> CliResult {
    let flags = InferFlags {
        input: a.input.display().to_string(),
        geometry: a.geometry.clone(),
        preset: a.preset.clone(),
        routing: a.routing.map(Into::into),
        hop_cost: a.hop_cost.clone(),
        cores_per_tile: a.cores_per_tile,
        disabled: a.disabled.clone(),
        tile_groups: !a.no_tile_groups,
        seed: a.seed,
        restarts: a.restarts,
        sweeps: a.sweeps,
    };
    let heat = Heat::from_flags(a.heatmap_from, a.heatmap_to.as_deref());
    let job = InferJob::prepare(flags, &a.input, heat)?;
    let mut rec = Recorder::new(&a.output, job.config.clone(), job.origin, job.host.clone())?;
    let bar = crate::output::bar(
        a.restarts as u64,
        "{spinner} [{elapsed}] {bar:30} {pos}/{len} restarts",
    );
    let inf = job.search(&|k| bar.set_position(k as u64));
    bar.finish_and_clear();
    let inf = inf?;
    let (key, r) = job.record(&inf);
    if let Some(path) = &a.svg {
        let svg = job.svg(&r)?;
        crate::output::write_file(path, svg.as_bytes(), "the SVG", "--svg")?;
    }
    rec.push(Record::new(key, job.origin, &r))?;
    let json = rec.json();
    let bundle = rec.finish()?;
    if !json {
        print_sections(&bundle.envelope, bundle.records, sections);
        if let Some(p) = &a.svg {
            println!("floorplan written to {}", p.display());
        }
    }
    Ok(job.outcome(&inf)?)
}

fn run_groundtruth(a: &GroundtruthArgs) -> CliResult {
    let flags = GroundtruthFlags {
        preset: a.preset.clone(),
        noise_ns: a.noise_ns.clone(),
        trials: a.trials,
        restarts: a.restarts,
        kind: match a.matrix {
            MatrixArg::C2c => Kind::CoreToCore,
            MatrixArg::Targets => Kind::CoreToTarget,
        },
        fit_hop_costs: a.fit_hop_costs,
        disabled_known: a.disabled_known,
        seed: a.seed,
    };
    let Campaign {
        levels,
        model,
        trial: opts,
    } = flags.check()?;
    let host = numalab_model::machine::host(&model);
    let mut rec = Recorder::new(&a.output, flags.config(&levels), Origin::Modeled, host)?;
    let keys = {
        let mut sink = crate::recorder::ProgressSink::with_bar(&mut rec);
        let r = numalab_layout::campaign::run(&model, &opts, &levels, a.trials, a.seed, &mut sink);
        sink.finish();
        r
    };
    let keys = match keys {
        Err(LayoutError::Stopped(_)) => {
            rec.finish()?;
            return Err(numalab_layout::campaign::stopped(a.output.out.is_some()).into());
        }
        k => k?,
    };
    if !rec.json() {
        // This run's levels, and earlier runs' of the same journal for them.
        let shown = rec.latest().into_iter().filter(|r| keys.contains(&r.key));
        print_sections(rec.envelope(), shown, sections);
    }
    rec.finish()?;
    Ok(())
}

fn run_affinity(a: &AffinityArgs) -> CliResult {
    let out = affinity::Request {
        threads: a.threads,
        comm: a.comm.clone(),
        layout: a.layout.clone(),
        input: a.input.clone(),
        seed: a.seed,
    }
    .run()?;
    let mut rec = Recorder::new(&a.output, out.config, out.origin, out.host)?;
    rec.push(Record::new(out.key, out.origin, &out.record))?;
    rec.finish_and_print(sections)
}
