//! Issue 50's wrong results without an error, one test named after each: every case is
//! refused with its exit code and a message naming the input, or computed right. The
//! cases whose rule lives in a library are also tested there (named the same way).

use crate::common::*;
use std::process::{Command, Output};

fn with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_numalab"));
    c.args(args).env("NO_COLOR", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run numalab")
}

#[test]
fn model_run_mesh_with_ddr_latency_1e308_is_refused_naming_the_key_and_range() {
    // It exited 0 printing nothing.
    refused(
        &[
            "model",
            "run",
            "mesh",
            "--set",
            "memory.ddr.latency_ns=1e308",
            "--experiment",
            "stream-triad",
        ],
        2,
        "memory.ddr.latency_ns = 1e308 is out of range: it must be 0-1000000",
    );
}

#[test]
fn model_run_mesh_with_cores_per_stop_1000000_is_refused_before_it_runs() {
    // It ran forever.
    refused(
        &[
            "model",
            "run",
            "mesh",
            "--set",
            "cores.per_stop=1000000",
            "--experiment",
            "uniform",
        ],
        2,
        "cores.per_stop = 1000000 is out of range: it must be 1-64",
    );
    refused(
        &[
            "model",
            "run",
            "mesh",
            "--experiment",
            "uniform",
            "--cycles",
            "18446744073709551615",
        ],
        2,
        "--cycles 18446744073709551615: must be 1-1000000000",
    );
}

#[test]
fn sizes_of_18446744073709551615_bytes_are_refused_not_0_bytes() {
    refused(
        &["mem", "latency", "--max", "18446744073709551615"],
        2,
        "larger than 1 PiB",
    );
    refused(
        &["home", "map", "--bytes", "18446744073709551615"],
        2,
        "larger than 1 PiB",
    );
}

#[test]
fn numalab_max_input_of_18446744073709551615_reads_inputs_whole() {
    // The bound wrapped to 0 and every input read as "empty".
    let o = with_env(
        &[
            "c2c",
            "--input",
            &fixture("c2c", "amd-ryzen-9-5950x-3.40-ghz.csv"),
        ],
        &[("NUMALAB_MAX_INPUT", "18446744073709551615")],
    );
    assert_ok(&o);
    assert!(!stderr(&o).contains("empty"), "{}", stderr(&o));
    assert!(!stdout(&o).is_empty());
}

#[test]
fn c2c_cell_of_1e300_ns_is_refused_naming_the_cell() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("big.csv");
    std::fs::write(&f, ",,,\n80,,,\n90,85,,\n95,1e300,82,\n").unwrap();
    refused(
        &["c2c", "--input", p(&f)],
        3,
        "line 4, field 2: \"1e300\" ns is not a core-to-core latency (over 1 s",
    );
}

#[test]
fn mem_migrate_max_pages_0_is_refused_not_reported_as_1() {
    refused(
        &["mem", "migrate", "--max-pages", "0"],
        2,
        "--min-pages and --max-pages: give 1 page or more",
    );
}

#[test]
fn db_regressions_baseline_run_999_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite").display().to_string();
    assert_ok(&numalab(&[
        "db",
        "--db",
        &db,
        "ingest",
        &fixture("bundles", "vm-policy"),
    ]));
    let o = refused(
        &["db", "--db", &db, "regressions", "--baseline", "run:999"],
        3,
        "--baseline run:999: no run 999 among the runs selected",
    );
    assert!(stderr(&o).contains("numalab db runs"), "{}", stderr(&o));
}
