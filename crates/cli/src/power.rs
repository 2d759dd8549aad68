//! `--bmc`: node power at the wall, sampled from the server's BMC while a command
//! measures (crate `numalab-bmc`), recorded as `power.bmc` records beside the
//! measurement's own (RAPL/hwmon) figures.
//!
//! Why: per-watt comparisons between an Arm and an x86 server are only fair with the
//! same power source on both sides, and in a fleet the BMC is the source every node
//! has. Credentials come from the environment or from a file only its owner can read,
//! never from the command line: an address holding a password is refused.

use crate::{CliError, CliResult};
use clap::Args;
use numalab_bmc::{
    ipmi_source, BmcError, BmcPowerRecord, IpmiConfig, IpmiLan, IpmiPassword, PowerSource,
    RedfishConfig, RedfishCredentials, RedfishSource, Sampler, SdrListing,
};
use numalab_schema::sink::Sink;
use numalab_schema::{ErrorClass, Origin, Record};
use std::path::PathBuf;
use std::time::Duration;

/// Record key prefix of BMC power records.
pub const KEY_PREFIX: &str = "power/bmc";

/// The BMC options shared by the measuring commands.
#[derive(Debug, Clone, Default, Args)]
pub struct BmcArgs {
    /// Sample node power at the wall from the BMC while measuring: `ipmi` (this
    /// machine's BMC through the local IPMI driver, needs root), `ipmi://USER@HOST[:PORT]`
    /// (over the LAN; the password from $IPMI_PASSWORD or --bmc-password-file) or
    /// `https://HOST[:PORT]` (Redfish; user and password from $REDFISH_USERNAME and
    /// $REDFISH_PASSWORD or --bmc-password-file). Never put a password in the address.
    #[arg(
        long,
        value_name = "BMC",
        env = "NUMALAB_BMC",
        help_heading = "BMC power"
    )]
    pub bmc: Option<String>,
    /// Milliseconds between BMC reads (BMCs refresh about once a second).
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 1000,
        help_heading = "BMC power"
    )]
    pub bmc_interval: u64,
    /// A file readable only by its owner with the BMC password (IPMI: line 1; Redfish:
    /// user name on line 1, password on line 2).
    #[arg(long, value_name = "FILE", help_heading = "BMC power")]
    pub bmc_password_file: Option<PathBuf>,
    /// Redfish: do not verify the BMC's TLS certificate (recorded in every figure).
    #[arg(long, help_heading = "BMC power")]
    pub bmc_insecure: bool,
    /// Redfish: verify the BMC's certificate against these PEM CA certificates.
    #[arg(long, value_name = "FILE", help_heading = "BMC power")]
    pub bmc_ca_file: Option<PathBuf>,
    /// IPMI over the LAN: the RMCP+ cipher suite (some BMCs need 3 or 17).
    #[arg(long, value_name = "N", help_heading = "BMC power")]
    pub bmc_cipher_suite: Option<u8>,
    /// The ipmitool program.
    #[arg(
        long,
        value_name = "PATH",
        env = "NUMALAB_IPMITOOL",
        hide = true,
        default_value = "ipmitool"
    )]
    pub bmc_ipmitool: PathBuf,
}

/// How to reach the BMC, checked.
#[derive(Debug, Clone)]
enum Target {
    Ipmi(IpmiConfig),
    Redfish(RedfishConfig),
}

/// A checked BMC that can be sampled around measurements.
#[derive(Debug, Clone)]
pub struct BmcPower {
    target: Target,
    interval: Duration,
}

fn usage(msg: String) -> CliError {
    CliError::new(ErrorClass::Usage, msg)
}

/// A BMC error as a command error: bad settings or credentials are the user's to fix
/// (usage or input); a BMC that does not answer or gives no power is what this machine
/// cannot do (unsupported).
pub fn bmc_error(what: &str, e: BmcError) -> CliError {
    let class = match e {
        BmcError::Config(_) | BmcError::MissingCredential(_) => ErrorClass::Usage,
        BmcError::CredentialFile { .. } => ErrorClass::Input,
        BmcError::Cancelled => ErrorClass::Interrupted,
        _ => ErrorClass::Unsupported,
    };
    CliError::new(class, format!("--bmc {what}: {e}"))
}

