//! The agent's stdout protocol: line frames that nothing else printed on stdout can
//! corrupt without being noticed.
//!
//! ```text
//! numalab-fleet v1 hello node=n1 version=0.1.0
//! numalab-fleet v1 file=results.jsonl bytes=1234 sha256=<64 hex>
//! <base64, 76 characters a line>
//! numalab-fleet v1 end file=results.jsonl
//! numalab-fleet v1 shared file=summary.json bytes=99 sha256=<64 hex>
//! numalab-fleet v1 status=done exit=0 duration_ms=5321
//! ```
//!
//! Lines outside a frame that do not start with the magic (a launcher's or a library's
//! chatter) are passed on as stray text. Inside a file frame every line must be base64
//! until the end line; the byte count and SHA-256 in the header are checked at the end
//! line, so an interleaved, truncated or altered frame is rejected, never written.

use std::io::{self, BufRead, Read, Write};

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The bundle files sent back, in this order; the first is required for `done`.
pub const BUNDLE_FILES: [&str; 2] = ["results.jsonl", "summary.json"];
/// Every protocol line starts with this.
pub const MAGIC: &str = "numalab-fleet v1";

/// Largest file accepted in a frame (4 GiB).
pub const MAX_FRAME_BYTES: u64 = 4 << 30;

/// Raw bytes per base64 line (76 characters).
const RAW_PER_LINE: usize = 57;

/// How a node's command ended, as the agent saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentState {
    /// The command exited 0 and wrote its bundle.
    Done,
    /// The command exited non-zero, was killed by a signal, or wrote no bundle.
    Failed,
    /// The command ran past the agent's `--timeout`; its process group was killed.
    Timeout,
    /// The agent was told to stop (SIGTERM, SIGINT, SIGHUP) and killed the command.
    Killed,
}

impl AgentState {
    fn as_str(self) -> &'static str {
        match self {
            AgentState::Done => "done",
            AgentState::Failed => "failed",
            AgentState::Timeout => "timeout",
            AgentState::Killed => "killed",
        }
    }
}

/// The agent's final line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentStatus {
    /// How it ended.
    pub state: AgentState,
    /// The command's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// How long the command ran.
    pub duration_ms: u64,
}

/// A frame or protocol line that is not what it claims.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A protocol line that cannot be parsed.
    #[error("malformed protocol line {0:?}")]
    BadLine(String),
    /// A line inside a file frame that is not base64.
    #[error("file {name}: a line inside the frame is not base64 (output interleaved or altered)")]
    NotBase64 {
        /// The file.
        name: String,
    },
    /// More data than the header announced.
    #[error("file {name}: more than the announced {bytes} bytes")]
    TooLong {
        /// The file.
        name: String,
        /// Announced size.
        bytes: u64,
    },
    /// The end line came too early, or named another file.
    #[error("file {name}: frame ended after {got} of {bytes} bytes")]
    Short {
        /// The file.
        name: String,
        /// Received bytes.
        got: u64,
        /// Announced size.
        bytes: u64,
    },
    /// The content does not match the announced SHA-256.
    #[error("file {name}: SHA-256 mismatch (announced {expected}, received {actual})")]
    Checksum {
        /// The file.
        name: String,
        /// Announced.
        expected: String,
        /// Computed.
        actual: String,
    },
    /// The stream ended inside a frame.
    #[error("file {name}: output ended inside its frame after {got} of {bytes} bytes (truncated)")]
    Truncated {
        /// The file.
        name: String,
        /// Received bytes.
        got: u64,
        /// Announced size.
        bytes: u64,
    },
}

/// Checks a file name carried in a frame: a plain name, no path.
fn valid_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The agent's first line.
pub fn hello_line(node: &str, version: &str) -> String {
    format!("{MAGIC} hello node={node} version={version}")
}

/// The agent's first line when it runs a pushed copy of numalab (`fleet run --push`) whose
/// SHA-256 it checked: `pushed=<64 hex>`.
pub fn hello_line_pushed(node: &str, version: &str, sha256: &str) -> String {
    format!("{} pushed={sha256}", hello_line(node, version))
}

