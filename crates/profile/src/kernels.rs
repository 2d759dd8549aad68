//! Known kernels: programs whose counter readings are known before they run, for
//! checking a profile on real hardware (`numalab kernel`, run under `numalab profile` by
//! `scripts/hw-check.sh`). Each says what a correct PMU must count for it:
//!
//! - [`chase`]: a pointer chase through one random cycle over the cache lines of a
//!   buffer (Sattolo's shuffle, so every line is visited once per lap): `steps` dependent
//!   loads, each one a miss of every cache level smaller than the buffer;
//! - [`branchy`]: a loop whose branch direction is a fresh pseudo-random bit each
//!   iteration, the two sides calls that cannot be turned into a conditional move: about
//!   one mispredicted branch in two iterations for any predictor.
//!
//! The figures are lower bounds or shares, never exact counts: the loop control, the
//! set-up and the process around it add instructions and branches of their own, which
//! the expectations' tolerances allow for.

use std::hint::black_box;
use std::time::Instant;

/// What a PMU must count for a kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// The generic (perf) event name: `instructions`, `branches`, `branch-misses`,
    /// `L1-dcache-loads`.
    pub event: String,
    /// The names numalab's catalogs give it (generic x86-64 and Arm PMUv3 common events):
    /// the first one a profile counted is the one to check.
    pub names: Vec<String>,
    /// At least this many.
    pub at_least: f64,
    /// At most this many (None: no upper bound).
    pub at_most: Option<f64>,
    /// Why, in a sentence.
    pub why: String,
}

/// One run of a kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRun {
    /// "chase" or "branchy".
    pub kernel: String,
    /// Steps or iterations done.
    pub iterations: u64,
    /// Bytes of the buffer (chase).
    pub bytes: u64,
    /// A value that depends on every step (so that nothing is optimised away).
    pub checksum: u64,
    /// Seconds of the kernel proper (set-up excluded).
    pub seconds: f64,
    /// What the counters must show for the whole process.
    pub expected: Vec<Expectation>,
}

impl KernelRun {
    /// What ran and what a correct PMU counts, as `numalab kernel --json` prints it.
    pub fn to_json(&self) -> serde_json::Value {
        let expected: Vec<serde_json::Value> = self
            .expected
            .iter()
            .map(|e| serde_json::json!({ "event": e.event, "names": e.names, "at_least": e.at_least, "at_most": e.at_most, "why": e.why }))
            .collect();
        serde_json::json!({
            "kernel": self.kernel, "iterations": self.iterations, "bytes": self.bytes,
            "checksum": self.checksum, "seconds": self.seconds, "expected": expected,
        })
    }

    /// When Ctrl-C or SIGTERM stopped the kernel early: what to say (the process then
    /// ends with the interrupted exit code); `None` when it ran to the end.
    pub fn interrupted(&self) -> Option<String> {
        numalab_schema::interrupt::requested()
            .then(|| format!("interrupted after {} iterations", self.iterations))
    }

    /// The same for people, one line each: what ran, then every expectation
    /// ("  a correct PMU counts branch-misses >= 400: ...").
    pub fn lines(&self) -> Vec<String> {
        let over = if self.bytes > 0 {
            format!(" over {}", numalab_schema::units::bytes(self.bytes))
        } else {
            String::new()
        };
        let mut lines = vec![format!(
            "{}: {} iterations{over} in {:.3} s (checksum {:#x})",
            self.kernel, self.iterations, self.seconds, self.checksum
        )];
        for e in &self.expected {
            lines.push(format!(
                "  a correct PMU counts {} >= {:.0}{}: {}",
                e.event,
                e.at_least,
                e.at_most
                    .map(|m| format!(" and <= {m:.0}"))
                    .unwrap_or_default(),
                e.why
            ));
        }
        lines
    }
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Steps or iterations between two looks at Ctrl-C and SIGTERM
/// ([`numalab_schema::interrupt`]): a few milliseconds of work, so a stop is quick and
/// the look costs nothing the expectations could see. A stopped kernel reports the
/// iterations it ran.
const CHUNK: u64 = 1 << 22;

/// Most bytes a chase buffer may have.
pub const MAX_CHASE_BYTES: u64 = 64 << 30;

/// [`chase`] of a buffer size as `--bytes` gives it (`256MiB`); an unreadable size is
/// refused naming the flag, and so is one whose buffers would take more than half the
/// memory available ([`check_chase_memory`], before anything is allocated).
pub fn chase_of_size(bytes: &str, steps: u64, seed: u64) -> Result<KernelRun, String> {
    let b =
        numalab_schema::units::parse_bytes(bytes).map_err(|e| format!("--bytes {bytes:?}: {e}"))?;
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| mem_available(&t));
    check_chase_memory(b, available)?;
    chase(b, steps, seed)
}

