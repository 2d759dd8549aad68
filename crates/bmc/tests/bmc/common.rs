//! Shared helpers: fixture paths, the planted password, a loopback HTTP(S) server.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A distinctive password planted in every credential the tests use; no output may
/// contain it.
pub const PLANTED: &str = "PLANTEDpw7f3a9c";
/// The Redfish user the tests use.
pub const REDFISH_USER: &str = "numalab";

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn fake_ipmitool() -> PathBuf {
    fixtures().join("fake-ipmitool")
}

/// The program's path on PATH, if any.
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            out.push(if i <= c.len() {
                A[((n >> (18 - 6 * i)) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

/// The Basic authorization header value for the planted credentials.
pub fn planted_basic() -> String {
    format!(
        "Basic {}",
        base64(format!("{REDFISH_USER}:{PLANTED}").as_bytes())
    )
}

/// Panics if `text` holds the planted password or the Basic token made from it.
pub fn assert_clean(what: &str, text: &str) {
    let token = planted_basic();
    let token = token.trim_start_matches("Basic ");
    assert!(
        !text.contains(PLANTED) && !text.contains(token),
        "{what} leaks the planted credential: {text}"
    );
}

/// What the server answers for a path: status and body.
pub type Route = Arc<dyn Fn(&str) -> (u16, Vec<u8>) + Send + Sync>;

/// Serves the DMTF mock-up files: `/redfish/v1/X/Y` is
/// `fixtures/redfish/public-rackmount1/X/Y/index.json`; 404 otherwise.
pub fn mockup_route() -> Route {
    Arc::new(|path: &str| match mockup_file(path) {
        Some(body) => (200, body),
        None => (404, br#"{"error":"not found"}"#.to_vec()),
    })
}

pub fn mockup_file(path: &str) -> Option<Vec<u8>> {
    let rest = path.strip_prefix("/redfish/v1/")?;
    if rest.contains("..") || rest.contains('\\') {
        return None;
    }
    let file = fixtures()
        .join("redfish/public-rackmount1")
        .join(rest.trim_end_matches('/'))
        .join("index.json");
    std::fs::read(file).ok()
}

/// A loopback HTTP (or HTTPS) server on 127.0.0.1:0 in a thread; stops when dropped.
pub struct MockServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    /// Every request path, in order.
    pub log: Arc<Mutex<Vec<String>>>,
    /// Authorization header values seen.
    pub auth_seen: Arc<Mutex<Vec<String>>>,
}

impl MockServer {
    pub fn start(
        tls: Option<Arc<rustls::ServerConfig>>,
        expect_auth: Option<String>,
        route: Route,
    ) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let auth_seen = Arc::new(Mutex::new(Vec::new()));
        let (s, l, a) = (stop.clone(), log.clone(), auth_seen.clone());
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((tcp, _)) => {
                        let _ = tcp.set_nonblocking(false);
                        let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
                        let _ = tcp.set_write_timeout(Some(Duration::from_secs(5)));
                        match &tls {
                            Some(cfg) => {
                                let Ok(conn) = rustls::ServerConnection::new(cfg.clone()) else {
                                    continue;
                                };
                                let mut stream = rustls::StreamOwned::new(conn, tcp);
                                if serve_one(&mut stream, &expect_auth, &route, &l, &a).is_ok() {
                                    stream.conn.send_close_notify();
                                    let _ = stream.flush();
                                }
                            }
                            None => {
                                let mut tcp = tcp;
                                let _ = serve_one(&mut tcp, &expect_auth, &route, &l, &a);
                            }
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(3));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(3)),
                }
            }
        });
        MockServer {
            addr,
            stop,
            handle: Some(handle),
            log,
            auth_seen,
        }
    }

    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }

    pub fn requests(&self) -> usize {
        self.log.lock().unwrap().len()
    }

    /// Stops serving; later connections are refused.
    pub fn shut_down(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn serve_one<S: Read + Write>(
    s: &mut S,
    expect_auth: &Option<String>,
    route: &Route,
    log: &Mutex<Vec<String>>,
    auth_seen: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 64 * 1024 || s.read(&mut byte)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.lines();
    let request = lines.next().unwrap_or("");
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
    let auth = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.trim().to_string());
    log.lock().unwrap().push(path.clone());
    if let Some(a) = &auth {
        auth_seen.lock().unwrap().push(a.clone());
    }
    let (status, body) = match expect_auth {
        Some(want) if auth.as_deref() != Some(want.as_str()) => {
            (401, br#"{"error":"unauthorised"}"#.to_vec())
        }
        _ => route(&path),
    };
    let reason = match status {
        200 => "OK",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "Other",
    };
    write!(
        s,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(&body)?;
    s.flush()
}

/// Waits for `cond` at most `limit`, polling.
pub fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}
