//! The clock, checked before it is trusted.
//!
//! Probes time short intervals (a pointer chase of a few thousand loads, a cache-line
//! ping-pong). Before any of that, [`check`] measures the clock itself: the smallest
//! step it can show (resolution), what reading it costs (overhead, subtracted where it
//! matters), and whether it ever went backwards. The result travels with every record
//! that depends on timing, and [`ClockCheck::problems`] turns bad findings into
//! warnings instead of silently wrong numbers.
//!
//! The clock is `CLOCK_MONOTONIC` (through `clock_gettime`, a vDSO call on Linux).
//! Raw cycle counters are not used: on many VMs and Arm systems they tick at an
//! unrelated fixed rate, so time in ns is the honest unit; cycles are derived only when
//! the core frequency is known.

#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

// The system calls, the one module allowed `unsafe`.
#[allow(unsafe_code)]
mod sys;

/// Reads CLOCK_MONOTONIC in nanoseconds.
#[inline(always)]
pub fn now_ns() -> u64 {
    let ts = sys::gettime(libc::CLOCK_MONOTONIC);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub use numalab_schema::clock::ClockCheck;

/// Measures the clock with `reads` back-to-back reads (at least 1,000; more while no
/// step has been seen, up to 20 ms, so that a coarse clock still shows its tick), and its
/// read overhead as the median of `reads / 5000` batches of 1,000 reads (5 to 21).
pub fn check(reads: u64) -> ClockCheck {
    let res = sys::getres(libc::CLOCK_MONOTONIC);
    let reported = res.tv_sec as f64 * 1e9 + res.tv_nsec as f64;
    let mut reads = reads.max(1000);
    let mut backwards = 0;
    let mut min_step = u64::MAX;
    let mut prev = now_ns();
    let start = prev;
    let mut done = 0u64;
    while done < reads {
        let t = now_ns();
        if t < prev {
            backwards += 1;
        } else if t > prev {
            min_step = min_step.min(t - prev);
        }
        prev = t;
        done += 1;
        if done == reads && min_step == u64::MAX && t.saturating_sub(start) < 20_000_000 {
            reads += 1000;
        }
    }
    // Overhead: batches of 1000 reads, median over batches.
    let batches = (reads / 5000).clamp(5, 21);
    let mut per_read = Vec::new();
    for _ in 0..batches {
        let start = now_ns();
        let mut sink = 0u64;
        for _ in 0..1000 {
            sink = sink.wrapping_add(now_ns());
        }
        std::hint::black_box(sink);
        per_read.push((now_ns() - start) as f64 / 1000.0);
    }
    per_read.sort_by(f64::total_cmp);
    ClockCheck {
        clock: "CLOCK_MONOTONIC".into(),
        reported_resolution_ns: reported,
        observed_step_ns: if min_step == u64::MAX {
            f64::INFINITY
        } else {
            min_step as f64
        },
        read_overhead_ns: per_read[per_read.len() / 2],
        backwards,
        reads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_advances_and_is_cheap_enough_to_time_microseconds() {
        let c = check(100_000);
        assert_eq!(c.backwards, 0);
        assert!(c.observed_step_ns.is_finite() && c.observed_step_ns > 0.0);
        assert!(c.read_overhead_ns > 0.0);
        // A sleep of 2 ms is seen as at least 2 ms.
        let t = now_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(now_ns() - t >= 2_000_000);
    }

    #[test]
    fn problems_are_reported() {
        let bad = ClockCheck {
            clock: "x".into(),
            reported_resolution_ns: 1.0,
            observed_step_ns: 4000.0,
            read_overhead_ns: 2000.0,
            backwards: 3,
            reads: 1000,
        };
        assert_eq!(bad.problems().len(), 3);
        assert_eq!(bad.min_interval_ns(), 400_000.0);
    }
}
