//! Power and temperature during the measured window, from the machine's sensors, and
//! the CPU time of the process, its threads and the clients' CPUs.

use super::*;

pub(super) use crate::sys::{process_cpu_s, thread_cpu_s};

/// (busy, steal, total) ticks of some CPUs from /proc/stat.
pub(super) fn cpu_ticks(sys: &SysRoot, pus: &[u32]) -> Option<(u64, u64, u64)> {
    let text = sys.read("proc/stat")?;
    let mut acc = (0u64, 0u64, 0u64);
    let mut found = 0;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(name) = f.next() else { continue };
        let Some(id) = name.strip_prefix("cpu").and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if !pus.contains(&id) {
            continue;
        }
        let v: Vec<u64> = f.take(8).filter_map(|x| x.parse().ok()).collect();
        if v.len() < 8 {
            return None;
        }
        // user nice system idle iowait irq softirq steal
        acc.0 += v[0] + v[1] + v[2] + v[5] + v[6];
        acc.1 += v[7];
        acc.2 += v.iter().sum::<u64>();
        found += 1;
    }
    (found == pus.len()).then_some(acc)
}

/// Reads power and temperature sensors around the window.
pub(super) struct PowerMeter {
    pub(super) sensors: Vec<Sensor>,
    pub(super) energy_start: Vec<Option<u64>>,
    pub(super) sum: Vec<f64>,
    pub(super) n: Vec<u32>,
    pub(super) max: Vec<f64>,
}

impl PowerMeter {
    pub(super) fn new(root: &std::path::Path) -> Self {
        let sensors = numalab_sensors::discover(root);
        let k = sensors.len();
        PowerMeter {
            sensors,
            energy_start: vec![None; k],
            sum: vec![0.0; k],
            n: vec![0; k],
            max: vec![f64::MIN; k],
        }
    }

    pub(super) fn start(&mut self) {
        for (i, s) in self.sensors.iter().enumerate() {
            if s.kind == SensorKind::Energy {
                self.energy_start[i] = numalab_sensors::read_raw(s);
            }
        }
        self.sample();
    }

    pub(super) fn sample(&mut self) {
        for (i, s) in self.sensors.iter().enumerate() {
            let scale = match s.kind {
                SensorKind::Power => 1e-6,       // microwatts
                SensorKind::Temperature => 1e-3, // millidegrees
                SensorKind::Energy => continue,
            };
            if let Some(raw) = numalab_sensors::read_raw(s) {
                let v = raw as f64 * scale;
                self.sum[i] += v;
                self.n[i] += 1;
                self.max[i] = self.max[i].max(v);
            }
        }
    }

    /// (power readings, temperatures, total watts, what it covers, reason if none).
    #[allow(clippy::type_complexity)]
    pub(super) fn finish(
        mut self,
        seconds: f64,
    ) -> (
        Vec<PowerReading>,
        Vec<TemperatureReading>,
        Option<f64>,
        Option<String>,
        Option<String>,
    ) {
        self.sample();
        let mut power = Vec::new();
        let mut temps = Vec::new();
        for (i, s) in self.sensors.iter().enumerate() {
            match s.kind {
                SensorKind::Energy => {
                    let watts = match (self.energy_start[i], numalab_sensors::read_raw(s)) {
                        (Some(a), Some(b)) => {
                            numalab_sensors::energy_to_watts(a, b, s.max_energy_uj, seconds)
                        }
                        _ => None,
                    };
                    power.push(PowerReading {
                        id: s.id.clone(),
                        label: s.label.clone(),
                        covers: s.covers.clone(),
                        watts,
                        readings: 2,
                    });
                }
                SensorKind::Power => power.push(PowerReading {
                    id: s.id.clone(),
                    label: s.label.clone(),
                    covers: s.covers.clone(),
                    watts: (self.n[i] > 0).then(|| self.sum[i] / self.n[i] as f64),
                    readings: self.n[i],
                }),
                SensorKind::Temperature => {
                    if self.n[i] > 0 {
                        temps.push(TemperatureReading {
                            id: s.id.clone(),
                            label: s.label.clone(),
                            max_c: self.max[i],
                            mean_c: self.sum[i] / self.n[i] as f64,
                        })
                    }
                }
            }
        }
        // Which sensors add up to "the power": RAPL packages, else RAPL psys, else the
        // hwmon power sensors (an Altra's CPU and IO power). Never a mix that double
        // counts.
        let readable: Vec<&PowerReading> = power.iter().filter(|p| p.watts.is_some()).collect();
        let is_energy = |p: &PowerReading| p.id.starts_with("powercap:");
        let groups: [Box<dyn Fn(&PowerReading) -> bool>; 3] = [
            Box::new(|p: &PowerReading| is_energy(p) && p.label.starts_with("package")),
            Box::new(|p: &PowerReading| is_energy(p) && p.label == "psys"),
            Box::new(|p: &PowerReading| !is_energy(p)),
        ];
        for g in &groups {
            let chosen: Vec<&&PowerReading> = readable.iter().filter(|p| g(p)).collect();
            if !chosen.is_empty() {
                let total = chosen.iter().filter_map(|p| p.watts).sum();
                let covers = chosen
                    .iter()
                    .map(|p| p.covers.as_str())
                    .collect::<Vec<_>>()
                    .join("; ");
                return (power, temps, Some(total), Some(covers), None);
            }
        }
        let reason = if self
            .sensors
            .iter()
            .any(|s| s.kind != SensorKind::Temperature)
        {
            "power sensors exist but could not be read (RAPL energy counters need root on recent kernels)".to_string()
        } else {
            "not available: no powercap (RAPL) energy counter and no hwmon power sensor on this machine".to_string()
        };
        (power, temps, None, None, Some(reason))
    }
}
