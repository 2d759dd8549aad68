//! The suite runner inside the guest (started by the initramfs's `/init`).
//!
//! It runs each planned check on its own thread (so pinning never leaks from one check
//! to the next, and a panic fails only its check), writes one event per check to the
//! results port, mirrors a human line on the console, and drains both before the
//! guest powers off.

use crate::checks::{self, panic_message, Ctx};
use crate::platform::Boot;
use crate::protocol::{Event, Outcome};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What the host tells the guest (written into the initramfs as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestConfig {
    /// The machine QEMU emulates (its layout and which checks run).
    pub boot: Boot,
    /// Path of the numalab binary in the guest.
    pub numalab: PathBuf,
    /// Only checks whose name contains one of these comma-separated patterns.
    pub only: Option<String>,
}

fn uptime_s() -> f64 {
    std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(-1.0)
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Runs the suite; returns the process exit code (0: every check passed).
pub fn run(config: &Path, results: &Path) -> i32 {
    let config: GuestConfig = match std::fs::read_to_string(config)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("numa-guest: cannot read {}: {e}", config.display());
            return 2;
        }
    };
    let mut port = match std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(results)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "numa-guest: cannot open the results port {}: {e}",
                results.display()
            );
            return 2;
        }
    };
    let mut emit = |e: &Event| {
        let _ = writeln!(port, "{}", e.encode());
        let _ = port.flush();
    };
    let plan = checks::select(crate::suite::plan(&config.boot), config.only.as_deref());
    emit(&Event::Start {
        uptime_s: uptime_s(),
        kernel: kernel_release(),
        planned: plan.iter().map(|c| c.name.clone()).collect(),
    });
    println!(
        "numa-guest: {} checks on kernel {} (uptime {:.1} s)",
        plan.len(),
        kernel_release(),
        uptime_s()
    );
    let ctx = Ctx::new(config.boot.clone(), config.numalab.clone());
    let (mut passed, mut failed) = (0, 0);
    for check in &plan {
        println!("numa-guest: running {}", check.name);
        let t0 = Instant::now();
        let result = std::thread::scope(|s| {
            s.spawn(|| (check.run)(&ctx))
                .join()
                .unwrap_or_else(|p| Err(panic_message(p)))
        });
        let ok = result.is_ok();
        if ok {
            passed += 1;
        } else {
            failed += 1;
        }
        let detail = result.unwrap_or_else(|e| e);
        println!(
            "numa-guest: {} {}: {detail}",
            if ok { "PASS" } else { "FAIL" },
            check.name
        );
        emit(&Event::Check(Outcome {
            name: check.name.clone(),
            passed: ok,
            detail,
            elapsed_ms: t0.elapsed().as_millis() as u64,
        }));
        for (name, content) in ctx.take_exports() {
            println!("numa-guest: exporting {name} ({} bytes)", content.len());
            emit(&Event::File {
                name,
                hex: crate::protocol::encode_hex(&content),
            });
        }
    }
    emit(&Event::End {
        uptime_s: uptime_s(),
        passed,
        failed,
    });
    println!("numa-guest: {passed} passed, {failed} failed");
    let _ = std::io::stdout().flush();
    // Wait until the serial ports have sent everything: init powers off right after.
    // SAFETY: tcdrain on file descriptors we own (or stdout); errors are harmless.
    unsafe {
        libc::tcdrain(port.as_raw_fd());
        libc::tcdrain(1);
    }
    if failed == 0 {
        0
    } else {
        1
    }
}
