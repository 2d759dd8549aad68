//! Calibration (`numalab model calibrate`): fit a preset's free parameters to what
//! numalab measured on a real machine, so that a what-if starts from the user's own
//! hardware.
//!
//! Figures ([`measured`]): idle memory latency per (CPU node, memory node),
//! core-to-core latency per node pair, peak bandwidth per node. Parameters: per-hop
//! router cycles (`noc.router_cycles`), the home lookup (`slc.lookup_cycles`, which also
//! takes any constant the model lacks on the core side, since every latency figure pays
//! it once), the socket link's one-way latency, each memory pool's access latency, and
//! each pool's channel bandwidth.
//!
//! Latencies are linear in the first four ([`predict`] splits each figure into hops,
//! lookups, crossings and memory reads), so they are fitted by linear least squares
//! ([`solve`]), which also finds the parameters the figures cannot tell apart (e.g.
//! memory latency and lookup from memory latencies alone) and leaves them at the preset's
//! value. Bandwidth then fits each pool's `channel_gbps` by Gauss-Newton on the analytic
//! engine's STREAM figure, with the fitted latencies in place (a core-limited model
//! bandwidth does not move with the channels, and the parameter is then reported as not
//! identifiable). Integer keys are rounded when saved, and the residuals are those of the
//! saved preset. [`report`] gives a calibration's record key and its tables as text.

pub mod measured;
pub mod predict;
pub mod report;
pub mod request;
pub mod solve;

use crate::error::ModelError;
use crate::model::Model;
use crate::spec;
use measured::{FigureKind, Observed};
use numalab_records::model::{CalibratedParameter, Calibration, CalibrationFigure, CalibrationRms};
use numalab_schema::record::Bundle;
use solve::Column;
use std::collections::BTreeMap;

/// A free parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Param {
    PoolLatency(usize),
    Router,
    Socket,
    Lookup,
    Channel(usize),
    Outstanding,
}

impl Param {
    fn key(self, m: &Model) -> String {
        match self {
            Param::PoolLatency(p) => format!("memory.{}.latency_ns", m.pools[p].name),
            Param::Router => "noc.router_cycles".into(),
            Param::Socket => "socket.link_latency_ns".into(),
            Param::Lookup => "slc.lookup_cycles".into(),
            Param::Channel(p) => format!("memory.{}.channel_gbps", m.pools[p].name),
            Param::Outstanding => "cores.max_outstanding".into(),
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Param::Router | Param::Lookup => "cycles",
            Param::Channel(_) => "GB/s",
            Param::Outstanding => "lines",
            _ => "ns",
        }
    }

    fn meaning(self, m: &Model) -> String {
        match self {
            Param::PoolLatency(p) => format!(
                "{} ({}) controller and device access latency, beyond the network",
                m.pools[p].name, m.pools[p].kind
            ),
            Param::Router => "cycles every mesh hop pays in its router (router and link cycles are paid together on every hop, so the links are kept and the router takes the difference)".into(),
            Param::Socket => "one-way latency through the socket link and its ports".into(),
            Param::Lookup => "home (SLC) lookup; every latency figure pays it once, so it also takes any constant the model lacks on the core side".into(),
            Param::Channel(p) => format!("peak bandwidth of one {} channel", m.pools[p].name),
            Param::Outstanding => "line requests a core keeps in flight; hardware prefetchers make a streaming core keep more than its miss buffers".into(),
        }
    }

    fn start(self, m: &Model) -> f64 {
        let s = &m.spec;
        match self {
            Param::PoolLatency(p) => s.memory[&m.pools[p].name].latency_ns,
            Param::Router => f64::from(s.noc.router_cycles),
            Param::Socket => s.socket.as_ref().map_or(0.0, |k| k.link_latency_ns),
            Param::Lookup => f64::from(s.slc.lookup_cycles),
            Param::Channel(p) => s.memory[&m.pools[p].name].channel_gbps,
            Param::Outstanding => f64::from(s.cores.max_outstanding),
        }
    }

    /// The value written to the preset and its TOML text.
    fn saved(self, v: f64) -> (f64, String) {
        match self {
            Param::Router | Param::Lookup | Param::Outstanding => {
                let r = v.round().max(0.0);
                (r, format!("{}", r as u64))
            }
            Param::Channel(_) => {
                let r = ((v * 100.0).round() / 100.0).max(0.01);
                (r, format!("{r}"))
            }
            _ => {
                let r = ((v * 10.0).round() / 10.0).max(0.0);
                (r, format!("{r:.1}"))
            }
        }
    }
}

