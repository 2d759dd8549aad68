//! Unit tests of the supervisor's pieces.

use super::*;

#[test]
fn the_report_survives_the_pipe() {
    let r = Report {
        status: Some(0x0900),
        leftovers: true,
        end_ns: 123_456_789_012,
        user_ns: 5,
        sys_ns: 6,
        max_rss_kib: 7,
    };
    assert_eq!(Report::decode(&r.encode()), r);
    let none = Report {
        status: None,
        leftovers: false,
        ..r
    };
    assert_eq!(Report::decode(&none.encode()), none);
}

#[test]
fn proc_paths_are_built_without_formatting() {
    let mut buf = [0u8; 64];
    let p = proc_path(&mut buf, b"/proc/self/task/", 4_194_304, b"/children");
    // SAFETY: proc_path NUL-terminates the buffer p points into.
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    assert_eq!(s.to_str().unwrap(), "/proc/self/task/4194304/children");
    let p = proc_path(&mut buf, b"/proc/", 0, b"/stat");
    // SAFETY: as above.
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    assert_eq!(s.to_str().unwrap(), "/proc/0/stat");
}

#[test]
fn numbers_are_read_from_a_file_in_pieces() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("children");
    // More than one read buffer of numbers, as a children file with many orphans.
    let want: Vec<i32> = (1..2000).map(|k| k * 7919).collect();
    let text: Vec<String> = want.iter().map(|n| n.to_string()).collect();
    std::fs::write(&path, text.join(" ") + " ").unwrap();
    let c = CString::new(path.to_str().unwrap()).unwrap();
    let mut got = Vec::new();
    assert!(for_each_number_in_file(c.as_ptr(), &mut |n| got.push(n)));
    assert_eq!(got, want);
    let missing = CString::new(dir.path().join("nope").to_str().unwrap()).unwrap();
    assert!(!for_each_number_in_file(missing.as_ptr(), &mut |_| {}));
}

#[test]
fn children_are_found_without_the_children_file() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let me = std::process::id() as libc::pid_t;
    let mut found = Vec::new();
    for_each_child_by_stat(me, &mut |p| found.push(p));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(found.contains(&(child.id() as libc::pid_t)), "{found:?}");
}
