//! `numa-guest`: boots the NUMA test guests and runs the suite (`run`), lists the checks
//! (`list`), or, inside the guest, runs them (`guest`, started by the initramfs); `touch`
//! is the test program the `numalab policy` checks run, `spin` the loop of known
//! instruction count the `numalab profile` checks count.

use clap::{Parser, Subcommand};
use numalab_numa_guest::host::{self, HostRun, Options};
use numalab_numa_guest::platform::{Arch, Boot, Wide};
use numalab_numa_guest::{guest, spin, touch};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// numalab's multi-node NUMA suite in QEMU guests: an x86-64 guest with 5 emulated nodes
/// (one memory-only), and an emulated Arm Neoverse N1 server with 4 nodes in 2 sockets
/// (booted three ways: plain, with precise instruction counting, and with SVE).
#[derive(Debug, Parser)]
#[command(name = "numa-guest", version)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Cmd {
    /// Build the initramfs, boot the guest, run the suite, report; exit 1 on any failure.
    Run {
        /// The guest's architecture: x86_64 or aarch64.
        #[arg(long, default_value = "x86_64", value_parser = Arch::parse)]
        arch: Arch,
        /// Only these boots (comma-separated; x86_64: x86, wide; aarch64: n1, n1-icount,
        /// sve, n1-wide).
        #[arg(long, value_name = "NAMES")]
        boot: Option<String>,
        /// CPUs of the wide boot (`--boot wide` or `n1-wide`; default 32 on x86, 160 with
        /// --wide-long, 64 on Arm): a multiple of its node count (2 on x86, 4 on Arm).
        #[arg(long, env = "NUMALAB_WIDE_CPUS", value_name = "N")]
        wide_cpus: Option<u32>,
        /// The wide boot's long mode: bigger nodes, every command as a user runs it
        /// (the full evaluate included) instead of their quick forms.
        #[arg(long)]
        wide_long: bool,
        /// The numalab binary to test (built for the guest's architecture).
        #[arg(long, value_name = "PATH")]
        numalab: PathBuf,
        /// The numa-guest binary for inside the guest (default: this program; the Arm
        /// guest needs the aarch64 build).
        #[arg(long, value_name = "PATH")]
        guest_exe: Option<PathBuf>,
        /// Guest kernel (default on x86: the newest Debian /boot/vmlinuz-*-amd64).
        #[arg(long, env = "NUMALAB_GUEST_KERNEL", value_name = "PATH")]
        kernel: Option<PathBuf>,
        /// busybox for the guest (default on x86: the host's; Arm: busybox-static:arm64's).
        #[arg(long, value_name = "PATH")]
        busybox: Option<PathBuf>,
        /// Folder with the Arm guest kernel's virtio_mmio.ko and virtio_console.ko.
        #[arg(long, value_name = "DIR")]
        modules: Option<PathBuf>,
        /// QEMU accelerator: tcg (software emulation, works everywhere) or kvm.
        #[arg(long, env = "NUMALAB_GUEST_ACCEL", default_value = "tcg")]
        accel: String,
        /// Hard time limit for the guest, seconds; QEMU is killed after it.
        #[arg(long, env = "NUMALAB_GUEST_TIMEOUT", default_value_t = 600)]
        timeout: u64,
        /// More words for the guest kernel's command line, after the harness's own
        /// (e.g. `loglevel=7` to see the backtraces `quiet` hides, `nohz=off`).
        #[arg(
            long,
            env = "NUMALAB_GUEST_KERNEL_ARGS",
            value_name = "ARGS",
            default_value = ""
        )]
        kernel_args: String,
        /// Only checks whose name contains one of these comma-separated patterns.
        #[arg(long, env = "NUMALAB_GUEST_ONLY", value_name = "PATTERNS")]
        only: Option<String>,
        /// Keep the initramfs, console log and results in DIR (a folder per boot).
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
        /// Write the files the checks export (the evaluate bundle) to DIR/BOOT/.
        #[arg(long, value_name = "DIR")]
        export: Option<PathBuf>,
        /// Echo the guest console live on stderr.
        #[arg(long, short)]
        verbose: bool,
        /// Also write the run (report, timings, console) as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
    },
    /// List the checks the guest runs, in order.
    List {
        /// The guest's architecture: x86_64 or aarch64.
        #[arg(long, default_value = "x86_64", value_parser = Arch::parse)]
        arch: Arch,
        /// Only these boots (comma-separated).
        #[arg(long, value_name = "NAMES")]
        boot: Option<String>,
        /// CPUs of the wide boot (`--boot wide` or `n1-wide`; default 32 on x86, 160 with
        /// --wide-long, 64 on Arm): a multiple of its node count (2 on x86, 4 on Arm).
        #[arg(long, env = "NUMALAB_WIDE_CPUS", value_name = "N")]
        wide_cpus: Option<u32>,
        /// The wide boot's long mode: bigger nodes, every command as a user runs it
        /// (the full evaluate included) instead of their quick forms.
        #[arg(long)]
        wide_long: bool,
        /// Only checks whose name contains one of these comma-separated patterns.
        #[arg(long)]
        only: Option<String>,
    },
    /// A loop of exactly 2 instructions per iteration (the `numalab profile` checks
    /// compare the counted instructions with it); prints the iterations done.
    Spin {
        /// Iterations.
        #[arg(long, default_value_t = 100_000_000)]
        iterations: u64,
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
        "numa-guest[{}]: kernel {} ({}, booted as {}), {}, initramfs {:.1} MiB built in {:.1} s",
        run.boot,
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
        "numa-guest[{}]: boot {} (guest uptime at suite start), suite {}, QEMU wall {:.1} s",
        run.boot,
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
    for p in &run.exported {
        println!("numa-guest[{}]: exported {}", run.boot, p.display());
    }
    println!(
        "numa-guest[{}]: {} passed, {} failed",
        run.boot,
        r.passed(),
        r.failed()
    );
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
        Cmd::Spin { iterations } => {
            println!("{}", spin::run(iterations));
            ExitCode::SUCCESS
        }
        Cmd::List {
            arch,
            boot,
            wide_cpus,
            wide_long,
            only,
        } => {
            let wide = Wide {
                cpus: wide_cpus,
                long: wide_long,
            };
            let boots = match Boot::select(arch, boot.as_deref(), wide) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("numa-guest: {e}");
                    return ExitCode::from(2);
                }
            };
            for b in boots {
                for name in numalab_numa_guest::suite::planned_names(&b, only.as_deref()) {
                    println!("{} {name}", b.name);
                }
            }
            ExitCode::SUCCESS
        }
        Cmd::Run {
            arch,
            boot,
            wide_cpus,
            wide_long,
            numalab,
            guest_exe,
            kernel,
            busybox,
            modules,
            accel,
            timeout,
            kernel_args,
            only,
            keep,
            export,
            verbose,
            report,
        } => {
            let boots = match Boot::select(
                arch,
                boot.as_deref(),
                Wide {
                    cpus: wide_cpus,
                    long: wide_long,
                },
            ) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("numa-guest: {e}");
                    println!("numa-guest: 0 passed, 1 failed");
                    return ExitCode::from(2);
                }
            };
            let (mut passed, mut failed) = (0, 0);
            let mut runs = Vec::new();
            for b in boots {
                let name = b.name.clone();
                let opts = Options {
                    numalab: numalab.clone(),
                    guest_exe: guest_exe.clone(),
                    kernel: kernel.clone(),
                    busybox: busybox.clone(),
                    modules: modules.clone(),
                    accel: accel.clone(),
                    timeout: Duration::from_secs(timeout),
                    kernel_args: kernel_args.clone(),
                    keep: keep.as_ref().map(|k| k.join(&name)),
                    only: only.clone(),
                    verbose,
                    export: export.as_ref().map(|e| e.join(&name)),
                    boot: b,
                };
                match host::run(&opts) {
                    Ok(run) => {
                        print_run(&run);
                        passed += run.report.passed();
                        failed += run.report.failed();
                        runs.push(run);
                    }
                    Err(e) => {
                        eprintln!("numa-guest[{name}]: cannot run the guest:\n{e}");
                        failed += 1;
                    }
                }
            }
            if let Some(path) = report {
                let json = serde_json::to_string_pretty(&runs).expect("runs serialize");
                if let Err(e) = std::fs::write(&path, json) {
                    eprintln!("numa-guest: cannot write {}: {e}", path.display());
                    failed += 1;
                }
            }
            println!("numa-guest: {passed} passed, {failed} failed");
            if failed == 0 && passed > 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
