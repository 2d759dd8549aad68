//! `numalab model`: machine presets and what-if experiments on modeled machines
//! (`list`, `show`, `run`), and fitting a preset to measurements (`calibrate`). The model itself lives in `numalab-model`; this module parses
//! flags, writes records through the shared [`Recorder`] (flagged as modeled, with the
//! modeled machine as the envelope's host) and prints tables.

use crate::output::{paint, print_json};
use crate::recorder::{OutputArgs, Recorder};
use crate::CliResult;
use clap::{Args, Subcommand, ValueEnum};
use numalab_model::calibrate::{report, request};
use numalab_model::experiments::{self, Engine, Experiment, RunFlags};
use numalab_model::{describe, spec, svg, Model};
use numalab_report::sections;
use numalab_schema::{Origin, Record};
use std::path::PathBuf;

/// `numalab model`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab model list\n  numalab model show knl-7210:snc4,cache\n  numalab model run neoverse-v1-64 --experiment stream-triad\n  numalab model run knl-7210 --experiment latency-heatmap --target slice:0 --svg knl.svg\n  numalab model run mesh:k16 --experiment uniform --engine check\n  numalab model run altra-q80 --experiment policy --set cores.max_outstanding=24 --out results/\n  numalab model calibrate run1/ --preset altra-q80-2s --save mine.toml\n  numalab model run mine.toml --experiment stream-triad --set memory.ddr.channels_per_controller=4"
)]
pub struct ModelArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ModelCommand,
}

/// `numalab model` subcommands.
#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// List the shipped presets and their variants.
    List(ListArgs),
    /// Show a resolved preset: every value with its source.
    Show(ShowArgs),
    /// Run an experiment on a modeled machine.
    Run(Box<RunArgs>),
    /// Fit a preset's latencies and bandwidth to measurements of a real machine and
    /// save it as a preset of that machine.
    ///
    /// Figures (no map from CPUs to the model's cores is needed, only CPUs to NUMA nodes):
    /// idle memory latency per (CPU node, memory node) at the largest working set, beyond
    /// twice the last-level cache (mem.latency records, e.g. `numalab mem latency
    /// --matrix`; huge pages preferred); core-to-core latency, the mean of each node pair's
    /// cells (c2c.matrix, `numalab c2c`); the highest bandwidth of each node on its own
    /// memory (mem.bandwidth). `numalab evaluate` writes all three.
    ///
    /// Parameters: noc.router_cycles (per hop; output-queued routers only, input-queued
    /// ones charge their pipeline), slc.lookup_cycles (paid once by every latency figure),
    /// socket.link_latency_ns (two-socket presets), memory.POOL.latency_ns,
    /// memory.POOL.channel_gbps, or cores.max_outstanding where the model's cores rather
    /// than its controllers limit the bandwidth. Latencies are fitted by weighted linear
    /// least squares, bandwidth by Gauss-Newton on the analytic engine. Every figure is
    /// printed measured against modeled, with the RMS residual per kind. A parameter the
    /// figures cannot tell apart from others, or that no figure depends on, is reported
    /// and kept at the preset's value. The machine and the preset must have the same
    /// number of NUMA nodes; node i of one is set against node i of the other.
    Calibrate(Box<CalibrateArgs>),
}

/// `numalab model calibrate`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab model calibrate run1/ --preset altra-q80-2s\n  numalab model calibrate run1/ c2c-run/ --preset altra-q80-2s:quadrant --save mine.toml --out run1/\n  numalab model show mine.toml"
)]
pub struct CalibrateArgs {
    /// Bundles measured on the machine: output folders (holding results.jsonl), journal
    /// files or JSON bundle files, all of one machine.
    #[arg(required = true, value_name = "BUNDLE")]
    pub bundles: Vec<PathBuf>,
    /// The preset to start from: NAME[:VARIANT,...] or a TOML file. It must have as many
    /// NUMA nodes as the measured machine.
    #[arg(long, value_name = "PRESET")]
    pub preset: String,
    /// Override a value of the starting preset: dotted key = TOML value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Write the calibrated preset to this TOML file: every value of the starting preset
    /// with its source, the fitted ones saying from which bundles and when. Load it with
    /// `numalab model show FILE` or `numalab model run FILE`.
    #[arg(long, value_name = "FILE.toml")]
    pub save: Option<PathBuf>,
    /// Output options (the `model.calibration` record).
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `numalab model list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `numalab model show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Preset: NAME[:VARIANT,...] (see `model list`) or a TOML file (may say `base = "NAME"`).
    pub preset: String,
    /// Override a value: dotted key = TOML value, e.g. --set noc.cols=12 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Print as JSON (values, sources, variants, resolved counts).
    #[arg(long)]
    pub json: bool,
    /// Also write the floorplan (cores, slices, memory controllers) as SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// Experiments on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExperimentArg {
    /// STREAM triad, threads on --cores, data on each node in turn (or --data-node).
    StreamTriad,
    /// Latency from every core to a line at --target, over the floorplan.
    LatencyHeatmap,
    /// Uniform random traffic: latency versus load, saturation.
    Uniform,
    /// Hotspot traffic (--hotspot STOP:FRACTION).
    Hotspot,
    /// Transpose traffic (square meshes).
    Transpose,
    /// The same application under the preset's NUMA/SLC configurations.
    Policy,
}

