//! Which mapping, data symbol or user-named region each sampled address is in.
//!
//! Mappings are replayed in arrival order per process, a new one replacing whatever
//! part of older ones it overlaps (as the kernel replaces VMAs), so a sample is
//! attributed to the mapping that held its address when it was taken. A process with
//! no mapping of its own (a forked child: it inherits its parent's without new
//! records) is looked up in the others'.
//!
//! ELF data symbols (`.data`, `.bss`, `.rodata`...: symbols of kind data with a size)
//! are read from a mapped file when it is readable here and is the file that was
//! mapped: same inode as the MMAP2 record says, or same build id. The load bias comes
//! from a file mapping of a loadable segment, and applies to the anonymous mapping
//! that holds the tail of `.bss` too.

use crate::sample::{Mapping, MappingKind, MemSample, Samples};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A user-named address range (`name start len`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedRegion {
    /// Its name.
    pub name: String,
    /// First address.
    pub start: u64,
    /// Length, bytes.
    pub len: u64,
    /// Only in this process (None: every process).
    pub pid: Option<u32>,
}

/// Parses regions, one per line: `name start len [pid]`; numbers decimal or `0x` hex,
/// lengths may end in K, M or G (binary). `#` starts a comment.
pub fn parse_regions(text: &str) -> Result<Vec<NamedRegion>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 || f.len() > 4 {
            return Err(format!(
                "line {}: expected `name start len [pid]`, found {:?}",
                i + 1,
                line
            ));
        }
        let num = |t: &str, what: &str| -> Result<u64, String> {
            let (t, mult) = match t.chars().last() {
                Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
                Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
                Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
                _ => (t, 1),
            };
            let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16),
                None => t.parse::<u64>(),
            };
            v.ok()
                .and_then(|v| v.checked_mul(mult))
                .ok_or_else(|| format!("line {}: {what} {t:?} is not a number", i + 1))
        };
        let start = num(f[1], "start")?;
        let len = num(f[2], "length")?;
        if len == 0 {
            return Err(format!("line {}: region {} has length 0", i + 1, f[0]));
        }
        let pid = match f.get(3) {
            Some(p) => Some(
                p.parse::<u32>()
                    .map_err(|_| format!("line {}: pid {p:?} is not a number", i + 1))?,
            ),
            None => None,
        };
        out.push(NamedRegion {
            name: f[0].to_string(),
            start,
            len,
            pid,
        });
    }
    Ok(out)
}

/// An ELF symbol.
#[derive(Debug, Clone, PartialEq)]
pub struct ElfSymbol {
    /// Demangled name.
    pub name: String,
    /// Address in the file (svma).
    pub address: u64,
    /// Size, bytes.
    pub size: u64,
    /// Section.
    pub section: String,
}

/// The symbols of one file.
#[derive(Debug, Clone, Default)]
pub struct ObjectSymbols {
    /// Data symbols, sorted by address.
    pub data: Vec<ElfSymbol>,
    /// Function symbols, sorted by address.
    pub text: Vec<ElfSymbol>,
    /// (file offset, file size, vaddr, memory size) of each loadable segment.
    pub segments: Vec<(u64, u64, u64, u64)>,
}

fn find(syms: &[ElfSymbol], svma: u64) -> Option<&ElfSymbol> {
    let i = syms.partition_point(|s| s.address <= svma);
    let s = syms.get(i.checked_sub(1)?)?;
    (svma < s.address + s.size.max(1)).then_some(s)
}

