//! The table of `numalab` command lines run in the guest, each with an assertion on
//! its output: the place to add a check for a new multi-node command.
//!
//! A [`CliCheck`] runs `numalab ARGS` (after optional setup commands), requires an
//! exit code (0 unless said otherwise) and hands the parsed `--json` output (or the
//! text) to an assertion that returns `Ok(what was seen)` or `Err(what is wrong)`.
//! The assertion gets the [`Layout`] QEMU was started with, so expectations come from
//! the configuration, not from the guest. To add a check, add one entry to the list
//! in [`table`]:
//!
//! ```
//! # use numalab_numa_guest::cli_checks::{expect, records, CliCheck};
//! # let entry =
//! CliCheck::json(
//!     "mem.bandwidth.matrix",
//!     ["mem", "bandwidth", "--matrix", "--size", "4MiB", "--json"],
//!     |layout, json| {
//!         let cells = records(json, "mem.bandwidth")?;
//!         let n = layout.nodes.len();
//!         expect(cells.len() == n * n, format!("{n} x {n} cells, got {}", cells.len()))?;
//!         Ok(format!("{} cells", cells.len()))
//!     },
//! )
//! # ;
//! # assert_eq!(entry.args[0], "mem");
//! ```

use crate::checks::{compare_machine, Check, CheckResult, Ctx};
use crate::cli_asserts;
pub use crate::cli_asserts::{expect, records};
use crate::layout::Layout;
use numalab_schema::{cpulist, Machine};
use serde_json::Value;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where the `evaluate.quick` check writes its journal in the guest.
pub const EVALUATE_OUT: &str = "/tmp/numalab-evaluate";

/// The steps the `evaluate.quick` check leaves out on this architecture (see there).
pub const EVALUATE_SKIP: &[&str] = if cfg!(target_arch = "x86_64") {
    &["c2c", "migrate", "workload", "bandwidth"]
} else {
    &["c2c", "migrate", "workload"]
};

/// An assertion on JSON output.
pub type JsonAssertion = Box<dyn Fn(&Layout, &Value) -> CheckResult + Send + Sync>;
/// An assertion on text output.
pub type TextAssertion = Box<dyn Fn(&Layout, &str) -> CheckResult + Send + Sync>;

/// An assertion on a command's output.
pub enum Assertion {
    /// On stdout parsed as JSON.
    Json(JsonAssertion),
    /// On stdout as text.
    Text(TextAssertion),
}

/// A numalab command line run in the guest and what its output must show.
pub struct CliCheck {
    /// Check name (unique, dotted: `area.what`).
    pub name: String,
    /// Files written first (path, content), e.g. an input file for the command.
    pub files: Vec<(String, String)>,
    /// Commands run first, in order; each must exit 0 (e.g. to write an input file).
    pub setup: Vec<Vec<String>>,
    /// Commands run after `setup` whose stdout is saved to a file the assertion reads
    /// (e.g. a baseline run), as (arguments, path); each must exit 0.
    pub saved: Vec<(Vec<String>, String)>,
    /// The checked command's arguments (after `numalab`).
    pub args: Vec<String>,
    /// The exit code it must return.
    pub exit_code: i32,
    /// Longest time any one command may take in the guest (TCG is slow).
    pub timeout: Duration,
    /// The assertion.
    pub assert: Assertion,
    /// Files handed to the host once the check passed (see [`Ctx::export`]), as
    /// (path in the guest, name on the host).
    pub exports: Vec<(String, String)>,
}

fn strings<S: Into<String>>(args: impl IntoIterator<Item = S>) -> Vec<String> {
    args.into_iter().map(Into::into).collect()
}

impl CliCheck {
    /// Exit 0 expected, no files or setup, two minutes.
    fn with(name: &str, args: Vec<String>, assert: Assertion) -> CliCheck {
        CliCheck {
            name: name.into(),
            files: Vec::new(),
            setup: Vec::new(),
            saved: Vec::new(),
            args,
            exit_code: 0,
            timeout: Duration::from_secs(120),
            assert,
            exports: Vec::new(),
        }
    }