/// Engines on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// Analytic: exact loads, queueing formulas (milliseconds).
    Analytic,
    /// Discrete-event simulation (seeded, deterministic).
    Des,
    /// Both, and a record of their differences (synthetic traffic: with the other router too).
    Check,
}

/// `numalab model run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Preset: NAME[:VARIANT,...] or a TOML file.
    pub preset: String,
    /// The experiment.
    #[arg(long, value_enum)]
    pub experiment: ExperimentArg,
    /// Engine.
    #[arg(long, value_enum, default_value_t = EngineArg::Analytic)]
    pub engine: EngineArg,
    /// Override a preset value: dotted key = TOML value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Cores running the application, e.g. 0-15 or node:1 (default: node 0's cores for
    /// stream-triad, all cores for policy).
    #[arg(long, value_name = "LIST")]
    pub cores: Option<String>,
    /// Nodes holding the data for stream-triad, e.g. 0,3 (default: each node in turn).
    #[arg(long, value_name = "LIST")]
    pub data_node: Option<String>,
    /// Heatmap target: slice:N or mc:N.
    #[arg(long, value_name = "slice:N|mc:N")]
    pub target: Option<String>,
    /// Hotspot: STOP:FRACTION (stop number y*cols+x, fraction of packets), default the
    /// centre stop and 0.2.
    #[arg(long, value_name = "STOP:FRACTION")]
    pub hotspot: Option<String>,
    /// Offered loads as fractions of the router's analytic saturation estimate, e.g. 0.1,0.5,0.9.
    #[arg(long, value_name = "LIST")]
    pub loads: Option<String>,
    /// Flits per synthetic packet.
    #[arg(long, default_value_t = experiments::Options::default().flits)]
    pub flits: u32,
    /// Working set (policy) or total array size (stream-triad), e.g. 512M.
    #[arg(long, value_name = "SIZE")]
    pub working_set: Option<String>,
    /// Random seed of the discrete-event engine.
    #[arg(long, default_value_t = experiments::Options::default().des.seed)]
    pub seed: u64,
    /// Cycles the discrete-event engine measures (after --warmup).
    #[arg(long, default_value_t = experiments::Options::default().des.measure_cycles)]
    pub cycles: u64,
    /// Cycles simulated and discarded before measuring.
    #[arg(long, default_value_t = experiments::Options::default().des.warmup_cycles)]
    pub warmup: u64,
    /// Threads for the discrete-event simulations, default the CPUs this process may use:
    /// simulations run side by side (a curve's points, stream-triad's data nodes,
    /// policy's configurations and applications), and a curve with fewer points than
    /// jobs gives each point's input-queued simulation the spare threads (it times a
    /// few hundred cycles on one thread and sharded, and shards only if that is faster);
    /// the figures do not depend on it
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Write the floorplan as SVG (with the heatmap for latency-heatmap).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `numalab model`.
pub fn run(args: ModelArgs) -> CliResult {
    match args.command {
        ModelCommand::List(a) => list(a),
        ModelCommand::Show(a) => show(a),
        ModelCommand::Run(a) => run_experiment(*a),
        ModelCommand::Calibrate(a) => calibrate(*a),
    }
}

fn list(a: ListArgs) -> CliResult {
    let rows = describe::presets()?;
    if a.json {
        return print_json(&rows);
    }
    print!("{}", describe::render_presets(&rows, &bold));
    Ok(())
}

