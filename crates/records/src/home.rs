//! The records `numalab home` writes: `home.map` (which home agent and memory interface
//! serve each measured cache line of a buffer, the fitted address hash, where each home
//! sits on the floorplan), `home.accuracy` (a model-generated machine's map inferred and
//! compared with the truth) and `home.bench` (the affinity experiments).
//!
//! Per-line data is stored compactly, one byte per line as hex (two characters), as the
//! mesh study stored its map: [`LINE_UNKNOWN`] marks a line without an answer.

pub mod fingerprint;
pub mod slices;

pub use fingerprint::{
    Fingerprint, FINGERPRINT_RECIPE, FINGERPRINT_RECIPE_V1, MEMORY_BLOCKS, MEMORY_MEMTOTAL,
};
use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};
pub use slices::SliceHash;

/// The bits of a mask as ranges, "6-9,12,14" ("none" for 0).
pub fn bit_ranges(mask: u64) -> String {
    let v: Vec<u32> = (0..64).filter(|i| mask >> i & 1 == 1).collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    if out.is_empty() {
        "none".into()
    } else {
        out.join(",")
    }
}

/// The byte of a line that has no home (or interface) assigned.
pub const LINE_UNKNOWN: u8 = 255;

/// How a measured access reaches the line's home.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// The line is flushed to memory (`clflush`, `DC CIVAC`) before each read: core ->
    /// home -> memory interface -> core.
    Flushed,
    /// The line is written by an owner core before each read: core -> home -> owner ->
    /// core; the memory interface plays no part.
    Forwarded,
}

/// One home agent (a cluster of lines with the same latency profile).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Home {
    /// Id (the byte lines carry).
    pub id: u8,
    /// Measured lines assigned to it.
    pub lines: usize,
    /// Mean latency from each probe core (in `probe_cpus` order), ns.
    pub profile_ns: Vec<f64>,
    /// Its stop on the floorplan `[x, y]`, when a floorplan was given.
    pub stop: Option<[u32; 2]>,
    /// Probability that this stop rather than the best alternative is right.
    pub stop_confidence: Option<f64>,
    /// Root mean square residual of the profile at that stop, ns.
    pub stop_residual_ns: Option<f64>,
}

/// One memory interface (lines whose flushed reads share a controller pattern).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interface {
    /// Id (the byte lines carry).
    pub id: u8,
    /// Measured lines assigned to it.
    pub lines: usize,
    /// Mean of (flushed - forwarded) latency from each probe core, minus its mean, ns.
    pub shape_ns: Vec<f64>,
}

/// A recovered address hash: `id = table[s]` where bit t of the syndrome `s` is the
/// parity of `address & masks[t]` (byte physical addresses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HashFit {
    /// "home" or "interface".
    pub what: String,
    /// "recovered" (every address bit the buffer could vary is covered: the map of any
    /// address follows), "page-offset" (the bits within a page only: a new page needs a
    /// probe of a few lines for its shift), or "not-found".
    pub status: String,
    /// Address bits the fit could observe (a mask over byte addresses).
    pub observed_bits: u64,
    /// One mask per syndrome bit.
    pub masks: Vec<u64>,
    /// Syndrome -> id (length `2^masks.len()`).
    pub table: Vec<u8>,
    /// Whether the table is a one-to-one map (a purely linear hash: `2^bits` ids).
    pub linear: bool,
    /// Share of measured lines whose id the hash predicts.
    pub agreement: f64,
    /// Why the status is what it is, in sentences.
    pub notes: Vec<String>,
}

impl HashFit {
    /// Most syndrome bits a hash may have (a table of `2^MAX_BITS` entries).
    pub const MAX_BITS: usize = 16;

    /// The syndrome of a byte address (masks beyond [`HashFit::MAX_BITS`] are ignored;
    /// [`HashFit::predict`] refuses such a hash).
    pub fn syndrome(&self, address: u64) -> usize {
        self.masks
            .iter()
            .take(Self::MAX_BITS)
            .enumerate()
            .map(|(t, m)| (((address & m).count_ones() & 1) as usize) << t)
            .sum()
    }

    /// The id the hash gives a byte address; `None` unless the hash was recovered over
    /// every bit (`status == "recovered"`) or the table has no entry.
    pub fn predict(&self, address: u64) -> Option<u8> {
        if self.status != "recovered"
            || self.masks.len() > Self::MAX_BITS
            || self.table.len() != 1 << self.masks.len()
        {
            return None;
        }
        self.table
            .get(self.syndrome(address))
            .copied()
            .filter(|&b| b != LINE_UNKNOWN)
    }
}

