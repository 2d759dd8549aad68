//! `numa-guest`: boots the NUMA test guest and runs the suite (`run`), lists the checks
//! (`list`), or, inside the guest, runs them (`guest`, started by the initramfs); `touch`
//! is the test program the `numalab policy` checks run.

use clap::{Parser, Subcommand};
use numalab_numa_guest::host::{self, HostRun, Options};
use numalab_numa_guest::layout::Layout;
use numalab_numa_guest::{checks, guest, touch};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// numalab's multi-node NUMA suite in a QEMU guest (5 emulated nodes, one memory-only).
#[derive(Debug, Parser)]
#[command(name = "numa-guest", version)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Build the initramfs, boot the guest, run the suite, report; exit 1 on any failure.
    Run {
        /// The numalab binary to test.
        #[arg(long, value_name = "PATH")]
        numalab: PathBuf,
        /// Guest kernel (default: the newest Debian /boot/vmlinuz-*-amd64).
        #[arg(long, env = "NUMALAB_GUEST_KERNEL", value_name = "PATH")]
        kernel: Option<PathBuf>,
        /// QEMU accelerator: tcg (software emulation, works everywhere) or kvm.
        #[arg(long, env = "NUMALAB_GUEST_ACCEL", default_value = "tcg")]
        accel: String,
        /// Hard time limit for the guest, seconds; QEMU is killed after it.
        #[arg(long, env = "NUMALAB_GUEST_TIMEOUT", default_value_t = 600)]
        timeout: u64,
        /// Only checks whose name contains one of these comma-separated patterns.
        #[arg(long, env = "NUMALAB_GUEST_ONLY", value_name = "PATTERNS")]
        only: Option<String>,
        /// Keep the initramfs, console log and results in DIR.
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
        /// Echo the guest console live on stderr.
        #[arg(long, short)]
        verbose: bool,
        /// Also write the run (report, timings, console) as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
    },
    /// List the checks the guest runs, in order.
    List {
        /// Only checks whose name contains one of these comma-separated patterns.
        #[arg(long)]
        only: Option<String>,
    },
    /// A test program for `numalab policy`: threads pinned one per allowed CPU map and
    /// touch memory, hold it, and print where numa_maps says it is (one JSON line).
    Touch {
        /// Memory to touch, all threads together, MiB.
        #[arg(long, default_value_t = 32)]
        mib: u64,
        /// Threads (thread i pins itself to the i-th CPU of the process's affinity).
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// How long to hold the memory after touching it, ms.
        #[arg(long, default_value_t = 1000)]
        hold_ms: u64,
    },
    /// Inside the guest: run the suite (started by the initramfs's /init).
    #[command(hide = true)]
    Guest {
        /// The guest configuration written by the host.
        #[arg(long)]
        config: PathBuf,
        /// Where the result events go (the second serial port).
        #[arg(long)]
        results: PathBuf,
    },
}

fn print_run(run: &HostRun) {
    let r = &run.report;
    eprintln!(
        "numa-guest: kernel {} ({}, booted as {}), {}, initramfs {:.1} MiB built in {:.1} s",
        r.kernel.as_deref().unwrap_or("?"),
        run.tools.kernel.display(),
        run.kernel_boot,
        run.accel.to_uppercase(),
        run.initramfs_bytes as f64 / 1048576.0,
        run.initramfs_build_s
    );
    for o in &r.outcomes {
        println!(
            "{} {:<24} {:>6} ms  {}",
            if o.passed { "PASS" } else { "FAIL" },
            o.name,
            o.elapsed_ms,
            o.detail.replace('\n', "\n      ")
        );
    }
    let fmt = |v: Option<f64>| v.map_or("?".into(), |s| format!("{s:.1} s"));
    println!(
        "numa-guest: boot {} (guest uptime at suite start), suite {}, QEMU wall {:.1} s",
        fmt(r.boot_s),
        fmt(r.suite_s),
        run.qemu_wall_s
    );
    if !r.ok() {
        eprintln!("---- guest console ----");
        eprint!("{}", run.console);
        if !run.qemu_stderr.trim().is_empty() {
            eprintln!("---- QEMU stderr ----");
            eprint!("{}", run.qemu_stderr);
        }
        eprintln!("---- end ----");
        for p in &r.problems {
            println!("PROBLEM {p}");
        }
        for o in r.outcomes.iter().filter(|o| !o.passed) {
            println!("FAILED {}: {}", o.name, o.detail);
        }
    }
    println!("numa-guest: {} passed, {} failed", r.passed(), r.failed());
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Cmd::Touch {
            mib,
            threads,
            hold_ms,
        } => match touch::run(mib << 20, threads, Duration::from_millis(hold_ms)) {
            Ok(r) => {
                println!("{}", serde_json::to_string(&r).expect("report serializes"));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("numa-guest touch: {e}");
                ExitCode::FAILURE
            }
        },
        Cmd::Guest { config, results } => ExitCode::from(guest::run(&config, &results) as u8),
        Cmd::List { only } => {
            for name in checks::planned_names(&Layout::standard(), only.as_deref()) {
                println!("{name}");
            }
            ExitCode::SUCCESS
        }
        Cmd::Run {
            numalab,
            kernel,
            accel,
            timeout,
            only,
            keep,
            verbose,
            report,
        } => {
            let opts = Options {
                numalab,
                kernel,
                accel,
                timeout: Duration::from_secs(timeout),
                keep,
                only,
                verbose,
                layout: Layout::standard(),
            };
            match host::run(&opts) {
                Ok(run) => {
                    print_run(&run);
                    if let Some(path) = report {
                        let json = serde_json::to_string_pretty(&run).expect("run serializes");
                        if let Err(e) = std::fs::write(&path, json) {
                            eprintln!("numa-guest: cannot write {}: {e}", path.display());
                            return ExitCode::FAILURE;
                        }
                    }
                    if run.report.ok() {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::FAILURE
                    }
                }
                Err(e) => {
                    eprintln!("numa-guest: cannot run the NUMA guest:\n{e}");
                    println!("numa-guest: 0 passed, 1 failed");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
