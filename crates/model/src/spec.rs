//! Machine presets as data: the TOML files shipped in `presets/` (embedded in the binary),
//! a user's own file, variants and `--set key=value` overrides, each number carrying the
//! source it came from. This module turns text into a checked [`Spec`]; [`crate::model`]
//! turns a spec into positions, nodes and address maps.
//!
//! File format: every leaf is `key = { value = ..., source = "..." }`. Only `name`,
//! `description` and `base` are plain. `base = "preset"` inherits another preset (deep
//! merge). `[variants.NAME]` tables hold `description` and `set = { "dotted.key" = { value,
//! source } }`; a preset is named `NAME[:VARIANT,VARIANT...]`. In a user file plain values
//! are accepted and get the source "user file PATH".

use crate::error::ModelError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The presets shipped with numalab: (name, TOML text).
pub const PRESETS: &[(&str, &str)] = &[
    ("mesh", include_str!("../presets/mesh.toml")),
    (
        "neoverse-v1-64",
        include_str!("../presets/neoverse-v1-64.toml"),
    ),
    ("knl-7210", include_str!("../presets/knl-7210.toml")),
    ("altra-q80", include_str!("../presets/altra-q80.toml")),
    ("altra-q80-2s", include_str!("../presets/altra-q80-2s.toml")),
];

/// Dimension-order routing (`noc.routing`): the mesh geometry's, from
/// `numalab_records::mesh`.
pub use numalab_records::mesh::Routing;

/// How an address picks its home slice inside its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SliceHash {
    /// Line index modulo the number of slices.
    Modulo,
    /// The line index XOR-folded to the slice-index width, then modulo.
    XorFold,
}

/// Which slices an address may be homed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HomeGroup {
    /// Any slice of the socket.
    All,
    /// Only the slices of the address's NUMA node ("system cache groups").
    Node,
    /// Only the slices of the mesh region (`slc.region_split`) of the address's memory
    /// controller (Xeon Phi quadrant mode).
    McRegion,
}

/// What a memory pool is to the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PoolRole {
    /// The main memory of the NUMA nodes with CPUs.
    Main,
    /// Memory-only NUMA node(s) of its own (MCDRAM flat, HBM as a separate node).
    OwnNode,
    /// A memory-side cache in front of the main memory (MCDRAM cache mode).
    Cache,
}

/// Where devices sit: a named pattern or an explicit list of `[x, y]` stops.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stops {
    /// "all", "checker-even" ((x+y) even), "checker-odd", "corners".
    Pattern(String),
    /// Explicit stops; a stop listed twice holds two devices.
    List(Vec<[u32; 2]>),
}

/// Extra cost of links that cross region boundaries (quadrant edges).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boundary {
    /// A link between column c-1 and c costs `link_cycles` for every c listed.
    #[serde(default)]
    pub cols: Vec<u32>,
    /// A link between row r-1 and r costs `link_cycles` for every r listed.
    #[serde(default)]
    pub rows: Vec<u32>,
    /// Cycles of such a link.
    pub link_cycles: u32,
}