/// The map of one page of the buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageMap {
    /// Page index in the buffer.
    pub index: usize,
    /// Physical address of the page, when pagemap was readable.
    pub phys: Option<u64>,
    /// Every line of the page was measured (otherwise the record's `sample_offsets`).
    pub full: bool,
    /// Home id per measured line, hex, one byte per line.
    pub home: String,
    /// Interface id per measured line, hex (all `ff` when not distinguishable).
    pub interface: String,
    /// Confidence per measured line, hex, `round(255 * p)`.
    pub confidence: String,
}

/// Which home and interface serve each measured line (`home.map`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HomeMapRecord {
    /// "measured" or "model".
    pub input_origin: String,
    /// The machine the map is valid on.
    pub fingerprint: Fingerprint,
    /// Buffer size, bytes.
    pub buffer_bytes: u64,
    /// Page size of the buffer, bytes.
    pub page_bytes: u64,
    /// The buffer is on huge pages.
    pub huge_pages: bool,
    /// Physical addresses were known (pagemap readable).
    pub physical_addresses: bool,
    /// Cache line, bytes.
    pub line_bytes: u32,
    /// How the homes were located.
    pub access: Access,
    /// The cores reading (OS CPU ids), in profile order.
    pub probe_cpus: Vec<u32>,
    /// The owner core of forwarded reads.
    pub owner_cpu: Option<u32>,
    /// Reads per line and core (the median is kept).
    pub repeats: u32,
    /// Estimated standard deviation of one read, ns.
    pub noise_ns: f64,
    /// Line offsets (line index within a page) measured on pages not measured in full.
    pub sample_offsets: Vec<u32>,
    /// Lines measured.
    pub lines_measured: usize,
    /// The floorplan homes were located on (a `layout.inference` record's input).
    pub floorplan: Option<String>,
    /// Where the floorplan puts each CPU, `[cpu, x, y]` (empty without a floorplan):
    /// what an allocator needs to measure a thread's distance to a home.
    pub cpu_stops: Vec<[u32; 3]>,
    /// Whether any home structure is visible: more than one home, or interfaces.
    pub structure_visible: bool,
    /// Share of a spread sample of re-read lines that fell in the same home group the
    /// second time (null with one group): groups that do not reproduce are measurement
    /// artefacts (timer resolution, frequency changes, load) and are dropped. Each group
    /// must also reproduce on its own re-read lines (notes say when lines were read a
    /// third time).
    pub homes_reproduced: Option<f64>,
    /// The same for interface groups.
    pub interfaces_reproduced: Option<f64>,
    /// Home agents found.
    pub homes: Vec<Home>,
    /// Memory interfaces found (empty when not distinguishable).
    pub interfaces: Vec<Interface>,
    /// The measured pages.
    pub pages: Vec<PageMap>,
    /// The home hash, when looked for.
    pub home_hash: Option<HashFit>,
    /// The interface hash, when looked for.
    pub interface_hash: Option<HashFit>,
    /// The home hash in the published form (base sequence and permutation select
    /// masks), derived from `home_hash` over the measured pages' lines; null when the
    /// hash was not recovered or no base sequence explains it.
    #[serde(default)]
    pub slice_hash: Option<SliceHash>,
    /// Seconds spent measuring.
    pub measure_seconds: f64,
    /// Seconds spent inferring.
    pub infer_seconds: f64,
    /// Facts and cautions, in sentences.
    pub notes: Vec<String>,
}

impl RecordKind for HomeMapRecord {
    const KIND: &'static str = "home.map";
}

/// A model-generated map compared with its truth (`home.accuracy`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracyRecord {
    /// Preset.
    pub preset: String,
    /// Standard deviation of the noise on every read, ns.
    pub noise_ns: f64,
    /// Seed of the truth.
    pub seed: u64,
    /// True homes.
    pub homes_true: usize,
    /// Distinct stops of the true homes: homes sharing a stop (two SLC slices of one
    /// CMN home node) read alike from every core, so latency can find places only, and
    /// every score below is against places.
    pub home_places_true: usize,
    /// Homes found.
    pub homes_found: usize,
    /// True interfaces.
    pub interfaces_true: usize,
    /// Distinct stops of the true interfaces.
    pub interface_places_true: usize,
    /// Interfaces found.
    pub interfaces_found: usize,
    /// Share of measured lines whose home cluster matches the truth (best one-to-one
    /// matching of ids), from the latency profiles alone.
    pub line_accuracy_profiles: f64,
    /// The same after the recovered hash relabelled the lines (null without a hash).
    pub line_accuracy_hash: Option<f64>,
    /// Share of measured lines whose interface matches (null when not distinguished).
    pub interface_accuracy: Option<f64>,
    /// Share of homes located at their true stop (modulo the floorplan's symmetry),
    /// null without a floorplan.
    pub homes_located_exact: Option<f64>,
    /// The hash predicts the true home of every address tried.
    pub hash_exact: bool,
    /// Addresses tried against the true hash.
    pub hash_addresses_tried: usize,
    /// Of those, predicted correctly.
    pub hash_addresses_correct: usize,
    /// The interface hash, likewise.
    pub interface_hash_exact: Option<bool>,
    /// Fraction of the floorplan's cores placed exactly (null without a floorplan).
    pub floorplan_exact_fraction: Option<f64>,
    /// The same after every CPU was placed again by its latencies to the located homes
    /// (null when that was not done).
    pub floorplan_refined_exact_fraction: Option<f64>,
    /// Seconds for the whole inference.
    pub seconds: f64,
    /// Facts and cautions, in sentences.
    pub notes: Vec<String>,
}

