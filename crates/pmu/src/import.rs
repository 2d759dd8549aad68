//! Reading `perf stat` output from other machines, so counts recorded where a real PMU
//! exists can be analysed anywhere (this VM has none).
//!
//! Two formats: CSV (`perf stat -x,`) and JSON lines (`perf stat -j`). Events may be
//! written by name (`cycles`, `CPU_CYCLES`, `armv8_pmuv3_0/l1d_cache_refill/`,
//! `instructions:u`) or as raw codes (`r11`); they are resolved through the catalog.
//! Per-CPU (`-A`) and interval (`-I`) output is summed. A line that cannot be read is
//! an error naming the line, never a silently skipped number.

use crate::catalog::{self, Catalog, CpuMatch, Encoding};
use crate::metrics::{EventState, EventValue};
use numalab_schema::{Classify, ErrorClass, Warning};
use std::path::Path;

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file cannot be read.
    #[error("{path}: {detail}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        detail: String,
    },
    /// A line is malformed.
    #[error("{path}: line {line}: {message}")]
    Line {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong, and what was expected.
        message: String,
    },
    /// Nothing to import.
    #[error("{path}: {message}")]
    Empty {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl Classify for ImportError {
    fn class(&self) -> ErrorClass {
        ErrorClass::Input
    }
}

/// The format of a perf file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `perf stat -x,`
    Csv,
    /// `perf stat -j`
    Json,
}

impl Format {
    /// Name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "perf stat -x, (CSV)",
            Format::Json => "perf stat -j (JSON)",
        }
    }
}

/// One counter line as written by perf.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfLine {
    /// 1-based line number.
    pub line: usize,
    /// The event as written.
    pub event: String,
    /// The value, or None for `<not supported>` / `<not counted>`.
    pub value: Option<f64>,
    /// Why there is no value (`not supported`, `not counted`).
    pub missing: Option<String>,
    /// perf's unit ("msec", "ns", "").
    pub unit: String,
    /// Time the counter ran, ns.
    pub runtime_ns: Option<u64>,
    /// Percentage of the time it ran (multiplexing).
    pub pcnt_running: Option<f64>,
    /// CPU (per-CPU output).
    pub cpu: Option<String>,
    /// Interval timestamp (interval output).
    pub interval: Option<String>,
}

/// perf's event names start with a letter ("cycles", "r0011", "cpu/event=0x3c/",
/// "L1-dcache-loads") or open a group ("{"); an empty name or one starting with a digit
/// or a symbol means this is some other file. `what` names the field for the message.
fn check_event_name(path: &str, n: usize, event: &str, what: &str) -> Result<(), ImportError> {
    if event.is_empty() {
        return Err(line_err(
            path,
            n,
            format!("the event name ({what}) is empty"),
        ));
    }
    if !event.starts_with(|c: char| c.is_ascii_alphabetic() || c == '{') {
        return Err(line_err(
            path,
            n,
            format!(
                "{what} \"{}\" is not an event name (perf writes names such as cycles, r0011 or cpu/event=0x3c/); is this `perf stat` output?",
                numalab_schema::text::excerpt(event, 80)
            ),
        ));
    }
    Ok(())
}

fn line_err(path: &str, line: usize, message: impl Into<String>) -> ImportError {
    ImportError::Line {
        path: path.to_string(),
        line,
        message: message.into(),
    }
}

