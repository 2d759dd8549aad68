//! Arm CPU names from `MIDR_EL1`: the implementer code and part number of every core
//! numalab can name, as data, in the bottom crate so that `topo` (machine descriptions)
//! and `pmu` (catalog choice) read one table.
//!
//! `MIDR_EL1` layout (Arm Architecture Reference Manual for A-profile, register
//! MIDR_EL1): bits 31:24 implementer, 23:20 variant (the "r" of rNpM), 19:16
//! architecture (0xf: by CPUID scheme), 15:4 part number, 3:0 revision (the "p").
//! Linux shows the fields in `/proc/cpuinfo` ("CPU implementer", "CPU variant", "CPU
//! part", "CPU revision") and the whole register in
//! `/sys/devices/system/cpu/cpuN/regs/identification/midr_el1`.
//!
//! Sources of the codes below (facts, re-typed here, no code copied):
//! - Implementer codes: Arm ARM, MIDR_EL1.Implementer (0x41 Arm, 0x42 Broadcom, 0x43
//!   Cavium, 0x46 Fujitsu, 0x48 HiSilicon, 0x4e NVIDIA, 0x50 Applied Micro, 0x51
//!   Qualcomm, 0x61 Apple, 0xc0 Ampere); 0x6d Microsoft from the Linux kernel's
//!   `arch/arm64/include/asm/cputype.h` (`ARM_CPU_IMP_MICROSOFT`).
//! - Arm Ltd. cores (implementer 0x41): the "MIDR_EL1" page of each core's Technical
//!   Reference Manual (e.g. Neoverse N1 TRM, ARM 100616: PartNum 0xD0C); cross-checked
//!   with `cputype.h` (`ARM_CPU_PART_*`) and with Arm's PMU event file index
//!   `crates/pmu/data/arm/pmu/cpus.json` (Apache-2.0, "cpuid" = implementer << 12 | part).
//! - Other implementers: `cputype.h` (`HISI_CPU_PART_TSV110` 0xD01, `FUJITSU_CPU_PART_A64FX`
//!   0x001, `AMPERE_CPU_PART_AMPERE1` 0xAC3, `AMPERE_CPU_PART_AMPERE1A` 0xAC4,
//!   `MICROSOFT_CPU_PART_AZURE_COBALT_100` 0xD49 "based on r0p0 of Arm Neoverse N2",
//!   `NVIDIA_CPU_PART_DENVER` 0x003, `NVIDIA_CPU_PART_CARMEL` 0x004,
//!   `CAVIUM_CPU_PART_THUNDERX*`, `BRCM_CPU_PART_VULCAN` 0x516, `QCOM_CPU_PART_FALKOR`
//!   0xC00, `APPLE_CPU_PART_M1_*`/`M2_*`).
//! - Products built from Arm's cores report Arm's implementer and part: Ampere Altra and
//!   AWS Graviton2 are Neoverse N1, Graviton3 Neoverse V1, NVIDIA Grace and Graviton4
//!   Neoverse V2 (vendors' product pages); the MIDR alone cannot tell those products
//!   apart, so the name is the core's.

/// One named part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArmPart {
    /// MIDR implementer code.
    pub implementer: u32,
    /// MIDR part number.
    pub part: u32,
    /// Core name ("Neoverse N1", "TSV110").
    pub name: &'static str,
    /// The product the core is known by, when the part number identifies one
    /// ("Kunpeng 920" for HiSilicon TSV110).
    pub product: Option<&'static str>,
}

const fn p(implementer: u32, part: u32, name: &'static str) -> ArmPart {
    ArmPart {
        implementer,
        part,
        name,
        product: None,
    }
}

const fn pp(implementer: u32, part: u32, name: &'static str, product: &'static str) -> ArmPart {
    ArmPart {
        implementer,
        part,
        name,
        product: Some(product),
    }
}

/// Implementer codes and names.
pub const IMPLEMENTERS: &[(u32, &str)] = &[
    (0x41, "Arm"),
    (0x42, "Broadcom"),
    (0x43, "Cavium"),
    (0x46, "Fujitsu"),
    (0x48, "HiSilicon"),
    (0x4e, "NVIDIA"),
    (0x50, "Applied Micro"),
    (0x51, "Qualcomm"),
    (0x61, "Apple"),
    (0x6d, "Microsoft"),
    (0xc0, "Ampere"),
];

