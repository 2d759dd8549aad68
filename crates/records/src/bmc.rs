//! Node power at the wall as the server's BMC reports it (`numalab-bmc` reads it over
//! IPMI or Redfish and samples it during a measurement; these are the records it
//! writes, `power.bmc`).
//!
//! A BMC figure covers the whole node at the wall (or at the power supplies' inputs),
//! unlike RAPL or hwmon figures ([`crate::sensors`]), and it is coarse: the BMC averages
//! over its own window and refreshes about once a second. The record keeps which
//! source and resource gave each figure, so that a reader can tell a DCMI reading from a
//! sum of power-supply sensors. No credential is ever part of these records.

use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

/// What a BMC figure covers, in words, as recorded in [`BmcPowerRecord::covers`].
pub const COVERS_WHOLE_NODE: &str = "whole node at the wall (BMC)";

/// Which BMC interface and resource gave the figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BmcSourceKind {
    /// IPMI DCMI Get Power Reading (NetFn 0x2C, command 0x02), via `ipmitool`.
    IpmiDcmi,
    /// The BMC's power sensors (unit Watts) in its sensor data records, via `ipmitool`.
    IpmiSdr,
    /// Redfish `Chassis/{id}/PowerSubsystem` (power-supply metrics) and the chassis
    /// `EnvironmentMetrics`.
    RedfishPowerSubsystem,
    /// Redfish `Chassis/{id}/Power` (deprecated by the DMTF, still the common one).
    RedfishPower,
}

/// How a Redfish service was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedfishTransport {
    /// HTTPS with the server's certificate verified.
    HttpsVerified,
    /// HTTPS without verifying the certificate (`insecure: true` was asked for): the
    /// figures could come from anyone on the path.
    HttpsInsecure,
    /// Plain HTTP to a loopback address (tests, or a local tunnel).
    PlainHttpLoopback,
}

/// How the BMC was reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "via")]
pub enum BmcAccess {
    /// `ipmitool` in-band, through the local IPMI driver (`/dev/ipmi0`).
    InBand,
    /// `ipmitool -I lanplus` over the network (RMCP+).
    Lan {
        /// The BMC's host name or address.
        host: String,
        /// The UDP port, when not the default 623.
        port: Option<u16>,
        /// The IPMI user name (never the password).
        user: String,
    },
    /// A Redfish service.
    Redfish {
        /// The resource read, without credentials (e.g.
        /// `https://bmc.example/redfish/v1/Chassis/1U/Power`).
        url: String,
        /// HTTPS verified, HTTPS insecure, or loopback plain HTTP.
        transport: RedfishTransport,
    },
}

/// The source of a series of BMC figures, as resolved when reading it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BmcSource {
    /// Interface and resource.
    pub kind: BmcSourceKind,
    /// How the BMC was reached.
    pub access: BmcAccess,
    /// The sensors or Redfish properties whose values make the figure (e.g.
    /// `["PS1 Input Power", "PS2 Input Power"]`, or
    /// `["Chassis 1U EnvironmentMetrics PowerWatts"]`); empty for DCMI.
    pub sensors: Vec<String>,
    /// How the figure is made from them, in words ("sum of the power-supply input
    /// sensors (no total sensor found)").
    pub method: String,
    /// The whole source in one line, for reports.
    pub description: String,
}

impl BmcSource {
    /// True when TLS certificate verification was turned off for this source.
    pub fn insecure(&self) -> bool {
        matches!(
            self.access,
            BmcAccess::Redfish {
                transport: RedfishTransport::HttpsInsecure,
                ..
            }
        )
    }
}

/// One part of a BMC figure: a sensor or property and its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerPart {
    /// The sensor's or property's name.
    pub name: String,
    /// Its value, in watts.
    pub watts: f64,
    /// True when it is part of [`BmcReading::watts`]; false when only reported beside
    /// it (a component sensor, a figure of another resource).
    pub used: bool,
}