impl BmcArgs {
    /// The BMC to sample, or `None` without `--bmc`. Checks the address and the
    /// credentials' source, then reads once so that a BMC that cannot be reached is
    /// an error before anything is measured.
    pub fn open(&self) -> Result<Option<BmcPower>, CliError> {
        let Some(spec) = self.bmc.as_deref().map(str::trim) else {
            return Ok(None);
        };
        if spec.is_empty() {
            return Ok(None);
        }
        let target = self.target(spec)?;
        let power = BmcPower {
            target,
            interval: Duration::from_millis(self.bmc_interval.max(10)),
        };
        power.source().map_err(|e| bmc_error(spec, e))?;
        Ok(Some(power))
    }

    fn target(&self, spec: &str) -> Result<Target, CliError> {
        if spec == "ipmi" {
            let mut c = IpmiConfig::in_band();
            c.ipmitool = self.bmc_ipmitool.clone();
            return Ok(Target::Ipmi(c));
        }
        if let Some(rest) = spec.strip_prefix("ipmi://") {
            let rest = rest.trim_end_matches('/');
            let (userinfo, hostport) = rest.rsplit_once('@').ok_or_else(|| {
                usage(format!(
                    "--bmc {spec}: an IPMI LAN address needs a user: ipmi://USER@HOST[:PORT]"
                ))
            })?;
            if userinfo.contains(':') {
                return Err(usage(
                    "--bmc: the address holds a password (USER:PASSWORD@); give it in $IPMI_PASSWORD or --bmc-password-file instead, never on the command line"                        .into(),
                ));
            }
            let (host, port) = split_port(hostport, spec)?;
            let password = match &self.bmc_password_file {
                Some(f) => IpmiPassword::File(f.clone()),
                None => IpmiPassword::Env,
            };
            let mut c = IpmiConfig::lan(IpmiLan {
                host,
                port,
                user: userinfo.to_string(),
                password,
                cipher_suite: self.bmc_cipher_suite,
            });
            c.ipmitool = self.bmc_ipmitool.clone();
            return Ok(Target::Ipmi(c));
        }
        if let Some(rest) = spec
            .strip_prefix("https://")
            .or_else(|| spec.strip_prefix("http://"))
        {
            if rest.split('/').next().is_some_and(|a| a.contains('@')) {
                return Err(usage(
                    "--bmc: the address holds credentials (USER[:PASSWORD]@); give them in $REDFISH_USERNAME and $REDFISH_PASSWORD or --bmc-password-file instead".into(),
                ));
            }
            let mut c = RedfishConfig::new(spec);
            c.credentials = match &self.bmc_password_file {
                Some(f) => RedfishCredentials::File(f.clone()),
                None => RedfishCredentials::Env,
            };
            c.insecure = self.bmc_insecure;
            c.ca_file = self.bmc_ca_file.clone();
            c.allow_plain_http_loopback = spec.starts_with("http://");
            return Ok(Target::Redfish(c));
        }
        Err(usage(format!(
            "--bmc {spec}: not a BMC address; use ipmi, ipmi://USER@HOST[:PORT] or https://HOST[:PORT]"
        )))
    }
}

fn split_port(hostport: &str, spec: &str) -> Result<(String, Option<u16>), CliError> {
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| usage(format!("--bmc {spec}: port {p:?} is not a number")))
    };
    if hostport.is_empty() {
        return Err(usage(format!("--bmc {spec}: no host")));
    }
    if let Some(rest) = hostport.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| usage(format!("--bmc {spec}: an IPv6 address needs its closing ]")))?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((h.to_string(), Some(port(p)?))),
            None if after.is_empty() => Ok((h.to_string(), None)),
            None => Err(usage(format!("--bmc {spec}: text after the address"))),
        };
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) => Ok((h.to_string(), Some(port(p)?))),
        None => Ok((hostport.to_string(), None)),
    }
}

impl BmcPower {
    fn source(&self) -> Result<Box<dyn PowerSource>, BmcError> {
        match &self.target {
            Target::Ipmi(c) => ipmi_source(c.clone(), SdrListing::default()),
            Target::Redfish(c) => Ok(Box::new(RedfishSource::connect(c)?)),
        }
    }

