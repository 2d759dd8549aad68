//! NUMA and SLC configurations: the same application traffic under each.

use super::*;

/// SLC hit ratio of random accesses to a working set under the model's home grouping:
/// the capacity the data can use over the data (each node's share when grouped).
pub fn slc_hit_ratio(model: &Model, app: &App, working_set: f64) -> f64 {
    let cap = model.spec.slc.bytes as f64;
    if cap == 0.0 || working_set <= 0.0 {
        return if cap == 0.0 { 0.0 } else { 1.0 };
    }
    match model.spec.slc.home_group {
        HomeGroup::All => (cap * f64::from(model.geo.sockets) / working_set).min(1.0),
        _ => {
            // Data per node (by the cores that touch it), hit ratio per node, weighted.
            let mut per_node = vec![0.0; model.nodes.len()];
            for &c in &app.cores {
                match app.data {
                    Data::Node { node } => per_node[node as usize] += 1.0,
                    Data::Local | Data::Fixed { .. } => {
                        per_node[model.cores[c].node as usize] += 1.0
                    }
                    Data::Interleave => per_node
                        .iter_mut()
                        .for_each(|v| *v += 1.0 / model.nodes.len() as f64),
                }
            }
            let n: f64 = per_node.iter().sum();
            per_node
                .iter()
                .enumerate()
                .filter(|(_, &w)| w > 0.0)
                .map(|(i, &w)| {
                    let ws = working_set * w / n;
                    w / n * (model.slc_reach_bytes(i as u32) / ws).min(1.0)
                })
                .sum()
        }
    }
}