/// The agent's last line.
pub fn status_line(s: &AgentStatus) -> String {
    let mut l = format!("{MAGIC} status={}", s.state.as_str());
    if let Some(c) = s.exit_code {
        l.push_str(&format!(" exit={c}"));
    }
    if let Some(sig) = s.signal {
        l.push_str(&format!(" signal={sig}"));
    }
    l.push_str(&format!(" duration_ms={}", s.duration_ms));
    l
}

/// The line announcing a file copied to the shared folder instead of sent.
pub fn shared_line(name: &str, bytes: u64, sha256: &str) -> String {
    format!("{MAGIC} shared file={name} bytes={bytes} sha256={sha256}")
}

/// SHA-256 (lower-case hex) and size of everything `r` yields.
pub fn hash_reader(mut r: impl Read) -> io::Result<(u64, String)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = 0u64;
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                h.update(&buf[..k]);
                n += k as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok((n, hex(&h.finalize())))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Writes one file frame: header, base64 lines, end line. `bytes` and `sha256` must be
/// those of what `data` yields (see [`hash_reader`]); a file that changed in between is
/// caught by the receiver.
pub fn write_file_frame(
    out: &mut dyn Write,
    name: &str,
    bytes: u64,
    sha256: &str,
    mut data: impl Read,
) -> io::Result<()> {
    writeln!(out, "{MAGIC} file={name} bytes={bytes} sha256={sha256}")?;
    let engine = base64::engine::general_purpose::STANDARD;
    let mut buf = vec![0u8; RAW_PER_LINE * 1024];
    let mut filled = 0usize;
    loop {
        let k = match data.read(&mut buf[filled..]) {
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        filled += k;
        let eof = k == 0;
        let whole = if eof {
            filled
        } else {
            filled - filled % RAW_PER_LINE
        };
        for chunk in buf[..whole].chunks(RAW_PER_LINE) {
            writeln!(out, "{}", engine.encode(chunk))?;
        }
        buf.copy_within(whole..filled, 0);
        filled -= whole;
        if eof {
            break;
        }
    }
    writeln!(out, "{MAGIC} end file={name}")?;
    Ok(())
}

/// Writes a whole in-memory file as a frame.
pub fn write_bytes_frame(out: &mut dyn Write, name: &str, data: &[u8]) -> io::Result<()> {
    let (n, sha) = hash_reader(data)?;
    write_file_frame(out, name, n, &sha, data)
}

/// What a line of the agent's stdout meant.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// The agent started.
    Hello {
        /// The node it says it runs for.
        node: String,
        /// Its numalab version.
        version: String,
        /// The SHA-256 of the pushed numalab it checked and runs (`fleet run --push`).
        pushed: Option<String>,
    },
    /// A file frame began.
    Begin {
        /// File name.
        name: String,
        /// Announced size.
        bytes: u64,
    },
    /// Decoded bytes of the current file.
    Chunk(Vec<u8>),
    /// The current file ended and matched its size and SHA-256.
    FileDone {
        /// File name.
        name: String,
        /// Size.
        bytes: u64,
        /// SHA-256, hex.
        sha256: String,
    },
    /// A file was copied to the shared folder.
    Shared {
        /// File name.
        name: String,
        /// Size.
        bytes: u64,
        /// SHA-256, hex.
        sha256: String,
    },
    /// The agent's final status.
    Status(AgentStatus),
    /// A line outside any frame that is not part of the protocol.
    Stray(String),
}

struct Open {
    name: String,
    bytes: u64,
    sha256: String,
    got: u64,
    hasher: Sha256,
}

/// Decodes the agent's stdout line by line.
#[derive(Default)]
pub struct FrameDecoder {
    open: Option<Open>,
}

fn fields(rest: &str) -> Vec<(&str, &str)> {
    rest.split(' ')
        .filter(|w| !w.is_empty())
        .filter_map(|w| w.split_once('='))
        .collect()
}

