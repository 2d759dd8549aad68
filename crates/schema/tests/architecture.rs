//! ARCHITECTURE.md's arrows, checked on the workspace's manifest through `cargo
//! metadata`: every crate's allowed dependencies (the map's table) and the "never" rules.

use std::collections::{BTreeMap, BTreeSet};

/// Normal (not dev or build) dependencies of every workspace crate, by name.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut g = BTreeMap::new();
    for p in v["packages"].as_array().unwrap() {
        let deps = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect();
        g.insert(p["name"].as_str().unwrap().to_string(), deps);
    }
    g
}

#[test]
fn the_never_arrows_hold() {
    let g = graph();
    assert!(g.len() >= 15, "{:?}", g.keys());
    let internal = |deps: &BTreeSet<String>| -> BTreeSet<String> {
        deps.iter()
            .filter(|d| d.starts_with("numalab"))
            .cloned()
            .collect()
    };
    for (name, deps) in &g {
        // Libraries never know the command line.
        if name != "numalab" && name != "numalab-numa-guest" {
            for cli in ["numalab", "clap", "indicatif"] {
                assert!(!deps.contains(cli), "{name} depends on {cli}");
            }
        }
        // The test rig and the test kit are never (normal) dependencies.
        for rig in ["numalab-numa-guest", "numalab-testkit"] {
            assert!(!deps.contains(rig), "{name} depends on {rig}");
        }
    }
    // A model never measures.
    let model = internal(&g["numalab-model"]);
    for m in [
        "numalab-topo",
        "numalab-proc",
        "numalab-clock",
        "numalab-sensors",
        "numalab-mem",
        "numalab-c2c",
        "numalab-pingpong",
        "numalab-pmu",
        "numalab-harness",
        "numalab-workload",
    ] {
        assert!(!model.contains(m), "numalab-model depends on {m}");
    }
    // Floorplan inference and affinity advice are pure too (scheduling, which runs
    // processes, is numalab-schedule).
    let layout = internal(&g["numalab-layout"]);
    for hw in [
        "numalab-topo",
        "numalab-proc",
        "numalab-clock",
        "numalab-harness",
        "numalab-pingpong",
        "numalab-mem",
    ] {
        assert!(!layout.contains(hw), "numalab-layout depends on {hw}");
    }
    // The matrix half of core-to-core latency is pure: analysing a matrix (and the
    // floorplan inference built on it) needs no hwloc, no clock, no measuring crate.
    let c2c = internal(&g["numalab-c2c"]);
    for hw in [
        "numalab-topo",
        "numalab-proc",
        "numalab-clock",
        "numalab-pingpong",
    ] {
        assert!(!c2c.contains(hw), "numalab-c2c depends on {hw}");
    }
    // The foundations depend on nothing of numalab (the formula engine neither, so both
    // pmu and uncore can use it; chart and clock only on schema; records only on schema
    // and stats; sensors only on schema and records, where its record types live).
    for base in ["numalab-schema", "numalab-stats", "numalab-expr"] {
        assert!(
            internal(&g[base]).is_empty(),
            "{base}: {:?}",
            internal(&g[base])
        );
    }
    for on_schema in ["numalab-chart", "numalab-clock"] {
        let deps = internal(&g[on_schema]);
        assert!(
            deps.iter().all(|d| d == "numalab-schema"),
            "{on_schema}: {deps:?}"
        );
    }
    let sensors = internal(&g["numalab-sensors"]);
    assert!(
        sensors
            .iter()
            .all(|d| d == "numalab-schema" || d == "numalab-records"),
        "numalab-sensors: {sensors:?}"
    );
    let records = internal(&g["numalab-records"]);
    assert!(
        records
            .iter()
            .all(|d| d == "numalab-schema" || d == "numalab-stats"),
        "numalab-records must build without hardware libraries: {records:?}"
    );
    // The report renders records: it depends on the data model, statistics, charts and
    // the records, never on anything that measures or models (so it builds and runs
    // where there is no hwloc and no perf_event).
    let report = internal(&g["numalab-report"]);
    let allowed: BTreeSet<String> = [
        "numalab-schema",
        "numalab-stats",
        "numalab-chart",
        "numalab-records",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert!(
        report.is_subset(&allowed),
        "numalab-report depends on {:?}: the report renders records, it never measures",
        report.difference(&allowed).collect::<Vec<_>>()
    );
    // The records need no hardware library either: not even through an outside crate.
    for d in &g["numalab-records"] {
        assert!(
            !["hwlocality", "perf-event2", "libc"].contains(&d.as_str()),
            "numalab-records depends on {d}"
        );
    }
}

/// The top-level modules of a crate's `src` folder each refers to through `crate::`
/// paths (comments and test modules left out), by module.
fn module_graph(src: &std::path::Path) -> BTreeMap<String, BTreeSet<String>> {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut all = Vec::new();
    files(src, &mut all);
    let top = |p: &std::path::Path| -> String {
        let rel = p.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        first.trim_end_matches(".rs").to_string()
    };
    let names: BTreeSet<String> = all.iter().map(|p| top(p)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in &all {
        let from = top(p);
        if from == "lib" || from == "main" {
            continue;
        }
        let text = std::fs::read_to_string(p).unwrap();
        // Code only: up to the test module, without comments.
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap()
            .lines()
            .map(|l| l.split("//").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        let mut refs = BTreeSet::new();
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // `use crate::{a, b::c, ...}`
                let inner = &group[..group.find('}').unwrap_or(group.len())];
                for item in inner.split(',') {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    refs.insert(name);
                }
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                refs.insert(name);
            }
        }
        g.entry(from.clone()).or_default().extend(
            refs.into_iter()
                .filter(|r| *r != from && names.contains(r) && r != "lib"),
        );
    }
    g
}

/// A cycle through `start`, if any.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        g: &BTreeMap<String, BTreeSet<String>>,
        at: &str,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in g.get(at).into_iter().flatten() {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(g, next, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    walk(g, start, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn no_circles_between_the_modules_of_a_crate() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut checked = 0;
    for dir in ["crates", "tests"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let src = e.path().join("src");
            if !src.is_dir() {
                continue;
            }
            let g = module_graph(&src);
            for m in g.keys() {
                if let Some(c) = cycle(&g, m) {
                    panic!(
                        "{}: modules in a circle: {} -> {m}",
                        src.display(),
                        c.join(" -> ")
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} crates found");
}

#[test]
fn the_module_scan_sees_a_circle() {
    // The checker itself: a circle written in the two forms of `crate::` paths.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "use crate::{b::X, c};\n").unwrap();
    std::fs::write(
        dir.path().join("b.rs"),
        "// crate::c in a comment\nfn f() { crate::a::g() }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("c.rs"),
        "#[cfg(test)]\nmod t { use crate::a; }\n",
    )
    .unwrap();
    let g = module_graph(dir.path());
    assert_eq!(g["b"], BTreeSet::from(["a".to_string()]));
    assert!(g["c"].is_empty());
    assert_eq!(cycle(&g, "a"), Some(vec!["a".to_string(), "b".to_string()]));
    assert_eq!(cycle(&g, "c"), None);
}

#[test]
fn only_chart_writes_svg() {
    // SVG elements written outside `numalab-chart` (tests, which look for them, aside):
    // every picture is drawn by one implementation that escapes every string.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut offenders = Vec::new();
    for e in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        if e.file_name() == "chart" {
            continue;
        }
        let mut files = Vec::new();
        let mut dirs = vec![e.path().join("src")];
        while let Some(d) = dirs.pop() {
            for f in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = f.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            for tag in ["<svg ", "<rect ", "<line ", "<circle ", "<path ", "<text "] {
                if code.contains(tag) {
                    offenders.push(format!("{} ({tag})", f.display()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "SVG outside numalab-chart: {offenders:?}"
    );
}

/// ARCHITECTURE.md's "Every crate and its arrows" table: crate -> the numalab crates it
/// may depend on (`None`: any, for the binary).
fn map() -> BTreeMap<String, Option<BTreeSet<String>>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let table = text
        .split("## Every crate and its arrows")
        .nth(1)
        .expect("ARCHITECTURE.md has the table of every crate");
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(|c| c.to_string())
            .collect()
    };
    let mut out = BTreeMap::new();
    for line in table
        .lines()
        .skip_while(|l| !l.starts_with("| crate"))
        .skip(2)
    {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (name, deps) = (cells[1], cells[cells.len() - 2]);
        let name = ticked(name).pop().expect("a crate name in backticks");
        let full = if name == "numalab" {
            name
        } else {
            format!("numalab-{name}")
        };
        let allowed = (deps != "every library").then(|| {
            ticked(deps)
                .into_iter()
                .map(|d| format!("numalab-{d}"))
                .collect()
        });
        out.insert(full, allowed);
    }
    out
}

#[test]
fn every_crate_has_its_arrows_on_the_map_and_keeps_to_them() {
    let g = graph();
    let m = map();
    assert!(m.len() >= 25, "the table was not read: {:?}", m.keys());
    for (name, deps) in &g {
        let allowed = m.get(name).unwrap_or_else(|| {
            panic!("{name} has no row in ARCHITECTURE.md's table of every crate")
        });
        let Some(allowed) = allowed else { continue };
        for d in deps.iter().filter(|d| d.starts_with("numalab")) {
            assert!(
                allowed.contains(d),
                "{name} depends on {d}, which its row in ARCHITECTURE.md does not allow: add the arrow there if it is meant"
            );
        }
    }
    for (name, allowed) in &m {
        assert!(
            g.contains_key(name),
            "ARCHITECTURE.md names {name}, which is not a crate"
        );
        for d in allowed.iter().flatten() {
            assert!(
                g.contains_key(d),
                "{name}'s row allows {d}, which is not a crate"
            );
        }
    }
}

/// The binary is flags, one library call per command, and printing: every source file of
/// `crates/cli/src` (a command's file, and any folder beside it) stays under 400 lines,
/// and the binary as a whole may shrink but never grow past `TOTAL_CEILING` (its size
/// after the last rules left it; issue 44 aims at 4,000): a rule that leaves a command for
/// another file of the binary instead of its library fails here.
#[test]
fn command_files_stay_small() {
    const LIMIT: usize = 400;
    const TOTAL_CEILING: usize = 4_598;
    fn walk(dir: &std::path::Path, out: &mut Vec<(String, usize)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let lines = std::fs::read_to_string(&p).unwrap().lines().count();
                out.push((p.display().to_string(), lines));
            }
        }
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let commands = files
        .iter()
        .filter(|(p, _)| p.contains("/commands/"))
        .count();
    assert!(commands >= 15, "{commands} command files found");
    for (p, lines) in &files {
        assert!(
            *lines <= LIMIT,
            "{p}: {lines} lines; a file of the binary stays under {LIMIT}: flags, one library call, printing (move rules into the library)"
        );
    }
    let total: usize = files.iter().map(|(_, n)| n).sum();
    assert!(
        total <= TOTAL_CEILING,
        "crates/cli/src is {total} lines, over its ceiling of {TOTAL_CEILING}: move rules into the libraries"
    );
}

/// Every `.rs` file under `crates/*/src` (product code: test-only modules and blocks
/// left out), recursively.
fn product_sources() -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for c in std::fs::read_dir(&crates).unwrap().flatten() {
        let src = c.path().join("src");
        if src.is_dir() {
            walk(&src, &mut out);
        }
    }
    out.sort();
    out
}

/// Net `{` minus `}` on a line, outside string and char literals and `//` comments
/// (good enough for rustfmt-formatted code: raw strings with braces are rare and
/// balanced).
fn brace_delta(line: &str) -> i64 {
    let (mut d, mut in_str, mut prev) = (0i64, false, ' ');
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if in_str {
            if c == '\\' {
                chars.next();
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
        } else if c == '/' && chars.peek() == Some(&'/') {
            break;
        } else if c == '\'' && prev != '&' && !prev.is_alphanumeric() {
            // A char literal such as '{' or '\n' (a lifetime has no closing quote).
            let rest: String = chars.clone().take(3).collect();
            if let Some(end) = rest.find('\'') {
                for _ in 0..=end {
                    chars.next();
                }
            }
        } else if c == '{' {
            d += 1;
        } else if c == '}' {
            d -= 1;
        }
        prev = c;
    }
    d
}

/// The lines of a block starting at `start` (the line holding its opening brace, or a
/// declaration ending in `;`): how many lines until its braces balance.
fn block_len(lines: &[&str], start: usize) -> usize {
    let mut depth = 0i64;
    let mut opened = false;
    for (i, l) in lines.iter().enumerate().skip(start) {
        let d = brace_delta(l);
        if d != 0 || l.contains('{') {
            opened = opened || l.contains('{');
        }
        depth += d;
        if opened && depth <= 0 {
            return i - start + 1;
        }
        if !opened && l.trim_end().ends_with(';') {
            return i - start + 1;
        }
    }
    lines.len() - start
}

/// Product lines of a file and its functions' lengths: `#[cfg(test)]` items (test
/// modules, test-only helpers) are left out.
fn measure(text: &str) -> (usize, Vec<(String, usize, usize)>) {
    let lines: Vec<&str> = text.lines().collect();
    let (mut product, mut fns) = (0usize, Vec::new());
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if t.starts_with("#[cfg(test)]") {
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim_start().starts_with("#[") {
                j += 1;
            }
            i = j + block_len(&lines, j.min(lines.len() - 1));
            continue;
        }
        let body = t
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ")
            .trim_start_matches("const ")
            .trim_start_matches("async ")
            .trim_start_matches("unsafe ")
            .trim_start_matches("extern \"C\" ");
        if let Some(rest) = body.strip_prefix("fn ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            fns.push((name, i + 1, block_len(&lines, i)));
        }
        product += 1;
        i += 1;
    }
    (product, fns)
}

#[test]
fn the_size_measure_leaves_out_tests_and_counts_functions() {
    let text = "fn a() {\n    let s = \"}\";\n    let c = '{';\n}\n\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\npub fn b(x: u32) -> u32 {\n    x\n}\n";
    let (product, fns) = measure(text);
    assert_eq!(product, 8);
    assert_eq!(fns, vec![("a".to_string(), 1, 4), ("b".to_string(), 10, 3)]);
}

/// Issue 44: no product source file over 900 lines, no function over 250 (a file or
/// function that grows past them is split by job, not the limit raised).
#[test]
fn product_files_and_functions_stay_within_their_limits() {
    const FILE_LINES: usize = 900;
    const FN_LINES: usize = 250;
    let mut over = Vec::new();
    let files = product_sources();
    assert!(files.len() > 200, "{} source files found", files.len());
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap();
        let (product, fns) = measure(&text);
        let name = p.display().to_string();
        if product > FILE_LINES {
            over.push(format!(
                "{name}: {product} product lines (limit {FILE_LINES})"
            ));
        }
        for (f, line, len) in fns {
            if len > FN_LINES {
                over.push(format!(
                    "{name}:{line}: fn {f} is {len} lines (limit {FN_LINES})"
                ));
            }
        }
    }
    assert!(over.is_empty(), "split by job:\n{}", over.join("\n"));
}
