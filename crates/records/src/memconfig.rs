//! The machine's memory configuration as its SMBIOS tables describe it (made by
//! `numalab-memconfig`): the memory arrays and devices (DIMM slots), the channels the
//! populated devices were grouped into, and the theoretical peak memory bandwidth of the
//! system, of each socket and of each NUMA node.
//!
//! The peak is per channel, not per DIMM: two DIMMs on one channel share its bus. A
//! figure that cannot be derived from what the firmware reports is absent with its
//! reason ([`Peak::reason`]), never guessed; every assumption made on the way (one DIMM
//! per channel when the locators do not name the channel, an even split of a socket's
//! channels among its NUMA nodes, ...) is listed in [`MemConfig::assumptions`].

use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

/// A theoretical peak bandwidth, or why there is none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    /// Bytes per second.
    #[serde(default)]
    pub bytes_per_s: Option<f64>,
    /// The same in GB/s (10^9 bytes per second).
    #[serde(default)]
    pub gbps: Option<f64>,
    /// Why there is no figure (absent when there is one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Peak {
    /// A peak of `bytes_per_s` bytes per second.
    pub fn of(bytes_per_s: f64) -> Self {
        Peak {
            bytes_per_s: Some(bytes_per_s),
            gbps: Some(bytes_per_s / 1e9),
            reason: None,
        }
    }

    /// No figure, and why.
    pub fn unknown(reason: impl Into<String>) -> Self {
        Peak {
            bytes_per_s: None,
            gbps: None,
            reason: Some(reason.into()),
        }
    }

    /// Whether there is a figure.
    pub fn is_known(&self) -> bool {
        self.bytes_per_s.is_some()
    }
}

/// Where the SMBIOS data came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SmbiosSource {
    /// The root the files were read under (`/` live, a fixture folder in tests).
    pub root: String,
    /// `table` (the whole structure table, `/sys/firmware/dmi/tables/DMI`), `entries`
    /// (one file per structure, `/sys/firmware/dmi/entries/T-N/raw`), `bytes` (given
    /// by the caller) or `none` (nothing readable).
    pub kind: String,
    /// The files read (for `entries`: the folder and how many structures).
    #[serde(default)]
    pub files: Vec<String>,
    /// SMBIOS version from the entry point (`3.3.0`), when it was readable.
    #[serde(default)]
    pub version: Option<String>,
    /// The entry point's form (`SMBIOS 3.0 64-bit`, `SMBIOS 2.1 32-bit`, `legacy DMI`).
    #[serde(default)]
    pub entry_point: Option<String>,
    /// Structures parsed.
    #[serde(default)]
    pub structures: usize,
    /// Structures skipped as malformed (each with a note).
    #[serde(default)]
    pub skipped: usize,
    /// System manufacturer and product (SMBIOS type 1), when present.
    #[serde(default)]
    pub system: Option<String>,
}

/// An address range, bytes: `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressRange {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl AddressRange {
    /// Bytes in the range.
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// Whether it holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A Physical Memory Array (SMBIOS type 16): a set of slots, usually one per socket
/// or one for the whole board.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryArray {
    /// SMBIOS handle.
    pub handle: u16,
    /// Location (`System board or motherboard`, `CXL add-on card` ...).
    pub location: String,
    /// Use (`System memory`, `Cache memory` ...). Only system memory counts for the peak.
    pub usage: String,
    /// Error correction (`Multi-bit ECC` ...).
    pub error_correction: String,
    /// Maximum capacity, bytes (None: unknown).
    #[serde(default)]
    pub max_capacity_bytes: Option<u64>,
    /// Slots it declares (Number of Memory Devices).
    #[serde(default)]
    pub slots: Option<u16>,
    /// Its mapped address ranges (SMBIOS type 19).
    #[serde(default)]
    pub ranges: Vec<AddressRange>,
}

/// Where a memory device is mapped (SMBIOS type 20).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceMapping {
    /// The range.
    pub range: AddressRange,
    /// Handle of the array mapping (type 19) it belongs to.
    pub array_mapping_handle: u16,
    /// Partition row position (None: unknown).
    #[serde(default)]
    pub partition_row_position: Option<u8>,
    /// Interleave position: 0 not interleaved, 1 first ... (None: unknown).
    #[serde(default)]
    pub interleave_position: Option<u8>,
    /// Interleaved data depth (None: unknown).
    #[serde(default)]
    pub interleaved_data_depth: Option<u8>,
}

