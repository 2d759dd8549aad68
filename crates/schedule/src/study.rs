//! One schedule study from its inputs: the cores it may use (a model's or this machine's) and the plan record built from the mix and its history.

use crate::campaign;
use crate::history::{self, RuntimeModel};
use crate::mix::Mix;
use crate::plan::{self, HomeAffinity, Predictor, Resources};
use crate::record::PlanRecord;
use crate::run;
use numalab_harness::plan::{cpu_order, Placement};
use numalab_layout::affinity::CostMatrix;
use numalab_layout::record::InferenceRecord;
use numalab_layout::LayoutError;
use numalab_model::Model;
use numalab_schema::record::Host;
use numalab_schema::{Bundle, Classify, ErrorClass, Machine, Origin, Record, Warning};
use numalab_topo::TopoError;
use std::path::Path;

/// The cores of a modeled machine ([`run::model_resources`]); unless `home_distance` is
/// `None`, the optimized schedule enforces home affinity within that many hops using the
/// model's own address map.
pub fn modeled_resources(model: &Model, home_distance: Option<u32>) -> Resources {
    let mut r = run::model_resources(model);
    r.home = home_distance.map(|distance| HomeAffinity {
        distance,
        source: format!("the address map of model {}", model.label),
        map_path: None,
    });
    r
}

/// The cores of this machine a schedule may use: `cpus` (ascending), their topology-compact
/// order, their NUMA nodes, the floorplan's latencies when one is given and the home map
/// to enforce, described as "this machine".
pub fn live_resources(
    machine: &Machine,
    cpus: Vec<u32>,
    distance: Option<CostMatrix>,
    home: Option<HomeAffinity>,
) -> Resources {
    let compact: Vec<u32> = cpu_order(machine, Placement::Compact)
        .into_iter()
        .filter(|c| cpus.contains(c))
        .collect();
    let node_of = machine
        .pus
        .iter()
        .filter_map(|p| p.numa_node.map(|n| (p.os_index, n)))
        .collect();
    Resources {
        cpus,
        node_of,
        compact,
        distance,
        source: "this machine".into(),
        home,
    }
}

/// Where a study's schedules go: a modeled machine or this one.
pub enum Target<'a> {
    /// A model preset (`NAME[:VARIANT,...]`); unless `home_distance` is `None`, the
    /// optimized schedule enforces home affinity within that many hops with the model's
    /// own address map ([`modeled_resources`]).
    Model {
        /// The preset.
        preset: &'a str,
        /// Home affinity, hops.
        home_distance: Option<u32>,
    },
    /// This machine ([`live_resources`]).
    Live {
        /// A CPU selection (`0-15`, `node:0`); every PU without one.
        cpus: Option<&'a str>,
        /// A floorplan bundle (`numalab layout infer --out DIR`), [`floorplan_costs`].
        layout: Option<&'a Path>,
        /// A home map of this machine whose homes the optimized schedule keeps within
        /// `home_distance` hops of each task's cores.
        home_map: Option<&'a Path>,
        /// Home affinity, hops.
        home_distance: u32,
        /// Why a home map cannot give affinity here, if it cannot (the home crate's
        /// check of the map against this machine).
        check_map: &'a dyn Fn(&Path) -> Result<(), String>,
    },
}

/// The cores of a study and what they are.
pub struct Cores {
    /// The cores the schedules may use.
    pub resources: Resources,
    /// The machine they belong to, as records name it.
    pub host: Host,
    /// The model, when the target is one.
    pub model: Option<Model>,
    /// Modeled or measured.
    pub origin: Origin,
}

/// Why a study's cores could not be described: this machine's topology or the CPU
/// selection, or the model, the floorplan or the home map.
#[derive(Debug)]
pub enum CoresError {
    /// The topology or the CPU selection.
    Topo(TopoError),
    /// The model, the floorplan or the home map.
    Layout(LayoutError),
}