/// `MemAvailable` of a `/proc/meminfo` text, bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// Refuses a chase of `bytes` whose memory (the lines and the shuffle's order, 8 bytes a
/// line) is more than half of `available` (the system's `MemAvailable`; not checked when
/// unknown): filling more could wake the OOM killer on a machine with modest memory,
/// where the error names the size that fits.
pub fn check_chase_memory(bytes: u64, available: Option<u64>) -> Result<(), String> {
    let Some(available) = available else {
        return Ok(());
    };
    let need = bytes.saturating_add(bytes / 64 * 8);
    let limit = available / 2;
    if need > limit {
        let fmt = numalab_schema::units::bytes;
        return Err(format!(
            "--bytes {}: the chase needs {} (its lines and their order), more than half of the {} available (MemAvailable); ask for at most {} with --bytes",
            fmt(bytes),
            fmt(need),
            fmt(available),
            fmt(limit / 9 * 8)
        ));
    }
    Ok(())
}

/// A pointer chase of `steps` dependent loads through a random cycle over the 64-byte
/// lines of a buffer of `bytes` (rounded down to whole lines, at least 2). Refused: fewer
/// than 2 lines, more than [`MAX_CHASE_BYTES`].
pub fn chase(bytes: u64, steps: u64, seed: u64) -> Result<KernelRun, String> {
    let lines = bytes / 64;
    if lines < 2 || bytes > MAX_CHASE_BYTES {
        return Err(format!(
            "--bytes {bytes}: give 128 B to {} GiB",
            MAX_CHASE_BYTES >> 30
        ));
    }
    let lines = lines as usize;
    // next[i] is the line after line i (8 words a line: the index in the first).
    let mut next = vec![0u64; lines * 8];
    let mut order: Vec<usize> = (0..lines).collect();
    let mut x = seed | 1;
    // Sattolo: one cycle through every line.
    for i in (1..lines).rev() {
        let j = (xorshift(&mut x) % i as u64) as usize;
        order.swap(i, j);
    }
    for k in 0..lines {
        next[order[k] * 8] = order[(k + 1) % lines] as u64;
    }
    let t = Instant::now();
    let mut at = 0usize;
    let mut done = 0u64;
    while done < steps && !numalab_schema::interrupt::requested() {
        let chunk = (steps - done).min(CHUNK);
        for _ in 0..chunk {
            at = black_box(next[at * 8]) as usize;
        }
        done += chunk;
    }
    let steps = done;
    let seconds = t.elapsed().as_secs_f64();
    let s = steps as f64;
    Ok(KernelRun {
        kernel: "chase".into(),
        iterations: steps,
        bytes: lines as u64 * 64,
        checksum: at as u64,
        seconds,
        expected: vec![
            Expectation {
                event: "instructions".into(),
                names: ["INSTRUCTIONS", "INST_RETIRED"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                at_least: s,
                at_most: None,
                why: "at least one load per step".into(),
            },
            Expectation {
                event: "L1-dcache-loads".into(),
                names: ["L1D_LOADS", "L1D_CACHE_RD", "L1D_CACHE"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                at_least: s,
                at_most: None,
                why: "one dependent load per step".into(),
            },
        ],
    })
}

#[inline(never)]
fn left(a: u64, x: u64) -> u64 {
    black_box(a.wrapping_add(x))
}

#[inline(never)]
fn right(a: u64, x: u64) -> u64 {
    black_box(a ^ x.rotate_left(7))
}

/// `iterations` of a loop whose branch goes one way or the other on a fresh
/// pseudo-random bit (xorshift64), each side a call that cannot be if-converted.
pub fn branchy(iterations: u64, seed: u64) -> KernelRun {
    let mut x = seed | 1;
    let mut acc = 0u64;
    let t = Instant::now();
    let mut done = 0u64;
    while done < iterations && !numalab_schema::interrupt::requested() {
        let chunk = (iterations - done).min(CHUNK);
        for _ in 0..chunk {
            let r = xorshift(&mut x);
            if r >> 63 == 1 {
                acc = left(acc, r);
            } else {
                acc = right(acc, r);
            }
        }
        done += chunk;
    }
    let iterations = done;
    let seconds = t.elapsed().as_secs_f64();
    let n = iterations as f64;
    KernelRun {
        kernel: "branchy".into(),
        iterations,
        bytes: 0,
        checksum: acc,
        seconds,
        expected: vec![
            Expectation {
                event: "branches".into(),
                names: ["BRANCHES", "BR_RETIRED", "BR_PRED"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                at_least: n,
                at_most: None,
                why: "one data-dependent branch per iteration, beside the loop's own".into(),
            },
            // A predictor right more than 60% of the time on fresh random bits would be
            // predicting xorshift64: the share is 50% up to the loop's own branches.
            Expectation {
                event: "branch-misses".into(),
                names: ["BRANCH_MISSES", "BR_MIS_PRED_RETIRED", "BR_MIS_PRED"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                at_least: 0.4 * n,
                at_most: Some(0.6 * n + 0.01 * n),
                why: "the direction is a fresh random bit: half the iterations mispredict".into(),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chase_visits_every_line_once_a_lap() {
        // After exactly one lap (as many steps as lines) the chase is back at line 0.
        let r = chase(64 * 1000, 1000, 7).unwrap();
        assert_eq!(r.checksum, 0);
        let r = chase(64 * 1000, 999, 7).unwrap();
        assert_ne!(r.checksum, 0);
        assert!(chase(64, 10, 1).is_err());
        assert!(chase(MAX_CHASE_BYTES + 64, 10, 1).is_err());
    }

    #[test]
    fn a_chase_size_is_read_as_the_flag_gives_it() {
        let r = chase_of_size("64000", 1000, 7).unwrap();
        assert_eq!(r.checksum, chase(64_000, 1000, 7).unwrap().checksum);
        let e = chase_of_size("lots", 10, 1).unwrap_err();
        assert!(e.starts_with("--bytes \"lots\": "), "{e}");
        assert_eq!(
            chase_of_size("64", 10, 1).unwrap_err(),
            chase(64, 10, 1).unwrap_err()
        );
    }

    /// A chase larger than half the memory available is refused before anything is
    /// allocated, naming the size that fits; the default fits a machine with 1 GiB
    /// available; an unknown figure checks nothing.
    #[test]
    fn a_chase_past_half_the_available_memory_is_refused() {
        let avail = mem_available("MemTotal: 2097152 kB\nMemAvailable: 1048576 kB\n");
        assert_eq!(avail, Some(1 << 30));
        check_chase_memory(256 << 20, avail).unwrap();
        let e = check_chase_memory(1 << 30, avail).unwrap_err();
        assert!(
            e.starts_with("--bytes 1 GiB: the chase needs 1.1 GiB"),
            "{e}"
        );
        assert!(e.contains("ask for at most 455.1 MiB with --bytes"), "{e}");
        // The size it names fits.
        check_chase_memory(455 << 20, avail).unwrap();
        check_chase_memory(u64::MAX, None).unwrap();
        assert!(check_chase_memory(u64::MAX, avail).is_err());
    }

    #[test]
    fn the_branch_goes_each_way_about_half_the_time() {
        let mut x = 5u64;
        let ones = (0..100_000).filter(|_| xorshift(&mut x) >> 63 == 1).count();
        assert!((48_000..52_000).contains(&ones), "{ones}");
        let a = branchy(1000, 5);
        let b = branchy(1000, 6);
        assert_ne!(a.checksum, b.checksum);
        assert_eq!(a.expected[1].event, "branch-misses");
    }

    #[test]
    fn a_run_is_shown_as_lines_and_as_json() {
        let r = KernelRun {
            kernel: "chase".into(),
            iterations: 10,
            bytes: 4096,
            checksum: 255,
            seconds: 0.5,
            expected: vec![Expectation {
                event: "instructions".into(),
                names: vec!["inst_retired".into()],
                at_least: 10.0,
                at_most: Some(40.0),
                why: "one load a step".into(),
            }],
        };
        let lines = r.lines();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("chase: 10 iterations over "),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].ends_with(" in 0.500 s (checksum 0xff)"),
            "{}",
            lines[0]
        );
        assert_eq!(
            lines[1],
            "  a correct PMU counts instructions >= 10 and <= 40: one load a step"
        );
        let branchy = KernelRun {
            bytes: 0,
            expected: vec![],
            ..r.clone()
        };
        assert_eq!(
            branchy.lines(),
            ["chase: 10 iterations in 0.500 s (checksum 0xff)"]
        );
        let v = r.to_json();
        assert_eq!(v["checksum"], 255);
        assert_eq!(v["expected"][0]["at_most"], 40.0);
        assert_eq!(v["expected"][0]["names"][0], "inst_retired");
    }
}