/// Splits a CSV line on commas, except those inside `pmu/.../` event terms.
fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut slashes = 0;
    for c in line.chars() {
        match c {
            '/' => {
                slashes += 1;
                cur.push(c)
            }
            ',' if slashes % 2 == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn parse_value(text: &str) -> Result<(Option<f64>, Option<String>), ()> {
    let t = text.trim();
    if let Some(inner) = t.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
        return Ok((None, Some(inner.to_string())));
    }
    t.parse::<f64>().map(|v| (Some(v), None)).map_err(|_| ())
}

fn is_number(t: &str) -> bool {
    t.trim().parse::<f64>().is_ok()
}

fn is_value(t: &str) -> bool {
    parse_value(t).is_ok()
}

/// Parses `perf stat -x,` output.
pub fn parse_csv(path: &str, text: &str) -> Result<Vec<PerfLine>, ImportError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut f = split_csv(line);
        let mut cpu = None;
        let mut interval = None;
        // Interval output starts with a timestamp, then the value.
        if f.len() >= 4 && is_number(&f[0]) && is_value(&f[1]) {
            interval = Some(f.remove(0).trim().to_string());
        }
        // Per-CPU output (-A) starts with CPU<n>.
        if f.first().is_some_and(|c| {
            let c = c.trim();
            c.starts_with("CPU") && c[3..].chars().all(|d| d.is_ascii_digit()) && c.len() > 3
        }) {
            cpu = Some(f.remove(0).trim().to_string());
        } else if f.first().is_some_and(|c| {
            let c = c.trim();
            !c.is_empty() && (c.starts_with('S') || c.starts_with('N')) && !is_value(c)
        }) {
            return Err(line_err(
                path,
                n,
                format!(
                    "{:?} looks like per-socket, per-die or per-node output; numalab reads totals or per-CPU (-A) output: rerun perf stat without --per-socket/--per-die/--per-node",
                    f[0].trim()
                ),
            ));
        }
        if f.len() < 3 {
            return Err(line_err(
                path,
                n,
                format!(
                    "expected `value,unit,event,run-time,percent-running,...` as `perf stat -x,` writes it, found \"{}\"",
                    numalab_schema::text::excerpt(line, 120)
                ),
            ));
        }
        let (value, missing) = parse_value(&f[0]).map_err(|_| {
            line_err(
                path,
                n,
                format!(
                    "the first field \"{}\" is neither a number nor <not supported>/<not counted> (is this `perf stat -x,` output?)",
                    numalab_schema::text::excerpt(f[0].trim(), 80)
                ),
            )
        })?;
        let unit = f[1].trim().to_string();
        let event = f[2].trim().to_string();
        check_event_name(path, n, &event, "the third field")?;
        let mut rest = f[3..]
            .iter()
            .map(|s| s.trim().to_string())
            .collect::<Vec<_>>();
        // `perf stat -r N` adds the variance ("2.42%") after the event.
        if rest.first().is_some_and(|v| v.ends_with('%')) {
            rest.remove(0);
        }
        let runtime_ns = match rest.first().map(String::as_str) {
            None | Some("") => None,
            Some(t) => Some(t.parse::<f64>().map(|v| v as u64).map_err(|_| {
                line_err(
                    path,
                    n,
                    format!(
                        "the run time \"{}\" is not a number",
                        numalab_schema::text::excerpt(t, 80)
                    ),
                )
            })?),
        };
        let pcnt_running = match rest.get(1).map(String::as_str) {
            None | Some("") => None,
            Some(t) => Some(t.parse::<f64>().map_err(|_| {
                line_err(
                    path,
                    n,
                    format!(
                        "the percentage running \"{}\" is not a number",
                        numalab_schema::text::excerpt(t, 80)
                    ),
                )
            })?),
        };
        out.push(PerfLine {
            line: n,
            event,
            value,
            missing,
            unit,
            runtime_ns,
            pcnt_running,
            cpu,
            interval,
        });
    }
    Ok(out)
}

