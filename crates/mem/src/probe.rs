//! A checked plan of any memory probe, run alike by `numalab mem` and `numalab
//! evaluate`: its notes, the record keys its report shows, its executor, and how a
//! run of it ends.

use crate::budget::Budgets;
use crate::{bandwidth, latency, loaded, memconfig, migrate, Outcome, Placer, Sink};
use numalab_schema::{ErrorClass, Machine};
use serde::Serialize;

/// A checked plan of one of the four probes; it serializes as the plan itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Probe {
    /// Bandwidth kernels.
    Bandwidth(bandwidth::Plan),
    /// Latency curves or matrix.
    Latency(latency::Plan),
    /// Latency under load.
    Loaded(loaded::Plan),
    /// Page migration.
    Migrate(migrate::Plan),
}

impl Probe {
    /// Facts the user should know (defaults applied, sizes reduced).
    pub fn notes(&self) -> &[String] {
        match self {
            Probe::Bandwidth(p) => &p.notes,
            Probe::Latency(p) => &p.notes,
            Probe::Loaded(p) => &p.notes,
            Probe::Migrate(p) => &p.notes,
        }
    }

    /// Whether its figures are read against the memory configuration's peak
    /// (bandwidth, loaded latency): the [`memconfig`] record then goes beside them.
    pub fn uses_memconfig(&self) -> bool {
        matches!(self, Probe::Bandwidth(_) | Probe::Loaded(_))
    }

    /// The keys of the records a report of this run shows: the plan's, and the memory
    /// configuration's where [`Probe::uses_memconfig`].
    pub fn report_keys(&self) -> Vec<String> {
        let mut keys = match self {
            Probe::Bandwidth(p) => p.keys(),
            Probe::Latency(p) => p.keys(),
            Probe::Loaded(p) => vec![p.key.clone()],
            Probe::Migrate(p) => p.keys(),
        };
        if self.uses_memconfig() {
            keys.push(memconfig::KEY.into());
        }
        keys
    }

    /// Runs the plan with its probe's executor (`budgets` are what page migration
    /// clamps its buffers to).
    pub fn run(
        &self,
        machine: &Machine,
        budgets: &Budgets,
        placer: &dyn Placer,
        sink: &mut dyn Sink,
    ) -> Outcome {
        match self {
            Probe::Bandwidth(p) => bandwidth::run(p, machine, placer, sink),
            Probe::Latency(p) => latency::run(p, machine, placer, sink),
            Probe::Loaded(p) => loaded::run(p, machine, placer, sink),
            Probe::Migrate(p) => migrate::run(p, machine, budgets, placer, sink),
        }
    }
}

/// What a run says about its cells besides their records: each failure with its key,
/// then how many were already in the journal (and not measured again).
pub fn outcome_lines(outcome: &Outcome) -> Vec<String> {
    let mut lines: Vec<String> = outcome
        .failed
        .iter()
        .map(|(key, e)| format!("{key}: {e}"))
        .collect();
    if outcome.skipped > 0 {
        lines.push(format!(
            "{} result(s) were already in the journal and were not measured again",
            outcome.skipped
        ));
    }
    lines
}

/// How a run ends when not in success: the class and the message. Interrupted: what
/// was measured is kept; partial: some cells failed, the others have results; else the
/// first failure's class and message.
pub fn verdict(outcome: &Outcome) -> Option<(ErrorClass, String)> {
    let message = match outcome.class()? {
        ErrorClass::Interrupted => "interrupted; everything measured so far was kept".into(),
        ErrorClass::Partial => format!(
            "{} step(s) failed; the others produced results",
            outcome.failed.len()
        ),
        _ => outcome
            .failed
            .first()
            .map(|f| f.1.to_string())
            .unwrap_or_default(),
    };
    Some((outcome.class()?, message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::tests::two_nodes;
    use crate::MemError;

    #[test]
    fn report_keys_add_the_memory_configuration_to_bandwidth_and_loaded() {
        let m = two_nodes();
        let b = Budgets::uniform(&m, 64 << 30);
        let bw = bandwidth::quick_plan(&m, &b).unwrap();
        let mut want = bw.keys();
        want.push(memconfig::KEY.into());
        let bw = Probe::Bandwidth(bw);
        assert_eq!(bw.report_keys(), want);
        assert!(bw.uses_memconfig());
        let ld = loaded::quick_plan(&m, &b).unwrap();
        let key = ld.key.clone();
        assert_eq!(
            Probe::Loaded(ld).report_keys(),
            vec![key, memconfig::KEY.to_string()]
        );
        let lat = latency::quick_plan(&m, &b).unwrap();
        let (keys, notes) = (lat.keys(), lat.notes.clone());
        let lat = Probe::Latency(lat);
        assert_eq!(lat.report_keys(), keys);
        assert_eq!(lat.notes(), notes.as_slice());
        assert!(!lat.uses_memconfig());
        // It serializes as the plan (the run's configuration in the journal).
        let mg = migrate::quick_plan(&m, &b).unwrap();
        assert_eq!(
            serde_json::to_value(Probe::Migrate(mg.clone())).unwrap(),
            serde_json::to_value(mg).unwrap()
        );
    }

    #[test]
    fn outcome_lines_name_failed_cells_and_skipped_ones() {
        let mut o = Outcome::default();
        assert!(outcome_lines(&o).is_empty());
        o.failed
            .push(("mem/x".into(), MemError::Runtime("boom".into())));
        o.skipped = 4;
        assert_eq!(
            outcome_lines(&o),
            [
                "mem/x: boom",
                "4 result(s) were already in the journal and were not measured again"
            ]
        );
    }

    #[test]
    fn verdicts() {
        let mut o = Outcome::default();
        assert_eq!(verdict(&o), None);
        o.failed
            .push(("a".into(), MemError::Unsupported("no THP".into())));
        assert_eq!(
            verdict(&o),
            Some((ErrorClass::Unsupported, "no THP".to_string()))
        );
        o.written = 3;
        o.failed.push(("b".into(), MemError::Runtime("x".into())));
        assert_eq!(
            verdict(&o),
            Some((
                ErrorClass::Partial,
                "2 step(s) failed; the others produced results".to_string()
            ))
        );
        o.interrupted = true;
        assert_eq!(
            verdict(&o).unwrap().1,
            "interrupted; everything measured so far was kept"
        );
    }
}