fn input(what: &str, msg: impl Into<String>) -> ModelError {
    ModelError::Measurements {
        what: what.to_string(),
        msg: msg.into(),
    }
}

fn with(sets: &[String], more: &[String]) -> Vec<String> {
    sets.iter().chain(more).cloned().collect()
}

/// The model's value of a figure.
fn modeled(m: &Model, o: &Observed) -> Option<f64> {
    match o.kind {
        FigureKind::MemLatency => predict::mem_latency(m, o.cpu_node, o.mem_node).map(|t| t.ns),
        FigureKind::C2c => predict::c2c(m, o.cpu_node, o.mem_node).map(|t| t.ns),
        FigureKind::Bandwidth => Some(predict::bandwidth(
            m,
            o.cpu_node,
            o.threads,
            o.reads_writes.0,
            o.reads_writes.1,
        ))
        .filter(|v| v.is_finite()),
    }
}

/// Fits `preset` (with `sets`) to the figures of `bundles` (name as given, bundle).
pub fn calibrate(
    preset: &str,
    sets: &[String],
    bundles: &[(String, Bundle)],
) -> Result<Calibration, ModelError> {
    let base = Model::load(preset, sets)?;
    // Calibration predicts with the analytic engine, which has no bounded queues.
    base.check_queue_depth(false)?;
    let names: Vec<String> = bundles.iter().map(|b| b.0.clone()).collect();
    let all = names.join(", ");
    let mut meas = measured::read(bundles)?;
    if meas.figures.is_empty() {
        let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, b) in bundles {
            for r in &b.records {
                *kinds.entry(r.kind.as_str()).or_default() += 1;
            }
        }
        let found = if kinds.is_empty() {
            "no records".to_string()
        } else {
            kinds
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut msg = format!("no record to calibrate to (found {found}); calibration needs idle memory latencies per node pair beyond the last-level cache (`numalab mem latency --matrix`), a core-to-core matrix (`numalab c2c`) or bandwidth per node (`numalab mem bandwidth --matrix`), e.g. from `numalab evaluate`");
        if !meas.notes.is_empty() {
            msg.push_str(&format!("; skipped: {}", meas.notes.join("; ")));
        }
        return Err(input(&all, msg));
    }
    let model_nodes = base.nodes.len() as u32;
    if meas.nodes != model_nodes {
        return Err(input(
            &all,
            format!(
                "the measured machine has {} NUMA node(s), preset {} has {model_nodes}: node i of the machine is set against node i of the model, so they must agree; pick a variant or --set numa.split / numa.grid (and socket.count) so that the preset has {} node(s) (`numalab model show {}` lists its nodes)",
                meas.nodes, base.label, meas.nodes, base.label
            ),
        ));
    }
    let mut notes = std::mem::take(&mut meas.notes);
    for (i, &cpus) in meas.cpus_per_node.iter().enumerate() {
        let nd = &base.nodes[i];
        let threads = nd.cores.len() * base.spec.cores.threads_per_core as usize;
        if cpus != threads {
            notes.push(format!(
                "node {i}: the machine has {cpus} CPUs, the model {threads} hardware threads; figures are means over each node's cores, so nodes are matched by number, not core by core"
            ));
        }
    }
    if base.cache_pool.is_some() {
        notes.push("the preset has a memory-side cache; memory latencies are modeled without it (as misses in it)".into());
    }
    // Figures the model can evaluate.
    let mut figures: Vec<Observed> = Vec::new();
    for o in meas.figures {
        let cpu_ok = base
            .nodes
            .get(o.cpu_node as usize)
            .is_some_and(|n| !n.cores.is_empty());
        if !cpu_ok || modeled(&base, &o).is_none() {
            notes.push(format!(
                "{} node {} -> {}: skipped, the model has no cores there",
                o.kind.name(),
                o.cpu_node,
                o.mem_node
            ));
            continue;
        }
        figures.push(o);
    }
    // Latency parameters, in order of preference.
    let mut lat_params: Vec<Param> = vec![Param::PoolLatency(base.main_pool)];
    lat_params.extend(
        (0..base.pools.len())
            .filter(|&p| p != base.main_pool)
            .map(Param::PoolLatency),
    );
    // Input-queued routers charge each router their pipeline, never
    // `noc.router_cycles`: fitting it would report a figure that changes none of their
    // engines' answers, so it is not fitted and the row says why.
    let unused_router =
        (base.spec.noc.router == spec::RouterKind::InputQueued).then(|| router_not_used(&base));
    if unused_router.is_none() {
        lat_params.push(Param::Router);
    }
    if base.geo.sockets > 1 {
        lat_params.push(Param::Socket);
    }
    lat_params.push(Param::Lookup);
    // Memory latency includes moving the line through a channel, so it depends a
    // little on the channels' bandwidth, and a core-limited bandwidth on the latencies:
    // alternate the two fits until the channels settle (twice or three times).
    let mut chan_sets: Vec<String> = Vec::new();
    let mut params: Vec<CalibratedParameter> = Vec::new();
    let mut cal_sets: Vec<String> = Vec::new();
    for _ in 0..4 {
        let here = Model::load(preset, &with(sets, &chan_sets))?;
        let (lat, lat_sets) = fit_latency(&base, &here, &lat_params, &figures);
        let (chan, new_chan) = fit_channels(preset, sets, &lat_sets, &base, &figures)?;
        params = lat.into_iter().chain(chan).collect();
        cal_sets = lat_sets
            .into_iter()
            .chain(new_chan.iter().cloned())
            .collect();
        if new_chan == chan_sets {
            break;
        }
        chan_sets = new_chan;
    }
    if let Some(r) = unused_router {
        // Where the per-hop cost stands for output-queued routers: after the pools.
        params.insert(base.pools.len().min(params.len()), r);
    }
    let n_lat = figures
        .iter()
        .filter(|o| o.kind != FigureKind::Bandwidth)
        .count();
    let p_lat = params
        .iter()
        .filter(|p| p.status == "fitted" && (p.unit == "ns" || p.unit == "cycles"))
        .count();
    if p_lat > 0 && n_lat < p_lat + 5 {
        notes.push(format!(
            "{n_lat} latency figures for {p_lat} fitted parameters leave {} residual degrees of freedom: the standard errors are rough; more node pairs (a sub-NUMA clustering or quadrant mode) or a core-to-core matrix pin the parameters down",
            n_lat - p_lat
        ));
    }
    let n_bw = figures
        .iter()
        .filter(|o| o.kind == FigureKind::Bandwidth)
        .count();
    if n_bw > 0 && n_bw < 6 {
        notes.push(format!(
            "{n_bw} bandwidth figure(s): the channel bandwidth's standard error has at most {} degrees of freedom and is rough",
            n_bw - 1
        ));
    }
    let fitted = Model::load(preset, &with(sets, &cal_sets))?;
    let mut rows: Vec<CalibrationFigure> = Vec::new();
    for o in &figures {
        let before = modeled(&base, o).unwrap_or(f64::NAN);
        let after = modeled(&fitted, o).unwrap_or(f64::NAN);
        rows.push(CalibrationFigure {
            kind: o.kind.name().into(),
            cpu_node: o.cpu_node,
            mem_node: o.mem_node,
            unit: o.kind.unit().into(),
            measured: o.value,
            modeled_before: before,
            modeled: after,
            residual: after - o.value,
            residual_percent: 100.0 * (after - o.value) / o.value,
            sources: o.sources.clone(),
        });
    }
    let mut rms = Vec::new();
    for kind in [
        FigureKind::MemLatency,
        FigureKind::C2c,
        FigureKind::Bandwidth,
    ] {
        let f: Vec<&CalibrationFigure> = rows.iter().filter(|r| r.kind == kind.name()).collect();
        if f.is_empty() {
            continue;
        }
        let n = f.len() as f64;
        let q = |g: &dyn Fn(&CalibrationFigure) -> f64| {
            (f.iter().map(|r| g(r).powi(2)).sum::<f64>() / n).sqrt()
        };
        rms.push(CalibrationRms {
            kind: kind.name().into(),
            unit: kind.unit().into(),
            figures: f.len(),
            rms_before: q(&|r| r.modeled_before - r.measured),
            rms: q(&|r| r.residual),
            rms_percent: q(&|r| r.residual_percent),
        });
    }
    Ok(Calibration {
        preset: preset.to_string(),
        sets: sets.to_vec(),
        bundles: names,
        parameters: params,
        figures: rows,
        rms,
        calibrated_sets: cal_sets,
        notes,
        preset_file: None,
    })
}

