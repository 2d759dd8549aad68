//! Multiplexing as an uncertainty: how far a scaled value may be from the count over
//! the whole run, what that leaves uncertain in a metric, and how many rotations a run
//! gets.
//!
//! When more groups are asked for than the counters hold, the kernel rotates them
//! round-robin every `perf_event_mux_interval_ms` (a property of each PMU in sysfs), and
//! each value is extrapolated: `count / f` with `f = time_running / time_enabled`. The
//! extrapolation is exact only if the event's rate in the slices its group was not on
//! the counters equals its rate in the slices it was. How far it can be off is not a
//! fact the kernel reports; it needs a model. This module's model is numalab's own
//! (not the kernel's or a vendor's), stated here and in docs/profile.md:
//!
//! - **Worst case** (`worst = 1 - f`): in the slices not counted, the event ran
//!   anywhere from not at all to twice the rate of the slices counted. The low end is
//!   a hard floor (the raw count was counted, so the true total is at least `f` times
//!   the scaled value); the high end is the assumption. No number of rotations shrinks
//!   it: a workload whose phases keep step with the rotation defeats every one.
//! - **Typical** (`typical = (1 - f) / sqrt(R)`): with `R` full rotations through the
//!   `G` groups (`R = T / (interval x G)` for a run of `T`), each rotation extrapolates
//!   its own short stretch; when the rate's changes are unrelated to the rotation, the
//!   stretches' errors (each within the worst case above) are independent and partly
//!   cancel, so one standard deviation of their sum is at most `(1 - f) / sqrt(R)`.
//!   Without the interval (sysfs unreadable, or an import) `R` is unknown and typical
//!   is the worst case.
//! - **The run's own evidence** (interval mode): the timeline's intervals are
//!   extrapolated separately, so their sum and the whole run's value differ by what
//!   the extrapolation got wrong somewhere; where that relative difference is larger
//!   than the model's typical (or worst), it is taken instead.
//!
//! A value counted all the time (`f = 1`) has no multiplexing uncertainty. A metric's
//! range (`metrics::metric_interval`) is its formula evaluated over its inputs'
//! intervals ([`numalab_expr::Interval`], interval arithmetic: an outer bound, wider than the truth when a formula names an
//! input twice or its inputs share a group's time slices).

use crate::metrics::{EventState, EventValue};
use numalab_records::pmu::{GroupRecord, IntervalPoint, Multiplexing, Profile, Uncertainty};
use std::path::Path;

/// Below this running fraction a value counts as multiplexed (rounding in the kernel's
/// times leaves fully counted values a hair under 1).
pub const FULL: f64 = 0.999;

/// The kernel's rotation interval of the first of `pmus` that has one
/// (`/sys/bus/event_source/devices/PMU/perf_event_mux_interval_ms` under `sysroot`),
/// in ms; None when none can be read (the rotations are then not known).
pub fn mux_interval_ms(sysroot: &Path, pmus: &[&str]) -> Option<u64> {
    pmus.iter().find_map(|p| {
        let path = sysroot
            .join("sys/bus/event_source/devices")
            .join(p)
            .join("perf_event_mux_interval_ms");
        let ms: u64 = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
        (ms > 0).then_some(ms)
    })
}

/// Expected full rotations through `groups` groups in a run of `seconds`, rotated every
/// `interval_ms`: seconds / (interval x groups).
pub fn rotations(seconds: f64, interval_ms: u64, groups: usize) -> f64 {
    if groups == 0 || interval_ms == 0 {
        return 0.0;
    }
    seconds / (interval_ms as f64 / 1000.0 * groups as f64)
}

/// The model's uncertainty of a value counted a fraction `f` of the run, with `R`
/// rotations when known. `f >= FULL` gives zeros.
pub fn model(f: f64, rotations: Option<f64>) -> Uncertainty {
    let f = f.clamp(0.0, 1.0);
    let worst = if f >= FULL { 0.0 } else { 1.0 - f };
    match rotations {
        Some(r) if r >= 1.0 => Uncertainty {
            typical: worst / r.sqrt(),
            worst,
            basis: "model".into(),
        },
        _ => Uncertainty {
            typical: worst,
            worst,
            basis: "fraction only".into(),
        },
    }
}

/// Sets the model's uncertainty on every counted value with a running fraction below
/// [`FULL`] (others get none).
pub fn apply(values: &mut [EventValue], rotations: Option<f64>) {
    for v in values {
        v.uncertainty = match (v.state, v.value, v.running_fraction) {
            (EventState::Counted, Some(_), Some(f)) if f < FULL => Some(model(f, rotations)),
            _ => None,
        };
    }
}

