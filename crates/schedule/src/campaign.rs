//! The schedule study's rules, owned here: the plan record (the mix, the history fitted
//! per task with its notes, the schedules and their predictions) and the campaign that
//! runs them for real: repetitions interleaved across schedules, the order rotated each
//! round so that a slow drift of the machine favours no schedule, each run pushed to the
//! [`Sink`] as it ends under a key computed here, a key the sink has skipped (a rerun
//! resumes), then the summary of the campaign's runs.

use crate::history::{Observation, RuntimeModel};
use crate::mix::Mix;
use crate::plan::{HomeAffinity, Resources};
use crate::record::{self as srec, PlanRecord, TaskHistory};
use crate::run;
use numalab_layout::LayoutError;
use numalab_records::schedule::Plan;
use numalab_schema::sink::Sink;
use numalab_schema::{interrupt, Origin, Record};

/// The plan record's key: `schedule/{mix}/plan/{resources}/{stamp}`.
pub fn plan_key(mix_id: &str, resources: &str, stamp: &str) -> String {
    format!("schedule/{mix_id}/plan/{resources}/{stamp}")
}

/// A campaign run's key: `schedule/{mix}/{schedule}/r{repetition}`.
pub fn run_key(mix_id: &str, schedule: &str, repetition: usize) -> String {
    format!("schedule/{mix_id}/{schedule}/r{repetition}")
}

/// The summary's key: `schedule/{mix}/summary/{stamp}`.
pub fn summary_key(mix_id: &str, stamp: &str) -> String {
    format!("schedule/{mix_id}/summary/{stamp}")
}

/// The plan record: what was planned from which history, with a note per task whose
/// history is missing or too thin to fit more than perfect scaling.
pub fn plan_record(
    mix: &Mix,
    observations: &[Vec<Observation>],
    models: &[Option<RuntimeModel>],
    resources: &Resources,
    plans: &[Plan],
    history: Vec<String>,
    predictions: String,
) -> PlanRecord {
    let mut notes = Vec::new();
    for (t, m) in mix.tasks.iter().zip(models) {
        if m.is_none() {
            notes.push(format!(
                "task {:?}: no past runs found in --history; record some with `numalab scale --out DIR -- {}`",
                t.name,
                t.command.join(" ")
            ));
        } else if let Some(m) = m.as_ref().filter(|m| m.form == "one-point") {
            notes.push(format!(
                "task {:?}: history at one thread count only ({}): perfect scaling assumed",
                t.name, m.points[0].threads
            ));
        }
    }
    PlanRecord {
        mix: mix.source.clone(),
        mix_id: mix.id(),
        resources: resources.source.clone(),
        cores: resources.cpus.len(),
        history,
        tasks: mix
            .tasks
            .iter()
            .zip(models)
            .zip(observations)
            .map(|((t, m), o)| TaskHistory {
                task: t.name.clone(),
                runs: o.len(),
                model: m.clone(),
            })
            .collect(),
        plans: plans.to_vec(),
        predictions,
        notes,
    }
}

/// What the campaign is doing (for a progress display).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// This schedule's run starts.
    Running(&'a str),
    /// A run ended, or was in the sink already.
    Done,
}

/// What [`run`] did.
#[derive(Debug)]
pub struct Ran {
    /// The campaign's runs: those the sink had and those made now.
    pub runs: Vec<srec::RunRecord>,
    /// Stopped by Ctrl-C; the runs so far are in the sink.
    pub interrupted: bool,
}

/// Refuses a campaign of no rounds (`--repeat 0`): the message says the least allowed.
pub fn check_repeat(repeat: usize) -> Result<(), String> {
    if repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    Ok(())
}

/// Runs `repeat` repetitions of every plan, round `k` starting at plan `k` (rotated),
/// skipping the runs the sink has, pushing each run as it ends. A run that cannot start
/// (a command missing, a binding refused) ends the campaign with that error; the runs
/// before it are kept.
pub fn run(
    mix: &Mix,
    plans: &[Plan],
    home: Option<&HomeAffinity>,
    repeat: usize,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(Step<'_>),
) -> Result<Ran, LayoutError> {
    let mix_id = mix.id();
    let mut out = Ran {
        runs: Vec::new(),
        interrupted: false,
    };
    'campaign: for k in 0..repeat {
        for j in 0..plans.len() {
            let p = &plans[(j + k) % plans.len()];
            let key = run_key(&mix_id, &p.schedule, k);
            if sink.done(&key) {
                if let Some(Ok(r)) = sink
                    .previous(&key)
                    .and_then(|r| r.decode::<srec::RunRecord>())
                {
                    out.runs.push(r);
                }
                progress(Step::Done);
                continue;
            }
            if interrupt::requested() {
                out.interrupted = true;
                break 'campaign;
            }
            progress(Step::Running(&p.schedule));
            match run::run_plan(mix, p, home) {
                Ok(r) => {
                    let r = srec::RunRecord {
                        mix_id: mix_id.clone(),
                        schedule: p.schedule.clone(),
                        repetition: k,
                        run: r,
                    };
                    sink.push(Record::new(key, Origin::Measured, &r))
                        .map_err(|e| LayoutError::Runtime(format!("cannot write results: {e}")))?;
                    out.runs.push(r);
                }
                Err(LayoutError::Interrupted) => {
                    out.interrupted = true;
                    break 'campaign;
                }
                Err(e) => return Err(e),
            }
            progress(Step::Done);
        }
    }
    Ok(out)
}

