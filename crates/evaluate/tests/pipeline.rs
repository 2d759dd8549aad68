//! The evaluation as a library: steps run into a memory sink on this machine, exact
//! resumption from earlier records, refused resumptions, setting old results aside.

use numalab_evaluate::{
    check_same_options, run, set_aside, steps, Observer, Options, Resume, Step, StepRecord,
    StepStatus, LEFT_OUT,
};
use numalab_schema::record::{Host, Tool};
use numalab_schema::sink::MemorySink;
use numalab_schema::{Envelope, ErrorClass, Origin, Record};

/// Every step id but these.
fn all_but(keep: &[&str]) -> Vec<String> {
    steps()
        .iter()
        .map(|s| s.id.to_string())
        .filter(|id| !keep.contains(&id.as_str()))
        .collect()
}

#[derive(Default)]
struct Seen {
    started: Vec<String>,
    finished: Vec<Option<String>>,
}

impl Observer for Seen {
    fn step_started(&mut self, _i: usize, total: usize, step: &Step) {
        assert_eq!(total, steps().len());
        self.started.push(step.id.into());
    }
    fn step_finished(&mut self, record: Option<&StepRecord>) {
        self.finished.push(record.map(|r| r.step.clone()));
    }
}

fn step_records(records: &[Record]) -> Vec<(String, StepRecord)> {
    records
        .iter()
        .filter_map(|r| Some((r.key.clone(), r.decode::<StepRecord>()?.ok()?)))
        .collect()
}

#[test]
fn steps_run_into_a_sink_and_a_rerun_fills_in_only_what_was_left_out() {
    let machine = numalab_topo::live().expect("this machine's topology");
    let placer = numalab_topo::bind::HwlocPlacer::new().expect("hwloc");
    // First run: topology and the PMU check; every other step left out.
    let opts = Options {
        quick: true,
        skip: all_but(&["topology", "pmu"]),
        command: vec!["numalab".into(), "evaluate".into()],
    };
    opts.check().unwrap();
    let mut sink = MemorySink::default();
    let mut seen = Seen::default();
    let resume = Resume::from_previous(&[]);
    assert_eq!(resume.run, 1);
    let out = run(&opts, &resume, &machine, &placer, &mut sink, &mut seen).unwrap();
    assert_eq!((out.failed, out.interrupted), (0, false));
    // Every step is closed: two measured, the rest left out.
    assert_eq!(seen.started.len(), steps().len());
    let closed = step_records(&sink.records);
    assert_eq!(closed.len(), steps().len());
    for (key, s) in &closed {
        assert_eq!(key, &format!("evaluate/step/{}", s.step));
        assert_eq!(s.run, Some(1));
        if s.step == "topology" || s.step == "pmu" {
            assert_eq!(s.outcome, StepStatus::Done, "{s:?}");
        } else {
            assert!(s.left_out(), "{s:?}");
        }
    }
    let keys: Vec<&str> = sink.records.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys[0], "evaluate/run/1");
    for k in ["topology/machine", "topology/doctor", "pmu/check"] {
        assert!(keys.contains(&k), "{keys:?}");
    }

    // Second run, resuming: the power step is filled in; the finished ones are not
    // run again, the still-left-out ones keep their record, nothing is overwritten.
    let previous = sink.records.clone();
    let resume = Resume::from_previous(&previous);
    assert_eq!(resume.run, 2);
    assert_eq!(
        resume.finished,
        vec!["topology".to_string(), "pmu".to_string()]
    );
    let opts2 = Options {
        skip: all_but(&["topology", "pmu", "power"]),
        ..opts.clone()
    };
    assert_eq!(
        resume.again(&opts2.skip),
        vec!["filling in step power, left out with --skip before".to_string()]
    );
    let mut sink2 = MemorySink {
        previous,
        ..Default::default()
    };
    let mut seen2 = Seen::default();
    run(&opts2, &resume, &machine, &placer, &mut sink2, &mut seen2).unwrap();
    assert_eq!(seen2.started, vec!["power".to_string()]);
    assert_eq!(
        seen2.finished.iter().filter(|f| f.is_none()).count(),
        steps().len() - 1
    );
    let closed2 = step_records(&sink2.records);
    assert_eq!(closed2.len(), 1);
    let (key, power) = &closed2[0];
    // The plain key belongs to run 1's "left out" record: this one is keyed by its run.
    assert_eq!(key, "evaluate/step/power/run-2");
    assert_eq!(power.run, Some(2));
    assert!(!power.left_out(), "{power:?}");
    assert!(
        matches!(power.outcome, StepStatus::Done | StepStatus::Skipped { .. }),
        "{power:?}"
    );
    assert_eq!(sink2.records[0].key, "evaluate/run/2");
}

