//! The bandwidth kernels as records name them: an operation with plain or
//! non-temporal stores ([`Kernel`]), its byte accounting from the shipped table
//! (`data/kernels.toml`, [`spec`]) and the instruction set it ran in ([`Isa`]; what this
//! CPU can run is `numalab_mem::kernels::IsaExt`).

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// A kernel's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// s += a[i]
    Read,
    /// a[i] = s
    Write,
    /// c[i] = a[i]
    Copy,
    /// b[i] = s * c[i]
    Scale,
    /// c[i] = a[i] + b[i]
    Add,
    /// a[i] = b[i] + s * c[i]
    Triad,
}

impl Op {
    /// Every operation.
    pub const ALL: [Op; 6] = [Op::Read, Op::Write, Op::Copy, Op::Scale, Op::Add, Op::Triad];

    /// Its name ("triad").
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Copy => "copy",
            Op::Scale => "scale",
            Op::Add => "add",
            Op::Triad => "triad",
        }
    }
}

/// A kernel: an operation with plain or non-temporal stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kernel {
    /// The operation.
    pub op: Op,
    /// Non-temporal (streaming) stores.
    pub nt: bool,
}

impl Kernel {
    /// A kernel with plain stores.
    pub const fn plain(op: Op) -> Kernel {
        Kernel { op, nt: false }
    }

    /// Every kernel (each operation, and the non-temporal variant where one exists).
    pub fn all() -> Vec<Kernel> {
        let mut v = Vec::new();
        for op in Op::ALL {
            v.push(Kernel::plain(op));
            if spec(op).nt_variant {
                v.push(Kernel { op, nt: true });
            }
        }
        v
    }

    /// The default set: STREAM's four, read, and write with both kinds of stores.
    pub fn defaults() -> Vec<Kernel> {
        vec![
            Kernel::plain(Op::Read),
            Kernel::plain(Op::Write),
            Kernel {
                op: Op::Write,
                nt: true,
            },
            Kernel::plain(Op::Copy),
            Kernel::plain(Op::Scale),
            Kernel::plain(Op::Add),
            Kernel::plain(Op::Triad),
        ]
    }

    /// Parses "triad" or "copy-nt".
    pub fn parse(text: &str) -> Result<Kernel, String> {
        let t = text.trim().to_ascii_lowercase();
        let (base, nt) = match t.strip_suffix("-nt") {
            Some(b) => (b.to_string(), true),
            None => (t.clone(), false),
        };
        let names: Vec<String> = Kernel::all().iter().map(|k| k.name()).collect();
        let op = Op::ALL
            .into_iter()
            .find(|o| o.name() == base)
            .ok_or_else(|| format!("unknown kernel {text:?} (kernels: {})", names.join(", ")))?;
        if nt && !spec(op).nt_variant {
            return Err(format!(
                "kernel {text:?}: {base} stores nothing, so it has no non-temporal variant (kernels: {})",
                names.join(", ")
            ));
        }
        Ok(Kernel { op, nt })
    }

    /// Its name ("triad", "copy-nt").
    pub fn name(&self) -> String {
        if self.nt {
            format!("{}-nt", self.op.name())
        } else {
            self.op.name().to_string()
        }
    }

    /// Its accounting.
    pub fn spec(&self) -> &'static Spec {
        spec(self.op)
    }

    /// Number of distinct arrays it touches.
    pub fn arrays(&self) -> usize {
        self.spec().arrays().len()
    }

    /// Bytes per element counted the STREAM way (arrays read + arrays written, 8 bytes
    /// each).
    pub fn stream_bytes_per_element(&self) -> u64 {
        let s = self.spec();
        8 * (s.reads.len() + s.writes.len()) as u64
    }

    /// Bytes per element actually moved between memory and the cache hierarchy,
    /// assuming the CPU reads every line it stores plainly before writing it
    /// (write-allocate). Some cores detect whole-line writes and skip that read; on
    /// those the actual traffic of plain kernels equals the STREAM count.
    pub fn actual_bytes_per_element(&self) -> u64 {
        let s = self.spec();
        let write_allocate = if self.nt { 0 } else { s.writes.len() as u64 };
        self.stream_bytes_per_element() + 8 * write_allocate
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for Kernel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Kernel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Kernel::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A kernel's accounting, from `data/kernels.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    /// Operation name.
    pub name: String,
    /// What it computes.
    pub formula: String,
    /// Arrays read per element ("a", "b", "c").
    pub reads: Vec<String>,
    /// Arrays written per element.
    pub writes: Vec<String>,
    /// Floating-point operations per element.
    pub flops: u32,
    /// Whether a non-temporal-store variant exists.
    pub nt_variant: bool,
}

