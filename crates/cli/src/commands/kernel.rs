//! `numalab kernel`: programs whose counter readings are known before they run
//! (`numalab_profile::kernels`), to check a profile on real hardware:
//! `numalab profile -- numalab kernel branchy` must show about one branch miss in two
//! iterations. Prints what ran and what a correct PMU counts for the whole process.

use crate::{CliError, CliResult};
use clap::{Args, Subcommand};
use numalab_profile::kernels::{self, KernelRun};
use numalab_schema::ErrorClass;

/// `numalab kernel`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab profile -- numalab kernel chase --bytes 1GiB\n  numalab profile -- numalab kernel branchy --iterations 100000000\n  numalab kernel branchy --json"
)]
pub struct KernelArgs {
    /// Which kernel.
    #[command(subcommand)]
    pub kernel: Kernel,
    /// Print what ran and the expectations as JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

/// The kernels.
#[derive(Debug, Subcommand)]
pub enum Kernel {
    /// A pointer chase through one random cycle over a buffer's cache lines: dependent
    /// loads, each a miss of every cache smaller than the buffer.
    Chase {
        /// Buffer size.
        #[arg(long, value_name = "SIZE", default_value = "256MiB")]
        bytes: String,
        /// Dependent loads.
        #[arg(long, value_name = "N", default_value_t = 20_000_000)]
        steps: u64,
        /// Seed of the cycle.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// A loop whose branch follows a fresh pseudo-random bit: about one mispredicted
    /// branch in two iterations on any predictor.
    Branchy {
        /// Iterations.
        #[arg(long, value_name = "N", default_value_t = 100_000_000)]
        iterations: u64,
        /// Seed of the bits.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

/// Runs `numalab kernel`.
pub fn run(a: KernelArgs) -> CliResult {
    let r: KernelRun = match a.kernel {
        Kernel::Chase { bytes, steps, seed } => kernels::chase_of_size(&bytes, steps, seed)
            .map_err(|e| CliError::new(ErrorClass::Usage, e))?,
        Kernel::Branchy { iterations, seed } => kernels::branchy(iterations, seed),
    };
    if let Some(msg) = r.interrupted() {
        return Err(CliError::new(ErrorClass::Interrupted, msg));
    }
    match a.json {
        true => println!("{}", r.to_json()),
        false => r.lines().iter().for_each(|l| println!("{l}")),
    }
    Ok(())
}
