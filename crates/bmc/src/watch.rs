//! Node power watched around a measurement: the BMC named by one address (`ipmi`,
//! `ipmi://USER@HOST[:PORT]`, `https://HOST[:PORT]`), checked with one read before
//! anything is measured, then sampled while a measurement runs and recorded as a
//! `power.bmc` record under `power/bmc/<key>`. Every command with `--bmc` and
//! `numalab evaluate`'s steps use this one watcher.
//!
//! An address never holds a password: one that does is refused without repeating it
//! (credentials come from the environment or an owner-only file, see the crate's
//! documentation).

pub use crate::address::{shown, split_host_port};
use crate::redfish::parse_origin;
use crate::{
    ipmi_source, BmcError, BmcPowerRecord, IpmiConfig, IpmiLan, IpmiPassword, PowerSource,
    RedfishConfig, RedfishCredentials, RedfishSource, Sampler, SdrListing,
};
use numalab_schema::sink::{Sink, SinkError};
use numalab_schema::{Origin, Record};
use std::path::PathBuf;
use std::time::Duration;

/// Record key prefix of BMC power records.
pub const KEY_PREFIX: &str = "power/bmc";

/// How to reach the BMC, as a user gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The address: `ipmi`, `ipmi://USER@HOST[:PORT]` or `https://HOST[:PORT]`.
    pub address: String,
    /// Milliseconds between reads (at least 10).
    pub interval_ms: u64,
    /// A file only its owner can read with the password (IPMI: line 1; Redfish: user on
    /// line 1, password on line 2); without it, the environment.
    pub password_file: Option<PathBuf>,
    /// Redfish: do not verify the BMC's TLS certificate (recorded in every figure).
    pub insecure: bool,
    /// Redfish: verify the certificate against these PEM CA certificates.
    pub ca_file: Option<PathBuf>,
    /// IPMI over the LAN: the RMCP+ cipher suite.
    pub cipher_suite: Option<u8>,
    /// The ipmitool program.
    pub ipmitool: PathBuf,
}

/// The ipmitool program unless given: the one on `PATH`.
pub const DEFAULT_IPMITOOL: &str = "ipmitool";

impl Options {
    /// The options for `address` with the defaults: 1 s between reads, credentials
    /// from the environment, certificates verified, `ipmitool` from `PATH`.
    pub fn new(address: impl Into<String>) -> Options {
        Options {
            address: address.into(),
            interval_ms: 1000,
            password_file: None,
            insecure: false,
            ca_file: None,
            cipher_suite: None,
            ipmitool: PathBuf::from(DEFAULT_IPMITOOL),
        }
    }
}

/// How to reach the BMC, checked.
#[derive(Debug, Clone)]
pub enum Target {
    /// IPMI, in-band or over the LAN.
    Ipmi(IpmiConfig),
    /// Redfish over HTTPS.
    Redfish(RedfishConfig),
}

fn config(msg: impl Into<String>) -> BmcError {
    BmcError::Config(msg.into())
}

/// Checks an address and the credentials' source, without reaching the BMC.
pub fn target(opts: &Options) -> Result<Target, BmcError> {
    let spec = opts.address.trim();
    if spec == "ipmi" {
        let mut c = IpmiConfig::in_band();
        c.ipmitool = opts.ipmitool.clone();
        return Ok(Target::Ipmi(c));
    }
    if let Some(rest) = spec.strip_prefix("ipmi://") {
        let rest = rest.trim_end_matches('/');
        let (userinfo, hostport) = rest
            .rsplit_once('@')
            .ok_or_else(|| config("an IPMI LAN address needs a user: ipmi://USER@HOST[:PORT]"))?;
        if userinfo.contains(':') {
            return Err(config(
                "the address holds a password (USER:PASSWORD@); give it in $IPMI_PASSWORD or a password file instead, never on the command line",
            ));
        }
        let (host, port) = split_host_port(hostport)?;
        let password = match &opts.password_file {
            Some(f) => IpmiPassword::File(f.clone()),
            None => IpmiPassword::Env,
        };
        let mut c = IpmiConfig::lan(IpmiLan {
            host,
            port,
            user: userinfo.to_string(),
            password,
            cipher_suite: opts.cipher_suite,
        });
        c.ipmitool = opts.ipmitool.clone();
        return Ok(Target::Ipmi(c));
    }
    if spec.starts_with("https://") || spec.starts_with("http://") {
        // The one check of a Redfish address: the one the connection makes.
        parse_origin(spec, spec.starts_with("http://"))?;
        let mut c = RedfishConfig::new(spec);
        c.credentials = match &opts.password_file {
            Some(f) => RedfishCredentials::File(f.clone()),
            None => RedfishCredentials::Env,
        };
        c.insecure = opts.insecure;
        c.ca_file = opts.ca_file.clone();
        c.allow_plain_http_loopback = spec.starts_with("http://");
        return Ok(Target::Redfish(c));
    }
    Err(config(
        "not a BMC address; use ipmi, ipmi://USER@HOST[:PORT] or https://HOST[:PORT]",
    ))
}

