//! The mix file: the tasks a schedule places on the cores.
//!
//! ```toml
//! timeout = "30m"            # per task, unless a task says otherwise (optional)
//!
//! [[task]]
//! name = "sort"
//! command = ["./sort", "--threads", "{threads}", "--input", "big.dat"]   # no shell
//! data = "8 GiB"             # data size (or data_bytes = 8589934592)
//! threads = [1, 2, 4, 8]     # allowed thread counts
//! memory_bound = 0.4         # optional, for --model: share of run time spent waiting
//!                            # on memory latency (0-1, default 0)
//! communication_bound = 0.1  # optional, for --model: share spent on core-to-core transfers
//! env = { OMP_NUM_THREADS = "{threads}" }
//!
//! [[task]]
//! name = "busy"
//! command = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"  # a string runs under sh -c
//! data = "1 KiB"
//! threads = [1]
//! ```
//!
//! Placeholders `{threads}`, `{cpus}` and `{node}` are filled per schedule, as in
//! `numalab scale`. Unknown keys are errors (a misspelt key must not be ignored).

use numalab_layout::error::LayoutError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MixFile {
    timeout: Option<String>,
    #[serde(default)]
    task: Vec<TaskFile>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum CommandFile {
    Shell(String),
    Argv(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum DataFile {
    Text(String),
    Bytes(u64),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    name: String,
    command: CommandFile,
    data: Option<DataFile>,
    data_bytes: Option<u64>,
    threads: Vec<usize>,
    #[serde(default)]
    memory_bound: f64,
    #[serde(default)]
    communication_bound: f64,
    timeout: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

/// One task.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Name (unique in the mix).
    pub name: String,
    /// Program and arguments (or one shell command line when `shell`).
    pub command: Vec<String>,
    /// Run through `/bin/sh -c`.
    pub shell: bool,
    /// Data size, bytes.
    pub data_bytes: u64,
    /// Allowed thread counts, ascending.
    pub threads: Vec<usize>,
    /// Share of run time spent on memory latency (model evaluation).
    pub memory_bound: f64,
    /// Share of run time spent on core-to-core transfers (model evaluation).
    pub communication_bound: f64,
    /// Timeout.
    pub timeout: Option<Duration>,
    /// Environment variables (values may hold placeholders).
    pub env: Vec<(String, String)>,
}

/// A mix.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix {
    /// The file.
    pub source: String,
    /// Tasks, in file order.
    pub tasks: Vec<Task>,
}

impl Mix {
    /// Reads a mix file.
    pub fn read(path: &std::path::Path) -> Result<Mix, LayoutError> {
        let name = numalab_schema::text::path_text(path);
        let text = numalab_schema::input::read_to_string(
            path,
            "a task mix (TOML)",
            numalab_schema::input::TEXT,
        )
        .map_err(|e| {
            LayoutError::input(&name, format!("cannot read the mix file: {}", e.reason))
        })?;
        Mix::parse(&text, &name)
    }

    /// Parses a mix; `name` is used in messages.
    pub fn parse(text: &str, name: &str) -> Result<Mix, LayoutError> {
        let f: MixFile = toml::from_str(text)
            .map_err(|e| LayoutError::input(name, format!("not a mix file: {}", e.message())))?;
        let dur = |what: &str, t: &Option<String>| -> Result<Option<Duration>, LayoutError> {
            t.as_ref()
                .map(|s| {
                    humantime::parse_duration(s).map_err(|e| {
                        LayoutError::input(name, format!("{what}: {s:?} is not a duration ({e}); write e.g. \"90s\" or \"10m\""))
                    })
                })
                .transpose()
        };
        let default_timeout = dur("timeout", &f.timeout)?;
        if f.task.is_empty() {
            return Err(LayoutError::input(
                name,
                "has no [[task]]; each task needs name, command, data and threads",
            ));
        }
        let mut tasks = Vec::new();
        for t in f.task {
            let what = format!("task {:?}", t.name);
            if t.name.trim().is_empty() {
                return Err(LayoutError::input(name, "a task has an empty name"));
            }
            if tasks.iter().any(|x: &Task| x.name == t.name) {
                return Err(LayoutError::input(
                    name,
                    format!("{what} appears twice; names must be unique"),
                ));
            }
            let (command, shell) = match t.command {
                CommandFile::Shell(s) => (vec![s], true),
                CommandFile::Argv(v) => (v, false),
            };
            if command.is_empty() || command[0].trim().is_empty() {
                return Err(LayoutError::input(name, format!("{what}: empty command")));
            }
            let data_bytes = match (t.data, t.data_bytes) {
                (Some(_), Some(_)) => {
                    return Err(LayoutError::input(name, format!("{what}: give data or data_bytes, not both")))
                }
                (Some(DataFile::Text(s)), None) => numalab_schema::units::parse_bytes(&s)
                    .map_err(|e| LayoutError::input(name, format!("{what}: data {s:?}: {e}")))?,
                (Some(DataFile::Bytes(b)), None) | (None, Some(b)) => b,
                (None, None) => {
                    return Err(LayoutError::input(
                        name,
                        format!("{what}: no data size; add data = \"1 GiB\" (fair shares follow data sizes)"),
                    ))
                }
            };
            if data_bytes == 0 {
                return Err(LayoutError::input(
                    name,
                    format!("{what}: data size must be above 0"),
                ));
            }
            let mut threads = t.threads.clone();
            threads.sort_unstable();
            threads.dedup();
            if threads.is_empty() || threads[0] == 0 {
                return Err(LayoutError::input(
                    name,
                    format!("{what}: threads must list allowed thread counts of at least 1, e.g. [1, 2, 4]"),
                ));
            }
            for (k, v) in [
                ("memory_bound", t.memory_bound),
                ("communication_bound", t.communication_bound),
            ] {
                if !(0.0..=1.0).contains(&v) {
                    return Err(LayoutError::input(
                        name,
                        format!("{what}: {k} = {v} is not between 0 and 1"),
                    ));
                }
            }
            if t.memory_bound + t.communication_bound > 1.0 {
                return Err(LayoutError::input(
                    name,
                    format!("{what}: memory_bound + communication_bound exceed 1 (they are shares of the run time)"),
                ));
            }
            let timeout = dur(&format!("{what}: timeout"), &t.timeout)?.or(default_timeout);
            tasks.push(Task {
                name: t.name,
                command,
                shell,
                data_bytes,
                threads,
                memory_bound: t.memory_bound,
                communication_bound: t.communication_bound,
                timeout,
                env: t.env.into_iter().collect(),
            });
        }
        Ok(Mix {
            source: name.to_string(),
            tasks,
        })
    }

    /// A stable id of the mix's content (for record keys).
    pub fn id(&self) -> String {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for t in &self.tasks {
            t.name.hash(&mut h);
            t.command.hash(&mut h);
            t.shell.hash(&mut h);
            t.data_bytes.hash(&mut h);
            t.threads.hash(&mut h);
        }
        format!("{:012x}", h.finish() & 0xffff_ffff_ffff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_command_forms_and_sizes() {
        let m = Mix::parse(
            r#"
timeout = "1m"
[[task]]
name = "a"
command = ["prog", "-t", "{threads}"]
data = "2 KiB"
threads = [4, 1, 2, 2]
[[task]]
name = "b"
command = "echo hi"
data_bytes = 10
threads = [1]
timeout = "5s"
memory_bound = 0.5
"#,
            "mix.toml",
        )
        .unwrap();
        assert_eq!(m.tasks[0].threads, vec![1, 2, 4]);
        assert_eq!(m.tasks[0].data_bytes, 2048);
        assert!(!m.tasks[0].shell);
        assert_eq!(m.tasks[0].timeout, Some(Duration::from_secs(60)));
        assert!(m.tasks[1].shell);
        assert_eq!(m.tasks[1].timeout, Some(Duration::from_secs(5)));
        assert_eq!(m.id(), m.clone().id());
    }

    #[test]
    fn bad_mixes_name_the_problem() {
        let cases = [
            ("", "no [[task]]"),
            ("[[task]]\nname='a'\ncommand='x'\nthreads=[1]\n", "no data size"),
            ("[[task]]\nname='a'\ncommand='x'\ndata='1 KiB'\nthreads=[]\n", "allowed thread counts"),
            ("[[task]]\nname='a'\ncommand='x'\ndata='1 KiB'\nthreads=[1]\ncolour=1\n", "unknown field"),
            ("[[task]]\nname='a'\ncommand='x'\ndata='1 KiB'\nthreads=[1]\n[[task]]\nname='a'\ncommand='y'\ndata='1 KiB'\nthreads=[1]\n", "twice"),
            ("[[task]]\nname='a'\ncommand='x'\ndata='1 KiB'\nthreads=[1]\nmemory_bound=2\n", "between 0 and 1"),
            ("[[task]]\nname='a'\ncommand='x'\ndata='1 KiB'\nthreads=[1]\ntimeout='soon'\n", "not a duration"),
        ];
        for (text, want) in cases {
            let e = Mix::parse(text, "m.toml").unwrap_err().to_string();
            assert!(e.contains("m.toml") && e.contains(want), "{text:?}: {e}");
        }
    }
}
