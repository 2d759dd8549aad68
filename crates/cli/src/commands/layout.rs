//! `numalab layout`: where the cores sit on a mesh, inferred from a latency matrix
//! (`infer`), checked against ground truth from the model (`groundtruth`), and used to
//! place cooperating threads (`affinity`). The work is in `numalab-layout`; this module
//! parses flags (geometry, hop costs and tiles are checked before anything is read),
//! writes records through the shared [`Recorder`] and prints the report's layout sections
//! for them.

use crate::output::print_sections;
use crate::recorder::{OutputArgs, Recorder};
use crate::{CliError, CliResult};
use clap::{Args, Subcommand, ValueEnum};
use numalab_layout::affinity::{self, Comm, CostMatrix};
use numalab_layout::draw::{self, Heat};
use numalab_layout::groundtruth::TrialOptions;
use numalab_layout::infer::{self, Problem};
use numalab_layout::record::{self, AffinityRecord, InferenceRecord, InferenceRecordExt};
use numalab_layout::setup::{self, HopCost, Setup};
use numalab_layout::{input, HopCosts, Kind, LayoutError, Options};
use numalab_model::spec::Routing;
use numalab_model::Model;
use numalab_schema::record::Host;
use numalab_schema::{cpulist, ErrorClass, Origin, Record};
use std::path::{Path, PathBuf};

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
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Restarts (half from spectral starts, half random).
    #[arg(long, default_value_t = 8)]
    pub restarts: usize,
    /// Annealing moves per unit and random restart.
    #[arg(long, default_value_t = 400, hide = true)]
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

/// The origin of results derived from an input of this origin ("measured", "modeled",
/// "imported").
fn origin_of(text: &str) -> Origin {
    match text {
        "measured" => Origin::Measured,
        "modeled" => Origin::Modeled,
        _ => Origin::Imported,
    }
}

fn usage(msg: impl Into<String>) -> CliError {
    CliError::new(ErrorClass::Usage, msg)
}

fn file_host(tag: &str, path: &Path) -> Host {
    Host::unknown(format!("{tag}:{}", path.display()))
}

/// `ROWSxCOLS`.
fn parse_geometry(text: &str) -> Result<(u32, u32), CliError> {
    let bad = || {
        usage(format!(
            "--geometry {text:?}: expected ROWSxCOLS, e.g. 7x6 (7 rows, 6 columns)"
        ))
    };
    let (r, c) = text
        .to_ascii_lowercase()
        .split_once('x')
        .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
        .ok_or_else(bad)?;
    let r: u32 = r.parse().map_err(|_| bad())?;
    let c: u32 = c.parse().map_err(|_| bad())?;
    if r == 0 || c == 0 {
        return Err(bad());
    }
    Ok((r, c))
}

/// `V,H` or `fit`.
fn parse_hop_cost(text: &str) -> Result<HopCost, CliError> {
    if text.trim().eq_ignore_ascii_case("fit") {
        return Ok(HopCost::Fit);
    }
    let bad = || {
        usage(format!(
            "--hop-cost {text:?}: expected VERTICAL,HORIZONTAL cycles (e.g. 1,2) or fit"
        ))
    };
    let (v, h) = text.split_once(',').ok_or_else(bad)?;
    let v: u32 = v.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if v == 0 || h == 0 {
        return Err(bad());
    }
    Ok(HopCost::Cycles {
        vertical: v,
        horizontal: h,
    })
}