/// Parses `perf stat -j` output (one JSON object per line).
pub fn parse_json(path: &str, text: &str) -> Result<Vec<PerfLine>, ImportError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            line_err(
                path,
                n,
                format!(
                    "not JSON ({}); expected one object per line as `perf stat -j` writes it",
                    numalab_schema::text::excerpt(&e.to_string(), 120)
                ),
            )
        })?;
        let obj = v
            .as_object()
            .ok_or_else(|| line_err(path, n, "expected a JSON object"))?;
        let Some(event) = obj.get("event").and_then(|e| e.as_str()) else {
            // Metric-only continuation lines carry no counter.
            if obj.contains_key("metric-value") || obj.contains_key("metric-unit") {
                continue;
            }
            return Err(line_err(path, n, "no \"event\" field"));
        };
        let event = event.trim();
        check_event_name(path, n, event, "the \"event\" field")?;
        let cv = obj
            .get("counter-value")
            .ok_or_else(|| line_err(path, n, "no \"counter-value\" field"))?;
        let (value, missing) = match cv {
            serde_json::Value::Number(x) => (x.as_f64(), None),
            serde_json::Value::String(s) => parse_value(s).map_err(|_| {
                line_err(
                    path,
                    n,
                    format!(
                        "counter-value \"{}\" is not a number",
                        numalab_schema::text::excerpt(s, 80)
                    ),
                )
            })?,
            other => {
                return Err(line_err(
                    path,
                    n,
                    format!("counter-value {other} is not a number"),
                ))
            }
        };
        let num = |key: &str| -> Result<Option<f64>, ImportError> {
            match obj.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::Number(x)) => Ok(x.as_f64()),
                Some(serde_json::Value::String(s)) if s.is_empty() => Ok(None),
                Some(serde_json::Value::String(s)) => {
                    s.trim().parse::<f64>().map(Some).map_err(|_| {
                        line_err(
                            path,
                            n,
                            format!(
                                "{key} \"{}\" is not a number",
                                numalab_schema::text::excerpt(s, 80)
                            ),
                        )
                    })
                }
                Some(other) => Err(line_err(
                    path,
                    n,
                    format!(
                        "{key} {} is not a number",
                        numalab_schema::text::excerpt(&other.to_string(), 80)
                    ),
                )),
            }
        };
        let text_field = |key: &str| -> Option<String> {
            obj.get(key).map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        };
        out.push(PerfLine {
            line: n,
            event: event.to_string(),
            value,
            missing,
            unit: text_field("unit").unwrap_or_default(),
            runtime_ns: num("event-runtime")?.map(|v| v as u64),
            pcnt_running: num("pcnt-running")?,
            cpu: text_field("cpu"),
            interval: text_field("interval"),
        });
    }
    Ok(out)
}

/// Tells the two formats apart by the first non-comment line.
pub fn detect_format(text: &str) -> Format {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    if first.starts_with('{') {
        Format::Json
    } else {
        Format::Csv
    }
}

/// Parses a perf file of either format.
pub fn parse(path: &str, text: &str) -> Result<(Format, Vec<PerfLine>), ImportError> {
    let format = detect_format(text);
    let lines = match format {
        Format::Csv => parse_csv(path, text)?,
        Format::Json => parse_json(path, text)?,
    };
    if lines.is_empty() {
        return Err(ImportError::Empty {
            path: path.to_string(),
            message: "no counter lines found; expected the output of `perf stat -x, ...` or `perf stat -j ...` (perf writes it to stderr: use `2> FILE` or `-o FILE`)".into(),
        });
    }
    Ok((format, lines))
}

fn unit_to_ns(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" | "usec" => 1e3,
        "ms" | "msec" => 1e6,
        "s" | "sec" => 1e9,
        _ => return None,
    })
}