fn bold(text: &str) -> String {
    paint("1", text)
}

fn write_file(path: &std::path::Path, text: &str, flag: &str) -> CliResult {
    crate::output::write_file(path, text.as_bytes(), "the file", flag)
}

fn show(a: ShowArgs) -> CliResult {
    let loaded = spec::load(&a.preset, &a.sets)?;
    let model = Model::from_loaded(loaded.clone())?;
    if let Some(p) = &a.svg {
        write_file(p, &svg::floorplan(&model, None), "--svg")?;
        eprintln!("wrote the floorplan to {}", p.display());
    }
    if a.json {
        return print_json(&describe::preset_json(&loaded, &model));
    }
    print!("{}", describe::render_preset(&loaded, &model, &bold));
    Ok(())
}

fn run_experiment(a: RunArgs) -> CliResult {
    let model = Model::load(&a.preset, &a.sets)?;
    let experiment = match a.experiment {
        ExperimentArg::StreamTriad => Experiment::StreamTriad,
        ExperimentArg::LatencyHeatmap => Experiment::LatencyHeatmap,
        ExperimentArg::Uniform => Experiment::Uniform,
        ExperimentArg::Hotspot => Experiment::Hotspot,
        ExperimentArg::Transpose => Experiment::Transpose,
        ExperimentArg::Policy => Experiment::Policy,
    };
    let engine = match a.engine {
        EngineArg::Analytic => Engine::Analytic,
        EngineArg::Des => Engine::Des,
        EngineArg::Check => Engine::Check,
    };
    let opts = RunFlags {
        preset: a.preset.clone(),
        sets: a.sets.clone(),
        engine,
        seed: a.seed,
        warmup: a.warmup,
        cycles: a.cycles,
        flits: a.flits,
        jobs: a.jobs,
        cores: a.cores.clone(),
        data_node: a.data_node.clone(),
        target: a.target.clone(),
        hotspot: a.hotspot.clone(),
        loads: a.loads.clone(),
        working_set: a.working_set.clone(),
    }
    .options(&model)?;
    let config = experiments::run_config(&model, experiment, &opts);
    let host = numalab_model::machine::host(&model);
    let mut rec = Recorder::new(&a.output, config, Origin::Modeled, host)?;
    let result = {
        // Each record goes to the journal the moment the experiment produces it, so a
        // killed run keeps everything finished and a rerun skips it.
        let mut sink = crate::recorder::ProgressSink::with_bar(&mut rec);
        let r = experiments::run(&model, experiment, &opts, &mut sink);
        sink.finish();
        r
    };
    result?;
    let previous = rec.previous.clone();
    let json = rec.json();
    let bundle = rec.finish()?;
    if let Some(p) = &a.svg {
        let heat = experiments::first_heatmap(bundle.records.iter().chain(&previous));
        write_file(p, &svg::floorplan(&model, heat.as_ref()), "--svg")?;
        if !json {
            eprintln!("wrote the floorplan to {}", p.display());
        }
    }
    if !json {
        let all = previous.into_iter().chain(bundle.records);
        crate::output::print_sections(&bundle.envelope, all, sections::model::sections);
    }
    Ok(())
}

fn calibrate(a: CalibrateArgs) -> CliResult {
    let bundles = request::read_bundles(&a.bundles, &mut |w| eprintln!("numalab: warning: {w}"))?;
    request::check_save(a.save.as_deref())?;
    let mut cal = numalab_model::calibrate::calibrate(&a.preset, &a.sets, &bundles)?;
    let fitted = request::fitted_model(&a.preset, &a.sets, &cal)?;
    if let Some(p) = &a.save {
        let text = numalab_model::calibrate::preset_text(&cal, &numalab_schema::record::now_utc())?;
        write_file(p, &text, "--save")?;
        cal.preset_file = Some(p.display().to_string());
    }
    let config = request::config(&a.preset, &a.sets, &cal.bundles, a.save.as_deref());
    let mut rec = Recorder::new(
        &a.output,
        config,
        Origin::Modeled,
        numalab_model::machine::host(&fitted),
    )?;
    let key = report::record_key(&a.preset, &a.sets, &cal.bundles);
    rec.push(Record::new(key, Origin::Modeled, &cal))?;
    let json = rec.json();
    rec.finish()?;
    if !json {
        print!("{}", report::render(&cal, &bold));
    }
    Ok(())
}
