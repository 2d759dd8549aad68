//! Redfish against DMTF's "public-rackmount1" mock-up data (tests/fixtures/redfish,
//! see PROVENANCE.md) served by a small HTTP server on 127.0.0.1, and one TLS server
//! with a self-signed certificate made by `openssl` at test time.

use crate::common::{
    assert_clean, mockup_file, mockup_route, planted_basic, which, MockServer, Route, PLANTED,
    REDFISH_USER,
};
use numalab_bmc::{
    BmcAccess, BmcError, BmcSourceKind, PowerSource, RedfishConfig, RedfishCredentials,
    RedfishResource, RedfishSource, RedfishTransport, Sampler, Secret,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn config(url: String, resource: RedfishResource) -> RedfishConfig {
    RedfishConfig {
        credentials: RedfishCredentials::Given {
            user: REDFISH_USER.into(),
            password: Secret::new(PLANTED),
        },
        resource,
        allow_plain_http_loopback: true,
        timeout: Duration::from_secs(5),
        ..RedfishConfig::new(url)
    }
}

fn server(route: Route) -> MockServer {
    MockServer::start(None, Some(planted_basic()), route)
}

#[test]
fn environment_metrics_of_the_mockup_chassis() {
    let srv = server(mockup_route());
    let mut src = RedfishSource::connect(&config(srv.url("http"), RedfishResource::Auto)).unwrap();
    let discovery = srv.requests();
    let r = src.read_once().unwrap();
    assert_eq!(r.watts, 374.0);
    assert_eq!(srv.requests(), discovery + 1, "one request per reading");
    let s = src.source();
    assert_eq!(s.kind, BmcSourceKind::RedfishPowerSubsystem);
    assert_eq!(
        s.access,
        BmcAccess::Redfish {
            url: format!(
                "{}/redfish/v1/Chassis/1U/EnvironmentMetrics",
                srv.url("http")
            ),
            transport: RedfishTransport::PlainHttpLoopback,
        }
    );
    assert_eq!(s.sensors, ["Chassis 1U EnvironmentMetrics PowerWatts"]);
    assert!(srv
        .auth_seen
        .lock()
        .unwrap()
        .iter()
        .all(|a| *a == planted_basic()));
    assert_clean("source", &format!("{s:?} {src:?}"));
}

#[test]
fn power_supply_metrics_when_the_chassis_has_no_environment_metrics() {
    let route: Route = Arc::new(|path: &str| {
        if path.ends_with("/EnvironmentMetrics") {
            return (404, b"{}".to_vec());
        }
        match mockup_file(path) {
            Some(b) => (200, b),
            None => (404, b"{}".to_vec()),
        }
    });
    let srv = server(route);
    let mut src =
        RedfishSource::connect(&config(srv.url("http"), RedfishResource::PowerSubsystem)).unwrap();
    let r = src.read_once().unwrap();
    // Bay1 reports 937.4 W; Bay2 is Absent and has no metrics.
    assert_eq!(r.watts, 937.4);
    assert_eq!(r.parts.len(), 1);
    let s = src.source();
    assert_eq!(s.kind, BmcSourceKind::RedfishPowerSubsystem);
    assert_eq!(s.sensors, ["Chassis 1U PowerSupply Bay1 InputPowerWatts"]);
    assert!(s.method.contains("InputPowerWatts"));
}

#[test]
fn the_deprecated_power_resource() {
    let srv = server(mockup_route());
    let mut src = RedfishSource::connect(&config(srv.url("http"), RedfishResource::Power)).unwrap();
    let r = src.read_once().unwrap();
    assert_eq!(r.watts, 344.0);
    let s = src.source();
    assert_eq!(s.kind, BmcSourceKind::RedfishPower);
    assert!(
        s.sensors[0].contains("System Input Power"),
        "{:?}",
        s.sensors
    );
    assert!(
        matches!(&s.access, BmcAccess::Redfish { url, .. } if url.ends_with("/Chassis/1U/Power"))
    );
}

#[test]
fn wrong_credentials_give_401_without_echo() {
    let srv = MockServer::start(None, Some("Basic something-else".into()), mockup_route());
    let e = RedfishSource::connect(&config(srv.url("http"), RedfishResource::Auto)).unwrap_err();
    assert!(matches!(e, BmcError::HttpStatus { status: 401, .. }), "{e}");
    let text = format!("{e} {e:?}");
    assert!(text.contains("check the user name and password"), "{text}");
    assert_clean("401 error", &text);
}

#[test]
fn responses_and_requests_are_bounded() {
    let huge: Route = Arc::new(|_: &str| (200, vec![b' '; 5 << 20]));
    let srv = server(huge);
    let e = RedfishSource::connect(&config(srv.url("http"), RedfishResource::Auto)).unwrap_err();
    assert!(
        matches!(e, BmcError::TooLarge { limit_bytes, .. } if limit_bytes == 4 << 20),
        "{e}"
    );

    let srv = server(mockup_route());
    let mut cfg = config(srv.url("http"), RedfishResource::Auto);
    cfg.max_requests = 2;
    let e = RedfishSource::connect(&cfg).unwrap_err();
    assert!(matches!(e, BmcError::TooManyRequests { limit: 2 }), "{e}");
    assert_eq!(srv.requests(), 2);

    // A link off the service is never followed (the credentials stay home).
    let offsite: Route = Arc::new(|path: &str| {
        if path == "/redfish/v1/Chassis" {
            (
                200,
                br#"{"Members":[{"@odata.id":"https://elsewhere.example/redfish/v1/Chassis/X"}]}"#
                    .to_vec(),
            )
        } else {
            (404, b"{}".to_vec())
        }
    });
    let srv = server(offsite);
    let e = RedfishSource::connect(&config(srv.url("http"), RedfishResource::Auto)).unwrap_err();
    assert!(e.to_string().contains("not followed"), "{e}");
    assert_eq!(srv.requests(), 1);
}

#[test]
fn plain_http_off_loopback_and_urls_with_credentials_are_refused() {
    let mut cfg = config("http://192.0.2.1".into(), RedfishResource::Auto);
    assert!(matches!(
        RedfishSource::connect(&cfg),
        Err(BmcError::Config(_))
    ));
    cfg.url = format!("https://{REDFISH_USER}:{PLANTED}@192.0.2.1");
    let e = RedfishSource::connect(&cfg).unwrap_err().to_string();
    assert!(e.contains("must not hold a user name or password"), "{e}");
    assert_clean("URL error", &e);
}

#[test]
fn sampling_goes_on_recording_errors_when_the_service_goes_away() {
    let mut srv = server(mockup_route());
    let src = RedfishSource::connect(&config(srv.url("http"), RedfishResource::Auto)).unwrap();
    let sampler = Sampler::start(Box::new(src), Duration::from_millis(50));
    assert!(crate::common::wait_for(Duration::from_secs(10), || sampler
        .samples_so_far()
        >= 3));
    srv.shut_down();
    std::thread::sleep(Duration::from_millis(400));
    let t = Instant::now();
    let rec = sampler.stop();
    assert!(t.elapsed() < Duration::from_secs(1));
    assert!(rec.samples.len() >= 3);
    assert!(rec.samples.iter().all(|s| s.reading.watts == 374.0));
    assert!(!rec.errors.is_empty(), "{rec:?}");
    assert!(rec.errors[0]
        .error
        .contains("/redfish/v1/Chassis/1U/EnvironmentMetrics"));
    assert_eq!(rec.interval_ms, 50);
    assert_clean("record", &serde_json::to_string(&rec).unwrap());
}

/// A self-signed certificate for 127.0.0.1 made by `openssl`, or `None` (printed) when
/// openssl is absent.
fn self_signed(dir: &std::path::Path) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    if which("openssl").is_none() {
        eprintln!("SKIPPED: openssl is not installed (Debian: apt-get install openssl)");
        return None;
    }
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let cnf = dir.join("openssl.cnf");
    std::fs::write(
        &cnf,
        "[req]\ndistinguished_name = dn\nx509_extensions = ext\nprompt = no\n[dn]\nCN = 127.0.0.1\n\
         [ext]\nbasicConstraints = critical, CA:FALSE\nsubjectAltName = IP:127.0.0.1\n\
         keyUsage = critical, digitalSignature\nextendedKeyUsage = serverAuth\n",
    )
    .unwrap();
    let out = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
        ])
        .arg("-config")
        .arg(&cnf)
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((cert, key))
}

