//! The sensor-record path against OpenIPMI's BMC simulator (`ipmi_sim`, Debian package
//! `openipmi`) on 127.0.0.1, read with the real `ipmitool -I lanplus` (package
//! `ipmitool`). The simulator gets an MC whose SDR repository holds two power-supply
//! input sensors, a CPU power sensor (all unit Watts) and a temperature sensor, built
//! here from the IPMI 2.0 Full Sensor Record layout. Skipped, saying why, only when a
//! program is absent.

use crate::common::{assert_clean, wait_for, which, PLANTED};
use numalab_bmc::{
    BmcAccess, BmcError, BmcSourceKind, DcmiMode, IpmiConfig, IpmiDcmiSource, IpmiLan,
    IpmiPassword, IpmiSdrSource, PowerSource, Sampler, SdrListing, Secret,
};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const USER: &str = "numalab";

/// A Full Sensor Record (IPMI 2.0, section 43.1) for a linear threshold sensor owned by
/// the BMC (0x20, LUN 0): reading = m * raw, in `unit` (6 = Watts, 1 = degrees C).
fn full_sensor_record(
    id: u16,
    number: u8,
    name: &str,
    sensor_type: u8,
    unit: u8,
    m: u8,
) -> Vec<u8> {
    let mut body = vec![
        0x20,
        0x00,
        number, // owner, LUN, sensor number
        0x0a,
        0x01, // entity: power supply, instance 1
        0x7f, // initialisation: scanning, events, thresholds, hysteresis, type
        0x68, // capabilities
        sensor_type,
        0x01, // event/reading type: threshold
        0,
        0,
        0,
        0,
        0,
        0,    // event masks, reading masks
        0x00, // units 1: unsigned, no rate, no modifier
        unit,
        0x00, // base unit, modifier unit
        0x00, // linear
        m,
        0x00, // M, M high bits and tolerance
        0x00,
        0x00, // B, B high bits and accuracy
        0x00,
        0x00, // accuracy high bits, R and B exponents 0
        0x00, // analog characteristics
        0x00,
        0x00,
        0x00, // nominal, normal max, normal min
        0xff,
        0x00, // sensor maximum, minimum
        0,
        0,
        0,
        0,
        0,
        0, // thresholds
        0,
        0, // hysteresis
        0,
        0,                       // reserved
        0,                       // OEM
        0xc0 | name.len() as u8, // ID string: 8-bit ASCII, length
    ];
    body.extend_from_slice(name.as_bytes());
    let mut rec = vec![
        (id & 0xff) as u8,
        (id >> 8) as u8,
        0x51,
        0x01,
        body.len() as u8,
    ];
    rec.extend(body);
    rec
}

/// (number, name, sensor type, unit, M, raw value)
const SENSORS: [(u8, &str, u8, u8, u8, u8); 4] = [
    (1, "PS1 Input Power", 0x0b, 6, 2, 100), // 200 W
    (2, "PS2 Input Power", 0x0b, 6, 2, 90),  // 180 W
    (3, "CPU1 Power", 0x0b, 6, 1, 95),       // 95 W
    (4, "Inlet Temp", 0x01, 1, 1, 24),       // 24 degrees C
];

fn emulator_commands() -> String {
    let mut s = String::from(
        "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02\nsel_enable 0x20 1000 0x0a\n",
    );
    for (i, (num, name, stype, unit, m, raw)) in SENSORS.iter().enumerate() {
        let rec = full_sensor_record(i as u16 + 1, *num, name, *stype, *unit, *m);
        let bytes: Vec<String> = rec.iter().map(|b| format!("0x{b:02x}")).collect();
        s += &format!("main_sdr_add 0x20 {}\n", bytes.join(" "));
        s += &format!("sensor_add 0x20 0 {num} {stype} 0x01\n");
        s += &format!("sensor_set_value 0x20 0 {num} {raw} 0\n");
        s += &format!(
            "sensor_set_event_support 0x20 0 {num} enable scanning per-state \
             000000000000000 000000000000000 000000000000000 000000000000000\n"
        );
    }
    s += "mc_enable 0x20\n";
    s
}

