//! Child processes in their own process group, killed as a group, waited for with a
//! bound; the tail of an output kept in a bounded buffer.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a running child is polled.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// Puts the command's child in a new process group (its pid), so that the whole tree it
/// starts can be signalled at once.
pub(crate) fn own_group(cmd: &mut Command) {
    cmd.process_group(0);
}

/// Sends `sig` to the process group `pgid`; a group already gone is not an error.
pub(crate) fn signal_group(pgid: u32, sig: i32) {
    let Ok(pgid) = i32::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
    unsafe {
        libc::kill(-pgid, sig);
    }
}

/// Waits for `child` until `deadline`; `None` if it is still running then.
pub(crate) fn wait_until(
    child: &mut Child,
    deadline: Instant,
    stop: Option<&std::sync::atomic::AtomicBool>,
) -> std::io::Result<Option<ExitStatus>> {
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(Some(st));
        }
        let now = Instant::now();
        if now >= deadline || stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
            return Ok(None);
        }
        std::thread::sleep(POLL.min(deadline - now));
    }
}

/// Ends the child's whole process group: SIGTERM (launchers such as srun forward it to
/// their remote step), then SIGKILL after `grace`; reaps the child. Returns its status.
pub(crate) fn kill_group(child: &mut Child, grace: Duration) -> std::io::Result<ExitStatus> {
    let pgid = child.id();
    signal_group(pgid, libc::SIGTERM);
    if let Some(st) = wait_until(child, Instant::now() + grace, None)? {
        signal_group(pgid, libc::SIGKILL);
        return Ok(st);
    }
    signal_group(pgid, libc::SIGKILL);
    child.wait()
}

/// Why [`output_with_timeout`] failed.
pub(crate) enum OutputError {
    /// The program does not exist.
    NotFound,
    /// Another spawn failure.
    Spawn(std::io::Error),
    /// It did not finish in time; its group was killed.
    Timeout,
}

/// Runs `cmd` to completion in its own process group with captured output, killing the
/// group if it takes longer than `timeout`.
pub(crate) fn output_with_timeout(
    mut cmd: Command,
    timeout: Duration,
) -> Result<Output, OutputError> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    own_group(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            OutputError::NotFound
        } else {
            OutputError::Spawn(e)
        }
    })?;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_end(&mut v);
        }
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut v);
        }
        v
    });
    let status = match wait_until(&mut child, Instant::now() + timeout, None) {
        Ok(Some(st)) => st,
        Ok(None) | Err(_) => {
            let _ = kill_group(&mut child, Duration::from_secs(1));
            return Err(OutputError::Timeout);
        }
    };
    Ok(Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    })
}

/// The last `cap` bytes written to it (whole lines where possible), shared between the
/// thread reading a pipe and the one that records the result.
#[derive(Clone)]
pub(crate) struct Tail {
    inner: Arc<Mutex<Vec<u8>>>,
    cap: usize,
}

impl Tail {
    pub(crate) fn new(cap: usize) -> Self {
        Tail {
            inner: Arc::new(Mutex::new(Vec::new())),
            cap,
        }
    }

    pub(crate) fn push(&self, bytes: &[u8]) {
        let mut v = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        v.extend_from_slice(bytes);
        if v.len() > 2 * self.cap {
            let cut = v.len() - self.cap;
            v.drain(..cut);
        }
    }

    /// The kept text (lossy UTF-8), at most `cap` bytes, starting at a line when one
    /// starts within the first 1 KiB.
    pub(crate) fn text(&self) -> String {
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
    pub(crate) fn drain_from(&self, mut r: impl Read) {
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

/// Whether process `pid` is gone (or a zombie nobody reaped yet) within `within`,
/// looking every 50 ms: how a caller (and the tests) checks that a killed process
/// group really died.
pub fn process_gone(pid: i32, within: Duration) -> bool {
    let t0 = Instant::now();
    loop {
        let gone = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(s) => s
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        };
        if gone {
            return true;
        }
        if t0.elapsed() > within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_end() {
        let t = Tail::new(16);
        for i in 0..100 {
            t.push(format!("line {i}\n").as_bytes());
        }
        let s = t.text();
        assert!(s.len() <= 16, "{s:?}");
        assert!(s.ends_with("line 99\n"), "{s:?}");
        assert!(s.starts_with("line"), "{s:?}");
    }

    #[test]
    fn output_timeout_kills() {
        let mut c = Command::new("sh");
        c.args(["-c", "sleep 30"]);
        let t0 = Instant::now();
        assert!(matches!(
            output_with_timeout(c, Duration::from_millis(300)),
            Err(OutputError::Timeout)
        ));
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert!(matches!(
            output_with_timeout(Command::new("/nonexistent/x"), Duration::from_secs(1)),
            Err(OutputError::NotFound)
        ));
    }
}