impl std::fmt::Display for CoresError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CoresError::Topo(e) => e.fmt(f),
            CoresError::Layout(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CoresError {}

impl Classify for CoresError {
    fn class(&self) -> ErrorClass {
        match self {
            CoresError::Topo(e) => e.class(),
            CoresError::Layout(e) => e.class(),
        }
    }
}

impl From<TopoError> for CoresError {
    fn from(e: TopoError) -> Self {
        CoresError::Topo(e)
    }
}

impl From<LayoutError> for CoresError {
    fn from(e: LayoutError) -> Self {
        CoresError::Layout(e)
    }
}

/// The cores of `target`: a model loaded from its preset, or this machine's topology
/// with the CPU selection resolved, the floorplan's latencies read and the home map
/// checked (an input error naming `--layout` or `--home-map` otherwise).
pub fn cores(target: Target) -> Result<Cores, CoresError> {
    match target {
        Target::Model {
            preset,
            home_distance,
        } => {
            let m = Model::load(preset, &[]).map_err(LayoutError::from)?;
            Ok(Cores {
                resources: modeled_resources(&m, home_distance),
                host: numalab_model::machine::host(&m),
                model: Some(m),
                origin: Origin::Modeled,
            })
        }
        Target::Live {
            cpus,
            layout,
            home_map,
            home_distance,
            check_map,
        } => {
            let machine = numalab_topo::live()?;
            let cpus = match cpus {
                Some(t) => numalab_topo::select::CpuSelection::parse(t)?.resolve(&machine)?,
                None => machine.pu_ids(),
            };
            let distance = match layout {
                Some(l) => {
                    let what = format!("--layout {}", l.display());
                    let (b, _) = numalab_schema::journal::read_bundle(l)
                        .map_err(|e| LayoutError::input(&what, e.to_string()))?;
                    Some(floorplan_costs(&b, &what, &cpus)?)
                }
                None => None,
            };
            let home = match home_map {
                Some(p) => Some(home_affinity(p, home_distance, check_map)?),
                None => None,
            };
            Ok(Cores {
                resources: live_resources(&machine, cpus, distance, home),
                host: numalab_topo::system::host(&machine),
                model: None,
                origin: Origin::Measured,
            })
        }
    }
}

/// The home affinity of a home map of this machine, within `distance` hops, once
/// `check_map` accepts it; an input error naming `--home-map PATH` otherwise.
pub fn home_affinity(
    path: &Path,
    distance: u32,
    check_map: &dyn Fn(&Path) -> Result<(), String>,
) -> Result<HomeAffinity, LayoutError> {
    check_map(path).map_err(|m| LayoutError::input(format!("--home-map {}", path.display()), m))?;
    Ok(HomeAffinity {
        distance,
        source: format!("home map {}", path.display()),
        map_path: Some(path.display().to_string()),
    })
}

/// The first of `cpus` that the floorplan does not place: the schedules could not use its
/// latencies, so such a selection is refused.
pub fn outside_floorplan(costs: &CostMatrix, cpus: &[u32]) -> Option<u32> {
    cpus.iter().copied().find(|x| !costs.cpus.contains(x))
}

/// The latencies between `cpus` from a floorplan bundle (`numalab layout infer --out DIR`,
/// its last `layout.inference` record), named `what` in errors: an input error when the
/// bundle has no inference or the floorplan lacks one of `cpus`.
pub fn floorplan_costs(
    bundle: &Bundle,
    what: &str,
    cpus: &[u32],
) -> Result<CostMatrix, LayoutError> {
    let inference = bundle
        .records_of::<InferenceRecord>()
        .into_iter()
        .last()
        .map(|x| x.1)
        .ok_or_else(|| {
            LayoutError::input(
                what,
                "no layout.inference record; run `numalab layout infer --out DIR`",
            )
        })?;
    let costs = CostMatrix::from_layout(&inference)?;
    if let Some(x) = outside_floorplan(&costs, cpus) {
        return Err(LayoutError::input(
            what,
            format!("CPU {x} is not in the floorplan; restrict --cpus to its CPUs"),
        ));
    }
    Ok(costs)
}

/// The bundles of earlier runs in the `--history` folders (`numalab scale --out DIR`),
/// each bundle's warnings handed to `warn`; an input error naming the folder that is not
/// such a bundle.
pub fn history_bundles(
    dirs: &[std::path::PathBuf],
    warn: &mut dyn FnMut(&Warning),
) -> Result<Vec<Bundle>, LayoutError> {
    let mut bundles = Vec::new();
    for h in dirs {
        let (b, warnings) = numalab_schema::journal::read_bundle(h).map_err(|e| {
            LayoutError::input(
                format!("--history {}", h.display()),
                format!("{e}; give a `numalab scale --out DIR` folder"),
            )
        })?;
        for w in &warnings {
            warn(w);
        }
        bundles.push(b);
    }
    Ok(bundles)
}

/// The history sources a plan record names: each `--history` folder, then a history
/// database as `db:PATH`.
pub fn history_sources(dirs: &[std::path::PathBuf], db: Option<&Path>) -> Vec<String> {
    dirs.iter()
        .map(|h| h.display().to_string())
        .chain(db.map(|d| format!("db:{}", d.display())))
        .collect()
}

/// The plan record of a study: every task's past runs gathered from `bundles` and fitted,
/// the three schedules built on `resources` (a mix that cannot fit is an error, before
/// anything runs), evaluated on `model` when there is one, every command checked when the
/// schedules will run, and `history` (the sources read) named in the record.
pub fn plan(
    mix: &Mix,
    bundles: &[Bundle],
    resources: &Resources,
    model: Option<&Model>,
    will_run: bool,
    history: Vec<String>,
) -> Result<PlanRecord, LayoutError> {
    let obs = history::gather(mix, bundles);
    let models: Vec<Option<RuntimeModel>> = obs.iter().map(|o| history::fit(o)).collect();
    let pred = Predictor { models: &models };
    let mut plans = plan::build(mix, resources, &pred)?;
    let predictions = match model {
        Some(m) => {
            run::evaluate_on_model(mix, &mut plans, m, resources);
            format!("history fit scaled on model {}", m.label)
        }
        None => "history fit".to_string(),
    };
    if will_run {
        for p in &plans {
            run::check_commands(mix, p, resources.home.as_ref())?;
        }
    }
    Ok(campaign::plan_record(
        mix,
        &obs,
        &models,
        resources,
        &plans,
        history,
        predictions,
    ))
}

/// The plan record as the journal keeps it, under [`campaign::plan_key`] with the run's
/// `stamp`.
pub fn plan_entry(plan: &PlanRecord, origin: Origin, stamp: &str) -> Record {
    Record::new(
        campaign::plan_key(&plan.mix_id, &plan.resources, stamp),
        origin,
        plan,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIX: &str = "[[task]]\nname='a'\ncommand=['true']\ndata='1 KiB'\nthreads=[1,2]\n[[task]]\nname='b'\ncommand=['true']\ndata='1 KiB'\nthreads=[1,2]\n";

    #[test]
    fn history_sources_name_the_folders_then_the_database() {
        let dirs = vec!["h1".into(), "h2".into()];
        assert_eq!(history_sources(&dirs, None), ["h1", "h2"]);
        assert_eq!(
            history_sources(&dirs, Some(Path::new("db.sqlite"))),
            ["h1", "h2", "db:db.sqlite"]
        );
    }

    #[test]
    fn a_home_map_gives_affinity_once_checked() {
        let ok = |_: &Path| Ok(());
        let h = home_affinity(Path::new("maps/here"), 2, &ok).unwrap();
        assert_eq!(h.distance, 2);
        assert_eq!(h.source, "home map maps/here");
        assert_eq!(h.map_path.as_deref(), Some("maps/here"));
        let refuse = |_: &Path| Err("made elsewhere".to_string());
        let e = home_affinity(Path::new("maps/there"), 1, &refuse).unwrap_err();
        assert_eq!(e.to_string(), "--home-map maps/there: made elsewhere");
        assert_eq!(e.class(), ErrorClass::Input);
    }

    #[test]
    fn a_model_target_is_the_models_cores() {
        let c = cores(Target::Model {
            preset: "knl-7210",
            home_distance: Some(1),
        })
        .unwrap();
        assert_eq!(c.origin, Origin::Modeled);
        assert!(c.model.is_some());
        assert!(c.resources.home.is_some());
        assert!(!c.resources.cpus.is_empty());
        let e = cores(Target::Model {
            preset: "no-such-preset",
            home_distance: None,
        })
        .err()
        .unwrap();
        assert!(matches!(e, CoresError::Layout(_)), "{e}");
    }

    #[test]
    fn live_resources_keep_the_selection_in_compact_order_with_nodes() {
        let m = numalab_topo::synthetic("pack:2 numa:1 core:2 pu:1").unwrap();
        let r = live_resources(&m, vec![1, 2, 3], None, None);
        assert_eq!(r.cpus, vec![1, 2, 3]);
        assert_eq!(r.compact.len(), 3);
        assert!(r.compact.iter().all(|c| [1, 2, 3].contains(c)));
        assert_eq!(r.node_of.len(), 4);
        assert_eq!(r.source, "this machine");
        assert!(r.home.is_none());
    }

    #[test]
    fn a_history_folder_that_is_no_bundle_is_an_input_error_naming_it() {
        let empty = std::env::temp_dir().join(format!("numalab-no-history-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        let mut warned = 0;
        let e = history_bundles(std::slice::from_ref(&empty), &mut |_| warned += 1).unwrap_err();
        std::fs::remove_dir_all(&empty).unwrap();
        assert_eq!(
            numalab_schema::Classify::class(&e),
            numalab_schema::ErrorClass::Input
        );
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("--history {}: ", empty.display())),
            "{text}"
        );
        assert!(
            text.ends_with("; give a `numalab scale --out DIR` folder"),
            "{text}"
        );
        assert_eq!(warned, 0);
        assert!(history_bundles(&[], &mut |_| {}).unwrap().is_empty());
    }

    #[test]
    fn a_cpu_the_floorplan_lacks_is_named() {
        let c = CostMatrix {
            cpus: vec![0, 1],
            ns: vec![0.0, 1.0, 1.0, 0.0],
            source: "layout".into(),
            notes: vec![],
        };
        assert_eq!(outside_floorplan(&c, &[0, 1]), None);
        assert_eq!(outside_floorplan(&c, &[1, 5, 7]), Some(5));
    }

    #[test]
    fn a_bundle_without_an_inference_is_an_input_error_naming_it() {
        use numalab_schema::record::{Envelope, Host, Tool, SCHEMA_VERSION};
        let b = Bundle {
            schema_version: SCHEMA_VERSION,
            envelope: Envelope {
                schema_version: SCHEMA_VERSION,
                tool: Tool::this("test"),
                created_utc: "t".into(),
                command: Vec::new(),
                config: serde_json::Value::Null,
                origin: Origin::Measured,
                host: Host::unknown("test"),
            },
            records: Vec::new(),
        };
        let e = floorplan_costs(&b, "--layout L", &[0]).unwrap_err();
        assert_eq!(
            numalab_schema::Classify::class(&e),
            numalab_schema::ErrorClass::Input
        );
        assert_eq!(
            e.to_string(),
            "--layout L: no layout.inference record; run `numalab layout infer --out DIR`"
        );
    }

    #[test]
    fn modeled_resources_enforce_the_models_home_affinity_unless_told_not_to() {
        let m = Model::load("knl-7210", &[]).unwrap();
        let with = modeled_resources(&m, Some(2));
        let h = with.home.unwrap();
        assert_eq!(h.distance, 2);
        assert!(h.source.contains(&m.label));
        assert!(h.map_path.is_none());
        assert!(modeled_resources(&m, None).home.is_none());
    }

    #[test]
    fn the_plan_without_history_notes_each_task_and_keys_by_mix_and_cores() {
        let mix = Mix::parse(MIX, "m.toml").unwrap();
        let m = numalab_topo::synthetic("pack:1 numa:1 core:4 pu:1").unwrap();
        let res = live_resources(&m, m.pu_ids(), None, None);
        let p = plan(&mix, &[], &res, None, true, vec!["h/".into()]).unwrap();
        assert_eq!(p.cores, 4);
        assert_eq!(p.predictions, "history fit");
        assert_eq!(p.history, vec!["h/".to_string()]);
        assert_eq!(p.notes.len(), 2);
        assert!(!p.plans.is_empty());
        let e = plan_entry(&p, Origin::Measured, "t");
        assert_eq!(e.key, format!("schedule/{}/plan/this machine/t", mix.id()));
    }
}
