//! The BMC's power sensors in its sensor data records, as `ipmitool` lists them, and
//! the choice of which make the node's power.
//!
//! Three layouts are understood, all `|`-separated:
//! `sdr elist [full]` / `sdr type ...` (`PS1 Input Power | 70h | ok | 10.1 | 200 Watts`),
//! `sdr list` (`Pwr Consumption | 300 Watts | ok`) and `sensor list`
//! (`Total_Power | 412.000 | Watts | ok | na | ...`). Only sensors whose unit is Watts
//! are kept.
//!
//! Which make the node's power: a total sensor when there is one ("Total_Power",
//! "Pwr Consumption", "System Power", "Power Meter", ...); else the sum of the
//! power-supply input sensors ("PS1 Input Power", "PSU2_PIN", ...); never component
//! sensors (CPU, memory, fans), never power-supply outputs. The caller may instead
//! name the sensors to sum.

use crate::error::BmcError;
use numalab_records::bmc::PowerPart;

/// What a power sensor measures, judged from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerSensorRole {
    /// The whole node or system ("Total_Power", "Pwr Consumption", "Sys Power").
    Total,
    /// One power supply's input (AC side).
    SupplyInput,
    /// One power supply's output (DC side): not at the wall.
    SupplyOutput,
    /// A component (CPU, memory, fan, storage, a board rail) or unknown.
    Other,
}

/// One sensor with unit Watts.
#[derive(Debug, Clone, PartialEq)]
pub struct SdrPowerSensor {
    /// The sensor's name as the BMC gives it.
    pub name: String,
    /// Its value in watts; `None` when the BMC had no reading ("na", "no reading").
    pub watts: Option<f64>,
    /// What it measures, from its name.
    pub role: PowerSensorRole,
}

/// Which sensors make the node's power, and the figure.
#[derive(Debug, Clone, PartialEq)]
pub struct SdrChoice {
    /// Node power, in watts.
    pub watts: f64,
    /// The sensors summed (one for a total sensor).
    pub used: Vec<String>,
    /// How, in words.
    pub method: String,
    /// Every Watts sensor with a value, marked used or not.
    pub parts: Vec<PowerPart>,
}

/// Finds the sensors with unit Watts in `ipmitool sdr`/`sensor` output.
pub fn parse(text: &str) -> Vec<SdrPowerSensor> {
    let mut out = Vec::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        if cols.len() < 2 || cols[0].is_empty() {
            continue;
        }
        let name = cols[0];
        let mut found: Option<Option<f64>> = None;
        for (i, c) in cols.iter().enumerate().skip(1) {
            // "200 Watts" in one column (sdr list / elist).
            if let Some(num) = strip_unit(c) {
                found = Some(num.trim().parse::<f64>().ok());
                break;
            }
            // "Watts" alone after the value column (sensor list).
            if c.eq_ignore_ascii_case("watts") && i >= 2 {
                found = Some(cols[i - 1].parse::<f64>().ok());
                break;
            }
        }
        if let Some(watts) = found {
            out.push(SdrPowerSensor {
                name: name.to_string(),
                watts: watts.filter(|w| w.is_finite()),
                role: role_of(name),
            });
        }
    }
    out
}

fn strip_unit(col: &str) -> Option<&str> {
    let lower = col.to_ascii_lowercase();
    if lower.ends_with(" watts") && col.len() > 6 {
        Some(&col[..col.len() - 6])
    } else {
        None
    }
}

