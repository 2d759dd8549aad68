//! The DCMI path through the real process runner, with a stand-in `ipmitool`
//! (tests/fixtures/fake-ipmitool) answering with responses constructed from the DCMI
//! specification: decoding, the LAN password in the environment only, time-outs that
//! kill the whole process group, refused and inactive readings.

use crate::common::{assert_clean, fake_ipmitool, wait_for, PLANTED};
use numalab_bmc::{
    BmcAccess, BmcError, BmcSourceKind, DcmiMode, IpmiConfig, IpmiDcmiSource, IpmiLan,
    IpmiPassword, PowerSource,
};
use std::time::{Duration, Instant};

fn lan(host: &str, user: &str) -> IpmiConfig {
    IpmiConfig {
        ipmitool: fake_ipmitool(),
        ..IpmiConfig::lan(IpmiLan {
            host: host.into(),
            port: Some(6230),
            user: user.into(),
            password: IpmiPassword::Value(numalab_bmc::Secret::new(PLANTED)),
            cipher_suite: Some(3),
        })
    }
}

#[test]
fn raw_response_in_band_is_decoded() {
    let cfg = IpmiConfig {
        ipmitool: fake_ipmitool(),
        ..IpmiConfig::in_band()
    };
    let mut src = IpmiDcmiSource::new(cfg, DcmiMode::Raw).unwrap();
    let r = src.read_once().unwrap();
    assert_eq!(r.watts, 345.0);
    assert_eq!(
        (r.min_watts, r.max_watts, r.average_watts),
        (Some(210.0), Some(450.0), Some(310.0))
    );
    assert_eq!(r.bmc_period_s, Some(1.0));
    assert_eq!(r.bmc_timestamp_unix_s, Some(0x65f1_a2b3));
    let s = src.source();
    assert_eq!(s.kind, BmcSourceKind::IpmiDcmi);
    assert_eq!(s.access, BmcAccess::InBand);
    assert!(s.description.contains("in-band"), "{}", s.description);
}

#[test]
fn text_and_raw_over_lan_keep_the_password_off_the_command_line() {
    // The stand-in exits non-zero if the password is an argument or -E is missing.
    for mode in [DcmiMode::Text, DcmiMode::Raw] {
        let mut src = IpmiDcmiSource::new(lan("bmc.test", "admin"), mode).unwrap();
        let r = src.read_once().unwrap();
        assert_eq!((r.watts, r.active), (345.0, Some(true)));
        let s = src.source();
        assert_eq!(
            s.access,
            BmcAccess::Lan {
                host: "bmc.test".into(),
                port: Some(6230),
                user: "admin".into()
            }
        );
        assert_clean("source", &format!("{s:?}"));
    }
}

#[test]
fn an_inactive_reading_is_an_error_that_says_so() {
    let mut src = IpmiDcmiSource::new(lan("inactive", "admin"), DcmiMode::Raw).unwrap();
    let e = src.read_once().unwrap_err();
    assert!(matches!(e, BmcError::DcmiInactive), "{e}");
    assert!(e.to_string().contains("deactivated"));
}

#[test]
fn a_refused_command_reports_ipmitools_reason() {
    let mut src = IpmiDcmiSource::new(lan("invalid", "admin"), DcmiMode::Text).unwrap();
    let e = src.read_once().unwrap_err().to_string();
    assert!(
        e.contains("Invalid command (c1)") && e.contains("exit code 1"),
        "{e}"
    );
    assert!(e.contains("ipmitool -I lanplus -H invalid"), "{e}");
    assert_clean("error", &e);
}

#[test]
fn a_hanging_ipmitool_is_killed_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let mut cfg = lan("hang", pid_file.to_str().unwrap());
    cfg.timeout = Duration::from_millis(500);
    let mut src = IpmiDcmiSource::new(cfg, DcmiMode::Raw).unwrap();
    let t = Instant::now();
    let e = src.read_once().unwrap_err();
    let took = t.elapsed();
    assert!(
        matches!(
            e,
            BmcError::Timeout {
                timeout_ms: 500,
                ..
            }
        ),
        "{e}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The background `sleep 30` the stand-in started is gone too (or a zombie waiting
    // for init to reap it).
    let gone = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    };
    assert!(
        wait_for(Duration::from_secs(3), gone),
        "grandchild {pid} survived"
    );
}

#[test]
fn a_missing_ipmitool_says_what_to_install() {
    let cfg = IpmiConfig {
        ipmitool: "/nonexistent/ipmitool".into(),
        ..IpmiConfig::in_band()
    };
    let e = IpmiDcmiSource::new(cfg, DcmiMode::Raw)
        .unwrap()
        .read_once()
        .unwrap_err();
    assert!(matches!(e, BmcError::ToolMissing { .. }), "{e}");
    assert!(e.to_string().contains("apt-get install ipmitool"));
}

#[test]
fn bad_host_or_user_arguments_are_refused() {
    for (h, u) in [("-f/etc/shadow", "admin"), ("bmc", "-o x"), ("", "admin")] {
        let e = IpmiDcmiSource::new(lan(h, u), DcmiMode::Raw).unwrap_err();
        assert!(matches!(e, BmcError::Config(_)), "{e}");
    }
}

#[test]
fn ipmi_source_keeps_dcmi_when_it_answers() {
    let cfg = IpmiConfig {
        ipmitool: fake_ipmitool(),
        ..IpmiConfig::in_band()
    };
    let mut src = numalab_bmc::ipmi_source(cfg, numalab_bmc::SdrListing::ElistFull).unwrap();
    assert_eq!(src.source().kind, BmcSourceKind::IpmiDcmi);
    assert_eq!(src.read_once().unwrap().watts, 345.0);
}
