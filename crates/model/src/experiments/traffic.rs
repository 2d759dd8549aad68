//! Synthetic traffic: latency against offered load to saturation, analytic or
//! discrete-event.

use super::*;

/// Default offered loads, as fractions of the analytic saturation rate.
pub const DEFAULT_LOADS: &[f64] = &[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05];

/// A point is stable when everything created was delivered and the mean latency is
/// under this multiple of the zero-load latency.
pub const STABLE_LATENCY_FACTOR: f64 = 3.0;

pub(super) fn analytic_point(curve: &analytic::SyntheticCurve, rate: f64, t0: f64) -> TrafficPoint {
    let f = curve.at(rate);
    let stable =
        f.max_link_utilization < 1.0 && f.packet_latency_cycles < STABLE_LATENCY_FACTOR * t0;
    TrafficPoint {
        offered: rate,
        accepted: if f.max_link_utilization < 1.0 {
            rate
        } else {
            rate / f.max_link_utilization
        },
        latency_cycles: f.packet_latency_cycles,
        max_link_utilization: f.max_link_utilization,
        stable,
    }
}

/// One point of a synthetic curve in one engine (`t0`: zero-load latency, for the
/// stability test; `threads`: for an input-queued simulation, see
/// [`des::synthetic_threads`]).
pub fn traffic_point(
    model: &Model,
    t: &Synthetic,
    engine: &str,
    cfg: &DesConfig,
    t0: f64,
    threads: usize,
) -> Result<(TrafficPoint, Option<SimStats>), ModelError> {
    if engine == "analytic" {
        let curve = analytic::SyntheticCurve::new(model, t);
        return Ok((analytic_point(&curve, t.rate, t0), None));
    }
    let stops = f64::from(Synthetic::stops(model));
    let (f, s) = des::synthetic_threads(model, t, cfg, threads)?;
    let stable = s.drained && f.packet_latency_cycles < STABLE_LATENCY_FACTOR * t0;
    Ok((
        TrafficPoint {
            offered: t.rate,
            accepted: f.packets_per_cycle / stops,
            latency_cycles: f.packet_latency_cycles,
            max_link_utilization: f.max_link_utilization,
            stable,
        },
        Some(s),
    ))
}

/// Bytes the analytic network of every ordered pair of stops takes (a leg, its index
/// entry and its route of resources per pair), estimated from measured footprints:
/// about 290 MB for a 32x32 mesh and 1.8 GB for 48x48 (the estimate is 10-15% above).
pub fn all_pairs_bytes(model: &Model) -> u64 {
    let g = &model.geo;
    let stops = u64::from(g.stops());
    let mean_hops = u64::from(g.cols + g.rows) * 2 / 3 + 2;
    stops * stops * (120 + 8 * mean_hops)
}

/// Memory the system has available (`MemAvailable` of /proc/meminfo), if readable.
pub(super) fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Refuses a synthetic-traffic experiment whose all-pairs network would take more than
/// half the available memory, with the estimate, the limit and the remedy, before
/// anything is allocated.
pub(super) fn check_all_pairs(model: &Model, what: &str) -> Result<(), ModelError> {
    let need = all_pairs_bytes(model);
    let Some(avail) = available_bytes() else {
        return Ok(());
    };
    if need <= avail / 2 {
        return Ok(());
    }
    let g = &model.geo;
    // The largest square mesh of this many sockets that fits.
    let mut n = 2u64;
    while {
        let s = u64::from(g.sockets.max(1)) * (n + 1) * (n + 1);
        s * s * (120 + 8 * ((2 * (n + 1)) * 2 / 3 + 2)) <= avail / 2
    } {
        n += 1;
    }
    Err(ModelError::Usage {
        msg: format!(
            "{what} on a {}x{} mesh ({} socket(s), {} stops) needs about {} for its {} routes between stop pairs, more than half of the {} this machine has available; use a mesh of at most about {n}x{n} (--set noc.rows=... --set noc.cols=...), or a machine with more memory",
            g.cols,
            g.rows,
            g.sockets,
            g.stops(),
            numalab_schema::units::bytes(need),
            u64::from(g.stops()) * u64::from(g.stops()),
            numalab_schema::units::bytes(avail)
        ),
    })
}

