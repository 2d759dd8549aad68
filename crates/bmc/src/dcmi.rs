//! The DCMI Get Power Reading response, from `ipmitool dcmi power reading` text or from
//! the raw response bytes (`ipmitool raw 0x2c 0x02 0xdc 0x01 0x00 0x00`).
//!
//! DCMI 1.5, section 6.6.1: request NetFn 0x2C (group extension), command 0x02, data
//! `DCh` (group extension id), mode `01h` (system power statistics), two reserved
//! bytes. Response: completion code, `DCh`, current power (2 bytes, least significant
//! first), minimum, maximum and average over the sampling period (2 bytes each), a
//! timestamp (4 bytes, seconds), the statistics reporting period (4 bytes,
//! milliseconds) and a state byte whose bit 6 says power measurement is active.
//! `ipmitool raw` prints the response without the completion code (it reports a
//! non-zero one as an error), so both forms are accepted.

use crate::error::BmcError;
use numalab_records::bmc::BmcReading;

/// The DCMI group extension identification byte.
pub const DCMI_GROUP_ID: u8 = 0xDC;

/// The `ipmitool raw` arguments of DCMI Get Power Reading, mode 1 (system power
/// statistics).
pub const RAW_GET_POWER_READING: [&str; 6] = ["0x2c", "0x02", "0xdc", "0x01", "0x00", "0x00"];

/// One DCMI power reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DcmiPowerReading {
    /// Current (instantaneous) power, in watts.
    pub current_w: u16,
    /// Minimum over the sampling period, in watts.
    pub min_w: u16,
    /// Maximum over the sampling period, in watts.
    pub max_w: u16,
    /// Average over the sampling period, in watts.
    pub average_w: u16,
    /// The BMC's timestamp, seconds since 1970 by the BMC's clock (raw form only).
    pub timestamp_s: Option<u32>,
    /// The statistics reporting (sampling) period, in milliseconds.
    pub period_ms: Option<u64>,
    /// Power measurement active (state byte bit 6).
    pub active: bool,
}

impl DcmiPowerReading {
    /// As a recorded reading (`watts` is the instantaneous figure).
    pub fn to_reading(&self) -> BmcReading {
        BmcReading {
            watts: f64::from(self.current_w),
            min_watts: Some(f64::from(self.min_w)),
            max_watts: Some(f64::from(self.max_w)),
            average_watts: Some(f64::from(self.average_w)),
            bmc_period_s: self.period_ms.map(|ms| ms as f64 / 1000.0),
            bmc_timestamp_unix_s: self.timestamp_s.map(u64::from),
            active: Some(self.active),
            parts: Vec::new(),
        }
    }
}

fn parse_err(problem: impl Into<String>) -> BmcError {
    BmcError::Parse {
        what: "DCMI power reading".into(),
        problem: problem.into(),
    }
}

