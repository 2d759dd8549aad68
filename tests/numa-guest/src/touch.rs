//! `numa-guest touch`: the small program `numalab policy` runs in the guest.
//!
//! `numalab policy -- CMD` needs a command that allocates and touches memory, and the
//! guest has no compiler or test programs besides numalab and this binary, so the
//! binary doubles as one. Each of its threads pins itself to one CPU of the process's
//! affinity (the set `numalab policy` gives it), maps its own share of the memory,
//! writes every page (the first touch, under whatever memory policy the process was
//! started with), waits at a barrier, then holds the memory (threads alive) for a while so that
//! `numa_maps` sampling sees it. Before exiting it reads `/proc/self/numa_maps` for its
//! own mappings and prints one JSON line: the kernel's own count of where the touched
//! pages are, independent of what numalab sampled, so a check can compare the two.
//!
//! With one thread all the memory is touched by the first CPU (a program whose data is
//! "concentrated"); with one thread per CPU each thread touches its own share (a
//! "balanced" program).

use crate::checks::numa_maps_of;
use numalab_topo::bind::{base_page_size, PageKind, Region};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Barrier;
use std::time::Duration;

/// What `numa-guest touch` prints (one JSON line on stdout).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TouchReport {
    /// Bytes mapped and written, all threads.
    pub touched_bytes: u64,
    /// The CPUs the threads pinned themselves to, in thread order.
    pub cpus: Vec<u32>,
    /// The CPUs of the process's affinity when it started.
    pub allowed_cpus: Vec<u32>,
    /// Pages of the touched regions per node, from numa_maps (node -> pages).
    pub pages_per_node: BTreeMap<u32, u64>,
    /// The memory policy numa_maps shows on the mapping ("default", "interleave"...).
    pub policy: String,
}

fn allowed_cpus() -> Result<Vec<u32>, String> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the size matches the set passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(format!(
            "sched_getaffinity: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok((0..libc::CPU_SETSIZE as u32)
        // SAFETY: i is below CPU_SETSIZE.
        .filter(|&i| unsafe { libc::CPU_ISSET(i as usize, &set) })
        .collect())
}

fn pin_this_thread(cpu: u32) -> Result<(), String> {
    // SAFETY: as above; cpu is below CPU_SETSIZE (it came from the affinity mask).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    // SAFETY: pid 0 is the calling thread; the size matches the set.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc != 0 {
        return Err(format!(
            "sched_setaffinity to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Maps and touches `bytes` with `threads` threads (thread i on the i-th allowed CPU,
/// modulo their number), holds it for `hold`, and reports where numa_maps says it is.
pub fn run(bytes: u64, threads: usize, hold: Duration) -> Result<TouchReport, String> {
    if threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    let allowed = allowed_cpus()?;
    if allowed.is_empty() {
        return Err("the process may run on no CPU".into());
    }
    let page = base_page_size() as u64;
    let per_thread = (bytes / threads as u64).div_ceil(page).max(1) * page;
    let cpus: Vec<u32> = (0..threads).map(|i| allowed[i % allowed.len()]).collect();
    // One mapping for all threads (each touches its own slice): separate mappings
    // could be merged by the kernel into one VMA with other memory, and numa_maps
    // speaks per VMA.
    let mut region = Region::new((per_thread * threads as u64) as usize, PageKind::Base)
        .map_err(|e| e.to_string())?;
    let barrier = Barrier::new(threads);
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = region
            .as_mut_slice()
            .chunks_mut(per_thread as usize)
            .zip(&cpus)
            .map(|(slice, &cpu)| {
                let barrier = &barrier;
                s.spawn(move || {
                    let pinned = pin_this_thread(cpu);
                    if pinned.is_ok() {
                        for chunk in slice.chunks_mut(page as usize) {
                            chunk[0] = 1;
                        }
                    }
                    // Everyone meets here, failed or not, so no thread waits forever.
                    barrier.wait();
                    // Hold with every thread alive: numalab's policy study keeps the
                    // sample with the most memory (buffer, stacks and arenas), and if the
                    // threads ended before the hold, a sample taken mid-touch with their
                    // stacks could outweigh the complete buffer without them (seen in CI:
                    // 784 of 819 interleaved pages on a node).
                    std::thread::sleep(hold);
                    pinned
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    for r in results {
        r?;
    }
    let e = numa_maps_of(&region)?;
    Ok(TouchReport {
        touched_bytes: region.len() as u64,
        cpus,
        allowed_cpus: allowed,
        pages_per_node: e.pages_per_node,
        policy: e.policy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touches_every_page_and_counts_them_where_the_kernel_put_them() {
        let page = base_page_size() as u64;
        let r = run(64 * page, 2, Duration::from_millis(1)).unwrap();
        assert_eq!(r.touched_bytes, 64 * page);
        // Every touched page is resident and counted on some node.
        assert_eq!(r.pages_per_node.values().sum::<u64>(), 64);
        assert_eq!(r.cpus.len(), 2);
        assert!(r.cpus.iter().all(|c| r.allowed_cpus.contains(c)));
        assert!(run(page, 0, Duration::ZERO).is_err());
    }
}
