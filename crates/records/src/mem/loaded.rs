//! `mem.loaded`: the latency of a chaser while other CPUs move data.

use super::kernel::{Isa, Kernel, Op};
use super::latency::Order;
use super::{PagesObtained, Placement, Timer};
use numalab_schema::RecordKind;
use numalab_stats::Summary;
use serde::{Deserialize, Serialize};

/// What traffic generators do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Traffic {
    /// Read only (sum of 4 KiB chunks).
    Read,
    /// Read and write 1:1 (copy of 2 KiB chunks: 2 KiB read, 2 KiB written).
    ReadWrite,
}

impl Traffic {
    /// Parses "read" or "rw".
    pub fn parse(text: &str) -> Result<Traffic, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "read" | "r" => Ok(Traffic::Read),
            "rw" | "mixed" | "read-write" => Ok(Traffic::ReadWrite),
            _ => Err(format!("--traffic {text:?}: use read or rw")),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Traffic::Read => "read",
            Traffic::ReadWrite => "rw",
        }
    }

    /// The kernel its generators run.
    pub fn kernel(self) -> Kernel {
        match self {
            Traffic::Read => Kernel::plain(Op::Read),
            Traffic::ReadWrite => Kernel::plain(Op::Copy),
        }
    }
}

/// One intensity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedPoint {
    /// Delay between chunks, ns (None: generators idle).
    pub delay_ns: Option<u64>,
    /// Traffic of all generators, STREAM-counted, GB/s.
    pub traffic_gbps: f64,
    /// Traffic in bytes actually moved (write-allocate included), GB/s.
    pub actual_traffic_gbps: f64,
    /// Raw samples: the chaser's ns per load of each batch.
    pub sample_ns: Vec<f64>,
    /// Chaser latency over batches (p50, p90, p99...).
    pub latency_ns: Summary,
    /// Loads per batch.
    pub loads_per_batch: u64,
    /// Duration of the point, ns.
    pub duration_ns: u64,
}

/// A latency-versus-bandwidth curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedRecord {
    /// The chasing CPU.
    pub chaser_cpu: u32,
    /// Generator CPUs.
    pub generator_cpus: Vec<u32>,
    /// Traffic kind.
    pub traffic: Traffic,
    /// ISA of the generators.
    pub isa: Isa,
    /// Placement of all threads and pages (chaser first).
    pub placement: Placement,
    /// Pages obtained (all regions).
    pub pages: PagesObtained,
    /// Chaser working set, bytes.
    pub chase_bytes: u64,
    /// Working set per generator, bytes.
    pub generator_bytes: u64,
    /// What the chaser's figures are (order, pages, locality, last-level cache); the
    /// idle point is [`Load::Idle`](super::latency::Load::Idle), the others loaded. Absent in
    /// records written before numalab 0.9, see [`LoadedRecord::kind`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<super::latency::Kind>,
    /// Points, from idle to saturation.
    pub points: Vec<LoadedPoint>,
    /// Timer.
    pub timer: Timer,
}

impl RecordKind for LoadedRecord {
    const KIND: &'static str = "mem.loaded";
}

impl LoadedPoint {
    /// How much the chaser's batch latencies moved within this point: the absolute
    /// difference of the medians of its first and second halves of batches, ns (`None`
    /// under 8 batches, too few halves to tell). A change between two points no larger
    /// than their drift is not an effect this run can show.
    pub fn half_drift_ns(&self) -> Option<f64> {
        if self.sample_ns.len() < 8 {
            return None;
        }
        let (a, b) = self.sample_ns.split_at(self.sample_ns.len() / 2);
        Some((numalab_stats::median(a)? - numalab_stats::median(b)?).abs())
    }
}

/// The idle point and the point with the most traffic of a curve, when it has both.
pub fn idle_and_busiest(points: &[LoadedPoint]) -> Option<(&LoadedPoint, &LoadedPoint)> {
    Some((
        points.iter().find(|p| p.delay_ns.is_none())?,
        points
            .iter()
            .filter(|p| p.delay_ns.is_some())
            .max_by(|a, b| a.traffic_gbps.total_cmp(&b.traffic_gbps))?,
    ))
}

/// The larger drift ([`LoadedPoint::half_drift_ns`]) of a curve's idle and busiest
/// points, `None` when neither has enough batches (or the curve lacks one of them).
pub fn drift_ns(points: &[LoadedPoint]) -> Option<f64> {
    let (idle, busy) = idle_and_busiest(points)?;
    [idle, busy]
        .iter()
        .filter_map(|p| p.half_drift_ns())
        .reduce(f64::max)
}

impl LoadedRecord {
    /// What the chaser's figures are under load: the recorded kind, or for an older
    /// record the one its fields imply (a page-local chase, blocks of its pages, two
    /// lines apart). [`LoadedRecord::idle_kind`] for the idle point.
    pub fn kind(&self) -> super::latency::Kind {
        use super::latency::{Kind, Load, Locality};
        self.kind.clone().unwrap_or_else(|| Kind {
            load: Load::Loaded,
            order: Order::PageLocal,
            block_bytes: Some(if self.pages.obtained == "thp" {
                2 << 20
            } else {
                self.pages.page_bytes
            }),
            stride_bytes: 128,
            pages: self.pages.obtained.clone(),
            locality: Locality::of(&self.placement),
            llc_bytes: None,
        })
    }

    /// The kind of the idle point (generators idle).
    pub fn idle_kind(&self) -> super::latency::Kind {
        super::latency::Kind {
            load: super::latency::Load::Idle,
            ..self.kind()
        }
    }
}
