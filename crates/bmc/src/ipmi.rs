//! IPMI through `ipmitool`: DCMI Get Power Reading and the power sensors in the
//! sensor data records, in-band (local driver) or over the LAN (`-I lanplus`).
//!
//! The password never goes on the command line: it is given to `ipmitool` in its
//! environment (`-E`, variable `IPMI_PASSWORD`) or as a file only its owner may read
//! (`-f FILE`, checked before use). `ipmitool`'s error output is scrubbed of it.

use crate::command::{self, Invocation};
use crate::dcmi;
use crate::error::BmcError;
use crate::sdr;
use crate::secret::{read_owner_only_file, Secret};
use crate::PowerSource;
use numalab_records::bmc::{BmcAccess, BmcReading, BmcSource, BmcSourceKind};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The environment variable `ipmitool -E` reads the password from.
pub const IPMI_PASSWORD_ENV: &str = "IPMI_PASSWORD";

/// Where the IPMI LAN password comes from.
#[derive(Debug, Clone)]
pub enum IpmiPassword {
    /// This process's `IPMI_PASSWORD` environment variable.
    Env,
    /// A file whose first line is the password, readable by its owner only.
    File(PathBuf),
    /// A password the caller already holds.
    Value(Secret),
}

/// A BMC reached over the network with RMCP+ (`ipmitool -I lanplus`).
#[derive(Debug, Clone)]
pub struct IpmiLan {
    /// Host name or address of the BMC.
    pub host: String,
    /// UDP port, when not 623.
    pub port: Option<u16>,
    /// IPMI user name.
    pub user: String,
    /// The password's source.
    pub password: IpmiPassword,
    /// RMCP+ cipher suite (`-C`); `None` lets ipmitool choose (some BMCs, and
    /// OpenIPMI's simulator, need `Some(3)`).
    pub cipher_suite: Option<u8>,
}

/// Which BMC `ipmitool` talks to.
#[derive(Debug, Clone)]
pub enum IpmiTarget {
    /// This machine's BMC through the kernel's IPMI driver (`/dev/ipmi0`, needs root).
    InBand,
    /// A BMC over the LAN.
    Lan(IpmiLan),
}

/// How to run `ipmitool`.
#[derive(Debug, Clone)]
pub struct IpmiConfig {
    /// Which BMC.
    pub target: IpmiTarget,
    /// The program (default `ipmitool`, looked up on `PATH`).
    pub ipmitool: PathBuf,
    /// Time limit of one `ipmitool` run; its process group is killed after it.
    pub timeout: Duration,
}

impl IpmiConfig {
    /// In-band, `ipmitool` on `PATH`, 10 s limit.
    pub fn in_band() -> Self {
        IpmiConfig {
            target: IpmiTarget::InBand,
            ipmitool: PathBuf::from("ipmitool"),
            timeout: Duration::from_secs(10),
        }
    }

    /// Over the LAN, `ipmitool` on `PATH`, 10 s limit.
    pub fn lan(lan: IpmiLan) -> Self {
        IpmiConfig {
            target: IpmiTarget::Lan(lan),
            ..Self::in_band()
        }
    }
}

enum PasswordArg {
    None,
    Env(Secret),
    File(PathBuf, Option<Secret>),
}

/// A checked `ipmitool` invocation prefix: the interface and credential options, and
/// the password held for scrubbing.
pub struct Ipmitool {
    config: IpmiConfig,
    password: PasswordArg,
}

impl std::fmt::Debug for Ipmitool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ipmitool")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn check_arg(what: &str, v: &str) -> Result<(), BmcError> {
    if v.is_empty() || v.starts_with('-') || v.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(BmcError::Config(format!(
            "{what} {v:?} must be non-empty, must not start with '-' and must not hold spaces"
        )));
    }
    Ok(())
}

impl Ipmitool {
    /// Checks the settings and resolves the password (from the environment, or checks
    /// the password file's permissions).
    pub fn new(config: IpmiConfig) -> Result<Self, BmcError> {
        let password = match &config.target {
            IpmiTarget::InBand => PasswordArg::None,
            IpmiTarget::Lan(lan) => {
                check_arg("host", &lan.host)?;
                check_arg("user", &lan.user)?;
                match &lan.password {
                    IpmiPassword::Env => PasswordArg::Env(
                        Secret::from_env(IPMI_PASSWORD_ENV).ok_or_else(|| {
                            BmcError::MissingCredential(format!(
                                "set {IPMI_PASSWORD_ENV} or give a password file readable only by its owner"
                            ))
                        })?,
                    ),
                    IpmiPassword::Value(s) => PasswordArg::Env(s.clone()),
                    IpmiPassword::File(p) => {
                        let lines = read_owner_only_file(p)?;
                        PasswordArg::File(p.clone(), lines.into_iter().next())
                    }
                }
            }
        };
        Ok(Ipmitool { config, password })
    }

