//! `numalab fleet`: one numalab command on many nodes through Slurm or MPI, the bundles
//! gathered into one folder (crate `numalab-fleet`), and the fleet report that finds
//! the nodes whose figures are off (`numalab_report::fleet`).

use crate::{CliError, CliResult};
use clap::{Args, Subcommand, ValueEnum};
use numalab_fleet::{AgentOptions, FleetRunOptions, LauncherKind};
use numalab_report::fleet::{self, Options as Outliers};
use numalab_schema::ErrorClass;
use std::path::PathBuf;
use std::time::Duration;

/// `numalab fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: FleetCommand,
}

/// `numalab fleet` subcommands.
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Run a numalab command (default `evaluate --quick`) on many nodes through srun or
    /// mpirun and gather every node's bundle into one folder; a rerun resumes.
    #[command(
        after_help = "Examples:\n  salloc -N 16 --exclusive numalab fleet run --fleet qual-2026-11\n  numalab fleet run --nodes 'n[01-16]' --fleet qual -- mem bandwidth --quick\n  numalab fleet run --sbatch --nodes 'n[01-16]' --fleet /shared/qual\n  numalab fleet run --launcher mpi --hostfile hosts --fleet qual\n  numalab fleet run --push --nodes 'n[01-16]' --fleet qual\n  numalab fleet report qual\n\nnumalab must be at the same path on every node, unless --push (Slurm) copies it\nthere. Bundles come back through the launcher's output (no shared file system needed)\nor through --shared DIR. A node that fails or hangs past --timeout is recorded with its\nstderr; the others go on. Running the same command into the same --fleet folder again\nreruns only the nodes not done.\nExit 0 when every node is done, 5 when some are not."
    )]
    Run(Box<RunArgs>),
    /// The node side of `fleet run` (started by the launcher on each node): runs the
    /// command and sends its bundle on stdout.
    #[command(hide = true)]
    Node(NodeArgs),
    /// The fleet report: a table of the nodes and, per hardware group, the nodes whose
    /// figures are outside the group's robust spread (median and MAD), with evidence.
    #[command(
        after_help = "Examples:\n  numalab fleet report qual\n  numalab fleet report qual --html qual.html\n  numalab fleet report qual --json > qual.json\n  numalab fleet report qual --floor 10\n\nNodes are grouped by hardware (CPU model and stepping, cores, NUMA nodes, memory and\nits configuration); kernel and firmware are shown beside each node, never grouped on.\nA node is an outlier on a figure when its robust z (deviation over 1.4826 MAD) is beyond\n--z, its deviation beyond --floor percent, and beyond what its own repetitions spread."
    )]
    Report(ReportArgs),
}

/// Which launcher.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LauncherArg {
    /// Slurm's srun (inside an allocation, or one-node jobs outside; --sbatch submits one).
    Slurm,
    /// Open MPI's mpirun with a hostfile.
    Mpi,
}

/// `numalab fleet run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The fleet folder (created; a rerun into it resumes).
    #[arg(long, value_name = "DIR")]
    pub fleet: PathBuf,
    /// The launcher.
    #[arg(long, value_enum, default_value = "slurm")]
    pub launcher: LauncherArg,
    /// Nodes: a Slurm node list (n[1-16], expanded by scontrol) [default: the
    /// allocation's SLURM_JOB_NODELIST].
    #[arg(long, value_name = "LIST", conflicts_with = "hostfile")]
    pub nodes: Option<String>,
    /// MPI hostfile (host or host slots=N per line); one run per distinct host.
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// Nodes running at once.
    #[arg(long, value_name = "N", default_value_t = numalab_fleet::DEFAULT_PARALLEL)]
    pub parallel: usize,
    /// Time limit per node (e.g. 90m, 2h): the node's command is killed after it and
    /// the node recorded as timed out.
    #[arg(long, value_name = "DURATION", default_value = "2h", value_parser = numalab_schema::units::parse_duration)]
    pub timeout: Duration,
    /// A folder every node and this machine see at the same path: nodes write their
    /// bundles there instead of sending them through the launcher's output.
    #[arg(long, value_name = "DIR")]
    pub shared: Option<PathBuf>,
    /// Submit one batch allocation (sbatch --wait) that runs the fleet inside it; the
    /// --fleet folder must then be writable from the batch host at the same path.
    #[arg(long)]
    pub sbatch: bool,
    /// An argument for srun or mpirun, before the command (repeatable), e.g.
    /// --launcher-arg=--partition=qual.
    #[arg(long = "launcher-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub launcher_args: Vec<String>,
    /// Start over in a folder that holds another command's run (the old nodes/ folder
    /// is kept aside).
    #[arg(long)]
    pub restart: bool,
    /// Slurm: srun copies this numalab to each node's /tmp (--bcast), where its SHA-256
    /// is checked and that copy run, then removed: nothing to install on the nodes.
    #[arg(long)]
    pub push: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// The numalab command to run on every node [default: evaluate --quick].
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `numalab fleet node` (arguments as `fleet run` writes them).
#[derive(Debug, Args)]
pub struct NodeArgs {
    /// --node NAME --timeout DUR [--shared DIR] -- COMMAND...
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub args: Vec<String>,
}

