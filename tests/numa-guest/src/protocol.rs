//! How the guest reports to the host: one JSON event per line on the guest's results
//! port (the second serial port `/dev/ttyS1` on x86, a virtio console `/dev/hvc0` on
//! Arm), which QEMU writes to a file on the host.
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
    /// The check's name (see [`crate::suite::plan`]).
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
    /// A file a check exported (e.g. the bundle `evaluate` wrote), for the host to check
    /// outside the guest; the content is hex-encoded so any byte survives the port.
    File {
        /// File name (no folders), unique within the run.
        name: String,
        /// The content, hex.
        hex: String,
    },
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
    /// Files the checks exported (name, content).
    #[serde(skip)]
    pub files: Vec<(String, Vec<u8>)>,
}

/// Hex of bytes (lower case).
pub fn encode_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Bytes of hex, or None if it is not hex.
pub fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A file name without folders or dots of its own (`report.html`, not `../x`).
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
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
        files: Vec::new(),
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
            Event::File { name, hex } => match decode_hex(&hex) {
                Some(bytes) if is_plain_name(&name) => report.files.push((name, bytes)),
                _ => report.problems.push(format!(
                    "the exported file {name:?} is garbled or badly named"
                )),
            },
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

    #[test]
    fn exported_files_survive_the_port_and_bad_ones_are_problems() {
        let bytes: Vec<u8> = (0..=255u8).chain(*b"\r\n numa-guest ").collect();
        let file = Event::File {
            name: "report.html".into(),
            hex: encode_hex(&bytes),
        };
        let bad = Event::File {
            name: "../etc/passwd".into(),
            hex: encode_hex(b"x"),
        };
        let end = Event::End {
            uptime_s: 9.0,
            passed: 1,
            failed: 0,
        };
        let text = stream(&[start(&["a"]), outcome("a", true), file, bad, end]);
        let r = judge(&names(&["a"]), &text);
        assert_eq!(r.files, vec![("report.html".to_string(), bytes)]);
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert!(r.problems[0].contains("../etc/passwd"));
        assert_eq!(decode_hex("0g"), None);
        assert_eq!(decode_hex("abc"), None);
    }

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
