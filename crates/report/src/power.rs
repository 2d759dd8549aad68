//! Which power source a bundle's figures rest on, and node power at the wall (BMC)
//! over a measurement's window.
//!
//! Why: a per-watt ratio between two servers is only fair when both sides measured
//! the same thing: a RAPL package counter, an Arm SoC's "CPU power" sensor and a BMC's
//! wall power are different quantities. `compare` names each side's sources and warns
//! when per-watt figures rest on different ones.

use crate::load::Loaded;
use numalab_records::bmc::BmcPowerRecord;
use numalab_records::harness::ScaleSummary;
use numalab_records::workload::WorkloadRun;
use std::time::UNIX_EPOCH;

/// The power sources of a bundle, one sentence each, without repeats: the sensors
/// behind each per-watt figure (workload runs, `scale` studies) and every BMC source
/// sampled during a measurement. Empty: the bundle has no power figure.
pub fn sources(l: &Loaded) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |s: String| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    for (_, r) in l.records_of::<WorkloadRun>() {
        if let Some(c) = &r.power_covers {
            add(format!("sensors: {c}"));
        }
    }
    for (_, s) in l.records_of::<ScaleSummary>() {
        for p in &s.points {
            if let Some(c) = &p.stats.power_covers {
                add(format!("sensors: {c}"));
            }
        }
    }
    for (_, b) in l.records_of::<BmcPowerRecord>() {
        add(format!("{} ({})", b.covers, b.source.description));
    }
    out
}

/// Whether `sources` names a BMC (whole node at the wall).
pub fn has_wall(sources: &[String]) -> bool {
    sources
        .iter()
        .any(|s| s.starts_with(numalab_records::bmc::COVERS_WHOLE_NODE))
}

/// Node power at the wall over a window, from the bundle's BMC samples.
#[derive(Debug, Clone, PartialEq)]
pub struct WallPower {
    /// Mean of the samples in the window, watts.
    pub watts: f64,
    /// Samples in the window.
    pub samples: usize,
    /// The source, in one line.
    pub source: String,
}

/// Seconds since 1970 of an RFC 3339 time (`None` when it does not parse).
fn unix_s(time: &str) -> Option<f64> {
    humantime::parse_rfc3339_weak(time)
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64())
}

/// The mean BMC power over the `seconds` before `end_utc` (a record's completion
/// time, which has whole seconds: the window is widened by one second on each side).
/// `None` without BMC samples in the window.
pub fn wall_power(l: &Loaded, end_utc: &str, seconds: f64) -> Option<WallPower> {
    let end = unix_s(end_utc)? + 1.0;
    let start = end - seconds - 2.0;
    let mut best: Option<WallPower> = None;
    for (_, b) in l.records_of::<BmcPowerRecord>() {
        let inside: Vec<f64> = b
            .samples
            .iter()
            .filter(|s| {
                let t = s.unix_ms as f64 / 1000.0;
                t >= start && t <= end && s.reading.watts.is_finite()
            })
            .map(|s| s.reading.watts)
            .collect();
        if inside.is_empty() || best.as_ref().is_some_and(|w| w.samples >= inside.len()) {
            continue;
        }
        best = Some(WallPower {
            watts: inside.iter().sum::<f64>() / inside.len() as f64,
            samples: inside.len(),
            source: b.source.description.clone(),
        });
    }
    best.filter(|w| w.watts > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_records::bmc::{
        BmcAccess, BmcReading, BmcSample, BmcSource, BmcSourceKind, COVERS_WHOLE_NODE,
    };
    use numalab_schema::{Origin, Record};

    pub(crate) fn bmc_record(start_ms: u64, watts: &[f64]) -> BmcPowerRecord {
        BmcPowerRecord {
            source: BmcSource {
                kind: BmcSourceKind::IpmiDcmi,
                access: BmcAccess::InBand,
                sensors: vec![],
                method: "DCMI".into(),
                description: "IPMI DCMI power reading, in-band".into(),
            },
            covers: COVERS_WHOLE_NODE.into(),
            interval_ms: 1000,
            started_unix_ms: start_ms,
            duration_s: watts.len() as f64,
            samples: watts
                .iter()
                .enumerate()
                .map(|(i, w)| BmcSample {
                    t_s: i as f64,
                    unix_ms: start_ms + 1000 * i as u64,
                    read_s: 0.01,
                    reading: BmcReading::watts(*w, vec![]),
                })
                .collect(),
            errors: vec![],
            errors_dropped: 0,
            mean_watts: None,
            notes: vec![],
            during: Some("workload run".into()),
        }
    }

    fn loaded(records: Vec<Record>) -> Loaded {
        crate::load::test_loaded("workload", Origin::Measured, records)
    }

    #[test]
    fn wall_power_averages_the_samples_of_the_window_only() {
        // 2026-01-01T00:00:00Z = 1767225600 s. Samples at +0..+9 s: 100 W for the
        // first five, 300 W for the last five; a window of 4 s ending at +9 s holds
        // the samples at +4 (the window widened by a second on each side: +4..+10) to
        // +9: one 100 and five 300.
        let start = 1_767_225_600_000;
        let watts: Vec<f64> = (0..10).map(|i| if i < 5 { 100.0 } else { 300.0 }).collect();
        let l = loaded(vec![Record::new(
            "power/bmc/x",
            Origin::Measured,
            &bmc_record(start, &watts),
        )]);
        let w = wall_power(&l, "2026-01-01T00:00:09Z", 4.0).unwrap();
        assert_eq!(w.samples, 6, "{w:?}");
        assert!(
            (w.watts - (100.0 + 5.0 * 300.0) / 6.0).abs() < 1e-9,
            "{w:?}"
        );
        assert!(wall_power(&l, "2026-01-01T01:00:00Z", 4.0).is_none());
        assert!(wall_power(&l, "not a time", 4.0).is_none());
        let s = sources(&l);
        assert_eq!(
            s,
            vec![format!(
                "{COVERS_WHOLE_NODE} (IPMI DCMI power reading, in-band)"
            )]
        );
        assert!(has_wall(&s));
        assert!(sources(&loaded(vec![])).is_empty());
        // The samples are a figure of their own, for compare and the fleet report.
        let m = crate::metrics::metrics(&l);
        let p = m.iter().find(|m| m.id == "power.bmc.x").unwrap();
        assert_eq!(p.group, crate::metrics::POWER);
        assert_eq!(p.samples, watts);
        assert!(!p.higher_is_better);
        assert_eq!(p.setup.as_deref(), Some("workload run"));
    }
}