    /// The access as recorded (no credential).
    pub fn access(&self) -> BmcAccess {
        match &self.config.target {
            IpmiTarget::InBand => BmcAccess::InBand,
            IpmiTarget::Lan(l) => BmcAccess::Lan {
                host: l.host.clone(),
                port: l.port,
                user: l.user.clone(),
            },
        }
    }

    fn prefix(&self) -> (Vec<String>, String) {
        let mut args: Vec<String> = Vec::new();
        let mut shown = "ipmitool".to_string();
        if let IpmiTarget::Lan(l) = &self.config.target {
            args.extend(["-I".into(), "lanplus".into(), "-H".into(), l.host.clone()]);
            if let Some(p) = l.port {
                args.extend(["-p".into(), p.to_string()]);
            }
            args.extend(["-U".into(), l.user.clone()]);
            if let Some(c) = l.cipher_suite {
                args.extend(["-C".into(), c.to_string()]);
            }
            match &self.password {
                PasswordArg::Env(_) => args.push("-E".into()),
                PasswordArg::File(p, _) => {
                    args.extend(["-f".into(), p.display().to_string()]);
                }
                PasswordArg::None => {}
            }
            shown = format!("ipmitool {}", args.join(" "));
        }
        (args, shown)
    }

    /// Runs `ipmitool <prefix> <args>` and returns its stdout.
    pub fn run(&self, args: &[&str], cancel: &AtomicBool) -> Result<String, BmcError> {
        let (mut all, shown) = self.prefix();
        all.extend(args.iter().map(|a| a.to_string()));
        let mut env = Vec::new();
        let mut secrets = Vec::new();
        match &self.password {
            PasswordArg::Env(s) => {
                env.push((IPMI_PASSWORD_ENV, s));
                secrets.push(s);
            }
            PasswordArg::File(_, Some(s)) => secrets.push(s),
            _ => {}
        }
        let inv = Invocation {
            program: &self.config.ipmitool,
            args: all,
            env,
            env_remove: vec!["IPMITOOL_PASSWORD", IPMI_PASSWORD_ENV],
            what: format!("{shown} {}", args.join(" ")),
            secrets,
            timeout: self.config.timeout,
        };
        command::run(&inv, cancel).map(|o| o.stdout)
    }

    fn where_(&self) -> String {
        match &self.config.target {
            IpmiTarget::InBand => "in-band".into(),
            IpmiTarget::Lan(l) => match l.port {
                Some(p) => format!("over the LAN ({}:{p}, lanplus)", l.host),
                None => format!("over the LAN ({}, lanplus)", l.host),
            },
        }
    }
}

/// How to ask for the DCMI power reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DcmiMode {
    /// `ipmitool raw 0x2c 0x02 0xdc 0x01 0x00 0x00`, decoded here: the same on every
    /// ipmitool version, and it carries the BMC's timestamp.
    #[default]
    Raw,
    /// `ipmitool dcmi power reading`, its text parsed.
    Text,
}

/// Node power from DCMI Get Power Reading.
#[derive(Debug)]
pub struct IpmiDcmiSource {
    tool: Ipmitool,
    mode: DcmiMode,
}

impl IpmiDcmiSource {
    /// A DCMI source; checks the settings (see [`Ipmitool::new`]).
    pub fn new(config: IpmiConfig, mode: DcmiMode) -> Result<Self, BmcError> {
        Ok(IpmiDcmiSource {
            tool: Ipmitool::new(config)?,
            mode,
        })
    }
}

impl PowerSource for IpmiDcmiSource {
    fn source(&self) -> BmcSource {
        let how = match self.mode {
            DcmiMode::Raw => "ipmitool raw 0x2c 0x02 0xdc 0x01 0x00 0x00",
            DcmiMode::Text => "ipmitool dcmi power reading",
        };
        BmcSource {
            kind: BmcSourceKind::IpmiDcmi,
            access: self.tool.access(),
            sensors: Vec::new(),
            method:
                "DCMI instantaneous power reading (min/max/average over the BMC's period beside it)"
                    .into(),
            description: format!(
                "IPMI DCMI Get Power Reading, {} ({how})",
                self.tool.where_()
            ),
        }
    }

