//! Closed-loop application traffic: per-core demand profiles and the fixed point of
//! request rates and round trips.

use super::network::{Loads, Network};
use super::RHO_MAX;
use crate::model::Model;
use crate::traffic::{plan, App, Data, Figures, Op, Outcome, Step};
use std::collections::HashMap;

/// Per-core demand of an application: legs and memory visits per request.
struct Profile {
    legs: Vec<(u32, f64, f64)>,
    mems: Vec<(u32, f64, f64)>,
    fixed: f64,
}

/// Samples of lines used to find how a node's addresses spread over homes and
/// controllers (a multiple of every power-of-two count up to 2^14).
const SAMPLE_LINES: u64 = 16384;

/// The distribution of (home, controller) locations of a core's data.
fn classes(model: &Model, app: &App, core: usize) -> Vec<(crate::model::Location, f64)> {
    if let Data::Fixed { .. } = app.data {
        return vec![(app.locate(model, core, 0), 1.0)];
    }
    let mut map: HashMap<(usize, usize, Option<usize>), u32> = HashMap::new();
    for line in 0..SAMPLE_LINES {
        let l = app.locate(model, core, line);
        *map.entry((l.home, l.mc, l.cache_mc)).or_default() += 1;
    }
    let mut v: Vec<_> = map
        .into_iter()
        .map(|((home, mc, cache_mc), n)| {
            (
                crate::model::Location { home, mc, cache_mc },
                f64::from(n) / SAMPLE_LINES as f64,
            )
        })
        .collect();
    v.sort_by_key(|(l, _)| (l.home, l.mc, l.cache_mc));
    v
}

fn build_profile(
    net: &mut Network,
    app: &App,
    core: usize,
    cache: &mut HashMap<u32, Vec<(crate::model::Location, f64)>>,
) -> Profile {
    let model = net.model;
    let key = match app.data {
        Data::Node { node } => node,
        Data::Interleave => u32::MAX,
        Data::Local => model.cores[core].node,
        Data::Fixed { .. } => u32::MAX - 1,
    };
    let cls = cache
        .entry(key)
        .or_insert_with(|| classes(model, app, core))
        .clone();
    let cstop = model.cores[core].stop;
    let lookup = f64::from(model.spec.slc.lookup_cycles);
    let mut legs: HashMap<u32, (f64, f64)> = HashMap::new();
    let mut mems: HashMap<u32, (f64, f64)> = HashMap::new();
    let mut fixed = 0.0;
    let mut snoop_home: HashMap<u32, f64> = HashMap::new();
    let fixed_hit = match app.data {
        Data::Fixed { hit, .. } => Some(hit),
        _ => None,
    };
    let n_ops = app.mix.len() as f64;
    for (loc, p) in &cls {
        for &op in &app.mix {
            let w_op = p / n_ops;
            let slc = match fixed_hit {
                Some(h) => vec![(h, 1.0)],
                None => vec![(true, app.slc_hit), (false, 1.0 - app.slc_hit)],
            };
            for (hit, ph) in slc {
                if ph == 0.0 {
                    continue;
                }
                let msc = if loc.cache_mc.is_some() && !hit {
                    vec![(true, app.msc_hit), (false, 1.0 - app.msc_hit)]
                } else {
                    vec![(false, 1.0)]
                };
                for (mh, pm) in msc {
                    if pm == 0.0 {
                        continue;
                    }
                    let w = w_op * ph * pm;
                    let pl = plan(
                        model,
                        op,
                        cstop,
                        *loc,
                        Outcome {
                            slc_hit: hit,
                            msc_hit: mh,
                            snoop: None,
                        },
                    );
                    let mut crit = true;
                    for st in pl.steps() {
                        match *st {
                            Step::Packet { from, to, vn } => {
                                let id = net.leg(from, to, vn);
                                let e = legs.entry(id).or_default();
                                e.0 += w;
                                if crit {
                                    e.1 += w;
                                }
                            }
                            Step::Lookup => {
                                if crit {
                                    fixed += w * lookup;
                                }
                            }
                            Step::Memory { mc } => {
                                let e = mems.entry(mc).or_default();
                                e.0 += w;
                                if crit {
                                    e.1 += w;
                                }
                            }
                            Step::Complete => crit = false,
                        }
                    }
                    if op == Op::Read && app.snoop > 0.0 {
                        *snoop_home.entry(model.slices[loc.home].stop).or_default() +=
                            w * app.snoop;
                    }
                }
            }
        }
    }
    let others: Vec<u32> = app
        .cores
        .iter()
        .filter(|&&c| c != core)
        .map(|&c| model.cores[c].stop)
        .collect();
    if !others.is_empty() {
        let share = 1.0 / others.len() as f64;
        // In home order: legs get their ids in the order they are first seen, and the
        // sums below depend on the order of their terms, so a map's order would make the
        // figures differ in their last bits from one run to the next.
        let mut snoop_home: Vec<(u32, f64)> = snoop_home.into_iter().collect();
        snoop_home.sort_by_key(|x| x.0);
        for (h, w) in snoop_home {
            for &t in &others {
                for (a, b, vn) in [
                    (h, t, crate::model::SNP as u8),
                    (t, h, crate::model::RSP as u8),
                ] {
                    let id = net.leg(a, b, vn);
                    let e = legs.entry(id).or_default();
                    e.0 += w * share;
                    e.1 += w * share;
                }
            }
        }
    }
    let mut legs: Vec<(u32, f64, f64)> = legs.into_iter().map(|(k, (a, b))| (k, a, b)).collect();
    legs.sort_by_key(|x| x.0);
    let mut mems: Vec<(u32, f64, f64)> = mems.into_iter().map(|(k, (a, b))| (k, a, b)).collect();
    mems.sort_by_key(|x| x.0);
    Profile { legs, mems, fixed }
}

