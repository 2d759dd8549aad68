//! The sides of a comparison: which bundles are runs of one machine, what each side is
//! called, and which power sources its figures rest on.

use super::{compare_groups, Options, Report, Side, SidePower};
use crate::load::{load, unique_labels, LoadError, Loaded};
use crate::metrics::Metric;
use crate::outcome::Refusal;
use numalab_schema::interrupt::Interrupted;
use numalab_schema::{Classify, ErrorClass};
use std::path::PathBuf;

/// The bundle arguments of `compare` as sides: each argument is one side, and commas
/// join the runs of one side (`A1,A2,A3`) unless the whole argument is an existing path.
pub fn split_arguments(args: &[PathBuf]) -> Vec<Vec<PathBuf>> {
    args.iter()
        .map(|b| {
            let text = b.to_string_lossy();
            if !b.exists() && text.contains(',') {
                text.split(',')
                    .filter(|p| !p.is_empty())
                    .map(PathBuf::from)
                    .collect()
            } else {
                vec![b.clone()]
            }
        })
        .collect()
}

/// The bundles of a comparison's sides, read.
#[derive(Debug)]
pub struct LoadedSides {
    /// Every bundle that could be read, in argument order, labels made unique.
    pub bundles: Vec<Loaded>,
    /// The side (argument) each readable bundle belongs to.
    pub side_of: Vec<usize>,
    /// Why the others could not be read.
    pub errors: Vec<LoadError>,
}

/// Reads every bundle of every side ([`split_arguments`]); one that cannot be read does
/// not stop the others.
pub fn load_sides(groups: &[Vec<PathBuf>]) -> LoadedSides {
    let mut out = LoadedSides {
        bundles: Vec::new(),
        side_of: Vec::new(),
        errors: Vec::new(),
    };
    for (g, group) in groups.iter().enumerate() {
        for p in group {
            match load(p) {
                Ok(l) => {
                    out.bundles.push(l);
                    out.side_of.push(g);
                }
                Err(e) => out.errors.push(e),
            }
        }
    }
    unique_labels(&mut out.bundles);
    out
}

/// Reads the bundles of `compare`'s arguments ([`split_arguments`], [`load_sides`]);
/// refused (the reasons of the unreadable ones, then the count) unless two can be read.
pub fn load_arguments(args: &[PathBuf]) -> Result<LoadedSides, Refusal> {
    let groups = split_arguments(args);
    let loaded = load_sides(&groups);
    if let Some(e) = loaded
        .errors
        .iter()
        .find(|e| e.class() == ErrorClass::Interrupted)
    {
        return Err(Refusal::new(ErrorClass::Interrupted, e.message.clone()));
    }
    if loaded.bundles.len() < 2 {
        let mut msg: Vec<String> = loaded.errors.iter().map(|e| e.message.clone()).collect();
        msg.push(format!(
            "compare needs two readable bundles; {} of {} could be read",
            loaded.bundles.len(),
            groups.iter().map(Vec::len).sum::<usize>()
        ));
        return Err(Refusal::new(ErrorClass::Input, msg.join("\n")));
    }
    Ok(loaded)
}

/// A comparison stopped by Ctrl-C or SIGTERM (exit 130): nothing is written.
pub const COMPARE_INTERRUPTED: Interrupted = Interrupted {
    during: "comparing the bundles",
    left: "nothing was written",
};

/// Each bundle's label and comparable figures, in the order given.
pub type Figures = Vec<(String, Vec<Metric>)>;