    fn read(&mut self, cancel: &AtomicBool) -> Result<BmcReading, BmcError> {
        let r = match self.mode {
            DcmiMode::Raw => dcmi::parse_raw_output(&self.tool.run(
                &["raw", "0x2c", "0x02", "0xdc", "0x01", "0x00", "0x00"],
                cancel,
            )?)?,
            DcmiMode::Text => {
                dcmi::parse_text(&self.tool.run(&["dcmi", "power", "reading"], cancel)?)?
            }
        };
        if !r.active {
            return Err(BmcError::DcmiInactive);
        }
        Ok(r.to_reading())
    }
}

/// Which `ipmitool` listing to read the power sensors from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SdrListing {
    /// `ipmitool sdr elist full`: every full sensor record, with its reading.
    #[default]
    ElistFull,
    /// `ipmitool sdr type Current`: some BMCs (Dell's "Pwr Consumption") file their
    /// power sensors under the Current sensor type.
    TypeCurrent,
    /// `ipmitool sensor list`: every sensor with value and unit in separate columns.
    SensorList,
}

impl SdrListing {
    fn args(self) -> &'static [&'static str] {
        match self {
            SdrListing::ElistFull => &["sdr", "elist", "full"],
            SdrListing::TypeCurrent => &["sdr", "type", "Current"],
            SdrListing::SensorList => &["sensor", "list"],
        }
    }
}

/// Node power from the BMC's power sensors (unit Watts) in its sensor records.
#[derive(Debug)]
pub struct IpmiSdrSource {
    tool: Ipmitool,
    listing: SdrListing,
    names: Vec<String>,
    used: Vec<String>,
    method: String,
    note: Option<String>,
}

impl IpmiSdrSource {
    /// A sensor-record source. `names`: the sensors to sum; empty to choose them (a
    /// total sensor, else the power-supply inputs).
    pub fn new(
        config: IpmiConfig,
        listing: SdrListing,
        names: Vec<String>,
    ) -> Result<Self, BmcError> {
        Ok(IpmiSdrSource {
            tool: Ipmitool::new(config)?,
            listing,
            names,
            used: Vec::new(),
            method: "not read yet".into(),
            note: None,
        })
    }
}

impl PowerSource for IpmiSdrSource {
    fn source(&self) -> BmcSource {
        let sensors = if self.used.is_empty() {
            self.names.clone()
        } else {
            self.used.clone()
        };
        BmcSource {
            kind: BmcSourceKind::IpmiSdr,
            access: self.tool.access(),
            description: format!(
                "IPMI sensor records, {} (ipmitool {}): {} [{}]{}",
                self.tool.where_(),
                self.listing.args().join(" "),
                self.method,
                sensors.join(", "),
                self.note
                    .as_ref()
                    .map(|n| format!("; {n}"))
                    .unwrap_or_default()
            ),
            sensors,
            method: self.method.clone(),
        }
    }

    fn read(&mut self, cancel: &AtomicBool) -> Result<BmcReading, BmcError> {
        let text = self.tool.run(self.listing.args(), cancel)?;
        let choice = sdr::choose(&sdr::parse(&text), &self.names)?;
        self.used = choice.used;
        self.method = choice.method;
        Ok(BmcReading::watts(choice.watts, choice.parts))
    }
}

/// Opens the best IPMI source this BMC offers: DCMI when it answers with an active
/// reading, else its power sensor records (`listing`), saying in the source's
/// description why DCMI was not used. A BMC that cannot be reached at all (time-out,
/// no `ipmitool`, a bad credential file) is an error at once.
pub fn ipmi_source(
    config: IpmiConfig,
    listing: SdrListing,
) -> Result<Box<dyn PowerSource>, BmcError> {
    let mut dcmi = IpmiDcmiSource::new(config.clone(), DcmiMode::Raw)?;
    let why = match dcmi.read_once() {
        Ok(_) => return Ok(Box::new(dcmi)),
        Err(
            e @ (BmcError::Timeout { .. }
            | BmcError::ToolMissing { .. }
            | BmcError::Spawn { .. }
            | BmcError::Cancelled),
        ) => return Err(e),
        Err(e) => e.to_string(),
    };
    let mut sdr = IpmiSdrSource::new(config, listing, Vec::new())?;
    sdr.note = Some(format!("DCMI power reading not used: {why}"));
    match sdr.read_once() {
        Ok(_) => Ok(Box::new(sdr)),
        Err(e) => Err(BmcError::NoPower(format!(
            "DCMI: {why}; sensor records: {e}"
        ))),
    }
}