/// Part numbers and names (see the module documentation for the sources).
pub const PARTS: &[ArmPart] = &[
    // Arm Neoverse (servers).
    p(0x41, 0xd0c, "Neoverse N1"),
    p(0x41, 0xd49, "Neoverse N2"),
    p(0x41, 0xd8e, "Neoverse N3"),
    p(0x41, 0xd4a, "Neoverse E1"),
    p(0x41, 0xd40, "Neoverse V1"),
    p(0x41, 0xd4f, "Neoverse V2"),
    p(0x41, 0xd84, "Neoverse V3"),
    p(0x41, 0xd83, "Neoverse V3AE"),
    // Arm Cortex-A (AArch64).
    p(0x41, 0xd04, "Cortex-A35"),
    p(0x41, 0xd03, "Cortex-A53"),
    p(0x41, 0xd05, "Cortex-A55"),
    p(0x41, 0xd07, "Cortex-A57"),
    p(0x41, 0xd06, "Cortex-A65"),
    p(0x41, 0xd43, "Cortex-A65AE"),
    p(0x41, 0xd08, "Cortex-A72"),
    p(0x41, 0xd09, "Cortex-A73"),
    p(0x41, 0xd0a, "Cortex-A75"),
    p(0x41, 0xd0b, "Cortex-A76"),
    p(0x41, 0xd0e, "Cortex-A76AE"),
    p(0x41, 0xd0d, "Cortex-A77"),
    p(0x41, 0xd41, "Cortex-A78"),
    p(0x41, 0xd42, "Cortex-A78AE"),
    p(0x41, 0xd4b, "Cortex-A78C"),
    p(0x41, 0xd44, "Cortex-X1"),
    p(0x41, 0xd4c, "Cortex-X1C"),
    p(0x41, 0xd46, "Cortex-A510"),
    p(0x41, 0xd47, "Cortex-A710"),
    p(0x41, 0xd48, "Cortex-X2"),
    p(0x41, 0xd4d, "Cortex-A715"),
    p(0x41, 0xd4e, "Cortex-X3"),
    p(0x41, 0xd80, "Cortex-A520"),
    p(0x41, 0xd81, "Cortex-A720"),
    p(0x41, 0xd82, "Cortex-X4"),
    p(0x41, 0xd85, "Cortex-X925"),
    p(0x41, 0xd87, "Cortex-A725"),
    p(0x41, 0xd88, "Cortex-A520AE"),
    p(0x41, 0xd89, "Cortex-A720AE"),
    // Arm models.
    p(0x41, 0xd0f, "AEMv8 model"),
    p(0x41, 0xd00, "Foundation model"),
    // Broadcom, Cavium.
    p(0x42, 0x516, "Vulcan"),
    p(0x43, 0x0a1, "ThunderX"),
    p(0x43, 0x0a2, "ThunderX 81xx"),
    p(0x43, 0x0a3, "ThunderX 83xx"),
    p(0x43, 0x0af, "ThunderX2"),
    // Fujitsu, HiSilicon.
    p(0x46, 0x001, "A64FX"),
    pp(0x48, 0xd01, "TSV110", "Kunpeng 920"),
    // NVIDIA's own cores (Grace uses Arm's Neoverse V2: 0x41/0xd4f).
    p(0x4e, 0x003, "Denver"),
    p(0x4e, 0x004, "Carmel"),
    // Qualcomm.
    p(0x51, 0xc00, "Falkor"),
    // Apple.
    p(0x61, 0x022, "M1 Icestorm"),
    p(0x61, 0x023, "M1 Firestorm"),
    p(0x61, 0x032, "M2 Blizzard"),
    p(0x61, 0x033, "M2 Avalanche"),
    // Microsoft.
    p(0x6d, 0xd49, "Azure Cobalt 100"),
    // Ampere's own cores (Altra and Altra Max use Arm's Neoverse N1: 0x41/0xd0c).
    p(0xc0, 0xac3, "AmpereOne"),
    p(0xc0, 0xac4, "AmpereOne AC04"),
];

/// The implementer's name, if numalab knows the code.
pub fn implementer_name(code: u32) -> Option<&'static str> {
    IMPLEMENTERS
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, n)| *n)
}

/// The part, if numalab knows it.
pub fn part(implementer: u32, part: u32) -> Option<&'static ArmPart> {
    PARTS
        .iter()
        .find(|x| x.implementer == implementer && x.part == part)
}

/// The fields of a `MIDR_EL1` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Midr {
    /// Implementer code (bits 31:24).
    pub implementer: u32,
    /// Variant, the major revision (bits 23:20).
    pub variant: u32,
    /// Architecture (bits 19:16; 0xf on every Armv8 core).
    pub architecture: u32,
    /// Part number (bits 15:4).
    pub part: u32,
    /// Revision, the minor revision (bits 3:0).
    pub revision: u32,
}

