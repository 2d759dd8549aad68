//! The `numalab` binary: parse, run, map the outcome to a documented exit code.

fn main() -> std::process::ExitCode {
    // A child started to check a topology file from another machine does only that
    // (numalab_topo::isolate): hwloc crashing on it must not take this process down.
    numalab_topo::child_entry();
    // Die quietly on a closed pipe (`numalab topo | head`) like other Unix tools,
    // instead of panicking in println!.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    numalab_cli::main()
}