fn run_infer(a: &InferArgs) -> CliResult {
    // Flags first, without reading anything.
    let geometry = a.geometry.as_deref().map(parse_geometry).transpose()?;
    let hop_cost = a.hop_cost.as_deref().map(parse_hop_cost).transpose()?;
    if a.restarts == 0 {
        return Err(usage("--restarts must be at least 1"));
    }
    if a.cores_per_tile == Some(0) {
        return Err(usage("--cores-per-tile must be at least 1"));
    }
    let loaded = input::load(&a.input)?;
    let m = &loaded.measured;
    let n = m.cpus.len();
    // The heatmap must fit the matrix; say so before searching.
    match (&a.heatmap_from, &a.heatmap_to, m.kind) {
        (Some(_), _, Kind::CoreToTarget) => {
            return Err(usage("--heatmap-from needs a core-to-core matrix; use --heatmap-to TARGET for a core x target matrix"))
        }
        (_, Some(_), Kind::CoreToCore) => {
            return Err(usage("--heatmap-to needs a core x target matrix; use --heatmap-from CPU for a core-to-core matrix"))
        }
        (Some(c), _, _) if !m.cpus.contains(c) => {
            return Err(usage(format!("--heatmap-from {c}: CPU {c} is not in the matrix ({n} CPUs)")))
        }
        (_, Some(t), _) if !m.targets.contains(t) => {
            return Err(usage(format!("--heatmap-to {t}: no such target; the matrix has {}", m.targets.join(", "))))
        }
        _ => {}
    }
    let setup::Prepared {
        grid,
        preset,
        groups,
        mut notes,
    } = setup::prepare(
        &Setup {
            input: a.input.display().to_string(),
            preset: a.preset.clone(),
            geometry,
            routing: a.routing.map(Into::into),
            hop_cost: hop_cost.unwrap_or_default(),
            cores_per_tile: a.cores_per_tile,
            disabled: a.disabled.clone(),
            tile_groups: !a.no_tile_groups,
        },
        &loaded,
    )?;
    // Sizes and constraints are checked here, before the search.
    let problem = Problem::new(&grid, m, &groups)?;
    let opts = Options {
        seed: a.seed,
        restarts: a.restarts,
        sweeps: a.sweeps,
        ..Options::default()
    };
    let config = serde_json::json!({
        "input": a.input.display().to_string(),
        "geometry": a.geometry, "preset": a.preset, "routing": a.routing.map(|r| format!("{r:?}").to_lowercase()),
        "hop_cost": a.hop_cost, "cores_per_tile": grid.capacity, "disabled": a.disabled,
        "tile_groups": !a.no_tile_groups, "seed": a.seed, "restarts": a.restarts, "sweeps": a.sweeps,
    });
    let origin = origin_of(&loaded.origin);
    let mut rec = Recorder::new(&a.output, config, origin, file_host("layout", &a.input))?;
    let bar = crate::output::bar(
        a.restarts as u64,
        "{spinner} [{elapsed}] {bar:30} {pos}/{len} restarts",
    );
    let inf = infer::infer(&problem, &opts, &|k| bar.set_position(k as u64));
    bar.finish_and_clear();
    let inf = inf?;
    if inf.interrupted {
        notes.push(format!(
            "interrupted: {} of {} restarts ran",
            inf.restarts.len(),
            a.restarts
        ));
    }
    if inf.symmetries.len() > 1 {
        notes.push(format!(
            "the placement is defined up to {}: a mirror image explains the matrix equally well",
            inf.symmetries
                .iter()
                .skip(1)
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let r = record::inference_record(
        &a.input.display().to_string(),
        &loaded.origin,
        &grid,
        preset,
        m,
        &inf,
        &groups,
        &opts,
        notes,
    );
    if let Some(path) = &a.svg {
        let heat = match (&a.heatmap_from, &a.heatmap_to) {
            (Some(c), _) => Some(Heat::From(*c)),
            (_, Some(t)) => Some(Heat::To(t.clone())),
            _ => None,
        };
        let svg = draw::floorplan(&r, m, heat.as_ref())?;
        crate::output::write_file(path, svg.as_bytes(), "the SVG", "--svg")?;
    }
    let key = record::inference_key(&a.input.display().to_string());
    rec.push(Record::new(key, origin, &r))?;
    let json = rec.json();
    let bundle = rec.finish()?;
    if !json {
        print_sections(
            &bundle.envelope,
            bundle.records,
            numalab_report::sections::layout::sections,
        );
        if let Some(p) = &a.svg {
            println!("floorplan written to {}", p.display());
        }
    }
    if inf.interrupted {
        return Err(CliError::new(
            ErrorClass::Interrupted,
            "interrupted; the best placement of the restarts that ran was recorded",
        ));
    }
    Ok(())
}

fn run_groundtruth(a: &GroundtruthArgs) -> CliResult {
    let levels: Vec<f64> = a
        .noise_ns
        .split(',')
        .map(|s| s.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| {
            usage(format!(
                "--noise-ns {:?}: expected numbers like 0,1,2,4",
                a.noise_ns
            ))
        })?;
    if levels.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(usage("--noise-ns: noise levels must be 0 or more"));
    }
    if a.trials == 0 || a.restarts == 0 {
        return Err(usage("--trials and --restarts must be at least 1"));
    }
    let model = Model::load(&a.preset, &[]).map_err(LayoutError::from)?;
    if model.geo.sockets != 1 {
        return Err(usage(format!(
            "--preset {}: ground truth needs a one-socket preset",
            a.preset
        )));
    }
    let kind = match a.matrix {
        MatrixArg::C2c => Kind::CoreToCore,
        MatrixArg::Targets => Kind::CoreToTarget,
    };
    let hop_costs = if a.fit_hop_costs {
        HopCosts::Fit
    } else {
        HopCosts::Fixed
    };
    let opts = TrialOptions {
        kind,
        hop_costs,
        disabled_known: a.disabled_known,
        search: Options {
            restarts: a.restarts,
            ..Options::default()
        },
    };
    let config = serde_json::json!({"preset": a.preset, "noise_ns": levels, "seed": a.seed,
        "trials": a.trials, "matrix": format!("{:?}", a.matrix).to_lowercase(), "fit_hop_costs": a.fit_hop_costs,
        "disabled_known": a.disabled_known, "restarts": a.restarts});
    let mut rec = Recorder::new(
        &a.output,
        config,
        Origin::Modeled,
        numalab_model::machine::host(&model),
    )?;
    let keys = {
        let mut sink = crate::recorder::ProgressSink::with_bar(&mut rec);
        let r = numalab_layout::campaign::run(&model, &opts, &levels, a.trials, a.seed, &mut sink);
        sink.finish();
        r
    };
    let keys = match keys {
        Err(LayoutError::Interrupted) => {
            rec.finish()?;
            return Err(CliError::new(ErrorClass::Interrupted, "interrupted; finished noise levels are recorded, rerun with the same --out to resume"));
        }
        k => k?,
    };
    if !rec.json() {
        // This run's levels, and earlier runs' of the same journal for them.
        let shown = rec.latest().into_iter().filter(|r| keys.contains(&r.key));
        print_sections(
            rec.envelope(),
            shown,
            numalab_report::sections::layout::sections,
        );
    }
    rec.finish()?;
    Ok(())
}

fn read_layout(path: &Path) -> Result<InferenceRecord, CliError> {
    let (bundle, _) = numalab_schema::journal::read_bundle(path).map_err(|e| {
        CliError::new(
            ErrorClass::Input,
            format!("{e}; give the output of `numalab layout infer --out DIR` or `--json`"),
        )
    })?;
    bundle
        .records_of::<InferenceRecord>()
        .into_iter()
        .last()
        .map(|(_, r)| r)
        .ok_or_else(|| {
            CliError::new(
                ErrorClass::Input,
                format!("{}: holds no layout.inference record; run `numalab layout infer --out DIR` first", path.display()),
            )
        })
}

fn run_affinity(a: &AffinityArgs) -> CliResult {
    let comm = match &a.comm {
        Some(p) => {
            let text = numalab_schema::input::read_to_string(
                p,
                "a communication matrix",
                numalab_schema::input::C2C_CSV,
            )
            .map_err(|e| CliError::new(ErrorClass::Input, e.to_string()))?;
            let c = Comm::parse(&text, &p.display().to_string())?;
            if c.k != a.threads {
                return Err(CliError::new(
                    ErrorClass::Input,
                    format!(
                        "{}: a {} x {} matrix for --threads {}; give one line per thread",
                        p.display(),
                        c.k,
                        c.k,
                        a.threads
                    ),
                ));
            }
            c
        }
        None => Comm::uniform(a.threads),
    };
    let (costs, layout, source_path, origin) = match (&a.layout, &a.input) {
        (Some(l), _) => {
            let r = read_layout(l)?;
            let o = origin_of(&r.input_origin);
            (CostMatrix::from_layout(&r)?, Some(r), l.clone(), o)
        }
        (None, Some(i)) => {
            let loaded = input::load(i)?;
            let m = loaded.c2c.ok_or_else(|| {
                CliError::new(
                    ErrorClass::Input,
                    format!(
                        "{}: affinity without a layout needs a core-to-core matrix",
                        i.display()
                    ),
                )
            })?;
            (
                CostMatrix::from_c2c(&m),
                None,
                i.clone(),
                origin_of(&loaded.origin),
            )
        }
        (None, None) => {
            return Err(usage(
                "give --layout (from `layout infer`) or --input (a c2c matrix)",
            ))
        }
    };
    let advice = affinity::advise(&costs, &comm, a.seed)?;
    let placement: Vec<u32> = advice.placement.iter().map(|&p| costs.cpus[p]).collect();
    let scatter: Vec<u32> = advice.scatter.iter().map(|&p| costs.cpus[p]).collect();
    let mut sorted = placement.clone();
    sorted.sort_unstable();
    let nearest_targets: Vec<Option<String>> = match &layout {
        Some(r) if !r.targets.is_empty() => {
            let model = r.latency_model()?;
            placement
                .iter()
                .map(|cpu| {
                    let c = r.cores.iter().find(|c| c.cpu == *cpu)?;
                    r.targets
                        .iter()
                        .min_by(|x, y| {
                            model
                                .ns(c.stop, x.stop)
                                .total_cmp(&model.ns(c.stop, y.stop))
                        })
                        .map(|t| t.target.clone())
                })
                .collect()
        }
        _ => vec![None; placement.len()],
    };
    let mut notes = costs.notes.clone();
    notes.push("the gain is that of the mean latency between communicating threads, not a prediction of the program's speed-up".into());
    let r = AffinityRecord {
        threads: a.threads,
        source: costs.source.clone(),
        communication: comm.name.clone(),
        cpulist: cpulist::format(&sorted),
        placement: placement.clone(),
        cost_ns: advice.cost_ns,
        scatter_cost_ns: advice.scatter_cost_ns,
        scatter_placement: scatter.clone(),
        predicted_gain: advice.scatter_cost_ns / advice.cost_ns,
        nearest_targets,
        notes,
    };
    let config = serde_json::json!({"threads": a.threads, "comm": a.comm, "layout": a.layout, "input": a.input, "seed": a.seed});
    let mut rec = Recorder::new(
        &a.output,
        config,
        origin,
        file_host("affinity", &source_path),
    )?;
    rec.push(Record::new(
        record::affinity_key(&source_path.display().to_string(), a.threads, &comm.name),
        origin,
        &r,
    ))?;
    rec.finish_and_print(numalab_report::sections::layout::sections)
}