/// The network on chip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NocSpec {
    /// Columns of stops (x).
    pub cols: u32,
    /// Rows of stops (y).
    pub rows: u32,
    /// NoC clock (converts cycles to ns).
    pub clock_ghz: f64,
    /// XY or YX.
    pub routing: Routing,
    /// Cycles in a router before a packet takes an output link.
    pub router_cycles: u32,
    /// Cycles of a horizontal link.
    pub link_cycles_x: u32,
    /// Cycles of a vertical link.
    pub link_cycles_y: u32,
    /// Cycles from a device into its stop.
    pub inject_cycles: u32,
    /// Cycles from a stop into a device.
    pub eject_cycles: u32,
    /// Bytes per flit (link width); a data packet is `line_bytes / link_bytes` flits.
    pub link_bytes: u32,
    /// Parallel links per direction and virtual network.
    pub links_per_vn: u32,
    /// Number of virtual networks (the model has the four CHI channels: must be 4).
    pub virtual_networks: u32,
    /// Slower links across region boundaries.
    #[serde(default)]
    pub boundary: Option<Boundary>,
    /// Router microarchitecture: `input-queued` (virtual channels, credits, allocators as
    /// BookSim2's IQ router, the default; docs/model.md, "Router microarchitecture") or
    /// `output-queued` (ideal FCFS output queues with unbounded buffers: faster, and
    /// optimistic near saturation). A spec with two sockets that does not name its router
    /// gets `output-queued` (the input-queued router models one socket).
    #[serde(default)]
    pub router: RouterKind,
    /// Input-queued router: virtual channels per virtual network per input port.
    #[serde(default = "default_vcs")]
    pub vcs: u32,
    /// Input-queued router: buffer depth of one virtual channel, in flits.
    #[serde(default = "default_buffer_flits")]
    pub buffer_flits: u32,
    /// Input-queued router: cycles from a flit leaving a buffer until its credit can be
    /// used upstream, beyond the link's cycles.
    #[serde(default = "default_credit_delay")]
    pub credit_delay: u32,
    /// Input-queued router: cycles of route computation.
    #[serde(default)]
    pub routing_delay: u32,
    /// Input-queued router: cycles of virtual-channel allocation (at least 1).
    #[serde(default = "one")]
    pub vc_alloc_delay: u32,
    /// Input-queued router: cycles of switch allocation (at least 1).
    #[serde(default = "one")]
    pub sw_alloc_delay: u32,
    /// Input-queued router: cycles of switch traversal (crossbar).
    #[serde(default = "one")]
    pub st_final_delay: u32,
    /// Input-queued router: iterations of the iSLIP allocators.
    #[serde(default = "one")]
    pub alloc_iters: u32,
    /// Input-queued router: one physical link per direction shared by all virtual
    /// networks (their flits interleave) instead of one link per network.
    #[serde(default)]
    pub shared_links: bool,
}

/// Router microarchitecture of the discrete-event engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouterKind {
    /// Ideal output-queued routers: every output an FCFS server, unbounded buffers.
    OutputQueued,
    /// Input-queued virtual-channel routers with credit flow control and separable
    /// iSLIP allocators (BookSim2's IQ router): the default.
    #[default]
    InputQueued,
}

fn default_vcs() -> u32 {
    8
}
fn default_buffer_flits() -> u32 {
    8
}
fn default_credit_delay() -> u32 {
    2
}
fn one() -> u32 {
    1
}

/// The cores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreSpec {
    /// Expected number of cores (checked against the placement).
    #[serde(default)]
    pub count: Option<u32>,
    /// Cores per stop.
    pub per_stop: u32,
    /// Stops with cores.
    pub stops: Stops,
    /// Stops removed from `stops`.
    #[serde(default)]
    pub exclude: Vec<[u32; 2]>,
    /// Hardware threads per core.
    pub threads_per_core: u32,
    /// Core clock.
    pub clock_ghz: f64,
    /// Outstanding line requests a core may have (MSHRs).
    pub max_outstanding: u32,
    /// Cache line size.
    pub line_bytes: u32,
    /// Private (or per-core share of the tile's) L2.
    pub l2_bytes: u64,
}

/// The system-level cache slices (or directory slices).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlcSpec {
    /// Expected number of slices (checked against the placement).
    #[serde(default)]
    pub count: Option<u32>,
    /// Slices per stop.
    pub per_stop: u32,
    /// Stops with slices.
    pub stops: Stops,
    /// Stops removed from `stops`.
    #[serde(default)]
    pub exclude: Vec<[u32; 2]>,
    /// Total SLC capacity per socket (0: directory only, no data).
    pub bytes: u64,
    /// Home-slice hash.
    pub hash: SliceHash,
    /// Which slices an address may be homed at.
    pub home_group: HomeGroup,
    /// Mesh regions `[columns, rows]` for `home_group = "mc-region"`.
    #[serde(default)]
    pub region_split: Option<[u32; 2]>,
    /// Cycles of a lookup at the home slice.
    pub lookup_cycles: u32,
    /// Requests one slice tracks at once as their home (a CHI home node's point-of-
    /// coherency queue): an entry is taken when a request's first packet leaves the
    /// network at the home and freed when the request completes there (a read: when the
    /// requester's CompAck arrives; a write: when its data has). A request that finds the
    /// home's trackers full stays in the request network. Absent: unbounded. Needs the
    /// discrete-event engine with input-queued routers.
    #[serde(default)]
    pub tracker_entries: Option<u32>,
}

