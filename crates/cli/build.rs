//! Links the `numalab` binary as a position-dependent executable on GNU/Linux.
//!
//! A position-independent executable is relocated by the dynamic loader at every start:
//! some 35,000 relative relocations that write about 150 pages of `.data.rel.ro` (clap's
//! argument tables, vtables, string slices), each page a copy-on-write fault. On the
//! development VM that was 138 of a short run's 337 page faults, and the run took 6.5 ms
//! instead of 8.5 ms (`perf stat -r 30 -e page-faults numalab c2c --cpus 0-1 --samples 3
//! --round-trips 100 --json --out DIR`); a fixed address needs no relocation. Libraries,
//! tests and other binaries are not affected.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=numalab=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
