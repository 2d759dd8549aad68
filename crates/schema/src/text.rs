//! Text from the outside world, made safe to store and to show: paths and arguments
//! that are not UTF-8, control characters bound for a terminal, and excerpts of bad
//! input short enough for an error message; a field of the CSV that numalab writes.

use std::ffi::OsStr;
use std::path::Path;

/// An OS string as text, losslessly: valid UTF-8 as it is; otherwise every byte that
/// is not part of valid UTF-8 as `\xNN` and every backslash as `\\`, so that the
/// original bytes can be recovered with [`os_bytes`].
pub fn os_text(s: &OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = s.as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(t) => t.to_string(),
        Err(_) => escape_bytes(bytes),
    }
}

/// A path as text, losslessly (see [`os_text`]).
pub fn path_text(p: &Path) -> String {
    os_text(p.as_os_str())
}

fn escape_bytes(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    loop {
        match std::str::from_utf8(bytes) {
            Ok(t) => {
                out.push_str(&t.replace('\\', "\\\\"));
                return out;
            }
            Err(e) => {
                let (good, rest) = bytes.split_at(e.valid_up_to());
                out.push_str(
                    &std::str::from_utf8(good)
                        .unwrap_or("")
                        .replace('\\', "\\\\"),
                );
                let bad = e.error_len().unwrap_or(rest.len());
                for b in &rest[..bad] {
                    out.push_str(&format!("\\x{b:02x}"));
                }
                bytes = &rest[bad..];
            }
        }
    }
}