/// The summary of a campaign's runs.
pub fn summary(mix: &Mix, repeat: usize, plans: &[Plan], ran: &Ran) -> srec::SummaryRecord {
    srec::summarize(&mix.id(), repeat, plans, &ran.runs)
}

/// How a [`campaign`] ended: its summary (keyed by [`summary_key`]) and whether Ctrl-C
/// stopped it.
#[derive(Debug)]
pub struct Campaign {
    /// The summary of the campaign's runs.
    pub summary: srec::SummaryRecord,
    /// Its key in the journal.
    pub key: String,
    /// Stopped by Ctrl-C; the runs so far are in the sink.
    pub interrupted: bool,
}

impl Campaign {
    /// The summary as the journal keeps it (measured).
    pub fn record(&self) -> Record {
        Record::new(self.key.clone(), Origin::Measured, &self.summary)
    }

    /// The ending of a campaign Ctrl-C stopped, if it was: what is kept, how to resume.
    pub fn interruption(&self) -> Option<&'static str> {
        self.interrupted.then_some(
            "interrupted; finished runs are recorded, rerun with the same --out to resume",
        )
    }
}

/// The campaign of a plan record's schedules: [`run`] (`repeat` rotated rounds, resumed
/// from what the sink has) then their [`summary`], keyed with the run's `stamp`. The
/// summary is returned, not pushed: the caller stores and shows it.
pub fn campaign(
    mix: &Mix,
    plan: &PlanRecord,
    home: Option<&HomeAffinity>,
    repeat: usize,
    stamp: &str,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(Step<'_>),
) -> Result<Campaign, LayoutError> {
    let ran = run(mix, &plan.plans, home, repeat, sink, progress)?;
    Ok(Campaign {
        summary: summary(mix, repeat, &plan.plans, &ran),
        key: summary_key(&plan.mix_id, stamp),
        interrupted: ran.interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_campaign_has_at_least_one_round() {
        assert_eq!(
            check_repeat(0),
            Err("--repeat must be at least 1".to_string())
        );
        assert_eq!(check_repeat(1), Ok(()));
        assert_eq!(check_repeat(10), Ok(()));
    }

    #[test]
    fn keys_name_the_mix_the_schedule_and_the_round() {
        assert_eq!(run_key("m1", "fair", 3), "schedule/m1/fair/r3");
        assert_eq!(
            plan_key("m1", "this machine", "2026-12-02T15:00:00Z"),
            "schedule/m1/plan/this machine/2026-12-02T15:00:00Z"
        );
        assert_eq!(summary_key("m1", "t"), "schedule/m1/summary/t");
    }

    #[test]
    fn a_campaign_resumed_from_its_runs_summarizes_them_without_running() {
        let mix = Mix::parse(
            "[[task]]\nname='a'\ncommand=['true']\ndata='1 KiB'\nthreads=[1]\n",
            "m.toml",
        )
        .unwrap();
        let machine = numalab_topo::synthetic("pack:1 numa:1 core:2 pu:1").unwrap();
        let res = crate::study::live_resources(&machine, machine.pu_ids(), None, None);
        let plan = crate::study::plan(&mix, &[], &res, None, false, vec![]).unwrap();
        // Run once for real into a sink, then again from it: the second run only reads.
        let mut sink: Vec<Record> = Vec::new();
        let first = campaign(&mix, &plan, None, 1, "t", &mut sink, &mut |_| {}).unwrap();
        assert_eq!(sink.len(), plan.plans.len());
        let mut steps = Vec::new();
        let again = campaign(&mix, &plan, None, 1, "t2", &mut sink, &mut |s| {
            steps.push(s == Step::Done)
        })
        .unwrap();
        assert_eq!(sink.len(), plan.plans.len());
        assert!(steps.iter().all(|d| *d));
        assert_eq!(again.summary, first.summary);
        assert_eq!(again.key, summary_key(&mix.id(), "t2"));
        assert_eq!(again.record().key, again.key);
        assert!(!again.interrupted);
        assert_eq!(again.interruption(), None);
        let stopped = Campaign {
            interrupted: true,
            ..again
        };
        assert!(stopped
            .interruption()
            .unwrap()
            .starts_with("interrupted; finished runs are recorded"));
    }
}
