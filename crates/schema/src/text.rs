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
    fn excerpts_are_short() {
        let long = "x".repeat(10_000_000);
        let e = excerpt(&long, 80);
        assert!(e.len() < 200, "{}", e.len());
        assert!(e.ends_with("... (9999920 more characters)"));
        assert_eq!(excerpt("short\x07", 80), "short\\x07");
    }
}