/// Linear least squares of the latency parameters: `base` gives the starting values,
/// `here` (the base with the current channel bandwidths) the terms.
fn fit_latency(
    base: &Model,
    here: &Model,
    lat_params: &[Param],
    figures: &[Observed],
) -> (Vec<CalibratedParameter>, Vec<String>) {
    let clock = here.spec.noc.clock_ghz;
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); lat_params.len()];
    let mut y = Vec::new();
    let mut group = Vec::new();
    for o in figures.iter().filter(|o| o.kind != FigureKind::Bandwidth) {
        let t = match o.kind {
            FigureKind::MemLatency => predict::mem_latency(here, o.cpu_node, o.mem_node),
            _ => predict::c2c(here, o.cpu_node, o.mem_node),
        }
        .expect("checked above");
        for (k, p) in lat_params.iter().enumerate() {
            cols[k].push(match *p {
                Param::PoolLatency(q) => t.pool_reads[q],
                Param::Router => t.hops / clock,
                Param::Socket => t.crossings,
                Param::Lookup => t.lookups / clock,
                Param::Channel(_) | Param::Outstanding => 0.0,
            });
        }
        y.push(o.value - t.ns);
        group.push(usize::from(o.kind == FigureKind::C2c));
    }
    let mut params: Vec<CalibratedParameter> = Vec::new();
    let mut cal_sets: Vec<String> = Vec::new();
    let fit = if y.is_empty() {
        vec![Column::NoData; lat_params.len()]
    } else {
        solve::least_squares(&cols, &y, &group)
    };
    let lat_figures = y.len();
    // Integer keys are saved rounded; the continuous ones are then fitted again with
    // them at their rounded values, so the saved preset is the best it can be.
    let n = lat_params.len();
    let is_fitted = |k: usize| matches!(fit[k], Column::Fitted { .. });
    let integer: Vec<usize> = (0..n)
        .filter(|&k| is_fitted(k) && matches!(lat_params[k], Param::Router | Param::Lookup))
        .collect();
    let mut refit: Vec<Option<f64>> = vec![None; n];
    if !integer.is_empty() && integer.len() < (0..n).filter(|&k| is_fitted(k)).count() {
        let mut y2 = y.clone();
        for &k in &integer {
            if let Column::Fitted { value, .. } = fit[k] {
                let start = lat_params[k].start(base);
                let d = lat_params[k].saved(start + value).0 - start;
                for (r, v) in y2.iter_mut().enumerate() {
                    *v -= cols[k][r] * d;
                }
            }
        }
        let cols2: Vec<Vec<f64>> = (0..n)
            .map(|k| {
                if is_fitted(k) && !integer.contains(&k) {
                    cols[k].clone()
                } else {
                    vec![0.0; y.len()]
                }
            })
            .collect();
        for (k, c) in solve::least_squares(&cols2, &y2, &group)
            .into_iter()
            .enumerate()
        {
            if let Column::Fitted { value, .. } = c {
                refit[k] = Some(value);
            }
        }
    }
    for (k, p) in lat_params.iter().enumerate() {
        let start = p.start(base);
        let key = p.key(base);
        let mut cp = row(p, base, "fitted", None);
        match &fit[k] {
            Column::Fitted { value, std_error } => {
                cp.value = start + value;
                cp.std_error = *std_error;
                let (saved, text) = p.saved(refit[k].map_or(cp.value, |d| start + d));
                cp.saved = saved;
                if refit[k].is_some() && (saved - p.saved(cp.value).0).abs() > 0.0 {
                    cp.note = Some(format!(
                        "saved as {saved}: fitted again with the integer cycle counts rounded"
                    ));
                }
                if cp.value < 0.0 {
                    cp.note = Some(format!("the fit wants {:.2} {}, below zero: the rest of the model already takes more than the figures allow; saved as 0", cp.value, p.unit()));
                }
                if cp.std_error.is_none() {
                    cp.note.get_or_insert_with(|| "as many figures as fitted parameters: an exact solution, no standard error".into());
                }
                cal_sets.push(format!("{key}={text}"));
            }
            Column::NoData => {
                cp.status = "no-data".into();
                cp.note = Some(if lat_figures == 0 {
                    "no latency figure in the bundles".into()
                } else {
                    match p {
                        Param::PoolLatency(_) => {
                            "no memory latency figure reads this memory".into()
                        }
                        _ => "no latency figure depends on it".into(),
                    }
                });
            }
            Column::Dependent(on) => {
                cp.status = "not-identifiable".into();
                let others: Vec<String> = on.iter().map(|&j| lat_params[j].key(base)).collect();
                cp.note = Some(if others.is_empty() {
                    "no figure left to fit it".into()
                } else {
                    format!(
                        "the figures move with it only as they move with {}: kept at the preset's value (add {} to tell them apart)",
                        others.join(", "),
                        match p {
                            Param::Lookup => "a core-to-core matrix and memory latencies",
                            Param::Socket => "figures across sockets and within one",
                            Param::Router => "figures between near and far nodes, or core-to-core latencies",
                            _ => "memory latencies and core-to-core latencies",
                        }
                    )
                });
            }
        }
        params.push(cp);
    }
    (params, cal_sets)
}

