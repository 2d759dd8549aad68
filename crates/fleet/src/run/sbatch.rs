//! `--sbatch`: the whole fleet run as one Slurm batch job.

use super::*;
use crate::nodes::launcher_limits;
use numalab_proc::group::{run_captured, RunError};

/// `--sbatch`: one batch job whose script runs `numalab fleet run` inside the allocation,
/// with the same fleet folder (which must therefore be writable from the batch host).
pub(super) fn run_sbatch(
    opts: &FleetRunOptions,
    progress: &dyn Progress,
    t0: Instant,
) -> Result<FleetSummary, FleetError> {
    let argv = sbatch_argv(opts)?;
    let count = match &opts.nodes {
        Some(list) => expand_slurm_nodelist(&opts.scontrol, list)?.len(),
        None => 0,
    };
    progress.start(count as u64, 0);
    progress.message(&format!("waiting for the sbatch job ({count} nodes)"));
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    own_group(&mut cmd);
    // The job runs the nodes `parallel` at a time; allow for queueing on top.
    let rounds = count.div_ceil(opts.parallel.max(1)).max(1) as u32;
    let limit = (opts.timeout + opts.kill_margin) * rounds + Duration::from_secs(24 * 3600);
    let out = run_captured(cmd, &launcher_limits(limit));
    progress.finish();
    let sb = |problem: String| FleetError::Sbatch {
        fleet: opts.fleet.clone(),
        problem,
    };
    let out = match out {
        Ok(o) => o,
        Err(RunError::NotFound) => {
            return Err(sb(format!("{} is not installed here; run on a Slurm login node", argv[0])))
        }
        Err(RunError::Spawn(e)) => return Err(sb(format!("cannot start {}: {}", argv[0], numalab_schema::input::io_reason(&e)))),
        Err(RunError::Timeout | RunError::Wait(_) | RunError::Cancelled) => {
            return Err(sb(format!("no end of the job after {}; sbatch was stopped (the job may still run: squeue -n {JOB_NAME})", humantime::format_duration(limit))))
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let job = text
        .split_whitespace()
        .last()
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or("%j")
        .to_string();
    let log = opts.fleet.join(format!("slurm-{job}.out"));
    let manifest = store::read_manifest(&opts.fleet)?;
    let Some(m) = manifest else {
        return Err(sb(format!(
            "the batch job ({}) wrote no {}: {}; its output is in {} on the batch host",
            out.status,
            store::manifest_path(&opts.fleet).display(),
            String::from_utf8_lossy(&out.stderr).trim(),
            log.display()
        )));
    };
    let nodes = m
        .nodes
        .iter()
        .map(|n| match store::read_status(&opts.fleet, n) {
            Some(st) => summary_of(&st, false),
            None => NodeSummary {
                node: n.clone(),
                state: NodeState::LaunchFailed,
                resumed: false,
                exit_code: None,
                duration_s: 0.0,
                message: format!("no status.json after the batch job; see {}", log.display()),
            },
        })
        .collect();
    Ok(FleetSummary::from_nodes(opts, nodes, t0))
}

/// The `sbatch` command line of `--sbatch` (the job script is a `--wrap` shell line, the
/// only shell involved; every word in it is quoted).
pub fn sbatch_argv(opts: &FleetRunOptions) -> Result<Vec<String>, FleetError> {
    let Some(list) = &opts.nodes else {
        return Err(FleetError::Options(
            "--sbatch needs --nodes LIST: the nodes the batch job allocates".into(),
        ));
    };
    if !opts.fleet.is_absolute() {
        return Err(FleetError::Options(format!(
            "--sbatch needs an absolute --fleet path the batch host can write, not {}",
            opts.fleet.display()
        )));
    }
    let count = expand_slurm_nodelist(&opts.scontrol, list)?.len();
    let mut inner = vec![
        opts.numalab.display().to_string(),
        "fleet".into(),
        "run".into(),
        "--launcher".into(),
        "slurm".into(),
        "--nodes".into(),
        list.clone(),
        "--parallel".into(),
        opts.parallel.to_string(),
        "--timeout".into(),
        format_duration(opts.timeout),
    ];
    if let Some(s) = &opts.shared {
        inner.push("--shared".into());
        inner.push(s.display().to_string());
    }
    if opts.restart {
        inner.push("--restart".into());
    }
    for a in &opts.launcher_args {
        inner.push("--launcher-arg".into());
        inner.push(a.clone());
    }
    inner.push("--fleet".into());
    inner.push(opts.fleet.display().to_string());
    inner.push("--".into());
    inner.extend(opts.command.iter().cloned());
    let wrap = inner
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    Ok(vec![
        opts.sbatch_program.display().to_string(),
        "--wait".into(),
        "--parsable".into(),
        format!("--nodes={count}"),
        format!("--nodelist={list}"),
        "--exclusive".into(),
        format!("--job-name={JOB_NAME}"),
        format!("--output={}/slurm-%j.out", opts.fleet.display()),
        "--wrap".into(),
        wrap,
    ])
}
