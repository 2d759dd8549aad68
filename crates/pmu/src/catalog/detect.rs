//! Which catalog a CPU gets: from its MIDR (Arm) or vendor and model (x86), or a
//! name given by the user.

use super::*;

/// The MIDR_EL1 of CPU 0 from sysfs under `root` ("/" for this machine).
pub fn midr_from_sysfs(root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(
        root.join("sys/devices/system/cpu/cpu0/regs/identification/midr_el1"),
    )
    .ok()?;
    parse_hex(&text)
}

pub(super) fn arm_cpu_name(implementer: u32, part: u32) -> Option<String> {
    let cpus: ArmCpusFile = serde_json::from_str(ARM_CPUS_JSON).ok()?;
    let id = (u64::from(implementer) << 12) | u64::from(part);
    cpus.cpus
        .into_iter()
        .find(|c| parse_hex(&c.cpuid) == Some(id) && c.implementer == implementer)
        .map(|c| c.name)
}

/// Matches a CPU to a shipped catalog: Arm by MIDR implementer and part, x86 by vendor.
/// `midr` (from sysfs) is used when the identity has no MIDR fields.
pub fn detect(cpu: &CpuIdentity, midr: Option<u64>) -> Result<CpuMatch, CatalogError> {
    let arm = match (cpu.implementer, cpu.part) {
        (Some(i), Some(p)) => Some((i, p, cpu.midr())),
        _ => midr.map(|m| {
            (
                ((m >> 24) & 0xff) as u32,
                ((m >> 4) & 0xfff) as u32,
                Some(m),
            )
        }),
    };
    if let Some((implementer, part, midr)) = arm {
        let how = match midr {
            Some(m) => format!("MIDR 0x{m:08x}"),
            None => format!("MIDR implementer 0x{implementer:02x} part 0x{part:03x}"),
        };
        for files in ARM {
            let c = load_arm(files)?;
            if c.midr == Some((implementer, part)) {
                return Ok(CpuMatch {
                    catalog: c.id,
                    cpu: c.name,
                    how,
                });
            }
        }
        // No vendor files for this core: the kernel's generic events, said so.
        let name = arm_cpu_name(implementer, part).unwrap_or_else(|| {
            format!("Arm core (implementer 0x{implementer:02x}, part 0x{part:03x})")
        });
        return Ok(CpuMatch {
            catalog: ARM_GENERIC_ID.into(),
            cpu: name,
            how: format!(
                "{how}; no vendor metrics for this core (numalab ships event files for {}): the kernel's generic events only; --cpu-model borrows the closest catalog, --events takes raw codes (r11 = CPU_CYCLES, r8 = INST_RETIRED on every Arm core)",
                arm_cores_text()
            ),
        });
    }
    let arch = cpu.architecture.as_deref().unwrap_or("");
    let vendor = cpu.vendor.as_deref();
    if arch == "x86_64"
        || matches!(
            vendor,
            Some("GenuineIntel") | Some("AuthenticAMD") | Some("HygonGenuine")
        )
    {
        let mut how = vendor
            .map(|v| format!("vendor {v}"))
            .unwrap_or_else(|| "architecture x86_64".into());
        if let (Some(f), Some(m)) = (cpu.family, cpu.model) {
            how.push_str(&format!(" family {f} model {m}"));
        }
        // The model's own catalog (Intel TMA, AMD Zen), or the generic events, said so.
        match x86::detect_x86(vendor, cpu.family, cpu.model, cpu.stepping) {
            Ok(id) => {
                let c = load(id)?;
                if let Some(note) = x86::amd_note(id) {
                    how.push_str(&format!("; {note}"));
                }
                return Ok(CpuMatch {
                    catalog: c.id,
                    cpu: cpu.model_name.clone().unwrap_or(c.name),
                    how,
                });
            }
            Err(why) => how.push_str(&format!(
                "; {why}: the kernel's generic events only (--cpu-model names a catalog: {})",
                x86_ids().join(", ")
            )),
        }
        let c = load_x86(vendor)?;
        return Ok(CpuMatch {
            catalog: c.id,
            cpu: cpu.model_name.clone().unwrap_or(c.name),
            how,
        });
    }
    Err(CatalogError::NoCatalog(format!(
        "cannot tell which event catalog fits this CPU (architecture {:?}, vendor {:?}); use --cpu-model ({})",
        cpu.architecture,
        cpu.vendor,
        shipped().join(", ")
    )))
}