/// Turns perf lines into event values through `catalog`: names resolved, time units in
/// ns, per-CPU and interval lines summed.
pub fn to_events(catalog: &Catalog, lines: &[PerfLine]) -> (Vec<EventValue>, Vec<Warning>) {
    let mut events: Vec<EventValue> = Vec::new();
    let mut warnings = Vec::new();
    let mut seen: Vec<(Option<String>, Option<String>, String)> = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut per_cpu = false;
    let mut intervals: Vec<String> = Vec::new();
    for l in lines {
        let key = (l.cpu.clone(), l.interval.clone(), l.event.clone());
        if seen.contains(&key) {
            warnings.push(Warning::new(
                "pmu.import.duplicate",
                format!(
                    "line {}: {} appears twice for the same CPU and interval; the first is kept",
                    l.line, l.event
                ),
            ));
            continue;
        }
        seen.push(key);
        per_cpu |= l.cpu.is_some();
        if let Some(iv) = &l.interval {
            if !intervals.contains(iv) {
                intervals.push(iv.clone());
            }
        }
        let (name, encoding, unit_known) = match catalog.resolve_event(&l.event) {
            Ok(r) => {
                let def = catalog.event(&r.name);
                (r.name, Some(r.encoding), def.and_then(|d| d.unit.clone()))
            }
            Err(_) => {
                if !unknown.contains(&l.event) {
                    unknown.push(l.event.clone());
                }
                (catalog::normalize_event_text(&l.event), None, None)
            }
        };
        let scale = match (&unit_known, unit_to_ns(&l.unit)) {
            (Some(u), Some(s)) if u == "ns" => s,
            _ => 1.0,
        };
        let fraction = l.pcnt_running.map(|p| (p / 100.0).clamp(0.0, 1.0));
        let state = match (l.value, l.missing.as_deref()) {
            (Some(_), _) => EventState::Counted,
            (None, Some(m)) if m.contains("not supported") => EventState::NotSupported,
            _ => EventState::NotCounted,
        };
        let value = l.value.map(|v| v * scale);
        let time_enabled = match (l.runtime_ns, fraction) {
            (Some(r), Some(f)) if f > 0.0 => Some((r as f64 / f).round() as u64),
            _ => None,
        };
        let ev = EventValue {
            code: match encoding {
                Some(Encoding::Raw(c)) => Some(format!("r{c:x}")),
                _ => None,
            },
            name: name.clone(),
            value,
            raw_count: l.value.filter(|_| scale == 1.0).map(|v| v.round() as u64),
            running_fraction: if state == EventState::Counted {
                fraction
            } else {
                None
            },
            time_enabled_ns: time_enabled,
            time_running_ns: l.runtime_ns,
            supported: state != EventState::NotSupported,
            state,
            reason: l.missing.clone().map(|m| format!("perf reported <{m}>")),
            unit: unit_known
                .clone()
                .or_else(|| (!l.unit.is_empty()).then(|| l.unit.clone())),
            software: encoding.is_some_and(|e| e.is_software()),
            run: None,
            advertised: None,
            uncertainty: None,
        };
        match events.iter_mut().find(|e| e.name == name) {
            None => events.push(ev),
            Some(acc) => merge(acc, &ev),
        }
    }
    if !unknown.is_empty() {
        warnings.push(
            Warning::new(
                "pmu.import.unknown_event",
                format!(
                    "{} not in the {} catalog: kept as imported, used by no metric",
                    unknown.join(", "),
                    catalog.name
                ),
            )
            .with_remedy("pass --cpu-model for the machine that recorded the file"),
        );
    }
    if per_cpu {
        warnings.push(Warning::new(
            "pmu.import.per_cpu",
            "per-CPU lines were summed; each event's running fraction is the smallest of its CPUs",
        ));
    }
    if intervals.len() > 1 {
        warnings.push(Warning::new(
            "pmu.import.intervals",
            format!("{} intervals were summed into one total", intervals.len()),
        ));
    }
    (events, warnings)
}

