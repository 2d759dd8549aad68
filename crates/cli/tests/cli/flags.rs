//! The command line's own parsing, tested through the library: the fast one-subcommand
//! parser against the whole command, and flags that must plan what `numalab evaluate`'s
//! steps plan (the same options, so the same keys).

mod parser {
    use clap::{CommandFactory, FromArgMatches, Parser};
    use numalab_cli::cli::{one_command, subcommand_name, Cli};
    use std::ffi::OsString;

    fn os(line: &[&str]) -> Vec<OsString> {
        line.iter().map(OsString::from).collect()
    }

    /// Every argument of a command and of its subcommands, as the parser sees them.
    fn shape(cmd: &clap::Command, out: &mut Vec<String>, path: &str) {
        // `--version`, which the whole command propagates to every subcommand, is left
        // out: the short parser has none, so `numalab c2c --version` goes to the whole
        // command (`help_version_and_errors_are_the_whole_commands`).
        for a in cmd.get_arguments().filter(|a| a.get_id() != "version") {
            out.push(format!(
                "{path} {} long={:?} short={:?} required={} global={} defaults={:?} action={:?} num_args={:?} values={:?}",
                a.get_id(),
                a.get_long(),
                a.get_short(),
                a.is_required_set(),
                a.is_global_set(),
                a.get_default_values(),
                a.get_action(),
                a.get_num_args(),
                a.get_possible_values().iter().map(|v| v.get_name().to_string()).collect::<Vec<_>>(),
            ));
        }
        for g in cmd.get_groups() {
            out.push(format!(
                "{path} group {} args={:?} required={} multiple={}",
                g.get_id(),
                g.get_args().collect::<Vec<_>>(),
                g.is_required_set(),
                g.clone().is_multiple()
            ));
        }
        for s in cmd.get_subcommands() {
            shape(s, out, &format!("{path} {}", s.get_name()));
        }
    }

    #[test]
    fn each_subcommand_alone_has_the_arguments_of_the_whole_command() {
        let mut full = Cli::command();
        full.build();
        let names: Vec<String> = full
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .filter(|n| n != "help")
            .collect();
        assert_eq!(names.len(), 20, "{names:?}");
        for name in &names {
            let mut one = one_command(&os(&["numalab", name]))
                .unwrap_or_else(|| panic!("no parser of its own for `{name}`"));
            one.build();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            shape(full.find_subcommand(name).unwrap(), &mut a, name);
            shape(one.find_subcommand(name).unwrap(), &mut b, name);
            assert!(a.len() > 1, "{name}: {a:?}");
            assert_eq!(
                a, b,
                "{name}: its own parser differs from the whole command's"
            );
        }
        // The global option, as the whole command has it.
        let global = |c: &clap::Command| {
            let mut v = Vec::new();
            shape(c, &mut v, "");
            v.into_iter()
                .filter(|l| l.starts_with(" color "))
                .collect::<Vec<_>>()
        };
        let mut one = one_command(&os(&["numalab", "c2c"])).unwrap();
        one.build();
        assert_eq!(global(&full).len(), 1);
        assert_eq!(global(&full), global(&one));
    }

    #[test]
    fn a_line_parses_alike_through_its_subcommand_alone_and_the_whole_command() {
        for line in [
            "numalab c2c --cpus 0-1 --samples 3 --json",
            "numalab --color never topo --json",
            "numalab --color=always doctor",
            "numalab mem bandwidth --kernel copy,triad --threads 1",
            "numalab model run neoverse-v1-64 --experiment stream-triad",
            "numalab scale --threads 1,2 -- true --color x",
            "numalab db runs",
        ] {
            let line: Vec<&str> = line.split(' ').collect();
            let args = os(&line);
            // The short path is the one taken (not the fallback).
            let m = one_command(&args)
                .unwrap()
                .try_get_matches_from(&args)
                .unwrap_or_else(|e| panic!("{line:?}: {e}"));
            let short = Cli::from_arg_matches(&m).unwrap();
            let full = Cli::try_parse_from(&args).unwrap();
            assert_eq!(format!("{short:?}"), format!("{full:?}"), "{line:?}");
            let parsed = Cli::try_parse_args(args).unwrap();
            assert_eq!(format!("{parsed:?}"), format!("{full:?}"), "{line:?}");
        }
    }