/// Each pool's channel bandwidth, with the latency parameters `lat_sets` in place.
fn fit_channels(
    preset: &str,
    sets: &[String],
    lat_sets: &[String],
    base: &Model,
    figures: &[Observed],
) -> Result<(Vec<CalibratedParameter>, Vec<String>), ModelError> {
    let mut params = Vec::new();
    let mut cal_sets: Vec<String> = Vec::new();
    // Bandwidth: each pool's channels, with the latencies fitted.
    let lat_model = Model::load(preset, &with(sets, lat_sets))?;
    let mut bw_pools: Vec<usize> = figures
        .iter()
        .filter(|o| o.kind == FigureKind::Bandwidth)
        .map(|o| base.nodes[o.mem_node as usize].pool)
        .collect();
    bw_pools.sort_unstable();
    bw_pools.dedup();
    for pool in 0..base.pools.len() {
        let p = Param::Channel(pool);
        let key = p.key(base);
        let mut cp = row(
            &p,
            base,
            "no-data",
            Some("no bandwidth figure of a node on this memory".into()),
        );
        if bw_pools.contains(&pool) {
            let figs: Vec<&Observed> = figures
                .iter()
                .filter(|o| {
                    o.kind == FigureKind::Bandwidth && base.nodes[o.mem_node as usize].pool == pool
                })
                .collect();
            fit_channel(preset, sets, lat_sets, &lat_model, p, &figs, &mut cp)?;
            if cp.status == "fitted" {
                cal_sets.push(format!("{key}={}", p.saved(cp.value).1));
            }
        }
        params.push(cp);
    }
    // Where the model's cores, not its controllers, limit a figure, the depth of
    // outstanding requests is what sets it.
    let limited: Vec<&Observed> = figures
        .iter()
        .filter(|o| {
            o.kind == FigureKind::Bandwidth
                && params.iter().any(|p| {
                    p.key == Param::Channel(base.nodes[o.mem_node as usize].pool).key(base)
                        && p.status == "not-identifiable"
                })
        })
        .collect();
    if figures.iter().any(|o| o.kind == FigureKind::Bandwidth) {
        let p = Param::Outstanding;
        let mut cp = row(&p, base, "not-identifiable", Some("the model's controllers, not its cores, limit every bandwidth figure: kept at the preset's value".into()));
        if !limited.is_empty() {
            let s = with(lat_sets, &cal_sets);
            fit_outstanding(preset, sets, &s, &limited, &mut cp)?;
            if cp.status == "fitted" {
                cal_sets.push(format!("{}={}", cp.key, cp.saved as u64));
            }
        }
        params.push(cp);
    }
    Ok((params, cal_sets))
}

