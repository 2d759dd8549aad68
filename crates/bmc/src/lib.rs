//! Node power at the wall, from the server's baseboard management controller (BMC).
//!
//! RAPL and hwmon (`numalab-sensors`) see the CPU package or the SoC; only the BMC sees
//! the whole node: fans, memory, disks, NICs, voltage regulators and power-supply
//! losses. This crate reads it three ways, each behind [`PowerSource`]:
//!
//! - **IPMI DCMI** ([`IpmiDcmiSource`]): DCMI Get Power Reading through `ipmitool`,
//!   in-band (the local driver, `/dev/ipmi0`, needs root) or over the LAN
//!   (`-I lanplus`). Covers the node at the power-supply input as the BMC defines it;
//!   gives the instantaneous figure plus minimum, maximum and average over the BMC's
//!   statistics period. Many BMCs implement it; some answer "Invalid command" or
//!   report it deactivated.
//! - **IPMI sensor records** ([`IpmiSdrSource`]): the BMC's sensors with unit Watts
//!   (`ipmitool sdr elist full`, `sdr type Current` or `sensor list`): a total sensor
//!   ("Total_Power", "Pwr Consumption") when there is one, else the sum of the
//!   power-supply input sensors ("PS1 Input Power", ...). The source names the sensors
//!   used. Reading every record over the LAN can take seconds on a BMC with hundreds
//!   of sensors. Integer sensor readings are quantised by the sensor's conversion
//!   factor (often 2 to 10 W steps).
//! - **Redfish** ([`RedfishSource`]): `/redfish/v1/Chassis/{id}` `EnvironmentMetrics`
//!   `PowerWatts` or the power supplies' `InputPowerWatts` (`PowerSubsystem`), else the
//!   deprecated `Power` resource (`PowerControl[].PowerConsumedWatts`,
//!   `PowerSupplies[].PowerInputWatts`). HTTPS with certificate verification unless
//!   `insecure` is asked for (and then recorded); bounded time, size and requests.
//!
//! A [`Sampler`] reads a source every N milliseconds on a background thread during a
//! measurement and returns a [`BmcPowerRecord`] (defined in `numalab-records`): the
//! samples with their times, the source, what it covers ("whole node at the wall
//! (BMC)"), and the reads that failed (a source failing mid-run is recorded, not fatal).
//!
//! **Limits of every BMC figure.** The BMC averages over its own window (often 1 s,
//! sometimes longer, its statistics period is recorded where DCMI reports it) and
//! refreshes about once a second, so the figure lags the load by a second or more and
//! cannot resolve shorter phases; sampling faster than the refresh only repeats values.
//! Its accuracy is the power supplies' (a few percent, worse at low load). It includes
//! everything on the node, including idle devices, so differences between runs mean
//! more than absolute values. A BMC shared by several nodes (a multi-node chassis) may
//! report the enclosure.
//!
//! **Credentials** never appear in a result, a `Debug` print, a log or an error: they
//! are held in [`Secret`] (prints `***`), passed to `ipmitool` through its environment
//! (`-E`) or an owner-only file (`-f`), never on a command line, and text from outside
//! (`ipmitool`'s stderr, HTTP errors) is scrubbed of them.

#![deny(missing_docs)]

mod address;
mod command;
pub mod dcmi;
mod error;
pub mod ipmi;
pub mod redfish;
mod sampler;
pub mod sdr;
mod secret;
pub mod watch;

pub use error::BmcError;
pub use ipmi::{
    ipmi_source, DcmiMode, IpmiConfig, IpmiDcmiSource, IpmiLan, IpmiPassword, IpmiSdrSource,
    IpmiTarget, Ipmitool, SdrListing, IPMI_PASSWORD_ENV,
};
pub use numalab_records::bmc::{
    BmcAccess, BmcPowerRecord, BmcReading, BmcSample, BmcSampleError, BmcSource, BmcSourceKind,
    PowerPart, RedfishTransport, COVERS_WHOLE_NODE,
};
pub use redfish::{
    RedfishConfig, RedfishCredentials, RedfishResource, RedfishSource, REDFISH_PASSWORD_ENV,
    REDFISH_USERNAME_ENV,
};
pub use sampler::{Sampler, MAX_KEPT_ERRORS};
pub use secret::{check_owner_only, read_owner_only_file, scrub, Secret};

use std::sync::atomic::AtomicBool;

/// A BMC power figure that can be read repeatedly.
pub trait PowerSource: Send {
    /// Where the figures come from, as recorded (after a read, the sensors actually used).
    fn source(&self) -> BmcSource;

    /// Reads node power once. `cancel` set to true asks a read in flight to stop early
    /// (an `ipmitool` run is killed).
    fn read(&mut self, cancel: &AtomicBool) -> Result<BmcReading, BmcError>;

    /// Reads once, without a way to cancel.
    fn read_once(&mut self) -> Result<BmcReading, BmcError> {
        self.read(&AtomicBool::new(false))
    }
}
