//! What makes a home map valid for one machine only (its fingerprint): made from the
//! machine identity (`numalab_schema::identity`), compared field by field, and a
//! fingerprint an older numalab stored brought to the current recipe before it is
//! compared.

use numalab_schema::identity::{arm_cpu, cpuinfo_number as number, CpuId, MachineIdentity};
use numalab_schema::machine::CpuIdentity;
use serde::{Deserialize, Serialize};

/// What makes a map valid for one machine only: a map is refused on a machine whose
/// fingerprint differs. The kernel version is not part of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// How the CPU fields are written: [`FINGERPRINT_RECIPE`] (the machine identity's
    /// model name and CPU id), or [`FINGERPRINT_RECIPE_V1`] (`/proc/cpuinfo` words; maps
    /// made before this field existed): [`Fingerprint::current`] reads the old one.
    #[serde(default = "recipe_v1")]
    pub recipe: String,
    /// "live" or "model:PRESET".
    pub source: String,
    /// CPU model name: the machine identity's (x86 `/proc/cpuinfo` "model name", Arm the
    /// name of its MIDR), or the model's label.
    pub cpu_model: String,
    /// The CPU id: x86 "family F model M stepping S" or Arm "MIDR 0x..."
    /// (`numalab_schema::identity::cpu_id`), or the model's seed.
    pub stepping: String,
    /// Logical CPUs.
    pub cpus: u32,
    /// NUMA nodes and each node's memory, bytes, counted as `memory_basis` says.
    pub node_memory_bytes: Vec<u64>,
    /// What `node_memory_bytes` counts: [`MEMORY_BLOCKS`] (the memory present on each
    /// node: its sysfs memory blocks times their size, which neither a kernel update, its
    /// reservations nor a memory map the kernel fills in lazily after boot move),
    /// [`MEMORY_MEMTOTAL`] (the kernel's `MemTotal` rounded down to MiB: kernels without
    /// memory blocks in sysfs, and maps made before this field existed) or "model".
    /// Memory is compared only between fingerprints with the same basis.
    #[serde(default = "memtotal_basis")]
    pub memory_basis: String,
    /// Firmware mode settings visible from the OS (cluster mode shows as the NUMA node
    /// count and each node's CPUs; SMT on or off), in words.
    pub modes: Vec<String>,
}

/// [`Fingerprint::recipe`] of fingerprints made now: the CPU fields are the machine
/// identity's model name and CPU id ("MIDR 0x413fd0c1", "family 6 model 143 stepping 8").
pub const FINGERPRINT_RECIPE: &str = "numalab-home-v2";
/// [`Fingerprint::recipe`] of maps made before the field existed: the CPU fields were
/// `/proc/cpuinfo` words, x86 "model name" and "family F model M stepping S", Arm
/// "implementer I part P" and "variant V revision R", distinct values joined by " + ".
pub const FINGERPRINT_RECIPE_V1: &str = "numalab-home-v1";

/// [`Fingerprint::memory_basis`] of memory counted from sysfs memory blocks.
pub const MEMORY_BLOCKS: &str = "memory blocks";
/// [`Fingerprint::memory_basis`] of memory counted from the kernel's `MemTotal`.
pub const MEMORY_MEMTOTAL: &str = "MemTotal";

fn memtotal_basis() -> String {
    MEMORY_MEMTOTAL.into()
}

fn recipe_v1() -> String {
    FINGERPRINT_RECIPE_V1.into()
}

/// What a CPU field says when the identity does not know it.
const UNKNOWN: &str = "unknown";

impl Fingerprint {
    /// The fingerprint of a machine from `source` ("live", "model:PRESET"): its CPU
    /// (model name and CPU id, "unknown" where not known) and logical CPUs (its PUs) from
    /// its identity, its memory per node counted as `memory_basis` says, its modes.
    pub fn new(
        source: impl Into<String>,
        identity: &MachineIdentity,
        node_memory_bytes: Vec<u64>,
        memory_basis: impl Into<String>,
        modes: Vec<String>,
    ) -> Fingerprint {
        let field = |v: &Option<String>| v.clone().unwrap_or_else(|| UNKNOWN.into());
        Fingerprint {
            recipe: FINGERPRINT_RECIPE.into(),
            source: source.into(),
            cpu_model: field(&identity.cpu.model_name),
            stepping: field(&identity.cpu.cpu_id),
            cpus: identity.pus.unwrap_or(0) as u32,
            node_memory_bytes,
            memory_basis: memory_basis.into(),
            modes,
        }
    }

    /// This fingerprint as the current recipe writes it, which is what is compared:
    /// - a live fingerprint of [`FINGERPRINT_RECIPE_V1`] has its CPU fields rewritten
    ///   from the CPU kinds its words name (Arm implementer, part, variant and revision
    ///   become "MIDR 0x..." and the MIDR's name; x86 model name, family, model and
    ///   stepping become the model name and "family F model M stepping S"); words that
    ///   cannot be read, or kinds that cannot be paired (more than one model and a
    ///   different number of steppings, each more than one), stay as they were, and so
    ///   differ from any machine's;
    /// - an Arm CPU's model name is derived again from its MIDR with this numalab's
    ///   table, so that a part the table learns does not make a map of the same CPU
    ///   another machine's.
    pub fn current(&self) -> Fingerprint {
        let mut f = self.clone();
        if f.recipe == FINGERPRINT_RECIPE_V1 && f.source == "live" {
            if let Some(kinds) = v1_kinds(&f.cpu_model, &f.stepping) {
                let cpu = CpuId::of_kinds(&kinds);
                let field = |v: Option<String>| v.unwrap_or_else(|| UNKNOWN.into());
                f.cpu_model = field(cpu.model_name);
                f.stepping = field(cpu.cpu_id);
                f.recipe = FINGERPRINT_RECIPE.into();
            }
        }
        if f.recipe == FINGERPRINT_RECIPE {
            if let Some(name) =
                midr_kinds(&f.stepping).and_then(|kinds| CpuId::of_kinds(&kinds).model_name)
            {
                f.cpu_model = name;
            }
        }
        f
    }