/// The whole number of outstanding requests per core that brings the model's bandwidth
/// closest to `figs` (it grows with the depth until the controllers bind): bisection
/// on the sign of the mean residual, then the better neighbour.
fn fit_outstanding(
    preset: &str,
    sets: &[String],
    cal_sets: &[String],
    figs: &[&Observed],
    cp: &mut CalibratedParameter,
) -> Result<(), ModelError> {
    const MAX: u32 = 1024;
    let eval = |o: u32| -> Result<(f64, f64), ModelError> {
        let mut s = with(sets, cal_sets);
        s.push(format!("cores.max_outstanding={o}"));
        let m = Model::load(preset, &s)?;
        let r: Vec<f64> = figs
            .iter()
            .map(|f| modeled(&m, f).unwrap_or(f64::NAN) - f.value)
            .collect();
        let n = r.len() as f64;
        Ok((
            r.iter().sum::<f64>() / n,
            r.iter().map(|v| v * v).sum::<f64>(),
        ))
    };
    let top = eval(MAX)?;
    if !top.0.is_finite() {
        return Ok(());
    }
    let (o, note) = if top.0 < 0.0 {
        (MAX, Some(format!("even {MAX} requests in flight leave the model short of the measured bandwidth: its controllers cap it, though the channel fit found them not limiting; check the memory pool's channels")))
    } else {
        let (mut lo, mut hi) = (1u32, MAX);
        if eval(lo)?.0 >= 0.0 {
            hi = lo;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if eval(mid)?.0 < 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let best = if eval(lo)?.1 < eval(hi)?.1 { lo } else { hi };
        (best, None)
    };
    cp.status = "fitted".into();
    cp.value = f64::from(o);
    cp.saved = f64::from(o);
    cp.note = note.or_else(|| Some("a whole number searched by bisection (no standard error): the model's cores, not its controllers, limit these figures".into()));
    Ok(())
}

/// Gauss-Newton on one pool's channel bandwidth (a single parameter, numerical
/// derivative), the other fitted values in place.
fn fit_channel(
    preset: &str,
    sets: &[String],
    cal_sets: &[String],
    lat_model: &Model,
    p: Param,
    figs: &[&Observed],
    cp: &mut CalibratedParameter,
) -> Result<(), ModelError> {
    let key = p.key(lat_model);
    let predict = |g: f64| -> Result<Vec<f64>, ModelError> {
        let mut s = with(sets, cal_sets);
        s.push(format!("{key}={g}"));
        let m = Model::load(preset, &s)?;
        Ok(figs
            .iter()
            .map(|o| modeled(&m, o).unwrap_or(f64::NAN))
            .collect())
    };
    let mut g = cp.start;
    let mut sum_j2 = 0.0;
    let mut rss = 0.0;
    let mut elasticity = 0.0;
    for _ in 0..25 {
        let f0 = predict(g)?;
        let h = g * 0.01;
        let f1 = predict(g + h)?;
        let j: Vec<f64> = f0.iter().zip(&f1).map(|(a, b)| (b - a) / h).collect();
        let r: Vec<f64> = figs.iter().zip(&f0).map(|(o, f)| o.value - f).collect();
        sum_j2 = j.iter().map(|v| v * v).sum();
        rss = r.iter().map(|v| v * v).sum();
        elasticity = j.iter().zip(&f0).map(|(j, f)| j * g / f).sum::<f64>() / j.len() as f64;
        if !elasticity.is_finite() || elasticity < 0.05 {
            break;
        }
        let step = j.iter().zip(&r).map(|(a, b)| a * b).sum::<f64>() / sum_j2;
        let next = (g + step).clamp(g / 4.0, g * 4.0);
        let done = (next - g).abs() < 1e-5 * g;
        g = next;
        if done {
            break;
        }
    }
    if !elasticity.is_finite() || elasticity < 0.05 {
        cp.status = "not-identifiable".into();
        cp.note = Some(format!(
            "the model's bandwidth for these figures hardly moves with the channels (a 1% change moves it {:.2}%): its cores (cores.max_outstanding over the latency) limit it, not the controllers; kept at the preset's value",
            elasticity.max(0.0)
        ));
        return Ok(());
    }
    cp.status = "fitted".into();
    cp.value = g;
    cp.saved = p.saved(g).0;
    let n = figs.len();
    cp.std_error = (n > 1 && sum_j2 > 0.0).then(|| (rss / (n - 1) as f64 / sum_j2).sqrt());
    cp.note = Some(format!(
        "bandwidth from the analytic engine's STREAM model; the measured peak is {:.0}% sensitive to it there",
        100.0 * elasticity
    ))
    .filter(|_| elasticity < 0.9);
    Ok(())
}

/// The calibrated preset as a TOML file: every value of the base with its source, the
/// fitted ones with where they come from, a header saying from what and when.
/// `base = NAME` keeps the shipped preset's variants available when the base is one.
pub fn preset_text(cal: &Calibration, created_utc: &str) -> Result<String, ModelError> {
    let loaded = spec::load(&cal.preset, &with(&cal.sets, &cal.calibrated_sets))?;
    let name_part = cal.preset.split(':').next().unwrap_or(&cal.preset);
    let builtin = spec::builtin(name_part).is_ok();
    let fitted: BTreeMap<&str, &CalibratedParameter> = cal
        .parameters
        .iter()
        .filter(|p| p.status == "fitted")
        .map(|p| (p.key.as_str(), p))
        .collect();
    let q = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut out = String::new();
    out.push_str(&format!(
        "# Calibrated by `numalab model calibrate` on {created_utc}\n# from the preset {}{}\n# to the measurements in: {}\n",
        cal.preset,
        if cal.sets.is_empty() {
            String::new()
        } else {
            format!(" with --set {}", cal.sets.join(" --set "))
        },
        cal.bundles.join(", ")
    ));
    for r in &cal.rms {
        out.push_str(&format!(
            "# {}: {} figures, RMS residual {:.2} {} ({:.1}%), {:.2} before\n",
            r.kind, r.figures, r.rms, r.unit, r.rms_percent, r.rms_before
        ));
    }
    for p in &cal.parameters {
        if p.status != "fitted" {
            out.push_str(&format!(
                "# {} not fitted ({}): kept at {}\n",
                p.key, p.status, p.start
            ));
        }
    }
    out.push('\n');
    out.push_str(&format!(
        "name = {}\n",
        q(&format!("{}-calibrated", loaded.spec.name))
    ));
    if builtin {
        out.push_str(&format!("base = {}\n", q(name_part)));
    }
    out.push_str(&format!(
        "description = {}\n",
        q(&format!(
            "{}, calibrated to {}",
            loaded.spec.description,
            cal.bundles.join(", ")
        ))
    ));
    let mut sections: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, value, source) in loaded.entries() {
        let source = match fitted.get(key.as_str()) {
            Some(p) => format!(
                "calibrated on {created_utc} to {}: fitted {:.3}{} {} (preset {} had {})",
                cal.bundles.join(", "),
                p.value,
                p.std_error
                    .map(|s| format!(" +- {s:.3}"))
                    .unwrap_or_default(),
                p.unit,
                cal.preset,
                p.start
            ),
            None if source == "command line --set" => {
                format!("--set on the base preset {}", cal.preset)
            }
            None => source,
        };
        let (section, leaf) = match key.rsplit_once('.') {
            Some((s, l)) => (s.to_string(), l.to_string()),
            None => (String::new(), key.clone()),
        };
        sections.entry(section).or_default().push(format!(
            "{leaf} = {{ value = {value}, source = {} }}",
            q(&source)
        ));
    }
    for (section, lines) in sections {
        if !section.is_empty() {
            out.push_str(&format!("\n[{section}]\n"));
        }
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
    }
    Ok(out)
}