impl Midr {
    /// Splits a register value.
    pub fn from_value(v: u64) -> Midr {
        Midr {
            implementer: ((v >> 24) & 0xff) as u32,
            variant: ((v >> 20) & 0xf) as u32,
            architecture: ((v >> 16) & 0xf) as u32,
            part: ((v >> 4) & 0xfff) as u32,
            revision: (v & 0xf) as u32,
        }
    }

    /// The register value.
    pub fn value(&self) -> u64 {
        (u64::from(self.implementer & 0xff) << 24)
            | (u64::from(self.variant & 0xf) << 20)
            | (u64::from(self.architecture & 0xf) << 16)
            | (u64::from(self.part & 0xfff) << 4)
            | u64::from(self.revision & 0xf)
    }

    /// The part as a name: "Arm Neoverse N1", "HiSilicon TSV110 / Kunpeng 920", or for
    /// a code numalab does not know "Arm part 0xd99 (unknown to numalab)".
    pub fn core_name(&self) -> String {
        core_name(self.implementer, self.part)
    }

    /// The name with the register and the revision:
    /// "Arm Neoverse N1 (MIDR 0x414fd0c1, r4p1)", or for a part numalab does not know
    /// "Arm part 0xd99 (unknown to numalab; MIDR 0x414fd991, r4p1)".
    pub fn cpu_name(&self) -> String {
        let register = format!(
            "MIDR 0x{:08x}, r{}p{}",
            self.value(),
            self.variant,
            self.revision
        );
        match self.core_name().strip_suffix(" (unknown to numalab)") {
            Some(unknown) => format!("{unknown} (unknown to numalab; {register})"),
            None => format!("{} ({register})", self.core_name()),
        }
    }
}

/// The implementer and part as a name (see [`Midr::core_name`]).
pub fn core_name(implementer: u32, part_number: u32) -> String {
    let vendor = implementer_name(implementer)
        .map(str::to_string)
        .unwrap_or_else(|| format!("implementer 0x{implementer:02x}"));
    match part(implementer, part_number) {
        Some(ArmPart {
            name,
            product: Some(product),
            ..
        }) => format!("{vendor} {name} / {product}"),
        Some(ArmPart { name, .. }) => format!("{vendor} {name}"),
        None => format!("{vendor} part 0x{part_number:03x} (unknown to numalab)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_server_cores() {
        let n1 = Midr::from_value(0x414fd0c1);
        assert_eq!(
            (
                n1.implementer,
                n1.variant,
                n1.architecture,
                n1.part,
                n1.revision
            ),
            (0x41, 4, 0xf, 0xd0c, 1)
        );
        assert_eq!(n1.value(), 0x414fd0c1);
        assert_eq!(n1.cpu_name(), "Arm Neoverse N1 (MIDR 0x414fd0c1, r4p1)");
        // Ampere Altra r3p1.
        assert_eq!(
            Midr::from_value(0x413fd0c1).cpu_name(),
            "Arm Neoverse N1 (MIDR 0x413fd0c1, r3p1)"
        );
        for (imp, part, name) in [
            (0x41, 0xd49, "Arm Neoverse N2"),
            (0x41, 0xd40, "Arm Neoverse V1"),
            (0x41, 0xd4f, "Arm Neoverse V2"),
            (0x41, 0xd84, "Arm Neoverse V3"),
            (0x41, 0xd8e, "Arm Neoverse N3"),
            (0x41, 0xd4a, "Arm Neoverse E1"),
            (0x41, 0xd08, "Arm Cortex-A72"),
            (0x41, 0xd0b, "Arm Cortex-A76"),
            (0xc0, 0xac3, "Ampere AmpereOne"),
            (0x48, 0xd01, "HiSilicon TSV110 / Kunpeng 920"),
            (0x46, 0x001, "Fujitsu A64FX"),
            (0x43, 0x0af, "Cavium ThunderX2"),
        ] {
            assert_eq!(core_name(imp, part), name);
        }
    }

    #[test]
    fn unknown_codes_are_said_to_be_unknown() {
        assert_eq!(
            Midr::from_value(0x414fd991).cpu_name(),
            "Arm part 0xd99 (unknown to numalab; MIDR 0x414fd991, r4p1)"
        );
        assert_eq!(
            core_name(0x99, 0x1),
            "implementer 0x99 part 0x001 (unknown to numalab)"
        );
        assert_eq!(implementer_name(0x99), None);
    }

    #[test]
    fn the_table_has_no_duplicates() {
        for (i, a) in PARTS.iter().enumerate() {
            assert!(
                implementer_name(a.implementer).is_some(),
                "{a:?}: implementer without a name"
            );
            assert!(a.part <= 0xfff, "{a:?}");
            for b in &PARTS[i + 1..] {
                assert!(
                    (a.implementer, a.part) != (b.implementer, b.part),
                    "{a:?} and {b:?}"
                );
            }
        }
    }
}