impl ObjectSymbols {
    /// Reads a file's symbols; None when it is not an object file.
    pub fn read(path: &Path) -> Option<ObjectSymbols> {
        use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let mut out = ObjectSymbols::default();
        for s in file.segments() {
            let (off, size) = s.file_range();
            out.segments.push((off, size, s.address(), s.size()));
        }
        let mut seen = std::collections::HashSet::new();
        for sym in file.symbols().chain(file.dynamic_symbols()) {
            if sym.size() == 0 || sym.address() == 0 {
                continue;
            }
            let kind = sym.kind();
            if kind != SymbolKind::Data && kind != SymbolKind::Text {
                continue;
            }
            let Ok(raw) = sym.name() else { continue };
            if !seen.insert((sym.address(), raw.to_string())) {
                continue;
            }
            let section = sym
                .section_index()
                .and_then(|i| file.section_by_index(i).ok())
                .and_then(|s| s.name().ok().map(str::to_string))
                .unwrap_or_default();
            let e = ElfSymbol {
                name: demangle(raw),
                address: sym.address(),
                size: sym.size(),
                section,
            };
            if kind == SymbolKind::Data {
                out.data.push(e);
            } else {
                out.text.push(e);
            }
        }
        out.data.sort_by_key(|s| s.address);
        out.text.sort_by_key(|s| s.address);
        Some(out)
    }

    /// The load bias of a mapping of this file, when it maps a loadable segment.
    pub fn bias(&self, m: &Mapping) -> Option<u64> {
        self.segments.iter().find_map(|&(off, size, vaddr, _)| {
            let seg_end = off + size;
            let map_end = m.pgoff + m.len;
            (m.pgoff < seg_end.max(off + 1) && off < map_end).then(|| {
                m.start
                    .wrapping_sub(m.pgoff)
                    .wrapping_add(off)
                    .wrapping_sub(vaddr)
            })
        })
    }

    /// Lowest and highest svma of the loadable segments.
    pub fn extent(&self) -> Option<(u64, u64)> {
        let lo = self.segments.iter().map(|s| s.2).min()?;
        let hi = self.segments.iter().map(|s| s.2 + s.3).max()?;
        Some((lo, hi))
    }
}

fn demangle(raw: &str) -> String {
    let d = rustc_demangle::try_demangle(raw);
    match d {
        Ok(d) => format!("{d:#}"),
        Err(_) => raw.to_string(),
    }
}

/// What an address is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Place {
    /// Index into [`Attribution::mappings`] (None: unmapped).
    pub mapping: Option<usize>,
    /// Index into [`Attribution::symbols`] (a data symbol or named region).
    pub symbol: Option<usize>,
}

/// A symbol or region as attributed.
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolInfo {
    /// Name.
    pub name: String,
    /// "symbol" or "user".
    pub kind: &'static str,
    /// The file, for ELF symbols.
    pub object: Option<String>,
    /// ELF section.
    pub section: Option<String>,
    /// Start address (runtime) and size.
    pub start: Option<u64>,
    /// Size.
    pub size: Option<u64>,
}

/// A mapping as attributed (several records of one mapping are one).
#[derive(Debug, Clone, PartialEq)]
pub struct MappingInfo {
    /// Name for tables.
    pub name: String,
    /// Kind.
    pub kind: MappingKind,
    /// The process, for non-file mappings.
    pub pid: Option<u32>,
    /// Start and length, for non-file mappings.
    pub range: Option<(u64, u64)>,
}

#[derive(Debug, Clone, Copy)]
struct Live {
    end: u64,
    mapping: usize,
}

#[derive(Debug, Clone)]
struct Loaded {
    lo: u64,
    hi: u64,
    bias: u64,
    object: usize,
}

/// Attribution of every sample, and what it found.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    /// Per sample.
    pub places: Vec<Place>,
    /// Mapping rows.
    pub mappings: Vec<MappingInfo>,
    /// Symbol rows.
    pub symbols: Vec<SymbolInfo>,
    /// Code symbol per sample from the files' function symbols (when perf gave none).
    pub code: Vec<Option<String>>,
    /// Caveats (files not read, ...).
    pub notes: Vec<String>,
}

/// How to attribute.
#[derive(Debug, Clone, Default)]
pub struct AttributeOptions {
    /// Read the mapped files' ELF symbols when readable and the same file.
    pub read_symbols: bool,
    /// User-named regions (take precedence over symbols).
    pub regions: Vec<NamedRegion>,
}

