//! The CPUs this process and its threads may run on (`sched_getaffinity`).

use crate::error::HomeError;

/// The CPUs this process may run on (the main thread's affinity).
pub fn allowed_cpus() -> Result<Vec<u32>, HomeError> {
    // SAFETY: getpid has no preconditions.
    affinity(unsafe { libc::getpid() })
}

/// The affinity of a thread (0: the calling one).
pub(super) fn affinity(pid: libc::pid_t) -> Result<Vec<u32>, HomeError> {
    let mut words = 16usize;
    loop {
        let mut mask = vec![0u64; words];
        // SAFETY: the mask buffer is `words * 8` bytes long, as told.
        let rc = unsafe { libc::sched_getaffinity(pid, words * 8, mask.as_mut_ptr().cast()) };
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
        return Err(HomeError::Runtime(format!("sched_getaffinity failed: {e}")));
    }
}