impl Spec {
    /// The distinct arrays it touches, sorted.
    pub fn arrays(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .reads
            .iter()
            .chain(&self.writes)
            .map(String::as_str)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

#[derive(Deserialize)]
struct Table {
    kernel: Vec<Spec>,
}

/// The shipped accounting table.
pub const TABLE_TOML: &str = include_str!("../../data/kernels.toml");

/// Parses an accounting table and checks it: every operation exactly once, arrays
/// named a/b/c, no array both read and written.
pub fn parse_table(text: &str) -> Result<Vec<Spec>, String> {
    let t: Table = toml::from_str(text).map_err(|e| format!("kernel table: {e}"))?;
    for op in Op::ALL {
        let n = t.kernel.iter().filter(|k| k.name == op.name()).count();
        if n != 1 {
            return Err(format!(
                "kernel table: {} appears {n} times (must be once)",
                op.name()
            ));
        }
    }
    for k in &t.kernel {
        if !Op::ALL.iter().any(|o| o.name() == k.name) {
            return Err(format!("kernel table: unknown kernel {:?}", k.name));
        }
        for a in k.reads.iter().chain(&k.writes) {
            if !["a", "b", "c"].contains(&a.as_str()) {
                return Err(format!("kernel table: {}: unknown array {a:?}", k.name));
            }
        }
        if k.reads.iter().any(|r| k.writes.contains(r)) {
            return Err(format!(
                "kernel table: {}: an array is both read and written",
                k.name
            ));
        }
        if k.nt_variant && k.writes.is_empty() {
            return Err(format!(
                "kernel table: {}: a non-temporal variant needs stores",
                k.name
            ));
        }
    }
    Ok(t.kernel)
}

/// The accounting of an operation.
pub fn spec(op: Op) -> &'static Spec {
    static TABLE: OnceLock<Vec<Spec>> = OnceLock::new();
    let t = TABLE.get_or_init(|| {
        parse_table(TABLE_TOML).expect("the shipped kernel table is valid (tested)")
    });
    t.iter()
        .find(|k| k.name == op.name())
        .expect("every operation is in the table (tested)")
}

/// An instruction set a kernel is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isa {
    /// One 8-byte access per element, any architecture.
    Scalar,
    /// x86-64 SSE2, 128-bit.
    Sse2,
    /// x86-64 AVX2 (256-bit; the kernels use AVX instructions, detection asks for AVX2).
    Avx2,
    /// x86-64 AVX-512F, 512-bit.
    Avx512,
    /// AArch64 Advanced SIMD, 128-bit.
    Neon,
    /// AArch64 Scalable Vector Extension, 128 to 2048 bits (read at run time).
    Sve,
}

impl Isa {
    /// Every ISA numalab knows, narrowest first per architecture.
    pub const ALL: [Isa; 6] = [
        Isa::Scalar,
        Isa::Sse2,
        Isa::Avx2,
        Isa::Avx512,
        Isa::Neon,
        Isa::Sve,
    ];

    /// Its name ("avx512").
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Sse2 => "sse2",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
            Isa::Sve => "sve",
        }
    }

    /// The ISA of a name (any case), if numalab knows it.
    pub fn from_name(text: &str) -> Option<Isa> {
        let t = text.trim().to_ascii_lowercase();
        Isa::ALL.into_iter().find(|i| i.name() == t)
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
