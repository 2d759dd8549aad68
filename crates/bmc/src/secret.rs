//! Credentials: a wrapper that never prints its content, the owner-only file check,
//! and the scrubbing of text that could echo a credential back (a tool's stderr, an
//! HTTP library's error).

use crate::error::BmcError;
use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A password or other credential. Its `Debug` and `Display` print `***`; it is not
/// serializable; the only way to the text is [`Secret::expose`], used where the
/// credential is handed to `ipmitool`'s environment or an HTTP header.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The credential itself. Never log, format or store what this returns.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True for an empty credential.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads a credential from an environment variable; `None` when unset or empty.
    pub fn from_env(var: &str) -> Option<Secret> {
        std::env::var(var)
            .ok()
            .filter(|v| !v.is_empty())
            .map(Secret)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        // Best effort: overwrite the bytes before the allocation is freed. Copies made by
        // the OS (a child's environment) or by a library are out of reach.
        let bytes = std::mem::take(&mut self.0).into_bytes();
        let mut bytes = std::hint::black_box(bytes);
        bytes.iter_mut().for_each(|b| *b = 0);
        std::hint::black_box(&bytes);
    }
}

/// Reads a credential file that only its owner may read or write: the first line,
/// without its line ending (as `ipmitool -f` does). A file that its group or others
/// may read or write is refused, naming the fix (`chmod 600`).
pub fn read_owner_only_file(path: &Path) -> Result<Vec<Secret>, BmcError> {
    check_owner_only(path)?;
    // Bounded, as every file named by an option (the mode check above wants a file).
    let what = "the BMC password file (--bmc-password-file)";
    let text = numalab_schema::input::read_to_string(path, what, numalab_schema::input::TEXT)
        .map_err(|e| BmcError::CredentialFile {
            path: path.to_path_buf(),
            problem: format!("cannot read it: {}", e.reason),
        })?;
    Ok(text
        .lines()
        .map(|l| Secret::new(l.trim_end_matches('\r')))
        .collect())
}

/// Refuses a credential file that is not a regular file or whose group/other
/// permission bits are set.
pub fn check_owner_only(path: &Path) -> Result<(), BmcError> {
    let meta = std::fs::metadata(path).map_err(|e| BmcError::CredentialFile {
        path: path.to_path_buf(),
        problem: format!(
            "cannot read its metadata: {}",
            numalab_schema::input::io_reason(&e)
        ),
    })?;
    if !meta.is_file() {
        return Err(BmcError::CredentialFile {
            path: path.to_path_buf(),
            problem: "not a regular file".into(),
        });
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(BmcError::CredentialFile {
            path: path.to_path_buf(),
            problem: format!(
                "its group or other users may read or write it (mode {mode:04o}); \
                 a credential file must be readable by its owner only: chmod 600 {}",
                path.display()
            ),
        });
    }
    Ok(())
}

/// Replaces each non-empty secret in `text` with `***` where it stands as a whole
/// token: an occurrence that is part of a longer word (letters or digits touching it on
/// either side) is left alone, so that a password "ess" does not turn "message" into
/// "m***age", while "ess" alone, or in "user:ess@host", is hidden.
pub fn scrub(text: &str, secrets: &[&Secret]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        if !s.0.is_empty() {
            out = replace_tokens(&out, &s.0);
        }
    }
    out
}

/// `text` with every whole-token occurrence of `secret` replaced by `***`.
fn replace_tokens(text: &str, secret: &str) -> String {
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    // A secret that starts or ends with a word character must not be glued to another
    // one there; one that starts or ends with punctuation is a token boundary itself.
    let first_word = word(secret.chars().next());
    let last_word = word(secret.chars().next_back());
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut before: Option<char> = None;
    while let Some(i) = rest.find(secret) {
        let prev = rest[..i].chars().next_back().or(before);
        let after = rest[i + secret.len()..].chars().next();
        let glued = (first_word && word(prev)) || (last_word && word(after));
        let whole = !glued;
        out.push_str(&rest[..i]);
        if whole {
            out.push_str("***");
            before = secret.chars().next_back();
            rest = &rest[i + secret.len()..];
        } else {
            // Not a token here: keep its first character and look again after it.
            let c = rest[i..].chars().next().unwrap_or_default();
            out.push(c);
            before = Some(c);
            rest = &rest[i + c.len_utf8()..];
        }
    }
    out.push_str(rest);
    out
}

/// Standard base64 (RFC 4648, with padding), for the HTTP Basic authorization header.
pub(crate) fn base64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_secret_never_prints() {
        let s = Secret::new("hunter2-xyz");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(format!("{:?}", Some(s.clone())), "Some(***)");
        assert_eq!(s.expose(), "hunter2-xyz");
    }

    #[test]
    fn scrub_hides_every_occurrence() {
        let s = Secret::new("pw1");
        let t = Secret::new("");
        assert_eq!(scrub("a pw1 b pw1", &[&s, &t]), "a *** b ***");
    }

    #[test]
    fn a_short_secret_is_redacted_as_a_whole_token_only() {
        let s = Secret::new("ess");
        assert_eq!(
            scrub("TLS: corrupt message (ess)", &[&s]),
            "TLS: corrupt message (***)"
        );
        assert_eq!(scrub("ess", &[&s]), "***");
        assert_eq!(
            scrub("admin:ess@bmc essay less", &[&s]),
            "admin:***@bmc essay less"
        );
        assert_eq!(scrub("ess,ess", &[&s]), "***,***");
        // A secret ending in punctuation is hidden wherever its word edge is free.
        let p = Secret::new("pa$$");
        assert_eq!(scrub("x pa$$word", &[&p]), "x ***word");
        assert_eq!(scrub("xpa$$", &[&p]), "xpa$$");
        // Base64 tokens (the Basic header) stand alone too.
        let b = Secret::new("YWRtaW46ZXNz");
        assert_eq!(scrub("Basic YWRtaW46ZXNz", &[&b]), "Basic ***");
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), enc);
        }
    }

    #[test]
    fn group_or_world_readable_credential_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pw");
        std::fs::write(&p, "s3cret\nsecond\n").unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = read_owner_only_file(&p).unwrap_err().to_string();
            assert!(
                e.contains("chmod 600") && e.contains(&format!("{mode:04o}")),
                "{e}"
            );
            assert!(!e.contains("s3cret"));
        }
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let lines = read_owner_only_file(&p).unwrap();
        assert_eq!(lines[0].expose(), "s3cret");
        assert_eq!(lines[1].expose(), "second");
        let e = read_owner_only_file(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