/// Interval mode: where the sum of an event's per-interval values differs from its
/// whole-run value by more (relatively) than its typical uncertainty, that difference
/// becomes its typical (and, when larger, its worst) with basis `intervals`.
pub fn apply_timeline(values: &mut [EventValue], timeline: &[IntervalPoint]) {
    if timeline.is_empty() {
        return;
    }
    for v in values {
        let (Some(u), Some(whole)) = (v.uncertainty.as_mut(), v.value) else {
            continue;
        };
        let parts: Vec<f64> = timeline
            .iter()
            .filter_map(|p| p.counts.get(&v.name).copied())
            .collect();
        if parts.len() != timeline.len() || whole <= 0.0 {
            continue; // an interval without a value: no sum to compare
        }
        let d = (parts.iter().sum::<f64>() - whole).abs() / whole;
        if d > u.typical {
            u.typical = d;
            u.worst = u.worst.max(d);
            u.basis = "intervals".into();
        }
    }
}

/// The profile's summary: None when no hardware value was multiplexed. Without
/// `groups` (imports) the groups, run length and rotations are absent.
pub fn summary(
    groups: &[GroupRecord],
    events: &[EventValue],
    counters: Option<usize>,
    interval_ms: Option<u64>,
    fewest_groups: Option<usize>,
) -> Option<Multiplexing> {
    let multiplexed: Vec<&EventValue> = events
        .iter()
        .filter(|e| !e.software && e.uncertainty.is_some())
        .collect();
    if multiplexed.is_empty() {
        return None;
    }
    let (n, seconds) = shape(groups);
    let live = !groups.is_empty();
    let max = |f: fn(&Uncertainty) -> f64| {
        multiplexed
            .iter()
            .filter_map(|e| e.uncertainty.as_ref().map(f))
            .fold(0.0, f64::max)
    };
    Some(Multiplexing {
        groups: live.then_some(n),
        fewest_groups,
        counters,
        seconds: live.then_some(seconds),
        mux_interval_ms: interval_ms,
        rotations: interval_ms
            .filter(|_| live)
            .map(|ms| rotations(seconds, ms, n)),
        min_running_fraction: multiplexed
            .iter()
            .filter_map(|e| e.running_fraction)
            .fold(1.0, f64::min),
        typical: max(|u| u.typical),
        worst: max(|u| u.worst),
        values: multiplexed.len(),
    })
}

/// Sets the uncertainty on a live profile's values (its groups' and its summary
/// events'), widened by the timeline's evidence in interval mode, and its summary
/// (`fewest_groups` from the planner, when asked). Call before the metrics are
/// evaluated, so they carry their ranges.
pub fn annotate(profile: &mut Profile, interval_ms: Option<u64>, fewest_groups: Option<usize>) {
    let (n, seconds) = shape(&profile.groups);
    let turns = interval_ms.map(|ms| rotations(seconds, ms, n));
    for g in &mut profile.groups {
        apply(&mut g.values, turns);
        apply_timeline(&mut g.values, &profile.timeline);
    }
    apply(&mut profile.events, turns);
    apply_timeline(&mut profile.events, &profile.timeline);
    profile.multiplexing = summary(
        &profile.groups,
        &profile.events,
        profile.counters,
        interval_ms,
        fewest_groups,
    );
}

/// Hardware groups in the run that had the most, and the longest time a group was
/// enabled, seconds.
pub fn shape(groups: &[GroupRecord]) -> (usize, f64) {
    let hw = |g: &&GroupRecord| g.values.iter().any(|v| !v.software);
    let runs = groups.iter().map(|g| g.run).max().map_or(0, |r| r + 1);
    let n = (0..runs)
        .map(|r| groups.iter().filter(hw).filter(|g| g.run == r).count())
        .max()
        .unwrap_or(0);
    let ns = groups
        .iter()
        .filter(hw)
        .filter_map(|g| g.time_enabled_ns)
        .max()
        .unwrap_or(0);
    (n, ns as f64 / 1e9)
}

