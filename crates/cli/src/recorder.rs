//! How every measuring or modeling command delivers its records: appended to a journal
//! (`--out DIR`, resumable) as soon as each exists, and printed as one JSON bundle with
//! `--json`. Commands build [`Record`]s; this module owns the envelope and the files.

use crate::{CliError, CliResult};
use clap::Args;
use indicatif::ProgressBar;
use numalab_records::warnings::FoldedWarnings;
use numalab_schema::collect::Collector;
use numalab_schema::record::Host;
use numalab_schema::sink::{ProgressLines, Sink, SinkError};
use numalab_schema::{Bundle, Envelope, Origin, Record, Warning};
use std::path::PathBuf;

/// Output options shared by measuring commands (flattened into their args).
#[derive(Debug, Clone, Args, Default)]
pub struct OutputArgs {
    /// Print the results as one JSON bundle (envelope + records) on stdout.
    #[arg(long)]
    pub json: bool,
    /// Append the records to DIR/results.jsonl as they are measured (created if needed;
    /// a rerun with the same DIR skips what is already there).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Collects a command's records ([`Collector`], read through `Deref`) and shows their
/// warnings on stderr.
pub struct Recorder {
    run: Collector,
    json: bool,
    /// Warnings shown on stderr: each code's first at once, its other messages folded
    /// into one line at the end ([`numalab_schema::fold`]); records keep them all.
    shown: numalab_schema::fold::Fold,
    progress: Option<indicatif::ProgressBar>,
}

impl std::ops::Deref for Recorder {
    type Target = Collector;
    fn deref(&self) -> &Collector {
        &self.run
    }
}

impl Recorder {
    /// Starts a recorder. `config` is the command's effective configuration.
    pub fn new(
        output: &OutputArgs,
        config: serde_json::Value,
        origin: Origin,
        host: Host,
    ) -> Result<Self, CliError> {
        let envelope = Envelope::of_this_process(env!("CARGO_PKG_VERSION"), config, origin, host);
        let (run, warnings) = Collector::open(output.out.as_deref(), envelope)?;
        warnings.iter().for_each(warn);
        Ok(Recorder {
            run,
            json: output.json,
            shown: Default::default(),
            progress: None,
        })
    }

    /// Adds a record: written to the journal at once (if any), kept for `--json`.
    pub fn push(&mut self, record: Record) -> CliResult {
        for w in &record.warnings {
            self.note(&record.key, w);
        }
        Ok(self.run.push(record)?)
    }

    /// A warning of `key` (a record's or not): its code's first shown now, the rest folded.
    pub fn note(&mut self, key: &str, w: &Warning) {
        if self.shown.note(key, w) && !self.json {
            match &self.progress {
                Some(bar) => bar.suspend(|| warn(w)),
                None => warn(w),
            }
        }
    }

    /// Warnings are printed above this progress bar instead of through it.
    pub fn set_progress(&mut self, bar: Option<indicatif::ProgressBar>) {
        self.progress = bar;
    }

    /// [`Recorder::finish`], then (without `--json`) the bundle's sections on the terminal.
    pub fn finish_and_print(self, sections: crate::output::SectionsOf) -> CliResult {
        let json = self.json;
        let bundle = self.finish()?;
        if !json {
            crate::output::print_sections(&bundle.envelope, bundle.records, sections);
        }
        Ok(())
    }

    /// Says the folded warnings (one line a code) and records them (`warnings.folded`),
    /// closes the journal and prints the bundle if `--json`; returns it either way.
    pub fn finish(mut self) -> Result<Bundle, CliError> {
        (!self.json).then(|| self.shown.folded().iter().for_each(warn));
        let origin = self.run.envelope().origin;
        let folded = FoldedWarnings::record(&self.shown, origin, |k| self.run.done(k));
        folded.map(|r| self.run.push(r)).transpose()?;
        let bundle = self.run.finish()?;
        if self.json {
            crate::output::print_json(&bundle)?;
        }
        Ok(bundle)
    }

    /// Whether output goes to stdout as JSON (commands then print no tables).
    pub fn json(&self) -> bool {
        self.json
    }
}

/// The recorder is the command line's [`Sink`]: the [`Collector`]'s, with warnings shown.
impl Sink for Recorder {
    fn done(&self, key: &str) -> bool {
        self.run.done(key)
    }

    fn previous(&self, key: &str) -> Option<Record> {
        Sink::previous(&self.run, key)
    }

    fn push(&mut self, record: Record) -> Result<(), SinkError> {
        Recorder::push(self, record).map_err(|e| SinkError(e.message))
    }
}

/// Where a probe's progress shows while the recorder takes its records.
pub enum Progress<'a> {
    /// A bar of its own on stderr, drawn at the first progress report and cleared by
    /// [`ProgressSink::finish`].
    Bar(Option<indicatif::ProgressBar>),
    /// The message of a bar drawn by someone else (`evaluate`'s), and lines if not a tty.
    Message(&'a ProgressBar, Option<ProgressLines>),
}

/// The recorder with a progress display: the sink every probe of the command line
/// writes to.
pub struct ProgressSink<'a> {
    rec: &'a mut Recorder,
    progress: Progress<'a>,
}

impl<'a> ProgressSink<'a> {
    /// A sink drawing its own bar.
    pub fn with_bar(rec: &'a mut Recorder) -> Self {
        ProgressSink {
            rec,
            progress: Progress::Bar(None),
        }
    }

    /// A sink writing its progress into another bar's message (and a line a minute).
    pub fn with_message(rec: &'a mut Recorder, bar: &'a ProgressBar, lines: bool) -> Self {
        ProgressSink {
            rec,
            progress: Progress::Message(bar, lines.then(ProgressLines::default)),
        }
    }

    /// Clears its own bar, if it drew one.
    pub fn finish(&mut self) {
        if let Progress::Bar(b) = &mut self.progress {
            if let Some(b) = b.take() {
                b.finish_and_clear();
            }
        }
    }
}

impl Sink for ProgressSink<'_> {
    fn done(&self, key: &str) -> bool {
        Sink::done(&*self.rec, key)
    }

    fn previous(&self, key: &str) -> Option<Record> {
        Sink::previous(&*self.rec, key)
    }

    fn push(&mut self, record: Record) -> Result<(), SinkError> {
        // The recorder prints warnings above a bar it knows of, suspending it; a bar
        // of our own is suspended here (suspending evaluate's bar here too would take
        // indicatif's lock twice and hang).
        if let Progress::Bar(Some(b)) = &self.progress {
            b.suspend(|| ());
        }
        Sink::push(&mut *self.rec, record)
    }

    fn progress(&mut self, label: &str, done: u64, total: u64) {
        match &mut self.progress {
            Progress::Message(bar, lines) => {
                bar.set_message(format!("{label} {done}/{total}"));
                if let Some(l) = lines.as_mut().and_then(|l| l.now(label, done, total)) {
                    eprintln!("numalab: {}", numalab_schema::text::message(&l));
                }
            }
            Progress::Bar(bar) => {
                let bar = bar.get_or_insert_with(|| {
                    crate::output::bar(total, "{msg:>16} [{bar:30}] {pos}/{len} {elapsed}")
                });
                bar.set_length(total);
                bar.set_message(label.to_string());
                bar.set_position(done);
            }
        }
    }
}

/// Prints a warning on stderr, made safe for the terminal as errors are.
pub fn warn(w: &impl std::fmt::Display) {
    eprintln!(
        "numalab: warning: {}",
        numalab_schema::text::message(&w.to_string())
    );
}
