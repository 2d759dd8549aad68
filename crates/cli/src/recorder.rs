//! How every measuring or modeling command delivers its records: appended to a journal
//! (`--out DIR`, resumable) as soon as each exists, and printed as one JSON bundle with
//! `--json`. Commands build [`Record`]s; this module owns the envelope and the files.

use crate::{CliError, CliResult};
use clap::Args;
use numalab_schema::journal::Journal;
use numalab_schema::record::{now_utc, Host, Tool, SCHEMA_VERSION};
use numalab_schema::sink::{Sink, SinkError};
use numalab_schema::{Bundle, Envelope, ErrorClass, Origin, Record, Warning};
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

/// Collects a command's records.
pub struct Recorder {
    envelope: Envelope,
    journal: Option<Journal>,
    records: Vec<Record>,
    json: bool,
    /// Records found in the journal from an earlier run (resume).
    pub previous: Vec<Record>,
    /// The envelope of the run that created the journal, when this run resumes one.
    pub previous_envelope: Option<Envelope>,
    /// Warnings already shown on stderr: each is shown once per run (a matrix of 64
    /// cells would otherwise repeat the same one 64 times); records keep them all.
    shown: std::collections::HashSet<String>,
    progress: Option<indicatif::ProgressBar>,
}

impl Recorder {
    /// Starts a recorder. `config` is the command's effective configuration.
    pub fn new(
        output: &OutputArgs,
        config: serde_json::Value,
        origin: Origin,
        host: Host,
    ) -> Result<Self, CliError> {
        let envelope = Envelope {
            schema_version: SCHEMA_VERSION,
            tool: Tool::this(env!("CARGO_PKG_VERSION")),
            created_utc: now_utc(),
            command: std::env::args_os()
                .map(|a| numalab_schema::text::os_text(&a))
                .collect(),
            config,
            origin,
            host,
        };
        let mut previous = Vec::new();
        let mut previous_envelope = None;
        let journal = match &output.out {
            Some(dir) => {
                let opened = Journal::open(dir, &envelope)?;
                if opened.resumed
                    && opened.envelope.host.topology_hash != envelope.host.topology_hash
                {
                    return Err(CliError::new(
                        ErrorClass::Usage,
                        format!(
                            "{}: holds results of another machine (topology {} here {}); choose another --out folder",
                            dir.display(),
                            opened.envelope.host.topology_hash,
                            envelope.host.topology_hash
                        ),
                    ));
                }
                for w in &opened.warnings {
                    eprintln!("numalab: warning: {w}");
                }
                previous = opened.records;
                if opened.resumed {
                    previous_envelope = Some(opened.envelope);
                }
                Some(opened.journal)
            }
            None => None,
        };
        Ok(Recorder {
            envelope,
            journal,
            records: Vec::new(),
            json: output.json,
            previous,
            previous_envelope,
            shown: Default::default(),
            progress: None,
        })
    }

    /// Whether a record with this key was already written by an earlier run.
    pub fn done(&self, key: &str) -> bool {
        self.journal.as_ref().is_some_and(|j| j.contains(key))
    }

    /// The envelope.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// The records of earlier runs of this journal and of this run, one per key (this
    /// run's when both have it), in the order keys first appeared.
    pub fn latest(&self) -> Vec<Record> {
        let mut order: Vec<&str> = Vec::new();
        let mut by_key: std::collections::HashMap<&str, &Record> = Default::default();
        for r in self.previous.iter().chain(&self.records) {
            if by_key.insert(r.key.as_str(), r).is_none() {
                order.push(r.key.as_str());
            }
        }
        order.iter().map(|k| by_key[k].clone()).collect()
    }

    /// Records pushed in this run.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Adds a record: written to the journal at once (if any), kept for `--json`.
    pub fn push(&mut self, record: Record) -> CliResult {
        for w in &record.warnings {
            if !self.json && self.shown.insert(w.to_string()) {
                match &self.progress {
                    // Printed above the bar, not through it.
                    Some(bar) => bar.suspend(|| eprintln!("numalab: warning: {w}")),
                    None => eprintln!("numalab: warning: {w}"),
                }
            }
        }
        if let Some(j) = &mut self.journal {
            j.append(&record)?;
        }
        self.records.push(record);
        Ok(())
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

    /// Closes the journal (its last sync, for a run of a second or more) and prints the
    /// bundle when `--json` was given. Returns the bundle either way.
    pub fn finish(self) -> Result<Bundle, CliError> {
        if let Some(j) = self.journal {
            j.close()?;
        }
        let bundle = Bundle {
            schema_version: SCHEMA_VERSION,
            envelope: self.envelope,
            records: self.records,
        };
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

/// The recorder is the command line's [`Sink`]: records go to the journal at once,
/// and an earlier run's records (same `--out` folder) make their cells skip.
impl Sink for Recorder {
    fn done(&self, key: &str) -> bool {
        Recorder::done(self, key)
    }

    fn previous(&self, key: &str) -> Option<Record> {
        if !Recorder::done(self, key) {
            return None;
        }
        self.previous.iter().find(|r| r.key == key).cloned()
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
    /// The message of a bar drawn by someone else (`evaluate`'s overall bar).
    Message(&'a indicatif::ProgressBar),
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

    /// A sink writing its progress into another bar's message.
    pub fn with_message(rec: &'a mut Recorder, bar: &'a indicatif::ProgressBar) -> Self {
        ProgressSink {
            rec,
            progress: Progress::Message(bar),
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
            Progress::Message(bar) => bar.set_message(format!("{label} {done}/{total}")),
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

/// Prints a warning on stderr.
pub fn warn(w: &Warning) {
    eprintln!("numalab: warning: {w}");
}