/// The bytes an escaped [`os_text`] came from (`\xNN` and `\\` undone), when the text
/// holds an escape; plain text is its own bytes.
pub fn os_bytes(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    if !text.contains("\\x") {
        return b.to_vec();
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() && b[i + 1] == b'\\' {
            out.push(b'\\');
            i += 2;
        } else if b[i] == b'\\' && i + 3 < b.len() && b[i + 1] == b'x' {
            // Two hex digits, read as bytes: the text after them may be any UTF-8.
            let hex = |c: u8| (c as char).to_digit(16);
            match (hex(b[i + 2]), hex(b[i + 3])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 4;
                }
                _ => {
                    out.push(b[i]);
                    i += 1;
                }
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Text with every control character (C0, DEL, C1; tabs and line breaks too unless
/// `keep_lines`) shown as a visible escape (`\x1b`, `\x07`), so that text from a host
/// name, a command line or an input file cannot move the cursor, ring the bell or
/// change a terminal's colours when a report is printed.
pub fn visible(s: &str, keep_lines: bool) -> String {
    if !s.chars().any(|c| c.is_control()) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' | '\t' if keep_lines => out.push(c),
            c if c.is_control() => {
                let v = c as u32;
                if v <= 0xff {
                    out.push_str(&format!("\\x{v:02x}"));
                } else {
                    out.push_str(&format!("\\u{{{v:x}}}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// What an OS error means, in words, never as "os error N": the common errors of
/// paths, disks and connections are said plainly with what to do ("a symbolic link
/// loop: ...", "the disk is full: ..."); a missing file and a denied permission are said
/// without a remedy (the caller knows which option to name); any other error in the
/// system's words without the "(os error N)" that std appends. The one place that turns
/// an OS error into text for the user.
pub fn io_reason(e: &std::io::Error) -> String {
    let words = match e.raw_os_error() {
        Some(2) => Some("no such file or folder"),
        Some(1 | 13) => Some("permission denied"),
        Some(40) => Some("a symbolic link loop (a link leads back to itself): give the path of the real file (`readlink -f` shows where the links lead)"),
        Some(28) => Some("the disk is full: free some space or write elsewhere"),
        Some(122) => Some("the disk quota is exceeded: free some space or write elsewhere"),
        Some(20) => Some("a part of the path is not a folder: check the path"),
        Some(21) => Some("it is a folder: give a file name"),
        Some(17) => Some("something of that name exists already: remove it or give another name"),
        Some(30) => Some("the file system is read-only: write elsewhere"),
        Some(36) => Some("the name is too long: give a shorter path"),
        Some(5) => Some("an input/output error of the device: check the disk (dmesg)"),
        Some(111) => Some("connection refused (nothing listens at that address and port): check the address and that the service runs"),
        Some(110) => Some("the connection timed out: check the address and the network"),
        Some(101 | 113) => Some("no route to the host: check the address and the network"),
        Some(104) => Some("the connection was reset by the other side: try again"),
        _ => None,
    };
    if let Some(w) = words {
        return w.to_string();
    }
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        // The system's words without the "(os error N)" that std appends.
        _ => {
            let s = e.to_string();
            match s.find(" (os error ") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        }
    }
}

/// A message as numalab prints it on the terminal (the one rule, used by the CLI for
/// every error and warning it prints): an OS error that some library let through as
/// std's "Too many levels of symbolic links (os error 40)" said in words with its
/// remedy ([`io_reason`]), and every control character from a file or an
/// argument shown escaped ([`visible`]), keeping the line breaks and tabs of the
/// message's own layout.
pub fn message(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(" (os error ") {
        let tail = &rest[i + " (os error ".len()..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        let code = tail[..digits].parse::<i32>().ok();
        match code.filter(|_| tail[digits..].starts_with(')')) {
            Some(n) => {
                let e = std::io::Error::from_raw_os_error(n);
                let std_words = e.to_string();
                let std_words = std_words.split(" (os error ").next().unwrap_or("");
                let head = &rest[..i];
                // std's own words for the error, when they stand just before it.
                let head = head.strip_suffix(std_words).unwrap_or(head);
                out.push_str(head);
                out.push_str(&io_reason(&e));
                rest = &tail[digits + 1..];
            }
            None => {
                out.push_str(&rest[..i + 1]);
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    visible(&out, true)
}

/// At most `max` characters of `s` for an error message: the start, "...", and how
/// much was left out, with control characters made visible.
pub fn excerpt(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return visible(s, false);
    }
    let head: String = s.chars().take(max).collect();
    format!("{}... ({} more characters)", visible(&head, false), n - max)
}

/// One CSV field as every numalab CSV writer writes it (RFC 4180): as it is, or, when
/// it holds a comma, a double quote, CR or LF, in double quotes with each double quote
/// doubled. An empty field stays empty.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn csv_fields_are_quoted_only_when_they_must_be() {
        assert_eq!(
            csv_field("plain text; 1.5 [1 2]x"),
            "plain text; 1.5 [1 2]x"
        );
        assert_eq!(csv_field(""), "");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("cr\r"), "\"cr\r\"");
    }

    #[test]
    fn paths_that_are_not_utf8_survive_a_round_trip() {
        for raw in [
            &b"q\xff"[..],
            b"plain/dir",
            b"back\\slash\xfe\xfd",
            b"\xc3\x28mixed\xe2\x82",
        ] {
            let t = os_text(OsStr::from_bytes(raw));
            assert!(t.is_char_boundary(t.len()));
            if std::str::from_utf8(raw).is_ok() {
                assert_eq!(t.as_bytes(), raw);
            } else {
                assert!(t.contains("\\x"), "{t}");
                assert_eq!(os_bytes(&t), raw, "{t}");
            }
        }
        assert_eq!(os_text(OsStr::from_bytes(b"q\xff")), "q\\xff");
    }

    #[test]
    fn unescaping_never_splits_a_character() {
        // Found by fuzzing (small_parsers): "\\x" followed by a multi-byte character
        // sliced the text inside it.
        let t = "$ 101ucon0\x1b\0\0\0,1(-1\\xs\u{4e06} /";
        let b = os_bytes(t);
        assert!(!b.is_empty());
        assert_eq!(os_bytes("a\\xzz\u{e9}"), "a\\xzz\u{e9}".as_bytes());
        assert_eq!(os_bytes("q\\xff"), b"q\xff");
    }

    #[test]
    fn control_characters_become_visible() {
        let host = "evil\x1b[2J\x07host\u{9b}";
        assert_eq!(visible(host, false), "evil\\x1b[2J\\x07host\\x9b");
        assert_eq!(visible("a\nb\tc", true), "a\nb\tc");
        assert_eq!(visible("a\nb", false), "a\\x0ab");
        assert_eq!(visible("plain", false), "plain");
    }

    #[test]
    fn messages_for_the_terminal_say_os_errors_in_words_and_escape_controls() {
        let loop40 = std::io::Error::from_raw_os_error(40);
        let m = message(&format!("topo/cpu0: cannot read it: {loop40}"));
        assert!(
            m.starts_with("topo/cpu0: cannot read it: a symbolic link loop"),
            "{m}"
        );
        assert!(
            !m.contains("os error") && !m.contains("Too many levels"),
            "{m}"
        );
        let full = std::io::Error::from_raw_os_error(28);
        assert_eq!(
            message(&format!("x.csv: {full}; then")),
            "x.csv: the disk is full: free some space or write elsewhere; then"
        );
        assert_eq!(message("a\x1b[2Jb\x07\n\tc"), "a\\x1b[2Jb\\x07\n\tc");
        assert_eq!(message("not (os error x) here"), "not (os error x) here");
    }

    #[test]
    fn excerpts_are_short() {
        let long = "x".repeat(10_000_000);
        let e = excerpt(&long, 80);
        assert!(e.len() < 200, "{}", e.len());
        assert!(e.ends_with("... (9999920 more characters)"));
        assert_eq!(excerpt("short\x07", 80), "short\\x07");
    }
}
