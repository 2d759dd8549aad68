//! What happens on the machine while a run is in progress: power and temperature
//! (powercap energy counters, hwmon sensors, through `numalab-sensors`), the clock
//! frequency the run's CPUs actually reached (cpufreq `scaling_cur_freq`), and where
//! the process's pages are (`numa_maps`).
//!
//! Everything is read under a root folder (`/` on the live machine), so the samplers
//! are tested against fixture trees laid out like the kernel's. A machine without
//! these files gets an explicit "not available" with the reason, never a zero.
//! Each power figure carries what it covers: a RAPL package counter, an Arm SoC's
//! "CPU power" and a BMC's wall power are different quantities.

use crate::numa_maps;
use numalab_sensors::{Sensor, SensorKind};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use numalab_records::harness::{
    FrequencyFigures, PageFigures, PowerFigures, RunSamples, SensorFigure, FULL_SIZE_SHARE,
};

/// What to sample during runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingConfig {
    /// Time between samples.
    pub interval_ms: u64,
    /// Root of /sys for sensors and cpufreq (`/` live).
    pub sys_root: PathBuf,
    /// Root of /proc for numa_maps (`/proc` live).
    pub proc_root: PathBuf,
    /// Sample power and temperature sensors.
    pub power: bool,
    /// Sample CPU frequencies.
    pub frequency: bool,
    /// Sample the process group's pages per node.
    pub pages: bool,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        SamplingConfig {
            interval_ms: 250,
            sys_root: PathBuf::from("/"),
            proc_root: PathBuf::from("/proc"),
            power: true,
            frequency: true,
            pages: false,
        }
    }
}

struct SensorState {
    sensor: Sensor,
    first: Option<(u64, Instant)>,
    last: Option<(u64, Instant)>,
    readings: Vec<u64>,
}

/// Power and temperature sampler over the sensors found under a root.
pub struct PowerSampler {
    states: Vec<SensorState>,
    root: PathBuf,
}

impl PowerSampler {
    /// Finds the sensors under `root` (normally `/`).
    pub fn new(root: &Path) -> Self {
        PowerSampler {
            states: numalab_sensors::discover(root)
                .into_iter()
                .map(|sensor| SensorState {
                    sensor,
                    first: None,
                    last: None,
                    readings: Vec::new(),
                })
                .collect(),
            root: root.to_path_buf(),
        }
    }

    /// Takes one reading of every sensor.
    pub fn sample(&mut self) {
        self.sample_at(Instant::now());
    }

    /// Takes one reading, stamped `now` (tests pass their own times).
    pub fn sample_at(&mut self, now: Instant) {
        for s in &mut self.states {
            if let Some(v) = numalab_sensors::read_raw(&s.sensor) {
                if s.first.is_none() {
                    s.first = Some((v, now));
                }
                s.last = Some((v, now));
                s.readings.push(v);
            }
        }
    }

    /// The figures of the readings taken.
    pub fn finish(&self) -> PowerFigures {
        if self.states.is_empty() {
            return PowerFigures {
                not_available: Some(format!(
                    "not available: no readable power sensors (no powercap energy counters or hwmon power/temperature files under {})",
                    self.root.join("sys/class").display()
                )),
                ..Default::default()
            };
        }
        let mut sensors = Vec::new();
        for s in &self.states {
            let n = s.readings.len();
            let mut f = SensorFigure {
                id: s.sensor.id.clone(),
                label: s.sensor.label.clone(),
                covers: s.sensor.covers.clone(),
                kind: s.sensor.kind,
                samples: n,
                energy_j: None,
                mean_w: None,
                max_w: None,
                mean_c: None,
                max_c: None,
            };
            match s.sensor.kind {
                SensorKind::Energy => {
                    if let (Some((a, ta)), Some((b, tb))) = (s.first, s.last) {
                        let secs = tb.duration_since(ta).as_secs_f64();
                        if let Some(w) =
                            numalab_sensors::energy_to_watts(a, b, s.sensor.max_energy_uj, secs)
                        {
                            f.mean_w = Some(w);
                            f.energy_j = Some(w * secs);
                        }
                    }
                }
                SensorKind::Power if n > 0 => {
                    let mean = s.readings.iter().sum::<u64>() as f64 / n as f64 / 1e6;
                    f.mean_w = Some(mean);
                    f.max_w = s.readings.iter().max().map(|m| *m as f64 / 1e6);
                    if let (Some((_, ta)), Some((_, tb))) = (s.first, s.last) {
                        f.energy_j = Some(mean * tb.duration_since(ta).as_secs_f64());
                    }
                }
                SensorKind::Temperature if n > 0 => {
                    f.mean_c = Some(s.readings.iter().sum::<u64>() as f64 / n as f64 / 1e3);
                    f.max_c = s.readings.iter().max().map(|m| *m as f64 / 1e3);
                }
                _ => {}
            }
            sensors.push(f);
        }
        // The total: top-level RAPL zones (packages, not their core/dram sub-zones and
        // not psys, which contains them), else every hwmon power sensor.
        let top_rapl: Vec<&SensorFigure> = sensors
            .iter()
            .filter(|f| {
                f.kind == SensorKind::Energy
                    && f.id.matches(':').count() == 2
                    && f.label.starts_with("package")
                    && f.mean_w.is_some()
            })
            .collect();
        let hwmon_power: Vec<&SensorFigure> = sensors
            .iter()
            .filter(|f| f.kind == SensorKind::Power && f.mean_w.is_some())
            .collect();
        let chosen = if !top_rapl.is_empty() {
            top_rapl
        } else {
            hwmon_power
        };
        let (total_w, total_covers) = if chosen.is_empty() {
            (None, None)
        } else {
            (
                Some(chosen.iter().filter_map(|f| f.mean_w).sum()),
                Some(format!(
                    "sum of {}",
                    chosen
                        .iter()
                        .map(|f| format!("{} [{}]", f.label, f.covers))
                        .collect::<Vec<_>>()
                        .join(" + ")
                )),
            )
        };
        PowerFigures {
            sensors,
            total_w,
            total_covers,
            not_available: None,
        }
    }
}

