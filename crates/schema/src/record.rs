//! The results schema: an envelope describing the run and the host, and a list of typed
//! records. Every command (measurement, model or import) writes the same shapes, so
//! `report` and `compare` can read anything any version of numalab wrote, offline.
//!
//! Records are typed in the crate that produces them: a type implements [`RecordKind`]
//! (a stable kind name) and [`Record::new`] stores it; readers call [`Record::decode`].
//! Units live in field names (`latency_ns`, `bandwidth_gbps`, `bytes`).

use crate::machine::Machine;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::time::SystemTime;

/// Version of the results schema (envelope, record and journal layout).
///
/// Readers accept any version up to this one; a newer file is read as far as possible
/// and the reader warns that numalab should be upgraded.
pub const SCHEMA_VERSION: u32 = 1;

/// Whether a record or a bundle was measured on hardware, computed by the model, or
/// imported from another tool's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Measured on the host described in the envelope.
    Measured,
    /// Computed by numalab's machine model.
    Modeled,
    /// Read from another tool's output (perf stat, core-to-core-latency CSV...).
    Imported,
}

/// A warning attached to a record or a run: what happened and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// Stable machine-readable code, e.g. `placement_mismatch`, `multiplexed`, `noisy`.
    pub code: String,
    /// What happened, in a sentence.
    pub message: String,
    /// What the user can do about it, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

impl Warning {
    /// A warning with a code and a message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Warning {
            code: code.into(),
            message: message.into(),
            remedy: None,
        }
    }

    /// Adds a remedy.
    pub fn with_remedy(mut self, remedy: impl Into<String>) -> Self {
        self.remedy = Some(remedy.into());
        self
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(r) = &self.remedy {
            write!(f, " ({r})")?;
        }
        Ok(())
    }
}

/// The tool that wrote a bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    /// "numalab".
    pub name: String,
    /// Crate version.
    pub version: String,
    /// Target triple or architecture the binary was built for.
    pub target: String,
    /// "release" or "debug": debug builds measure badly, so reports say so.
    pub profile: String,
}

impl Tool {
    /// Describes this build of numalab.
    pub fn this(version: &str) -> Self {
        Tool {
            name: "numalab".into(),
            version: version.into(),
            target: format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .into(),
        }
    }
}

/// The host a bundle was measured on (or the modeled machine).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Host name.
    pub hostname: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// cpufreq governor(s) in use, e.g. "performance", or "none" without cpufreq.
    pub governor: Option<String>,
    /// SMT state ("on", "off", "notsupported", ...).
    pub smt: Option<String>,
    /// Hypervisor, when running in a VM ("KVM", ...).
    pub hypervisor: Option<String>,
    /// Container runtime, when running in a container.
    pub container: Option<String>,
    /// [`Machine::topology_hash`] of the topology.
    pub topology_hash: String,
    /// The full machine description.
    pub topology: Option<Machine>,
}

impl Host {
    /// A host known only by its topology hash (an imported file, a test): every other
    /// fact unknown.
    pub fn unknown(topology_hash: impl Into<String>) -> Host {
        Host {
            hostname: None,
            cpu_model: None,
            kernel: None,
            governor: None,
            smt: None,
            hypervisor: None,
            container: None,
            topology_hash: topology_hash.into(),
            topology: None,
        }
    }
}

/// The header of a bundle: what ran, where, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The tool that wrote it.
    pub tool: Tool,
    /// When the run started (RFC 3339, UTC).
    pub created_utc: String,
    /// The command line that started the run.
    pub command: Vec<String>,
    /// The run's configuration (options after defaults were applied).
    pub config: serde_json::Value,
    /// Measured or modeled machine.
    pub origin: Origin,
    /// The host.
    pub host: Host,
}

/// One result: a typed payload plus what every result needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Unique key inside a bundle (e.g. `bandwidth/matrix/cpu0-mem1/triad`). A resumed
    /// run skips work whose key is already in the journal.
    pub key: String,
    /// Record type, e.g. `mem.bandwidth` (see [`RecordKind::KIND`]).
    pub kind: String,
    /// Measured, modeled or imported.
    pub origin: Origin,
    /// When the record was completed (RFC 3339, UTC).
    pub time_utc: String,
    /// The typed payload.
    pub data: serde_json::Value,
    /// Warnings about this result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
}

/// A typed record payload.
pub trait RecordKind: Serialize + DeserializeOwned {
    /// Stable kind name, `area.thing` (e.g. `mem.bandwidth`, `c2c.matrix`).
    const KIND: &'static str;
}

impl Record {
    /// Stores a typed payload.
    pub fn new<T: RecordKind>(key: impl Into<String>, origin: Origin, payload: &T) -> Self {
        Record {
            key: key.into(),
            kind: T::KIND.to_string(),
            origin,
            time_utc: now_utc(),
            data: serde_json::to_value(payload).expect("record payloads serialize to JSON"),
            warnings: Vec::new(),
        }
    }

    /// Adds warnings.
    pub fn with_warnings(mut self, warnings: Vec<Warning>) -> Self {
        self.warnings.extend(warnings);
        self
    }

    /// Reads the payload back if the record is of kind `T`; `None` for other kinds.
    pub fn decode<T: RecordKind>(&self) -> Option<Result<T, serde_json::Error>> {
        // Read from the payload in place: a copy of a 2,000-CPU matrix's 4 million
        // cells would take as long again.
        (self.kind == T::KIND).then(|| T::deserialize(&self.data))
    }
}

/// A bundle: an envelope and its records, as read back from a journal or a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    /// [`SCHEMA_VERSION`] of the writer (repeated at top level for quick checks).
    pub schema_version: u32,
    /// The header.
    pub envelope: Envelope,
    /// The records, in the order they were written.
    pub records: Vec<Record>,
}

impl Bundle {
    /// Records of one type, decoded (records that fail to decode are skipped).
    pub fn records_of<T: RecordKind>(&self) -> Vec<(&Record, T)> {
        self.records
            .iter()
            .filter_map(|r| match r.decode::<T>() {
                Some(Ok(t)) => Some((r, t)),
                _ => None,
            })
            .collect()
    }
}

/// The current time as RFC 3339 UTC with seconds.
pub fn now_utc() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Probe {
        latency_ns: f64,
    }
    impl RecordKind for Probe {
        const KIND: &'static str = "test.probe";
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Other {
        x: u32,
    }
    impl RecordKind for Other {
        const KIND: &'static str = "test.other";
    }

    #[test]
    fn typed_round_trip() {
        let r = Record::new("k", Origin::Measured, &Probe { latency_ns: 81.5 });
        assert_eq!(r.kind, "test.probe");
        assert_eq!(
            r.decode::<Probe>().unwrap().unwrap(),
            Probe { latency_ns: 81.5 }
        );
        assert!(r.decode::<Other>().is_none());
        let line = serde_json::to_string(&r).unwrap();
        let back: Record = serde_json::from_str(&line).unwrap();
        assert_eq!(back, r);
        assert!(r.time_utc.ends_with('Z'));
    }
}