/// A running `ipmi_sim`; killed (its whole process group) when dropped.
pub struct Sim {
    child: Option<Child>,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Sim {
    /// Starts the simulator, or returns `None` (printing why) when `ipmi_sim` or
    /// `ipmitool` is not installed.
    pub fn start() -> Option<Sim> {
        for program in ["ipmi_sim", "ipmitool"] {
            if which(program).is_none() {
                eprintln!(
                    "SKIPPED: {program} is not installed (Debian: apt-get install openipmi ipmitool)"
                );
                return None;
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf = format!(
            "name \"numalabsim\"\nset_working_mc 0x20\n  startlan 1\n    addr 127.0.0.1 {port}\n    priv_limit admin\n    allowed_auths_callback md5\n    allowed_auths_user md5\n    allowed_auths_operator md5\n    allowed_auths_admin md5\n    guid a123456789abcdefa123456789abcdef\n  endlan\nuser 2 true \"{USER}\" \"{PLANTED}\" admin 10 md5\n"
        );
        std::fs::write(dir.path().join("lan.conf"), conf).unwrap();
        std::fs::write(dir.path().join("sim.emu"), emulator_commands()).unwrap();
        std::fs::create_dir(dir.path().join("state")).unwrap();
        let log = std::fs::File::create(dir.path().join("sim.log")).unwrap();
        let child = Command::new("ipmi_sim")
            .current_dir(dir.path())
            .args(["-c", "lan.conf", "-f", "sim.emu", "-s", "state", "-n"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("starting ipmi_sim");
        let mut sim = Sim {
            child: Some(child),
            port,
            dir,
        };
        // Ready when ipmitool gets an answer (bounded).
        let ready = wait_for(Duration::from_secs(20), || {
            sim.assert_running();
            let mut src = IpmiSdrSource::new(
                sim.config(Duration::from_secs(3)),
                SdrListing::ElistFull,
                vec![],
            )
            .unwrap();
            src.read_once().is_ok()
        });
        assert!(
            ready,
            "ipmi_sim did not answer on port {port}: {}",
            sim.log()
        );
        Some(sim)
    }

    fn assert_running(&mut self) {
        if let Some(c) = &mut self.child {
            if let Ok(Some(status)) = c.try_wait() {
                panic!("ipmi_sim exited ({status}): {}", self.log());
            }
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sim.log")).unwrap_or_default()
    }

    /// LAN settings for this simulator, password from the planted secret.
    pub fn config(&self, timeout: Duration) -> IpmiConfig {
        IpmiConfig {
            timeout,
            ..IpmiConfig::lan(IpmiLan {
                host: "127.0.0.1".into(),
                port: Some(self.port),
                user: USER.into(),
                password: IpmiPassword::Value(Secret::new(PLANTED)),
                // ipmi_sim does not answer Get Channel Cipher Suites; name one.
                cipher_suite: Some(3),
            })
        }
    }

    /// Kills the simulator's process group and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signals the process group created by process_group(0) for the
            // simulator, which is not yet reaped.
            unsafe {
                libc::kill(-(c.id() as i32), libc::SIGKILL);
            }
            let _ = c.wait();
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn power_supply_inputs_from_the_simulators_sdr_are_summed() {
    let Some(sim) = Sim::start() else { return };
    for listing in [SdrListing::ElistFull, SdrListing::SensorList] {
        let mut src =
            IpmiSdrSource::new(sim.config(Duration::from_secs(10)), listing, vec![]).unwrap();
        let r = src.read_once().unwrap();
        assert_eq!(r.watts, 380.0, "{listing:?}: {r:?}");
        let used: Vec<&str> = r
            .parts
            .iter()
            .filter(|p| p.used)
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(used, ["PS1 Input Power", "PS2 Input Power"]);
        assert!(r
            .parts
            .iter()
            .any(|p| p.name == "CPU1 Power" && p.watts == 95.0 && !p.used));
        assert!(!r.parts.iter().any(|p| p.name == "Inlet Temp"));
        let s = src.source();
        assert_eq!(s.kind, BmcSourceKind::IpmiSdr);
        assert_eq!(s.sensors, ["PS1 Input Power", "PS2 Input Power"]);
        assert!(s.method.contains("sum of the power-supply input sensors"));
        assert_eq!(
            s.access,
            BmcAccess::Lan {
                host: "127.0.0.1".into(),
                port: Some(sim.port),
                user: USER.into()
            }
        );
    }
    let mut named = IpmiSdrSource::new(
        sim.config(Duration::from_secs(10)),
        SdrListing::ElistFull,
        vec!["CPU1 Power".into()],
    )
    .unwrap();
    assert_eq!(named.read_once().unwrap().watts, 95.0);
}

#[test]
fn password_file_must_be_owner_only_and_then_works() {
    let Some(sim) = Sim::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ipmi-password");
    std::fs::write(&file, format!("{PLANTED}\n")).unwrap();
    let with_file = |cfg: IpmiConfig| {
        let mut cfg = cfg;
        if let numalab_bmc::IpmiTarget::Lan(l) = &mut cfg.target {
            l.password = IpmiPassword::File(file.clone());
        }
        cfg
    };
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = IpmiSdrSource::new(
        with_file(sim.config(Duration::from_secs(10))),
        SdrListing::ElistFull,
        vec![],
    )
    .unwrap_err();
    assert!(matches!(e, BmcError::CredentialFile { .. }), "{e}");
    assert!(e.to_string().contains("chmod 600"), "{e}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut src = IpmiSdrSource::new(
        with_file(sim.config(Duration::from_secs(10))),
        SdrListing::ElistFull,
        vec![],
    )
    .unwrap();
    assert_eq!(src.read_once().unwrap().watts, 380.0);
    assert_clean("source", &format!("{src:?} {:?}", src.source()));
}

#[test]
fn dcmi_refused_by_the_simulator_is_reported_and_a_wrong_password_is_not_echoed() {
    let Some(sim) = Sim::start() else { return };
    let mut dcmi = IpmiDcmiSource::new(sim.config(Duration::from_secs(10)), DcmiMode::Raw).unwrap();
    let e = dcmi.read_once().unwrap_err().to_string();
    assert!(e.contains("Invalid command") || e.contains("0xc1"), "{e}");
    assert_clean("DCMI error", &e);

    let mut cfg = sim.config(Duration::from_secs(15));
    let wrong = format!("{PLANTED}x");
    if let numalab_bmc::IpmiTarget::Lan(l) = &mut cfg.target {
        l.password = IpmiPassword::Value(Secret::new(wrong.clone()));
    }
    let e = IpmiSdrSource::new(cfg, SdrListing::ElistFull, vec![])
        .unwrap()
        .read_once()
        .unwrap_err();
    let text = format!("{e} {e:?}");
    assert!(!text.contains(&wrong), "{text}");
    assert_clean("wrong-password error", &text);
}

#[test]
fn sampler_records_a_bmc_that_dies_mid_run() {
    let Some(mut sim) = Sim::start() else { return };
    let src = IpmiSdrSource::new(
        sim.config(Duration::from_secs(2)),
        SdrListing::ElistFull,
        vec![],
    )
    .unwrap();
    let sampler = Sampler::start(Box::new(src), Duration::from_millis(300));
    assert!(
        wait_for(Duration::from_secs(20), || sampler.samples_so_far() >= 2),
        "no samples from the simulator"
    );
    sim.kill();
    // ipmitool then times out (2 s); wait for a failed read to be recorded.
    std::thread::sleep(Duration::from_millis(4500));
    let t = Instant::now();
    let record = sampler.stop();
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "stop took {:?}",
        t.elapsed()
    );
    assert!(record.samples.len() >= 2);
    assert!(record.samples.iter().all(|s| s.reading.watts == 380.0));
    assert!(!record.errors.is_empty(), "{record:?}");
    assert!(
        record.source.description.contains("PS1 Input Power"),
        "{}",
        record.source.description
    );
    assert_eq!(record.covers, "whole node at the wall (BMC)");
    assert_clean("record", &serde_json::to_string(&record).unwrap());
}

#[test]
fn ipmi_source_falls_back_to_sensor_records_when_dcmi_is_refused() {
    let Some(sim) = Sim::start() else { return };
    let mut src =
        numalab_bmc::ipmi_source(sim.config(Duration::from_secs(10)), SdrListing::ElistFull)
            .unwrap();
    assert_eq!(src.read_once().unwrap().watts, 380.0);
    let s = src.source();
    assert_eq!(s.kind, BmcSourceKind::IpmiSdr);
    assert!(
        s.description.contains("DCMI power reading not used"),
        "{}",
        s.description
    );
    assert_clean("source", &format!("{s:?}"));
}