/// One power figure read from the BMC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BmcReading {
    /// Node power, in watts: the DCMI instantaneous reading, the total or summed
    /// power-supply input sensors, or the Redfish figure.
    pub watts: f64,
    /// DCMI: the minimum over the BMC's sampling period, in watts.
    pub min_watts: Option<f64>,
    /// DCMI: the maximum over the BMC's sampling period, in watts.
    pub max_watts: Option<f64>,
    /// DCMI: the average over the BMC's sampling period, in watts.
    pub average_watts: Option<f64>,
    /// The BMC's own sampling/averaging period for min/max/average, in seconds.
    pub bmc_period_s: Option<f64>,
    /// DCMI: the BMC's timestamp of the reading (seconds since 1970, BMC clock).
    pub bmc_timestamp_unix_s: Option<u64>,
    /// DCMI: whether power measurement is active ("Power reading state").
    pub active: Option<bool>,
    /// The sensors or properties seen, with which ones were used.
    pub parts: Vec<PowerPart>,
}

impl BmcReading {
    /// A figure with its parts and nothing else (a sensor sum, a Redfish property):
    /// the DCMI-only fields unknown.
    pub fn watts(watts: f64, parts: Vec<PowerPart>) -> Self {
        BmcReading {
            watts,
            min_watts: None,
            max_watts: None,
            average_watts: None,
            bmc_period_s: None,
            bmc_timestamp_unix_s: None,
            active: None,
            parts,
        }
    }
}

/// One timed sample of a [`BmcPowerRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BmcSample {
    /// When the read started, seconds since the sampler started (monotonic clock).
    pub t_s: f64,
    /// When the read started, milliseconds since 1970 (wall clock).
    pub unix_ms: u64,
    /// How long the read took, in seconds (the figure is at least this old).
    pub read_s: f64,
    /// The figure.
    pub reading: BmcReading,
}

/// A read that failed during sampling; the sampling went on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BmcSampleError {
    /// When the read started, milliseconds since the sampler started.
    pub t_ms: u64,
    /// What went wrong (never holds a credential).
    pub error: String,
}

/// BMC power sampled during a measurement (`power.bmc`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BmcPowerRecord {
    /// Where the figures come from.
    pub source: BmcSource,
    /// What they cover: [`COVERS_WHOLE_NODE`].
    pub covers: String,
    /// The requested sampling interval, in milliseconds.
    pub interval_ms: u64,
    /// When sampling started, milliseconds since 1970.
    pub started_unix_ms: u64,
    /// How long sampling ran, in seconds.
    pub duration_s: f64,
    /// The samples, in time order.
    pub samples: Vec<BmcSample>,
    /// The reads that failed, in time order (at most a bounded number; see
    /// `errors_dropped`).
    pub errors: Vec<BmcSampleError>,
    /// Failed reads not kept in `errors`.
    pub errors_dropped: u64,
    /// Plain mean of the samples' `watts` (not time-weighted), when there are any.
    pub mean_watts: Option<f64>,
    /// What limits these figures (the BMC's averaging window, its refresh rate,
    /// sampling faster than the BMC refreshes, insecure TLS).
    pub notes: Vec<String>,
    /// The measurement the samples were taken during ("mem bandwidth", "evaluate step
    /// workload"); `None` in records written before numalab sampled during measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<String>,
}

impl RecordKind for BmcPowerRecord {
    const KIND: &'static str = "power.bmc";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_through_json() {
        let record = BmcPowerRecord {
            source: BmcSource {
                kind: BmcSourceKind::RedfishPower,
                access: BmcAccess::Redfish {
                    url: "https://bmc/redfish/v1/Chassis/1U/Power".into(),
                    transport: RedfishTransport::HttpsInsecure,
                },
                sensors: vec!["PowerControl[0] PowerConsumedWatts".into()],
                method: "PowerControl".into(),
                description: "d".into(),
            },
            covers: COVERS_WHOLE_NODE.into(),
            interval_ms: 1000,
            started_unix_ms: 1,
            duration_s: 2.0,
            samples: vec![BmcSample {
                t_s: 0.0,
                unix_ms: 1,
                read_s: 0.1,
                reading: BmcReading::watts(344.0, vec![]),
            }],
            errors: vec![],
            errors_dropped: 0,
            mean_watts: Some(344.0),
            notes: vec![],
            during: Some("mem bandwidth".into()),
        };
        let text = serde_json::to_string(&record).unwrap();
        assert!(text.contains("\"transport\":\"https_insecure\""), "{text}");
        let back: BmcPowerRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, record);
        assert!(back.source.insecure());
    }
}