/// The comparison of the bundles read ([`Sides::group`], then every side with the
/// first, `run_noise` percent assumed for single runs, with each side's power sources),
/// and each bundle's figures; refused when every bundle is a run of one machine, and ended
/// as interrupted ([`COMPARE_INTERRUPTED`]) at a stop request.
pub fn compare_loaded(
    loaded: &LoadedSides,
    by_machine: bool,
    run_noise: f64,
) -> Result<(Report, Figures), Refusal> {
    let set = &loaded.bundles;
    let Sides {
        metrics,
        sides,
        power,
    } = Sides::group(set, &loaded.side_of, by_machine);
    COMPARE_INTERRUPTED
        .check()
        .map_err(|e| Refusal::new(e.class(), e.to_string()))?;
    if sides.len() < 2 {
        return Err(Refusal::new(
            ErrorClass::Input,
            format!(
                "all {} bundles are runs of one machine ({}): nothing to compare them with; give runs of another machine too, or leave out --by-machine to compare the runs with each other",
                set.len(),
                sides.first().map(|s| s.label.as_str()).unwrap_or("?")
            ),
        ));
    }
    let options = Options {
        assumed_run_spread: run_noise / 100.0,
    };
    let report = compare_groups(&sides, problems(set), options).with_power(power);
    COMPARE_INTERRUPTED
        .check()
        .map_err(|e| Refusal::new(e.class(), e.to_string()))?;
    Ok((report, metrics))
}

/// The refusal of a comparison whose bundles share no figure, with what each has.
pub fn nothing_in_common(metrics: &[(String, Vec<Metric>)]) -> Refusal {
    Refusal::new(
        ErrorClass::Input,
        format!(
            "the bundles have no figure in common ({}); run the same commands on each machine (numalab evaluate, or the same scale study) and compare their output folders",
            comparable_groups(metrics).join("; ")
        ),
    )
}

/// A comparison's sides, built from its bundles.
#[derive(Debug, Clone, PartialEq)]
pub struct Sides {
    /// Each bundle's label and comparable figures, in the order given.
    pub metrics: Vec<(String, Vec<Metric>)>,
    /// The sides, the baseline first; each holds the figures of its runs.
    pub sides: Vec<Side>,
    /// Each side's power sources: those of every bundle of the side, without repeats.
    pub power: Vec<SidePower>,
}

impl Sides {
    /// Groups `bundles` into sides, in order of first appearance: by argument
    /// (`side_of`, as [`LoadedSides::side_of`]), or with `by_machine` by host name and
    /// topology fingerprint. A side of several runs is named by its host ("vm (3
    /// runs)"), or by its first run when two sides would share that name ("a and 2
    /// more run(s)"); a side of one run keeps the bundle's label.
    pub fn group(bundles: &[Loaded], side_of: &[usize], by_machine: bool) -> Sides {
        let metrics: Vec<(String, Vec<Metric>)> = bundles
            .iter()
            // At a stop request (Ctrl-C, SIGTERM) the figures left are not extracted;
            // the caller ([`compare_loaded`]) then ends as interrupted.
            .map(|l| {
                let stop = numalab_schema::interrupt::requested;
                let m = crate::metrics::metrics_until(l, &stop).unwrap_or_default();
                (l.label.clone(), m)
            })
            .collect();
        let key_of: Vec<String> = if by_machine {
            bundles
                .iter()
                .map(|l| {
                    let h = &l.bundle.envelope.host;
                    format!(
                        "{} [{}]",
                        h.hostname.as_deref().unwrap_or("unknown host"),
                        h.topology_hash
                    )
                })
                .collect()
        } else {
            side_of.iter().map(|g| format!("#{g}")).collect()
        };
        let mut sides: Vec<Side> = Vec::new();
        let mut keys: Vec<&str> = Vec::new();
        for (k, (label, m)) in key_of.iter().zip(&metrics) {
            match keys.iter().position(|x| x == k) {
                Some(i) => sides[i].runs.push(m.clone()),
                None => {
                    keys.push(k);
                    sides.push(Side {
                        label: label.clone(),
                        runs: vec![m.clone()],
                    });
                }
            }
        }
        let hosts: Vec<String> = keys
            .iter()
            .map(|k| {
                let first = &bundles[key_of.iter().position(|x| x == k).unwrap_or(0)];
                let host = first.bundle.envelope.host.hostname.clone();
                host.unwrap_or_else(|| first.label.clone())
            })
            .collect();
        for (i, s) in sides.iter_mut().enumerate() {
            let n = s.runs.len();
            if n > 1 {
                let unique = hosts.iter().filter(|h| **h == hosts[i]).count() == 1;
                s.label = if unique {
                    format!("{} ({n} runs)", hosts[i])
                } else {
                    format!("{} and {} more run(s)", s.label, n - 1)
                };
            }
        }
        let power = keys
            .iter()
            .zip(&sides)
            .map(|(k, side)| {
                let mut sources: Vec<String> = Vec::new();
                for (l, _) in bundles.iter().zip(&key_of).filter(|(_, s)| s == k) {
                    for src in crate::power::sources(l) {
                        if !sources.contains(&src) {
                            sources.push(src);
                        }
                    }
                }
                SidePower {
                    side: side.label.clone(),
                    sources,
                }
            })
            .collect();
        Sides {
            metrics,
            sides,
            power,
        }
    }
}