    #[test]
    fn help_version_and_errors_are_the_whole_commands() {
        for line in [
            &["numalab", "c2c", "--bogus"][..],
            &["numalab", "c2c", "--help"],
            &["numalab", "c2c", "--version"],
            &["numalab", "--help"],
            &["numalab"],
            &["numalab", "no-such-command"],
            &["numalab", "--color"],
            &["numalab", "mem"],
            &["numalab", "c2c", "--samples", "many"],
        ] {
            let ours = Cli::try_parse_args(os(line)).unwrap_err();
            let full = Cli::try_parse_from(os(line)).unwrap_err();
            assert_eq!(ours.kind(), full.kind(), "{line:?}");
            assert_eq!(
                ours.render().to_string(),
                full.render().to_string(),
                "{line:?}"
            );
        }
        assert_eq!(
            subcommand_name(&os(&["numalab", "--color", "c2c", "topo"])),
            Some("topo")
        );
        assert_eq!(subcommand_name(&os(&["numalab", "-h", "topo"])), None);
    }
}

mod c2c_plan {
    use numalab_cli::cli::{Cli, Command};
    use std::ffi::OsString;

    fn options(line: &[&str]) -> numalab_pingpong::probe::Options {
        let args: Vec<OsString> = line.iter().map(OsString::from).collect();
        match Cli::try_parse_args(args).unwrap().command {
            Command::C2c(a) => a.options(),
            _ => panic!("not c2c: {line:?}"),
        }
    }

    /// `numalab c2c` and `numalab evaluate`'s step pass the same options to the one plan
    /// (`numalab_pingpong::probe::plan`), so the same pairs, warm-up and keys: the flags'
    /// defaults are the probe's defaults, and the quick step is the flags it names.
    #[test]
    fn the_command_and_the_evaluate_step_plan_the_same_matrix() {
        use numalab_evaluate::steps::c2c_options;
        assert_eq!(options(&["numalab", "c2c"]), c2c_options(false));
        assert_eq!(
            options(&["numalab", "c2c", "--samples", "100", "--across", "1"]),
            c2c_options(true)
        );
        let machine = numalab_topo::machine(
            &numalab_topo::Input::detect(&numalab_testkit::fixture(
                "topology/128arm-2pa2n8cluster4co.tar.bz2",
            ))
            .unwrap(),
        )
        .unwrap();
        let cpus = machine.pu_ids();
        let cli = numalab_pingpong::probe::plan(&machine, &cpus, &options(&["numalab", "c2c"]));
        let eval = numalab_pingpong::probe::plan(&machine, &cpus, &c2c_options(false));
        assert_eq!(cli.unwrap(), eval.unwrap());
    }
}

mod workload_plan {
    use numalab_cli::cli::{Cli, Command};
    use numalab_cli::commands::workload::{config_of, WorkloadCommand};
    use std::ffi::OsString;

    fn config(line: &[&str], pus: usize) -> numalab_workload::run::RunConfig {
        let args: Vec<OsString> = line.iter().map(OsString::from).collect();
        match Cli::try_parse_args(args).unwrap().command {
            Command::Workload(w) => match w.command {
                WorkloadCommand::Run(a) => config_of(&a, a.threads.unwrap_or(pus)),
            },
            _ => panic!("not workload: {line:?}"),
        }
    }

    /// `numalab workload run` with the flags that name the evaluate step's runs plans
    /// the same runs (configuration and key) as the step, which both run through
    /// `numalab_workload::plan::run`: a journal of one resumes the other's runs.
    #[test]
    fn the_command_and_the_evaluate_step_plan_the_same_runs() {
        let step = numalab_workload::plan::reference(4, true);
        let quick = ["--duration", "3", "--warmup", "0.5"];
        let line = |threads: &str| {
            let mut l = vec!["numalab", "workload", "run", "--threads", threads];
            l.extend(quick);
            config(&l, 4)
        };
        assert_eq!(step, vec![line("1"), line("4")]);
        let full = numalab_workload::plan::reference(4, false);
        let replicated = config(
            &[
                "numalab",
                "workload",
                "run",
                "--mode",
                "replicated",
                "--duration",
                "5",
            ],
            4,
        );
        assert_eq!(full[3], replicated);
        assert_eq!(full[3].key(), replicated.key());
    }
}

mod bmc_flags {
    use numalab_cli::power::BmcArgs;
    use numalab_schema::ErrorClass;
    use std::path::PathBuf;

