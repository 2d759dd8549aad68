//! numalab's data about uncore PMUs, each number with its source: which device is
//! what ([`Class`]), how many general counters a box has ([`BUDGETS`]), which events
//! the figures need and how they are encoded ([`KNOWN_EVENTS`]). The formulas over
//! these events' roles, with their constants and sources, are data
//! (`data/formulas.toml`, read by [`crate::formulas`]).
//!
//! Events the kernel names in sysfs (Intel iMC `cas_count_read`, CMN `hnf_*`) are
//! taken from sysfs; the others are encoded here from the vendors' published event
//! files (Intel's perfmon files as shipped in the kernel's
//! tools/perf/pmu-events/arch/x86/sapphirerapids/, perf's amdzen3/amdzen4 files),
//! always through the device's own `format/` fields, so an encoding that does not
//! fit this machine's PMU is refused rather than guessed.

/// What an uncore device is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Intel memory-controller channel (`uncore_imc_N`).
    IntelImc,
    /// Intel free-running memory-controller counters (`uncore_imc_free_running_N`).
    IntelImcFreeRunning,
    /// Intel caching/home agent, one LLC slice (`uncore_cha_N`).
    IntelCha,
    /// Intel UPI socket link (`uncore_upi_N`).
    IntelUpi,
    /// AMD data fabric (`amd_df`; `amd_nb` before family 17h).
    AmdDf,
    /// AMD unified memory controller (`amd_umc_N`, Linux 6.7+, PerfMonV2 parts).
    AmdUmc,
    /// Arm CMN mesh (`arm_cmn`, `arm_cmn_N`).
    ArmCmn,
    /// Another uncore PMU numalab lists but derives nothing from (`uncore_iio_3`,
    /// `amd_l3`, `arm_dmc620_*` ...).
    OtherUncore,
    /// Not an uncore PMU (`cpu`, `software`, `msr`, `tracepoint` ...).
    Other,
}

impl Class {
    /// Classifies a PMU by its sysfs name.
    pub fn of(name: &str) -> Class {
        if name.starts_with("uncore_imc_free_running") {
            Class::IntelImcFreeRunning
        } else if name == "uncore_imc" || name.starts_with("uncore_imc_") {
            Class::IntelImc
        } else if name == "uncore_cha" || name.starts_with("uncore_cha_") {
            Class::IntelCha
        } else if name == "uncore_upi" || name.starts_with("uncore_upi_") {
            Class::IntelUpi
        } else if name == "amd_df" {
            Class::AmdDf
        } else if name.starts_with("amd_umc_") {
            Class::AmdUmc
        } else if name == "arm_cmn" || name.starts_with("arm_cmn_") {
            Class::ArmCmn
        } else if name.starts_with("uncore_")
            || name == "amd_l3"
            || name == "amd_nb"
            || name.starts_with("arm_dmc620")
            || name.starts_with("arm_cspmu")
            || name.starts_with("nvidia_")
            || name.starts_with("hisi_")
            || name.starts_with("arm_ccn")
            || name.starts_with("arm_dsu")
        {
            Class::OtherUncore
        } else {
            Class::Other
        }
    }

    /// Whether it is an uncore device.
    pub fn is_uncore(self) -> bool {
        self != Class::Other
    }

    /// The name records use.
    pub fn key(self) -> &'static str {
        match self {
            Class::IntelImc => "intel_imc",
            Class::IntelImcFreeRunning => "intel_imc_free_running",
            Class::IntelCha => "intel_cha",
            Class::IntelUpi => "intel_upi",
            Class::AmdDf => "amd_df",
            Class::AmdUmc => "amd_umc",
            Class::ArmCmn => "arm_cmn",
            Class::OtherUncore => "other_uncore",
            Class::Other => "other",
        }
    }

    /// What people read.
    pub fn label(self) -> &'static str {
        match self {
            Class::IntelImc => "Intel memory controller channel",
            Class::IntelImcFreeRunning => "Intel memory controller, free-running counters",
            Class::IntelCha => "Intel LLC slice / caching-home agent",
            Class::IntelUpi => "Intel UPI socket link",
            Class::AmdDf => "AMD data fabric",
            Class::AmdUmc => "AMD unified memory controller",
            Class::ArmCmn => "Arm CMN coherent mesh",
            Class::OtherUncore => "other uncore PMU",
            Class::Other => "not an uncore PMU",
        }
    }
}

