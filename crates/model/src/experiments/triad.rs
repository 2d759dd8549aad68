//! The STREAM triad on the model: bandwidth and latency with the threads' cores fixed and
//! the arrays on each node in turn.

use super::*;

/// B1: STREAM triad, data on each node in turn.
pub(super) fn stream_triad(
    model: &Model,
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<(), ModelError> {
    let cores = opts
        .cores
        .clone()
        .unwrap_or_else(|| model.nodes[0].cores.clone());
    check_cores(model, &cores)?;
    let nodes: Vec<u32> = opts
        .data_nodes
        .clone()
        .unwrap_or_else(|| model.nodes.iter().map(|n| n.id).collect());
    if let Some(&n) = nodes.iter().find(|&&n| n as usize >= model.nodes.len()) {
        return Err(usage(format!(
            "node {n} does not exist: {} has nodes 0-{}",
            model.label,
            model.nodes.len() - 1
        )));
    }
    let clabel = cores_label(&cores);
    let engines = opts.engine.names();
    let total = nodes.len() * engines.len();
    let mut done = 0;
    let key = |engine: &str, node: u32| {
        format!(
            "model/stream-triad/{}/{engine}/cores{clabel}/node{node}",
            model.label
        )
    };
    let apps: Vec<(u32, App)> = nodes
        .iter()
        .map(|&node| {
            // Streaming arrays: the SLC helps only if they fit in what the node can reach.
            let ws = opts
                .working_set_bytes
                .unwrap_or(4 * model.spec.slc.bytes.max(1 << 20)) as f64;
            let slc_hit = if ws <= model.slc_reach_bytes(node) {
                1.0
            } else {
                0.0
            };
            let msc_hit = match model.cache_pool {
                Some(p) => model.pools[p].cache_hit_ratio.unwrap_or(
                    if ws <= model.pools[p].capacity_bytes as f64 {
                        1.0
                    } else {
                        0.0
                    },
                ),
                None => 0.0,
            };
            let app = App {
                cores: cores.clone(),
                data: Data::Node { node },
                mix: vec![Op::Read, Op::Read, Op::Write],
                slc_hit,
                msc_hit,
                snoop: 0.0,
                outstanding: model.spec.cores.max_outstanding,
                think_cycles: 0,
            };
            (node, app)
        })
        .collect();
    // The simulations still to run (one per node), side by side on `jobs` threads,
    // taken in order as the loop below reaches them.
    let simulated: Vec<usize> = if engines.contains(&"des") {
        (0..apps.len())
            .filter(|&i| !sink.done(&key("des", apps[i].0)))
            .collect()
    } else {
        Vec::new()
    };
    let work = |k: usize| run_app(model, &apps[simulated[k]].1, "des", &opts.des);
    std::thread::scope(|scope| {
        let mut sims = ahead(scope, opts.jobs, simulated.len(), &work);
        let mut taken = 0;
        for (node, app) in &apps {
            let node = *node;
            let slc_hit = app.slc_hit;
            let mut both: Vec<StreamTriad> = Vec::new();
            for &engine in engines {
                let key = key(engine, node);
                sink.progress(
                    &format!("stream-triad node {node} ({engine})"),
                    done as u64,
                    total as u64,
                );
                done += 1;
                if sink.done(&key) {
                    continue;
                }
                check_interrupt()?;
                let (f, sim) = if engine == "des" {
                    taken += 1;
                    sims.take(taken - 1)?
                } else {
                    run_app(model, app, engine, &opts.des)?
                };
                let peak = model.node_peak_gbps(node);
                let bw =
                    f.requests_per_cycle * f64::from(model.line_bytes()) * model.spec.noc.clock_ghz;
                let nd = &model.nodes[node as usize];
                let rec = StreamTriad {
                    preset: model.label.clone(),
                    engine: engine.into(),
                    cores: cores.clone(),
                    data_node: node,
                    memory_kind: model.pools[nd.pool].kind.clone(),
                    bandwidth_gbps: bw,
                    peak_gbps: peak,
                    percent_of_peak: 100.0 * bw / peak,
                    request_latency_ns: model.ns(f.request_latency_cycles),
                    packet_latency_cycles: f.packet_latency_cycles,
                    mean_hops: f.mean_hops,
                    hop_histogram: f.hop_histogram.clone(),
                    vns: f.vns.clone(),
                    slc_hit_ratio: slc_hit,
                    mc_accesses_per_cycle: f.mc_accesses_per_cycle.clone(),
                    saturated: f.saturated,
                    simulation: sim,
                };
                sink.push(
                    Record::new(key, Origin::Modeled, &rec).with_warnings(app_warnings(model, &f)),
                )?;
                both.push(rec);
            }
            if opts.engine == Engine::Check && both.len() == 2 {
                let (a, d) = (&both[0], &both[1]);
                let c = Check {
                    preset: model.label.clone(),
                    experiment: "stream-triad".into(),
                    point: format!("cores {clabel}, data on node {node}"),
                    metrics: vec![
                        CheckMetric::new("bandwidth_gbps", a.bandwidth_gbps, d.bandwidth_gbps),
                        CheckMetric::new(
                            "request_latency_ns",
                            a.request_latency_ns,
                            d.request_latency_ns,
                        ),
                        CheckMetric::new(
                            "packet_latency_cycles",
                            a.packet_latency_cycles,
                            d.packet_latency_cycles,
                        ),
                        CheckMetric::new(
                            "request_queueing_cycles",
                            a.vns[REQ].queueing_cycles,
                            d.vns[REQ].queueing_cycles,
                        ),
                        CheckMetric::new("mean_hops", a.mean_hops, d.mean_hops),
                    ],
                    ..Default::default()
                };
                let key = format!(
                    "model/check/stream-triad/{}/cores{clabel}/node{node}",
                    model.label
                );
                if !sink.done(&key) {
                    sink.push(Record::new(key, Origin::Modeled, &c))?;
                }
            }
        }
        Ok::<_, ModelError>(())
    })?;
    sink.progress("stream-triad", total as u64, total as u64);
    Ok(())
}