/// A checked BMC that can be sampled around measurements.
#[derive(Debug, Clone)]
pub struct BmcPower {
    target: Target,
    interval: Duration,
}

impl BmcPower {
    /// Checks the address and the credentials' source, then reads once, so that a BMC
    /// that cannot be reached is an error before anything is measured.
    pub fn open(opts: &Options) -> Result<BmcPower, BmcError> {
        let power = BmcPower {
            target: target(opts)?,
            interval: Duration::from_millis(opts.interval_ms.max(10)),
        };
        power.source()?;
        Ok(power)
    }

    /// Where the BMC is reached.
    pub fn target(&self) -> &Target {
        &self.target
    }

    fn source(&self) -> Result<Box<dyn PowerSource>, BmcError> {
        match &self.target {
            Target::Ipmi(c) => ipmi_source(c.clone(), SdrListing::default()),
            Target::Redfish(c) => Ok(Box::new(RedfishSource::connect(c)?)),
        }
    }

    /// Starts sampling during the measurement named `during`. An error means the BMC
    /// cannot be opened now; the caller warns and measures anyway (a measurement is
    /// never lost to its power figure).
    pub fn start(&self, during: &str) -> Result<Watch, BmcError> {
        Ok(Watch {
            sampler: Sampler::start(self.source()?, self.interval),
            during: during.to_string(),
        })
    }

    /// [`BmcPower::start`], its error as the warning to show ("BMC power not sampled
    /// during ...").
    pub fn start_or_warning(&self, during: &str) -> Result<Watch, String> {
        self.start(during)
            .map_err(|e| format!("BMC power not sampled during {during}: {e}"))
    }
}

/// A sampler running during one measurement.
pub struct Watch {
    sampler: Sampler,
    during: String,
}

impl Watch {
    /// What is being watched.
    pub fn during(&self) -> &str {
        &self.during
    }

    /// Stops sampling and pushes the record under `power/bmc/<key>` (a key already in
    /// the journal gets `/run-N`); returns the key used.
    pub fn finish(self, key: &str, sink: &mut dyn Sink) -> Result<String, SinkError> {
        let mut record: BmcPowerRecord = self.sampler.stop();
        record.during = Some(self.during);
        let mut full = format!("{KEY_PREFIX}/{key}");
        let mut n = 2;
        while sink.done(&full) {
            full = format!("{KEY_PREFIX}/{key}/run-{n}");
            n += 1;
        }
        sink.push(Record::new(full.clone(), Origin::Measured, &record))?;
        Ok(full)
    }

    /// [`Watch::finish`], its error as the warning to show ("BMC power of ...").
    pub fn finish_or_warning(self, key: &str, sink: &mut dyn Sink) -> Result<String, String> {
        let during = self.during.clone();
        self.finish(key, sink)
            .map_err(|e| format!("BMC power of {during}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(spec: &str) -> Result<Target, BmcError> {
        target(&Options::new(spec))
    }

    #[test]
    fn addresses_are_parsed_and_passwords_refused() {
        match at("ipmi://admin@bmc.example:6230") {
            Ok(Target::Ipmi(IpmiConfig {
                target: crate::IpmiTarget::Lan(l),
                ..
            })) => {
                assert_eq!(
                    (l.host.as_str(), l.port, l.user.as_str()),
                    ("bmc.example", Some(6230), "admin")
                );
            }
            other => panic!("{other:?}"),
        }
        match at("ipmi://admin@[fe80::1]:623") {
            Ok(Target::Ipmi(IpmiConfig {
                target: crate::IpmiTarget::Lan(l),
                ..
            })) => assert_eq!((l.host.as_str(), l.port), ("fe80::1", Some(623))),
            other => panic!("{other:?}"),
        }
        match at("ipmi") {
            Ok(Target::Ipmi(c)) => assert!(matches!(c.target, crate::IpmiTarget::InBand)),
            other => panic!("{other:?}"),
        }
        match at("https://10.0.0.5") {
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
            let e = at(bad).unwrap_err().to_string();
            assert!(!e.contains("hunter2"), "{e}");
            assert!(e.contains("never") || e.contains("instead"), "{e}");
        }
        let e = |s: &str| at(s).unwrap_err().to_string();
        assert!(e("ipmi://bmc").contains("needs a user"));
        assert!(e("ipmi://a@bmc:x").contains("not a number"));
        assert!(e("ipmi://a@:623").contains("no host"));
        assert!(e("ipmi://a@[fe80::1").contains("closing ]"));
        assert!(e("snmp://bmc").contains("not a BMC address"));
        assert!(e("http://10.0.0.5").contains("plain http://"));
        assert!(e("https://").contains("no valid host"));
    }

    #[test]
    fn a_shown_address_never_holds_the_password() {
        assert_eq!(
            shown("ipmi://admin:hunter2@bmc:623"),
            "ipmi://admin:***@bmc:623"
        );
        assert_eq!(
            shown("https://root:p@ss:w@rd@bmc/redfish/v1"),
            "https://root:***@bmc/redfish/v1"
        );
        assert_eq!(shown("ipmi://admin@bmc"), "ipmi://admin@bmc");
        assert_eq!(shown("ipmi"), "ipmi");
    }
}