fn tls_config(cert: &std::path::Path, key: &std::path::Path) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
    )
}

#[test]
fn a_self_signed_certificate_is_refused_unless_insecure() {
    let dir = tempfile::tempdir().unwrap();
    let Some((cert, key)) = self_signed(dir.path()) else {
        return;
    };
    let srv = MockServer::start(
        Some(tls_config(&cert, &key)),
        Some(planted_basic()),
        mockup_route(),
    );
    let url = srv.url("https");

    // Verified against Mozilla's roots: refused, before any request reached the server.
    let e = RedfishSource::connect(&config(url.clone(), RedfishResource::Auto)).unwrap_err();
    assert!(matches!(e, BmcError::Tls { .. }), "{e}");
    let text = e.to_string();
    eprintln!("refused as expected: {text}");
    assert!(
        text.contains("insecure") && text.to_lowercase().contains("cert"),
        "{text}"
    );
    assert_eq!(srv.requests(), 0);
    assert!(
        srv.auth_seen.lock().unwrap().is_empty(),
        "credentials sent before verification"
    );

    // insecure: accepted, and the source says so.
    let mut cfg = config(url.clone(), RedfishResource::Auto);
    cfg.insecure = true;
    let src = RedfishSource::connect(&cfg).unwrap();
    let s = src.source();
    assert!(s.insecure());
    assert!(s.description.contains("NOT verified"), "{}", s.description);
    let sampler = Sampler::start(Box::new(src), Duration::from_millis(100));
    assert!(crate::common::wait_for(Duration::from_secs(10), || sampler
        .samples_so_far()
        >= 1));
    let rec = sampler.stop();
    assert_eq!(rec.samples[0].reading.watts, 374.0);
    assert!(rec.source.insecure());
    assert!(
        rec.notes.iter().any(|n| n.contains("NOT verified")),
        "{:?}",
        rec.notes
    );
    let json = serde_json::to_string(&rec).unwrap();
    assert!(json.contains("https_insecure"), "{json}");
    assert_clean("record", &json);

    // The certificate given as CA: verified.
    let mut cfg = config(url, RedfishResource::Power);
    cfg.ca_file = Some(cert.clone());
    let mut src = RedfishSource::connect(&cfg).unwrap();
    assert_eq!(src.read_once().unwrap().watts, 344.0);
    assert!(matches!(
        src.source().access,
        BmcAccess::Redfish {
            transport: RedfishTransport::HttpsVerified,
            ..
        }
    ));
}