fn same_file(m: &Mapping, path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    if let Some((_, _, ino)) = m.dev_ino {
        let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
        if ino != 0 && meta.ino() != ino {
            return Err(format!(
                "inode {} here, {} when sampled: a different file",
                meta.ino(),
                ino
            ));
        }
    }
    if let Some(want) = &m.build_id {
        use object::Object;
        let data = std::fs::read(path).map_err(|e| e.to_string())?;
        let file = object::File::parse(&*data).map_err(|e| e.to_string())?;
        let have: Option<String> = file
            .build_id()
            .ok()
            .flatten()
            .map(|b| b.iter().map(|x| format!("{x:02x}")).collect());
        match have {
            Some(h) if want.starts_with(&h) || h.starts_with(want.as_str()) => {}
            Some(h) => return Err(format!("build id {h} here, {want} when sampled")),
            None => return Err("no build id here to compare".into()),
        }
    }
    Ok(())
}

/// Mappings and samples by arrival order: (seq, is a mapping, index); a mapping
/// before a sample of the same seq.
fn arrival_order(data: &Samples) -> Vec<(u64, bool, usize)> {
    let mut order: Vec<(u64, bool, usize)> = data
        .mappings
        .iter()
        .enumerate()
        .map(|(i, m)| (m.seq, true, i))
        .chain(
            data.samples
                .iter()
                .enumerate()
                .map(|(i, s)| (s.seq, false, i)),
        )
        .collect();
    order.sort_by_key(|&(seq, is_map, _)| (seq, !is_map));
    order
}

/// Puts mapping `i` (`m`) in a process's live mappings, removing or cutting what it
/// overlaps.
fn replace_live(map: &mut BTreeMap<u64, Live>, m: &Mapping, i: usize) {
    let end = m.start.saturating_add(m.len);
    let overlapping: Vec<u64> = map
        .range(..end)
        .filter(|(_, l)| l.end > m.start)
        .map(|(&s, _)| s)
        .collect();
    for s in overlapping {
        let l = map.remove(&s).expect("present");
        if s < m.start {
            map.insert(s, Live { end: m.start, ..l });
        }
        if l.end > end {
            map.insert(end, Live { end: l.end, ..l });
        }
    }
    map.insert(m.start, Live { end, mapping: i });
}

/// An attribution under way: what is mapped now, the files read, the rows so far.
struct Attributor<'a> {
    data: &'a Samples,
    opts: &'a AttributeOptions,
    out: Attribution,
    /// Live mappings per process: start -> end and mapping.
    live: HashMap<u32, BTreeMap<u64, Live>>,
    mapping_rows: HashMap<(MappingKind, String, Option<u32>, Option<u64>), usize>,
    row_of_mapping: Vec<Option<usize>>,
    /// Files whose symbols were read.
    objects: Vec<(String, ObjectSymbols)>,
    object_of_path: HashMap<String, Option<usize>>,
    /// Where each process has the files read loaded.
    loaded: HashMap<u32, Vec<Loaded>>,
    symbol_rows: HashMap<(String, Option<String>, &'static str), usize>,
    unreadable: Vec<String>,
    different: Vec<String>,
    region_rows: Vec<Option<usize>>,
}

impl<'a> Attributor<'a> {
    /// Nothing mapped, nothing read, no rows.
    fn new(data: &'a Samples, opts: &'a AttributeOptions) -> Self {
        Attributor {
            data,
            opts,
            out: Attribution {
                places: vec![Place::default(); data.samples.len()],
                code: vec![None; data.samples.len()],
                ..Default::default()
            },
            live: HashMap::new(),
            mapping_rows: HashMap::new(),
            row_of_mapping: vec![None; data.mappings.len()],
            objects: Vec::new(),
            object_of_path: HashMap::new(),
            loaded: HashMap::new(),
            symbol_rows: HashMap::new(),
            unreadable: Vec::new(),
            different: Vec::new(),
            region_rows: vec![None; opts.regions.len()],
        }
    }