fn field<'a>(f: &[(&'a str, &'a str)], key: &str) -> Option<&'a str> {
    f.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

impl FrameDecoder {
    /// A decoder outside any frame.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a file frame is open.
    pub fn in_frame(&self) -> bool {
        self.open.is_some()
    }

    /// Takes one line (without its newline). An error closes the open frame (its data
    /// must be discarded) and the decoder goes on with the next line.
    pub fn push_line(&mut self, line: &str) -> Result<Event, FrameError> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(open) = self.open.as_mut() {
            if let Some(rest) = line.strip_prefix(MAGIC) {
                let open = self.open.take().expect("checked above");
                let f = fields(rest);
                let is_end = rest.trim_start().starts_with("end ");
                if !is_end || field(&f, "file") != Some(open.name.as_str()) {
                    return Err(FrameError::Short {
                        name: open.name,
                        got: open.got,
                        bytes: open.bytes,
                    });
                }
                if open.got != open.bytes {
                    return Err(FrameError::Short {
                        name: open.name,
                        got: open.got,
                        bytes: open.bytes,
                    });
                }
                let actual = hex(&open.hasher.finalize());
                if actual != open.sha256 {
                    return Err(FrameError::Checksum {
                        name: open.name,
                        expected: open.sha256,
                        actual,
                    });
                }
                return Ok(Event::FileDone {
                    name: open.name,
                    bytes: open.bytes,
                    sha256: actual,
                });
            }
            let engine = base64::engine::general_purpose::STANDARD;
            let decoded = match engine.decode(line.trim_end()) {
                Ok(d) if !line.trim_end().is_empty() => d,
                _ => {
                    let name = self.open.take().expect("checked above").name;
                    return Err(FrameError::NotBase64 { name });
                }
            };
            open.got += decoded.len() as u64;
            if open.got > open.bytes {
                let open = self.open.take().expect("checked above");
                return Err(FrameError::TooLong {
                    name: open.name,
                    bytes: open.bytes,
                });
            }
            open.hasher.update(&decoded);
            return Ok(Event::Chunk(decoded));
        }
        let Some(rest) = line.strip_prefix(MAGIC) else {
            return Ok(Event::Stray(line.to_string()));
        };
        let bad = || FrameError::BadLine(line.chars().take(200).collect());
        let words: Vec<&str> = rest.split(' ').filter(|w| !w.is_empty()).collect();
        let f = fields(rest);
        let file_fields = || -> Result<(String, u64, String), FrameError> {
            let name = field(&f, "file").ok_or_else(bad)?;
            let bytes: u64 = field(&f, "bytes")
                .and_then(|b| b.parse().ok())
                .ok_or_else(bad)?;
            let sha = field(&f, "sha256").ok_or_else(bad)?;
            if !valid_file_name(name)
                || bytes > MAX_FRAME_BYTES
                || sha.len() != 64
                || !sha
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                return Err(bad());
            }
            Ok((name.to_string(), bytes, sha.to_string()))
        };
        match words.first().copied() {
            Some("hello") => Ok(Event::Hello {
                node: field(&f, "node").ok_or_else(bad)?.to_string(),
                version: field(&f, "version").unwrap_or("").to_string(),
                pushed: field(&f, "pushed").map(str::to_string),
            }),
            Some("shared") => {
                let (name, bytes, sha256) = file_fields()?;
                Ok(Event::Shared {
                    name,
                    bytes,
                    sha256,
                })
            }
            Some(w) if w.starts_with("file=") => {
                let (name, bytes, sha256) = file_fields()?;
                self.open = Some(Open {
                    name: name.clone(),
                    bytes,
                    sha256,
                    got: 0,
                    hasher: Sha256::new(),
                });
                Ok(Event::Begin { name, bytes })
            }
            Some(w) if w.starts_with("status=") => {
                let state = match field(&f, "status") {
                    Some("done") => AgentState::Done,
                    Some("failed") => AgentState::Failed,
                    Some("timeout") => AgentState::Timeout,
                    Some("killed") => AgentState::Killed,
                    _ => return Err(bad()),
                };
                let num = |k: &str| field(&f, k).and_then(|v| v.parse::<i32>().ok());
                Ok(Event::Status(AgentStatus {
                    state,
                    exit_code: num("exit"),
                    signal: num("signal"),
                    duration_ms: field(&f, "duration_ms")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0),
                }))
            }
            _ => Err(bad()),
        }
    }

    /// The stream ended: an open frame is truncated.
    pub fn finish(&mut self) -> Result<(), FrameError> {
        match self.open.take() {
            Some(o) => Err(FrameError::Truncated {
                name: o.name,
                got: o.got,
                bytes: o.bytes,
            }),
            None => Ok(()),
        }
    }
}