/// `noc.router_cycles`'s row for input-queued routers (status `not-used`): their
/// engines, analytic and discrete-event, charge each router the pipeline's stages
/// instead, so the parameter is not fitted.
fn router_not_used(base: &Model) -> CalibratedParameter {
    let n = &base.spec.noc;
    let stages = n.routing_delay + n.vc_alloc_delay + n.sw_alloc_delay + n.st_final_delay;
    row(
        &Param::Router,
        base,
        "not-used",
        Some(format!(
            "noc.router = \"input-queued\": its engines (analytic and discrete-event) charge each router the pipeline, noc.routing_delay + vc_alloc_delay + sw_alloc_delay + st_final_delay = {stages} cycles, never noc.router_cycles, so a fitted value would change none of their figures: not fitted. The stages are the allocators' timing, not a free latency; to fit a per-hop cost, calibrate with --set noc.router=output-queued"
        )),
    )
}

/// A parameter's row at the preset's value: `status` and `note` say why it stands so.
fn row(p: &Param, base: &Model, status: &str, note: Option<String>) -> CalibratedParameter {
    let start = p.start(base);
    CalibratedParameter {
        key: p.key(base),
        unit: p.unit().into(),
        meaning: p.meaning(base),
        start,
        value: start,
        std_error: None,
        saved: start,
        status: status.into(),
        note,
    }
}
