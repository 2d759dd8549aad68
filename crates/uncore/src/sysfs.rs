//! The PMUs the kernel exposes under `<root>/sys/bus/event_source/devices/*`, read as
//! the kernel's ABI documents them (Documentation/ABI/testing/
//! sysfs-bus-event_source-devices-format and -events):
//!
//! - `type`: the perf_event_attr.type to open the PMU with;
//! - `cpumask` (uncore PMUs; core PMUs have `cpus`): the CPUs to open it on, one per
//!   socket or die for most uncore PMUs;
//! - `format/<field>`: where a field's bits go, `config:0-7`, `config:8-15,32-55`,
//!   `config1:0-9`, `config:18` (one bit);
//! - `events/<name>`: comma-separated terms `field=value` (value `0x..` hex or decimal,
//!   `?` for a parameter the user must give) or a bare `field` (a one-bit flag, value
//!   1); `events/<name>.scale` and `.unit` say what one count is worth.
//!
//! Every malformed file gives one [`SysfsError`] naming the file. Encoding follows
//! perf's rule for fields spread over several ranges: the value's bits fill the
//! field's bits from the lowest up (tools/perf/util/pmu.c, `pmu_format_value`).

use crate::table::Class;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A malformed or unreadable sysfs file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct SysfsError {
    /// The file (or folder).
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
}

impl SysfsError {
    fn new(path: &Path, problem: impl Into<String>) -> Self {
        SysfsError {
            path: path.to_path_buf(),
            problem: problem.into(),
        }
    }
}

/// The perf_event_attr word a format field lands in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigWord {
    /// `config`.
    Config,
    /// `config1`.
    Config1,
    /// `config2`.
    Config2,
    /// `config3` (Linux 6.3+).
    Config3,
}

impl ConfigWord {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "config" => Some(ConfigWord::Config),
            "config1" => Some(ConfigWord::Config1),
            "config2" => Some(ConfigWord::Config2),
            "config3" => Some(ConfigWord::Config3),
            _ => None,
        }
    }

    fn index(self) -> usize {
        match self {
            ConfigWord::Config => 0,
            ConfigWord::Config1 => 1,
            ConfigWord::Config2 => 2,
            ConfigWord::Config3 => 3,
        }
    }
}

/// One `format/<field>` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatField {
    /// Field name.
    pub name: String,
    /// The word it lands in.
    pub word: ConfigWord,
    /// Its bits in that word.
    pub mask: u64,
    /// The file's text, trimmed (`config:8-15,32-55`).
    pub spec: String,
}

impl FormatField {
    /// Parses a format file's text.
    pub fn parse(name: &str, text: &str, path: &Path) -> Result<Self, SysfsError> {
        let spec = text.trim();
        let (word, ranges) = spec.split_once(':').ok_or_else(|| {
            SysfsError::new(
                path,
                format!("format {spec:?} has no ':' (expected e.g. config:0-7)"),
            )
        })?;
        let word = ConfigWord::parse(word.trim()).ok_or_else(|| {
            SysfsError::new(
                path,
                format!("unknown perf_event_attr word {word:?} (expected config, config1, config2 or config3)"),
            )
        })?;
        let mut mask = 0u64;
        for part in ranges.split(',') {
            let part = part.trim();
            let bit = |s: &str| -> Result<u32, SysfsError> {
                let b: u32 = s.trim().parse().map_err(|_| {
                    SysfsError::new(path, format!("bit {s:?} in {spec:?} is not a number"))
                })?;
                if b > 63 {
                    return Err(SysfsError::new(
                        path,
                        format!("bit {b} in {spec:?} is beyond 63"),
                    ));
                }
                Ok(b)
            };
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (bit(a)?, bit(b)?),
                None => {
                    let b = bit(part)?;
                    (b, b)
                }
            };
            if hi < lo {
                return Err(SysfsError::new(
                    path,
                    format!("range {part:?} in {spec:?} runs backwards"),
                ));
            }
            for b in lo..=hi {
                mask |= 1u64 << b;
            }
        }
        Ok(FormatField {
            name: name.to_string(),
            word,
            mask,
            spec: spec.to_string(),
        })
    }

    /// Bits available.
    pub fn width(&self) -> u32 {
        self.mask.count_ones()
    }

    /// `value` spread into the field's bits, lowest first.
    pub fn place(&self, value: u64) -> Result<u64, String> {
        let width = self.width();
        if width < 64 && value >> width != 0 {
            return Err(format!(
                "value {value:#x} does not fit field {} ({} bit(s): {})",
                self.name, width, self.spec
            ));
        }
        let mut out = 0u64;
        let mut v = value;
        for bit in 0..64 {
            if self.mask >> bit & 1 == 1 {
                out |= (v & 1) << bit;
                v >>= 1;
            }
        }
        Ok(out)
    }
}

