//! How the guest reports to the host: one JSON event per line on the guest's second
//! serial port (`/dev/ttyS1`), which QEMU writes to a file on the host.
//!
//! The kernel console stays on the first port, so kernel messages never interleave with
//! results. The host judges a run from these events alone: every planned check must
//! have reported and passed, and the suite must have reached its end. A crash, a hang
//! cut by the timeout, or a check that never reported is a failure, not a skip.

use serde::{Deserialize, Serialize};

/// Prefix of every event line (anything else on the port is ignored).
pub const MARK: &str = "numa-guest ";

/// One check's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The check's name (see [`crate::checks::plan`]).
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// What was seen (on success) or what went wrong (on failure).
    pub detail: String,
    /// Time the check took inside the guest, ms.
    pub elapsed_ms: u64,
}

/// An event of the suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The suite started (after boot).
    Start {
        /// Guest uptime (from /proc/uptime) at the start, s: the boot time.
        uptime_s: f64,
        /// Guest kernel release.
        kernel: String,
        /// The checks that will run, in order.
        planned: Vec<String>,
    },
    /// One check finished.
    Check(Outcome),
    /// The suite finished.
    End {
        /// Guest uptime at the end, s.
        uptime_s: f64,
        /// Checks that passed.
        passed: usize,
        /// Checks that failed.
        failed: usize,
    },
}

impl Event {
    /// The event as one line (without newline).
    pub fn encode(&self) -> String {
        format!(
            "{MARK}{}",
            serde_json::to_string(self).expect("events serialize")
        )
    }
}

/// Reads events from the port's text. Lines that carry the mark but do not parse are
/// returned apart (a garbled line is a failure the host reports).
pub fn parse(text: &str) -> (Vec<Event>, Vec<String>) {
    let mut events = Vec::new();
    let mut garbled = Vec::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        let Some(pos) = line.find(MARK) else { continue };
        match serde_json::from_str::<Event>(&line[pos + MARK.len()..]) {
            Ok(e) => events.push(e),
            Err(_) => garbled.push(line.to_string()),
        }
    }
    (events, garbled)
}

/// The host's verdict on a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Check results, in the order received.
    pub outcomes: Vec<Outcome>,
    /// Guest uptime when the suite started (boot time), s.
    pub boot_s: Option<f64>,
    /// Suite duration in the guest, s.
    pub suite_s: Option<f64>,
    /// Guest kernel release.
    pub kernel: Option<String>,
    /// Everything wrong with the run besides failed checks (no start, no end, missing
    /// or unexpected checks, garbled lines).
    pub problems: Vec<String>,
}

impl Report {
    /// Checks that passed.
    pub fn passed(&self) -> usize {
        self.outcomes.iter().filter(|o| o.passed).count()
    }

    /// Checks that failed, plus one per problem of the run.
    pub fn failed(&self) -> usize {
        self.outcomes.iter().filter(|o| !o.passed).count() + self.problems.len()
    }

    /// Whether the run proves what it should: all planned checks reported and passed.
    pub fn ok(&self) -> bool {
        self.failed() == 0 && !self.outcomes.is_empty()
    }
}