/// The one line a report prints ([`Multiplexing::line`]).
pub fn line(m: &Multiplexing) -> String {
    m.line()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{metric_interval, range};

    fn counted(name: &str, value: f64, f: f64) -> EventValue {
        EventValue {
            name: name.into(),
            code: None,
            value: Some(value),
            raw_count: Some((value * f) as u64),
            running_fraction: Some(f),
            time_enabled_ns: None,
            time_running_ns: None,
            supported: true,
            state: EventState::Counted,
            reason: None,
            unit: None,
            software: false,
            run: None,
            advertised: None,
            uncertainty: None,
        }
    }

    #[test]
    fn a_quarter_counted_and_fully_counted() {
        // f = 0.25, 16 rotations: worst 75%, typical 75% / 4.
        let u = model(0.25, Some(16.0));
        assert!((u.worst - 0.75).abs() < 1e-12);
        assert!((u.typical - 0.1875).abs() < 1e-12);
        assert_eq!(u.basis, "model");
        // The worst case's low end is the raw count: 400 scaled from 100 counted.
        let mut v = vec![counted("X", 400.0, 0.25), counted("Y", 50.0, 1.0)];
        apply(&mut v, Some(16.0));
        let w = range(&v[0], true).unwrap();
        assert!(
            (w.lo - 100.0).abs() < 1e-9 && (w.hi - 700.0).abs() < 1e-9,
            "{w:?}"
        );
        // f = 1: no multiplexing uncertainty at all.
        assert_eq!(v[1].uncertainty, None);
        assert_eq!(range(&v[1], true), None);
        let z = model(1.0, Some(16.0));
        assert_eq!((z.typical, z.worst), (0.0, 0.0));
        // Without the rotations, typical is the worst case.
        let n = model(0.25, None);
        assert_eq!(
            (n.typical, n.worst, n.basis.as_str()),
            (0.75, 0.75, "fraction only")
        );
    }

    #[test]
    fn rotations_from_run_length_interval_and_groups() {
        // 1.2 s, 4 ms, 4 groups: 1.2 / 0.016 = 75.
        assert!((rotations(1.2, 4, 4) - 75.0).abs() < 1e-9);
        assert_eq!(rotations(1.0, 4, 0), 0.0);
    }

    #[test]
    fn interval_read_from_sysfs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir
            .path()
            .join("sys/bus/event_source/devices/armv8_pmuv3_0");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("perf_event_mux_interval_ms"), "4\n").unwrap();
        assert_eq!(
            mux_interval_ms(dir.path(), &["cpu", "armv8_pmuv3_0"]),
            Some(4)
        );
        assert_eq!(mux_interval_ms(dir.path(), &["cpu"]), None);
    }

    #[test]
    fn timeline_difference_widens_the_typical() {
        let mut v = vec![counted("X", 1000.0, 0.5)];
        apply(&mut v, Some(100.0)); // typical 5%
        let point = |x: f64| IntervalPoint {
            start_s: 0.0,
            end_s: 1.0,
            running_fraction: Some(0.5),
            counts: [("X".to_string(), x)].into_iter().collect(),
            metrics: Default::default(),
            inconsistent: Vec::new(),
        };
        // Sum 1099 against 1000: 9.9% off, more than the model's 5%.
        apply_timeline(&mut v, &[point(600.0), point(499.0)]);
        let u = v[0].uncertainty.as_ref().unwrap();
        assert!((u.typical - 0.099).abs() < 1e-9, "{u:?}");
        assert_eq!(u.worst, 0.5);
        assert_eq!(u.basis, "intervals");
        // Within the model: unchanged.
        let mut w = vec![counted("X", 1000.0, 0.5)];
        apply(&mut w, Some(100.0));
        apply_timeline(&mut w, &[point(510.0), point(500.0)]);
        assert_eq!(w[0].uncertainty.as_ref().unwrap().basis, "model");
    }

    #[test]
    fn ipc_range_propagates_from_its_inputs() {
        let c = crate::catalog::load("neoverse-n1").unwrap();
        let def = c.metric("ipc").unwrap();
        assert_eq!(def.formula, "INST_RETIRED / CPU_CYCLES");
        // Instructions a quarter of the run (worst +-75%), cycles all of it.
        let mut ev = vec![
            counted("INST_RETIRED", 2.0e9, 0.25),
            counted("CPU_CYCLES", 1.0e9, 1.0),
        ];
        apply(&mut ev, Some(16.0));
        let r = metric_interval(def, &ev).unwrap();
        // typical +-18.75%: 2 * [0.8125, 1.1875]; worst 2 * [0.25, 1.75].
        let close = |a: Option<f64>, b: f64| assert!((a.unwrap() - b).abs() < 1e-9, "{a:?} {b}");
        close(r.low, 1.625);
        close(r.high, 2.375);
        close(r.worst_low, 0.5);
        close(r.worst_high, 3.5);
        assert!(r.contains(2.0) && !r.contains(2.4));
        // Both counted all the time: no range.
        let mut full = vec![
            counted("INST_RETIRED", 2.0e9, 1.0),
            counted("CPU_CYCLES", 1.0e9, 1.0),
        ];
        apply(&mut full, Some(16.0));
        assert_eq!(metric_interval(def, &full), None);
    }
}