/// NUMA nodes of the stops.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumaSpec {
    /// Split the mesh into `[columns, rows]` equal regions, numbered row by row from
    /// (0, 0); `[1, 1]` is one node.
    #[serde(default)]
    pub split: Option<[u32; 2]>,
    /// Or give the node of every stop: `grid[y][x]` (takes precedence over `split`).
    #[serde(default)]
    pub grid: Option<Vec<Vec<u32>>>,
}

/// A memory pool (a kind of memory with its controllers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    /// Whether the machine has it in this configuration.
    pub enabled: bool,
    /// Technology ("DRAM", "HBM", "MCDRAM"): the NUMA node subtype.
    pub kind: String,
    /// Main memory, own node(s), or memory-side cache.
    pub role: PoolRole,
    /// Controller stops (a stop listed twice holds two controllers).
    pub controllers: Stops,
    /// Channels per controller.
    pub channels_per_controller: u32,
    /// Peak bandwidth of one channel.
    pub channel_gbps: f64,
    /// Controller plus DRAM access latency, beyond the NoC.
    pub latency_ns: f64,
    /// Capacity of the pool per socket.
    pub capacity_bytes: u64,
    /// For `role = "cache"`: a fixed hit ratio; absent = computed from the capacity and
    /// the experiment's working set.
    #[serde(default)]
    pub cache_hit_ratio: Option<f64>,
    /// Requests one controller holds, waiting or in service on its channels, from the
    /// moment it takes one off the network until the access is done; while it holds that
    /// many, requests for it stay in the network (back-pressure). Absent: unbounded.
    /// Needs the discrete-event engine with input-queued routers (the only engine whose
    /// network can hold a packet at its destination).
    #[serde(default)]
    pub queue_depth: Option<u32>,
}

/// Sockets joined by a link (CCIX, UPI...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SocketSpec {
    /// Number of sockets (1 or 2).
    pub count: u32,
    /// Stop of the inter-socket port, the same on every socket.
    pub gateway: [u32; 2],
    /// Bandwidth of the inter-socket link, per direction.
    pub link_gbps: f64,
    /// One-way latency through the link and its ports.
    pub link_latency_ns: f64,
}

/// A whole machine description, as written in a preset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Preset name.
    pub name: String,
    /// One line about the machine.
    pub description: String,
    /// The variants the `policy` experiment compares.
    #[serde(default)]
    pub policy_variants: Vec<String>,
    /// The network on chip.
    pub noc: NocSpec,
    /// Cores.
    pub cores: CoreSpec,
    /// SLC / directory slices.
    pub slc: SlcSpec,
    /// NUMA nodes.
    pub numa: NumaSpec,
    /// Memory pools by name.
    pub memory: BTreeMap<String, PoolSpec>,
    /// Second socket, if any.
    #[serde(default)]
    pub socket: Option<SocketSpec>,
}

/// A variant of a preset: named overrides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variant {
    /// Name.
    pub name: String,
    /// One line.
    pub description: String,
    /// The dotted keys it sets.
    pub keys: Vec<String>,
}

/// A loaded preset: the checked spec, the source of every value, the variants applied.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The checked spec.
    pub spec: Spec,
    /// The name as the user gave it (with variants), e.g. `knl-7210:snc4,cache`.
    pub label: String,
    /// Source of every leaf value, by dotted key.
    pub sources: BTreeMap<String, String>,
    /// Variants applied, in order.
    pub applied: Vec<String>,
    /// Variants the preset offers.
    pub variants: Vec<Variant>,
    /// The resolved values as TOML (without sources).
    pub values: toml::Table,
}

