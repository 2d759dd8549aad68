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
use numalab_home::map::Watch;
use numalab_records::home::slices::SliceHash;
use numalab_schema::record::Host;
use numalab_schema::text::path_text;
use numalab_schema::{units, ErrorClass, Origin, Record};
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
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_pages: u32,
    /// Runs of contiguous pages tried per combination.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub runs: usize,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

fn input(e: numalab_home::HomeError) -> CliError {
    CliError::from(e)
}

/// Finishes the bundle and prints the home sections (unless `--json`).
pub fn print(rec: Recorder) -> CliResult {
    rec.finish_and_print(numalab_report::sections::home::sections)
}

/// Writes the published table pair of `hash` into `dir` (created if missing).
pub fn export_tables(hash: Option<&SliceHash>, dir: &Path) -> CliResult {
    let h = hash.ok_or_else(|| {
        CliError::new(
            ErrorClass::Usage,
            "--export-tables: there is no hash in the published form to export (see the record's notes)",
        )
    })?;
    let files = numalab_home::tables::table_files(h).map_err(input)?;
    std::fs::create_dir_all(dir).map_err(|e| {
        CliError::new(
            ErrorClass::Runtime,
            format!(
                "--export-tables {}: cannot create the folder: {}",
                path_text(dir),
                numalab_schema::input::io_reason(&e)
            ),
        )
    })?;
    for (name, bytes) in files {
        crate::output::write_file(
            &dir.join(name),
            &bytes,
            "a slice hash table",
            "--export-tables",
        )?;
    }
    Ok(())
}

/// `home map --import PATH`.
pub fn run_import(path: &Path, export: Option<&Path>, output: &OutputArgs) -> CliResult {
    let config =
        serde_json::json!({ "import": path_text(path), "export_tables": export.map(path_text) });
    let mut rec = Recorder::new(output, config, Origin::Imported, Host::unknown("imported"))?;
    let record = {
        let mut bar = Bar::new(rec.json());
        import::import(path, &mut bar).map_err(input)?
    };
    if numalab_schema::interrupt::requested() {
        return Err(CliError::new(
            ErrorClass::Interrupted,
            "interrupted; nothing was recorded",
        ));
    }
    if let Some(dir) = export {
        export_tables(record.hash.as_ref(), dir)?;
    }
    rec.push(Record::new(
        numalab_home::keys::IMPORT_HASH,
        Origin::Imported,
        &record,
    ))?;
    print(rec)
}

/// `numalab home compare A B`.
pub fn run_compare(a: &CompareArgs) -> CliResult {
    let config = serde_json::json!({ "a": path_text(&a.a), "b": path_text(&a.b) });
    let mut rec = Recorder::new(
        &a.output,
        config,
        Origin::Imported,
        Host::unknown("imported"),
    )?;
    let (an, bn) = (path_text(&a.a), path_text(&a.b));
    let ia: Imported = import::load(&a.a).map_err(input)?;
    let ib: Imported = import::load(&a.b).map_err(input)?;
    let record = {
        let mut bar = Bar::new(rec.json());
        import::compare(&ia, &an, &ib, &bn, &mut bar).map_err(input)?
    };
    rec.push(Record::new(
        numalab_home::keys::COMPARE,
        Origin::Imported,
        &record,
    ))?;
    print(rec)
}

/// `numalab home conflicts HASH`.
pub fn run_conflicts(a: &ConflictsArgs) -> CliResult {
    let page = units::parse_bytes(&a.page_size).map_err(|e| {
        CliError::new(
            ErrorClass::Usage,
            format!("--page-size {:?}: {e}", a.page_size),
        )
    })?;
    if !page.is_power_of_two() || page < 4096 {
        return Err(CliError::new(
            ErrorClass::Usage,
            format!(
                "--page-size {}: give a power of two of 4KiB or more",
                a.page_size
            ),
        ));
    }
    if a.max_pages == 0 || a.max_pages > 4096 || a.runs == 0 {
        return Err(CliError::new(
            ErrorClass::Usage,
            "--max-pages must be from 1 to 4096 and --runs at least 1",
        ));
    }
    let what = path_text(&a.hash);
    let config = serde_json::json!({ "hash": what, "page_size": a.page_size, "max_pages": a.max_pages, "runs": a.runs });
    let mut rec = Recorder::new(
        &a.output,
        config,
        Origin::Modeled,
        Host::unknown("imported"),
    )?;
    let hash = {
        let mut bar = Bar::new(rec.json());
        let x = import::load(&a.hash).map_err(input)?;
        import::hash_of(&x, &what, &mut bar).map_err(input)?
    };
    let opts = ConflictOptions {
        page_bytes: page,
        max_pages: a.max_pages,
        runs: a.runs,
        ..ConflictOptions::default()
    };
    let record = analyse(&hash, &what, &opts).map_err(input)?;
    rec.push(Record::new(
        numalab_home::keys::CONFLICTS,
        Origin::Modeled,
        &record,
    ))?;
    print(rec)
}
