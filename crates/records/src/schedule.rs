//! The records `numalab schedule` writes: `schedule.plan` (the runtime models and the three
//! schedules with their predictions), `schedule.run` (one real run of one schedule) and
//! `schedule.summary` (a campaign's makespans per schedule: outliers discarded, medians
//! with intervals, gains over fair).

use numalab_schema::RecordKind;
use numalab_stats::Interval;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The median run time at one thread count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Threads.
    pub threads: usize,
    /// Median wall time after outliers, s.
    pub median_s: f64,
    /// Runs used.
    pub runs: usize,
    /// Runs discarded as outliers.
    pub outliers: usize,
}

/// A task's fitted run-time model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeModel {
    /// "amdahl", "amdahl+overhead" or "one-point" (one thread count: perfectly parallel
    /// assumed).
    pub form: String,
    /// Serial part, s.
    pub serial_s: f64,
    /// Parallel part (the 1-thread time of the parallel work), s.
    pub parallel_s: f64,
    /// Extra seconds per added thread.
    pub overhead_s_per_thread: f64,
    /// Root mean square relative error of the fit at its points.
    pub residual_rel: f64,
    /// The placement the points were measured with.
    pub placement: String,
    /// The points fitted.
    pub points: Vec<Point>,
    /// Run time under another placement / under `placement`, at shared thread counts.
    pub placement_factors: BTreeMap<String, f64>,
}

impl RuntimeModel {
    /// Predicted run time with `t` threads, s.
    pub fn predict(&self, t: usize) -> f64 {
        let t = t.max(1) as f64;
        self.serial_s + self.parallel_s / t + self.overhead_s_per_thread * (t - 1.0)
    }
}

/// One task's place in a schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    /// Task name.
    pub task: String,
    /// Threads (= cores).
    pub threads: usize,
    /// Its CPUs.
    pub cpus: Vec<u32>,
    /// As a list ("0-3").
    pub cpulist: String,
    /// Memory bound to this node (None: first touch).
    pub mem_node: Option<u32>,
    /// Home affinity enforced for the task's data: the largest distance, hops, between
    /// its cores and the homes of its lines (from a home map); None when not enforced.
    #[serde(default)]
    pub home_distance: Option<u32>,
    /// Predicted run time, s (None without history).
    pub predicted_s: Option<f64>,
    /// Predicted run time -+ the fit's relative residual, s.
    pub predicted_band_s: Option<[f64; 2]>,
}

/// A schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// "fair", "load" or "optimized".
    pub schedule: String,
    /// One per task, in mix order.
    pub assignments: Vec<Assignment>,
    /// Predicted makespan, s.
    pub predicted_makespan_s: Option<f64>,
    /// Band of the prediction (each task's band; the makespan's is the max of lows and
    /// the max of highs), s.
    pub predicted_band_s: Option<[f64; 2]>,
    /// Facts and cautions.
    pub notes: Vec<String>,
}

/// One task of a real run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRun {
    /// Task name.
    pub task: String,
    /// Threads.
    pub threads: usize,
    /// CPUs given.
    pub cpulist: String,
    /// Memory policy given.
    pub mem_policy: String,
    /// The command as run.
    pub argv: Vec<String>,
    /// Exited with 0 in time.
    pub ok: bool,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Signal name, if a signal ended it.
    pub signal: Option<String>,
    /// Killed at its timeout.
    pub timed_out: bool,
    /// Wall time, s.
    pub wall_s: f64,
    /// From the schedule's start to the task's end, s.
    pub end_s: f64,
    /// CPU time / wall time.
    pub cpus_busy: f64,
    /// Last bytes (up to 1 KiB) of its output.
    pub stdout_tail: String,
    /// Last bytes of stderr, when it failed.
    pub stderr_tail: Option<String>,
}

/// A real run of one schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleRun {
    /// From the first start to the last end, s.
    pub makespan_s: f64,
    /// Every task.
    pub tasks: Vec<TaskRun>,
    /// Every task succeeded.
    pub ok: bool,
}

/// A task's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskHistory {
    /// Task name.
    pub task: String,
    /// Past runs found.
    pub runs: usize,
    /// The fitted model (None without runs).
    pub model: Option<RuntimeModel>,
}