    /// A check whose stdout is JSON.
    pub fn json<S: Into<String>>(
        name: &str,
        args: impl IntoIterator<Item = S>,
        f: impl Fn(&Layout, &Value) -> CheckResult + Send + Sync + 'static,
    ) -> CliCheck {
        CliCheck::with(name, strings(args), Assertion::Json(Box::new(f)))
    }

    /// A check on stdout as text.
    pub fn text<S: Into<String>>(
        name: &str,
        args: impl IntoIterator<Item = S>,
        f: impl Fn(&Layout, &str) -> CheckResult + Send + Sync + 'static,
    ) -> CliCheck {
        CliCheck::with(name, strings(args), Assertion::Text(Box::new(f)))
    }

    /// Runs `numalab ARGS` first (must exit 0).
    pub fn after<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> CliCheck {
        self.setup.push(strings(args));
        self
    }

    /// Runs `numalab ARGS` first (must exit 0) and saves its stdout at `path`.
    pub fn save<S: Into<String>>(
        mut self,
        args: impl IntoIterator<Item = S>,
        path: &str,
    ) -> CliCheck {
        self.saved.push((strings(args), path.to_string()));
        self
    }

    /// Writes a file before anything runs (an input the command reads).
    pub fn file(mut self, path: &str, content: &str) -> CliCheck {
        self.files.push((path.to_string(), content.to_string()));
        self
    }

    /// The checked command must exit with this code (for bad-input checks; stdout is
    /// still handed to the assertion, stderr is appended to a text assertion's input).
    pub fn exit(mut self, code: i32) -> CliCheck {
        self.exit_code = code;
        self
    }

    /// Hands the file at `path` to the host as `name` once the check passed.
    pub fn export(mut self, path: &str, name: &str) -> CliCheck {
        self.exports.push((path.to_string(), name.to_string()));
        self
    }

    /// A longer or shorter per-command timeout.
    pub fn timeout(mut self, t: Duration) -> CliCheck {
        self.timeout = t;
        self
    }

    /// The runnable check.
    pub fn into_check(self) -> Check {
        let name = self.name.clone();
        Check::new(name, move |ctx: &Ctx| self.run(ctx))
    }

    fn run(&self, ctx: &Ctx) -> CheckResult {
        for (path, content) in &self.files {
            std::fs::write(path, content).map_err(|e| format!("writing {path}: {e}"))?;
        }
        for s in &self.setup {
            let out = run_numalab(ctx, s, self.timeout)?;
            if out.code != Some(0) {
                return Err(format!(
                    "setup `numalab {}` exited with {:?}: {}",
                    s.join(" "),
                    out.code,
                    tail(&out.stderr)
                ));
            }
        }
        for (s, path) in &self.saved {
            let out = run_numalab(ctx, s, self.timeout)?;
            if out.code != Some(0) {
                return Err(format!(
                    "`numalab {}` exited with {:?}: {}",
                    s.join(" "),
                    out.code,
                    tail(&out.stderr)
                ));
            }
            std::fs::write(path, &out.stdout).map_err(|e| format!("writing {path}: {e}"))?;
        }
        let out = run_numalab(ctx, &self.args, self.timeout)?;
        let cmd = format!("numalab {}", self.args.join(" "));
        if out.code != Some(self.exit_code) {
            return Err(format!(
                "`{cmd}` exited with {:?}, expected {}; stderr: {}",
                out.code,
                self.exit_code,
                tail(&out.stderr)
            ));
        }
        let seen = match &self.assert {
            Assertion::Json(f) => {
                let v: Value = serde_json::from_str(&out.stdout).map_err(|e| {
                    format!("`{cmd}` did not print JSON ({e}): {}", tail(&out.stdout))
                })?;
                f(&ctx.layout, &v)
            }
            Assertion::Text(f) => {
                let text = if self.exit_code == 0 {
                    out.stdout.clone()
                } else {
                    format!("{}{}", out.stdout, out.stderr)
                };
                f(&ctx.layout, &text)
            }
        };
        let seen = seen
            .map(|s| format!("`{cmd}`: {s}"))
            .map_err(|e| format!("`{cmd}`: {e}"))?;
        for (path, name) in &self.exports {
            let bytes = std::fs::read(path).map_err(|e| format!("exporting {path}: {e}"))?;
            ctx.export(name, bytes);
        }
        Ok(seen)
    }
}

