//! Queueing formulas: Erlang C and the M/D/c wait of a multi-server resource.

use super::RHO_MAX;

/// Erlang C: probability of waiting in M/M/c with offered load `a` (erlangs).
pub(super) fn erlang_c(c: u32, a: f64) -> f64 {
    // Erlang B by recursion, then C.
    let mut b = 1.0;
    for k in 1..=c {
        b = a * b / (f64::from(k) + a * b);
    }
    let rho = a / f64::from(c);
    if rho >= 1.0 {
        return 1.0;
    }
    b / (1.0 - rho * (1.0 - b))
}

/// The mean wait for one of `c` servers of service `s` (cycles) at arrival rate `lambda`:
/// M/D/c by Allen-Cunneen (half the Erlang-C wait of M/M/c), utilization capped at
/// [`RHO_MAX`] as for every other resource.
pub(super) fn mdc_wait(c: u32, lambda: f64, s: f64) -> f64 {
    if lambda <= 0.0 || s <= 0.0 {
        return 0.0;
    }
    let cf = f64::from(c);
    let rho = (lambda * s / cf).min(RHO_MAX);
    erlang_c(c, cf * rho) * s / (cf * (1.0 - rho)) / 2.0
}