pub(super) fn traffic(
    model: &Model,
    pattern: Pattern,
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<(), ModelError> {
    check_all_pairs(model, "synthetic traffic")?;
    let base = Synthetic {
        pattern,
        rate: 1e-9,
        flits: opts.flits.max(1),
    };
    let curve = analytic::SyntheticCurve::new(model, &base);
    let zero = curve.at(1e-9);
    let t0 = if model.spec.noc.router == crate::spec::RouterKind::InputQueued {
        // The engines' zero-load latency differs with the router: the stability test of
        // the discrete-event points uses the input-queued pipeline's.
        let n = &model.spec.noc;
        let link = f64::from(n.link_cycles_x + n.link_cycles_y) / 2.0;
        crate::router::zero_load_latency(model, zero.mean_hops, base.flits, link)
    } else {
        zero.packet_latency_cycles
    };
    let sat = curve.saturation_rate();
    let loads = opts.loads.clone().unwrap_or_else(|| DEFAULT_LOADS.to_vec());
    if loads.iter().any(|&l| l.is_nan() || l <= 0.0 || l > 4.0) {
        return Err(usage(
            "--loads: fractions of the saturation rate must be in (0, 4]",
        ));
    }
    let name = match pattern {
        Pattern::Uniform => "uniform",
        Pattern::Hotspot { .. } => "hotspot",
        Pattern::Transpose => "transpose",
    };
    let bisection = (model.geo.cols == model.geo.rows && pattern == Pattern::Uniform)
        .then(|| crate::geometry::saturation_formula(model.geo.cols) / f64::from(base.flits));
    let engines = opts.engine.names();
    let total = engines.len() * loads.len();
    let mut done = 0;
    let mut both: Vec<Traffic> = Vec::new();
    for &engine in engines {
        let key = format!(
            "model/traffic/{}/{engine}/{name}/flits{}",
            model.label, base.flits
        );
        if sink.done(&key) {
            done += loads.len();
            continue;
        }
        let mut points = Vec::new();
        let mut sim_total: Option<SimStats> = None;
        let what = |l: f64| format!("{name} at {:.0}% of saturation ({engine})", l * 100.0);
        let results: Vec<(TrafficPoint, Option<SimStats>)> = if engine == "analytic" {
            let mut r = Vec::new();
            for &l in &loads {
                sink.progress(&what(l), done as u64, total as u64);
                done += 1;
                check_interrupt()?;
                if l >= 1.0 {
                    continue; // no steady state: queues grow without bound
                }
                r.push((analytic_point(&curve, l * sat, t0), None));
            }
            r
        } else {
            // The points are separate seeded simulations: side by side on `jobs`
            // threads, taken in order; with fewer points than jobs, each point's
            // simulation gets the spare threads (input-queued routers only).
            let per_point = (opts.jobs / opts.jobs.min(loads.len()).max(1)).max(1);
            let work = |k: usize| {
                let t = Synthetic {
                    rate: loads[k] * sat,
                    ..base
                };
                traffic_point(model, &t, engine, &opts.des, t0, per_point)
            };
            std::thread::scope(|scope| {
                let mut a = ahead(scope, opts.jobs, loads.len(), &work);
                let mut r = Vec::new();
                for (k, &l) in loads.iter().enumerate() {
                    sink.progress(&what(l), done as u64, total as u64);
                    done += 1;
                    check_interrupt()?;
                    r.push(a.take(k)?);
                }
                Ok::<_, ModelError>(r)
            })?
        };
        for (p, s) in results {
            if let Some(s) = s {
                let acc = sim_total.get_or_insert(SimStats {
                    drained: true,
                    ..Default::default()
                });
                acc.cycles += s.cycles;
                acc.routers = s.routers;
                acc.events += s.events;
                acc.drained &= s.drained;
            }
            points.push(p);
        }
        let observed = points
            .iter()
            .take_while(|p| p.stable)
            .map(|p| p.offered)
            .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
        let rec = Traffic {
            preset: model.label.clone(),
            engine: engine.into(),
            pattern: name.into(),
            flits: base.flits,
            points,
            zero_load_latency_cycles: t0,
            mean_hops: zero.mean_hops,
            saturation_rate: sat,
            router_saturation_rate: (model.spec.noc.router == crate::spec::RouterKind::InputQueued)
                .then(|| curve.router_saturation_rate()),
            saturation_observed: observed,
            bisection_bound: bisection,
            simulation: sim_total,
        };
        sink.push(Record::new(key, Origin::Modeled, &rec).with_warnings(router_warning(model)))?;
        both.push(rec);
    }
    if both.len() == 2 {
        let (a, d) = (&both[0], &both[1]);
        let mut metrics = Vec::new();
        for pa in &a.points {
            if let Some(pd) = d.points.iter().find(|p| p.offered == pa.offered) {
                metrics.push(CheckMetric::new(
                    &format!(
                        "latency_cycles at {:.0}% of saturation",
                        100.0 * pa.offered / sat
                    ),
                    pa.latency_cycles,
                    pd.latency_cycles,
                ));
            }
        }
        let key = format!(
            "model/check/traffic/{}/{name}/flits{}",
            model.label, base.flits
        );
        if !sink.done(&key) {
            sink.push(Record::new(
                key,
                Origin::Modeled,
                &Check {
                    preset: model.label.clone(),
                    experiment: name.into(),
                    point: "latency versus offered load".into(),
                    metrics,
                },
            ))?;
        }
    }
    sink.progress(name, total as u64, total as u64);
    Ok(())
}
