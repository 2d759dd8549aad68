//! The HTML report in a real browser (Debian's `chromium`, headless), loaded from a file
//! as a mail attachment would be.
//!
//! How "no network request" is checked: chromium runs with every request sent to a
//! proxy this test listens on (`--proxy-server`, loopback included), and every host
//! name resolving to nothing (`--host-resolver-rules`), so a request can neither reach
//! the network nor go unseen: each one arrives here as a request line. Chromium's own
//! background services (time, component updates, sign-in) call out even with the
//! flags that should stop them; those hosts are listed below and ignored, and anything
//! else fails the test with the URL. The page also carries `default-src 'none'`, so a
//! resource it tried to load would be blocked and logged as a console message, which
//! fails the test too. Two control pages show that both detectors fire: one loads an
//! image through the proxy, one is blocked by its policy.
//!
//! The bundle rendered is the recorded evaluation of the development VM with a host
//! name and a warning rewritten into markup (script, image, iframe): the DOM must hold
//! them as text. A screenshot is written under the target folder (not into git) for
//! people to look at.
//!
//! Needs `chromium` (scripts/deps.sh --test). NUMALAB_SKIP_BROWSER=1 skips it by hand.

use crate::common::{assert_ok, fixture_path};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Hosts chromium contacts by itself, whatever the page.
const BROWSER_HOSTS: &[&str] = &[
    "clients2.google.com",
    "update.googleapis.com",
    "accounts.google.com",
    "clientservices.googleapis.com",
    "optimizationguide-pa.googleapis.com",
    "content-autofill.googleapis.com",
    "safebrowsingohttpgateway.googleapis.com",
    "redirector.gvt1.com",
    "edgedl.me.gvt1.com",
    "android.clients.google.com",
    "www.googleapis.com",
];

fn chromium() -> Option<PathBuf> {
    if std::env::var_os("NUMALAB_SKIP_BROWSER").is_some() {
        return None;
    }
    for c in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(c).exists() {
            return Some(PathBuf::from(c));
        }
    }
    panic!("the browser test needs Debian's chromium: run scripts/deps.sh --test (apt-get install chromium), or set NUMALAB_SKIP_BROWSER=1 to skip it by hand");
}

/// A proxy that records each request line and answers 404.
struct Proxy {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let log = log.clone();
                // A thread a connection: one that sends nothing holds up no other.
                std::thread::spawn(move || {
                    let _ = conn.set_read_timeout(Some(Duration::from_secs(20)));
                    let mut line = String::new();
                    let _ = BufReader::new(&conn).read_line(&mut line);
                    // Chromium may open a connection to its proxy ahead of need and close
                    // it unused (seen once in a CI-like run: one connection, no request
                    // line); nothing was asked for or sent through it, so it is not a
                    // request. Any request line is kept, whatever it asks for.
                    if !line.trim().is_empty() {
                        log.lock().unwrap().push(line.trim().to_string());
                    }
                    let _ = conn.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                });
            }
        });
        Proxy { port, seen }
    }

    /// Requests not made by chromium's background services.
    fn page_requests(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|l| {
                !BROWSER_HOSTS
                    .iter()
                    .any(|h| l.contains(&format!("{h}/")) || l.contains(&format!("{h}:")))
            })
            .cloned()
            .collect()
    }
}

struct Run {
    stdout: String,
    stderr: String,
}