/// General counters of one box of a class, with the source of the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetEntry {
    /// The class.
    pub class: Class,
    /// Counters per box; None: free-running (no general counters; each event is
    /// opened alone).
    pub counters: Option<u32>,
    /// Where the number comes from.
    pub source: &'static str,
}

/// Counters per box. When a box gets more events than this, they go into further
/// groups, which the kernel time-multiplexes (the running fraction says by how much).
pub const BUDGETS: &[BudgetEntry] = &[
    BudgetEntry {
        class: Class::IntelImc,
        counters: Some(4),
        source: "Linux arch/x86/events/intel/uncore_snbep.c: .num_counters = 4 for the iMC of SKX/ICX/SNR; on SPR the uncore discovery table gives the number, 4 general counters per iMC channel per Intel's Xeon (SPR) uncore performance monitoring guide (the DCLK counter is fixed and not used here)",
    },
    BudgetEntry {
        class: Class::IntelImcFreeRunning,
        counters: None,
        source: "free-running counters (uncore_snbep.c spr_imc_freerunning): fixed function, not programmable",
    },
    BudgetEntry {
        class: Class::IntelCha,
        counters: Some(4),
        source: "Linux uncore_snbep.c: skx/icx CHA .num_counters = 4; SPR CHA counters come from the discovery table (4 per CHA per Intel's SPR uncore guide)",
    },
    BudgetEntry {
        class: Class::IntelUpi,
        counters: Some(4),
        source: "Linux uncore_snbep.c: spr_uncore_upi .num_counters = 4",
    },
    BudgetEntry {
        class: Class::AmdDf,
        counters: Some(4),
        source: "Linux arch/x86/events/amd/uncore.c: NUM_COUNTERS_NB = 4 (Zen 2/3); PerfMonV2 parts (Zen 4+) report NumDfPmc in CPUID 0x80000022 EBX[15:10], read live by Budgets::live()",
    },
    BudgetEntry {
        class: Class::AmdUmc,
        counters: Some(4),
        source: "Linux arch/x86/events/amd/uncore.c amd_uncore_umc_ctx_init: CPUID 0x80000022 EBX[21:16] (NumUmcPmc) divided by the active UMCs (ECX mask), read live by Budgets::live(); 4 assumed otherwise",
    },
    BudgetEntry {
        class: Class::ArmCmn,
        counters: Some(4),
        source: "Linux drivers/perf/arm-cmn.c: CMN_DT_NUM_COUNTERS = 8 global counters per DTC, but each event also takes one of the CMN_DTM_NUM_COUNTERS = 4 local counters of every crosspoint (DTM) that hosts a node of its type, so a group of more than 4 node events cannot be scheduled; 4 is used",
    },
    BudgetEntry {
        class: Class::OtherUncore,
        counters: None,
        source: "unknown: each event is opened alone",
    },
    BudgetEntry {
        class: Class::Other,
        counters: None,
        source: "not an uncore PMU: each event is opened alone",
    },
];

/// The budget entry of a class.
pub fn budget_entry(class: Class) -> &'static BudgetEntry {
    BUDGETS
        .iter()
        .find(|b| b.class == class)
        .expect("every class has a budget entry")
}

/// Counter budgets, the table's or overridden (by CPUID on a live AMD machine, or by
/// a caller who knows better).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Budgets {
    /// Overrides: class, counters, source.
    pub overrides: Vec<(Class, Option<u32>, String)>,
}

impl Budgets {
    /// The table as it is.
    pub fn table() -> Self {
        Budgets::default()
    }

    /// The table, with AMD DF and UMC counters from CPUID leaf 0x80000022 when this
    /// CPU is an AMD PerfMonV2 part.
    pub fn live() -> Self {
        let mut b = Budgets::default();
        if let Some((df, umc_total, umc_mask)) = amd_perfmon_v2() {
            if df > 0 {
                b.overrides.push((
                    Class::AmdDf,
                    Some(df),
                    format!("CPUID 0x80000022 EBX[15:10] NumDfPmc = {df} on this CPU"),
                ));
            }
            let active = umc_mask.count_ones();
            if umc_total > 0 && active > 0 {
                b.overrides.push((
                    Class::AmdUmc,
                    Some(umc_total / active),
                    format!(
                        "CPUID 0x80000022 EBX[21:16] NumUmcPmc = {umc_total} over {active} active UMC(s) (ECX {umc_mask:#x}) on this CPU"
                    ),
                ));
            }
        }
        b
    }