/// Resolves `--cpu-model NAME`: a catalog id, a CPU name ("Neoverse N1"), a short name
/// ("n1"), a product ("ampere-altra", "graviton2"), or a MIDR value ("0x413fd0c1").
pub fn resolve_model(name: &str) -> Result<CpuMatch, CatalogError> {
    let norm = |s: &str| s.trim().to_ascii_lowercase().replace([' ', '_'], "-");
    let n = norm(name);
    let how = format!("--cpu-model {name}");
    if let Some(m) = parse_hex(&n).filter(|_| n.starts_with("0x")) {
        let id = CpuIdentity {
            implementer: Some(((m >> 24) & 0xff) as u32),
            part: Some(((m >> 4) & 0xfff) as u32),
            ..Default::default()
        };
        let mut found = detect(&id, None)?;
        found.how = how;
        return Ok(found);
    }
    let id = if shipped().contains(&n.as_str()) {
        n.clone()
    } else if let Some((_, id)) = PRODUCTS
        .iter()
        .chain(x86::X86_PRODUCTS)
        .find(|(p, _)| *p == n)
    {
        id.to_string()
    } else {
        // A name like "Neoverse N1" normalises to the id.
        let arm_match = ARM.iter().find(|a| a.id == n).map(|a| a.id.to_string());
        match arm_match {
            Some(id) => id,
            None => {
                if let Ok(cpus) = serde_json::from_str::<ArmCpusFile>(ARM_CPUS_JSON) {
                    if let Some(c) = cpus.cpus.iter().find(|c| norm(&c.name) == n) {
                        return Err(CatalogError::NoCatalog(format!(
                            "{} is a known Arm core (cpuid {}), but numalab ships event files for {} only",
                            c.name,
                            c.cpuid,
                            arm_cores_text()
                        )));
                    }
                }
                return Err(CatalogError::Unknown {
                    what: "CPU model".into(),
                    name: name.into(),
                    catalog: "the shipped catalogs".into(),
                    suggestions: suggest(
                        &n,
                        shipped()
                            .iter()
                            .map(|s| s.to_string())
                            .chain(PRODUCTS.iter().map(|(p, _)| p.to_string()))
                            .chain(x86::X86_PRODUCTS.iter().map(|(p, _)| p.to_string())),
                    ),
                });
            }
        }
    };
    let vendor = match n.as_str() {
        "amd" => Some("AuthenticAMD"),
        "intel" => Some("GenuineIntel"),
        _ => None,
    };
    let c = if id == X86_ID {
        load_x86(vendor)?
    } else {
        load(&id)?
    };
    Ok(CpuMatch {
        catalog: c.id,
        cpu: c.name,
        how,
    })
}

/// Loads the catalog a [`CpuMatch`] names (x86 adjusted for the vendor named in `how`;
/// [`perf::PERF_ID`] rebuilt from the installed perf).
pub fn load_match(m: &CpuMatch) -> Result<Catalog, CatalogError> {
    if m.catalog == perf::PERF_ID {
        perf::load_installed(m)
    } else if m.catalog == X86_ID {
        let vendor = ["GenuineIntel", "AuthenticAMD", "HygonGenuine"]
            .into_iter()
            .find(|v| m.how.contains(v) || m.cpu.contains(v));
        let vendor = vendor.or(if m.how.ends_with(" amd") {
            Some("AuthenticAMD")
        } else if m.how.ends_with(" intel") {
            Some("GenuineIntel")
        } else {
            None
        });
        load_x86(vendor)
    } else {
        load(&m.catalog)
    }
}