    /// The fields that differ from `other`, named, empty when the same machine. Both
    /// are compared as the current recipe writes them ([`Fingerprint::current`]): a map
    /// an older numalab made of this machine is still this machine's.
    pub fn differences(&self, other: &Fingerprint) -> Vec<String> {
        let (a, b) = (self.current(), other.current());
        let mut d = Vec::new();
        if a.source != b.source {
            d.push(format!("source {} vs {}", a.source, b.source));
        }
        if a.cpu_model != b.cpu_model {
            d.push(format!("CPU model {:?} vs {:?}", a.cpu_model, b.cpu_model));
        }
        if a.stepping != b.stepping {
            d.push(format!("stepping {:?} vs {:?}", a.stepping, b.stepping));
        }
        if a.cpus != b.cpus {
            d.push(format!("{} vs {} CPUs", a.cpus, b.cpus));
        }
        // Memory counted two ways (a map from before memory blocks were counted) is not
        // compared: the CPU fields and the per-node CPU lists still tell machines apart.
        if a.memory_basis == b.memory_basis && a.node_memory_bytes != b.node_memory_bytes {
            d.push(format!(
                "memory per node {:?} vs {:?} bytes ({})",
                a.node_memory_bytes, b.node_memory_bytes, a.memory_basis
            ));
        }
        if a.modes != b.modes {
            d.push(format!("modes {:?} vs {:?}", a.modes, b.modes));
        }
        d
    }
}

/// "I P" of "implementer I part P".
fn v1_arm_model(s: &str) -> Option<(u32, u32)> {
    let (imp, part) = s.strip_prefix("implementer ")?.split_once(" part ")?;
    Some((number(imp)?, number(part)?))
}

/// "V R" of "variant V revision R" ("?" when the kernel did not say: `None`).
fn v1_arm_stepping(s: &str) -> Option<(Option<u32>, Option<u32>)> {
    let (v, r) = s.strip_prefix("variant ")?.split_once(" revision ")?;
    let field = |x: &str| {
        if x == "?" {
            Some(None)
        } else {
            number(x).map(Some)
        }
    };
    Some((field(v)?, field(r)?))
}

/// "F M S" of "family F model M stepping S".
fn v1_x86_stepping(s: &str) -> Option<(u32, u32, u32)> {
    let rest = s.strip_prefix("family ")?;
    let (f, rest) = rest.split_once(" model ")?;
    let (m, st) = rest.split_once(" stepping ")?;
    Some((f.parse().ok()?, m.parse().ok()?, st.parse().ok()?))
}

/// The CPU kinds the CPU words of a [`FINGERPRINT_RECIPE_V1`] fingerprint name, in
/// order, as a machine description would hold them; `None` when the words cannot be
/// read or paired. Models and steppings were listed apart (each its distinct values):
/// they pair one to one, or one of them stands for all of the other's.
fn v1_kinds(model: &str, stepping: &str) -> Option<Vec<CpuIdentity>> {
    let split = |s: &str| -> Vec<String> {
        if s == UNKNOWN {
            Vec::new()
        } else {
            s.split(" + ").map(str::to_string).collect()
        }
    };
    let (models, steppings) = (split(model), split(stepping));
    if models.is_empty() {
        return steppings.is_empty().then(Vec::new);
    }
    let n = models.len().max(steppings.len());
    if !(steppings.len() <= 1 || models.len() == 1 || models.len() == steppings.len()) {
        return None;
    }
    let pick = |list: &[String], i: usize| -> Option<String> {
        match list.len() {
            0 => None,
            1 => Some(list[0].clone()),
            _ => Some(list[i].clone()),
        }
    };
    let arm = models.iter().all(|m| m.starts_with("implementer "));
    (0..n)
        .map(|i| {
            let m = pick(&models, i)?;
            let s = pick(&steppings, i);
            if arm {
                let (implementer, part) = v1_arm_model(&m)?;
                let (variant, revision) = match s {
                    Some(s) => v1_arm_stepping(&s)?,
                    None => (None, None),
                };
                Some(arm_cpu(implementer, part, variant, revision))
            } else {
                let fms = match s {
                    Some(s) => Some(v1_x86_stepping(&s)?),
                    None => None,
                };
                Some(CpuIdentity {
                    model_name: Some(m),
                    family: fms.map(|x| x.0),
                    model: fms.map(|x| x.1),
                    stepping: fms.map(|x| x.2),
                    ..Default::default()
                })
            }
        })
        .collect()
}

/// The Arm CPU kinds of a CPU id made only of MIDRs ("MIDR 0x413fd0c1 + MIDR ...").
fn midr_kinds(stepping: &str) -> Option<Vec<CpuIdentity>> {
    stepping
        .split(" + ")
        .map(|s| {
            let v = u64::from_str_radix(s.strip_prefix("MIDR 0x")?, 16).ok()?;
            let m = numalab_schema::midr::Midr::from_value(v);
            Some(arm_cpu(
                m.implementer,
                m.part,
                Some(m.variant),
                Some(m.revision),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests;
