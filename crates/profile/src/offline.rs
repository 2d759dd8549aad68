//! The offline modes of `numalab profile`: a file recorded elsewhere imported, or two
//! profiles compared, each into one record under the key this crate gives it.

use crate::request::{Cpus, Request};
use crate::{Keys, Problem};
use numalab_pmu::{compare, profile};
use numalab_schema::{Origin, Record};
use std::path::Path;

/// The record an imported file made.
#[derive(Debug)]
pub enum Imported {
    /// `perf stat` counts: a `pmu.profile` record.
    Profile(Record),
    /// `perf script` data-address samples: a `pmu.memaccess` record.
    Memaccess(Record),
}

/// `--compare BASE NEW`: each a numalab output holding a profile or a `perf stat` file
/// (read with `--cpu-model`, else the catalog its events name, else this machine's), every
/// metric and count compared, the warnings of both kept.
pub fn compare(base: &Path, new: &Path, metrics: &str, cpus: Cpus) -> Result<Record, Problem> {
    let fallback = cpus.live.ok();
    let (b, mut warnings) =
        compare::load(base, cpus.given.clone(), fallback.clone(), metrics).map_err(Problem::of)?;
    let (n, mut more) = compare::load(new, cpus.given, fallback, metrics).map_err(Problem::of)?;
    let c = compare::compare(
        &b,
        &n,
        &base.display().to_string(),
        &new.display().to_string(),
    );
    warnings.append(&mut more);
    let key = Keys::compare(&c.base, &c.new);
    Ok(Record::new(key, Origin::Imported, &c).with_warnings(warnings))
}

/// `--import FILE`: `perf script` data-address samples when the file holds them
/// (recognised by content; `--slow`, `--regions` and `--same-machine` apply), else
/// `perf stat` counts. `--slow` and `--regions` are checked first either way.
pub fn import(path: &Path, req: &Request, cpus: Cpus) -> Result<Imported, Problem> {
    let analysis = req.analysis()?;
    let regions = req.regions()?;
    if let Some(text) = memory_sample_text(path) {
        let opts = numalab_memaccess::ImportOptions {
            path: Some(path.display().to_string()),
            analysis,
            regions,
            same_machine: req.same_machine,
            ..Default::default()
        };
        let r = numalab_memaccess::import(&text, &opts).map_err(Problem::of)?;
        let key = Keys::memaccess_import(path);
        return Ok(Imported::Memaccess(Record::new(key, Origin::Imported, &r)));
    }
    let p = profile::from_import(
        path,
        cpus.given,
        cpus.live.ok(),
        &req.metric_set(),
        &req.events(),
    )
    .map_err(Problem::of)?;
    Ok(Imported::Profile(p.into_record(Keys::import(path))))
}

/// The text of an imported file when it holds `perf script` data-address samples
/// (recognised by content); None for the perf stat files `from_import` reads.
fn memory_sample_text(path: &Path) -> Option<String> {
    // Read as every import is (regular files only, bounded); a file that cannot be read
    // so is left to the perf stat reader, which says why in its own words.
    let text = numalab_schema::input::read_to_string(
        path,
        "`perf stat` output or `perf script` data-address samples",
        numalab_schema::input::PERF,
    )
    .ok()?;
    numalab_memaccess::looks_like(&text).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_pmu::catalog;
    use numalab_schema::ErrorClass;
    use std::path::PathBuf;

    fn fixture(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel)
    }

    fn n1() -> Cpus {
        Cpus {
            given: Some(catalog::resolve_model("ampere-altra").unwrap()),
            live: Err(Problem::new(ErrorClass::Unsupported, "no catalog here")),
        }
    }

    #[test]
    fn perf_stat_and_perf_script_files_make_their_own_records() {
        let stat = fixture("tests/fixtures/pmu/perf-stat/n1-pointer-chase.csv");
        let req = Request {
            import: Some(stat.clone()),
            ..Default::default()
        };
        let Imported::Profile(r) = import(&stat, &req, n1()).unwrap() else {
            panic!("a perf stat file is counts");
        };
        assert_eq!(r.key, Keys::import(&stat));
        assert_eq!(r.kind, "pmu.profile");
        let script = fixture("crates/memaccess/tests/fixtures/graphwalk.script");
        let Imported::Memaccess(r) = import(&script, &req, n1()).unwrap() else {
            panic!("a perf script file is data-address samples");
        };
        assert_eq!(r.key, Keys::memaccess_import(&script));
        assert_eq!(
            (r.kind.as_str(), r.origin),
            ("pmu.memaccess", Origin::Imported)
        );
        let slow = Request {
            slow: Some(0.0),
            ..req
        };
        let e = import(&script, &slow, n1()).unwrap_err();
        assert_eq!(e.class, ErrorClass::Usage);
    }

    #[test]
    fn a_comparison_is_keyed_by_its_two_labels() {
        let base = fixture("tests/fixtures/pmu/perf-stat/n1-pointer-chase.csv");
        let new = fixture("tests/fixtures/pmu/perf-stat/n1-pointer-chase-prefetch.csv");
        let r = compare(&base, &new, "first-pass", n1()).unwrap();
        assert_eq!(
            r.key,
            Keys::compare(&base.display().to_string(), &new.display().to_string())
        );
        assert_eq!(r.origin, Origin::Imported);
        let missing = fixture("tests/fixtures/pmu/perf-stat/no-such.csv");
        assert!(compare(&base, &missing, "first-pass", n1()).is_err());
    }
}
