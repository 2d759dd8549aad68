//! What numalab's tests share, so no crate carries its own copy: fake `/sys` and
//! `/proc` trees for `SysRoot`-style readers ([`write`]) and the repository's fixture
//! folder ([`fixture`]). A dev-dependency only (the architecture test checks that no
//! crate depends on it otherwise).

use std::path::{Path, PathBuf};

/// Writes `content` to `root/rel`, creating the folders on the way (a file of a fake
/// `/sys` or `/proc` tree). Panics on failure: it is for tests.
pub fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("a relative path below root"))
        .expect("create the fake tree's folders");
    std::fs::write(p, content).expect("write a file of the fake tree");
}

/// A file or folder of the repository's `tests/fixtures`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_nested_files_and_finds_fixtures() {
        let dir = std::env::temp_dir().join(format!("numalab-testkit-{}", std::process::id()));
        write(
            &dir,
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemFree: 1 kB\n",
        );
        let text =
            std::fs::read_to_string(dir.join("sys/devices/system/node/node0/meminfo")).unwrap();
        assert_eq!(text, "Node 0 MemFree: 1 kB\n");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(fixture("topology").is_dir());
    }
}
