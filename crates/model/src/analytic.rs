//! The analytic engine: exact per-resource loads for a traffic matrix, zero-load
//! latency, queueing per link and virtual network, and bandwidth ceilings. Answers in
//! milliseconds, and is the reference the discrete-event engine is checked against.
//!
//! Resources: every directed mesh link of every virtual network (with `links_per_vn`
//! parallel lanes), the injection and ejection port of every stop and network, the socket
//! link, and every memory controller (its channels as parallel servers). A packet's
//! latency is its zero-load latency (`t_inject + H (t_router + t_link) + t_eject +
//! flits - 1`) plus the mean wait at each resource on its route:
//! - one lane: `W = sum(lambda S^2) / (2 (1 - rho)) * (1 - sum_i rho_i^2 / rho^2)`: the
//!   M/D/1 (Pollaczek-Khinchine) wait, times the finite-input correction of an output
//!   queue fed by a few inputs that each deliver at most one flit per cycle (Karol,
//!   Hluchyj and Morgan 1987); with many equal inputs it tends to M/D/1, with one input
//!   it is 0 (a lone stream never waits);
//! - c lanes or channels: M/D/c by Allen-Cunneen, half the Erlang-C M/M/c wait.
//!
//! With input-queued routers (`noc.router = "input-queued"`) the zero-load latency is
//! their pipeline's, and input ports lose cycles in switch allocation
//! ([`Network::allocation_losses`]), which brings saturation below the link bound; their
//! finite buffers and few VCs block packets for VCs and credits
//! ([`Network::buffer_blocking`]), which brings it lower still.
//!
//! Closed-loop cores (each with `outstanding` requests) are solved as a fixed point of
//! Little's law: rate = outstanding / round trip, with round trips from the loads the
//! rates cause. Resources at or beyond 99.9% utilization make the result a bound and
//! are flagged (`saturated`); the discrete-event engine shows what happens there.

mod application;
mod iq;
mod network;
mod queueing;
mod synthetic;

pub use application::app;
pub use network::Network;
pub use synthetic::{saturation_rate, synthetic, SyntheticCurve};

/// The local (injection and ejection) port of a router, after the four directions.
const LOCAL: usize = 4;
/// The utilization at which a resource counts as saturated (waits are capped there).
const RHO_MAX: f64 = 0.999;

#[cfg(test)]
mod tests {
    use super::queueing::erlang_c;
    use super::*;
    use crate::model::Model;
    use crate::traffic::{Pattern, Synthetic};

    #[test]
    fn erlang_c_known_values() {
        // One server: the probability of waiting is the utilization.
        assert!((erlang_c(1, 0.7) - 0.7).abs() < 1e-12);
        // Two servers at a = 1 erlang: C = 1/3.
        assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn uniform_saturation_is_the_bisection_bound() {
        for k in [4u32, 8] {
            let m =
                Model::load("mesh", &[format!("noc.cols={k}"), format!("noc.rows={k}")]).unwrap();
            let t = Synthetic {
                pattern: Pattern::Uniform,
                rate: 0.1,
                flits: 1,
            };
            let s = saturation_rate(&m, &t);
            // Even k with XY routing: the central links carry k/4 of the per-node rate.
            assert!((s - 4.0 / f64::from(k)).abs() < 1e-9, "k={k}: {s}");
        }
    }

    #[test]
    fn zero_load_latency_is_the_formula() {
        // The output-queued router's formula (the input-queued pipeline's is checked in
        // tests/router.rs).
        let m = Model::load("mesh", &["noc.router=output-queued".into()]).unwrap();
        let t = Synthetic {
            pattern: Pattern::Uniform,
            rate: 1e-9,
            flits: 1,
        };
        let f = synthetic(&m, &t);
        let h = crate::geometry::mean_hops_formula(8);
        // T0 = H (t_router + t_link) + t_inject + t_eject, all 1 cycle in the preset.
        assert!(
            (f.packet_latency_cycles - (2.0 * h + 2.0)).abs() < 1e-6,
            "{}",
            f.packet_latency_cycles
        );
        assert!((f.mean_hops - h).abs() < 1e-12);
    }
}
