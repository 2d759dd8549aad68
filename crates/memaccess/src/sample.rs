//! The samples both sources produce: the `perf script` importer ([`crate::script`]) and
//! the live sampler ([`crate::live`]) fill the same [`Samples`], so the analysis is one.

use crate::datasrc::DataSrc;

/// One data-address sample.
#[derive(Debug, Clone, PartialEq)]
pub struct MemSample {
    /// Order of arrival among samples and mappings (mappings seen before a sample
    /// apply to it).
    pub seq: u64,
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// CPU.
    pub cpu: u32,
    /// Time stamp, ns (perf's clock).
    pub time_ns: Option<u64>,
    /// Instruction pointer.
    pub ip: Option<u64>,
    /// Code symbol as perf printed it (index into [`Samples::code_names`]).
    pub code: Option<u32>,
    /// Data (virtual) address.
    pub addr: u64,
    /// Where the access was served from.
    pub data_src: DataSrc,
    /// Latency (the PMU's weight).
    pub weight: u64,
    /// Physical address, when sampled (0 from perf means "not available").
    pub phys_addr: Option<u64>,
    /// Event (index into [`Samples::events`]).
    pub event: u16,
}

/// A memory mapping of a process (PERF_RECORD_MMAP2 / MMAP).
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    /// Order of arrival.
    pub seq: u64,
    /// Process.
    pub pid: u32,
    /// First address.
    pub start: u64,
    /// Length, bytes.
    pub len: u64,
    /// Offset in the file.
    pub pgoff: u64,
    /// `rwxp` as perf prints it, when known.
    pub prot: Option<String>,
    /// The file, or `[heap]`, `[stack]`, `//anon`, `[vdso]`...
    pub path: String,
    /// (major, minor, inode) of the file, when printed.
    pub dev_ino: Option<(u32, u32, u64)>,
    /// Build id (hex), when printed instead.
    pub build_id: Option<String>,
}

/// What a mapping holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MappingKind {
    /// A file.
    File,
    /// The brk heap.
    Heap,
    /// A stack.
    Stack,
    /// Anonymous memory (malloc arenas, mmap'd buffers, anonymous huge pages).
    Anonymous,
    /// `[vdso]`, `[vvar]`...
    Special,
}

impl MappingKind {
    /// Classifies a mapping's name as the kernel and perf write it.
    pub fn of(path: &str) -> MappingKind {
        if path == "[heap]" {
            MappingKind::Heap
        } else if path == "[stack]" || path.starts_with("[stack:") {
            MappingKind::Stack
        } else if path.is_empty()
            || path == "//anon"
            || path.starts_with("[anon")
            || path.starts_with("/anon_hugepage")
            || path == "/dev/zero"
            || path.starts_with("/memfd:")
            || path.starts_with("/dev/zero (deleted)")
        {
            MappingKind::Anonymous
        } else if path.starts_with('[') {
            MappingKind::Special
        } else {
            MappingKind::File
        }
    }

    /// Name for records.
    pub fn name(self) -> &'static str {
        match self {
            MappingKind::File => "file",
            MappingKind::Heap => "heap",
            MappingKind::Stack => "stack",
            MappingKind::Anonymous => "anonymous",
            MappingKind::Special => "special",
        }
    }
}

/// Samples and mappings, from either source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    /// The samples.
    pub samples: Vec<MemSample>,
    /// The mappings.
    pub mappings: Vec<Mapping>,
    /// Event names.
    pub events: Vec<String>,
    /// Code symbol names.
    pub code_names: Vec<String>,
    /// Samples the kernel lost.
    pub lost: u64,
    /// Whether physical addresses were sampled.
    pub has_phys_addr: bool,
    /// Whether instruction pointers were sampled.
    pub has_ip: bool,
    /// Whether time stamps were sampled.
    pub has_time: bool,
    /// Samples left out as not memory operations (no op and no address: AMD IBS
    /// samples every op).
    pub non_memory: u64,
}

impl Samples {
    /// Leaves out samples that are no memory operation: no load, store or prefetch in
    /// the data source and address 0. Returns how many.
    pub fn drop_non_memory(&mut self) -> u64 {
        use crate::datasrc::Op;
        let before = self.samples.len();
        self.samples.retain(|s| {
            matches!(s.data_src.op(), Op::Load | Op::Store | Op::Prefetch) || s.addr != 0
        });
        let n = (before - self.samples.len()) as u64;
        self.non_memory += n;
        n
    }

    /// Index of an event name, added when new.
    pub fn event_index(&mut self, name: &str) -> u16 {
        if let Some(i) = self.events.iter().position(|e| e == name) {
            return i as u16;
        }
        self.events.push(name.to_string());
        (self.events.len() - 1).min(u16::MAX as usize) as u16
    }

    /// Index of a code symbol name, added when new.
    pub fn code_index(
        &mut self,
        name: &str,
        cache: &mut std::collections::HashMap<String, u32>,
    ) -> u32 {
        if let Some(&i) = cache.get(name) {
            return i;
        }
        self.code_names.push(name.to_string());
        let i = (self.code_names.len() - 1) as u32;
        cache.insert(name.to_string(), i);
        i
    }
}
