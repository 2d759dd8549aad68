//! `--bmc`: node power at the wall, sampled from the server's BMC while a command
//! measures (crate `numalab-bmc`), recorded as `power.bmc` records beside the
//! measurement's own (RAPL/hwmon) figures.
//!
//! Why: per-watt comparisons between an Arm and an x86 server are only fair with the
//! same power source on both sides, and in a fleet the BMC is the source every node
//! has. Credentials come from the environment or from a file only its owner can read,
//! never from the command line: an address holding a password is refused.

use crate::CliError;
use clap::Args;
use numalab_bmc::watch::{Options, DEFAULT_IPMITOOL};
use numalab_schema::sink::Sink;
use numalab_schema::Classify;
use std::path::PathBuf;

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
        default_value_t = Options::new("").interval_ms,
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
        default_value = DEFAULT_IPMITOOL
    )]
    pub bmc_ipmitool: PathBuf,
}

pub use numalab_bmc::watch::{BmcPower, Watch, KEY_PREFIX};

impl BmcArgs {
    /// The watcher's options from the flags; `None` without `--bmc` (or an empty one).
    pub fn options(&self) -> Option<Options> {
        let spec = self
            .bmc
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())?;
        Some(Options {
            address: spec.to_string(),
            interval_ms: self.bmc_interval,
            password_file: self.bmc_password_file.clone(),
            insecure: self.bmc_insecure,
            ca_file: self.bmc_ca_file.clone(),
            cipher_suite: self.bmc_cipher_suite,
            ipmitool: self.bmc_ipmitool.clone(),
        })
    }

    /// The BMC to sample, or `None` without `--bmc`: checked and read once
    /// ([`BmcPower::open`]), so that a BMC that cannot be reached is an error before
    /// anything is measured.
    pub fn open(&self) -> Result<Option<BmcPower>, CliError> {
        let Some(opts) = self.options() else {
            return Ok(None);
        };
        BmcPower::open(&opts).map(Some).map_err(|e| {
            let what = numalab_bmc::watch::shown(&opts.address);
            CliError::new(e.class(), format!("--bmc {what}: {e}"))
        })
    }
}

/// Starts sampling during `during`; `None`, with a warning on stderr, when the BMC
/// cannot be opened now: a measurement is never lost to its power figure.
pub fn start(power: &BmcPower, during: &str) -> Option<Watch> {
    let started = power.start_or_warning(during);
    started.map_err(|w| eprintln!("numalab: warning: {w}")).ok()
}

/// Stops sampling and records it under `power/bmc/<key>`; a failure is a warning.
pub fn finish(watch: Watch, key: &str, sink: &mut dyn Sink) {
    if let Err(w) = watch.finish_or_warning(key, sink) {
        eprintln!("numalab: warning: {w}");
    }
}