    /// Counters per box of a class, and the source.
    pub fn get(&self, class: Class) -> (Option<u32>, String) {
        if let Some((_, n, s)) = self.overrides.iter().rev().find(|(c, _, _)| *c == class) {
            return (*n, s.clone());
        }
        let e = budget_entry(class);
        (e.counters, e.source.to_string())
    }
}

/// (NumDfPmc, NumUmcPmc, active UMC mask) from CPUID 0x80000022 on an AMD CPU with
/// PerfMonV2 (AMD APM vol. 3, CPUID Fn8000_0022; the kernel's
/// `union cpuid_0x80000022_ebx`).
#[cfg(target_arch = "x86_64")]
fn amd_perfmon_v2() -> Option<(u32, u32, u32)> {
    use std::arch::x86_64::__cpuid_count;
    let vendor = __cpuid_count(0, 0);
    let amd = vendor.ebx == u32::from_le_bytes(*b"Auth")
        && vendor.edx == u32::from_le_bytes(*b"enti")
        && vendor.ecx == u32::from_le_bytes(*b"cAMD");
    if !amd {
        return None;
    }
    let max_ext = __cpuid_count(0x8000_0000, 0).eax;
    if max_ext < 0x8000_0022 {
        return None;
    }
    let leaf = __cpuid_count(0x8000_0022, 0);
    // EAX bit 0: PerfMonV2.
    if leaf.eax & 1 == 0 {
        return None;
    }
    let df = (leaf.ebx >> 10) & 0x3f;
    let umc = (leaf.ebx >> 16) & 0x3f;
    Some((df, umc, leaf.ecx))
}

#[cfg(not(target_arch = "x86_64"))]
fn amd_perfmon_v2() -> Option<(u32, u32, u32)> {
    None
}

/// What an event serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// A clock that counts whenever the box is powered: it reading 0 means the box
    /// is not counting ("not counted here").
    Clock,
    /// CAS commands for reads (one 64-byte line each).
    CasRead,
    /// CAS commands for writes.
    CasWrite,
    /// All CAS commands, counted by their own event beside reads and writes (Intel
    /// iMC `UNC_M_CAS_COUNT.ALL`), so that read + write = total can be checked.
    CasAll,
    /// Requests with data on DRAM channel N (AMD DF, Zen 2/3), reads and writes.
    DramData(u8),
    /// LLC lookups that hit (Intel CHA, core requests).
    LlcHit,
    /// LLC lookups that missed (Intel CHA core requests; CMN hnf_cache_miss).
    LlcMiss,
    /// SLC and snoop-filter accesses (CMN hnf_slc_sf_cache_access).
    SlcAccess,
    /// Core demand data reads and their LLC prefetches that missed the LLC, by where
    /// the line's home is: local or remote DRAM (Intel CHA `TOR_INSERTS.IA_MISS_DRD_*`).
    DrdMissLocal,
    /// Demand data reads missing the LLC, addressed to remote DRAM.
    DrdMissRemote,
    /// LLC prefetches of data reads missing the LLC, addressed to local DRAM.
    DrdPrefMissLocal,
    /// LLC prefetches of data reads missing the LLC, addressed to remote DRAM.
    DrdPrefMissRemote,
    /// Directory lookups that sent snoops (Intel CHA).
    DirSnoop,
    /// Directory lookups that sent none.
    DirNoSnoop,
    /// Snoops sent by the directory (CMN hnf_dir_snoops_sent).
    DirSnoopsSent,
    /// Broadcast snoops (CMN hnf_brd_snoops_sent).
    BrdSnoopsSent,
    /// Requests from the home nodes to the memory controllers (CMN hnf_mc_reqs).
    McReqs,
    /// Of which retried (CMN hnf_mc_retries).
    McRetries,
    /// Data flits sent on a UPI link (Intel).
    LinkTxData,
    /// Data sent by remote link controller N (AMD DF, Zen 3), 32-byte units.
    LinkOutData(u8),
}

