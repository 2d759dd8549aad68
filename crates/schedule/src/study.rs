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
use numalab_schema::{Bundle, Machine, Origin, Record, Warning};

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
