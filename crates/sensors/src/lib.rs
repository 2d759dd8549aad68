//! Power, temperature and frequency sensors.
//!
//! Two kernel interfaces report power: powercap (Intel/AMD RAPL energy counters in
//! microjoules, `/sys/class/powercap/intel-rapl:N`) and hwmon (instantaneous power in
//! microwatts and temperatures in millidegrees, `/sys/class/hwmon/hwmonN`; an Ampere
//! Altra labels them "CPU power", "IO power", "SoC Temperature"). Each sensor says
//! what it covers, because a package RAPL figure, an SoC hwmon figure and a BMC's
//! wall figure are not the same thing. Everything is read under a root folder so that
//! tests run against fixture trees laid out like the kernel's.
//!
//! A sensor as recorded ([`Sensor`], [`SensorKind`]) is defined in `numalab-records`
//! and re-exported here; this crate finds sensors and reads them ([`read_raw`]).

pub use numalab_records::sensors::{Sensor, SensorKind};
use std::path::{Path, PathBuf};

/// Reads a sensor's raw value (microjoules, microwatts or millidegrees).
pub fn read_raw(sensor: &Sensor) -> Option<u64> {
    std::fs::read_to_string(&sensor.path)
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Explains what a powercap zone covers.
fn rapl_covers(name: &str) -> String {
    match name {
        n if n.starts_with("package") => {
            format!("{n} (RAPL): cores, caches and uncore of one package, not DRAM, fans or PSU")
        }
        "core" | "pp0" => "RAPL core domain: the cores only".into(),
        "uncore" | "pp1" => "RAPL uncore/graphics domain".into(),
        "dram" => "RAPL DRAM domain: memory attached to the package".into(),
        "psys" => "RAPL platform domain (psys): the SoC platform as the firmware defines it".into(),
        other => format!("powercap zone {other}"),
    }
}

/// Explains what an hwmon power or temperature sensor covers.
fn hwmon_covers(chip: &str, label: &str) -> String {
    let l = label.to_ascii_lowercase();
    if l.contains("cpu power") {
        format!("{chip} \"{label}\": CPU cores and caches of the SoC (hwmon)")
    } else if l.contains("io power") {
        format!("{chip} \"{label}\": SoC I/O (PCIe, memory controllers' I/O) (hwmon)")
    } else {
        format!("{chip} \"{label}\" (hwmon)")
    }
}

/// Finds every readable power, energy and temperature sensor under `root` (normally `/`).
pub fn discover(root: &Path) -> Vec<Sensor> {
    let mut out = Vec::new();
    let powercap = root.join("sys/class/powercap");
    if let Ok(entries) = std::fs::read_dir(&powercap) {
        let mut zones: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        zones.sort();
        for z in zones {
            let dir_name = z
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            let energy = z.join("energy_uj");
            if !energy.exists() || read_trim(&energy).is_none() {
                continue;
            }
            let name = read_trim(&z.join("name")).unwrap_or_else(|| dir_name.clone());
            out.push(Sensor {
                id: format!("powercap:{dir_name}"),
                kind: SensorKind::Energy,
                covers: rapl_covers(&name),
                label: name,
                path: energy,
                max_energy_uj: read_trim(&z.join("max_energy_range_uj"))
                    .and_then(|v| v.parse().ok()),
            });
        }
    }
    let hwmon = root.join("sys/class/hwmon");
    if let Ok(entries) = std::fs::read_dir(&hwmon) {
        let mut chips: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        chips.sort();
        for chip_dir in chips {
            let chip_id = chip_dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            let chip = read_trim(&chip_dir.join("name")).unwrap_or_else(|| chip_id.clone());
            let Ok(files) = std::fs::read_dir(&chip_dir) else {
                continue;
            };
            let mut names: Vec<String> = files
                .flatten()
                .map(|f| f.file_name().to_string_lossy().to_string())
                .collect();
            names.sort();
            for f in names {
                let (kind, base) = if let Some(b) =
                    f.strip_suffix("_input").filter(|b| b.starts_with("power"))
                {
                    (SensorKind::Power, b.to_string())
                } else if let Some(b) = f.strip_suffix("_input").filter(|b| b.starts_with("temp")) {
                    (SensorKind::Temperature, b.to_string())
                } else {
                    continue;
                };
                let path = chip_dir.join(&f);
                if read_trim(&path)
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_none()
                {
                    continue;
                }
                let label = read_trim(&chip_dir.join(format!("{base}_label")))
                    .unwrap_or_else(|| base.clone());
                out.push(Sensor {
                    id: format!("hwmon:{chip_id}:{base}"),
                    kind,
                    covers: hwmon_covers(&chip, &label),
                    label,
                    path,
                    max_energy_uj: None,
                });
            }
        }
    }
    out
}

/// Average power in watts between two readings of an energy counter taken `seconds`
/// apart, handling one wrap of the counter.
pub fn energy_to_watts(
    before_uj: u64,
    after_uj: u64,
    max_uj: Option<u64>,
    seconds: f64,
) -> Option<f64> {
    if seconds <= 0.0 {
        return None;
    }
    let delta = if after_uj >= before_uj {
        after_uj - before_uj
    } else {
        max_uj? - before_uj + after_uj
    };
    Some(delta as f64 / 1e6 / seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    use numalab_testkit::write;

    #[test]
    fn finds_rapl_and_altra_hwmon_sensors() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "sys/class/powercap/intel-rapl:0/name", "package-0\n");
        write(
            r,
            "sys/class/powercap/intel-rapl:0/energy_uj",
            "123456789\n",
        );
        write(
            r,
            "sys/class/powercap/intel-rapl:0/max_energy_range_uj",
            "262143328850\n",
        );
        write(r, "sys/class/hwmon/hwmon0/name", "smpro\n");
        write(r, "sys/class/hwmon/hwmon0/power1_input", "152000000\n");
        write(r, "sys/class/hwmon/hwmon0/power1_label", "CPU power\n");
        write(r, "sys/class/hwmon/hwmon0/power2_input", "33000000\n");
        write(r, "sys/class/hwmon/hwmon0/power2_label", "IO power\n");
        write(r, "sys/class/hwmon/hwmon0/temp1_input", "68000\n");
        write(r, "sys/class/hwmon/hwmon0/temp1_label", "SoC Temperature\n");
        write(r, "sys/class/hwmon/hwmon0/temp2_input", "garbage\n");
        let s = discover(r);
        let ids: Vec<&str> = s.iter().map(|x| x.id.as_str()).collect();
        assert_eq!(
            ids,
            vec![
                "powercap:intel-rapl:0",
                "hwmon:hwmon0:power1",
                "hwmon:hwmon0:power2",
                "hwmon:hwmon0:temp1"
            ]
        );
        assert_eq!(s[0].kind, SensorKind::Energy);
        assert_eq!(s[0].max_energy_uj, Some(262143328850));
        assert!(s[0].covers.contains("not DRAM"));
        assert_eq!(s[1].label, "CPU power");
        assert_eq!(read_raw(&s[1]), Some(152_000_000));
        assert!(s[2].covers.contains("I/O"));
        assert_eq!(s[3].kind, SensorKind::Temperature);
        assert!(discover(&r.join("nothing")).is_empty());
    }

    #[test]
    fn energy_counter_wraps() {
        assert_eq!(energy_to_watts(1_000_000, 3_000_000, None, 2.0), Some(1.0));
        assert_eq!(
            energy_to_watts(900, 100, Some(1000), 1.0),
            Some(200.0 / 1e6)
        );
        assert_eq!(energy_to_watts(900, 100, None, 1.0), None);
        assert_eq!(energy_to_watts(1, 2, None, 0.0), None);
    }
}
