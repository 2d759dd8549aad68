//! Human formatting of quantities. Machine output keeps raw numbers with the unit in
//! the field name (`latency_ns`, `bytes`); these helpers are only for people.

/// Binary-prefixed size: 65536 -> "64 KiB", 1.5 GiB -> "1.5 GiB".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else if (value - value.round()).abs() < 0.05 {
        format!("{:.0} {}", value.round(), UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A fraction as a whole percentage: 0.834 -> "83%".
pub fn percent(fraction: f64) -> String {
    format!("{:.0}%", fraction * 100.0)
}

/// A duration in nanoseconds with a sensible unit: 0.8 -> "0.80 ns", 1234 -> "1.23 us".
pub fn nanos(ns: f64) -> String {
    let a = ns.abs();
    if a < 10.0 {
        format!("{ns:.2} ns")
    } else if a < 1e3 {
        format!("{ns:.1} ns")
    } else if a < 1e6 {
        format!("{:.2} us", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// The largest size any option or variable takes: 1 PiB. Far beyond any machine's memory
/// and any input file, and small enough that rounding it up to pages or adding to it
/// cannot wrap a `u64` (where 18446744073709551615 used to wrap to "0 bytes").
pub const MAX_BYTES: u64 = 1 << 50;

/// Parses a size written by a user: "4096", "64K", "64KiB", "1.5G", "2 MiB".
/// Suffixes are binary (K = 1024), as in numactl and likwid. Whole numbers are parsed
/// exactly with checked arithmetic; anything above [`MAX_BYTES`] is refused, naming it.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let v = parse_unbounded(text)?;
    if v > u128::from(MAX_BYTES) {
        return Err(format!(
            "{text:?} is larger than 1 PiB ({MAX_BYTES} bytes), the largest size accepted"
        ));
    }
    Ok(v as u64)
}

/// [`parse_bytes`] without the upper bound: the exact value (saturating at `u128::MAX`),
/// for callers that cap rather than refuse (`NUMALAB_MAX_INPUT`).
pub(crate) fn parse_unbounded(text: &str) -> Result<u128, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let not_size = || format!("{text:?} is not a size (expected e.g. 4096, 64K, 1.5GiB)");
    let mult: u128 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        other => {
            return Err(format!(
                "{text:?}: unknown size suffix {other:?} (use K, M, G or T)"
            ))
        }
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if (whole.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(not_size());
    }
    // Digits only (checked above), so the only failure is a number past u128: saturate.
    let w: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().unwrap_or(u128::MAX)
    };
    let mut total = w.saturating_mul(mult);
    if !frac.is_empty() {
        // The fraction of the unit, rounded to a byte; at most `mult` bytes, so f64 is exact enough.
        let f: f64 = format!("0.{frac}").parse().map_err(|_| not_size())?;
        total = total.saturating_add((f * mult as f64).round() as u128);
    }
    Ok(total)
}

/// The longest duration an option takes: 365 days (a year; humantime's `1y` is 365.25 days, so write `365days`). A deadline (now + duration) can
/// always be formed from it, where `Instant + Duration` panics on overflow.
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(365 * 86_400);

/// Parses a duration option written as people write it ("30s", "90m", "2h", "1500ms"),
/// at most [`MAX_DURATION`]: the one parser of every duration option (clap's
/// `value_parser`), so no value can overflow a deadline later.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(text.trim())
        .map_err(|e| format!("{text:?} is not a duration ({e}); give e.g. 30s, 90m, 2h"))?;
    if d > MAX_DURATION {
        return Err(format!(
            "{text:?} is longer than 365 days, the longest accepted; give e.g. 30s, 90m, 2h"
        ));
    }
    Ok(d)
}