/// Judges a run against the checks the host expected.
pub fn judge(expected: &[String], text: &str) -> Report {
    let (events, garbled) = parse(text);
    let mut report = Report {
        outcomes: Vec::new(),
        boot_s: None,
        suite_s: None,
        kernel: None,
        problems: garbled
            .into_iter()
            .map(|l| format!("garbled result line: {l}"))
            .collect(),
    };
    let mut planned: Option<Vec<String>> = None;
    let mut end = None;
    for e in events {
        match e {
            Event::Start {
                uptime_s,
                kernel,
                planned: p,
            } => {
                report.boot_s = Some(uptime_s);
                report.kernel = Some(kernel);
                planned = Some(p);
            }
            Event::Check(o) => report.outcomes.push(o),
            Event::End {
                uptime_s,
                passed,
                failed,
            } => end = Some((uptime_s, passed, failed)),
        }
    }
    match &planned {
        None => report
            .problems
            .push("the suite never started in the guest (boot failed or the init script broke)".into()),
        Some(p) if p != expected => report.problems.push(format!(
            "the guest planned other checks than the host expected (host and guest programs differ?): guest {p:?}, host {expected:?}"
        )),
        Some(_) => {}
    }
    for name in expected {
        if !report.outcomes.iter().any(|o| &o.name == name) {
            report
                .problems
                .push(format!("check {name} never reported (the guest crashed, hung or was cut by the timeout before it)"));
        }
    }
    for o in &report.outcomes {
        if !expected.contains(&o.name) {
            report
                .problems
                .push(format!("unexpected check {} reported", o.name));
        }
    }
    match (end, report.boot_s) {
        (None, _) => report
            .problems
            .push("the suite did not reach its end in the guest".into()),
        (Some((up, passed, failed)), start) => {
            report.suite_s = start.map(|s| up - s);
            let seen_failed = report.outcomes.iter().filter(|o| !o.passed).count();
            if passed != report.passed() || failed != seen_failed {
                report.problems.push(format!(
                    "the guest counted {passed} passed / {failed} failed but reported {} / {seen_failed} (lost lines?)",
                    report.passed()
                ));
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(name: &str, passed: bool) -> Event {
        Event::Check(Outcome {
            name: name.into(),
            passed,
            detail: "d \"quoted\"\nnewline".into(),
            elapsed_ms: 3,
        })
    }

    fn start(planned: &[&str]) -> Event {
        Event::Start {
            uptime_s: 6.5,
            kernel: "6.1.0".into(),
            planned: planned.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn stream(events: &[Event]) -> String {
        // As the serial port delivers it: CRLF line ends, noise around.
        let mut s = String::from("noise before\r\n");
        for e in events {
            s.push_str(&e.encode());
            s.push_str("\r\n");
        }
        s
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_complete_passing_run_is_ok() {
        let text = stream(&[
            start(&["a", "b"]),
            outcome("a", true),
            outcome("b", true),
            Event::End {
                uptime_s: 9.0,
                passed: 2,
                failed: 0,
            },
        ]);
        let r = judge(&names(&["a", "b"]), &text);
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.passed(), 2);
        assert_eq!(r.boot_s, Some(6.5));
        assert_eq!(r.suite_s, Some(2.5));
        assert_eq!(r.outcomes[0].detail, "d \"quoted\"\nnewline");
    }

    #[test]
    fn a_failed_check_fails_the_run() {
        let text = stream(&[
            start(&["a", "b"]),
            outcome("a", true),
            outcome("b", false),
            Event::End {
                uptime_s: 9.0,
                passed: 1,
                failed: 1,
            },
        ]);
        let r = judge(&names(&["a", "b"]), &text);
        assert!(!r.ok());
        assert_eq!(r.failed(), 1);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
    }

    #[test]
    fn a_crash_midway_is_a_failure_not_a_skip() {
        let text = stream(&[start(&["a", "b"]), outcome("a", true)]);
        let r = judge(&names(&["a", "b"]), &text);
        assert!(!r.ok());
        assert!(r
            .problems
            .iter()
            .any(|p| p.contains("check b never reported")));
        assert!(r
            .problems
            .iter()
            .any(|p| p.contains("did not reach its end")));
    }

    #[test]
    fn no_output_at_all_is_a_failure() {
        let r = judge(&names(&["a"]), "");
        assert!(!r.ok());
        assert!(r.problems.iter().any(|p| p.contains("never started")));
    }

    #[test]
    fn garbled_and_unexpected_lines_are_failures() {
        let mut text = stream(&[
            start(&["a"]),
            outcome("a", true),
            outcome("zz", true),
            Event::End {
                uptime_s: 9.0,
                passed: 2,
                failed: 0,
            },
        ]);
        text.push_str("numa-guest {\"event\":\"che\r\n");
        let r = judge(&names(&["a"]), &text);
        assert!(!r.ok());
        assert!(r.problems.iter().any(|p| p.contains("garbled")));
        assert!(r.problems.iter().any(|p| p.contains("unexpected check zz")));
    }

    #[test]
    fn a_different_plan_is_reported() {
        let text = stream(&[
            start(&["a", "c"]),
            outcome("a", true),
            Event::End {
                uptime_s: 9.0,
                passed: 1,
                failed: 0,
            },
        ]);
        let r = judge(&names(&["a"]), &text);
        assert!(r
            .problems
            .iter()
            .any(|p| p.contains("planned other checks")));
    }
}
