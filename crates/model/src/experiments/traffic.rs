//! Synthetic traffic: latency against offered load to saturation, analytic or
//! discrete-event.

use super::*;

/// Default offered loads, as fractions of the configured router's analytic saturation
/// estimate ([`offered_loads`]).
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

/// The router's name as `noc.router` spells it.
fn router_name(k: crate::spec::RouterKind) -> &'static str {
    match k {
        crate::spec::RouterKind::InputQueued => "input-queued",
        crate::spec::RouterKind::OutputQueued => "output-queued",
    }
}

/// The model with the other router than the configured one, for `--engine check`'s
/// third engine, or why that router cannot model this spec.
pub fn other_router(model: &Model) -> Result<Model, String> {
    use crate::spec::RouterKind;
    let mut m = model.clone();
    m.spec.noc.router = match model.spec.noc.router {
        RouterKind::InputQueued => RouterKind::OutputQueued,
        RouterKind::OutputQueued => RouterKind::InputQueued,
    };
    if m.spec.noc.router == RouterKind::InputQueued && model.geo.sockets > 1 {
        return Err(format!(
            "discrete-event input-queued: not run, the input-queued router models one socket and {} has {}",
            model.label, model.geo.sockets
        ));
    }
    Ok(m)
}

/// The zero-load latency the stability test of a model's points uses: the engines'
/// zero-load latency differs with the router, and the discrete-event points use the
/// pipeline of theirs.
fn stability_zero_load(model: &Model, curve: &analytic::SyntheticCurve, flits: u32) -> (f64, f64) {
    let zero = curve.at(1e-9);
    let t0 = if model.spec.noc.router == crate::spec::RouterKind::InputQueued {
        let n = &model.spec.noc;
        let link = f64::from(n.link_cycles_x + n.link_cycles_y) / 2.0;
        crate::router::zero_load_latency(model, zero.mean_hops, flits, link)
    } else {
        zero.packet_latency_cycles
    };
    (t0, zero.mean_hops)
}

/// The offered loads of a synthetic curve: `--loads` (or [`DEFAULT_LOADS`]) as
/// fractions of the configured router's analytic saturation estimate
/// ([`analytic::SyntheticCurve::router_saturation_rate`]: the link bound for
/// output-queued routers, lower for input-queued ones), and that estimate.
pub fn offered_loads(
    model: &Model,
    pattern: Pattern,
    opts: &Options,
) -> Result<(Vec<f64>, f64), ModelError> {
    let t = Synthetic {
        pattern,
        rate: 1e-9,
        flits: opts.flits.max(1),
    };
    loads_on(&analytic::SyntheticCurve::new(model, &t), opts)
}

/// [`offered_loads`] on a curve already built.
fn loads_on(
    curve: &analytic::SyntheticCurve,
    opts: &Options,
) -> Result<(Vec<f64>, f64), ModelError> {
    let loads = opts.loads.clone().unwrap_or_else(|| DEFAULT_LOADS.to_vec());
    if loads.iter().any(|&l| l.is_nan() || l <= 0.0 || l > 4.0) {
        return Err(usage(
            "--loads: fractions of the saturation rate must be in (0, 4]",
        ));
    }
    let sat = curve.router_saturation_rate();
    Ok((loads.iter().map(|l| l * sat).collect(), sat))
}