/// The problems met while reading the bundles, one line each, led by the bundle's label,
/// and the kinds with more records than the figures are made of ([`crate::load::PER_KIND`]).
pub fn problems(bundles: &[Loaded]) -> Vec<String> {
    bundles
        .iter()
        .flat_map(|l| {
            l.warnings
                .iter()
                .map(move |w| format!("{}: {w}", l.label))
                .chain(
                    l.over_bound()
                        .into_iter()
                        .map(|(kind, n)| crate::load::over_bound_note(&l.label, &kind, n)),
                )
        })
        .collect()
}

/// What each bundle has that could be compared: "label: group, group" (its figures'
/// groups in first-seen order) or "label: nothing comparable".
pub fn comparable_groups(metrics: &[(String, Vec<Metric>)]) -> Vec<String> {
    metrics
        .iter()
        .map(|(l, m)| {
            let mut groups: Vec<&str> = Vec::new();
            for g in m.iter().map(|m| m.group.as_str()) {
                if !groups.contains(&g) {
                    groups.push(g);
                }
            }
            if groups.is_empty() {
                format!("{l}: nothing comparable")
            } else {
                format!("{l}: {}", groups.join(", "))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::test_loaded;
    use numalab_schema::Origin;

    fn bundle(label: &str, host: Option<&str>, topology: &str) -> Loaded {
        let mut l = test_loaded("mem", Origin::Measured, Vec::new());
        l.label = label.into();
        l.bundle.envelope.host.hostname = host.map(str::to_string);
        l.bundle.envelope.host.topology_hash = topology.into();
        l
    }

    fn labels(s: &Sides) -> Vec<(String, usize)> {
        s.sides
            .iter()
            .map(|s| (s.label.clone(), s.runs.len()))
            .collect()
    }

    #[test]
    fn commas_join_runs_unless_the_argument_exists() {
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("a,b");
        std::fs::create_dir(&odd).unwrap();
        let groups = split_arguments(&[odd.clone(), "x,,y".into(), "z".into()]);
        assert_eq!(
            groups,
            vec![vec![odd], vec!["x".into(), "y".into()], vec!["z".into()]]
        );
    }

    #[test]
    fn unreadable_bundles_are_errors_and_the_others_keep_their_side() {
        let loaded = load_sides(&[vec!["/no/such/bundle".into()], vec!["/no/such/2".into()]]);
        assert!(loaded.bundles.is_empty());
        assert_eq!(loaded.errors.len(), 2);
        assert!(loaded.errors[0].message.contains("/no/such/bundle"));
    }

    #[test]
    fn compare_needs_two_readable_bundles() {
        let e = load_arguments(&["/no/such/a".into(), "/no/such/b,/no/such/c".into()]).unwrap_err();
        assert_eq!(e.class, ErrorClass::Input);
        let lines: Vec<&str> = e.message.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("/no/such/a: no such file"));
        assert_eq!(
            lines[3],
            "compare needs two readable bundles; 0 of 3 could be read"
        );
    }

    #[test]
    fn runs_of_one_machine_alone_are_not_compared() {
        let loaded = LoadedSides {
            bundles: vec![
                bundle("vm", Some("vm"), "t1"),
                bundle("vm #2", Some("vm"), "t1"),
            ],
            side_of: vec![0, 1],
            errors: Vec::new(),
        };
        let e = compare_loaded(&loaded, true, 10.0).unwrap_err();
        assert_eq!(e.class, ErrorClass::Input);
        assert!(e
            .message
            .starts_with("all 2 bundles are runs of one machine (vm (2 runs)): nothing"));
        let (report, metrics) = compare_loaded(&loaded, false, 10.0).unwrap();
        assert_eq!(metrics.len(), 2);
        assert_eq!(report.comparisons.len(), 1);
        assert!(report.nothing_in_common());
        assert!(nothing_in_common(&metrics)
            .message
            .starts_with("the bundles have no figure in common (vm: nothing comparable; vm #2: nothing comparable); run"));
    }

    #[test]
    fn sides_by_argument_are_named_by_host_or_first_run() {
        let set = [
            bundle("vm (a)", Some("vm"), "t1"),
            bundle("vm (b)", Some("vm"), "t1"),
            bundle("big", Some("big"), "t2"),
        ];
        let s = Sides::group(&set, &[0, 0, 1], false);
        assert_eq!(
            labels(&s),
            vec![("vm (2 runs)".into(), 2), ("big".into(), 1)]
        );
        assert_eq!(s.metrics.len(), 3);
        assert_eq!(s.power.len(), 2);
        assert_eq!(s.power[0].side, "vm (2 runs)");
        assert!(s.power[0].sources.is_empty());
        // Two sides of the same host: named by their first runs.
        let set = [
            bundle("vm #1", Some("vm"), "t1"),
            bundle("vm #2", Some("vm"), "t1"),
            bundle("vm #3", Some("vm"), "t1"),
            bundle("vm #4", Some("vm"), "t1"),
        ];
        let s = Sides::group(&set, &[0, 0, 1, 1], false);
        assert_eq!(
            labels(&s),
            vec![
                ("vm #1 and 1 more run(s)".into(), 2),
                ("vm #3 and 1 more run(s)".into(), 2)
            ]
        );
    }

    #[test]
    fn sides_by_machine_join_runs_of_one_host_and_topology() {
        let set = [
            bundle("a", Some("a"), "t1"),
            bundle("b", Some("b"), "t2"),
            bundle("a (2)", Some("a"), "t1"),
            bundle("a (3)", Some("a"), "t9"),
            bundle("x", None, "t3"),
            bundle("b (2)", Some("b"), "t2"),
        ];
        let s = Sides::group(&set, &[0, 1, 2, 3, 4, 5], true);
        // Host a is two machines (topologies t1 and t9): its side of two runs is named
        // by its first run.
        assert_eq!(
            labels(&s),
            vec![
                ("a and 1 more run(s)".into(), 2),
                ("b (2 runs)".into(), 2),
                ("a (3)".into(), 1),
                ("x".into(), 1)
            ]
        );
    }

    #[test]
    fn problems_and_groups_name_their_bundle() {
        let mut l = bundle("a", Some("a"), "t");
        l.warnings
            .push(numalab_schema::Warning::new("cut", "cut off"));
        assert_eq!(problems(&[l]), vec!["a: cut off"]);
        let m = |group: &str| Metric {
            id: format!("{group}.x"),
            group: group.into(),
            name: "x".into(),
            unit: "s".into(),
            higher_is_better: false,
            samples: vec![1.0],
            bounds: None,
            setup: None,
        };
        let have = comparable_groups(&[
            ("a".into(), vec![m("memory"), m("latency"), m("memory")]),
            ("b".into(), Vec::new()),
        ]);
        assert_eq!(have, vec!["a: memory, latency", "b: nothing comparable"]);
    }
}