/// One term of an event string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// Format field (or `config`..`config3` for raw words).
    pub field: String,
    /// The value; None for `field=?` (a parameter to give).
    pub value: Option<u64>,
}

/// One named event (`events/<name>`).
#[derive(Debug, Clone, PartialEq)]
pub struct NamedEvent {
    /// Its name.
    pub name: String,
    /// Its terms.
    pub terms: Vec<Term>,
    /// `.scale`: what one count is worth in `unit`.
    pub scale: Option<f64>,
    /// `.unit`.
    pub unit: Option<String>,
}

impl NamedEvent {
    /// Parameters the user must give (`field=?`).
    pub fn params(&self) -> Vec<&str> {
        self.terms
            .iter()
            .filter(|t| t.value.is_none())
            .map(|t| t.field.as_str())
            .collect()
    }
}

/// An event ready for perf_event_open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Encoding {
    /// perf_event_attr.type.
    pub pmu_type: u32,
    /// config, config1, config2, config3.
    pub config: [u64; 4],
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "type={},config={:#x}", self.pmu_type, self.config[0])?;
        for (i, c) in self.config.iter().enumerate().skip(1) {
            if *c != 0 {
                write!(f, ",config{i}={c:#x}")?;
            }
        }
        Ok(())
    }
}

/// Parses a number the way perf does for event terms: `0x..` hex, otherwise decimal.
fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// Parses an event string against a PMU's format fields.
pub fn parse_terms(
    text: &str,
    formats: &BTreeMap<String, FormatField>,
    path: &Path,
) -> Result<Vec<Term>, SysfsError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(SysfsError::new(path, "empty event string"));
    }
    let known = |f: &str| formats.contains_key(f) || ConfigWord::parse(f).is_some();
    let fields = || formats.keys().cloned().collect::<Vec<_>>().join(", ");
    let mut terms = Vec::new();
    for raw in text.split(',') {
        let raw = raw.trim();
        match raw.split_once('=') {
            Some((field, value)) => {
                let field = field.trim();
                if !known(field) {
                    return Err(SysfsError::new(
                        path,
                        format!(
                            "term {raw:?} names unknown format field {field:?} (this PMU's format/ has: {})",
                            fields()
                        ),
                    ));
                }
                let value = if value.trim() == "?" {
                    None
                } else {
                    Some(parse_number(value).ok_or_else(|| {
                        SysfsError::new(
                            path,
                            format!("term {raw:?}: {value:?} is not a number"),
                        )
                    })?)
                };
                terms.push(Term {
                    field: field.to_string(),
                    value,
                });
            }
            None => match formats.get(raw) {
                Some(f) if f.width() == 1 => terms.push(Term {
                    field: raw.to_string(),
                    value: Some(1),
                }),
                Some(f) => {
                    return Err(SysfsError::new(
                        path,
                        format!(
                            "term {raw:?} has no '=value' and is not a one-bit flag ({} is {} bits wide)",
                            raw,
                            f.width()
                        ),
                    ))
                }
                None => {
                    return Err(SysfsError::new(
                        path,
                        format!(
                            "term {raw:?} has no '=value' and names no format field (this PMU's format/ has: {})",
                            fields()
                        ),
                    ))
                }
            },
        }
    }
    Ok(terms)
}