/// One engine's curve of a synthetic pattern.
struct Curve<'m> {
    /// "analytic", "des", or "des-input-queued" / "des-output-queued" for the other
    /// router of `--engine check`.
    label: String,
    model: &'m Model,
    curve: &'m analytic::SyntheticCurve<'m>,
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
    let (rates, sat) = loads_on(&curve, opts)?;
    let name = match pattern {
        Pattern::Uniform => "uniform",
        Pattern::Hotspot { .. } => "hotspot",
        Pattern::Transpose => "transpose",
    };
    let mut runs: Vec<Curve> = opts
        .engine
        .names()
        .iter()
        .map(|&e| Curve {
            label: e.into(),
            model,
            curve: &curve,
        })
        .collect();
    let mut not_run = Vec::new();
    let other = (opts.engine == Engine::Check).then(|| other_router(model));
    let other_curve = match &other {
        Some(Ok(m)) => Some(analytic::SyntheticCurve::new(m, &base)),
        Some(Err(why)) => {
            not_run.push(why.clone());
            None
        }
        None => None,
    };
    if let (Some(Ok(m)), Some(c)) = (&other, &other_curve) {
        runs.push(Curve {
            label: format!("des-{}", router_name(m.spec.noc.router)),
            model: m,
            curve: c,
        });
    }
    let total = runs.len() * rates.len();
    let mut done = 0;
    let mut recs: Vec<Traffic> = Vec::new();
    for run in &runs {
        let key = format!(
            "model/traffic/{}/{}/{name}/flits{}",
            model.label, run.label, base.flits
        );
        if sink.done(&key) {
            done += rates.len();
            continue;
        }
        let rec = match one_curve(run, name, base, &rates, sat, opts, sink, &mut done, total) {
            Ok(r) => r,
            // The other router of a check may refuse this spec: said, not fatal.
            Err(ModelError::Usage { msg }) if run.label.starts_with("des-") => {
                not_run.push(format!("{}: not run, {msg}", run.label));
                continue;
            }
            Err(e) => return Err(e),
        };
        sink.push(
            Record::new(key, Origin::Modeled, &rec).with_warnings(router_warning(run.model)),
        )?;
        recs.push(rec);
    }
    if opts.engine == Engine::Check {
        push_check(model, name, base.flits, sat, &recs, not_run, sink)?;
    }
    sink.progress(name, total as u64, total as u64);
    Ok(())
}

/// One engine's latency-versus-load curve at `rates` (packets per stop per cycle).
#[allow(clippy::too_many_arguments)]
fn one_curve(
    run: &Curve,
    name: &str,
    base: Synthetic,
    rates: &[f64],
    sat: f64,
    opts: &Options,
    sink: &mut dyn Sink,
    done: &mut usize,
    total: usize,
) -> Result<Traffic, ModelError> {
    let model = run.model;
    let engine = if run.label == "analytic" {
        "analytic"
    } else {
        "des"
    };
    let (t0, mean_hops) = stability_zero_load(model, run.curve, base.flits);
    let what = |r: f64| {
        format!(
            "{name} at {:.0}% of saturation ({})",
            100.0 * r / sat,
            run.label
        )
    };
    let results: Vec<(TrafficPoint, Option<SimStats>)> = if engine == "analytic" {
        let mut r = Vec::new();
        // No steady state at or beyond the model's own saturation: queues grow without
        // bound.
        let own = run.curve.router_saturation_rate();
        for &rate in rates {
            sink.progress(&what(rate), *done as u64, total as u64);
            *done += 1;
            check_interrupt()?;
            if rate >= own {
                continue;
            }
            r.push((analytic_point(run.curve, rate, t0), None));
        }
        r
    } else {
        // The points are separate seeded simulations: side by side on `jobs` threads,
        // taken in order; with fewer points than jobs, each point's simulation gets the
        // spare threads (input-queued routers only).
        let per_point = (opts.jobs / opts.jobs.min(rates.len()).max(1)).max(1);
        let work = |k: usize| {
            let t = Synthetic {
                rate: rates[k],
                ..base
            };
            traffic_point(model, &t, engine, &opts.des, t0, per_point)
        };
        std::thread::scope(|scope| {
            let mut a = ahead(scope, opts.jobs, rates.len(), &work);
            let mut r = Vec::new();
            for (k, &rate) in rates.iter().enumerate() {
                sink.progress(&what(rate), *done as u64, total as u64);
                *done += 1;
                check_interrupt()?;
                r.push(a.take(k)?);
            }
            Ok::<_, ModelError>(r)
        })?
    };
    let mut points = Vec::new();
    let mut sim_total: Option<SimStats> = None;
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
    let bisection = (model.geo.cols == model.geo.rows && base.pattern == Pattern::Uniform)
        .then(|| crate::geometry::saturation_formula(model.geo.cols) / f64::from(base.flits));
    Ok(Traffic {
        preset: model.label.clone(),
        engine: run.label.clone(),
        pattern: name.into(),
        flits: base.flits,
        points,
        zero_load_latency_cycles: t0,
        mean_hops,
        saturation_rate: run.curve.saturation_rate(),
        router_saturation_rate: (model.spec.noc.router == crate::spec::RouterKind::InputQueued)
            .then(|| run.curve.router_saturation_rate()),
        saturation_observed: observed,
        bisection_bound: bisection,
        simulation: sim_total,
    })
}

