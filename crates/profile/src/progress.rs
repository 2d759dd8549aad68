//! What a counting session says as it goes: the line as counting a process or the whole
//! system starts, and the note when an earlier run already measured the profile.

use numalab_pmu::profile::Subject;
use std::time::Duration;

/// The line said as counting starts, for subjects that run until stopped: "counting
/// process PID until it exits, ..." or "counting every CPU, ..." with how it ends
/// (`duration`, Ctrl-C); none for a command numalab starts (its end is its own).
pub fn counting_started(subject: &Subject, duration: Option<Duration>) -> Option<String> {
    match subject {
        Subject::Pid(pid) => Some(format!(
            "counting process {pid} until it exits{}",
            until(duration)
        )),
        Subject::AllCpus(None) => Some(format!("counting every CPU{}", until(duration))),
        _ => None,
    }
}

/// ", --duration or Ctrl-C" as the user set it.
fn until(duration: Option<Duration>) -> String {
    match duration {
        Some(d) => format!(
            ", for at most {}, or until Ctrl-C (the counts so far are kept)",
            humantime::format_duration(d)
        ),
        None => " or until Ctrl-C (the counts so far are kept)".into(),
    }
}

/// The note when the `--out` folder already holds the profile's record `key`.
pub fn already_measured(key: &str) -> String {
    format!("{key} is already in the --out folder; choose another folder to measure again")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_or_the_system_is_counted_until_stopped() {
        assert_eq!(
            counting_started(&Subject::Pid(42), Some(Duration::from_secs(90))).unwrap(),
            "counting process 42 until it exits, for at most 1m 30s, or until Ctrl-C (the counts so far are kept)"
        );
        assert_eq!(
            counting_started(&Subject::AllCpus(None), None).unwrap(),
            "counting every CPU or until Ctrl-C (the counts so far are kept)"
        );
        let spec = numalab_proc::Spec::new(["true"]);
        assert_eq!(counting_started(&Subject::Command(spec), None), None);
        assert_eq!(
            already_measured("pmu/profile"),
            "pmu/profile is already in the --out folder; choose another folder to measure again"
        );
    }
}