/// A duration given as float seconds (`--timeout 2.5`), checked: above 0, finite and at
/// most [`MAX_DURATION`]; `None` for NaN, infinities, zero, negative and larger values,
/// which `Duration::from_secs_f64` would panic on or a deadline overflow with.
pub fn seconds(t: f64) -> Option<std::time::Duration> {
    (t > 0.0 && t <= MAX_DURATION.as_secs_f64()).then(|| std::time::Duration::from_secs_f64(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_are_whole() {
        assert_eq!(percent(0.834), "83%");
        assert_eq!(percent(1.0), "100%");
    }

    #[test]
    fn sizes() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(65536), "64 KiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
        assert_eq!(parse_bytes("64K").unwrap(), 65536);
        assert_eq!(parse_bytes("1.5 GiB").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert!(parse_bytes("12Q").unwrap_err().contains("suffix"));
        assert!(parse_bytes("lots").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(nanos(0.8), "0.80 ns");
        assert_eq!(nanos(85.25), "85.2 ns");
        assert_eq!(nanos(1234.0), "1.23 us");
        assert_eq!(nanos(2.5e9), "2.50 s");
    }

    /// Values around the edges and pseudo-random bit patterns (a fixed-seed xorshift, so
    /// a failure reproduces): never a panic, and a value is accepted exactly when it is
    /// a positive number of seconds within a year.
    #[test]
    fn float_seconds_never_panic_and_accept_only_a_year() {
        let mut edges = vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e308,
            f64::MAX,
            f64::MIN_POSITIVE,
            -1.0,
            -0.0,
            0.0,
            u64::MAX as f64,
            MAX_DURATION.as_secs_f64(),
            MAX_DURATION.as_secs_f64() * (1.0 + f64::EPSILON),
            1.5,
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            edges.push(f64::from_bits(x));
        }
        for t in edges {
            let ok = t > 0.0 && t <= 365.0 * 86_400.0;
            match seconds(t) {
                Some(d) => {
                    assert!(ok, "{t:?} accepted");
                    assert!(
                        d <= MAX_DURATION && std::time::Instant::now().checked_add(d).is_some()
                    );
                }
                None => assert!(!ok, "{t:?} refused"),
            }
        }
        assert_eq!(seconds(1.5), Some(std::time::Duration::from_millis(1500)));
    }

    #[test]
    fn size_texts_never_panic() {
        assert_eq!(parse_bytes("1024T").unwrap(), MAX_BYTES);
        assert_eq!(parse_bytes(".5K").unwrap(), 512);
        for huge in [
            "18446744073709551615",
            "1025T",
            "1125899906842625",
            "99999999999999999999999999999999999999999T",
        ] {
            let e = parse_bytes(huge).unwrap_err();
            assert!(e.contains("larger than 1 PiB"), "{e}");
        }
        for bad in [
            "NaN",
            "inf",
            "1e308",
            "-1",
            "99999999999999999999T",
            "1.5.5K",
            "",
            ".",
            "K",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        let mut x: u64 = 0x853c_49e6_748f_ea9b;
        for _ in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let _ = parse_bytes(&format!(
                "{}.{}{}",
                x,
                x >> 40,
                ["", "K", "M", "G", "T"][(x % 5) as usize]
            ));
            let _ = parse_bytes(&format!("{}", f64::from_bits(x)));
        }
    }

    #[test]
    fn duration_texts_never_panic_and_stay_within_a_year() {
        assert_eq!(parse_duration("90m").unwrap().as_secs(), 5400);
        assert_eq!(parse_duration("1500ms").unwrap().as_millis(), 1500);
        assert_eq!(parse_duration("365days").unwrap(), MAX_DURATION);
        for bad in [
            "18446744073709551615s",
            "18446744073709551615",
            "500000000000y",
            "366days",
            "1e308s",
            "NaN",
            "inf",
            "-1s",
            "",
            "1,5s",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.starts_with(&format!("{bad:?}")), "{e}");
            assert!(e.contains("give e.g. 30s"), "{e}");
        }
        // Numbers with every unit, up to u64::MAX: refused or within a year, never a panic.
        let units = ["ns", "us", "ms", "s", "m", "h", "d", "w", "M", "y"];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for i in 0..5_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = match i % 4 {
                0 => x,
                1 => x >> 32,
                2 => x >> 48,
                _ => u64::MAX - (x & 0xff),
            };
            let text = format!("{n}{}", units[(x % units.len() as u64) as usize]);
            if let Ok(d) = parse_duration(&text) {
                assert!(d <= MAX_DURATION, "{text}");
            }
        }
    }
}