    #[test]
    fn no_bmc_is_no_power() {
        assert!(BmcArgs::default().open().unwrap().is_none());
        let blank = BmcArgs {
            bmc: Some("  ".into()),
            ..Default::default()
        };
        assert!(blank.options().is_none());
    }

    #[test]
    fn the_flags_are_the_watchers_options() {
        let a = BmcArgs {
            bmc: Some(" ipmi://admin@bmc:623 ".into()),
            bmc_interval: 250,
            bmc_cipher_suite: Some(17),
            bmc_ipmitool: "/opt/ipmitool".into(),
            ..Default::default()
        };
        let o = a.options().unwrap();
        assert_eq!(o.address, "ipmi://admin@bmc:623");
        assert_eq!((o.interval_ms, o.cipher_suite), (250, Some(17)));
        assert_eq!(o.ipmitool, PathBuf::from("/opt/ipmitool"));
        // A password in the address is the user's to fix (exit 2), never repeated.
        let bad = BmcArgs {
            bmc: Some("ipmi://admin:hunter2@bmc".into()),
            ..Default::default()
        };
        let e = bad.open().unwrap_err();
        assert_eq!(e.class, ErrorClass::Usage);
        assert!(!e.message.contains("hunter2"), "{}", e.message);
    }
}

mod library_defaults {
    //! Flags whose default cannot name the library's (an enum of the command line's own,
    //! a size or duration as text): parsed with no flag given, each must be what the
    //! library takes when nothing is said. The numeric and text defaults name the
    //! library's constants and `Default`s directly and cannot drift.
    use numalab_cli::cli::{Cli, Command};
    use numalab_cli::commands::{db, fleet, home, model};
    use std::ffi::OsString;

    fn parse(line: &str) -> Command {
        let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
        Cli::try_parse_args(args)
            .unwrap_or_else(|e| panic!("{line}: {e}"))
            .command
    }

    fn bytes(text: &str) -> u64 {
        numalab_schema::units::parse_bytes(text).unwrap()
    }

    #[test]
    fn each_default_of_the_command_line_is_the_librarys() {
        let Command::Model(m) = parse("numalab model run mesh --experiment uniform") else {
            panic!()
        };
        let model::ModelCommand::Run(r) = m.command else {
            panic!()
        };
        let engine = numalab_model::experiments::Options::default().engine;
        assert_eq!(format!("{:?}", r.engine), format!("{engine:?}"));

        let Command::Home(h) = parse("numalab home map") else {
            panic!()
        };
        let home::HomeCommand::Map(a) = h.command else {
            panic!()
        };
        let live = numalab_home::live::LiveOptions::default();
        assert_eq!(bytes(&a.bytes), live.bytes);
        assert_eq!(format!("{:?}", a.huge), format!("{:?}", live.huge));

        let Command::Home(h) = parse("numalab home bench --model knl-7210") else {
            panic!()
        };
        let home::HomeCommand::Bench(a) = h.command else {
            panic!()
        };
        let lib = numalab_home::bench::BenchOptions::new("knl-7210");
        let stencil = numalab_home::settings::stencil_threads(&a.stencil).unwrap();
        assert_eq!(stencil, lib.stencil_threads);
        assert_eq!(bytes(&a.model_flags.page_size), lib.trial.truth.page_bytes);
        assert_eq!(a.model_flags.node, lib.trial.truth.node);

        let Command::Home(h) = parse("numalab home conflicts x.tbl") else {
            panic!()
        };
        let home::HomeCommand::Conflicts(a) = h.command else {
            panic!()
        };
        let lib = numalab_home::conflicts::ConflictOptions::default();
        assert_eq!(bytes(&a.page_size), lib.page_bytes);

        let Command::Fleet(f) = parse("numalab fleet run --fleet x") else {
            panic!()
        };
        let fleet::FleetCommand::Run(a) = f.command else {
            panic!()
        };
        assert_eq!(a.timeout, numalab_fleet::DEFAULT_TIMEOUT);

        let Command::Db(d) = parse("numalab db regressions") else {
            panic!()
        };
        let db::DbCommand::Regressions(a) = d.command else {
            panic!()
        };
        let baseline = numalab_history::Baseline::parse(&a.baseline).unwrap();
        assert_eq!(
            baseline,
            numalab_history::RegressionQuery::default().baseline
        );
    }
}