/// cpufreq sampler for a set of CPUs.
pub struct FrequencySampler {
    files: Vec<PathBuf>,
    cpus: Vec<u32>,
    readings: Vec<u64>,
    rounds: usize,
    nominal_max_khz: Option<u64>,
    root: PathBuf,
}

fn read_u64(p: &Path) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

impl FrequencySampler {
    /// Samples `cpus` under `root`.
    pub fn new(root: &Path, cpus: &[u32]) -> Self {
        let dir = |c: u32| root.join(format!("sys/devices/system/cpu/cpu{c}/cpufreq"));
        let files: Vec<PathBuf> = cpus
            .iter()
            .map(|&c| dir(c).join("scaling_cur_freq"))
            .filter(|p| p.exists())
            .collect();
        let nominal_max_khz = cpus
            .iter()
            .filter_map(|&c| read_u64(&dir(c).join("cpuinfo_max_freq")))
            .max();
        FrequencySampler {
            files,
            cpus: cpus.to_vec(),
            readings: Vec::new(),
            rounds: 0,
            nominal_max_khz,
            root: root.to_path_buf(),
        }
    }

    /// Reads every CPU's current frequency once.
    pub fn sample(&mut self) {
        if self.files.is_empty() {
            return;
        }
        self.rounds += 1;
        for f in &self.files {
            if let Some(v) = read_u64(f) {
                self.readings.push(v);
            }
        }
    }

    /// The figures of the readings taken.
    pub fn finish(&self) -> FrequencyFigures {
        if self.files.is_empty() {
            return FrequencyFigures {
                cpus: self.cpus.clone(),
                not_available: Some(format!(
                    "not available: no cpufreq scaling_cur_freq under {} (no cpufreq driver, e.g. in a VM)",
                    self.root.join("sys/devices/system/cpu").display()
                )),
                ..Default::default()
            };
        }
        let n = self.readings.len();
        FrequencyFigures {
            cpus: self.cpus.clone(),
            samples: self.rounds,
            mean_khz: (n > 0).then(|| self.readings.iter().sum::<u64>() as f64 / n as f64),
            min_khz: self.readings.iter().min().copied(),
            max_khz: self.readings.iter().max().copied(),
            nominal_max_khz: self.nominal_max_khz,
            not_available: None,
        }
    }
}

/// Samples a running process group in a background thread until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<RunSamples>>,
}