    /// Mapping `i` arrives: it is live from now on, and its file's symbols are read
    /// (once per path) and placed where it loads them, when asked.
    fn mapping_arrived(&mut self, i: usize) {
        let data = self.data;
        let m = &data.mappings[i];
        replace_live(self.live.entry(m.pid).or_default(), m, i);
        if !(self.opts.read_symbols && MappingKind::of(&m.path) == MappingKind::File) {
            return;
        }
        let obj = match self.object_of_path.get(&m.path) {
            Some(&k) => k,
            None => {
                let k = self.read_object(m);
                self.object_of_path.insert(m.path.clone(), k);
                k
            }
        };
        if let Some(k) = obj {
            let o = &self.objects[k].1;
            if let (Some(bias), Some((lo, hi))) = (o.bias(m), o.extent()) {
                let list = self.loaded.entry(m.pid).or_default();
                if !list.iter().any(|l| l.object == k && l.bias == bias) {
                    list.push(Loaded {
                        lo: lo.wrapping_add(bias),
                        hi: hi.wrapping_add(bias),
                        bias,
                        object: k,
                    });
                }
            }
        }
    }

    /// Reads the symbols of a mapping's file when it is the file sampled; else notes
    /// it as different or unreadable.
    fn read_object(&mut self, m: &Mapping) -> Option<usize> {
        let p = Path::new(&m.path);
        if let Err(e) = same_file(m, p) {
            if p.exists() {
                self.different.push(format!("{} ({e})", m.path));
            } else {
                self.unreadable.push(m.path.clone());
            }
            return None;
        }
        match ObjectSymbols::read(p) {
            Some(o) => {
                self.objects.push((m.path.clone(), o));
                Some(self.objects.len() - 1)
            }
            None => {
                self.unreadable.push(m.path.clone());
                None
            }
        }
    }

    /// Sample `i` arrives: its mapping, its region or data symbol, and its code symbol
    /// from the files when perf gave none.
    fn sample_arrived(&mut self, i: usize) {
        let data = self.data;
        let s = &data.samples[i];
        let mut place = Place::default();
        if let Some(mi) = self.mapping_hit(s) {
            place.mapping = Some(self.mapping_row(mi));
        }
        // A user region first, then an ELF data symbol.
        place.symbol = match self.region_row(s) {
            Some(row) => Some(row),
            None => self.data_symbol_row(s),
        };
        if s.code.is_none() {
            if let (Some(ip), Some(list)) = (s.ip, self.loaded.get(&s.pid)) {
                self.out.code[i] = list.iter().find_map(|l| {
                    (ip >= l.lo && ip < l.hi)
                        .then(|| find(&self.objects[l.object].1.text, ip.wrapping_sub(l.bias)))
                        .flatten()
                        .map(|f| f.name.clone())
                });
            }
        }
        self.out.places[i] = place;
    }

    /// The mapping a sample's address falls in: its process's, or (for a process
    /// without mappings) any process's.
    fn mapping_hit(&self, s: &MemSample) -> Option<usize> {
        let live = &self.live;
        lookup(live, s.pid, s.addr).or_else(|| {
            if live.contains_key(&s.pid) {
                None
            } else {
                live.keys()
                    .copied()
                    .collect::<Vec<_>>()
                    .into_iter()
                    .find_map(|p| lookup(live, p, s.addr))
            }
        })
    }

    /// The row of mapping `mi`: one per file, per process's heap, stack or special
    /// mapping, per anonymous range.
    fn mapping_row(&mut self, mi: usize) -> usize {
        if let Some(r) = self.row_of_mapping[mi] {
            return r;
        }
        let m = &self.data.mappings[mi];
        let kind = MappingKind::of(&m.path);
        let (name, pid, range) = match kind {
            MappingKind::File => (m.path.clone(), None, None),
            MappingKind::Heap | MappingKind::Stack | MappingKind::Special => {
                (m.path.clone(), Some(m.pid), None)
            }
            MappingKind::Anonymous => (
                format!("anon 0x{:x}-0x{:x}", m.start, m.start.saturating_add(m.len)),
                Some(m.pid),
                Some((m.start, m.len)),
            ),
        };
        let key = (kind, name.clone(), pid, range.map(|r| r.0));
        let next = self.out.mappings.len();
        let r = *self.mapping_rows.entry(key).or_insert(next);
        if r == next {
            self.out.mappings.push(MappingInfo {
                name,
                kind,
                pid,
                range,
            });
        }
        self.row_of_mapping[mi] = Some(r);
        r
    }