    /// Starts sampling; `None` (and a warning on stderr) when the BMC cannot be opened
    /// now: a measurement is never lost to its power figure.
    pub fn start(&self, during: &str) -> Option<Watch> {
        match self.source() {
            Ok(s) => Some(Watch {
                sampler: Sampler::start(s, self.interval),
                during: during.to_string(),
            }),
            Err(e) => {
                eprintln!("numalab: warning: BMC power not sampled during {during}: {e}");
                None
            }
        }
    }

    /// Runs `f` with the BMC sampled, then pushes the `power.bmc` record under
    /// `power/bmc/<key>` (a key already in the journal gets `/run-N`).
    pub fn around<T>(
        &self,
        key: &str,
        during: &str,
        sink: &mut dyn Sink,
        f: impl FnOnce(&mut dyn Sink) -> T,
    ) -> (T, CliResult) {
        let watch = self.start(during);
        let out = f(sink);
        let pushed = match watch {
            Some(w) => w.finish(key, sink),
            None => Ok(()),
        };
        (out, pushed)
    }
}

/// A sampler running during one measurement.
pub struct Watch {
    sampler: Sampler,
    during: String,
}

impl Watch {
    /// Stops sampling and pushes the record.
    pub fn finish(self, key: &str, sink: &mut dyn Sink) -> CliResult {
        let mut record: BmcPowerRecord = self.sampler.stop();
        record.during = Some(self.during);
        let mut full = format!("{KEY_PREFIX}/{key}");
        let mut n = 2;
        while sink.done(&full) {
            full = format!("{KEY_PREFIX}/{key}/run-{n}");
            n += 1;
        }
        sink.push(Record::new(full, Origin::Measured, &record))
            .map_err(|e| CliError::new(ErrorClass::Runtime, e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(spec: &str) -> BmcArgs {
        BmcArgs {
            bmc: Some(spec.into()),
            bmc_interval: 1000,
            bmc_ipmitool: "ipmitool".into(),
            ..Default::default()
        }
    }

    #[test]
    fn addresses_are_parsed_and_passwords_refused() {
        match args("ipmi://admin@bmc.example:6230").target("ipmi://admin@bmc.example:6230") {
            Ok(Target::Ipmi(IpmiConfig {
                target: numalab_bmc::IpmiTarget::Lan(l),
                ..
            })) => {
                assert_eq!(
                    (l.host.as_str(), l.port, l.user.as_str()),
                    ("bmc.example", Some(6230), "admin")
                );
            }
            other => panic!("{other:?}"),
        }
        match args("ipmi").target("ipmi") {
            Ok(Target::Ipmi(c)) => {
                assert!(matches!(c.target, numalab_bmc::IpmiTarget::InBand))
            }
            other => panic!("{other:?}"),
        }
        match args("https://10.0.0.5").target("https://10.0.0.5") {
            Ok(Target::Redfish(c)) => {
                assert!(!c.insecure && !c.allow_plain_http_loopback);
                assert!(matches!(c.credentials, RedfishCredentials::Env));
            }
            other => panic!("{other:?}"),
        }
        for bad in [
            "ipmi://admin:hunter2@bmc",
            "https://root:hunter2@bmc",
            "https://root@bmc",
        ] {
            let e = args(bad).target(bad).unwrap_err();
            assert_eq!(e.class, ErrorClass::Usage);
            assert!(!e.message.contains("hunter2"), "{}", e.message);
            assert!(e.message.contains("never") || e.message.contains("instead"));
        }
        let e = args("ipmi://bmc").target("ipmi://bmc").unwrap_err();
        assert!(e.message.contains("needs a user"), "{}", e.message);
        let e = args("ipmi://a@bmc:x").target("ipmi://a@bmc:x").unwrap_err();
        assert!(e.message.contains("not a number"), "{}", e.message);
        let e = args("snmp://bmc").target("snmp://bmc").unwrap_err();
        assert!(e.message.contains("not a BMC address"), "{}", e.message);
    }

    #[test]
    fn no_bmc_is_no_power() {
        assert!(BmcArgs::default().open().unwrap().is_none());
    }
}