impl RecordKind for AccuracyRecord {
    const KIND: &'static str = "home.accuracy";
}

/// One point of the affinity sweep (study Figure 3a).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Affinity strength: the largest distance, hops, between a thread's core and the
    /// homes of its lines (null: no affinity, any line).
    pub distance_hops: Option<u32>,
    /// Mean latency of a read of the kernel's data, ns.
    pub latency_ns: f64,
    /// Execution time of the kernel, cycles (or ns on the model).
    pub cycles: Option<f64>,
    /// Outstanding-request cycles, where counters exist.
    pub outstanding_cycles: Option<f64>,
    /// TLB misses, where counters exist.
    pub tlb_misses: Option<f64>,
    /// Share of accesses to a memory interface outside the core's quadrant.
    pub distant_interface_share: Option<f64>,
    /// Latency gain over no affinity, fraction.
    pub gain: f64,
    /// The same computed with the true map (model only).
    pub gain_true_map: Option<f64>,
}

/// A 1-D stencil with scatter versus co-located threads (study Figure 3b).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StencilPoint {
    /// Threads.
    pub threads: usize,
    /// "scatter" or "co-located".
    pub placement: String,
    /// Mean latency of a neighbour exchange or data read, ns.
    pub latency_ns: f64,
    /// Time per step, ns.
    pub step_ns: f64,
}

/// The affinity experiments (`home.bench`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    /// "measured" or "model".
    pub input_origin: String,
    /// The preset (model) or the map's fingerprint model name.
    pub machine: String,
    /// Reduction kernel: lines read per thread.
    pub lines_per_thread: usize,
    /// The sweep.
    pub sweep: Vec<SweepPoint>,
    /// The stencil.
    pub stencil: Vec<StencilPoint>,
    /// Facts and cautions, in sentences.
    pub notes: Vec<String>,
}

impl RecordKind for BenchRecord {
    const KIND: &'static str = "home.bench";
}

/// Bytes as lowercase hex, two characters per byte.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Hex back to bytes; `None` on an odd length or a character that is not hex.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_stable() {
        assert_eq!(HomeMapRecord::KIND, "home.map");
        assert_eq!(AccuracyRecord::KIND, "home.accuracy");
        assert_eq!(BenchRecord::KIND, "home.bench");
    }

    #[test]
    fn hex_round_trips_and_refuses_junk() {
        let b = vec![0u8, 1, 254, 255, 16];
        assert_eq!(to_hex(&b), "0001feff10");
        assert_eq!(from_hex(&to_hex(&b)), Some(b));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }

    #[test]
    fn a_hash_predicts_by_parity_of_masked_bits() {
        let h = HashFit {
            what: "home".into(),
            status: "recovered".into(),
            observed_bits: !0x3f,
            masks: vec![0b1100_0000, 0b1_0000_0000],
            table: vec![3, 1, 0, 2],
            linear: true,
            agreement: 1.0,
            notes: vec![],
        };
        assert_eq!(h.syndrome(0), 0);
        assert_eq!(h.syndrome(0b0100_0000), 1);
        assert_eq!(h.syndrome(0b1100_0000), 0);
        assert_eq!(h.syndrome(0b1_0100_0000), 3);
        assert_eq!(h.predict(0b1_0100_0000), Some(2));
        let short = HashFit {
            table: vec![3, 1],
            ..h.clone()
        };
        assert_eq!(
            short.predict(0),
            None,
            "a table that does not match the masks"
        );
        let huge = HashFit {
            masks: vec![1 << 6; 80],
            ..h.clone()
        };
        assert_eq!(huge.predict(1 << 6), None);
        assert!(huge.syndrome(1 << 6) < 1 << HashFit::MAX_BITS);
        let partial = HashFit {
            status: "page-offset".into(),
            ..h
        };
        assert_eq!(partial.predict(0), None);
    }
}