/// `--bmc-ca-file` is read as a direct input (issue 50, items 6 and 8): a device or a
/// FIFO is refused before any read (never a hang, never an unbounded read), a file
/// without a certificate is bad input, and a connection that nothing accepts is said
/// in words, not as "os error 111".
#[test]
fn ca_files_that_are_devices_fifos_or_not_pem_are_bad_input() {
    use numalab_schema::{Classify, ErrorClass};
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("ca-fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, [0u8, 0xff, 0x1b, 7]).unwrap();
    let url = "https://127.0.0.1:9".to_string();
    for (ca, says) in [
        ("/dev/urandom".into(), "this is a device, not a file"),
        ("/dev/zero".into(), "this is a device, not a file"),
        (fifo, "this is a FIFO (named pipe), not a file"),
        (junk, "no PEM certificate in it"),
        (dir.path().join("missing.pem"), "no such file or folder"),
    ] {
        let mut cfg = config(url.clone(), RedfishResource::Power);
        cfg.ca_file = Some(ca.clone());
        let t = Instant::now();
        let Err(e) = RedfishSource::connect(&cfg) else {
            panic!("{} accepted", ca.display())
        };
        assert!(t.elapsed() < Duration::from_secs(5), "{e}");
        assert_eq!(e.class(), ErrorClass::Input, "{e}");
        let m = e.to_string();
        let named = format!("--bmc-ca-file {}: ", ca.display());
        assert!(m.starts_with(&named) && m.contains(says), "{m}");
    }
    // Nothing listens on port 9 of 127.0.0.1 (discard, never served here).
    let cfg = config("http://127.0.0.1:9".into(), RedfishResource::Power);
    let Err(e) = RedfishSource::connect(&cfg) else {
        panic!("a closed port accepted")
    };
    let m = e.to_string();
    assert!(m.contains("connection refused"), "{m}");
    assert!(!m.contains("os error"), "{m}");
}