/// B5: the same application under each configuration the preset lists.
pub(super) fn policy(model: &Model, opts: &Options, sink: &mut dyn Sink) -> Result<(), ModelError> {
    let variants = model.spec.policy_variants.clone();
    if variants.is_empty() {
        return Err(usage(format!(
            "{} lists no policy_variants to compare; add them to the preset",
            model.label
        )));
    }
    let engines = opts.engine.names();
    let apps = ["balanced", "main-thread", "interleave"];
    let total = variants.len() * apps.len() * engines.len();
    let mut done = 0;
    // The user's preset (with any variants it already has), then each configuration.
    let base = if opts.base_preset.is_empty() {
        model.label.clone()
    } else {
        opts.base_preset.clone()
    };
    // Every configuration's model, then every (configuration, application) case, before
    // anything runs: a configuration that does not load fails at once.
    let mut models: Vec<(String, String, Model, u64)> = Vec::new();
    for v in &variants {
        let label = if base.contains(':') {
            format!("{base},{v}")
        } else {
            format!("{base}:{v}")
        };
        let m = Model::load(&label, &opts.sets)?;
        let ws = opts
            .working_set_bytes
            .unwrap_or((2 * m.spec.slc.bytes).max(256 << 20));
        models.push((v.clone(), label, m, ws));
    }
    let mut cases: Vec<(usize, &str, App)> = Vec::new();
    for (mi, (_, _, m, ws)) in models.iter().enumerate() {
        let cores = opts
            .cores
            .clone()
            .unwrap_or_else(|| (0..m.cores.len()).collect());
        check_cores(m, &cores)?;
        for app_name in apps {
            let data = match app_name {
                "balanced" => Data::Local,
                "main-thread" => Data::Node { node: 0 },
                _ => Data::Interleave,
            };
            let mut app = App {
                cores: cores.clone(),
                data,
                mix: vec![Op::Read, Op::Read, Op::Read, Op::Write],
                slc_hit: 0.0,
                msc_hit: 0.0,
                snoop: 0.05,
                outstanding: m.spec.cores.max_outstanding,
                think_cycles: 0,
            };
            app.slc_hit = slc_hit_ratio(m, &app, *ws as f64);
            app.msc_hit = match m.cache_pool {
                Some(p) => m.pools[p]
                    .cache_hit_ratio
                    .unwrap_or((m.pools[p].capacity_bytes as f64 / *ws as f64).min(1.0)),
                None => 0.0,
            };
            cases.push((mi, app_name, app));
        }
    }
    let key = |label: &str, engine: &str, app_name: &str| {
        format!("model/policy/{label}/{engine}/{app_name}")
    };
    // The simulations still to run, side by side on `jobs` threads, taken in order as
    // the loop below reaches them.
    let simulated: Vec<usize> = if engines.contains(&"des") {
        (0..cases.len())
            .filter(|&i| !sink.done(&key(&models[cases[i].0].1, "des", cases[i].1)))
            .collect()
    } else {
        Vec::new()
    };
    let work = |k: usize| {
        let (mi, _, app) = &cases[simulated[k]];
        run_app(&models[*mi].2, app, "des", &opts.des)
    };
    std::thread::scope(|scope| {
        let mut sims = ahead(scope, opts.jobs, simulated.len(), &work);
        let mut taken = 0;
        for (mi, app_name, app) in &cases {
            let (v, label, m, ws) = &models[*mi];
            let (m, ws, app_name) = (m, *ws, *app_name);
            let mut both: Vec<Policy> = Vec::new();
            for &engine in engines {
                sink.progress(
                    &format!("policy {v} {app_name} ({engine})"),
                    done as u64,
                    total as u64,
                );
                done += 1;
                let key = key(label, engine, app_name);
                if sink.done(&key) {
                    continue;
                }
                check_interrupt()?;
                let (f, _) = if engine == "des" {
                    taken += 1;
                    sims.take(taken - 1)?
                } else {
                    run_app(m, app, engine, &opts.des)?
                };
                // Controllers that serve these accesses: main memory and, if any, the
                // memory-side cache in front of it.
                let mains: Vec<usize> = (0..m.mcs.len())
                    .filter(|&i| {
                        m.mcs[i].pool == m.main_pool || Some(m.mcs[i].pool) == m.cache_pool
                    })
                    .collect();
                let acc: Vec<f64> = mains
                    .iter()
                    .map(|&i| f.mc_accesses_per_cycle.get(i).copied().unwrap_or(0.0))
                    .collect();
                let sum: f64 = acc.iter().sum();
                let share: Vec<f64> = acc
                    .iter()
                    .map(|a| if sum > 0.0 { a / sum } else { 0.0 })
                    .collect();
                let mean = 1.0 / share.len() as f64;
                let imbalance = share.iter().copied().fold(0.0, f64::max) / mean;
                let pick = |v: &[f64]| -> Vec<f64> {
                    mains
                        .iter()
                        .map(|&i| v.get(i).copied().unwrap_or(0.0))
                        .collect()
                };
                let local = pick(&f.mc_local_accesses_per_cycle);
                let remote = pick(&f.mc_remote_accesses_per_cycle);
                let local_sum: f64 = local.iter().sum();
                let all_sum = local_sum + remote.iter().sum::<f64>();
                let rec = Policy {
                    preset: label.clone(),
                    engine: engine.into(),
                    configuration: v.clone(),
                    application: app_name.into(),
                    numa_nodes: m.nodes.len(),
                    working_set_bytes: ws,
                    slc_hit_ratio: app.slc_hit,
                    mean_hops: f.mean_hops,
                    mc_share: share,
                    mc_imbalance: imbalance,
                    bandwidth_gbps: f.requests_per_cycle
                        * f64::from(m.line_bytes())
                        * m.spec.noc.clock_ghz,
                    request_latency_ns: m.ns(f.request_latency_cycles),
                    vns: f.vns.clone(),
                    saturated: f.saturated,
                    node_packets_per_cycle: f.node_packets_per_cycle.clone(),
                    mc_node: mains.iter().map(|&i| m.mcs[i].node).collect(),
                    mc_local_accesses_per_cycle: local,
                    mc_remote_accesses_per_cycle: remote,
                    local_share: if all_sum > 0.0 {
                        local_sum / all_sum
                    } else {
                        0.0
                    },
                };
                sink.push(
                    Record::new(key, Origin::Modeled, &rec).with_warnings(app_warnings(m, &f)),
                )?;
                both.push(rec);
            }
            if both.len() == 2 {
                let (a, d) = (&both[0], &both[1]);
                let key = format!("model/check/policy/{label}/{app_name}");
                if !sink.done(&key) {
                    sink.push(Record::new(
                        key,
                        Origin::Modeled,
                        &Check {
                            preset: label.clone(),
                            experiment: "policy".into(),
                            point: format!("{v}, {app_name}"),
                            metrics: vec![
                                CheckMetric::new(
                                    "bandwidth_gbps",
                                    a.bandwidth_gbps,
                                    d.bandwidth_gbps,
                                ),
                                CheckMetric::new(
                                    "request_latency_ns",
                                    a.request_latency_ns,
                                    d.request_latency_ns,
                                ),
                                CheckMetric::new("mean_hops", a.mean_hops, d.mean_hops),
                                CheckMetric::new("mc_imbalance", a.mc_imbalance, d.mc_imbalance),
                                CheckMetric::new("local_share", a.local_share, d.local_share),
                            ],
                            ..Default::default()
                        },
                    ))?;
                }
            }
        }
        Ok::<_, ModelError>(())
    })?;
    sink.progress("policy", total as u64, total as u64);
    Ok(())
}