/// What a command did.
pub struct CmdOutput {
    /// Exit code (None: killed by a signal).
    pub code: Option<i32>,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

/// Threads reading a child's piped stdout and stderr to the end (so that neither pipe
/// fills while the other is read).
pub(crate) fn read_pipes(
    child: &mut std::process::Child,
) -> (
    std::thread::JoinHandle<String>,
    std::thread::JoinHandle<String>,
) {
    let read = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    (
        read(Box::new(child.stdout.take().expect("piped"))),
        read(Box::new(child.stderr.take().expect("piped"))),
    )
}

/// Runs the guest's numalab with a timeout; the child is killed if it overruns.
pub fn run_numalab(ctx: &Ctx, args: &[String], timeout: Duration) -> Result<CmdOutput, String> {
    let mut child = Command::new(&ctx.numalab)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", ctx.numalab.display()))?;
    let (out_t, err_t) = read_pipes(&mut child);
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(st) => break st,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`numalab {}` ran longer than {} s and was killed",
                    args.join(" "),
                    timeout.as_secs()
                ));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    Ok(CmdOutput {
        code: status.code(),
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    })
}

fn tail(s: &str) -> String {
    let t = s.trim();
    let start = t.len().saturating_sub(600);
    let start = (start..=t.len())
        .find(|i| t.is_char_boundary(*i))
        .unwrap_or(t.len());
    t[start..].to_string()
}

/// One single-thread task per CPU node, each printing its memory policy (the first
/// policy in `/proc/self/numa_maps`) and its CPU affinity.
fn schedule_mix(layout: &Layout) -> String {
    let mut s = String::from("timeout = \"60s\"\n");
    for n in layout.cpu_nodes() {
        s.push_str(&format!(
            "[[task]]\nname = \"t{}\"\ncommand = \"grep -m1 -oE 'bind[=a-z]*:[0-9,-]+|default' /proc/self/numa_maps; grep Cpus_allowed_list /proc/self/status\"\ndata = \"1 MiB\"\nthreads = [1]\n",
            n.id
        ));
    }
    s
}

