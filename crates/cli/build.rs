//! Build facts for the `numalab` binary: how it is linked, and what `numalab --version`
//! names.
//!
//! **Position-dependent on GNU/Linux.** A position-independent executable is relocated by
//! the dynamic loader at every start: some 35,000 relative relocations that write about
//! 150 pages of `.data.rel.ro` (clap's argument tables, vtables, string slices), each page
//! a copy-on-write fault. On the development VM that was 138 of a short run's 337 page
//! faults, and the run took 6.5 ms instead of 8.5 ms (`perf stat -r 30 -e page-faults
//! numalab c2c --cpus 0-1 --samples 3 --round-trips 100 --json --out DIR`); a fixed
//! address needs no relocation. Libraries, tests and other binaries are not affected.
//! The self-contained build (scripts/static/env.sh) asks for the same with
//! `-C relocation-model=static`, which makes rustc link with `-static` (its default,
//! `-static-pie`, followed by this `-no-pie` would give a dynamically linked file).
//!
//! **The build line** (`NUMALAB_BUILD`, shown by `numalab --version` under the version):
//! the commit checked out when it was built (`git rev-parse`, or `NUMALAB_BUILD_COMMIT` for
//! a build outside a checkout; uncommitted changes are not detected: the build script
//! runs again when HEAD moves, not when a file changes), the target, the linkage (static
//! when the target feature `crt-static` is on: glibc and hwloc inside the file) with the hwloc
//! release it was built against (`NUMALAB_BUILD_HWLOC`, set by scripts/static/env.sh; a
//! dynamic build uses the system's at run time), and the enabled features.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=numalab=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
    for var in ["NUMALAB_BUILD_COMMIT", "NUMALAB_BUILD_HWLOC"] {
        println!("cargo:rerun-if-env-changed={var}");
    }

    let commit = std::env::var("NUMALAB_BUILD_COMMIT").ok().or_else(|| {
        let head = git(&["rev-parse", "--short=12", "HEAD"])?;
        // The HEAD file and the branch it names change with every commit.
        // (`--git-path` finds them in a worktree too; a packed ref has no file to watch
        // until the next commit writes it, and a missing path would rerun every build.)
        let watch = |path: &str| {
            if let Some(p) = git(&["rev-parse", "--path-format=absolute", "--git-path", path]) {
                if std::path::Path::new(&p).exists() {
                    println!("cargo:rerun-if-changed={p}");
                }
            }
        };
        watch("HEAD");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch(&branch);
        }
        Some(head)
    });
    let target = std::env::var("TARGET").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let linkage = if features.split(',').any(|f| f == "crt-static") {
        match std::env::var("NUMALAB_BUILD_HWLOC") {
            Ok(v) => format!("static (glibc, hwloc {v})"),
            Err(_) => "static".to_string(),
        }
    } else {
        "dynamic (the system's hwloc)".to_string()
    };
    let mut cargo_features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_")
                .map(|f| f.to_ascii_lowercase().replace('_', "-"))
        })
        .collect();
    cargo_features.sort();
    let features = if cargo_features.is_empty() {
        "none".to_string()
    } else {
        cargo_features.join(", ")
    };
    println!(
        "cargo:rustc-env=NUMALAB_BUILD=commit {}, {target}, {linkage}, features: {features}",
        commit
            .as_deref()
            .unwrap_or("unknown (not built from a git checkout)")
    );
}