impl Role {
    /// The name records use.
    pub fn key(self) -> String {
        match self {
            Role::Clock => "clock".into(),
            Role::CasRead => "cas_read".into(),
            Role::CasWrite => "cas_write".into(),
            Role::CasAll => "cas_all".into(),
            Role::DramData(n) => format!("dram_data_{n}"),
            Role::LlcHit => "llc_hit".into(),
            Role::LlcMiss => "llc_miss".into(),
            Role::SlcAccess => "slc_access".into(),
            Role::DrdMissLocal => "drd_miss_local".into(),
            Role::DrdMissRemote => "drd_miss_remote".into(),
            Role::DrdPrefMissLocal => "drd_pref_miss_local".into(),
            Role::DrdPrefMissRemote => "drd_pref_miss_remote".into(),
            Role::DirSnoop => "dir_snoop".into(),
            Role::DirNoSnoop => "dir_no_snoop".into(),
            Role::DirSnoopsSent => "dir_snoops_sent".into(),
            Role::BrdSnoopsSent => "brd_snoops_sent".into(),
            Role::McReqs => "mc_reqs".into(),
            Role::McRetries => "mc_retries".into(),
            Role::LinkTxData => "link_tx_data".into(),
            Role::LinkOutData(n) => format!("link_out_data_{n}"),
        }
    }

    /// Which part of [`crate::What`] asks for it.
    pub fn topic(self) -> Topic {
        match self {
            Role::Clock => Topic::Always,
            Role::CasRead
            | Role::CasWrite
            | Role::CasAll
            | Role::DramData(_)
            | Role::McReqs
            | Role::McRetries => Topic::Memory,
            Role::LlcHit
            | Role::LlcMiss
            | Role::SlcAccess
            | Role::DrdMissLocal
            | Role::DrdMissRemote
            | Role::DrdPrefMissLocal
            | Role::DrdPrefMissRemote => Topic::Llc,
            Role::DirSnoop | Role::DirNoSnoop | Role::DirSnoopsSent | Role::BrdSnoopsSent => {
                Topic::Directory
            }
            Role::LinkTxData | Role::LinkOutData(_) => Topic::Links,
        }
    }
}

/// A group of figures one can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    /// Counted with anything else on its box.
    Always,
    /// Memory bandwidth.
    Memory,
    /// LLC/SLC hit ratio.
    Llc,
    /// Directory and snoop traffic.
    Directory,
    /// Socket links.
    Links,
}

/// How an event is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A named event in the device's `events/`.
    Sysfs(&'static str),
    /// Terms encoded through the device's `format/`, from a vendor event file.
    Terms(&'static str),
    /// Terms that differ by generation: those of the generation whose encodings of
    /// the kernel's named events `sysfs` (in order) equal this device's, all encoded
    /// through the device's `format/`. No generation matching: not counted, with the
    /// encodings compared in the reason.
    SameGenerationAs {
        /// The kernel's named events that identify the generation.
        sysfs: &'static [&'static str],
        /// Per generation, the vendor's terms of those events and of this one.
        choices: &'static [ByGeneration],
    },
}

/// One generation's terms of an event, with the terms of the kernel-named events
/// that identify the generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByGeneration {
    /// The generations (`Sapphire Rapids, Emerald Rapids`).
    pub generations: &'static str,
    /// The vendor's terms of each of `sysfs`, in the same order.
    pub identify: &'static [&'static str],
    /// The vendor's terms of the event itself.
    pub terms: &'static str,
}

/// A condition on the device's format that says which generation the encoding is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatIs {
    /// Field.
    pub field: &'static str,
    /// Its spec (`config:0-7,32-35,59-60`).
    pub spec: &'static str,
    /// What it tells.
    pub meaning: &'static str,
}

/// An event numalab uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KnownEvent {
    /// The class it belongs to.
    pub class: Class,
    /// What it serves.
    pub role: Role,
    /// Its name (the sysfs name when the kernel names it; the vendor's name
    /// otherwise).
    pub name: &'static str,
    /// How it is found.
    pub source: Source,
    /// Only valid when the device's format says so.
    pub requires: Option<FormatIs>,
    /// Where it comes from.
    pub reference: &'static str,
}

const SPR_CHA: &str =
    "Intel SPR event file (linux tools/perf/pmu-events/arch/x86/sapphirerapids/uncore-cache.json)";