/// A Memory Device (SMBIOS type 17): one slot, populated or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryDevice {
    /// SMBIOS handle.
    pub handle: u16,
    /// Handle of its array (type 16), when given.
    #[serde(default)]
    pub array_handle: Option<u16>,
    /// Device locator (the slot's silk-screen name: `DIMM_A1`, `P1-DIMMA1`, `A1`).
    pub locator: String,
    /// Bank locator (`P0 CHANNEL A`, `P0_Node0_Channel0_Dimm0`, `BANK 0`, or empty).
    pub bank_locator: String,
    /// Memory type (`DDR4`, `DDR5`, `LPDDR5`, `HBM2`, `RAM` ...).
    pub memory_type: String,
    /// The raw memory type code.
    pub memory_type_code: u8,
    /// Form factor (`DIMM`, `SODIMM`, `Die` ...).
    pub form_factor: String,
    /// Memory technology (SMBIOS 3.2+: `DRAM`, `NVDIMM-N`, `Intel Optane persistent memory` ...).
    #[serde(default)]
    pub technology: Option<String>,
    /// Whether a module is installed (size not 0).
    pub populated: bool,
    /// Size, bytes (None: unknown or not installed).
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Total width including ECC bits (None: unknown).
    #[serde(default)]
    pub total_width_bits: Option<u16>,
    /// Data width (None: unknown).
    #[serde(default)]
    pub data_width_bits: Option<u16>,
    /// Rated (maximum) speed, MT/s, extended field included (None: unknown).
    #[serde(default)]
    pub speed_mts: Option<u32>,
    /// Configured speed, MT/s, extended field included (None: unknown).
    #[serde(default)]
    pub configured_speed_mts: Option<u32>,
    /// Ranks (None: unknown).
    #[serde(default)]
    pub rank: Option<u8>,
    /// Manufacturer string.
    #[serde(default)]
    pub manufacturer: Option<String>,
    /// Part number string.
    #[serde(default)]
    pub part_number: Option<String>,
    /// Socket (0-based ordinal) it was assigned to, if any.
    #[serde(default)]
    pub socket: Option<u32>,
    /// The socket as written in the locators (`P1`, `CPU0`, `PROC 1`), if any.
    #[serde(default)]
    pub socket_label: Option<String>,
    /// Channel as read from the locators (`A`, `NODE0 CH1`), if any.
    #[serde(default)]
    pub channel_label: Option<String>,
    /// Id of the [`Channel`] it was grouped into (populated devices only).
    #[serde(default)]
    pub channel: Option<String>,
    /// How socket and channel were found (the rule that matched, or why none did).
    #[serde(default)]
    pub placement: String,
    /// Its mapped address ranges (SMBIOS type 20), if the firmware lists them.
    #[serde(default)]
    pub mappings: Vec<DeviceMapping>,
}

/// A memory channel: the populated devices that share one bus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Channel {
    /// Id, unique in the record (`socket 0 channel A`).
    pub id: String,
    /// Socket, if known.
    #[serde(default)]
    pub socket: Option<u32>,
    /// Channel label (`A`), or the device's locator when the channel was assumed.
    pub label: String,
    /// True when the locators did not name the channel and the device was assumed to
    /// have its channel to itself (one DIMM per channel).
    pub assumed: bool,
    /// Locators of its populated devices.
    pub devices: Vec<String>,
    /// Memory type of its devices (`DDR4`; several joined by `/`).
    pub memory_type: String,
    /// Transfer rate used, MT/s.
    #[serde(default)]
    pub speed_mts: Option<u32>,
    /// Which speed that is: `configured`, `rated` (configured unknown) or `unknown`.
    pub speed_source: String,
    /// Data width used, bits.
    #[serde(default)]
    pub data_width_bits: Option<u16>,
    /// speed (MT/s) x 10^6 x data width / 8.
    pub peak: Peak,
}

/// Peak of one socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketPeak {
    /// Socket (0-based ordinal).
    pub socket: u32,
    /// The socket as written in the locators, if it was.
    #[serde(default)]
    pub label: Option<String>,
    /// Its slots (populated or not).
    pub slots: usize,
    /// Its populated slots.
    pub populated: usize,
    /// Its channels with at least one device.
    pub channels: usize,
    /// Sum of its channels' peaks.
    pub peak: Peak,
    /// How its devices were attributed to it: `locators`, `memory_arrays` (one array
    /// per socket) or `single_processor`.
    pub method: String,
}

/// Peak of one NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodePeak {
    /// NUMA node id.
    pub node: u32,
    /// Socket of its CPUs, if they are on one.
    #[serde(default)]
    pub socket: Option<u32>,
    /// Memory the kernel gives it, bytes (from its memory blocks).
    #[serde(default)]
    pub memory_bytes: Option<u64>,
    /// Channels attributed to it (fractional when a socket's channels were split
    /// evenly and did not divide).
    #[serde(default)]
    pub channels: Option<f64>,
    /// Its peak.
    pub peak: Peak,
    /// How its channels were found: `device_address_ranges` (SMBIOS type 20 ranges
    /// inside the node's memory blocks), `array_address_ranges` (type 19),
    /// `socket_single_node` (the socket's only node), `split_evenly_assumed` (the
    /// socket's channels divided evenly among its nodes), `single_memory_node`, or
    /// `unknown`.
    pub method: String,
}