const PLAIN_KEYS: &[&str] = &["name", "description", "base"];

/// Loads a preset by name (`NAME[:VARIANT,...]`) or from a TOML file path, then applies
/// `--set` overrides (`key=value`, dotted key, TOML value; a bare word is a string).
pub fn load(what: &str, sets: &[String]) -> Result<Loaded, ModelError> {
    let (name, variants) = match what.split_once(':') {
        Some((n, v)) => (
            n,
            v.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        ),
        None => (what, Vec::new()),
    };
    let (table, mut sources, variant_tables) = if is_path(name) {
        let text = numalab_schema::input::read_to_string(
            std::path::Path::new(name),
            "a machine preset (TOML)",
            numalab_schema::input::TEXT,
        )
        .map_err(|e| ModelError::Input {
            what: name.to_string(),
            msg: format!("cannot read preset file: {}", e.reason),
        })?;
        parse_source(name, &text, false, 0)?
    } else {
        let text = builtin(name)?;
        parse_source(name, text, true, 0)?
    };
    let mut table = table;
    let mut applied = Vec::new();
    for v in &variants {
        let Some(sets) = variant_tables.get(v) else {
            let known: Vec<&String> = variant_tables.keys().collect();
            return Err(ModelError::Input {
                what: what.to_string(),
                msg: format!("preset has no variant '{v}' (variants: {})", join(&known)),
            });
        };
        for (key, (value, source)) in &sets.1 {
            set_path(&mut table, key, value.clone()).map_err(|msg| ModelError::Input {
                what: format!("{what}, variant {v}"),
                msg,
            })?;
            drop_sources_under(&mut sources, key);
            record_sources(&mut sources, key, value, source);
        }
        applied.push(v.clone());
    }
    for s in sets {
        let (key, text) = s.split_once('=').ok_or_else(|| ModelError::Usage {
            msg: format!("--set {s}: expected KEY=VALUE, e.g. --set noc.cols=12"),
        })?;
        let key = key.trim();
        let value = parse_value(text.trim());
        set_path(&mut table, key, value.clone()).map_err(|msg| ModelError::Usage {
            msg: format!("--set {s}: {msg}"),
        })?;
        drop_sources_under(&mut sources, key);
        record_sources(&mut sources, key, &value, "command line --set");
    }
    let spec: Spec = toml::Value::Table(table.clone())
        .try_into()
        .map_err(|e: toml::de::Error| refused(what, sets, one_line(&e.to_string())))?;
    let mut variants_list: Vec<Variant> = variant_tables
        .iter()
        .map(|(n, (d, s))| Variant {
            name: n.clone(),
            description: d.clone(),
            keys: s.keys().cloned().collect(),
        })
        .collect();
    variants_list.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Loaded {
        spec,
        label: what.to_string(),
        sources,
        applied,
        variants: variants_list,
        values: table,
    })
}

/// A preset the model's schema refuses: a usage error naming the `--set` when the key or
/// value it names came from the command line (a value of the wrong type, an unknown
/// key), else bad input in the preset.
fn refused(what: &str, sets: &[String], msg: String) -> ModelError {
    let from_set = sets
        .iter()
        .filter_map(|s| s.split_once('='))
        .find(|(k, _)| {
            let k = k.trim();
            let last = k.rsplit('.').next().unwrap_or(k);
            msg.contains(&format!("`{k}`")) || msg.contains(&format!("unknown field `{last}`"))
        });
    match from_set {
        Some((k, _)) => ModelError::Usage {
            msg: format!("--set {}: {msg}", k.trim()),
        },
        None => ModelError::Input {
            what: what.to_string(),
            msg,
        },
    }
}

/// The TOML text of a shipped preset.
pub fn builtin(name: &str) -> Result<&'static str, ModelError> {
    PRESETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| ModelError::Input {
            what: name.to_string(),
            msg: format!(
                "no such preset (presets: {}; or give a path to a TOML file)",
                PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
            ),
        })
}

fn is_path(name: &str) -> bool {
    name.contains('/') || name.ends_with(".toml") || Path::new(name).is_file()
}