/// Closed-loop application traffic: the fixed point of rates and round trips.
pub fn app(model: &Model, app: &App) -> Figures {
    let mut net = Network::new(model);
    let mut cache = HashMap::new();
    let profiles: Vec<Profile> = app
        .cores
        .iter()
        .map(|&c| build_profile(&mut net, app, c, &mut cache))
        .collect();
    let n_legs = net.legs.len();
    let n_mcs = model.mcs.len();
    let m = f64::from(app.outstanding);
    let think = f64::from(app.think_cycles);
    // Zero-load round trips give the starting rates.
    let rtt0: Vec<f64> = profiles
        .iter()
        .map(|p| {
            p.legs
                .iter()
                .map(|&(l, _, c)| c * net.legs[l as usize].t0)
                .sum::<f64>()
                + p.mems
                    .iter()
                    .map(|&(mc, _, c)| {
                        c * (model.mcs[mc as usize].service_cycles
                            + model.mcs[mc as usize].latency_cycles)
                    })
                    .sum::<f64>()
                + p.fixed
                + think
        })
        .collect();
    let mut x: Vec<f64> = rtt0.iter().map(|r| m / r).collect();
    // Round trips (and loads) at given per-core rates.
    let eval = |x: &[f64]| -> (Vec<f64>, Loads, Vec<f64>, Vec<f64>) {
        let mut leg_rate = vec![0.0; n_legs];
        let mut mc_rate = vec![0.0; n_mcs];
        for (p, &xc) in profiles.iter().zip(x) {
            for &(l, w, _) in &p.legs {
                leg_rate[l as usize] += xc * w;
            }
            for &(mc, w, _) in &p.mems {
                mc_rate[mc as usize] += xc * w;
            }
        }
        let loads = net.loads(&leg_rate, &mc_rate);
        let leg_lat: Vec<f64> = net
            .legs
            .iter()
            .map(|leg| leg.t0 + net.leg_wait(&loads, leg))
            .collect();
        let mem_lat: Vec<f64> = (0..n_mcs)
            .map(|mc| {
                model.mcs[mc].service_cycles
                    + model.mcs[mc].latency_cycles
                    + loads.wait[net.mc_res(mc as u32) as usize]
            })
            .collect();
        let rtt = profiles
            .iter()
            .map(|p| {
                p.legs
                    .iter()
                    .map(|&(l, _, c)| c * leg_lat[l as usize])
                    .sum::<f64>()
                    + p.mems
                        .iter()
                        .map(|&(mc, _, c)| c * mem_lat[mc as usize])
                        .sum::<f64>()
                    + p.fixed
                    + think
            })
            .collect();
        (rtt, loads, leg_rate, mc_rate)
    };
    // Little's law residual: how far each core's rate is from outstanding / round trip.
    let residual = |x: &[f64], rtt: &[f64]| -> f64 {
        x.iter()
            .zip(rtt)
            .map(|(xc, r)| ((m / r - xc) / xc).abs())
            .fold(0.0, f64::max)
    };
    // Fixed-point iteration with a backtracking step: move each rate toward
    // outstanding / round trip, halving the step until the residual shrinks (the round
    // trip is steep near a bottleneck, where full steps oscillate).
    let (mut rtt, mut loads, mut leg_rate, mut mc_rate) = eval(&x);
    let mut r = residual(&x, &rtt);
    // Stop at 0.01% (far below the model's own error), or when steps stall: with waits
    // capped at the ceiling, a machine past its bottleneck has no exact fixed point and
    // is handled by the scaling below.
    let mut stalled = 0;
    for _ in 0..200 {
        if r < 1e-4 || stalled >= 3 {
            break;
        }
        let d: Vec<f64> = x.iter().zip(&rtt).map(|(xc, rt)| m / rt - xc).collect();
        let mut alpha = 1.0;
        loop {
            let xt: Vec<f64> = x
                .iter()
                .zip(&d)
                .map(|(xc, dc)| (xc + alpha * dc).max(xc * 1e-3))
                .collect();
            let (rt, lt, lr, mr) = eval(&xt);
            let res = residual(&xt, &rt);
            if res < r || alpha < 1e-4 {
                stalled = if res < r { 0 } else { stalled + 1 };
                x = xt;
                rtt = rt;
                loads = lt;
                leg_rate = lr;
                mc_rate = mr;
                r = res;
                break;
            }
            alpha *= 0.5;
        }
    }
    // Waits are capped at 99.9% utilization, so a machine with more requests in flight
    // than its bottleneck can serve converges to rates beyond it: scale every core down
    // to the bottleneck's capacity (the bound of a saturated closed network), and take
    // the round trip from Little's law.
    let peak = loads.rho.iter().copied().fold(0.0, f64::max);
    let bound = peak > RHO_MAX;
    if bound {
        let scale = RHO_MAX / peak;
        for xc in &mut x {
            *xc *= scale;
        }
        leg_rate.iter_mut().for_each(|v| *v *= scale);
        mc_rate.iter_mut().for_each(|v| *v *= scale);
        loads = net.loads(&leg_rate, &mc_rate);
        for (i, xc) in x.iter().enumerate() {
            rtt[i] = m / xc;
        }
    }
    let mut f = net.figures(&leg_rate, &loads);
    f.saturated |= bound;
    let total: f64 = x.iter().sum();
    f.requests_per_cycle = total;
    f.request_latency_cycles = x
        .iter()
        .zip(&rtt)
        .map(|(a, r)| a * (r - think))
        .sum::<f64>()
        / total;
    f.mc_accesses_per_cycle = mc_rate.clone();
    // Accesses by whether the requesting core is on the controller's node.
    f.mc_local_accesses_per_cycle = vec![0.0; n_mcs];
    f.mc_remote_accesses_per_cycle = vec![0.0; n_mcs];
    for ((p, &xc), &c) in profiles.iter().zip(&x).zip(&app.cores) {
        for &(mc, w, _) in &p.mems {
            let m = mc as usize;
            if model.cores[c].node == model.mcs[m].node {
                f.mc_local_accesses_per_cycle[m] += xc * w;
            } else {
                f.mc_remote_accesses_per_cycle[m] += xc * w;
            }
        }
    }
    f.mc_utilization = (0..n_mcs)
        .map(|mc| loads.rho[net.mc_res(mc as u32) as usize])
        .collect();
    f
}
