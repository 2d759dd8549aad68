//! numalab's side of a supervisor killed from outside: the processes of its tree that
//! had left the command's process group (`setsid`, `setpgid`) were tracked only by the
//! supervisor. numalab is a child subreaper while it runs commands
//! ([`become_subreaper`]): when a supervisor dies, its children (the command and the
//! orphans it had adopted) are reparented to numalab, not to init, and so are, in turn,
//! the children of each of those that numalab kills. [`kill_orphans`] finds them among
//! numalab's children, SIGKILLs each (and the process group it leads) and reaps it,
//! until none is left.
//!
//! Which of numalab's children are the lost tree's: those started no earlier than the
//! lost supervisor and either in the command's process group or in another session than
//! numalab's. numalab's own children (supervisors of other commands, the tools it runs)
//! are in its session and outside the command's group, so they are never hit. A process
//! of the tree that left the group with `setpgid` but stayed in numalab's session is
//! found only if it is still below one of those (killing its ancestors reparents it to
//! numalab, where it looks like one of numalab's own children): `setsid`, what daemons
//! do, is covered.

use super::sys;
use std::time::{Duration, Instant};

/// Makes numalab a child subreaper, once (see the module documentation). Where the
/// kernel refuses (qemu-user), orphans go to init as before and only the command's
/// group is killed when its supervisor is lost.
pub(super) fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        sys::set_child_subreaper();
    });
}

/// What [`kill_orphans`] reads of a process in `/proc/PID/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stat {
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    /// When it started, clock ticks since boot.
    pub start: u64,
}

/// The fields of `/proc/PID/stat` that [`kill_orphans`] uses; `None` when the process
/// is gone.
pub(super) fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parses a `/proc/PID/stat` line ("pid (comm) state ppid pgrp session ... starttime"):
/// comm may hold anything, so the fields are counted after the last ')'.
fn parse_stat(text: &str) -> Option<Stat> {
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    // After ')': state is field 3 of the line, so field N is fields[N - 3].
    let num = |n: usize| fields.get(n - 3)?.parse::<i64>().ok();
    Some(Stat {
        ppid: i32::try_from(num(4)?).ok()?,
        pgrp: i32::try_from(num(5)?).ok()?,
        session: i32::try_from(num(6)?).ok()?,
        start: u64::try_from(num(22)?).ok()?,
    })
}

/// The children of this process: from `/proc/self/task/*/children`, or, where the
/// kernel has no such file, every process in `/proc` whose parent is this one.
fn children() -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    let mut listed = false;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
                listed = true;
                out.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
    }
    if !listed {
        if let Ok(all) = std::fs::read_dir("/proc") {
            out.extend(
                all.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                    .filter(|&p| stat(p).is_some_and(|s| s.ppid == me)),
            );
        }
    }
    out
}

/// SIGKILLs and reaps the processes of a lost supervisor's tree reparented to numalab
/// (see the module documentation): `cmd` is the command's pid (its group's id), `since`
/// the supervisor's start ([`Stat::start`]). Goes on until a pass finds none (a
/// process reaped in one pass may have had children, reparented to numalab as it
/// died), for at most `within`. How many processes were killed.
pub(super) fn kill_orphans(cmd: i32, since: u64, within: Duration) -> usize {
    let (_, own_group) = sys::pid_and_pgrp();
    let own_session = sys::own_session();
    let deadline = Instant::now() + within;
    let mut killed = std::collections::HashSet::new();
    loop {
        let mut found = 0;
        for c in children() {
            let Some(s) = stat(c) else { continue };
            let ours = s.start >= since && (s.pgrp == cmd || s.session != own_session);
            if !ours {
                continue;
            }
            if killed.insert(c) {
                if s.pgrp == c && s.pgrp != own_group {
                    // The group it leads: its members go at once, not one pass each.
                    sys::kill(-c, libc::SIGKILL);
                }
                // Our own unreaped child: its pid cannot have been reused.
                sys::kill(c, libc::SIGKILL);
            }
            found += 1;
            sys::reap_nohang(c);
        }
        if found == 0 || Instant::now() >= deadline {
            return killed.len();
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let line =
            "4242 (a) b) c) S 17 4242 4240 0 -1 4194560 90 0 0 0 1 2 0 0 20 0 1 0 987654 1 2";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                ppid: 17,
                pgrp: 4242,
                session: 4240,
                start: 987654
            })
        );
        assert_eq!(parse_stat("12 (x) S 1"), None);
        let me = stat(std::process::id() as i32).unwrap();
        assert_eq!(me.ppid, std::os::unix::process::parent_id() as i32);
    }
}