#[test]
fn unknown_steps_are_refused_by_name() {
    let opts = Options {
        skip: vec!["bandwith".into()],
        ..Default::default()
    };
    let e = opts.check().unwrap_err();
    assert_eq!(e.class, ErrorClass::Usage);
    assert!(e.message.contains("--skip bandwith: no such step"), "{e}");
    assert!(e.message.contains("bandwidth"), "{e}");
}

fn step(id: &str, outcome: StepStatus, run: u32) -> Record {
    Record::new(
        format!("evaluate/step/{id}"),
        Origin::Measured,
        &StepRecord {
            step: id.into(),
            title: id.into(),
            outcome,
            seconds: 1.0,
            run: Some(run),
        },
    )
}

#[test]
fn a_failed_step_is_run_again_and_a_later_success_wins() {
    let failed = step(
        "latency",
        StepStatus::Failed {
            error: "cell x: out of memory".into(),
        },
        1,
    );
    let r = Resume::from_previous(std::slice::from_ref(&failed));
    assert!(r.finished.is_empty());
    assert_eq!(
        r.again(&[]),
        vec!["running step latency again: it failed last time (cell x: out of memory)".to_string()]
    );
    // Left out now: nothing to say about it.
    assert!(r.again(&["latency".into()]).is_empty());
    let done = step("latency", StepStatus::Done, 2);
    let r = Resume::from_previous(&[failed, done]);
    assert_eq!(r.finished, vec!["latency".to_string()]);
    assert!(r.again(&[]).is_empty());
    // A step the machine cannot do is finished; one the user left out is not.
    let cannot = step(
        "c2c",
        StepStatus::Skipped {
            reason: "one PU: there is no pair to measure".into(),
        },
        1,
    );
    let left = step(
        "power",
        StepStatus::Skipped {
            reason: LEFT_OUT.into(),
        },
        1,
    );
    let r = Resume::from_previous(&[cannot, left]);
    assert_eq!(r.finished, vec!["c2c".to_string()]);
}

fn envelope(command: &[&str], quick: bool) -> Envelope {
    Envelope {
        schema_version: numalab_schema::record::SCHEMA_VERSION,
        tool: Tool::this("0.0.0"),
        created_utc: "2026-11-26T00:00:00Z".into(),
        command: command.iter().map(|s| s.to_string()).collect(),
        config: serde_json::json!({ "quick": quick }),
        origin: Origin::Measured,
        host: Host::unknown("abc"),
    }
}

#[test]
fn a_resumption_must_keep_quick_and_be_of_evaluate() {
    let dir = std::path::Path::new("out");
    let quick = envelope(&["numalab", "evaluate", "--quick"], true);
    assert!(check_same_options(dir, true, &quick).is_ok());
    let e = check_same_options(dir, false, &quick).unwrap_err();
    assert_eq!(e.class, ErrorClass::Usage);
    assert!(
        e.message.contains("holds an evaluation run with --quick"),
        "{e}"
    );
    assert!(e.message.contains("--fresh"), "{e}");
    let other = envelope(&["numalab", "mem", "bandwidth"], false);
    let e = check_same_options(dir, false, &other).unwrap_err();
    assert!(
        e.message
            .contains("holds the results of another command (numalab mem bandwidth)"),
        "{e}"
    );
}

#[test]
fn set_aside_moves_the_outputs_and_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(set_aside(dir.path()).unwrap(), None);
    std::fs::write(dir.path().join("results.jsonl"), "journal").unwrap();
    std::fs::write(dir.path().join("report.html"), "page").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let aside = set_aside(dir.path()).unwrap().expect("moved");
    assert!(aside.starts_with(dir.path()));
    assert_eq!(
        std::fs::read_to_string(aside.join("results.jsonl")).unwrap(),
        "journal"
    );
    assert_eq!(
        std::fs::read_to_string(aside.join("report.html")).unwrap(),
        "page"
    );
    assert!(!dir.path().join("results.jsonl").exists());
    // Files that are not the evaluation's stay where they are.
    assert!(dir.path().join("notes.txt").exists());
    // A second set-aside in the same second gets its own folder.
    std::fs::write(dir.path().join("summary.json"), "{}").unwrap();
    let again = set_aside(dir.path()).unwrap().expect("moved");
    assert_ne!(again, aside);
}

/// A monitor that pushes one record of its own after each step it watched.
#[derive(Default)]
struct Watcher {
    started: Vec<String>,
    ended: Vec<String>,
}

