//! numalab's fleet machinery alone, without the rest of the CLI, for the tests (they put
//! it behind a fake numalab so that srun, mpirun and sbatch start the real code):
//!
//! ```text
//! numalab-fleet-agent [--numalab PATH] --node NAME --timeout DUR [--shared DIR] -- COMMAND...
//! numalab-fleet-agent run [--numalab PATH] [fleet run options as written by --sbatch] -- COMMAND...
//! ```
//!
//! The first is `numalab fleet node`; the second `numalab fleet run` for the option
//! shapes `sbatch_argv` writes (no progress bar, the summary as JSON on stdout). Without
//! `--numalab` the command is run with `numalab` from `PATH`.

use std::path::PathBuf;
use std::time::Duration;

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("numalab-fleet-agent: {msg}");
    std::process::exit(2);
}

fn run(args: &[String]) -> i32 {
    let mut o = numalab_fleet::FleetRunOptions::new("", "numalab", env!("CARGO_PKG_VERSION"));
    let mut fleet = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .unwrap_or_else(|| fail(format!("{a} needs a value")))
        };
        match a.as_str() {
            "--launcher" => o.launcher = value().parse().unwrap_or_else(|e| fail(e)),
            "--nodes" => o.nodes = Some(value()),
            "--hostfile" => o.hostfile = Some(PathBuf::from(value())),
            "--parallel" => o.parallel = value().parse().unwrap_or_else(|e| fail(e)),
            "--timeout" => {
                o.timeout = humantime::parse_duration(&value()).unwrap_or_else(|e| fail(e))
            }
            "--shared" => o.shared = Some(PathBuf::from(value())),
            "--launcher-arg" => o.launcher_args.push(value()),
            "--restart" => o.restart = true,
            "--sbatch" => o.sbatch = true,
            "--fleet" => fleet = Some(PathBuf::from(value())),
            "--numalab" => o.numalab = PathBuf::from(value()),
            "--" => {
                o.command = it.by_ref().cloned().collect();
                break;
            }
            other => fail(format!("unknown option {other:?}")),
        }
    }
    o.fleet = fleet.unwrap_or_else(|| fail("--fleet DIR is missing"));
    o.kill_margin = Duration::from_secs(30);
    match numalab_fleet::run_fleet(&o, &()) {
        Ok(s) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&s).expect("summary serializes")
            );
            i32::from(!s.all_done())
        }
        Err(e) => fail(e),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("run") {
        std::process::exit(run(&args[1..]));
    }
    let opts =
        numalab_fleet::AgentOptions::from_args(&args, "numalab".into(), env!("CARGO_PKG_VERSION"))
            .unwrap_or_else(|e| fail(e));
    match numalab_fleet::run_agent(&opts) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("numalab-fleet-agent: {e}");
            std::process::exit(1);
        }
    }
}
