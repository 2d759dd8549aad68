//! The derived figures of whole reports, pinned: every controller, socket and link
//! figure (values and reasons), the formulas cited and the notes, for replayed counts
//! on each fixture and the ways a figure goes missing (not asked for, not counted,
//! not supported, refused, zero denominators). The expected JSON
//! (tests/fixtures/derive-golden.json) was written by the Rust formulas before they
//! became data; the figures must stay identical to the last bit and character.
//!
//! After a deliberate change of a figure, rewrite the file with
//! `NUMALAB_BLESS_UNCORE_GOLDEN=1 cargo test -p numalab-uncore --test derive_golden`
//! and review its diff.

use numalab_uncore::{
    discover, packages_from_sysfs, Discovery, ReplayBackend, Session, UncoreReport, What,
};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load_at(root: &Path) -> Discovery {
    discover(root, &packages_from_sysfs(root)).expect("fixture discovers")
}

fn run(d: &Discovery, what: &What, backend: &mut ReplayBackend) -> UncoreReport {
    let s = Session::start(d, what, backend).expect("session starts");
    s.stop().expect("session stops")
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dst = to.join(e.file_name());
        if e.path().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// What the formulas produce: everything derived, with the sysfs root written as
/// `<root>` so the file does not depend on where the checkout is.
fn derived(r: &UncoreReport) -> serde_json::Value {
    let v = serde_json::json!({
        "controllers": r.controllers,
        "sockets": r.sockets,
        "links": r.links,
        "formulas": r.formulas,
        "notes": r.notes,
        "seconds": r.seconds,
    });
    let text = serde_json::to_string(&v)
        .unwrap()
        .replace(&r.sysfs_root, "<root>");
    serde_json::from_str(&text).unwrap()
}

/// Sapphire Rapids, two sockets: iMC, CHA and UPI counts (socket 1 a tenth).
fn spr_replay() -> ReplayBackend {
    let mut b = ReplayBackend::new(2.0);
    for i in 0..8 {
        let dev = format!("uncore_imc_{i}");
        b.set_all(&dev, "clockticks", 4_000_000_000);
        b.set(&dev, 0, "cas_count_read", 187_500_003);
        b.set(&dev, 0, "cas_count_write", 62_500_001 + i);
        b.set(&dev, 56, "cas_count_read", 18_750_007);
        b.set(&dev, 56, "cas_count_write", 6_250_000);
        // All CAS, counted on their own: read + write exactly.
        b.set(&dev, 0, "UNC_M_CAS_COUNT.ALL", 250_000_004 + i);
        b.set(&dev, 56, "UNC_M_CAS_COUNT.ALL", 25_000_007);
    }
    for i in 0..4 {
        let dev = format!("uncore_cha_{i}");
        b.set_all(&dev, "UNC_CHA_CLOCKTICKS", 4_000_000_000);
        b.set_all(&dev, "UNC_CHA_TOR_INSERTS.IA_HIT", 300_000_011);
        b.set_all(&dev, "UNC_CHA_TOR_INSERTS.IA_MISS", 100_000_003);
        b.set_all(&dev, "UNC_CHA_DIR_LOOKUP.SNP", 20_000_001);
        b.set_all(&dev, "UNC_CHA_DIR_LOOKUP.NO_SNP", 60_000_007);
        b.set_all(&dev, "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_LOCAL", 60_000_001);
        b.set_all(&dev, "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_REMOTE", 20_000_003);
        b.set_all(
            &dev,
            "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_LOCAL",
            12_000_007,
        );
        b.set_all(
            &dev,
            "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_REMOTE",
            4_000_001,
        );
        let upi = format!("uncore_upi_{i}");
        b.set_all(&upi, "UNC_UPI_TxL_FLITS.ALL_DATA", 9_000_000_001 + i);
    }
    b
}

fn genoa_replay() -> ReplayBackend {
    let mut b = ReplayBackend::new(1.5);
    for i in 0..12 {
        let dev = format!("amd_umc_{i}");
        b.set_all(&dev, "umc_mem_clk", 2_400_000_000);
        b.set_all(&dev, "umc_cas_cmd.rd", 100_000_003 + i);
        b.set_all(&dev, "umc_cas_cmd.wr", 25_000_001);
    }
    b
}

fn milan_replay() -> ReplayBackend {
    let mut b = ReplayBackend::new(1.25);
    for k in 0..8u64 {
        b.set_all(
            "amd_df",
            &format!("dram_channel_data_controller_{k}"),
            (k + 1) * 10_000_007,
        );
    }
    for k in 0..4 {
        b.set_all(
            "amd_df",
            &format!("remote_outbound_data_controller_{k}"),
            50_000_003 + k,
        );
    }
    b
}

fn cmn_replay() -> ReplayBackend {
    let mut b = ReplayBackend::new(0.75);
    b.set_all("arm_cmn_0", "hnf_slc_sf_cache_access", 1_000_000_007)
        .set_all("arm_cmn_0", "hnf_cache_miss", 250_000_003)
        .set_all("arm_cmn_0", "hnf_mc_reqs", 500_000_001)
        .set_all("arm_cmn_0", "hnf_mc_retries", 5_000_003)
        .set_all("arm_cmn_0", "hnf_dir_snoops_sent", 1_000_001)
        .set_all("arm_cmn_0", "hnf_brd_snoops_sent", 3_000_007);
    b
}

fn what_llc_only() -> What {
    What {
        memory: false,
        directory: false,
        links: false,
        ..What::all()
    }
}

fn what_links_and_directory() -> What {
    What {
        memory: false,
        llc: false,
        ..What::all()
    }
}

/// Every scenario: its name and its derived figures.
fn scenarios() -> Vec<(String, serde_json::Value)> {
    let spr = load_at(&fixture("spr-2s"));
    let genoa = load_at(&fixture("genoa-1s"));
    let milan = load_at(&fixture("milan-2s"));
    let cmn = load_at(&fixture("altra-cmn"));
    let mut out = Vec::new();
    let mut add = |name: &str, r: UncoreReport| out.push((name.to_string(), derived(&r)));

    add("spr all", run(&spr, &What::all(), &mut spr_replay()));
    add("spr memory", run(&spr, &What::memory(), &mut spr_replay()));
    add(
        "spr llc only",
        run(&spr, &what_llc_only(), &mut spr_replay()),
    );
    add(
        "spr links and directory",
        run(&spr, &what_links_and_directory(), &mut spr_replay()),
    );
    add(
        "spr nothing but extras",
        run(&spr, &What::only(Vec::new()), &mut spr_replay()),
    );
    let mut b = spr_replay();
    for i in 0..8 {
        b.set(&format!("uncore_imc_{i}"), 56, "clockticks", 0);
    }
    add("spr socket 1 clock zero", run(&spr, &What::all(), &mut b));
    let mut b = spr_replay();
    for i in 0..4 {
        let dev = format!("uncore_cha_{i}");
        b.set_all(&dev, "UNC_CHA_TOR_INSERTS.IA_HIT", 0);
        b.set_all(&dev, "UNC_CHA_TOR_INSERTS.IA_MISS", 0);
        b.set_all(&dev, "UNC_CHA_DIR_LOOKUP.SNP", 0);
        b.set_all(&dev, "UNC_CHA_DIR_LOOKUP.NO_SNP", 0);
        b.set_all(&format!("uncore_imc_{i}"), "cas_count_write", 0);
    }
    add("spr zero lookups", run(&spr, &What::all(), &mut b));
    let mut b = spr_replay();
    b.fail("uncore_upi_1", "UNC_UPI_TxL_FLITS.ALL_DATA", libc::ENOENT)
        .fail("uncore_imc_2", "cas_count_write", libc::ENOENT)
        .fail("uncore_cha_3", "UNC_CHA_TOR_INSERTS.IA_MISS", libc::EINVAL)
        .fail("uncore_cha_1", "UNC_CHA_DIR_LOOKUP.SNP", libc::ENOENT);
    add("spr some not supported", run(&spr, &What::all(), &mut b));
    let mut b = spr_replay();
    b.refuse_all = Some(libc::EACCES);
    add("spr refused", run(&spr, &What::all(), &mut b));
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture("spr-2s"), tmp.path());
    for i in 0..8 {
        std::fs::remove_dir_all(tmp.path().join(format!(
            "sys/bus/event_source/devices/uncore_imc_{i}/events"
        )))
        .unwrap();
    }
    add(
        "spr imc events missing",
        run(&load_at(tmp.path()), &What::all(), &mut spr_replay()),
    );

    add("genoa all", run(&genoa, &What::all(), &mut genoa_replay()));
    let mut b = genoa_replay();
    b.fail("amd_umc_4", "umc_cas_cmd.rd", libc::ENOENT);
    add(
        "genoa one read not supported",
        run(&genoa, &What::all(), &mut b),
    );

    add("milan all", run(&milan, &What::all(), &mut milan_replay()));
    add(
        "milan memory",
        run(&milan, &What::memory(), &mut milan_replay()),
    );
    let mut b = milan_replay();
    b.fail("amd_df", "dram_channel_data_controller_5", libc::ENOENT)
        .fail("amd_df", "remote_outbound_data_controller_2", libc::ENOENT);
    add(
        "milan one channel and link not supported",
        run(&milan, &What::all(), &mut b),
    );
    let mut b = milan_replay();
    b.fail("amd_df", "dram_channel_data_controller_0", libc::ENOENT);
    add(
        "milan channel 0 not supported",
        run(&milan, &What::all(), &mut b),
    );

    add("cmn all", run(&cmn, &What::all(), &mut cmn_replay()));
    add(
        "cmn llc only",
        run(&cmn, &what_llc_only(), &mut cmn_replay()),
    );
    let mut b = cmn_replay();
    b.set_all("arm_cmn_0", "hnf_slc_sf_cache_access", 0)
        .set_all("arm_cmn_0", "hnf_cache_miss", 0)
        .set_all("arm_cmn_0", "hnf_mc_reqs", 0);
    add("cmn zero", run(&cmn, &What::all(), &mut b));
    let mut b = cmn_replay();
    b.fail("arm_cmn_0", "hnf_mc_retries", libc::ENOENT)
        .fail("arm_cmn_0", "hnf_brd_snoops_sent", libc::ENOENT)
        .fail("arm_cmn_0", "hnf_cache_miss", libc::ENOENT);
    add("cmn some not supported", run(&cmn, &What::all(), &mut b));
    let mut b = cmn_replay();
    b.refuse_all = Some(libc::EPERM);
    add("cmn refused", run(&cmn, &What::all(), &mut b));
    out
}

#[test]
fn derived_figures_stay_identical() {
    let path = fixture("derive-golden.json");
    let got: serde_json::Map<String, serde_json::Value> = scenarios().into_iter().collect();
    // Compared as text: the shortest round-trip form of every number, so a figure that
    // moved by one bit shows.
    let got = serde_json::to_string_pretty(&serde_json::Value::Object(got)).unwrap() + "\n";
    if std::env::var_os("NUMALAB_BLESS_UNCORE_GOLDEN").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; write it with NUMALAB_BLESS_UNCORE_GOLDEN=1",
            path.display()
        )
    });
    if want != got {
        let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
        let at = w
            .iter()
            .zip(&g)
            .position(|(a, b)| a != b)
            .unwrap_or(w.len().min(g.len()));
        let from = at.saturating_sub(8);
        panic!(
            "derived figures differ at line {}:\nexpected:\n{}\ngot:\n{}",
            at + 1,
            w[from..(at + 3).min(w.len())].join("\n"),
            g[from..(at + 3).min(g.len())].join("\n")
        );
    }
}
