//! The `numalab` binary: parse, run, map the outcome to a documented exit code.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    // A child started to check a topology file from another machine does only that
    // (numalab_topo::isolate): hwloc crashing on it must not take this process down.
    numalab_topo::child_entry();
    // Die quietly on a closed pipe (`numalab topo | head`) like other Unix tools,
    // instead of panicking in println!.
    numalab_cli::sys::default_sigpipe();
    numalab_cli::main()
}