/// Parses the response bytes, with or without the leading completion code.
pub fn parse_response(bytes: &[u8]) -> Result<DcmiPowerReading, BmcError> {
    let data = match bytes {
        [DCMI_GROUP_ID, ..] if bytes.len() >= 18 => bytes,
        [0x00, DCMI_GROUP_ID, ..] if bytes.len() >= 19 => &bytes[1..],
        [cc, ..] if *cc != DCMI_GROUP_ID && bytes.len() < 18 => {
            return Err(parse_err(format!(
                "completion code 0x{cc:02x} (the BMC refused the command); \
                 response {} bytes long",
                bytes.len()
            )))
        }
        _ => {
            return Err(parse_err(format!(
            "expected 18 bytes starting with 0xdc (or 19 with completion code 0x00), got {}: {}",
            bytes.len(),
            hex(bytes)
        )))
        }
    };
    let u16le = |i: usize| u16::from_le_bytes([data[i], data[i + 1]]);
    let u32le = |i: usize| u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
    Ok(DcmiPowerReading {
        current_w: u16le(1),
        min_w: u16le(3),
        max_w: u16le(5),
        average_w: u16le(7),
        timestamp_s: Some(u32le(9)),
        period_ms: Some(u64::from(u32le(13))),
        active: data[17] & 0x40 != 0,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses `ipmitool raw` output: hexadecimal bytes separated by white space, over
/// one or more lines.
pub fn parse_raw_output(text: &str) -> Result<DcmiPowerReading, BmcError> {
    let mut bytes = Vec::new();
    for word in text.split_whitespace() {
        let w = word
            .strip_prefix("0x")
            .or_else(|| word.strip_prefix("0X"))
            .unwrap_or(word);
        let b = u8::from_str_radix(w, 16)
            .map_err(|_| parse_err(format!("{word:?} is not a hexadecimal byte")))?;
        bytes.push(b);
    }
    parse_response(&bytes)
}

/// Parses the text of `ipmitool dcmi power reading`.
pub fn parse_text(text: &str) -> Result<DcmiPowerReading, BmcError> {
    let mut current = None;
    let mut min = None;
    let mut max = None;
    let mut avg = None;
    let mut period_ms = None;
    let mut active = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim();
        let watts = || -> Result<u16, BmcError> {
            let number = value.split_whitespace().next().unwrap_or("");
            number
                .parse::<u16>()
                .map_err(|_| parse_err(format!("{key}: {value:?} is not a number of watts")))
        };
        if key.starts_with("instantaneous power reading") {
            current = Some(watts()?);
        } else if key.starts_with("minimum during sampling period") {
            min = Some(watts()?);
        } else if key.starts_with("maximum during sampling period") {
            max = Some(watts()?);
        } else if key.starts_with("average power reading over sample period") {
            avg = Some(watts()?);
        } else if key.starts_with("sampling period") {
            period_ms = parse_period_ms(value);
        } else if key.starts_with("power reading state is") {
            let v = value.to_ascii_lowercase();
            active = Some(v.starts_with("activated") || v.starts_with("active"));
        }
    }
    let current = current.ok_or_else(|| {
        parse_err(format!(
            "no \"Instantaneous power reading\" line in {:?}",
            text.chars().take(200).collect::<String>()
        ))
    })?;
    Ok(DcmiPowerReading {
        current_w: current,
        min_w: min.unwrap_or(current),
        max_w: max.unwrap_or(current),
        average_w: avg.unwrap_or(current),
        timestamp_s: None,
        period_ms,
        // Older ipmitool versions do not print the state; then assume it is active.
        active: active.unwrap_or(true),
    })
}

/// "00000001 Seconds." (ipmitool divides the DCMI milliseconds by 1000),
/// "1000 Milliseconds", "5 sec".
fn parse_period_ms(value: &str) -> Option<u64> {
    let mut words = value.split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    let unit = words.next().unwrap_or("").to_ascii_lowercase();
    if unit.starts_with("milli") || unit.starts_with("ms") {
        Some(n)
    } else if unit.starts_with("sec") || unit.starts_with('s') {
        Some(n * 1000)
    } else if unit.starts_with("min") {
        Some(n * 60_000)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response constructed from the DCMI 1.5 specification (not captured from a
    /// BMC): 0xdc, current 0x0159 = 345 W, min 0x00d2 = 210 W, max 0x01c2 = 450 W,
    /// average 0x0136 = 310 W, timestamp 0x65f1a2b3, period 0x000003e8 = 1000 ms,
    /// state 0x40 (active), as `ipmitool raw` prints it (16 bytes a line).
    pub(crate) const CONSTRUCTED_RAW: &str =
        " dc 59 01 d2 00 c2 01 36 01 b3 a2 f1 65 e8 03 00\n 00 40\n";

    #[test]
    fn raw_response_from_the_spec_is_decoded() {
        let r = parse_raw_output(CONSTRUCTED_RAW).unwrap();
        assert_eq!(
            r,
            DcmiPowerReading {
                current_w: 345,
                min_w: 210,
                max_w: 450,
                average_w: 310,
                timestamp_s: Some(0x65f1_a2b3),
                period_ms: Some(1000),
                active: true,
            }
        );
        let rec = r.to_reading();
        assert_eq!(rec.watts, 345.0);
        assert_eq!(rec.bmc_period_s, Some(1.0));
        assert_eq!(rec.bmc_timestamp_unix_s, Some(0x65f1_a2b3));
    }

    #[test]
    fn raw_response_with_completion_code_and_inactive_state() {
        // Constructed: completion code 00, then 0xdc, 0 W everywhere, period 5000 ms,
        // state 0x00 (measurement not active).
        let bytes = [
            0x00, 0xdc, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0x13, 0, 0, 0x00,
        ];
        let r = parse_response(&bytes).unwrap();
        assert!(!r.active);
        assert_eq!(r.period_ms, Some(5000));
    }

    #[test]
    fn short_or_foreign_responses_are_errors() {
        assert!(parse_response(&[0xc1])
            .unwrap_err()
            .to_string()
            .contains("0xc1"));
        assert!(parse_response(&[0xdc, 1, 2]).is_err());
        assert!(parse_raw_output("dc zz").is_err());
        assert!(parse_raw_output("").is_err());
    }

    /// Text in the layout of ipmitool 1.8.19 (lib/ipmi_dcmi.c), values constructed.
    pub(crate) const CONSTRUCTED_TEXT: &str = "
    Instantaneous power reading:                   345 Watts
    Minimum during sampling period:                210 Watts
    Maximum during sampling period:                450 Watts
    Average power reading over sample period:      310 Watts
    IPMI timestamp:                           03/13/24 12:34:59 UTC
    Sampling period:                          00000001 Seconds.
    Power reading state is:                   activated

";

    #[test]
    fn ipmitool_text_is_parsed() {
        let r = parse_text(CONSTRUCTED_TEXT).unwrap();
        assert_eq!(
            (r.current_w, r.min_w, r.max_w, r.average_w),
            (345, 210, 450, 310)
        );
        assert_eq!(r.period_ms, Some(1000));
        assert!(r.active);
        let off = CONSTRUCTED_TEXT.replace("activated", "deactivated");
        assert!(!parse_text(&off).unwrap().active);
        let ms = CONSTRUCTED_TEXT.replace("00000001 Seconds.", "00005000 Milliseconds");
        assert_eq!(parse_text(&ms).unwrap().period_ms, Some(5000));
        assert!(parse_text("Error: nothing").is_err());
    }
}
