//! Open-loop synthetic traffic: a pattern's latency-versus-load curve and its
//! saturation rates.

use super::network::{Loads, Network};
use crate::model::Model;
use crate::router::Flow;
use crate::traffic::{Figures, Synthetic};

/// A synthetic pattern's routes and per-unit-rate loads, built once; every offered rate
/// is then a rescaling (loads are linear in the rate), so a whole latency-versus-load
/// curve costs little more than one point.
pub struct SyntheticCurve<'a> {
    net: Network<'a>,
    unit_rate: Vec<f64>,
    unit: Loads,
}

impl<'a> SyntheticCurve<'a> {
    /// Routes every packet of the pattern (socket 0's stops, one virtual network).
    pub fn new(model: &'a Model, traffic: &Synthetic) -> Self {
        let mut flows = Vec::new();
        for src in 0..Synthetic::stops(model) {
            for (dst, p) in traffic.destinations(model, src) {
                if p > 0.0 {
                    flows.push(Flow {
                        src,
                        dst,
                        rate: p,
                        vn: 0,
                    });
                }
            }
        }
        Self::from_flows(model, &flows, traffic.flits)
    }

    /// Routes explicit flows of `flits`-flit packets, each `rate` packets per cycle at
    /// unit offered load: [`Self::at`]`(r)` scales every flow by `r`. A flow whose source
    /// is its destination touches no link: its packets go from the stop's injection port
    /// through its own router to its ejection port, as in the discrete-event router and
    /// BookSim (whose transpose has the diagonal nodes send to themselves).
    pub fn from_flows(model: &'a Model, flows: &[Flow], flits: u32) -> Self {
        let mut net = Network::new(model);
        let mut unit_rate: Vec<f64> = Vec::new();
        for f in flows {
            if f.rate > 0.0 {
                let id = net.leg(f.src, f.dst, f.vn) as usize;
                if unit_rate.len() <= id {
                    unit_rate.resize(id + 1, 0.0);
                }
                unit_rate[id] += f.rate;
            }
        }
        // Synthetic packets may be longer than the request network's 1 flit.
        for leg in &mut net.legs {
            leg.t0 += f64::from(flits) - leg.flits;
            leg.flits = f64::from(flits);
        }
        let unit = net.loads(&unit_rate, &[]);
        SyntheticCurve {
            net,
            unit_rate,
            unit,
        }
    }

    /// The same curve with unbounded input buffers (no finite-buffer correction): the
    /// analytic model before it had one, kept to show what the correction changes.
    pub fn infinite_buffers(mut self) -> Self {
        self.net.finite_buffers = false;
        self.net.finish_waits(&mut self.unit);
        self
    }

    /// Every resource's load and wait at an offered rate: the unit loads scaled.
    fn loads_at(&self, rate: f64) -> Loads {
        let mut l = self.unit.clone();
        for r in 0..l.lambda.len() {
            l.lambda[r] *= rate;
            l.rho[r] *= rate;
            l.s2[r] *= rate;
            for i in &mut l.inrho[r] {
                *i *= rate;
            }
            l.serial[r] = 0.0;
        }
        self.net.finish_waits(&mut l);
        l
    }

    /// Figures at an offered rate (packets per stop per cycle).
    pub fn at(&self, rate: f64) -> Figures {
        let l = self.loads_at(rate);
        let leg_rate: Vec<f64> = self.unit_rate.iter().map(|u| u * rate).collect();
        self.net.figures(&leg_rate, &l)
    }

    /// Utilization of the busiest resource at an offered rate: links and ports, and
    /// with input-queued routers the input ports with their lost allocation cycles.
    fn max_util_at(&self, rate: f64) -> f64 {
        self.loads_at(rate).max_util
    }

    /// The offered rate at which some resource reaches 100% utilization in the model of
    /// its routers: the link bound ([`Self::saturation_rate`]) for output-queued routers;
    /// lower for input-queued ones, whose inputs lose cycles in switch allocation and
    /// whose VCs wait for credits (found by bisection: the input ports' and VCs'
    /// utilization grows faster than the rate).
    pub fn router_saturation_rate(&self) -> f64 {
        let ideal = self.saturation_rate();
        if !self.net.iq || !ideal.is_finite() {
            return ideal;
        }
        let (mut lo, mut hi) = (0.0, ideal);
        for _ in 0..50 {
            let mid = 0.5 * (lo + hi);
            if self.max_util_at(mid) < 1.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The offered rate at which the busiest link (or port) reaches 100% utilization:
    /// the pattern's saturation throughput under ideal flow control.
    pub fn saturation_rate(&self) -> f64 {
        let max = self.unit.rho[..(self.net.n_stops * 24) as usize]
            .iter()
            .copied()
            .fold(0.0, f64::max);
        if max > 0.0 {
            1.0 / max
        } else {
            f64::INFINITY
        }
    }
}

/// Open-loop synthetic traffic: latency, loads and hops at the offered rate.
pub fn synthetic(model: &Model, traffic: &Synthetic) -> Figures {
    SyntheticCurve::new(model, traffic).at(traffic.rate)
}

/// See [`SyntheticCurve::saturation_rate`].
pub fn saturation_rate(model: &Model, traffic: &Synthetic) -> f64 {
    SyntheticCurve::new(model, traffic).saturation_rate()
}
