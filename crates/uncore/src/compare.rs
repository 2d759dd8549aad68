//! A probe's own traffic against the memory controllers' count of the same interval.
//!
//! The controllers count everything that reaches memory: the probe, the rest of the
//! system, and the lines a store without a non-temporal hint reads before writing it
//! (write-allocate). A difference beyond the tolerance is a finding; controllers that
//! read 0 while the probe moved data are "not counted here", not a disagreement.

use numalab_records::uncore::{ProbeCheck, ProbeSide, UncoreReport};

/// Tolerance of [`compare_with_probe`], percent.
pub const TOLERANCE_PCT: f64 = 10.0;

fn total(
    report: &UncoreReport,
    f: fn(&numalab_records::uncore::SocketFigures) -> Option<f64>,
) -> Option<f64> {
    if report.sockets.is_empty() {
        return None;
    }
    let mut t = 0.0;
    for s in &report.sockets {
        t += f(s)?;
    }
    Some(t)
}

/// Compares the probe's bytes read and written in `seconds` with the controllers'
/// (all sockets). None when the report has no controller figure to compare (no
/// uncore PMU, or the events could not be counted: the report says why).
pub fn compare_with_probe(
    report: &UncoreReport,
    probe_bytes_read: f64,
    probe_bytes_written: f64,
    seconds: f64,
) -> Option<ProbeCheck> {
    if seconds <= 0.0 {
        return None;
    }
    let read = total(report, |s| s.read_gbps.value);
    let write = total(report, |s| s.write_gbps.value);
    let all = total(report, |s| s.total_gbps.value);
    let gbps = |b: f64| b / seconds / 1e9;
    let side = |name: &str, probe: f64, ctl: f64| ProbeSide {
        side: name.into(),
        probe_gbps: probe,
        controllers_gbps: ctl,
        difference_pct: if probe > 0.0 {
            100.0 * (ctl - probe) / probe
        } else if ctl > 0.0 {
            f64::INFINITY
        } else {
            0.0
        },
    };
    let sides = match (read, write) {
        (Some(r), Some(w)) => vec![
            side("read", gbps(probe_bytes_read), r),
            side("write", gbps(probe_bytes_written), w),
        ],
        _ => vec![side(
            "total",
            gbps(probe_bytes_read + probe_bytes_written),
            all?,
        )],
    };
    let probe_total: f64 = sides.iter().map(|s| s.probe_gbps).sum();
    let ctl_total: f64 = sides.iter().map(|s| s.controllers_gbps).sum();
    let fmt = |s: &ProbeSide| {
        format!(
            "{} {:.2} GB/s by the probe, {:.2} GB/s at the controllers ({:+.1}%)",
            s.side, s.probe_gbps, s.controllers_gbps, s.difference_pct
        )
    };
    let listed = sides.iter().map(fmt).collect::<Vec<_>>().join("; ");
    if probe_total > 0.0 && ctl_total == 0.0 {
        return Some(ProbeCheck {
            verdict: "not_counted".into(),
            tolerance_pct: TOLERANCE_PCT,
            sides,
            text: format!(
                "The memory controllers counted nothing while the probe moved {probe_total:.2} GB/s: their counters do not count here (a virtual PMU, or powered-down boxes), so the probe cannot be checked against them."
            ),
        });
    }
    let off: Vec<&ProbeSide> = sides
        .iter()
        .filter(|s| s.probe_gbps > 0.0 || s.controllers_gbps > 0.0)
        .filter(|s| s.difference_pct.is_nan() || s.difference_pct.abs() > TOLERANCE_PCT)
        .collect();
    if off.is_empty() {
        return Some(ProbeCheck {
            verdict: "agree".into(),
            tolerance_pct: TOLERANCE_PCT,
            sides,
            text: format!(
                "The memory controllers agree with the probe within {TOLERANCE_PCT}%: {listed}."
            ),
        });
    }
    let mut text = format!(
        "The memory controllers disagree with the probe by more than {TOLERANCE_PCT}%: {listed}."
    );
    // Write-allocate: stores without non-temporal hints read each line first.
    if let (Some(r), Some(_)) = (read, write) {
        let with_rfo = gbps(probe_bytes_read + probe_bytes_written);
        if probe_bytes_written > 0.0
            && with_rfo > 0.0
            && (100.0 * (r - with_rfo) / with_rfo).abs() <= TOLERANCE_PCT
        {
            text.push_str(&format!(
                " The reads match the probe's reads plus its writes ({with_rfo:.2} GB/s): its stores read each line before writing it (write-allocate); non-temporal stores avoid that."
            ));
        }
    }
    let more = sides.iter().any(|s| s.difference_pct > TOLERANCE_PCT);
    if more {
        text.push_str(" The controllers also count every other process, the kernel and devices (DMA) in the same interval.");
    } else {
        text.push_str(" Fewer bytes at the controllers than the probe moved means part of its traffic was served by caches, or the probe's byte count is wrong.");
    }
    Some(ProbeCheck {
        verdict: "disagree".into(),
        tolerance_pct: TOLERANCE_PCT,
        sides,
        text,
    })
}