/// The memory configuration and its theoretical peak bandwidth (`memconfig.smbios`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemConfig {
    /// Where the data came from.
    pub source: SmbiosSource,
    /// Populated processor sockets SMBIOS lists (type 4), if it lists any.
    #[serde(default)]
    pub processors: Option<u32>,
    /// Memory arrays.
    #[serde(default)]
    pub arrays: Vec<MemoryArray>,
    /// Memory devices (slots), populated or not.
    #[serde(default)]
    pub devices: Vec<MemoryDevice>,
    /// Channels with at least one populated device that counts for the peak.
    #[serde(default)]
    pub channels: Vec<Channel>,
    /// Slots in system-memory arrays.
    #[serde(default)]
    pub slots: usize,
    /// Of which populated.
    #[serde(default)]
    pub populated: usize,
    /// The system's peak: the sum of its channels'.
    pub system: Peak,
    /// Per socket (empty when the devices could not be attributed to sockets).
    #[serde(default)]
    pub sockets: Vec<SocketPeak>,
    /// Why there are no per-socket figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sockets_reason: Option<String>,
    /// Per NUMA node.
    #[serde(default)]
    pub nodes: Vec<NodePeak>,
    /// Why there are no per-node figures at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes_reason: Option<String>,
    /// Assumptions the figures rest on, each in a sentence.
    #[serde(default)]
    pub assumptions: Vec<String>,
    /// Everything else worth saying (skipped structures, odd values ...).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl RecordKind for MemConfig {
    const KIND: &'static str = "memconfig.smbios";
}

impl MemConfig {
    /// The system's theoretical peak, bytes per second (None: unknown, see
    /// [`MemConfig::unknown_reason`]).
    pub fn peak(&self) -> Option<f64> {
        self.system.bytes_per_s
    }

    /// The system's theoretical peak, GB/s (10^9 bytes per second).
    pub fn peak_gbps(&self) -> Option<f64> {
        self.system.gbps
    }

    /// Why the system peak is unknown (None when it is known).
    pub fn unknown_reason(&self) -> Option<&str> {
        self.system.reason.as_deref()
    }

    /// Peak of one socket.
    pub fn socket(&self, socket: u32) -> Option<&SocketPeak> {
        self.sockets.iter().find(|s| s.socket == socket)
    }

    /// Peak of one NUMA node.
    pub fn node(&self, node: u32) -> Option<&NodePeak> {
        self.nodes.iter().find(|n| n.node == node)
    }

    /// Sockets the populated devices were attributed to, or else the populated
    /// processors SMBIOS lists.
    pub fn socket_count(&self) -> Option<u32> {
        if !self.sockets.is_empty() {
            return Some(self.sockets.len() as u32);
        }
        self.processors.filter(|&p| p > 0)
    }

    /// One line for people: `8 channels DDR4-3200 (8 of 16 slots), 204.8 GB/s peak,
    /// 1 socket`, or what is known and why the peak is not.
    pub fn summary(&self) -> String {
        let mut kinds: Vec<String> = Vec::new();
        for c in &self.channels {
            let k = match c.speed_mts {
                Some(s) => format!("{}-{}", c.memory_type, s),
                None => format!("{} (speed unknown)", c.memory_type),
            };
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        let kinds = kinds.join("/");
        let sockets = match self.socket_count() {
            Some(1) => ", 1 socket".to_string(),
            Some(n) => format!(", {n} sockets"),
            None => String::new(),
        };
        let assumed = if self.channels.iter().any(|c| c.assumed) {
            " (1 DIMM per channel assumed)"
        } else {
            ""
        };
        match (self.system.gbps, self.channels.is_empty()) {
            (Some(gbps), _) => {
                let n = self.channels.len();
                let ch = if n == 1 { "channel" } else { "channels" };
                format!(
                    "{n} {ch} {kinds} ({} of {} slots){assumed}, {gbps:.1} GB/s peak{sockets}",
                    self.populated, self.slots
                )
            }
            (None, false) => format!(
                "{} {} {} ({} of {} slots){sockets}, peak unknown: {}",
                self.channels.len(),
                if self.channels.len() == 1 {
                    "channel"
                } else {
                    "channels"
                },
                kinds,
                self.populated,
                self.slots,
                self.unknown_reason().unwrap_or("not derived")
            ),
            (None, true) => format!(
                "peak unknown: {}",
                self.unknown_reason().unwrap_or("not derived")
            ),
        }
    }
}