impl Sampler {
    /// Starts sampling the process group `pgid` running on `cpus`.
    pub fn start(config: &SamplingConfig, pgid: i32, cpus: &[u32]) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let config = config.clone();
        let cpus = cpus.to_vec();
        let handle = std::thread::spawn(move || {
            let mut power = config.power.then(|| PowerSampler::new(&config.sys_root));
            let mut freq = config
                .frequency
                .then(|| FrequencySampler::new(&config.sys_root, &cpus));
            let mut pages = config.pages.then(PageFigures::default);
            let started = Instant::now();
            let interval = Duration::from_millis(config.interval_ms.max(10));
            loop {
                if let Some(p) = &mut power {
                    p.sample();
                }
                if let Some(f) = &mut freq {
                    f.sample();
                }
                if let Some(pg) = &mut pages {
                    if let Some(b) = numa_maps::read_group(&config.proc_root, pgid) {
                        pg.samples += 1;
                        pg.series
                            .push((started.elapsed().as_millis() as u64, b.data.clone()));
                        pg.observe(b);
                    }
                }
                // Sleep in small steps so that stopping is prompt.
                let next = Instant::now() + interval;
                while Instant::now() < next {
                    if flag.load(Ordering::SeqCst) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5).min(interval));
                }
                if flag.load(Ordering::SeqCst) {
                    break;
                }
            }
            // One last reading of the counters at the end of the run.
            if let Some(p) = &mut power {
                p.sample();
            }
            if let Some(pg) = &mut pages {
                if pg.samples == 0 {
                    pg.not_available = Some(
                        "not available: the run ended before numa_maps could be read (runs shorter than the sampling interval, or /proc not readable)".into(),
                    );
                }
                // Keep the series short in records: at most 200 points.
                if pg.series.len() > 200 {
                    let step = pg.series.len().div_ceil(200);
                    pg.series = pg.series.iter().step_by(step).cloned().collect();
                }
            }
            RunSamples {
                power: power.map(|p| p.finish()),
                frequency: freq.map(|f| f.finish()),
                pages,
            }
        });
        Sampler {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops sampling and returns what was sampled.
    pub fn finish(mut self) -> RunSamples {
        self.stop.store(true, Ordering::SeqCst);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numa_maps::NodeBytes;

    use numalab_testkit::write;

    /// A tree like a dual-socket Intel machine's powercap plus an Altra-like hwmon chip.
    fn tree(root: &Path) {
        write(root, "sys/class/powercap/intel-rapl:0/name", "package-0\n");
        write(
            root,
            "sys/class/powercap/intel-rapl:0/energy_uj",
            "1000000\n",
        );
        write(
            root,
            "sys/class/powercap/intel-rapl:0/max_energy_range_uj",
            "262143328850\n",
        );
        write(root, "sys/class/powercap/intel-rapl:1/name", "package-1\n");
        write(
            root,
            "sys/class/powercap/intel-rapl:1/energy_uj",
            "5000000\n",
        );
        write(root, "sys/class/powercap/intel-rapl:0:0/name", "dram\n");
        write(root, "sys/class/powercap/intel-rapl:0:0/energy_uj", "0\n");
        write(root, "sys/class/hwmon/hwmon0/name", "smpro\n");
        write(root, "sys/class/hwmon/hwmon0/power1_input", "150000000\n");
        write(root, "sys/class/hwmon/hwmon0/power1_label", "CPU power\n");
        write(root, "sys/class/hwmon/hwmon0/temp1_input", "65000\n");
        write(
            root,
            "sys/class/hwmon/hwmon0/temp1_label",
            "SoC Temperature\n",
        );
    }

    #[test]
    fn energy_counters_power_and_temperature_over_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        tree(r);
        let mut s = PowerSampler::new(r);
        let t0 = Instant::now();
        s.sample_at(t0);
        // Two seconds later: package 0 used 200 J, package 1 100 J.
        write(
            r,
            "sys/class/powercap/intel-rapl:0/energy_uj",
            "201000000\n",
        );
        write(
            r,
            "sys/class/powercap/intel-rapl:1/energy_uj",
            "105000000\n",
        );
        write(
            r,
            "sys/class/powercap/intel-rapl:0:0/energy_uj",
            "20000000\n",
        );
        write(r, "sys/class/hwmon/hwmon0/power1_input", "160000000\n");
        write(r, "sys/class/hwmon/hwmon0/temp1_input", "69000\n");
        s.sample_at(t0 + Duration::from_secs(2));
        let f = s.finish();
        assert!(f.not_available.is_none());
        let by_id = |id: &str| f.sensors.iter().find(|x| x.id == id).unwrap();
        let p0 = by_id("powercap:intel-rapl:0");
        assert!((p0.mean_w.unwrap() - 100.0).abs() < 1e-9);
        assert!((p0.energy_j.unwrap() - 200.0).abs() < 1e-9);
        assert!((by_id("powercap:intel-rapl:1").mean_w.unwrap() - 50.0).abs() < 1e-9);
        let cpu = by_id("hwmon:hwmon0:power1");
        assert!((cpu.mean_w.unwrap() - 155.0).abs() < 1e-9);
        assert_eq!(cpu.max_w, Some(160.0));
        let t = by_id("hwmon:hwmon0:temp1");
        assert_eq!((t.mean_c, t.max_c), (Some(67.0), Some(69.0)));
        // The total is the two packages (not the DRAM sub-zone, not hwmon twice).
        assert!((f.total_w.unwrap() - 150.0).abs() < 1e-9);
        let covers = f.total_covers.unwrap();
        assert!(covers.contains("package-0") && covers.contains("package-1"));
        assert!(!covers.contains("dram") && !covers.contains("CPU power"));
    }

    #[test]
    fn hwmon_only_machines_use_their_power_sensors() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "sys/class/hwmon/hwmon3/name", "smpro\n");
        write(r, "sys/class/hwmon/hwmon3/power1_input", "150000000\n");
        write(r, "sys/class/hwmon/hwmon3/power1_label", "CPU power\n");
        write(r, "sys/class/hwmon/hwmon3/power2_input", "30000000\n");
        write(r, "sys/class/hwmon/hwmon3/power2_label", "IO power\n");
        let mut s = PowerSampler::new(r);
        s.sample();
        let f = s.finish();
        assert!((f.total_w.unwrap() - 180.0).abs() < 1e-9);
        let c = f.total_covers.unwrap();
        assert!(c.contains("CPU power") && c.contains("IO power"), "{c}");
    }

    #[test]
    fn no_sensors_is_said_not_zeroed() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = PowerSampler::new(dir.path());
        s.sample();
        let f = s.finish();
        assert!(f.sensors.is_empty() && f.total_w.is_none());
        assert!(f
            .not_available
            .unwrap()
            .contains("no readable power sensors"));
        let mut q = FrequencySampler::new(dir.path(), &[0, 1]);
        q.sample();
        let g = q.finish();
        assert!(g.mean_khz.is_none());
        assert!(g.not_available.unwrap().contains("no cpufreq"));
    }

    #[test]
    fn frequencies_of_the_run_cpus() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for (c, khz) in [(0, 3_000_000), (1, 2_800_000), (2, 1_000_000)] {
            let base = format!("sys/devices/system/cpu/cpu{c}/cpufreq");
            write(r, &format!("{base}/scaling_cur_freq"), &format!("{khz}\n"));
            write(r, &format!("{base}/cpuinfo_max_freq"), "3000000\n");
        }
        let mut s = FrequencySampler::new(r, &[0, 1]);
        s.sample();
        write(
            r,
            "sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq",
            "2600000\n",
        );
        s.sample();
        let f = s.finish();
        assert_eq!(f.samples, 2);
        assert_eq!(f.min_khz, Some(2_600_000));
        assert_eq!(f.max_khz, Some(3_000_000));
        assert!((f.mean_khz.unwrap() - 2_850_000.0).abs() < 1e-6);
        assert_eq!(f.nominal_max_khz, Some(3_000_000));
    }

    fn on_nodes(pairs: &[(u32, u64)]) -> NodeBytes {
        NodeBytes {
            data: pairs.iter().copied().collect(),
            all: pairs.iter().copied().collect(),
        }
    }

    #[test]
    fn the_footprint_is_the_latest_full_size_sample() {
        let mut pg = PageFigures::default();
        // Mid-touch with four thread stacks (100), then the complete data after the
        // threads ended (97): the complete data is the footprint.
        pg.observe(on_nodes(&[(0, 60), (1, 40)]));
        pg.observe(on_nodes(&[(0, 48), (1, 49)]));
        assert_eq!(pg.peak, Some(on_nodes(&[(0, 48), (1, 49)])));
        assert_eq!(pg.largest_bytes, 100);
        // A program that frees most of its memory before exiting: the full-size sample
        // stays.
        pg.observe(on_nodes(&[(0, 10)]));
        assert_eq!(pg.peak, Some(on_nodes(&[(0, 48), (1, 49)])));
        // Growth past the earlier largest: the new sample.
        pg.observe(on_nodes(&[(0, 150)]));
        assert_eq!(pg.peak, Some(on_nodes(&[(0, 150)])));
        assert_eq!(pg.largest_bytes, 150);
    }

    #[test]
    fn the_sampler_thread_reads_a_live_group() {
        let config = SamplingConfig {
            interval_ms: 10,
            pages: true,
            ..Default::default()
        };
        let pgid = crate::sys::process_group();
        let s = Sampler::start(&config, pgid, &[0]);
        std::thread::sleep(Duration::from_millis(60));
        let out = s.finish();
        let pages = out.pages.unwrap();
        assert!(pages.samples >= 1);
        assert!(pages.peak.unwrap().data_total() > 0);
        assert!(out.power.is_some() && out.frequency.is_some());
    }
}