fn join(v: &[&String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

type VariantTables = BTreeMap<String, (String, BTreeMap<String, (toml::Value, String)>)>;

/// Parses one preset text: strips `{value, source}` pairs, resolves `base`, collects
/// variants. Returns the plain table, sources by dotted key, and the variants.
fn parse_source(
    name: &str,
    text: &str,
    builtin_file: bool,
    depth: u32,
) -> Result<(toml::Table, BTreeMap<String, String>, VariantTables), ModelError> {
    if depth > 4 {
        return Err(ModelError::Input {
            what: name.to_string(),
            msg: "`base` chain deeper than 4 presets (a cycle?)".into(),
        });
    }
    let input_err = |msg: String| ModelError::Input {
        what: name.to_string(),
        msg,
    };
    let mut table: toml::Table =
        toml::from_str(text).map_err(|e: toml::de::Error| input_err(one_line(&e.to_string())))?;
    let default_source = format!("user file {name}");
    let mut variants = VariantTables::new();
    if let Some(v) = table.remove("variants") {
        let toml::Value::Table(vt) = v else {
            return Err(input_err("`variants` must be a table of tables".into()));
        };
        for (vname, body) in vt {
            let toml::Value::Table(mut body) = body else {
                return Err(input_err(format!("variants.{vname} must be a table")));
            };
            let description = match body.remove("description") {
                Some(toml::Value::String(s)) => s,
                _ => String::new(),
            };
            let mut sets = BTreeMap::new();
            if let Some(s) = body.remove("set") {
                let toml::Value::Table(st) = s else {
                    return Err(input_err(format!("variants.{vname}.set must be a table")));
                };
                for (k, v) in st {
                    let (value, source) = match split_sourced(&v) {
                        Some((val, src)) => (val, src),
                        None if !builtin_file => (v, default_source.clone()),
                        None => {
                            return Err(input_err(format!(
                                "variants.{vname}.set.\"{k}\" has no source: write {{ value = ..., source = \"...\" }}"
                            )))
                        }
                    };
                    sets.insert(k, (value, source));
                }
            }
            if let Some(k) = body.keys().next() {
                return Err(input_err(format!(
                    "variants.{vname}: unknown key '{k}' (expected description, set)"
                )));
            }
            variants.insert(vname, (description, sets));
        }
    }
    let mut sources = BTreeMap::new();
    let mut plain = toml::Table::new();
    for (k, v) in table {
        if PLAIN_KEYS.contains(&k.as_str()) {
            plain.insert(k, v);
            continue;
        }
        let v = strip(&k, v, &mut sources, builtin_file, &default_source).map_err(&input_err)?;
        plain.insert(k, v);
    }
    if let Some(base) = plain.remove("base") {
        let toml::Value::String(base) = base else {
            return Err(input_err("`base` must be a preset name".into()));
        };
        let base_text = builtin(&base)?;
        let (mut merged, mut base_sources, base_variants) =
            parse_source(&base, base_text, true, depth + 1)?;
        for (k, v) in plain {
            merge(&mut merged, k, v);
        }
        for (k, s) in sources {
            base_sources.insert(k, s);
        }
        let mut all_variants = base_variants;
        all_variants.extend(variants);
        return Ok((merged, base_sources, all_variants));
    }
    Ok((plain, sources, variants))
}

fn merge(into: &mut toml::Table, key: String, value: toml::Value) {
    match (into.get_mut(&key), value) {
        (Some(toml::Value::Table(a)), toml::Value::Table(b)) => {
            for (k, v) in b {
                merge(a, k, v);
            }
        }
        (_, v) => {
            into.insert(key, v);
        }
    }
}

/// `{ value = X, source = "..." }` -> (X, source).
fn split_sourced(v: &toml::Value) -> Option<(toml::Value, String)> {
    let t = v.as_table()?;
    if t.len() != 2 {
        return None;
    }
    let source = t.get("source")?.as_str()?;
    let value = t.get("value")?;
    Some((value.clone(), source.to_string()))
}

fn strip(
    path: &str,
    v: toml::Value,
    sources: &mut BTreeMap<String, String>,
    require: bool,
    default_source: &str,
) -> Result<toml::Value, String> {
    if let Some((value, source)) = split_sourced(&v) {
        if source.trim().is_empty() {
            return Err(format!("{path}: empty source"));
        }
        record_sources(sources, path, &value, &source);
        return Ok(value);
    }
    match v {
        toml::Value::Table(t) => {
            let mut out = toml::Table::new();
            for (k, v) in t {
                let p = format!("{path}.{k}");
                out.insert(k, strip(&p, v, sources, require, default_source)?);
            }
            Ok(toml::Value::Table(out))
        }
        other if require => Err(format!(
            "{path} has no source: write `{} = {{ value = {other}, source = \"...\" }}`",
            path.rsplit('.').next().unwrap_or(path)
        )),
        other => {
            sources.insert(path.to_string(), default_source.to_string());
            Ok(other)
        }
    }
}

/// Records `source` for `path` (a table value gives every leaf below it that source).
fn record_sources(
    sources: &mut BTreeMap<String, String>,
    path: &str,
    value: &toml::Value,
    source: &str,
) {
    match value {
        toml::Value::Table(t) => {
            for (k, v) in t {
                record_sources(sources, &format!("{path}.{k}"), v, source);
            }
        }
        _ => {
            sources.insert(path.to_string(), source.to_string());
        }
    }
}

fn drop_sources_under(sources: &mut BTreeMap<String, String>, key: &str) {
    let prefix = format!("{key}.");
    sources.retain(|k, _| k != key && !k.starts_with(&prefix));
}

/// Parses a `--set` value as a TOML value; a bare word is a string.
fn parse_value(text: &str) -> toml::Value {
    match toml::from_str::<toml::Table>(&format!("v = {text}")) {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(text.into())),
        Err(_) => toml::Value::String(text.to_string()),
    }
}

/// Sets a dotted key; intermediate tables must exist (a typo is named, not created).
fn set_path(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("'{key}' is not a dotted key like noc.cols"));
    }
    let mut cur = table;
    for (i, p) in parts[..parts.len() - 1].iter().enumerate() {
        let here = parts[..=i].join(".");
        let known: Vec<String> = cur.keys().cloned().collect();
        if !cur.contains_key(*p) && (*p == "boundary" || *p == "socket") {
            cur.insert(p.to_string(), toml::Value::Table(toml::Table::new()));
        }
        let next = match cur.get_mut(*p) {
            Some(toml::Value::Table(t)) => t,
            Some(_) => return Err(format!("'{here}' is a value, not a table")),
            None => {
                return Err(format!(
                    "unknown key '{here}' (known here: {})",
                    known.join(", ")
                ))
            }
        };
        cur = next;
    }
    cur.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

