//! `numalab home map --import`, `home compare` and `home conflicts`: slice hashes in the
//! field's published form (base sequence and permutation select masks), brought in from
//! per-page maps or tables, written out as tables, compared and searched for conflicts.
//! The work is in `numalab_home::{tables, slicefit, import, conflicts}`; this module
//! parses flags, records and prints. Also the progress bar every `home` command shows.

use crate::recorder::{OutputArgs, Recorder};
use crate::{CliError, CliResult};
use clap::Args;
use numalab_home::conflicts::{analyse, ConflictOptions};
use numalab_home::import::{self, Imported};
use numalab_home::keys;
use numalab_home::map::Watch;
use numalab_records::home::slices::SliceHash;
use numalab_schema::record::Host;
use numalab_schema::text::path_text;
use numalab_schema::{ErrorClass, Origin, Record};
use std::path::{Path, PathBuf};

/// A progress bar over the reads, stopped by Ctrl-C.
pub struct Bar {
    bar: indicatif::ProgressBar,
}

impl Bar {
    /// A bar, hidden when `quiet` (`--json`).
    pub fn new(quiet: bool) -> Bar {
        let bar = crate::output::bar(0, "{spinner} [{elapsed}] {msg} {bar:30} {pos}/{len}");
        if quiet {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        Bar { bar }
    }
}

impl Watch for Bar {
    fn step(&mut self, what: &str, done: u64, total: u64) {
        self.bar.set_message(what.to_string());
        self.bar.set_length(total);
        self.bar.set_position(done);
    }
    fn stop(&self) -> bool {
        numalab_schema::interrupt::requested()
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// `numalab home compare`.
#[derive(Debug, Args)]
#[command(
    after_help = "A and B: per-page maps (a folder of PADDR_0x<base>.map), a table pair (BaseSequence_*.tbl, its PermSelectMasks_ twin beside it), or numalab's home.map / home.hash output.\n\nExamples:\n  numalab home compare counters/ home-out/\n  numalab home compare BaseSequence_SKX_18-slice.tbl imported/"
)]
pub struct CompareArgs {
    /// The first map.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The second map.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `numalab home conflicts`.
#[derive(Debug, Args)]
#[command(
    after_help = "HASH: a table pair (BaseSequence_*.tbl), per-page maps, or numalab's home.map / home.hash output.\n\nExamples:\n  numalab home conflicts tests/fixtures/slice-hash/BaseSequence_SKX_24-slice.tbl\n  numalab home conflicts home-out/ --max-pages 64 --json"
)]
pub struct ConflictsArgs {
    /// The hash.
    #[arg(value_name = "HASH")]
    pub hash: PathBuf,
    /// Page size of the buffers tried.
    #[arg(long, value_name = "SIZE", default_value = "2MiB")]
    pub page_size: String,
    /// Largest buffer tried, pages (powers of two from 1 up to it).
    #[arg(long, value_name = "N", default_value_t = ConflictOptions::default().max_pages)]
    pub max_pages: u32,
    /// Runs of contiguous pages tried per combination.
    #[arg(long, value_name = "N", default_value_t = ConflictOptions::default().runs)]
    pub runs: usize,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The recorder of a run on files rather than a machine (host `imported`).
fn recorder(
    output: &OutputArgs,
    config: serde_json::Value,
    origin: Origin,
) -> Result<Recorder, CliError> {
    Recorder::new(output, config, origin, Host::unknown("imported"))
}

/// Finishes the bundle and prints the home sections (unless `--json`).
pub fn print(rec: Recorder) -> CliResult {
    rec.finish_and_print(numalab_report::sections::home::sections)
}

/// Writes the published table pair of `hash` into `dir` (created if missing).
pub fn export_tables(hash: Option<&SliceHash>, dir: &Path) -> CliResult {
    for (path, bytes) in numalab_home::tables::export(hash, dir)? {
        crate::output::write_file(&path, &bytes, "a slice hash table", "--export-tables")?;
    }
    Ok(())
}

/// `home map --import PATH`.
pub fn run_import(path: &Path, export: Option<&Path>, output: &OutputArgs) -> CliResult {
    let config =
        serde_json::json!({ "import": path_text(path), "export_tables": export.map(path_text) });
    let mut rec = recorder(output, config, Origin::Imported)?;
    let record = import::import(path, &mut Bar::new(rec.json()))?;
    if numalab_schema::interrupt::requested() {
        return Err(CliError::new(
            ErrorClass::Interrupted,
            "interrupted; nothing was recorded",
        ));
    }
    if let Some(dir) = export {
        export_tables(record.hash.as_ref(), dir)?;
    }
    rec.push(Record::new(keys::IMPORT_HASH, Origin::Imported, &record))?;
    print(rec)
}

/// `numalab home compare A B`.
pub fn run_compare(a: &CompareArgs) -> CliResult {
    let config = serde_json::json!({ "a": path_text(&a.a), "b": path_text(&a.b) });
    let mut rec = recorder(&a.output, config, Origin::Imported)?;
    let (an, bn) = (path_text(&a.a), path_text(&a.b));
    let ia: Imported = import::load(&a.a)?;
    let ib: Imported = import::load(&a.b)?;
    let record = import::compare(&ia, &an, &ib, &bn, &mut Bar::new(rec.json()))?;
    rec.push(Record::new(keys::COMPARE, Origin::Imported, &record))?;
    print(rec)
}

/// `numalab home conflicts HASH`.
pub fn run_conflicts(a: &ConflictsArgs) -> CliResult {
    let opts = ConflictOptions::from_flags(&a.page_size, a.max_pages, a.runs)?;
    let what = path_text(&a.hash);
    let config = serde_json::json!({ "hash": what, "page_size": a.page_size, "max_pages": a.max_pages, "runs": a.runs });
    let mut rec = recorder(&a.output, config, Origin::Modeled)?;
    let hash = {
        let mut bar = Bar::new(rec.json());
        let x = import::load(&a.hash)?;
        import::hash_of(&x, &what, &mut bar)?
    };
    let record = analyse(&hash, &what, &opts)?;
    rec.push(Record::new(keys::CONFLICTS, Origin::Modeled, &record))?;
    print(rec)
}