/// The table. Add checks for new multi-node commands here (see the module docs).
pub fn table(layout: &Layout) -> Vec<CliCheck> {
    // `layout` is there for checks generated per node or per pair (`layout.nodes`,
    // `layout.nearest_and_farthest()`); assertions get it again when they run.
    // The memory-only node, or on a layout without one (the Arm server) the last node:
    // the far end for the checks below that want one.
    let memory_only_node = layout.memory_only_nodes().map(|n| n.id).next();
    let last = layout.nodes.last().map_or(0, |n| n.id);
    let memory_only = memory_only_node.unwrap_or(last);
    let all_nodes = cpulist::format(&layout.node_ids());
    let wl = |mode: &str| {
        strings([
            "workload",
            "run",
            "--graph-nodes",
            "20k",
            "--duration",
            "1",
            "--warmup",
            "0.2",
            "--mode",
            mode,
            "--json",
        ])
    };
    let mut v = vec![
        CliCheck::json("topo.json", ["topo", "--json"], |l, v| {
            let m: Machine =
                serde_json::from_value(v.clone()).map_err(|e| format!("not a Machine: {e}"))?;
            expect(
                matches!(m.source, numalab_schema::machine::MachineSource::Live),
                "source live",
            )?;
            compare_machine(l, &m)
        }),
        CliCheck::text("topo.text", ["topo"], |l, out| {
            let n = l.nodes.len();
            expect(
                out.contains(&format!("{n} NUMA nodes: ")),
                format!("\"{n} NUMA nodes\" in:\n{out}"),
            )?;
            for node in &l.nodes {
                let phrase = if node.cpus.is_empty() {
                    format!("{} = no CPUs", node.id)
                } else {
                    format!("{} = CPUs {} (", node.id, cpulist::format(&node.cpus))
                };
                expect(out.contains(&phrase), format!("{phrase:?} in:\n{out}"))?;
            }
            let vals: std::collections::BTreeSet<u64> =
                l.distances.iter().flatten().copied().collect();
            let line = format!(
                "distances (SLIT) {}",
                vals.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join("/")
            );
            expect(out.contains(&line), format!("{line:?} in:\n{out}"))?;
            Ok(format!("node line and {line}"))
        }),
        CliCheck::text("topo.tree", ["topo", "--tree"], |l, out| {
            let mut memory_only = Vec::new();
            for node in &l.nodes {
                let tag = format!("NUMA {} (", node.id);
                let line = out
                    .lines()
                    .find(|line| line.contains(&tag))
                    .ok_or_else(|| format!("expected {tag:?} in the tree:\n{out}"))?;
                expect(
                    line.contains("(no CPUs)") == node.cpus.is_empty(),
                    format!(
                        "\"(no CPUs)\" on node {}'s line only if memory-only: {line:?}",
                        node.id
                    ),
                )?;
                if node.cpus.is_empty() {
                    memory_only.push(line.trim().to_string());
                }
            }
            Ok(format!(
                "all {} nodes in the tree; memory-only: {}",
                l.nodes.len(),
                memory_only.join("; ")
            ))
        }),
        CliCheck::json(
            "topo.xml-roundtrip",
            ["topo", "--input", "/tmp/guest.xml", "--json"],
            |l, v| {
                let m: Machine =
                    serde_json::from_value(v.clone()).map_err(|e| format!("not a Machine: {e}"))?;
                expect(
                    matches!(
                        m.source,
                        numalab_schema::machine::MachineSource::HwlocXml { .. }
                    ),
                    "source hwloc_xml",
                )?;
                compare_machine(l, &m).map(|s| format!("exported and reloaded: {s}"))
            },
        )
        .after(["topo", "--export-xml", "/tmp/guest.xml"]),
        CliCheck::json("doctor.json", ["doctor", "--json"], |l, v| {
            let checks = v
                .get("checks")
                .and_then(Value::as_array)
                .ok_or("no checks array")?;
            let find = |name: &str| {
                checks
                    .iter()
                    .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
            };
            let verdict = |c: &Value| {
                c.get("verdict")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let detail = |c: &Value| {
                c.get("detail")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let numa = find("numa").ok_or("no numa check")?;
            let cpu_nodes = l.cpu_nodes().count();
            let want = format!(
                "{} NUMA node(s): {cpu_nodes} with CPUs, {} memory-only",
                l.nodes.len(),
                l.nodes.len() - cpu_nodes
            );
            expect(
                verdict(numa) == "ok" && detail(numa).contains(&want),
                format!("numa ok with {want:?}, got {numa}"),
            )?;
            let binding = find("binding").ok_or("no binding check")?;
            expect(
                verdict(binding) == "ok",
                format!("binding ok, got {binding}"),
            )?;
            // The guest boots with numa_balancing=disable: doctor must read that.
            expect(
                find("numa-balancing").is_none(),
                "no numa-balancing warning (the guest disables it)",
            )?;
            Ok(format!(
                "numa: {}; binding: {}",
                detail(numa),
                detail(binding)
            ))
        }),
        // `numalab schedule --run`: every task pinned to its CPU; the optimized schedule
        // binds each task's memory to its CPU's node, fair and load leave first touch.
        // Each task prints its own policy (numa_maps shows the task policy) and affinity.
        CliCheck::json(
            "schedule.binding",
            ["schedule", "--mix", "/tmp/schedule-mix.toml", "--run", "--repeat", "1", "--json"],
            |l, v| {
                let runs = records(v, "schedule.run")?;
                expect(runs.len() == 3, format!("3 schedule.run records, got {}", runs.len()))?;
                let mut seen = Vec::new();
                for r in runs {
                    let name = r.get("schedule").and_then(Value::as_str).unwrap_or("?");
                    let tasks = r.get("tasks").and_then(Value::as_array).ok_or("no tasks")?;
                    expect(tasks.len() == l.cpu_nodes().count(), format!("{name}: one task per CPU node"))?;
                    let mut cpus = Vec::new();
                    for t in tasks {
                        let out = t.get("stdout_tail").and_then(Value::as_str).unwrap_or("");
                        expect(t.get("ok") == Some(&Value::Bool(true)), format!("{name}: task ok: {t}"))?;
                        let cpu: u32 = t
                            .get("cpulist")
                            .and_then(Value::as_str)
                            .and_then(|c| c.parse().ok())
                            .ok_or_else(|| format!("{name}: one CPU per task: {t}"))?;
                        cpus.push(cpu);
                        expect(
                            out.lines().any(|x| x.trim() == format!("Cpus_allowed_list:\t{cpu}").trim()
                                || x.split_whitespace().collect::<Vec<_>>() == ["Cpus_allowed_list:", &cpu.to_string()]),
                            format!("{name}: the task ran on CPU {cpu} only: {out:?}"),
                        )?;
                        let node = l
                            .nodes
                            .iter()
                            .find(|n| n.cpus.contains(&cpu))
                            .map(|n| n.id)
                            .ok_or_else(|| format!("CPU {cpu} in no node"))?;
                        let policy = out.lines().next().unwrap_or("").trim();
                        if name == "optimized" {
                            expect(
                                policy.starts_with("bind") && policy.rsplit(':').next() == Some(node.to_string().as_str()),
                                format!("{name}: memory bound to node {node} (CPU {cpu}), numa_maps shows {policy:?}"),
                            )?;
                        } else {
                            expect(policy == "default", format!("{name}: first touch (default policy), got {policy:?}"))?;
                        }
                    }
                    cpus.sort_unstable();
                    cpus.dedup();
                    expect(cpus.len() == tasks.len(), format!("{name}: distinct CPUs {cpus:?}"))?;
                    seen.push(format!("{name} on CPUs {}", cpulist::format(&cpus)));
                }
                Ok(format!("{}; optimized bound each task to its CPU's node", seen.join(", ")))
            },
        )
        .file("/tmp/schedule-mix.toml", &schedule_mix(layout)),
        // The measuring commands on several nodes (docs/numa-guest.md): shapes and the
        // placement each result records, never speeds (every guest node is the same
        // host memory). Sizes are small and rounds few: TCG is slow.
        CliCheck::json(
            "mem.bandwidth.matrix",
            [
                "mem", "bandwidth", "--matrix", "--kernel", "copy,triad", "--size", "4MiB",
                "--reps", "2", "--json",
            ],
            |l, v| cli_asserts::bandwidth_matrix(l, v, &["copy", "triad"]),
        ),
        // No --size: the default (256 MiB) does not fit these small nodes and must be
        // fitted to them, with a note, rather than refused.
        CliCheck::json(
            "mem.latency.matrix",
            [
                "mem", "latency", "--matrix", "--page-kinds", "base", "--batches", "10",
                "--json",
            ],
            |l, v| {
                let seen = cli_asserts::latency_matrix(l, v, &["base"], None)?;
                let notes = cli_asserts::at(v, "envelope.config.notes")?.to_string();
                expect(
                    notes.contains("working set reduced"),
                    format!("a note that the default working set was fitted, got {notes}"),
                )?;
                Ok(format!("{seen}; default size fitted to the nodes"))
            },
        ),
        CliCheck::text(
            "mem.latency.matrix-text",
            [
                "mem", "latency", "--matrix", "--size", "2MiB", "--page-kinds", "base,thp",
                "--batches", "10",
            ],
            |l, out| cli_asserts::latency_matrix_text(l, out, &["base", "thp"]),
        ),
        // The reference copy is measured here (once per mover CPU); --all below gives
        // a link peak instead, to keep the run short.
        CliCheck::json(
            "mem.migrate.nearest-farthest",
            [
                "mem", "migrate", "--max-pages", "256", "--reps", "1", "--unit", "base",
                "--json",
            ],
            |l, v| cli_asserts::migrate_nearest_farthest(l, v, 1),
        ),
        CliCheck::json(
            "mem.migrate.all",
            [
                "mem", "migrate", "--all", "--max-pages", "256", "--reps", "1", "--unit",
                "base", "--link-peak", "10", "--json",
            ],
            |l, v| cli_asserts::migrate_all(l, v, &["memcpy", "move_pages", "stream_copy"]),
        ),
        CliCheck::text(
            "mem.migrate.missing-node",
            ["mem", "migrate", "--from", "0", "--to", "9", "--max-pages", "256"],
            move |_, out| {
                expect(
                    out.contains("NUMA node 9 does not exist") && out.contains(&all_nodes),
                    format!("node 9 named as missing, with the nodes there ({all_nodes}): {out}"),
                )
                .map(|_| "refused before anything ran (exit 2)".into())
            },
        )
        .exit(2),
        CliCheck::text(
            "mem.migrate.missing-cpu",
            [
                "mem".to_string(), "migrate".into(), "--from".into(), last.to_string(),
                "--to".into(), "0".into(), "--cpu".into(), "9".into(), "--max-pages".into(),
                "256".into(),
            ],
            |_, out| {
                expect(out.contains("--cpu 9: no such CPU"), format!("--cpu 9 refused: {out}"))
                    .map(|_| "refused before anything ran (exit 2)".into())
            },
        )
        .exit(2),
        CliCheck::text(
            "mem.latency.too-large",
            ["mem", "latency", "--matrix", "--size", "1GiB"],
            |_, out| {
                expect(
                    out.contains("ask for less with --size") && out.contains("MemFree"),
                    format!("an explicit size beyond a node's free memory refused with the figures: {out}"),
                )
                .map(|_| "refused with the node's free memory (exit 2)".into())
            },
        )
        .exit(2),
        // `numalab policy` runs our test program (numa-guest touch, in the initramfs):
        // four threads touching their own share (balanced), then one thread touching
        // everything (concentrated). One run per policy: the advice must then come from
        // the page placement, not from an interval of one sample.
        CliCheck::json(
            "policy.balanced",
            [
                "policy", "--repeat", "1", "--sample-interval", "100", "--node", "2", "--json",
                "--", "numa-guest", "touch", "--mib", "16", "--threads", "4", "--hold-ms", "800",
            ],
            |l, v| cli_asserts::policy_study(l, v, 2, 4, "balanced", "local"),
        ),
        CliCheck::json(
            "policy.concentrated",
            [
                "policy".to_string(), "--repeat".into(), "1".into(), "--sample-interval".into(),
                "100".into(), "--node".into(), memory_only.to_string(), "--json".into(),
                "--".into(), "numa-guest".into(), "touch".into(), "--mib".into(), "16".into(),
                "--threads".into(), "1".into(), "--hold-ms".into(), "800".into(),
            ],
            move |l, v| cli_asserts::policy_study(l, v, memory_only, 1, "concentrated", "interleave"),
        ),
        CliCheck::json(
            "scale.numa-local.node2",
            [
                "scale", "--placement", "numa-local", "--node", "2", "--threads", "1",
                "--repeat", "1", "--json", "--", "numa-guest", "touch", "--mib", "4",
                "--hold-ms", "100",
            ],
            |l, v| {
                let run = records(v, "harness.run")?[0];
                let cpus = cli_asserts::str_at(run, "cpus")?;
                let want = cpulist::format(&l.nodes[2].cpus);
                expect(cpus == want, format!("pinned to node 2's CPUs {want}, got {cpus}"))?;
                let pol = cli_asserts::at(run, "mem_policy")?.to_string();
                expect(
                    pol.contains("\"bind\"") && pol.contains("[2]"),
                    format!("memory bound to node 2, got {pol}"),
                )?;
                let tail = cli_asserts::str_at(run, "outcome.stdout_tail")?;
                let t: crate::touch::TouchReport = serde_json::from_str(tail.trim())
                    .map_err(|e| format!("the program's report {tail:?}: {e}"))?;
                let pages: u64 = t.pages_per_node.values().sum();
                expect(
                    t.pages_per_node.keys().eq([2u32].iter()) && t.allowed_cpus == l.nodes[2].cpus,
                    format!("the program ran on node 2's CPUs with every page there, it saw {t:?}"),
                )?;
                Ok(format!("CPUs {cpus}, {pol}; the program's {pages} pages all on node 2"))
            },
        ),
        CliCheck::json(
            "workload.shared-first-touch",
            wl("shared-first-touch"),
            |l, v| cli_asserts::workload_mode(l, v, "shared-first-touch"),
        ),
        CliCheck::json(
            "workload.shared-interleaved",
            wl("shared-interleaved"),
            |l, v| cli_asserts::workload_mode(l, v, "shared-interleaved"),
        ),
        CliCheck::json(
            "workload.replicated",
            wl("replicated"),
            |l, v| cli_asserts::workload_mode(l, v, "replicated"),
        ),
        // The line on the memory-only node, far from every CPU; then on node 2 for two
        // CPUs of other nodes.
        CliCheck::json(
            &match memory_only_node {
                Some(_) => "c2c.home-node-memory-only".to_string(),
                None => format!("c2c.home-node{memory_only}"),
            },
            ["c2c".to_string(), "--home-node".into(), memory_only.to_string(), "--json".into()],
            move |l, v| {
                let cpus: Vec<u32> = l.cpu_nodes().flat_map(|n| n.cpus.clone()).collect();
                cli_asserts::c2c_home(l, v, memory_only, &cpus)
            },
        ),
        CliCheck::json(
            "c2c.home-node2",
            ["c2c", "--home-node", "2", "--cpus", "0,3", "--json"],
            |l, v| cli_asserts::c2c_home(l, v, 2, &[0, 3]),
        ),
        // The home map's live path on a real multi-node kernel: reads pinned across the
        // nodes, flushed reads (`DC CIVAC` at EL0 on Arm), pagemap, and the fingerprint
        // read from every node's sysfs. Timings under emulation mean nothing: only the
        // map's shape and the fingerprint are checked. Base pages keep the read count
        // small (64 lines per page, 8 sampled on the others).
        CliCheck::json(
            "home.map-live",
            [
                "home", "map", "--bytes", "64KiB", "--huge", "never", "--repeats", "4",
                "--sample-lines", "8", "--cpus", "4", "--json",
            ],
            |l, v| cli_asserts::home_map(l, v, 64 + 15 * 8),
        ),
        CliCheck::text("c2c.missing-home-node", ["c2c", "--home-node", "9"], |_, out| {
            expect(out.contains("--home-node 9: no such NUMA node"), format!("refused: {out}"))
                .map(|_| "refused (exit 2)".into())
        })
        .exit(2),
        // The whole job, as a user runs it, at its own sizes, down to report.html. Left
        // out: core-to-core latency, migration and the workload, each proven on its own
        // above; on x86 also the bandwidth step (its node matrix over 4 x 5 nodes is
        // `mem.bandwidth.matrix` above, and TCG emulates the x86 guest's AVX kernels at
        // 0.2 GB/s: the step took 183 s of CI), which the Arm guest runs. About 60 s
        // under TCG on x86, three minutes on the emulated Arm server.
        CliCheck::text(
            "evaluate.quick",
            ["evaluate", "--quick", "--out", EVALUATE_OUT, "--skip"]
                .map(String::from)
                .into_iter()
                .chain([EVALUATE_SKIP.join(",")]),
            |l, out| {
                let path = format!("{EVALUATE_OUT}/results.jsonl");
                let journal = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
                expect(
                    out.contains(&format!("results in {EVALUATE_OUT}")),
                    format!("the summary names the folder: {out}"),
                )?;
                let j = cli_asserts::evaluate_journal(l, &journal, EVALUATE_SKIP)?;
                let path = format!("{EVALUATE_OUT}/report.html");
                let html = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
                let r = cli_asserts::evaluate_report(&html, EVALUATE_SKIP)?;
                Ok(format!("{j}; {r}"))
            },
        )
        // 600 s: the emulated Arm server takes several minutes (TCG of AArch64, cells
        // fitted to 200 MiB where hwloc reports no cache size).
        .timeout(Duration::from_secs(600))
        .export(&format!("{EVALUATE_OUT}/report.html"), "evaluate-report.html")
        .export(&format!("{EVALUATE_OUT}/summary.json"), "evaluate-summary.json")
        .export(&format!("{EVALUATE_OUT}/results.jsonl"), "evaluate-results.jsonl"),
    ];
    if memory_only_node.is_some() {
        v.push(
            CliCheck::text(
                "scale.numa-local.memory-only-node",
                [
                    "scale".to_string(),
                    "--placement".into(),
                    "numa-local".into(),
                    "--node".into(),
                    memory_only.to_string(),
                    "--".into(),
                    "true".into(),
                ],
                move |_, out| {
                    expect(
                        out.contains(&format!("NUMA node {memory_only} has no CPUs")),
                        format!("threads refused on the memory-only node: {out}"),
                    )
                    .map(|_| "refused: a memory-only node cannot run threads (exit 2)".into())
                },
            )
            .exit(2),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_are_found_by_kind() {
        let b = json!({"envelope": {}, "records": [
            {"key": "a", "kind": "mem.bandwidth", "data": {"gbps": 1}},
            {"key": "b", "kind": "mem.latency", "data": {"ns": 2}},
            {"key": "c", "kind": "mem.bandwidth", "data": {"gbps": 3}},
        ]});
        let r = records(&b, "mem.bandwidth").unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1]["gbps"], 3);
        let e = records(&b, "policy.pages").unwrap_err();
        assert!(e.contains("mem.latency"), "{e}");
        assert!(records(&json!({}), "x").is_err());
    }

    #[test]
    fn the_table_builds_and_names_are_unique() {
        let t = table(&Layout::standard());
        let mut names: Vec<&str> = t.iter().map(|c| c.name.as_str()).collect();
        assert!(names.contains(&"topo.json"));
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(n, names.len());
        let rt = t.iter().find(|c| c.name == "topo.xml-roundtrip").unwrap();
        assert_eq!(rt.setup.len(), 1);
    }

    #[test]
    fn a_cli_check_fails_on_wrong_output_and_wrong_exit_code() {
        // The point is the runner's verdicts, so stand-ins from the base system play
        // the part of numalab.
        let ctx = Ctx::new(crate::platform::Boot::x86(), "/bin/echo".into());
        let ok = CliCheck::text("t.echo", ["hello"], |_, out| {
            expect(out.trim() == "hello", "hello").map(|_| "saw hello".into())
        })
        .into_check();
        assert_eq!(
            (ok.run)(&ctx).unwrap(),
            "`numalab hello`: saw hello",
            "the runner passes stdout through"
        );
        let bad = CliCheck::json("t.json", ["not json"], |_, _| Ok(String::new())).into_check();
        assert!((bad.run)(&ctx).unwrap_err().contains("did not print JSON"));
        let code = CliCheck::text("t.code", ["x"], |_, _| Ok(String::new()))
            .exit(3)
            .into_check();
        assert!((code.run)(&ctx).unwrap_err().contains("expected 3"));
        let ctx = Ctx::new(crate::platform::Boot::x86(), "/bin/sleep".into());
        let slow = CliCheck::text("t.slow", ["5"], |_, _| Ok(String::new()))
            .timeout(Duration::from_millis(200))
            .into_check();
        assert!((slow.run)(&ctx).unwrap_err().contains("killed"));
    }
}