/// Intel's perfmon files, as extracted into `data/intel/cha-numa.json` (a test checks
/// every encoding below against that extract).
const PERFMON_CHA_NUMA: &str = "intel/perfmon commit 6dadedf (2026-08-13), SPR/events/sapphirerapids_uncore.json (EventCode, UMaskExt << 8 | UMask; the same values in ICX/EMR/GNR's files), the events of Intel's metrics numa_reads_addressed_to_local_dram / _remote_dram; extract in crates/uncore/data/intel/cha-numa.json";
/// Intel's perfmon files, as extracted into `data/intel/imc-cas.json` (a test checks
/// every encoding below against that extract).
const PERFMON_IMC_CAS: &str = "intel/perfmon commit 6dadedf (2026-08-13), {SKX,CLX,ICX,SPR,EMR,GNR}/events/*_uncore.json: UNC_M_CAS_COUNT.RD / .WR / .ALL (GNR: UNC_M_CAS_COUNT_SCH0.*), EventCode and UMask; extract in crates/uncore/data/intel/imc-cas.json";
/// `UNC_M_CAS_COUNT.ALL` by generation, identified by the kernel's `cas_count_read`
/// and `cas_count_write` (Intel's `.RD` and `.WR` of the same generation).
const IMC_CAS_ALL: &[ByGeneration] = &[
    ByGeneration {
        generations: "Skylake-SP, Cascade Lake",
        identify: &["event=0x04,umask=0x03", "event=0x04,umask=0x0c"],
        terms: "event=0x04,umask=0x0f",
    },
    ByGeneration {
        generations: "Ice Lake-SP",
        identify: &["event=0x04,umask=0x0f", "event=0x04,umask=0x30"],
        terms: "event=0x04,umask=0x3f",
    },
    ByGeneration {
        generations: "Sapphire Rapids, Emerald Rapids (and Granite Rapids sub-channel 0 on kernels before commit 6a8a48644c4b, 2026, whose cas_count_read/_write are SCH0's)",
        identify: &["event=0x05,umask=0xcf", "event=0x05,umask=0xf0"],
        terms: "event=0x05,umask=0xff",
    },
];
const ZEN23_DF: FormatIs = FormatIs {
    field: "event",
    spec: "config:0-7,32-35,59-60",
    meaning: "a Zen 2/3 data fabric (family 17h+, before PerfMonV2)",
};
const ZEN3_DF_FILE: &str =
    "perf amdzen3 event file (linux tools/perf/pmu-events/arch/x86/amdzen3/data-fabric.json)";

