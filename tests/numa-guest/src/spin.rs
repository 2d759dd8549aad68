//! A loop whose instruction count is known exactly: 2 instructions per iteration
//! (decrement-and-set-flags, branch-if-not-zero), written in assembly so the compiler
//! cannot change it. `numalab profile` of `numa-guest spin --iterations N` must count
//! 2N instructions plus the program's start-up, which a run with N = 0 measures.

/// Runs `iterations` iterations of the 2-instruction loop; returns the iterations done.
pub fn run(iterations: u64) -> u64 {
    if iterations == 0 {
        return 0;
    }
    #[allow(unused_mut)]
    let mut n = iterations;
    // SAFETY: the loop only decrements a register it owns and branches within itself.
    #[cfg(target_arch = "aarch64")]
    unsafe {
        core::arch::asm!(
            "2:",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            n = inout(reg) n,
            options(nomem, nostack)
        );
    }
    // SAFETY: as above.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        core::arch::asm!(
            "2:",
            "dec {n}",
            "jnz 2b",
            n = inout(reg) n,
            options(nomem, nostack)
        );
    }
    #[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
    {
        while n > 0 {
            n = std::hint::black_box(n) - 1;
        }
    }
    iterations - n
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_loop_runs_to_zero() {
        assert_eq!(super::run(0), 0);
        assert_eq!(super::run(12345), 12345);
    }
}
