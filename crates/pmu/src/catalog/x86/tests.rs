//! Tests of the x86 catalogs.

use super::amd::load_amd;
use super::intel::{load_intel, scale_fraction_thresholds};
use super::*;

fn spr_with(core: &'static str, metrics: &'static str) -> IntelFiles {
    IntelFiles {
        id: "intel-spr",
        name: "test",
        core,
        metrics,
        retire: None,
        models: &[0x8f],
        steppings: None,
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

#[test]
fn malformed_files_are_one_clear_error() {
    let spr = &INTEL[3];
    assert_eq!(spr.id, "intel-spr");
    // Truncated JSON.
    let cut = &spr.core[..spr.core.len() / 2];
    let e = load_intel(&spr_with(cut, spr.metrics)).unwrap_err();
    assert!(matches!(e, CatalogError::Data { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with("data file data/x86/intel/spr-core.json: "),
        "{e}"
    );
    let e = load_intel(&spr_with(spr.core, "{\"Header\": {}, \"Metrics\": [")).unwrap_err();
    assert!(e.to_string().contains("spr-metrics.json"), "{e}");
    // A metric naming an event the core file lacks.
    let bad = spr
        .metrics
        .replacen("\"INT_MISC.UOP_DROPPING\"", "\"NO_SUCH.EVENT\"", 1);
    let e = load_intel(&spr_with(spr.core, leak(bad))).unwrap_err();
    assert!(e.to_string().contains("unknown event NO_SUCH.EVENT"), "{e}");
    // A formula that does not parse.
    let bad = spr
        .metrics
        .replacen("\"Formula\": \"", "\"Formula\": \"( ", 1);
    let e = load_intel(&spr_with(spr.core, leak(bad))).unwrap_err();
    assert!(e.to_string().contains("metric "), "{e}");
    // A bad event code.
    let bad = spr
        .core
        .replacen("\"EventCode\": \"0x", "\"EventCode\": \"0xZ", 1);
    let e = load_intel(&spr_with(leak(bad), spr.metrics)).unwrap_err();
    assert!(e.to_string().contains("bad EventCode"), "{e}");
    // AMD: a TOML error names the file.
    let e = load_amd(&AmdFiles {
        id: "amd-zen4",
        text: "[catalog]\nid = \"amd-zen4\"\n",
    })
    .unwrap_err();
    assert!(e.to_string().contains("data/x86/amd/zen4.toml"), "{e}");
}

#[test]
fn own_threshold_and_fraction_scaling() {
    let t = expr::parse_extended("( tma_x > 20 ) & ( tma_y > 10 )").unwrap();
    assert_eq!(own_threshold("tma_x", &t), Some(20.0));
    assert_eq!(own_threshold("tma_y", &t), Some(10.0));
    assert_eq!(own_threshold("tma_z", &t), None);
    let t = expr::parse_extended("a >0.15 && b >0.20").unwrap();
    assert_eq!(
        scale_fraction_thresholds(&t).to_string(),
        "((a > 15) & (b > 20))"
    );
}