/// Judges what a power sensor measures from its name.
pub fn role_of(name: &str) -> PowerSensorRole {
    let n = name.to_ascii_lowercase().replace(['_', '-', '.'], " ");
    let words: Vec<&str> = n.split_whitespace().collect();
    let has = |w: &str| n.contains(w);
    let component = [
        "cpu", "proc", "mem", "dimm", "dram", "fan", "gpu", "hdd", "ssd", "nvme", "disk",
        "storage", "pcie", "nic", "vrm", "soc", "core", "riser", "slot",
    ];
    let is_psu = words.iter().any(|w| {
        w.starts_with("psu")
            || *w == "ps"
            || (w.starts_with("ps") && w[2..].chars().next().is_some_and(|c| c.is_ascii_digit()))
            || w.starts_with("pws")
    }) || has("power supply");
    if is_psu {
        let out = words
            .iter()
            .any(|w| *w == "out" || *w == "output" || w.ends_with("pout") || *w == "pout");
        let input = words.iter().any(|w| {
            *w == "in" || *w == "input" || w.ends_with("pin") || *w == "pin" || *w == "ac"
        });
        return if input && !out {
            PowerSensorRole::SupplyInput
        } else if out {
            PowerSensorRole::SupplyOutput
        } else {
            PowerSensorRole::Other
        };
    }
    if words
        .iter()
        .any(|w| component.iter().any(|c| w.starts_with(c)))
    {
        return PowerSensorRole::Other;
    }
    let total = has("total")
        || has("consumption")
        || has("power meter")
        || has("sys power")
        || has("system power")
        || has("node power")
        || has("platform power")
        || has("chassis power")
        || has("server power")
        || has("input power")
        || has("ac power")
        || words.first().is_some_and(|w| *w == "pwr" || *w == "power") && words.len() <= 2;
    if total {
        PowerSensorRole::Total
    } else {
        PowerSensorRole::Other
    }
}