/// `--engine check`'s record: each offered load's latency in the analytic and
/// discrete-event engines with the configured router, and the discrete-event engine
/// with the other router where it ran, with their differences; and the saturation each
/// shows.
fn push_check(
    model: &Model,
    name: &str,
    flits: u32,
    sat: f64,
    recs: &[Traffic],
    not_run: Vec<String>,
    sink: &mut dyn Sink,
) -> Result<(), ModelError> {
    let find = |l: &str| recs.iter().find(|r| r.engine == l);
    let (Some(a), Some(d)) = (find("analytic"), find("des")) else {
        return Ok(()); // resumed: the curves are in an earlier run
    };
    let other = recs.iter().find(|r| r.engine.starts_with("des-"));
    let at = |r: &Traffic, offered: f64| {
        r.points
            .iter()
            .find(|p| p.offered == offered)
            .map(|p| p.latency_cycles)
    };
    let mut metrics = Vec::new();
    for pd in &d.points {
        let Some(la) = at(a, pd.offered) else {
            continue; // at or past the analytic saturation: no steady state
        };
        let mut m = CheckMetric::new(
            &format!(
                "latency_cycles at {:.0}% of saturation",
                100.0 * pd.offered / sat
            ),
            la,
            pd.latency_cycles,
        );
        if let Some(lo) = other.and_then(|o| at(o, pd.offered)) {
            m = m.with_other_router(lo);
        }
        metrics.push(m);
    }
    // Zero-load latency: the pipelines differ with the router (the output-queued one
    // charges `noc.router_cycles` per hop, the input-queued one its four stages), which
    // a latency difference between the routers contains at every load.
    let mut m = CheckMetric::new(
        "zero_load_latency_cycles",
        a.zero_load_latency_cycles,
        d.zero_load_latency_cycles,
    );
    if let Some(o) = other {
        m = m.with_other_router(o.zero_load_latency_cycles);
    }
    metrics.push(m);
    // Saturation: the analytic estimate against the highest stable load each
    // discrete-event curve ran (a point of the load grid).
    if let Some(sd) = d.saturation_observed {
        let mut m = CheckMetric::new(
            "saturation (analytic estimate; discrete-event: highest stable load run)",
            a.router_saturation_rate.unwrap_or(a.saturation_rate),
            sd,
        );
        if let Some(so) = other.and_then(|o| o.saturation_observed) {
            m = m.with_other_router(so);
        }
        metrics.push(m);
    }
    let key = format!("model/check/traffic/{}/{name}/flits{flits}", model.label);
    if sink.done(&key) {
        return Ok(());
    }
    let router = router_name(model.spec.noc.router);
    sink.push(Record::new(
        key,
        Origin::Modeled,
        &Check {
            preset: model.label.clone(),
            experiment: name.into(),
            point: format!(
                "latency versus offered load; loads as fractions of the {router} router's analytic saturation estimate, {sat:.4} packets/stop/cycle"
            ),
            metrics,
            router: Some(router.into()),
            other_router: other.map(|o| o.engine.trim_start_matches("des-").to_string()),
            not_run,
        },
    ))?;
    Ok(())
}