fn run_chromium(bin: &Path, proxy: &Proxy, profile: &Path, extra: &[String], url: &str) -> Run {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--proxy-server=http://127.0.0.1:{}", proxy.port))
    .args(extra)
    .arg(url)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start chromium");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Run {
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

fn console_messages(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Refused to") || l.contains("Uncaught"))
        .collect()
}

/// The recorded evaluation with markup in the host name and in a warning.
fn hostile_bundle(dir: &Path) -> PathBuf {
    let src = fixture_path("bundles", "vm-evaluate/results.jsonl");
    let text = std::fs::read_to_string(src).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[0]["host"]["hostname"] = serde_json::json!(
        "<script>document.title='pwned'</script><img src=\"http://leak.invalid/h.png\">"
    );
    lines[1]["warnings"] = serde_json::json!([{
        "code": "x\"><iframe src=\"http://leak.invalid/\">",
        "message": "<img src=\"http://leak.invalid/w.png\" onerror=\"document.title='pwned'\">",
        "remedy": "</td></tr></table><script>alert(1)</script>"
    }]);
    let folder = dir.join("hostile");
    std::fs::create_dir_all(&folder).unwrap();
    let body: Vec<String> = lines.iter().map(|v| v.to_string()).collect();
    std::fs::write(folder.join("results.jsonl"), body.join("\n") + "\n").unwrap();
    folder
}

#[test]
fn the_report_loads_in_chromium_without_errors_or_network_requests() {
    let Some(bin) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let proxy = Proxy::start();

    // Controls: the detectors see a request and a policy violation when there is one.
    let leaky = tmp.path().join("leaky.html");
    std::fs::write(
        &leaky,
        format!(
            "<!DOCTYPE html><p>control</p><img src=\"http://127.0.0.1:{}/control.png\">",
            proxy.port
        ),
    )
    .unwrap();
    run_chromium(
        &bin,
        &proxy,
        &tmp.path().join("p1"),
        &["--dump-dom".into()],
        &format!("file://{}", leaky.display()),
    );
    assert!(
        proxy
            .page_requests()
            .iter()
            .any(|l| l.contains("/control.png")),
        "the control page's image did not reach the proxy: the test cannot see requests ({:?})",
        proxy.seen.lock().unwrap()
    );
    let blocked = tmp.path().join("blocked.html");
    std::fs::write(&blocked, "<!DOCTYPE html><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\"><img src=\"http://leak.invalid/c.png\">").unwrap();
    let r = run_chromium(
        &bin,
        &proxy,
        &tmp.path().join("p2"),
        &["--dump-dom".into()],
        &format!("file://{}", blocked.display()),
    );
    assert!(
        !console_messages(&r.stderr).is_empty(),
        "a blocked load left no console message: the test cannot see policy violations"
    );
    proxy.seen.lock().unwrap().clear();

    // The report.
    let bundle = hostile_bundle(tmp.path());
    let page = tmp.path().join("report.html");
    let o = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["report"])
        .arg(&bundle)
        .arg(fixture_path("bundles", "vm-scale"))
        .arg(fixture_path("bundles", "model-neoverse-v1"))
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert_ok(&o);
    let url = format!("file://{}", page.display());
    let r = run_chromium(
        &bin,
        &proxy,
        &tmp.path().join("p3"),
        &["--dump-dom".into()],
        &url,
    );
    let dom = r.stdout;
    assert!(
        dom.contains("<h2 id=\"findings\">Findings</h2>"),
        "{}",
        &dom[..500.min(dom.len())]
    );
    for id in [
        "summary",
        "topology",
        "doctor",
        "c2c-c2c-matrix-cas-first-cpu-node",
        "workload",
        "pmu",
        "b1-scale-section-6219dc2a2d87",
        "b2-model-triad",
        "appendix",
    ] {
        assert!(
            dom.contains(&format!("id=\"{id}\"")),
            "section {id} missing from the DOM"
        );
    }
    assert!(dom.matches("<svg").count() >= 5, "charts missing");
    assert!(
        dom.contains("<title>numalab report: &lt;script&gt;"),
        "the title was not escaped"
    );
    for element in ["<script", "<img", "<iframe"] {
        assert!(!dom.contains(element), "the DOM holds an {element} element");
    }
    // The markup is there as text, and did nothing.
    assert!(dom.contains("&lt;img src=\"http://leak.invalid/w.png\""));
    assert!(!dom.contains("<title>pwned"));
    let console = console_messages(&r.stderr);
    assert!(console.is_empty(), "console messages: {console:#?}");
    let requests = proxy.page_requests();
    assert!(
        requests.is_empty(),
        "the report made network requests: {requests:#?}"
    );

    // A screenshot for people (target/tmp, not in git).
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    run_chromium(
        &bin,
        &proxy,
        &tmp.path().join("p4"),
        &[
            "--window-size=1200,2400".into(),
            format!("--screenshot={}", shot.display()),
        ],
        &url,
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert_eq!(&png[1..4], b"PNG");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1200, 2400));
    assert!(
        png.len() > 50_000,
        "the screenshot is nearly blank ({} bytes)",
        png.len()
    );
    assert!(
        proxy.page_requests().is_empty(),
        "{:#?}",
        proxy.page_requests()
    );
    eprintln!("screenshot: {}", shot.display());
}

/// The bundle `evaluate --quick` wrote inside the emulated Arm server (scripts/test-numa.sh
/// --arch aarch64 exports it from the guest and runs this test with
/// `NUMALAB_GUEST_BUNDLE=DIR`; it is not part of a plain `cargo test`): the guest's own
/// report.html loads in chromium without a request or a console message and shows an
/// Arm machine, and this (x86) build reads the aarch64 journal and renders it too.
#[test]
#[ignore = "run by scripts/test-numa.sh --arch aarch64, which sets NUMALAB_GUEST_BUNDLE"]
fn the_arm_guest_bundle_renders_in_chromium() {
    let dir =
        PathBuf::from(std::env::var_os("NUMALAB_GUEST_BUNDLE").expect(
            "NUMALAB_GUEST_BUNDLE: the folder scripts/test-numa.sh --arch aarch64 exported",
        ));
    let bin = chromium().expect("chromium (this test is run on purpose, not skipped)");
    let tmp = tempfile::tempdir().unwrap();
    let proxy = Proxy::start();
    let check = |page: &Path, profile: &str| {
        let r = run_chromium(
            &bin,
            &proxy,
            &tmp.path().join(profile),
            &["--dump-dom".into()],
            &format!("file://{}", page.display()),
        );
        let dom = r.stdout;
        assert!(
            dom.contains("<h2 id=\"findings\">Findings</h2>"),
            "{}: {}",
            page.display(),
            &dom[..500.min(dom.len())]
        );
        for id in ["summary", "topology", "doctor"] {
            assert!(
                dom.contains(&format!("id=\"{id}\"")),
                "{}: section {id} missing",
                page.display()
            );
        }
        assert!(
            dom.contains("aarch64"),
            "{}: no aarch64 machine",
            page.display()
        );
        assert!(
            dom.contains("Neoverse N1"),
            "{}: the CPU is not named",
            page.display()
        );
        assert!(
            dom.matches("<svg").count() >= 2,
            "{}: charts missing",
            page.display()
        );
        let console = console_messages(&r.stderr);
        assert!(
            console.is_empty(),
            "{}: console messages: {console:#?}",
            page.display()
        );
    };
    // The page the guest wrote.
    check(&dir.join("evaluate-report.html"), "guest");
    // The same journal rendered by this build.
    let bundle = tmp.path().join("bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    for (from, to) in [
        ("evaluate-results.jsonl", "results.jsonl"),
        ("evaluate-summary.json", "summary.json"),
    ] {
        std::fs::copy(dir.join(from), bundle.join(to)).unwrap();
    }
    let page = tmp.path().join("host-report.html");
    let o = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .arg("report")
        .arg(&bundle)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert_ok(&o);
    check(&page, "host");
    let requests = proxy.page_requests();
    assert!(
        requests.is_empty(),
        "the reports made network requests: {requests:#?}"
    );
}