/// Output format of the report.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ReportFormat {
    /// Terminal text.
    Terminal,
    /// The report as JSON.
    Json,
}

/// `numalab fleet report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The fleet folder `fleet run` wrote.
    #[arg(value_name = "FLEET")]
    pub fleet: PathBuf,
    /// Also write the self-contained HTML report here [default: FLEET/fleet-report.html].
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Robust z beyond which a node may be an outlier.
    #[arg(long, value_name = "Z", default_value_t = Outliers::default().z_threshold)]
    pub z: f64,
    /// Percent deviation from the group median a node must exceed (the run-to-run
    /// noise of one machine is a few percent).
    #[arg(long, value_name = "PCT", default_value_t = 100.0 * Outliers::default().relative_floor)]
    pub floor: f64,
    /// Fewest nodes in a hardware group to judge it.
    #[arg(long, value_name = "N", default_value_t = Outliers::default().min_nodes)]
    pub min_nodes: usize,
}

/// Runs `numalab fleet`.
pub fn run(args: FleetArgs) -> CliResult {
    match args.command {
        FleetCommand::Run(a) => run_cmd(*a),
        FleetCommand::Node(a) => node_cmd(a),
        FleetCommand::Report(a) => report_cmd(a),
    }
}

/// The fleet's progress on a bar (stderr).
struct Bar(indicatif::ProgressBar);

impl numalab_fleet::Progress for Bar {
    fn start(&self, total: u64, already: u64) {
        self.0.set_length(total);
        self.0.set_position(already);
    }
    fn message(&self, text: &str) {
        self.0.set_message(text.to_string());
    }
    fn node_problem(&self, line: &str) {
        self.0
            .suspend(|| eprintln!("numalab: {}", numalab_report::table::plain(line)));
    }
    fn node_ended(&self) {
        self.0.inc(1);
    }
}

fn run_cmd(a: RunArgs) -> CliResult {
    let exe = numalab_fleet::this_numalab()?;
    let mut opts = FleetRunOptions::new(&a.fleet, exe, env!("CARGO_PKG_VERSION"));
    opts.launcher = match a.launcher {
        LauncherArg::Slurm => LauncherKind::Slurm,
        LauncherArg::Mpi => LauncherKind::Mpi,
    };
    opts.nodes = a.nodes;
    opts.hostfile = a.hostfile;
    opts.parallel = a.parallel;
    opts.timeout = a.timeout;
    opts.shared = a.shared;
    opts.sbatch = a.sbatch;
    opts.launcher_args = a.launcher_args;
    opts.restart = a.restart;
    opts.push = a.push;
    if !a.command.is_empty() {
        opts.command = a.command;
    }
    opts.check()?;
    let bar = crate::output::bar(0, "{elapsed:>4} [{bar:30}] {pos}/{len} nodes {msg}");
    let summary = numalab_fleet::run_cancellable(opts, &Bar(bar.clone()));
    bar.finish_and_clear();
    let summary = summary?;
    if a.json {
        crate::output::print_json(&summary)?;
    } else {
        for line in summary.lines() {
            println!("{line}");
        }
    }
    if let Some(msg) = summary.interruption() {
        return Err(CliError::new(ErrorClass::Interrupted, msg));
    }
    if let Some(msg) = summary.unfinished() {
        return Err(CliError::new(ErrorClass::Partial, msg));
    }
    Ok(())
}

fn node_cmd(a: NodeArgs) -> CliResult {
    let exe = numalab_fleet::this_numalab()?;
    let opts = AgentOptions::from_args(&a.args, exe, env!("CARGO_PKG_VERSION"))?;
    let code = numalab_fleet::run_agent(&opts)?;
    if code == 0 {
        return Ok(());
    }
    // The agent's code is the contract with `fleet run` (the command's, 124 timeout, 125
    // a pushed copy not the file sent, 127 not found): exit with it as it is.
    std::process::exit(code)
}

fn report_cmd(a: ReportArgs) -> CliResult {
    let opts = fleet::Options::from_flags(a.z, a.floor, a.min_nodes)
        .map_err(|e| CliError::new(ErrorClass::Usage, e))?;
    let input =
        fleet::load_fleet(&a.fleet).map_err(|e| CliError::new(ErrorClass::Input, e.to_string()))?;
    let report = fleet::analyse(&input, &opts);
    let html_path = fleet::report_html_path(&a.fleet, a.html.as_deref());
    crate::commands::report::write_output(Some(&html_path), &fleet::render_html(&report))?;
    if a.json {
        print!("{}", fleet::render_json(&report));
    } else {
        print!("{}", fleet::render_text(&report));
    }
    eprintln!("numalab: wrote {}", html_path.display());
    Ok(())
}