/// Reads one line of at most `max` bytes (the rest of a longer line is skipped and the
/// line returned cut). `Ok(None)` at end of file.
pub fn read_line_bounded(r: &mut impl BufRead, max: usize) -> io::Result<Option<String>> {
    let mut v = Vec::new();
    let mut any = false;
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        any = true;
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = max.saturating_sub(v.len());
        let keep = if done { take - 1 } else { take };
        v.extend_from_slice(&buf[..keep.min(room)]);
        r.consume(take);
        if done {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    Ok(Some(String::from_utf8_lossy(&v).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    type Files = Vec<(String, Vec<u8>)>;

    fn decode_all(text: &str) -> (Files, Vec<FrameError>, Vec<Event>) {
        let mut d = FrameDecoder::new();
        let mut files = Vec::new();
        let mut cur = Vec::new();
        let mut errors = Vec::new();
        let mut other = Vec::new();
        for line in text.lines() {
            match d.push_line(line) {
                Ok(Event::Begin { .. }) => cur.clear(),
                Ok(Event::Chunk(c)) => cur.extend(c),
                Ok(Event::FileDone { name, .. }) => files.push((name, std::mem::take(&mut cur))),
                Ok(e) => other.push(e),
                Err(e) => errors.push(e),
            }
        }
        if let Err(e) = d.finish() {
            errors.push(e);
        }
        (files, errors, other)
    }

    fn sample(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 3) as u8).collect()
    }

    #[test]
    fn round_trip_with_noise_around() {
        let mut out = Vec::new();
        writeln!(out, "{}", hello_line("n1", "0.1.0")).unwrap();
        writeln!(out, "some library printed this").unwrap();
        for n in [0usize, 1, 56, 57, 58, 57 * 1024, 57 * 1024 + 1, 200_000] {
            write_bytes_frame(&mut out, "results.jsonl", &sample(n)).unwrap();
        }
        writeln!(out, "{}", shared_line("summary.json", 3, &"a".repeat(64))).unwrap();
        let st = AgentStatus {
            state: AgentState::Timeout,
            exit_code: None,
            signal: Some(9),
            duration_ms: 20_001,
        };
        writeln!(out, "{}", status_line(&st)).unwrap();
        let (files, errors, other) = decode_all(std::str::from_utf8(&out).unwrap());
        assert!(errors.is_empty(), "{errors:?}");
        let sizes: Vec<usize> = files.iter().map(|(_, d)| d.len()).collect();
        assert_eq!(sizes, [0, 1, 56, 57, 58, 57 * 1024, 57 * 1024 + 1, 200_000]);
        for (_, d) in &files {
            assert_eq!(*d, sample(d.len()));
        }
        assert_eq!(
            other,
            vec![
                Event::Hello {
                    node: "n1".into(),
                    version: "0.1.0".into(),
                    pushed: None,
                },
                Event::Stray("some library printed this".into()),
                Event::Shared {
                    name: "summary.json".into(),
                    bytes: 3,
                    sha256: "a".repeat(64)
                },
                Event::Status(st),
            ]
        );
    }

    fn one_frame(n: usize) -> Vec<String> {
        let mut out = Vec::new();
        write_bytes_frame(&mut out, "results.jsonl", &sample(n)).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn corrupted_frames_rejected() {
        let good = one_frame(1000);
        assert!(good.len() > 4);

        // A stray line inside the frame.
        let mut l = good.clone();
        l.insert(3, "srun: warning: something".into());
        let (files, errors, _) = decode_all(&l.join("\n"));
        assert!(files.is_empty());
        assert!(
            matches!(errors[0], FrameError::NotBase64 { .. }),
            "{errors:?}"
        );

        // One character changed (still base64).
        let mut l = good.clone();
        let s = &mut l[2];
        let c = if s.starts_with('A') { "B" } else { "A" };
        s.replace_range(0..1, c);
        let (files, errors, _) = decode_all(&l.join("\n"));
        assert!(files.is_empty());
        assert!(
            matches!(errors[0], FrameError::Checksum { .. }),
            "{errors:?}"
        );

        // A data line lost.
        let mut l = good.clone();
        l.remove(2);
        let (files, errors, _) = decode_all(&l.join("\n"));
        assert!(files.is_empty());
        assert!(matches!(errors[0], FrameError::Short { .. }), "{errors:?}");

        // A data line repeated.
        let mut l = good.clone();
        let dup = l[2].clone();
        l.insert(2, dup);
        let (files, errors, _) = decode_all(&l.join("\n"));
        assert!(files.is_empty());
        assert!(
            matches!(errors[0], FrameError::TooLong { .. }),
            "{errors:?}"
        );

        // Truncated: no end line.
        let l = &good[..good.len() - 1];
        let (files, errors, _) = decode_all(&l.join("\n"));
        assert!(files.is_empty());
        assert!(
            matches!(errors[0], FrameError::Truncated { .. }),
            "{errors:?}"
        );

        // Another file's end line, or a new header inside the frame.
        let mut l = good.clone();
        let last = l.len() - 1;
        l[last] = format!("{MAGIC} end file=summary.json");
        let (files, errors, _) = decode_all(&l.join("\n"));
        assert!(files.is_empty() && !errors.is_empty());

        // Headers that lie about names or sizes.
        for h in [
            format!("{MAGIC} file=../x bytes=1 sha256={}", "0".repeat(64)),
            format!("{MAGIC} file=a bytes=-1 sha256={}", "0".repeat(64)),
            format!("{MAGIC} file=a bytes=1 sha256=xyz"),
            format!(
                "{MAGIC} file=a bytes={} sha256={}",
                MAX_FRAME_BYTES + 1,
                "0".repeat(64)
            ),
            format!("{MAGIC} bogus"),
            format!("{MAGIC} status=maybe"),
        ] {
            let mut d = FrameDecoder::new();
            assert!(
                matches!(d.push_line(&h), Err(FrameError::BadLine(_))),
                "{h}"
            );
            assert!(!d.in_frame());
        }

        // After a bad frame the decoder recovers for the next one.
        let mut l = good.clone();
        l.truncate(3);
        l.extend(good.clone());
        let (files, errors, _) = decode_all(&l.join("\n"));
        // The header inside the open frame cuts it short; the second frame's data is
        // then stray text and its end line a bad line: nothing is accepted.
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(files.is_empty());
        let mut l = good.clone();
        l.insert(3, "noise".into());
        l.extend(good.clone());
        let (files, errors, _) = decode_all(&l.join("\n"));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].1, sample(1000));
    }

    #[test]
    fn bounded_lines() {
        let data = format!("short\n{}\nlast", "x".repeat(100));
        let mut r = io::BufReader::with_capacity(7, data.as_bytes());
        assert_eq!(read_line_bounded(&mut r, 10).unwrap().unwrap(), "short");
        assert_eq!(
            read_line_bounded(&mut r, 10).unwrap().unwrap(),
            "x".repeat(10)
        );
        assert_eq!(read_line_bounded(&mut r, 10).unwrap().unwrap(), "last");
        assert_eq!(read_line_bounded(&mut r, 10).unwrap(), None);
    }
}