/// One PMU.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    /// Its folder name.
    pub name: String,
    /// Its folder.
    pub path: PathBuf,
    /// perf_event_attr.type.
    pub pmu_type: u32,
    /// CPUs to open it on (`cpumask`, else `cpus`; empty when it has neither).
    pub cpus: Vec<u32>,
    /// `format/`.
    pub formats: BTreeMap<String, FormatField>,
    /// `events/`.
    pub events: BTreeMap<String, NamedEvent>,
    /// What it is.
    pub class: Class,
}

fn read_text(path: &Path) -> Result<String, SysfsError> {
    std::fs::read_to_string(path).map_err(|e| SysfsError::new(path, format!("cannot read: {e}")))
}

fn read_dir_sorted(path: &Path) -> Result<Vec<(String, PathBuf)>, SysfsError> {
    let mut out = Vec::new();
    let rd =
        std::fs::read_dir(path).map_err(|e| SysfsError::new(path, format!("cannot list: {e}")))?;
    for e in rd {
        let e = e.map_err(|e| SysfsError::new(path, format!("cannot list: {e}")))?;
        let name = e.file_name().to_string_lossy().into_owned();
        out.push((name, e.path()));
    }
    out.sort();
    Ok(out)
}

impl Device {
    /// Reads one PMU folder; the first malformed file is the error.
    pub fn read(dir: &Path) -> Result<Device, SysfsError> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let type_path = dir.join("type");
        let type_text = read_text(&type_path)?;
        let pmu_type: u32 = type_text.trim().parse().map_err(|_| {
            SysfsError::new(
                &type_path,
                format!("type {:?} is not a non-negative integer", type_text.trim()),
            )
        })?;
        let mut cpus = Vec::new();
        for f in ["cpumask", "cpus"] {
            let p = dir.join(f);
            if p.exists() {
                let t = read_text(&p)?;
                if !t.trim().is_empty() {
                    cpus = numalab_schema::cpulist::parse(t.trim()).map_err(|e| {
                        SysfsError::new(&p, format!("not a CPU list ({e}): {:?}", t.trim()))
                    })?;
                }
                break;
            }
        }
        let mut formats = BTreeMap::new();
        let fdir = dir.join("format");
        if fdir.is_dir() {
            for (fname, fpath) in read_dir_sorted(&fdir)? {
                let text = read_text(&fpath)?;
                formats.insert(fname.clone(), FormatField::parse(&fname, &text, &fpath)?);
            }
        }
        let mut events = BTreeMap::new();
        let edir = dir.join("events");
        if edir.is_dir() {
            let entries = read_dir_sorted(&edir)?;
            for (ename, epath) in &entries {
                if ename.contains('.') {
                    // .scale, .unit, .per-pkg, .snapshot: read with their event.
                    continue;
                }
                let text = read_text(epath)?;
                let terms = parse_terms(&text, &formats, epath)?;
                let scale_path = edir.join(format!("{ename}.scale"));
                let scale = if scale_path.exists() {
                    let t = read_text(&scale_path)?;
                    Some(t.trim().parse::<f64>().map_err(|_| {
                        SysfsError::new(
                            &scale_path,
                            format!("scale {:?} is not a number", t.trim()),
                        )
                    })?)
                } else {
                    None
                };
                let unit_path = edir.join(format!("{ename}.unit"));
                let unit = if unit_path.exists() {
                    Some(read_text(&unit_path)?.trim().to_string())
                } else {
                    None
                };
                events.insert(
                    ename.clone(),
                    NamedEvent {
                        name: ename.clone(),
                        terms,
                        scale,
                        unit,
                    },
                );
            }
        }
        let class = Class::of(&name);
        Ok(Device {
            name,
            path: dir.to_path_buf(),
            pmu_type,
            cpus,
            formats,
            events,
            class,
        })
    }

    /// Encodes terms through this PMU's format fields. Fields the terms do not name
    /// are 0; a `?` parameter must be given in `params`.
    pub fn encode(&self, terms: &[Term], params: &[(&str, u64)]) -> Result<Encoding, String> {
        let mut config = [0u64; 4];
        for t in terms {
            let value = match t.value {
                Some(v) => v,
                None => params
                    .iter()
                    .find(|(n, _)| *n == t.field)
                    .map(|(_, v)| *v)
                    .ok_or_else(|| format!("parameter {} must be given (it is '?')", t.field))?,
            };
            match self.formats.get(&t.field) {
                Some(f) => {
                    let bits = f.place(value)?;
                    config[f.word.index()] = config[f.word.index()] & !f.mask | bits;
                }
                None => match ConfigWord::parse(&t.field) {
                    Some(w) => config[w.index()] = value,
                    None => return Err(format!("{} has no format field {:?}", self.name, t.field)),
                },
            }
        }
        Ok(Encoding {
            pmu_type: self.pmu_type,
            config,
        })
    }

    /// Encodes an event string (`event=0x35,umask=0xc001fe01`) through the format.
    pub fn encode_str(&self, text: &str) -> Result<Encoding, String> {
        let terms =
            parse_terms(text, &self.formats, Path::new("(event string)")).map_err(|e| e.problem)?;
        self.encode(&terms, &[])
    }

    /// Encodes a named event.
    pub fn encode_event(&self, name: &str) -> Result<Encoding, String> {
        let ev = self
            .events
            .get(name)
            .ok_or_else(|| format!("{} lists no event {name}", self.name))?;
        self.encode(&ev.terms, &[])
    }
}

