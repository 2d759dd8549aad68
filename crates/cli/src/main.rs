//! The `numalab` binary: parse, run, map the outcome to a documented exit code.

fn main() -> std::process::ExitCode {
    numalab_cli::main()
}
