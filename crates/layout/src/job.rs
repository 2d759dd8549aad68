//! One `layout infer` run, from its flags to its record: checked, read and prepared
//! before the search ([`InferJob::prepare`]), searched, then recorded.

use crate::draw::{self, Heat};
use crate::error::LayoutError;
use crate::flags::InferFlags;
use crate::infer::{self, Inference, Options, Problem};
use crate::input::{self, Loaded};
use crate::record::{self, InferenceRecord};
use crate::setup::{self, Prepared};
use numalab_schema::record::Host;
use numalab_schema::Origin;
use std::path::Path;

/// An inference ready to search: the matrix read, the mesh built and the search problem
/// checked, with what the run records about itself.
#[derive(Debug, Clone)]
pub struct InferJob {
    flags: InferFlags,
    opts: Options,
    heat: Option<Heat>,
    loaded: Loaded,
    prepared: Prepared,
    /// The run's configuration (the flags, with the grid's cores per tile).
    pub config: serde_json::Value,
    /// The origin of the matrix's numbers.
    pub origin: Origin,
    /// The envelope's host: `layout:PATH` of the matrix.
    pub host: Host,
}

impl InferJob {
    /// Checks the flags (before reading anything), reads the matrix at `path`, checks
    /// that the heatmap `heat` fits it, builds the mesh and checks the search's sizes and
    /// constraints: every refusal comes before the search.
    pub fn prepare(
        flags: InferFlags,
        path: &Path,
        heat: Option<Heat>,
    ) -> Result<InferJob, LayoutError> {
        let (setup, opts) = flags.check()?;
        let loaded = input::load(path)?;
        if let Some(h) = &heat {
            draw::check_heat(h, &loaded.measured)?;
        }
        let prepared = setup::prepare(&setup, &loaded)?;
        Problem::new(&prepared.grid, &loaded.measured, &prepared.groups)?;
        Ok(InferJob {
            config: flags.config(prepared.grid.capacity),
            origin: input::origin_of(&loaded.origin),
            host: record::file_host("layout", path),
            flags,
            opts,
            heat,
            loaded,
            prepared,
        })
    }

    /// Runs the search; `progress` hears the number of restarts done.
    pub fn search(&self, progress: &(dyn Fn(usize) + Sync)) -> Result<Inference, LayoutError> {
        let p = &self.prepared;
        let problem = Problem::new(&p.grid, &self.loaded.measured, &p.groups)?;
        infer::infer(&problem, &self.opts, progress)
    }

    /// The key and the `layout.inference` record of `inf`, its notes those of the input
    /// and the mesh, then the search's.
    pub fn record(&self, inf: &Inference) -> (String, InferenceRecord) {
        let p = &self.prepared;
        let mut notes = p.notes.clone();
        notes.extend(record::inference_notes(inf, self.flags.restarts));
        let r = record::inference_record(
            &self.flags.input,
            &self.loaded.origin,
            &p.grid,
            p.preset.clone(),
            &self.loaded.measured,
            inf,
            &p.groups,
            &self.opts,
            notes,
        );
        (record::inference_key(&self.flags.input), r)
    }

    /// How the run ends once `inf` is recorded: an interrupted search (Ctrl-C) is an
    /// interruption that says the best placement so far was kept.
    pub fn outcome(&self, inf: &Inference) -> Result<(), LayoutError> {
        if inf.interrupted {
            return Err(LayoutError::Stopped(
                "interrupted; the best placement of the restarts that ran was recorded".into(),
            ));
        }
        Ok(())
    }

    /// The floorplan of `r` as SVG, coloured by the heatmap asked for.
    pub fn svg(&self, r: &InferenceRecord) -> Result<String, LayoutError> {
        draw::floorplan(r, &self.loaded.measured, self.heat.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(input: &str, geometry: &str, restarts: usize) -> InferFlags {
        InferFlags {
            input: input.into(),
            geometry: Some(geometry.into()),
            preset: None,
            routing: None,
            hop_cost: None,
            cores_per_tile: None,
            disabled: None,
            tile_groups: true,
            seed: 1,
            restarts,
            sweeps: 50,
        }
    }

    #[test]
    fn flags_are_refused_before_the_matrix_is_read() {
        let e = InferJob::prepare(flags("absent.csv", "2x2", 0), Path::new("absent.csv"), None)
            .unwrap_err();
        assert_eq!(e.to_string(), "--restarts must be at least 1");
    }

    #[test]
    fn a_small_matrix_is_searched_and_recorded_under_its_input() {
        let p = std::env::temp_dir().join(format!("numalab-job-{}.csv", std::process::id()));
        std::fs::write(&p, ",,,\n10,,,\n10,20,,\n20,10,10,\n").unwrap();
        let name = p.display().to_string();
        let job = InferJob::prepare(flags(&name, "2x2", 2), &p, None).unwrap();
        assert_eq!(job.host, Host::unknown(format!("layout:{name}")));
        assert_eq!(job.config["input"], name.as_str());
        assert_eq!(job.config["cores_per_tile"], 1);
        let inf = job.search(&|_| {}).unwrap();
        let (key, r) = job.record(&inf);
        assert_eq!(key, format!("layout/inference/{name}"));
        assert_eq!(r.cores.len(), 4);
        assert!(job.svg(&r).unwrap().starts_with("<svg"));
        job.outcome(&inf).unwrap();
        let cut = Inference {
            interrupted: true,
            ..inf
        };
        let e = job.outcome(&cut).unwrap_err();
        assert_eq!(
            numalab_schema::Classify::class(&e),
            numalab_schema::ErrorClass::Interrupted
        );
        assert_eq!(
            e.to_string(),
            "interrupted; the best placement of the restarts that ran was recorded"
        );
        std::fs::remove_file(&p).unwrap();
    }
}