/// CPU number to socket (package) number.
pub type CpuPackages = BTreeMap<u32, u32>;

/// Reads `<root>/sys/devices/system/cpu/cpu*/topology/physical_package_id` (a
/// convenience: numalab's topology normally comes from hwloc).
pub fn packages_from_sysfs(root: &Path) -> CpuPackages {
    let mut out = CpuPackages::new();
    let dir = root.join("sys/devices/system/cpu");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(n) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(t) = std::fs::read_to_string(e.path().join("topology/physical_package_id")) {
            if let Ok(p) = t.trim().parse::<i64>() {
                out.insert(n, p.max(0) as u32);
            }
        }
    }
    out
}

/// What the kernel exposes.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovery {
    /// The root read (`/` live).
    pub root: PathBuf,
    /// Every PMU that could be read, uncore or not, sorted by name.
    pub devices: Vec<Device>,
    /// PMUs with a malformed file (not in `devices`).
    pub problems: Vec<SysfsError>,
    /// CPU to socket.
    pub packages: CpuPackages,
}

impl Discovery {
    /// The uncore devices.
    pub fn uncore(&self) -> impl Iterator<Item = &Device> {
        self.devices.iter().filter(|d| d.class.is_uncore())
    }

    /// A device by name.
    pub fn device(&self, name: &str) -> Option<&Device> {
        self.devices.iter().find(|d| d.name == name)
    }

    /// The socket of a CPU.
    pub fn socket_of(&self, cpu: u32) -> Option<u32> {
        self.packages.get(&cpu).copied()
    }

    /// Names of the PMUs that are not uncore devices.
    pub fn other_names(&self) -> Vec<String> {
        self.devices
            .iter()
            .filter(|d| !d.class.is_uncore())
            .map(|d| d.name.clone())
            .collect()
    }
}

/// Reads every PMU under `<root>/sys/bus/event_source/devices`. A PMU with a
/// malformed file is left out and its error kept in [`Discovery::problems`]; the
/// listing itself failing is the error.
pub fn discover(root: &Path, packages: &CpuPackages) -> Result<Discovery, SysfsError> {
    let dir = root.join("sys/bus/event_source/devices");
    let mut devices = Vec::new();
    let mut problems = Vec::new();
    for (_, path) in read_dir_sorted(&dir)? {
        match Device::read(&path) {
            Ok(d) => devices.push(d),
            Err(e) => problems.push(e),
        }
    }
    Ok(Discovery {
        root: root.to_path_buf(),
        devices,
        problems,
        packages: packages.clone(),
    })
}
