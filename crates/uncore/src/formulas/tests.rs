//! The data file parses, names only known roles, and evaluates as the Rust did.

use super::*;
use crate::table::KNOWN_EVENTS;
use std::collections::BTreeSet;

/// Every (formula, per-box figure) derive.rs evaluates.
const USED: &[(&str, &[&str])] = &[
    (
        "read_bytes / write_bytes (intel_imc)",
        &["read_bytes", "write_bytes", "total_bytes"],
    ),
    (
        "read_percent_of_all_cas / write_percent_of_all_cas (intel_imc)",
        &["all_bytes"],
    ),
    (
        "read_bytes / write_bytes (amd_umc)",
        &["read_bytes", "write_bytes", "total_bytes"],
    ),
    ("total_bytes (amd_df, Zen 2/3)", &["total_bytes"]),
    ("total_bytes (arm_cmn)", &["total_bytes"]),
    ("read_gbps / write_gbps / total_gbps", &[]),
    ("llc_hit_ratio (intel_cha)", &["llc_hit", "llc_miss"]),
    (
        "numa_reads_addressed_to_local_dram / numa_reads_addressed_to_remote_dram (intel_cha)",
        &["all_reads", "local_reads", "remote_reads"],
    ),
    ("llc_hit_ratio (arm_cmn)", &["slc_access", "slc_miss"]),
    (
        "directory_snoop_share (intel_cha)",
        &["dir_snoop", "dir_no_snoop"],
    ),
    ("snoops_sent (arm_cmn)", &["snoops_sent"]),
    ("tx_bytes (intel_upi)", &["tx_bytes"]),
    ("tx_bytes (amd_df, Zen 3)", &["tx_bytes"]),
];

#[test]
fn the_built_in_file_parses_with_every_formula_derive_uses() {
    let f = formulas();
    // The figures in the order reports cite them (the order of the old FORMULAS table).
    let figures: Vec<&str> = f.formulas.iter().map(|f| f.figure.as_str()).collect();
    let used: Vec<&str> = USED.iter().map(|(f, _)| *f).collect();
    assert_eq!(figures, used);
    for (figure, per_box) in USED {
        let def = formula(figure);
        let names: Vec<&str> = def.per_box.keys().map(String::as_str).collect();
        let mut want = per_box.to_vec();
        want.sort();
        assert_eq!(names, want, "{figure}");
        assert!(
            !def.formula.is_empty() && !def.source.is_empty(),
            "{figure}"
        );
        assert_eq!(def.class.is_some(), !per_box.is_empty(), "{figure}");
    }
}

#[test]
fn constants_are_the_numbers_the_code_used() {
    assert_eq!(constant("bytes_per_cas"), 64.0);
    assert_eq!(constant("bytes_per_upi_data_flit"), 64.0 / 9.0);
    assert_eq!(constant("bytes_per_df_dram_request"), 64.0);
    assert_eq!(constant("bytes_per_df_link_packet"), 32.0);
    assert_eq!(constant("bytes_per_cmn_mc_request"), 64.0);
    assert!(formulas().constants.iter().all(|c| !c.source.is_empty()));
}

#[test]
fn every_expression_names_only_roles_of_its_class() {
    for f in &formulas().formulas {
        let Some(class) = &f.class else { continue };
        let roles: BTreeSet<String> = KNOWN_EVENTS
            .iter()
            .filter(|e| e.class.key() == class)
            .map(|e| e.role.key())
            .collect();
        assert!(
            !roles.is_empty(),
            "{}: no known events of {class}",
            f.figure
        );
        for (name, e) in &f.per_box {
            let vars = e.variables();
            assert!(!vars.is_empty(), "{} per_box.{name}: no role", f.figure);
            for v in vars {
                match v.strip_suffix("_N") {
                    // Numbered roles: channel or link 0 upwards, no gap.
                    Some(stem) => {
                        let n = (0..=255u8)
                            .take_while(|k| roles.contains(&format!("{stem}_{k}")))
                            .count();
                        assert!(n > 0, "{} per_box.{name}: {v} names no role", f.figure);
                        assert!(
                            roles
                                .iter()
                                .filter(|r| r.strip_prefix(stem).is_some_and(|k| k
                                    .strip_prefix('_')
                                    .is_some_and(|k| k.parse::<u8>().is_ok())))
                                .count()
                                == n,
                            "{} per_box.{name}: {v} has gaps",
                            f.figure
                        );
                        assert_eq!(
                            numbered(e, 1).variables(),
                            e.variables()
                                .iter()
                                .map(|x| x.replace("_N", "_1"))
                                .collect()
                        );
                    }
                    None => assert!(
                        roles.contains(&v),
                        "{} per_box.{name}: {v} is not a role of {class} (known: {roles:?})",
                        f.figure
                    ),
                }
            }
        }
    }
}