/// Sums a second line of the same event (another CPU or interval).
fn merge(acc: &mut EventValue, ev: &EventValue) {
    if ev.state == EventState::Counted {
        if acc.state != EventState::Counted {
            let keep_fraction = acc.running_fraction;
            *acc = ev.clone();
            acc.running_fraction = match (keep_fraction, ev.running_fraction) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            return;
        }
        acc.value = Some(acc.value.unwrap_or(0.0) + ev.value.unwrap_or(0.0));
        acc.raw_count = match (acc.raw_count, ev.raw_count) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        acc.time_running_ns = match (acc.time_running_ns, ev.time_running_ns) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        acc.time_enabled_ns = match (acc.time_enabled_ns, ev.time_enabled_ns) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        acc.running_fraction = match (acc.running_fraction, ev.running_fraction) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Picks the catalog under which most of the file's events resolve by their own names
/// (Arm vendor names or codes vs x86 generic names). `None` when it cannot tell.
pub fn guess_catalog(lines: &[PerfLine]) -> Option<CpuMatch> {
    // Names decide; raw codes (meaningful on any architecture) only when there are no
    // names at all.
    let mut by_name: Vec<(usize, &str)> = Vec::new();
    let mut by_code: Vec<(usize, &str)> = Vec::new();
    // The generic Arm catalog holds the same generic events as x86-64: names cannot tell
    // them apart, so it is never guessed (--cpu-model arm-generic picks it).
    for id in catalog::shipped()
        .into_iter()
        .filter(|id| *id != catalog::ARM_GENERIC_ID)
    {
        let Ok(c) = catalog::load(id) else { continue };
        let (mut names, mut codes) = (0, 0);
        for l in lines {
            let norm = catalog::normalize_event_text(&l.event);
            match c.event(&norm) {
                // Software events fit any catalog.
                Some(e) if !e.encoding.is_software() => names += 1,
                Some(_) => {}
                None => {
                    if catalog::raw_code(&norm).is_some_and(|code| c.event_by_code(code).is_some())
                    {
                        codes += 1
                    }
                }
            }
        }
        by_name.push((names, id));
        by_code.push((codes, id));
    }
    let scores = if by_name.iter().any(|s| s.0 > 0) {
        by_name
    } else {
        by_code
    };
    let max = scores.iter().map(|s| s.0).max()?;
    if max == 0 {
        return None;
    }
    let mut best: Vec<&str> = scores.iter().filter(|s| s.0 == max).map(|s| s.1).collect();
    // The x86 vendor catalogs hold the generic events too: a tie with x86-64 is x86-64
    // (only the model's own event names pick a model).
    if best.contains(&catalog::X86_ID) {
        let vendor = catalog::x86_ids();
        best.retain(|id| !vendor.contains(id));
    }
    // Names that fit both architectures (perf's generic `cycles`) decide nothing.
    if best.contains(&catalog::X86_ID) && best.len() > 1 {
        return None;
    }
    let c = catalog::load(best[0]).ok()?;
    Some(CpuMatch {
        catalog: c.id,
        cpu: c.name,
        how: "guessed from the event names in the file".into(),
    })
}

/// Reads and parses a perf file.
pub fn read(path: &Path) -> Result<(Format, Vec<PerfLine>), ImportError> {
    let shown = numalab_schema::text::path_text(path);
    let text = numalab_schema::input::read_to_string(
        path,
        "the output of `perf stat -x,` or `perf stat -j`",
        numalab_schema::input::PERF,
    )
    .map_err(|e| ImportError::Read {
        path: shown.clone(),
        detail: e.reason,
    })?;
    parse(&shown, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_of_this_machines_perf() {
        // Captured from `perf stat -x, -e task-clock,context-switches,cycles,r11,page-faults,duration_time -- sleep 0.1`
        // on the development VM (no hardware PMU).
        let text = "0.96,msec,task-clock,961269,100.00,0.009,CPUs utilized\n\
                    1,,context-switches,961269,100.00,1.040,K/sec\n\
                    <not supported>,,cycles,0,100.00,,\n\
                    <not supported>,,r11,0,100.00,,\n\
                    75,,page-faults,961269,100.00,78.022,K/sec\n\
                    103075309,ns,duration_time,103075309,100.00,107.228,G/sec\n";
        let lines = parse_csv("t.csv", text).unwrap();
        assert_eq!(lines.len(), 6);
        let c = catalog::load("x86-64").unwrap();
        let (ev, _) = to_events(&c, &lines);
        let get = |n: &str| ev.iter().find(|e| e.name == n).unwrap();
        assert_eq!(get("TASK_CLOCK").value, Some(960_000.0)); // msec -> ns
        assert_eq!(get("CYCLES").state, EventState::NotSupported);
        assert!(!get("CYCLES").supported);
        assert_eq!(get("r11").state, EventState::NotSupported);
        assert_eq!(get("DURATION_TIME").value, Some(103075309.0));
        assert_eq!(get("PAGE_FAULTS").running_fraction, Some(1.0));
    }

    #[test]
    fn csv_variants() {
        let text = "# started on Mon\n\n\
                    CPU0,100,,instructions,500,50.00,,\n\
                    CPU1,300,,instructions,500,25.00,,\n\
                    5,,cpu/event=0x3c,umask=0x0/,1000,100.00,,\n\
                    7,,cycles:u,2.42%,1000,100.00,,\n";
        let lines = parse_csv("t.csv", text).unwrap();
        assert_eq!(lines[0].cpu.as_deref(), Some("CPU0"));
        assert_eq!(lines[2].event, "cpu/event=0x3c,umask=0x0/");
        assert_eq!(lines[3].runtime_ns, Some(1000));
        let c = catalog::load("x86-64").unwrap();
        let (ev, w) = to_events(&c, &lines);
        let ins = ev.iter().find(|e| e.name == "INSTRUCTIONS").unwrap();
        assert_eq!(ins.value, Some(400.0));
        assert_eq!(ins.running_fraction, Some(0.25));
        assert!(w.iter().any(|w| w.code == "pmu.import.per_cpu"));
        let cyc = ev.iter().find(|e| e.name == "CYCLES").unwrap();
        assert_eq!(cyc.value, Some(7.0));
        // Interval output.
        let text = "1.001,10,,instructions,1000,100.00,,\n2.002,15,,instructions,1000,100.00,,\n";
        let lines = parse_csv("t.csv", text).unwrap();
        let (ev, w) = to_events(&c, &lines);
        assert_eq!(ev[0].value, Some(25.0));
        assert!(w.iter().any(|w| w.code == "pmu.import.intervals"));
    }

    #[test]
    fn malformed_lines_are_named() {
        let e = parse_csv("f.csv", "1,,cycles,10,100.00,,\nhello world\n").unwrap_err();
        assert_eq!(e.to_string().split(':').nth(1).unwrap().trim(), "line 2");
        let e = parse_csv("f.csv", "1,,cycles,abc,100.00\n").unwrap_err();
        assert!(
            e.to_string().contains("line 1: the run time \"abc\""),
            "{e}"
        );
        let e = parse_csv("f.csv", "S0,2,100,,cycles,10,100.00,,\n").unwrap_err();
        assert!(e.to_string().contains("per-socket"), "{e}");
        let e = parse_json(
            "f.json",
            "{\"event\": \"cycles\", \"counter-value\": \"1\"}\n{oops\n",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("f.json: line 2: not JSON"), "{e}");
        let e = parse("f.csv", "# only a comment\n").unwrap_err();
        assert!(e.to_string().contains("no counter lines"), "{e}");
    }

    #[test]
    fn json_of_this_machines_perf() {
        // Captured from `perf stat -j ...` on the development VM.
        let text = r#"{"counter-value" : "0.793570", "unit" : "msec", "event" : "task-clock", "event-runtime" : 793570, "pcnt-running" : 100.00, "metric-value" : 0.007647, "metric-unit" : "CPUs utilized"}
{"counter-value" : "<not supported>", "unit" : "", "event" : "cycles", "event-runtime" : 0, "pcnt-running" : 100.00, "metric-value" : 0.000000, "metric-unit" : ""}
{"counter-value" : "75.000000", "unit" : "", "event" : "page-faults", "event-runtime" : 793570, "pcnt-running" : 100.00, "metric-value" : 94.509621, "metric-unit" : "K/sec"}
{"metric-value" : "1.5", "metric-unit" : "insn per cycle"}
"#;
        assert_eq!(detect_format(text), Format::Json);
        let (_, lines) = parse("t.json", text).unwrap();
        assert_eq!(lines.len(), 3);
        let c = catalog::load("x86-64").unwrap();
        let (ev, _) = to_events(&c, &lines);
        assert_eq!(ev[0].name, "TASK_CLOCK");
        assert!((ev[0].value.unwrap() - 793570.0).abs() < 1e-6);
        assert_eq!(ev[1].state, EventState::NotSupported);
    }

    #[test]
    fn json_event_names_are_checked_like_csv_ones() {
        // Found by the perf_import fuzzer: an empty "event" in JSON was accepted.
        for (event, says) in [
            ("", "the event name (the \"event\" field) is empty"),
            ("  ", "the event name (the \"event\" field) is empty"),
            ("42", "the \"event\" field \"42\" is not an event name"),
        ] {
            let text =
                format!("{{\"counter-value\": \"1\", \"unit\": \"\", \"event\": \"{event}\"}}\n");
            let e = parse("f.json", &text).unwrap_err().to_string();
            assert!(e.starts_with("f.json: line 1: "), "{e}");
            assert!(e.contains(says), "{event:?}: {e}");
        }
        let (_, lines) = parse(
            "f.json",
            "{\"counter-value\": \"1\", \"event\": \" cycles \"}\n",
        )
        .unwrap();
        assert_eq!(lines[0].event, "cycles");
    }

    #[test]
    fn guessing_the_catalog() {
        let arm = parse_csv("a", "1,,r11,1,100,,\n2,,r8,1,100,,\n").unwrap();
        assert!(guess_catalog(&arm).unwrap().catalog.starts_with("neoverse"));
        let arm = parse_csv("a", "1,,armv8_pmuv3_0/stall_backend/,1,100,,\n").unwrap();
        assert!(guess_catalog(&arm).unwrap().catalog.starts_with("neoverse"));
        let x = parse_csv("a", "1,,L1-dcache-load-misses,1,100,,\n").unwrap();
        assert_eq!(guess_catalog(&x).unwrap().catalog, "x86-64");
        let generic = parse_csv("a", "1,,cycles,1,100,,\n1,,task-clock,1,100,,\n").unwrap();
        assert_eq!(guess_catalog(&generic), None);
    }
}