/// Chooses the sensors that make the node's power. With `names`, the named sensors
/// are summed (each must be present with a value); otherwise the first total sensor,
/// or else the sum of the power-supply input sensors.
pub fn choose(sensors: &[SdrPowerSensor], names: &[String]) -> Result<SdrChoice, BmcError> {
    let with_value: Vec<(&SdrPowerSensor, f64)> = sensors
        .iter()
        .filter_map(|s| s.watts.map(|w| (s, w)))
        .collect();
    let listing = || {
        if sensors.is_empty() {
            "the BMC lists no sensor with unit Watts".to_string()
        } else {
            let names: Vec<String> = sensors
                .iter()
                .map(|s| match s.watts {
                    Some(w) => format!("{} = {w} W", s.name),
                    None => format!("{} (no reading)", s.name),
                })
                .collect();
            format!("Watts sensors: {}", names.join(", "))
        }
    };
    let (used, method): (Vec<&str>, String) = if !names.is_empty() {
        for n in names {
            if !with_value.iter().any(|(s, _)| &s.name == n) {
                return Err(BmcError::NoPower(format!(
                    "sensor {n:?} not found or without a reading; {}",
                    listing()
                )));
            }
        }
        (
            names.iter().map(String::as_str).collect(),
            if names.len() == 1 {
                "the sensor named in the settings".into()
            } else {
                "sum of the sensors named in the settings".into()
            },
        )
    } else if let Some((s, _)) = with_value
        .iter()
        .find(|(s, _)| s.role == PowerSensorRole::Total)
    {
        (vec![s.name.as_str()], "the BMC's total power sensor".into())
    } else {
        let inputs: Vec<&str> = with_value
            .iter()
            .filter(|(s, _)| s.role == PowerSensorRole::SupplyInput)
            .map(|(s, _)| s.name.as_str())
            .collect();
        if inputs.is_empty() {
            return Err(BmcError::NoPower(format!(
                "no total power sensor and no power-supply input sensor with a reading; {}",
                listing()
            )));
        }
        (
            inputs,
            "sum of the power-supply input sensors (no total sensor found)".into(),
        )
    };
    let watts = with_value
        .iter()
        .filter(|(s, _)| used.contains(&s.name.as_str()))
        .map(|(_, w)| w)
        .sum();
    let parts = with_value
        .iter()
        .map(|(s, w)| PowerPart {
            name: s.name.clone(),
            watts: *w,
            used: used.contains(&s.name.as_str()),
        })
        .collect();
    Ok(SdrChoice {
        watts,
        used: used.iter().map(|s| s.to_string()).collect(),
        method,
        parts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Layouts of ipmitool 1.8.19; the sensor names are ones BMCs commonly use, the
    // values are constructed.
    const ELIST: &str = "\
PS1 Input Power  | 70h | ok  | 10.1 | 200 Watts
PS2 Input Power  | 71h | ok  | 10.2 | 180 Watts
PS1 Output Power | 72h | ok  | 10.1 | 170 Watts
CPU1 Power       | 73h | ok  |  3.1 | 95 Watts
Inlet Temp       | 04h | ok  | 64.1 | 24 degrees C
PS3 Input Power  | 74h | ns  | 10.3 | No Reading
";

    #[test]
    fn power_supply_inputs_are_summed_without_a_total() {
        let s = parse(ELIST);
        assert_eq!(s.len(), 4, "{s:?}");
        let c = choose(&s, &[]).unwrap();
        assert_eq!(c.watts, 380.0);
        assert_eq!(c.used, ["PS1 Input Power", "PS2 Input Power"]);
        assert!(c.method.contains("sum"));
        assert!(c.parts.iter().any(|p| p.name == "CPU1 Power" && !p.used));
    }

    #[test]
    fn a_total_sensor_wins() {
        let text = format!("{ELIST}Pwr Consumption  | 77h | ok  |  7.1 | 392 Watts\n");
        let c = choose(&parse(&text), &[]).unwrap();
        assert_eq!(
            (c.watts, c.used.clone()),
            (392.0, vec!["Pwr Consumption".to_string()])
        );
    }

    #[test]
    fn sensor_list_and_sdr_list_layouts() {
        let sensor_list = "\
Total_Power      | 412.000    | Watts      | ok    | na        | na        | na        | na        | na        | na
CPU_Power        | 150.000    | Watts      | ok    | na        | na        | na        | na        | na        | na
FAN1             | 4200.000   | RPM        | ok    | na        | 300.000   | 500.000   | na        | na        | na
PSU1_PIN         | na         | Watts      | na    | na        | na        | na        | na        | na        | na
";
        let s = parse(sensor_list);
        assert_eq!(s.len(), 3);
        assert_eq!(s[2].watts, None);
        let c = choose(&s, &[]).unwrap();
        assert_eq!((c.watts, c.used[0].as_str()), (412.0, "Total_Power"));
        let sdr_list = "Pwr Consumption  | 300 Watts         | ok\nTemp             | 40 degrees C      | ok\n";
        assert_eq!(choose(&parse(sdr_list), &[]).unwrap().watts, 300.0);
    }

    #[test]
    fn roles_from_names() {
        use PowerSensorRole::*;
        for (name, role) in [
            ("PS1 Input Power", SupplyInput),
            ("PSU2_PIN", SupplyInput),
            ("PS2 Power In", SupplyInput),
            ("PSU1_POUT", SupplyOutput),
            ("PS1 Output Power", SupplyOutput),
            ("Total_Power", Total),
            ("Pwr Consumption", Total),
            ("Sys Power", Total),
            ("Power Meter", Total),
            ("CPU Power", Other),
            ("Memory Power", Other),
            ("FAN_PWR", Other),
        ] {
            assert_eq!(role_of(name), role, "{name}");
        }
    }

    #[test]
    fn named_sensors_and_nothing_usable() {
        let s = parse(ELIST);
        let c = choose(&s, &["CPU1 Power".into()]).unwrap();
        assert_eq!(c.watts, 95.0);
        let e = choose(&s, &["Nope".into()]).unwrap_err().to_string();
        assert!(e.contains("Nope") && e.contains("PS1 Input Power"), "{e}");
        let only_cpu = parse("CPU1 Power | 73h | ok | 3.1 | 95 Watts\n");
        let e = choose(&only_cpu, &[]).unwrap_err().to_string();
        assert!(
            e.contains("no total power sensor") && e.contains("CPU1 Power = 95 W"),
            "{e}"
        );
        assert!(choose(&[], &[])
            .unwrap_err()
            .to_string()
            .contains("no sensor with unit Watts"));
    }
}
