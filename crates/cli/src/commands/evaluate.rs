//! `numalab evaluate`: the main job. The pipeline (steps, resumption, the summary and
//! report written from the journal) is the library `numalab-evaluate`; this command
//! adds the flags, the journal in `--out`, a progress bar (without a terminal: a line per
//! step, and one a minute inside a long step) and the closing summary on stdout.

use crate::recorder::{OutputArgs, ProgressSink, Recorder};
use crate::{CliError, CliResult};
use clap::Args;
use indicatif::ProgressBar;
use numalab_evaluate::{Observer, Options, Resume, Step, StepRecord, StepStatus};
use numalab_schema::{ErrorClass, Origin};
use std::io::IsTerminal;
use std::path::PathBuf;

/// `numalab evaluate`.
#[derive(Debug, Args)]
#[command(
    after_help = "A rerun with the same --out folder resumes where the last run stopped: it runs the \
steps that are missing, failed, or were left out with --skip before. It must use the same --quick \
as the run that created the folder; --fresh moves earlier results aside and starts over."
)]
pub struct EvaluateArgs {
    /// Short measurements (about a minute on a small machine).
    #[arg(long)]
    pub quick: bool,
    /// Output folder: results.jsonl (journal), summary.json, report.html.
    #[arg(long, value_name = "DIR", default_value = "numalab-out")]
    pub out: PathBuf,
    /// Steps to leave out (comma-separated step ids; see --list-steps).
    #[arg(long, value_delimiter = ',', value_name = "STEP")]
    pub skip: Vec<String>,
    /// Print the steps and exit.
    #[arg(long)]
    pub list_steps: bool,
    /// Start over: move the results already in --out into DIR/replaced-TIME/ (nothing
    /// is deleted), then run every step.
    #[arg(long)]
    pub fresh: bool,
    #[command(flatten)]
    pub bmc: crate::power::BmcArgs,
}

/// The progress bar, or one line per step on stderr (and a line a minute of the step's
/// progress) when there is no terminal (a log, CI, ssh without a tty): never silent.
struct Bar {
    bar: ProgressBar,
    lines: bool,
}

impl Observer for Bar {
    fn step_started(&mut self, index: usize, total: usize, step: &Step) {
        self.bar.set_message(step.title);
        if self.lines {
            eprintln!("numalab: {}", step.start_line(index, total));
        }
    }

    fn step_finished(&mut self, record: Option<&StepRecord>) {
        if let Some(r) = record {
            if let StepStatus::Failed { error } = &r.outcome {
                self.bar
                    .suspend(|| eprintln!("numalab: step {} failed: {error}", r.step));
            }
            if self.lines {
                eprintln!("numalab: {}", r.log_line());
            }
        }
        self.bar.inc(1);
    }

    fn message(&mut self, text: &str) {
        self.bar.set_message(text.to_string());
    }

    fn note(&mut self, text: &str) {
        self.bar.suspend(|| eprintln!("numalab: note: {text}"));
    }
}

/// Runs `numalab evaluate`.
pub fn run(args: EvaluateArgs) -> CliResult {
    let all = numalab_evaluate::steps();
    if args.list_steps {
        for s in &all {
            println!("{:<10} {}", s.id, s.title);
        }
        return Ok(());
    }
    let opts = Options {
        quick: args.quick,
        skip: args.skip.clone(),
        command: numalab_schema::collect::this_command(),
    };
    opts.check()?;
    if args.fresh {
        if let Some(aside) = numalab_evaluate::set_aside(&args.out)? {
            eprintln!(
                "numalab: --fresh: earlier results moved to {}",
                aside.display()
            );
        }
    }
    let bmc = args.bmc.open()?;
    let (machine, placer) = numalab_topo::live_with_placer()?;
    let output = OutputArgs {
        json: false,
        out: Some(args.out.clone()),
    };
    let host = numalab_topo::system::host(&machine);
    let mut rec = Recorder::new(&output, opts.config(), Origin::Measured, host)?;
    if let Some(previous) = &rec.previous_envelope {
        numalab_evaluate::check_same_options(&args.out, args.quick, previous)?;
    }
    let resume = Resume::from_previous(&rec.previous);
    if rec.previous_envelope.is_some() {
        for line in resume.said(&args.out, rec.previous.len(), &args.skip) {
            eprintln!("numalab: {line}");
        }
    }
    let bar = crate::output::bar(
        all.len() as u64,
        "{elapsed:>4} [{bar:30}] {pos}/{len} {msg}",
    );
    rec.set_progress(Some(bar.clone()));
    let lines = !std::io::stderr().is_terminal();
    let mut observer = Bar {
        bar: bar.clone(),
        lines,
    };
    let (outcome, power) = {
        let mut sink = ProgressSink::with_message(&mut rec, &bar, lines);
        numalab_evaluate::power::run_with_power(
            bmc,
            &opts,
            &resume,
            &machine,
            &placer,
            &mut sink,
            &mut observer,
        )
    };
    power.iter().for_each(|(key, w)| rec.note(key, w)); // the BMC's, folded with the rest
    bar.finish_and_clear();
    let finished = rec.finish(); // the folded warnings said and recorded, the journal closed
    let outcome = outcome?;
    finished?;
    if let Some(msg) = outcome.interruption(&args.out) {
        return Err(CliError::new(ErrorClass::Interrupted, msg));
    }
    // Everything below is rendered from the journal alone, as `numalab report` would.
    let written = numalab_evaluate::write_outputs(&args.out)?;
    written.warnings.iter().for_each(crate::recorder::warn);
    for s in &written.steps {
        println!("{:<10} {}", s.step, s.outcome.describe(": ", ""));
    }
    if !written.findings.is_empty() {
        println!("\nfindings:");
        for f in &written.findings {
            let word = format!("{:<7}", f.severity.word());
            let tag = match f.severity.colour() {
                Some(code) => crate::output::paint(code, &word),
                None => word,
            };
            println!("  {tag} {}", numalab_report::table::plain(&f.text));
        }
    }
    println!(
        "\nresults in {}: results.jsonl, summary.json, report.html",
        args.out.display()
    );
    if let Some(msg) = outcome.failures() {
        return Err(CliError::new(ErrorClass::Partial, msg));
    }
    Ok(())
}
