//! The CPUs this process and its threads may run on (`sched_getaffinity`).

use crate::error::HomeError;

/// The CPUs this process may run on (the main thread's affinity).
pub fn allowed_cpus() -> Result<Vec<u32>, HomeError> {
    affinity(crate::sys::getpid())
}

/// The affinity of a thread (0: the calling one).
pub(super) fn affinity(pid: libc::pid_t) -> Result<Vec<u32>, HomeError> {
    let mut words = 16usize;
    loop {
        let mut mask = vec![0u64; words];
        let rc = crate::sys::sched_getaffinity(pid, &mut mask);
        if rc == 0 {
            let mut cpus = Vec::new();
            for (w, bits) in mask.iter().enumerate() {
                for b in 0..64 {
                    if bits >> b & 1 == 1 {
                        cpus.push((w * 64 + b) as u32);
                    }
                }
            }
            return Ok(cpus);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINVAL) && words < 1 << 14 {
            words *= 4;
            continue;
        }
        return Err(HomeError::Runtime(format!(
            "sched_getaffinity failed: {}",
            numalab_schema::text::io_reason(&e)
        )));
    }
}
