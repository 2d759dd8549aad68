//! The crate's raw access behind safe functions: the line's first word seen as an
//! atomic, and (for the tests) the calling thread's CPU affinity. The only module of
//! the crate with `unsafe`.

use numalab_topo::bind::Region;
use std::sync::atomic::AtomicU64;

// The cast in `first_word` relies on these.
const _: () = assert!(std::mem::size_of::<AtomicU64>() == std::mem::size_of::<u64>());
const _: () = assert!(std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>());

/// The first 8 bytes of `region` as an atomic word, for as long as the region stays
/// borrowed. Panics on a region shorter than one word.
pub(crate) fn first_word(region: &mut Region) -> &AtomicU64 {
    let word: &mut u64 = &mut region.as_mut_typed::<u64>()[0];
    // SAFETY: `word` is a valid, aligned u64 (a typed view of the live, page-aligned
    // mapping), and AtomicU64 has the size and alignment of u64 (asserted above). The
    // pointer comes from an exclusive borrow of the region that the returned reference
    // keeps alive, so every access to the word while it lives is through the atomic.
    unsafe { &*(word as *mut u64 as *const AtomicU64) }
}

/// How many of the CPUs 0..64 the calling thread may run on (sched_getaffinity(2)).
#[cfg(test)]
pub(crate) fn allowed_cpus() -> usize {
    // SAFETY: cpu_set_t is a plain bit array, for which all zero bytes are a valid
    // (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: the kernel writes at most `size` bytes into `set`, a live set we own, of
    // that size.
    let rc = unsafe { libc::sched_getaffinity(0, size, &mut set) };
    assert_eq!(rc, 0);
    let is_set = |c: usize| {
        // SAFETY: CPU_ISSET only reads the set, and every index below 64 is inside it.
        unsafe { libc::CPU_ISSET(c, &set) }
    };
    (0..64).filter(|&c| is_set(c)).count()
}
