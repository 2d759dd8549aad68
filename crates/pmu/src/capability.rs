//! What counting this machine allows, found by trying (perf_event_open on this
//! process) rather than guessing from the CPU model.

use numalab_perfopen as perfopen;
use numalab_perfopen::Encoding;
use perf_event::events::{Hardware, Software};

// What the check records lives in numalab-records.
pub use numalab_records::pmu::{Capability, EventStatus};

/// The status of an event that failed to open or to count, from the error's class
/// ([`perfopen::Failure`]): an event the kernel does not have or takes as invalid is
/// not supported, a refusal is denied, anything else failed.
pub(crate) fn status_from_error(e: &std::io::Error) -> EventStatus {
    match perfopen::Failure::of_io(e) {
        perfopen::Failure::NotSupported | perfopen::Failure::Invalid => {
            EventStatus::NotSupported(e.to_string())
        }
        perfopen::Failure::Denied => EventStatus::Denied(e.to_string()),
        perfopen::Failure::Busy
        | perfopen::Failure::TooMany
        | perfopen::Failure::NoSuchTask
        | perfopen::Failure::Other => EventStatus::Failed(e.to_string()),
    }
}

/// Opens `event` on the calling thread (user space only) and counts a little work.
fn try_event(event: Encoding) -> EventStatus {
    match perfopen::builder(
        &event,
        perfopen::Target::CallingThread,
        perfopen::Exclude::KERNEL_AND_HV,
    )
    .build()
    {
        Ok(mut counter) => {
            let ok = counter.enable().and_then(|_| {
                // A little work so that the counter moves.
                let mut x = 0u64;
                for i in 0..10_000u64 {
                    x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
                }
                std::hint::black_box(x);
                counter.disable()?;
                counter.read()
            });
            match ok {
                Ok(_) => EventStatus::Works,
                Err(e) => status_from_error(&e),
            }
        }
        Err(e) => status_from_error(&e),
    }
}

/// Probes this machine.
pub fn probe() -> Capability {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    let privileged = probe_is_root();
    let mut pmus: Vec<String> = std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    pmus.sort();
    Capability {
        paranoid,
        privileged,
        cycles: try_event(Encoding::of(Hardware::CPU_CYCLES)),
        instructions: try_event(Encoding::of(Hardware::INSTRUCTIONS)),
        task_clock: try_event(Encoding::of(Software::TASK_CLOCK)),
        page_faults: try_event(Encoding::of(Software::PAGE_FAULTS)),
        context_switches: try_event(Encoding::of(Software::CONTEXT_SWITCHES)),
        pmus,
    }
}

/// Whether this process runs as root (which overrides perf_event_paranoid).
pub fn probe_is_root() -> bool {
    numalab_proc::effective_uid() == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn software_task_clock_counts_here() {
        // Every Linux machine numalab supports has software events, including this
        // PMU-less VM; hardware events may or may not work and are only reported.
        let c = probe();
        assert!(c.task_clock.works(), "{c:?}");
        assert!(!c.verdict().is_empty());
    }

    #[test]
    fn errno_classification() {
        let e = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert!(matches!(
            status_from_error(&e),
            EventStatus::NotSupported(_)
        ));
        let e = std::io::Error::from_raw_os_error(libc::EACCES);
        assert!(matches!(status_from_error(&e), EventStatus::Denied(_)));
    }

    #[test]
    fn every_errno_keeps_the_status_it_had() {
        // The statuses before the classification moved to numalab-perfopen.
        let not_supported = [libc::ENOENT, libc::EOPNOTSUPP, libc::ENODEV, libc::EINVAL];
        let denied = [libc::EACCES, libc::EPERM];
        let failed = [
            libc::EBUSY,
            libc::EMFILE,
            libc::ENFILE,
            libc::ENOSPC,
            libc::ESRCH,
            libc::E2BIG,
            libc::EIO,
        ];
        for n in not_supported {
            let e = std::io::Error::from_raw_os_error(n);
            assert_eq!(
                status_from_error(&e),
                EventStatus::NotSupported(e.to_string())
            );
        }
        for n in denied {
            let e = std::io::Error::from_raw_os_error(n);
            assert_eq!(status_from_error(&e), EventStatus::Denied(e.to_string()));
        }
        for n in failed {
            let e = std::io::Error::from_raw_os_error(n);
            assert_eq!(status_from_error(&e), EventStatus::Failed(e.to_string()));
        }
        let e = std::io::Error::other("no errno");
        assert_eq!(
            status_from_error(&e),
            EventStatus::Failed("no errno".into())
        );
    }
}
