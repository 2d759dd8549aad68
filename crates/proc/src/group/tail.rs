//! The bounded tail of a stream (a launcher's stderr), filled by one thread and read by
//! another.

use std::io::Read;
use std::sync::{Arc, Mutex};

/// The last `cap` bytes written to it (whole lines where possible), shared between the
/// thread reading a pipe and the one that records the result.
#[derive(Clone)]
pub struct Tail {
    inner: Arc<Mutex<Vec<u8>>>,
    cap: usize,
}

impl Tail {
    /// An empty tail keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Tail {
            inner: Arc::new(Mutex::new(Vec::new())),
            cap,
        }
    }

    /// Appends `bytes`, dropping the oldest beyond the bound.
    pub fn push(&self, bytes: &[u8]) {
        let mut v = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        v.extend_from_slice(bytes);
        if v.len() > 2 * self.cap {
            let cut = v.len() - self.cap;
            v.drain(..cut);
        }
    }

    /// The kept text (lossy UTF-8), at most `cap` bytes, starting at a line when one
    /// starts within the first 1 KiB.
    pub fn text(&self) -> String {
        let v = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let mut start = v.len().saturating_sub(self.cap);
        if start > 0 {
            if let Some(nl) = v[start..].iter().take(1024).position(|&b| b == b'\n') {
                start += nl + 1;
            }
        }
        String::from_utf8_lossy(&v[start..]).into_owned()
    }

    /// Copies everything from `r` into the tail until end of file.
    pub fn drain_from(&self, mut r: impl Read) {
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
    }
}
