//! A planted password must appear in no output: serialized records, error messages
//! (Display and Debug), Debug prints of settings and sources, across IPMI (stand-in
//! ipmitool that echoes the password to stderr, and the simulator when installed) and
//! Redfish.

use crate::common::{
    assert_clean, fake_ipmitool, mockup_route, planted_basic, MockServer, PLANTED, REDFISH_USER,
};
use numalab_bmc::{
    DcmiMode, IpmiConfig, IpmiDcmiSource, IpmiLan, IpmiPassword, PowerSource, RedfishConfig,
    RedfishCredentials, RedfishSource, Sampler, Secret,
};
use std::time::Duration;

#[test]
fn a_planted_password_appears_in_no_output() {
    let mut outputs: Vec<(String, String)> = Vec::new();

    // IPMI: the stand-in prints "password <IPMI_PASSWORD> rejected" on stderr.
    let cfg = IpmiConfig {
        ipmitool: fake_ipmitool(),
        ..IpmiConfig::lan(IpmiLan {
            host: "leak".into(),
            port: None,
            user: "admin".into(),
            password: IpmiPassword::Value(Secret::new(PLANTED)),
            cipher_suite: None,
        })
    };
    outputs.push(("IpmiConfig Debug".into(), format!("{cfg:?}")));
    let mut src = IpmiDcmiSource::new(cfg.clone(), DcmiMode::Raw).unwrap();
    outputs.push(("IpmiDcmiSource Debug".into(), format!("{src:?}")));
    let e = src.read_once().unwrap_err();
    let shown = e.to_string();
    assert!(
        shown.contains("password *** rejected"),
        "scrubbed stderr kept: {shown}"
    );
    outputs.push(("ipmitool error".into(), format!("{e} {e:?}")));
    let sampler = Sampler::start(Box::new(src), Duration::from_millis(20));
    std::thread::sleep(Duration::from_millis(200));
    let rec = sampler.stop();
    assert!(!rec.errors.is_empty());
    outputs.push((
        "IPMI record JSON".into(),
        serde_json::to_string(&rec).unwrap(),
    ));
    outputs.push(("IPMI record Debug".into(), format!("{rec:?}")));

    // Redfish: a good and a refused login.
    let srv = MockServer::start(None, Some(planted_basic()), mockup_route());
    let rcfg = RedfishConfig {
        credentials: RedfishCredentials::Given {
            user: REDFISH_USER.into(),
            password: Secret::new(PLANTED),
        },
        allow_plain_http_loopback: true,
        ..RedfishConfig::new(srv.url("http"))
    };
    outputs.push(("RedfishConfig Debug".into(), format!("{rcfg:?}")));
    let src = RedfishSource::connect(&rcfg).unwrap();
    outputs.push(("RedfishSource Debug".into(), format!("{src:?}")));
    let sampler = Sampler::start(Box::new(src), Duration::from_millis(50));
    assert!(crate::common::wait_for(Duration::from_secs(10), || sampler
        .samples_so_far()
        >= 2));
    let rec = sampler.stop();
    outputs.push((
        "Redfish record JSON".into(),
        serde_json::to_string(&rec).unwrap(),
    ));
    outputs.push(("Redfish record Debug".into(), format!("{rec:?}")));
    let bad = MockServer::start(None, Some("Basic nope".into()), mockup_route());
    let e = RedfishSource::connect(&RedfishConfig {
        url: bad.url("http"),
        ..rcfg.clone()
    })
    .unwrap_err();
    outputs.push(("Redfish 401".into(), format!("{e} {e:?}")));
    let e = RedfishSource::connect(&RedfishConfig {
        url: "http://127.0.0.1:9".into(),
        ..rcfg
    })
    .unwrap_err();
    outputs.push(("Redfish connection refused".into(), format!("{e} {e:?}")));

    for (what, text) in &outputs {
        assert_clean(what, text);
    }
    assert!(outputs.len() >= 10);
}