    /// The symbol row under `key`, added with `info` when new.
    fn symbol_row(
        &mut self,
        key: (String, Option<String>, &'static str),
        info: SymbolInfo,
    ) -> usize {
        let next = self.out.symbols.len();
        let row = *self.symbol_rows.entry(key).or_insert(next);
        if row == next {
            self.out.symbols.push(info);
        }
        row
    }

    /// The row of the first user-named region the sample falls in, if any.
    fn region_row(&mut self, s: &MemSample) -> Option<usize> {
        let opts = self.opts;
        let k = opts.regions.iter().position(|r| {
            r.pid.is_none_or(|p| p == s.pid) && s.addr >= r.start && s.addr - r.start < r.len
        })?;
        if let Some(row) = self.region_rows[k] {
            return Some(row);
        }
        let r = &opts.regions[k];
        let row = self.symbol_row(
            (r.name.clone(), None, "user"),
            SymbolInfo {
                name: r.name.clone(),
                kind: "user",
                object: None,
                section: None,
                start: Some(r.start),
                size: Some(r.len),
            },
        );
        self.region_rows[k] = Some(row);
        Some(row)
    }

    /// The row of the ELF data symbol the sample's address falls in, in the first
    /// file loaded there that has one.
    fn data_symbol_row(&mut self, s: &MemSample) -> Option<usize> {
        let (key, info) = self.loaded.get(&s.pid)?.iter().find_map(|l| {
            if s.addr < l.lo || s.addr >= l.hi {
                return None;
            }
            let (path, o) = &self.objects[l.object];
            let sym = find(&o.data, s.addr.wrapping_sub(l.bias))?;
            Some((
                (sym.name.clone(), Some(path.clone()), "symbol"),
                SymbolInfo {
                    name: sym.name.clone(),
                    kind: "symbol",
                    object: Some(path.clone()),
                    section: Some(sym.section.clone()),
                    start: Some(sym.address.wrapping_add(l.bias)),
                    size: Some(sym.size),
                },
            ))
        })?;
        Some(self.symbol_row(key, info))
    }

    /// The attribution, with notes on the files not read or not the ones sampled.
    fn finish(mut self) -> Attribution {
        let mut out = self.out;
        self.unreadable.sort();
        self.unreadable.dedup();
        if !self.unreadable.is_empty() {
            out.notes.push(format!(
                "Data symbols not read (file missing, unreadable or not ELF here): {}; their samples are attributed to mappings only.",
                self.unreadable.join(", ")
            ));
        }
        if !self.different.is_empty() {
            out.notes.push(format!(
                "Files that are not the ones sampled, so their symbols were not used: {}.",
                self.different.join("; ")
            ));
        }
        out
    }
}

/// Attributes every sample.
pub fn attribute(data: &Samples, opts: &AttributeOptions) -> Attribution {
    let mut a = Attributor::new(data, opts);
    for (_, is_map, i) in arrival_order(data) {
        if is_map {
            a.mapping_arrived(i);
        } else {
            a.sample_arrived(i);
        }
    }
    a.finish()
}

fn lookup(live: &HashMap<u32, BTreeMap<u64, Live>>, pid: u32, addr: u64) -> Option<usize> {
    let map = live.get(&pid)?;
    let (_, l) = map.range(..=addr).next_back()?;
    (addr < l.end).then_some(l.mapping)
}

/// Which samples an attribution left unmapped.
pub fn unmapped(samples: &[MemSample], a: &Attribution) -> u64 {
    samples
        .iter()
        .zip(&a.places)
        .filter(|(_, p)| p.mapping.is_none())
        .count() as u64
}