/// The schedules (`schedule.plan`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    /// The mix file.
    pub mix: String,
    /// Its content id.
    pub mix_id: String,
    /// Where the cores are: "this machine", "model PRESET".
    pub resources: String,
    /// Cores available.
    pub cores: usize,
    /// History folders read.
    pub history: Vec<String>,
    /// Per task.
    pub tasks: Vec<TaskHistory>,
    /// fair, load, optimized.
    pub plans: Vec<Plan>,
    /// "history fit" or "model PRESET" (what the predictions rest on).
    pub predictions: String,
    /// Facts and cautions.
    pub notes: Vec<String>,
}

impl RecordKind for PlanRecord {
    const KIND: &'static str = "schedule.plan";
}

/// One real run of one schedule (`schedule.run`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Mix id.
    pub mix_id: String,
    /// fair, load, optimized.
    pub schedule: String,
    /// Repetition (0-based).
    pub repetition: usize,
    /// The run.
    #[serde(flatten)]
    pub run: ScheduleRun,
}

impl RecordKind for RunRecord {
    const KIND: &'static str = "schedule.run";
}

/// One schedule's campaign figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleFigures {
    /// fair, load, optimized.
    pub schedule: String,
    /// Makespans of successful runs, s (outliers included).
    pub makespans_s: Vec<f64>,
    /// Indices of the outliers discarded (modified z-score above 3.5).
    pub outliers: Vec<usize>,
    /// Median makespan of the rest with its 95% bootstrap interval, s.
    pub makespan_s: Option<Interval>,
    /// Predicted makespan, s.
    pub predicted_s: Option<f64>,
    /// Median fair makespan / this one (above 1: faster than fair), with interval.
    pub gain_over_fair: Option<Interval>,
    /// Failed runs.
    pub failed_runs: usize,
}

/// A campaign's summary (`schedule.summary`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRecord {
    /// Mix id.
    pub mix_id: String,
    /// Runs per schedule asked for.
    pub repeat: usize,
    /// Per schedule.
    pub schedules: Vec<ScheduleFigures>,
    /// Facts and cautions.
    pub notes: Vec<String>,
}

impl RecordKind for SummaryRecord {
    const KIND: &'static str = "schedule.summary";
}

/// Summarises the makespans of each schedule (successful runs only).
pub fn summarize(mix_id: &str, repeat: usize, plans: &[Plan], runs: &[RunRecord]) -> SummaryRecord {
    let mut out = Vec::new();
    let ms = |name: &str| -> Vec<f64> {
        let mut v: Vec<(usize, f64)> = runs
            .iter()
            .filter(|r| r.schedule == name && r.run.ok)
            .map(|r| (r.repetition, r.run.makespan_s))
            .collect();
        v.sort_by_key(|x| x.0);
        v.into_iter().map(|x| x.1).collect()
    };
    let fair = numalab_stats::without_outliers(&ms("fair"));
    for p in plans {
        let all = ms(&p.schedule);
        let outliers = numalab_stats::outliers(&all);
        let kept = numalab_stats::without_outliers(&all);
        let gain = if fair.is_empty() || kept.is_empty() {
            None
        } else {
            numalab_stats::ratio_interval(&fair, &kept, 0.95, 2000, numalab_stats::DEFAULT_SEED)
        };
        out.push(ScheduleFigures {
            schedule: p.schedule.clone(),
            failed_runs: runs
                .iter()
                .filter(|r| r.schedule == p.schedule && !r.run.ok)
                .count(),
            makespan_s: numalab_stats::median_interval(&kept),
            outliers,
            makespans_s: all,
            predicted_s: p.predicted_makespan_s,
            gain_over_fair: gain,
        });
    }
    let mut notes = Vec::new();
    if repeat < 5 {
        notes.push(format!(
            "{repeat} run(s) per schedule: intervals are wide or absent; use --repeat 10 or more for a campaign"
        ));
    }
    SummaryRecord {
        mix_id: mix_id.to_string(),
        repeat,
        schedules: out,
        notes,
    }
}
