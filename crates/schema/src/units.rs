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

/// Parses a size written by a user: "4096", "64K", "64KiB", "1.5G", "2 MiB".
/// Suffixes are binary (K = 1024), as in numactl and likwid.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{text:?} is not a size (expected e.g. 4096, 64K, 1.5GiB)"))?;
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
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
    let total = value * mult as f64;
    if !total.is_finite() || total < 0.0 || total > u64::MAX as f64 {
        return Err(format!("{text:?} is out of range"));
    }
    Ok(total.round() as u64)
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
}