impl Loaded {
    /// Every resolved leaf as (dotted key, value as TOML text, source).
    pub fn entries(&self) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        flatten("", &self.values, &mut out);
        out.into_iter()
            .filter(|(k, _)| !PLAIN_KEYS.contains(&k.as_str()))
            .map(|(k, v)| {
                let s = self
                    .sources
                    .get(&k)
                    .cloned()
                    .unwrap_or_else(|| "(no source)".into());
                (k, v, s)
            })
            .collect()
    }
}

fn flatten(prefix: &str, t: &toml::Table, out: &mut Vec<(String, String)>) {
    for (k, v) in t {
        let p = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(inner) => flatten(&p, inner, out),
            other => out.push((p, other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_preset_loads_with_a_source_for_every_value() {
        for (name, _) in PRESETS {
            let l = load(name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            for (k, _, s) in l.entries() {
                assert_ne!(s, "(no source)", "{name}: {k}");
                assert!(!s.trim().is_empty(), "{name}: {k}");
            }
            for v in &l.variants {
                let label = format!("{name}:{}", v.name);
                load(&label, &[]).unwrap_or_else(|e| panic!("{label}: {e}"));
            }
        }
    }

    #[test]
    fn set_overrides_and_records_its_source() {
        let l = load("mesh", &["noc.cols=12".into(), "noc.routing=yx".into()]).unwrap();
        assert_eq!(l.spec.noc.cols, 12);
        assert_eq!(l.spec.noc.routing, Routing::Yx);
        assert_eq!(l.sources["noc.cols"], "command line --set");
        assert!(l.sources["noc.rows"].contains("machines.md"));
    }

    #[test]
    fn variants_apply_in_order_with_their_sources() {
        let l = load("knl-7210:snc4,cache", &[]).unwrap();
        assert_eq!(l.spec.numa.split, Some([2, 2]));
        assert_eq!(l.spec.slc.home_group, HomeGroup::Node);
        assert_eq!(l.spec.memory["mcdram"].role, PoolRole::Cache);
        assert!(l.sources["memory.mcdram.role"].contains("cache mode"));
        assert_eq!(l.applied, vec!["snc4", "cache"]);
    }

    #[test]
    fn base_inherits_and_extends() {
        let l = load("altra-q80-2s", &[]).unwrap();
        assert_eq!(l.spec.cores.count, Some(80));
        assert_eq!(l.spec.socket.as_ref().unwrap().count, 2);
        assert!(l.sources["socket.link_gbps"].starts_with("assumption"));
        // Variants of the base are available.
        load("altra-q80-2s:quadrant", &[]).unwrap();
    }

    #[test]
    fn bad_inputs_are_named() {
        let cases: Vec<(&str, Vec<String>, &str)> = vec![
            ("nosuch", vec![], "no such preset"),
            ("mesh:nosuch", vec![], "no variant 'nosuch'"),
            ("mesh", vec!["noc.colz=3".into()], "unknown field `colz`"),
            ("mesh", vec!["nocc.cols=3".into()], "unknown key 'nocc'"),
            ("mesh", vec!["noc.cols=x".into()], "noc.cols"),
            ("mesh", vec!["noc.cols".into()], "expected KEY=VALUE"),
            (
                "mesh",
                vec!["noc.routing=zz".into()],
                "unknown variant `zz`",
            ),
        ];
        for (what, sets, text) in cases {
            let e = load(what, &sets).expect_err(what).to_string();
            assert!(e.contains(text), "{what} {sets:?}: {e}");
        }
    }

    #[test]
    fn a_set_the_schema_refuses_is_a_usage_error_naming_it() {
        use numalab_schema::{Classify, ErrorClass};
        for set in ["noc.colz=3", "noc.cols=x", "memory.ddr.latency_ns=NaN"] {
            let e = load("mesh", &[set.to_string()]).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Usage, "{set}: {e}");
            let key = set.split('=').next().unwrap();
            assert!(e.to_string().starts_with(&format!("--set {key}")), "{e}");
        }
    }

    #[test]
    fn builtin_values_without_source_are_refused() {
        let e = parse_source("x", "name = \"x\"\n[noc]\ncols = 3\n", true, 0)
            .expect_err("no source")
            .to_string();
        assert!(e.contains("noc.cols has no source"), "{e}");
        // A user file may omit them.
        let (t, s, _) = parse_source("u.toml", "[noc]\ncols = 3\n", false, 0).unwrap();
        assert_eq!(t["noc"]["cols"].as_integer(), Some(3));
        assert_eq!(s["noc.cols"], "user file u.toml");
    }

    #[test]
    fn user_file_with_base() {
        let dir = std::env::temp_dir().join(format!("numalab-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("my.toml");
        std::fs::write(
            &p,
            "name = \"mine\"\nbase = \"mesh\"\ndescription = \"12x12\"\n[noc]\ncols = 12\nrows = 12\n",
        )
        .unwrap();
        let l = load(p.to_str().unwrap(), &[]).unwrap();
        assert_eq!(l.spec.name, "mine");
        assert_eq!(l.spec.noc.cols, 12);
        assert!(l.sources["noc.cols"].starts_with("user file"));
        assert!(l.sources["noc.clock_ghz"].contains("assumption"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