/// The events numalab uses, by class.
pub const KNOWN_EVENTS: &[KnownEvent] = &[
    // Intel iMC: named by the kernel (uncore_snbep.c spr_uncore_imc_events, Linux 6.4+).
    KnownEvent {
        class: Class::IntelImc,
        role: Role::Clock,
        name: "clockticks",
        source: Source::Sysfs("clockticks"),
        requires: None,
        reference: "Linux uncore_snbep.c spr_uncore_imc_events: clockticks event=0x01,umask=0x00",
    },
    KnownEvent {
        class: Class::IntelImc,
        role: Role::CasRead,
        name: "cas_count_read",
        source: Source::Sysfs("cas_count_read"),
        requires: None,
        reference: "Linux uncore_snbep.c spr_uncore_imc_events: cas_count_read event=0x05,umask=0xcf, scale 6.103515625e-5 MiB (= 64 B)",
    },
    KnownEvent {
        class: Class::IntelImc,
        role: Role::CasWrite,
        name: "cas_count_write",
        source: Source::Sysfs("cas_count_write"),
        requires: None,
        reference: "Linux uncore_snbep.c spr_uncore_imc_events: cas_count_write event=0x05,umask=0xf0, scale 6.103515625e-5 MiB (= 64 B)",
    },
    // Intel iMC: all CAS commands, not named by the kernel; the generation's encoding.
    KnownEvent {
        class: Class::IntelImc,
        role: Role::CasAll,
        name: "UNC_M_CAS_COUNT.ALL",
        source: Source::SameGenerationAs {
            sysfs: &["cas_count_read", "cas_count_write"],
            choices: IMC_CAS_ALL,
        },
        requires: None,
        reference: PERFMON_IMC_CAS,
    },
    // Intel CHA (SPR): not named by the kernel.
    KnownEvent {
        class: Class::IntelCha,
        role: Role::Clock,
        name: "UNC_CHA_CLOCKTICKS",
        source: Source::Terms("event=0x01"),
        requires: None,
        reference: SPR_CHA,
    },
    KnownEvent {
        class: Class::IntelCha,
        role: Role::LlcHit,
        name: "UNC_CHA_TOR_INSERTS.IA_HIT",
        source: Source::Terms("event=0x35,umask=0xc001fd01"),
        requires: None,
        reference: SPR_CHA,
    },
    KnownEvent {
        class: Class::IntelCha,
        role: Role::LlcMiss,
        name: "UNC_CHA_TOR_INSERTS.IA_MISS",
        source: Source::Terms("event=0x35,umask=0xc001fe01"),
        requires: None,
        reference: SPR_CHA,
    },
    // Intel CHA (ICX, SPR, EMR, GNR: the same encodings), LLC read misses by the home
    // of the address; pairs local/remote share a group. Skylake-SP and Cascade Lake
    // count these through CHA filter 1 (`IA_MISS:filter1=0x40432` / `0x40431`), which
    // their narrower umask field cannot carry, so they are refused as unencodable there.
    KnownEvent {
        class: Class::IntelCha,
        role: Role::DrdMissLocal,
        name: "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_LOCAL",
        source: Source::Terms("event=0x35,umask=0xc816fe01"),
        requires: None,
        reference: PERFMON_CHA_NUMA,
    },
    KnownEvent {
        class: Class::IntelCha,
        role: Role::DrdMissRemote,
        name: "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_REMOTE",
        source: Source::Terms("event=0x35,umask=0xc8177e01"),
        requires: None,
        reference: PERFMON_CHA_NUMA,
    },
    KnownEvent {
        class: Class::IntelCha,
        role: Role::DrdPrefMissLocal,
        name: "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_LOCAL",
        source: Source::Terms("event=0x35,umask=0xc896fe01"),
        requires: None,
        reference: PERFMON_CHA_NUMA,
    },
    KnownEvent {
        class: Class::IntelCha,
        role: Role::DrdPrefMissRemote,
        name: "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_REMOTE",
        source: Source::Terms("event=0x35,umask=0xc8977e01"),
        requires: None,
        reference: PERFMON_CHA_NUMA,
    },
    KnownEvent {
        class: Class::IntelCha,
        role: Role::DirSnoop,
        name: "UNC_CHA_DIR_LOOKUP.SNP",
        source: Source::Terms("event=0x53,umask=0x01"),
        requires: None,
        reference: SPR_CHA,
    },
    KnownEvent {
        class: Class::IntelCha,
        role: Role::DirNoSnoop,
        name: "UNC_CHA_DIR_LOOKUP.NO_SNP",
        source: Source::Terms("event=0x53,umask=0x02"),
        requires: None,
        reference: SPR_CHA,
    },
    // Intel UPI (SPR).
    KnownEvent {
        class: Class::IntelUpi,
        role: Role::LinkTxData,
        name: "UNC_UPI_TxL_FLITS.ALL_DATA",
        source: Source::Terms("event=0x02,umask=0x0f"),
        requires: None,
        reference: "Intel SPR event file (linux tools/perf/pmu-events/arch/x86/sapphirerapids/uncore-interconnect.json)",
    },
    // AMD UMC (Zen 4+; the kernel names no events).
    KnownEvent {
        class: Class::AmdUmc,
        role: Role::Clock,
        name: "umc_mem_clk",
        source: Source::Terms("event=0x00"),
        requires: None,
        reference: "perf amdzen4 event file (linux tools/perf/pmu-events/arch/x86/amdzen4/memory-controller.json)",
    },
    KnownEvent {
        class: Class::AmdUmc,
        role: Role::CasRead,
        name: "umc_cas_cmd.rd",
        source: Source::Terms("event=0x0a,rdwrmask=0x1"),
        requires: None,
        reference: "perf amdzen4 event file (amdzen4/memory-controller.json)",
    },
    KnownEvent {
        class: Class::AmdUmc,
        role: Role::CasWrite,
        name: "umc_cas_cmd.wr",
        source: Source::Terms("event=0x0a,rdwrmask=0x2"),
        requires: None,
        reference: "perf amdzen4 event file (amdzen4/memory-controller.json)",
    },
    // AMD DF, Zen 2/3 format only.
    KnownEvent { class: Class::AmdDf, role: Role::DramData(0), name: "dram_channel_data_controller_0", source: Source::Terms("event=0x07,umask=0x38"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    KnownEvent { class: Class::AmdDf, role: Role::DramData(1), name: "dram_channel_data_controller_1", source: Source::Terms("event=0x47,umask=0x38"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    KnownEvent { class: Class::AmdDf, role: Role::DramData(2), name: "dram_channel_data_controller_2", source: Source::Terms("event=0x87,umask=0x38"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    KnownEvent { class: Class::AmdDf, role: Role::DramData(3), name: "dram_channel_data_controller_3", source: Source::Terms("event=0xc7,umask=0x38"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    KnownEvent { class: Class::AmdDf, role: Role::DramData(4), name: "dram_channel_data_controller_4", source: Source::Terms("event=0x107,umask=0x38"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    KnownEvent { class: Class::AmdDf, role: Role::DramData(5), name: "dram_channel_data_controller_5", source: Source::Terms("event=0x147,umask=0x38"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    KnownEvent { class: Class::AmdDf, role: Role::DramData(6), name: "dram_channel_data_controller_6", source: Source::Terms("event=0x187,umask=0x38"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    KnownEvent { class: Class::AmdDf, role: Role::DramData(7), name: "dram_channel_data_controller_7", source: Source::Terms("event=0x1c7,umask=0x38"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    KnownEvent { class: Class::AmdDf, role: Role::LinkOutData(0), name: "remote_outbound_data_controller_0", source: Source::Terms("event=0x7c7,umask=0x02"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    KnownEvent { class: Class::AmdDf, role: Role::LinkOutData(1), name: "remote_outbound_data_controller_1", source: Source::Terms("event=0x807,umask=0x02"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    KnownEvent { class: Class::AmdDf, role: Role::LinkOutData(2), name: "remote_outbound_data_controller_2", source: Source::Terms("event=0x847,umask=0x02"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    KnownEvent { class: Class::AmdDf, role: Role::LinkOutData(3), name: "remote_outbound_data_controller_3", source: Source::Terms("event=0x887,umask=0x02"), requires: Some(ZEN23_DF), reference: ZEN3_DF_FILE },
    // Arm CMN: named by the kernel (drivers/perf/arm-cmn.c, arm_cmn_event_attrs).
    KnownEvent {
        class: Class::ArmCmn,
        role: Role::SlcAccess,
        name: "hnf_slc_sf_cache_access",
        source: Source::Sysfs("hnf_slc_sf_cache_access"),
        requires: None,
        reference: "Linux drivers/perf/arm-cmn.c: HN-F event 0x02; Arm CMN-600 TRM PMU event list",
    },
    KnownEvent {
        class: Class::ArmCmn,
        role: Role::LlcMiss,
        name: "hnf_cache_miss",
        source: Source::Sysfs("hnf_cache_miss"),
        requires: None,
        reference: "Linux drivers/perf/arm-cmn.c: HN-F event 0x01; Arm CMN-600 TRM PMU event list",
    },
    KnownEvent {
        class: Class::ArmCmn,
        role: Role::McReqs,
        name: "hnf_mc_reqs",
        source: Source::Sysfs("hnf_mc_reqs"),
        requires: None,
        reference: "Linux drivers/perf/arm-cmn.c: HN-F event 0x0d; Arm CMN-600 TRM PMU event list",
    },
    KnownEvent {
        class: Class::ArmCmn,
        role: Role::McRetries,
        name: "hnf_mc_retries",
        source: Source::Sysfs("hnf_mc_retries"),
        requires: None,
        reference: "Linux drivers/perf/arm-cmn.c: HN-F event 0x0c; Arm CMN-600 TRM PMU event list",
    },
    KnownEvent {
        class: Class::ArmCmn,
        role: Role::DirSnoopsSent,
        name: "hnf_dir_snoops_sent",
        source: Source::Sysfs("hnf_dir_snoops_sent"),
        requires: None,
        reference: "Linux drivers/perf/arm-cmn.c: HN-F event 0x08",
    },
    KnownEvent {
        class: Class::ArmCmn,
        role: Role::BrdSnoopsSent,
        name: "hnf_brd_snoops_sent",
        source: Source::Sysfs("hnf_brd_snoops_sent"),
        requires: None,
        reference: "Linux drivers/perf/arm-cmn.c: HN-F event 0x09",
    },
];

/// Known events of a class.
pub fn known_events(class: Class) -> impl Iterator<Item = &'static KnownEvent> {
    KNOWN_EVENTS.iter().filter(move |e| e.class == class)
}