impl numalab_evaluate::StepMonitor for Watcher {
    fn step_started(&mut self, step: &Step) {
        assert_eq!(self.started.len(), self.ended.len(), "a step started twice");
        self.started.push(step.id.into());
    }
    fn step_ended(&mut self, step: &Step, sink: &mut dyn numalab_schema::sink::Sink) {
        assert_eq!(self.started.last().map(String::as_str), Some(step.id));
        self.ended.push(step.id.into());
        let note = StepRecord {
            step: step.id.into(),
            title: "watched".into(),
            outcome: StepStatus::Done,
            seconds: 0.0,
            run: None,
        };
        sink.push(Record::new(
            format!("watch/{}", step.id),
            Origin::Measured,
            &note,
        ))
        .unwrap();
    }
}

#[test]
fn a_monitor_watches_every_step_that_runs_and_its_records_precede_the_step_record() {
    let machine = numalab_topo::live().expect("this machine's topology");
    let placer = numalab_topo::bind::HwlocPlacer::new().expect("hwloc");
    let opts = Options {
        quick: true,
        skip: all_but(&["topology", "pmu"]),
        command: vec!["numalab".into(), "evaluate".into()],
    };
    let mut sink = MemorySink::default();
    let mut watcher = Watcher::default();
    let out = numalab_evaluate::run_monitored(
        &opts,
        &Resume::from_previous(&[]),
        &machine,
        &placer,
        &mut sink,
        &mut (),
        &mut watcher,
    )
    .unwrap();
    assert_eq!(out.failed, 0);
    // Left-out steps are not watched: nothing ran.
    assert_eq!(watcher.started, vec!["topology", "pmu"]);
    assert_eq!(watcher.ended, watcher.started);
    let keys: Vec<&str> = sink.records.iter().map(|r| r.key.as_str()).collect();
    for id in ["topology", "pmu"] {
        let w = keys
            .iter()
            .position(|k| *k == format!("watch/{id}"))
            .unwrap();
        let s = keys
            .iter()
            .position(|k| *k == format!("evaluate/step/{id}"))
            .unwrap();
        assert!(w < s, "{keys:?}");
    }
}

#[test]
fn without_a_bmc_the_run_is_the_plain_one_and_has_no_power_warnings() {
    let machine = numalab_topo::live().expect("this machine's topology");
    let placer = numalab_topo::bind::HwlocPlacer::new().expect("hwloc");
    let opts = Options {
        quick: true,
        skip: all_but(&["topology"]),
        command: vec!["numalab".into(), "evaluate".into()],
    };
    let mut sink = MemorySink::default();
    let (out, warnings) = numalab_evaluate::power::run_with_power(
        None,
        &opts,
        &Resume::from_previous(&[]),
        &machine,
        &placer,
        &mut sink,
        &mut (),
    );
    let out = out.unwrap();
    assert_eq!((out.failed, out.interrupted), (0, false));
    assert!(warnings.is_empty(), "{warnings:?}");
    let closed = step_records(&sink.records);
    assert_eq!(closed.len(), steps().len());
    assert!(!sink.records.iter().any(|r| r.key.starts_with("power/bmc")));
}

/// A journal damaged in many lines gives one warning a line on reading back; what
/// `write_outputs` hands the terminal is the first of them and one folded line for the
/// rest (how many, three of them), as `numalab report` says them.
#[test]
fn the_outputs_fold_the_warnings_of_a_damaged_journal() {
    let dir = tempfile::tempdir().unwrap();
    let env = envelope(&["numalab", "evaluate", "--quick"], true);
    {
        let opened = numalab_schema::journal::Journal::open(dir.path(), &env).unwrap();
        let mut journal = opened.journal;
        journal
            .append(&step("topology", StepStatus::Done, 1))
            .unwrap();
        journal.close().unwrap();
    }
    let path = dir.path().join("results.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    for i in 1..=30 {
        text.push_str(&format!("not json {i}\n"));
    }
    text.push_str(&format!(
        "{}\n",
        serde_json::to_string(&numalab_schema::journal::Line::Record(step(
            "pmu",
            StepStatus::Done,
            1
        )))
        .unwrap()
    ));
    std::fs::write(&path, text).unwrap();
    let written = numalab_evaluate::write_outputs(dir.path()).unwrap();
    assert_eq!(written.steps.len(), 2, "{:?}", written.steps);
    assert_eq!(written.warnings.len(), 2, "{:?}", written.warnings);
    let (first, folded) = (&written.warnings[0], &written.warnings[1]);
    assert_eq!(folded.code, first.code);
    assert!(
        folded
            .message
            .contains("29 more records had this warning, each its own message (30 in all"),
        "{folded}"
    );
    assert!(dir.path().join("report.html").is_file());
}