#[test]
fn evaluation_gives_the_value_or_the_first_missing_roles_reason() {
    let e = &formula("read_bytes / write_bytes (intel_imc)").per_box["total_bytes"];
    let both = |r: &str| match r {
        "cas_read" => Ok(3.0),
        "cas_write" => Ok(5.0),
        _ => Err(format!("{r}?")),
    };
    assert_eq!(evaluate(e, &both), Derived::of(3.0 * 64.0 + 5.0 * 64.0));
    let none = |r: &str| Err::<f64, _>(format!("no {r}"));
    assert_eq!(evaluate(e, &none), Derived::absent("no cas_read"));
    let no_write = |r: &str| match r {
        "cas_read" => Ok(3.0),
        _ => Err(format!("no {r}")),
    };
    assert_eq!(evaluate(e, &no_write), Derived::absent("no cas_write"));
    // UPI: count * (64 / 9), the constant's value, not (count * 64) / 9.
    let e = &formula("tx_bytes (intel_upi)").per_box["tx_bytes"];
    let x = 9_000_000_001.0;
    assert_eq!(
        evaluate(e, &|_| Ok(x)).value.unwrap().to_bits(),
        (x * (64.0 / 9.0)).to_bits()
    );
    // Numbered roles.
    let e = numbered(&formula("tx_bytes (amd_df, Zen 3)").per_box["tx_bytes"], 3);
    let only3 = |r: &str| {
        if r == "link_out_data_3" {
            Ok(2.0)
        } else {
            Err(r.to_string())
        }
    };
    assert_eq!(evaluate(&e, &only3), Derived::of(64.0));
    // What the engine refuses besides missing roles is said in its words.
    let e = numalab_expr::parse("a / b").unwrap();
    assert_eq!(
        evaluate(&e, &|r| Ok(if r == "a" { 1.0 } else { 0.0 })),
        Derived::absent("division by zero: b is 0")
    );
}

#[test]
fn a_bad_file_is_one_clear_error() {
    let base = "[[constant]]\nname = \"k\"\nvalue = \"64\"\nsource = \"s\"\n";
    let f = |rest: &str| Formulas::parse(&format!("{base}{rest}"));
    let ok = f("[[formula]]\nfigure = \"x\"\nclass = \"c\"\nformula = \"p\"\nsource = \"s\"\nper_box.y = \"r * k\"\n").unwrap();
    assert_eq!(ok.formulas[0].per_box["y"].to_string(), "r * 64");
    let e =
        f("[[formula]]\nfigure = \"x\"\nformula = \"p\"\nsource = \"s\"\nper_box.y = \"r *\"\n")
            .unwrap_err();
    assert!(
        e.contains("\"x\" per_box.y") && e.contains("ends too early"),
        "{e}"
    );
    let e =
        f("[[formula]]\nfigure = \"x\"\nformula = \"p\"\nsource = \"s\"\nwhat = 1\n").unwrap_err();
    assert!(e.contains("what"), "{e}");
    let two = "[[formula]]\nfigure = \"x\"\nformula = \"p\"\nsource = \"s\"\n";
    let e = f(&format!("{two}{two}")).unwrap_err();
    assert!(e.contains("defined twice"), "{e}");
    let e = Formulas::parse(&format!(
        "{base}{base}[[formula]]\nfigure = \"x\"\nformula = \"p\"\nsource = \"s\"\n"
    ))
    .unwrap_err();
    assert!(e.contains("constant k is defined twice"), "{e}");
    let e = Formulas::parse(
        "formula = []\n[[constant]]\nname = \"k\"\nvalue = \"q * 2\"\nsource = \"s\"\n",
    )
    .unwrap_err();
    assert!(e.contains("constant k: missing input: q"), "{e}");
}
