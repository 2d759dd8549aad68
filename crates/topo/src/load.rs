//! Loading a topology through hwloc: the live machine, an hwloc XML file (1.x or 2.x
//! format), or a sysfs/procfs snapshot of another machine (a folder or a tarball made by
//! `hwloc-gather-topology`).
//!
//! Inputs are checked before hwloc sees them so that each failure gets one clear line:
//! a missing path, an empty or non-XML file, an XML written by hwloc 3.x (which the
//! hwloc 2.x that distributions ship refuses), an empty archive, a folder that is not a
//! snapshot.

use crate::error::TopoError;
use hwlocality::object::types::ObjectType;
use hwlocality::topology::builder::{TopologyBuilder, TypeFilter};
use hwlocality::Topology;
use numalab_schema::input::io_reason;
use numalab_schema::machine::MachineSource;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What to describe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The machine we run on.
    Live,
    /// An hwloc XML file.
    Xml(PathBuf),
    /// A folder holding a sysfs/procfs snapshot (its root has `sys/`).
    SnapshotDir(PathBuf),
    /// A `.tar.bz2`, `.tar.gz` or `.tar` archive of a snapshot.
    SnapshotArchive(PathBuf),
}

impl Input {
    /// The machine a command describes: the one given by path ([`Input::detect`]), or
    /// this one without a path.
    pub fn given_or_live(path: Option<&Path>) -> Result<Input, TopoError> {
        path.map_or(Ok(Input::Live), Input::detect)
    }

    /// Decides what a user-given path is, by looking at it (not only at its name).
    pub fn detect(path: &Path) -> Result<Input, TopoError> {
        let meta = std::fs::metadata(path).map_err(|e| TopoError::Unreadable {
            path: path.to_path_buf(),
            reason: io_reason(&e),
        })?;
        if meta.is_dir() {
            return Ok(Input::SnapshotDir(path.to_path_buf()));
        }
        // A device, FIFO or oversized file is refused before a byte is read.
        numalab_schema::input::check_file(
            path,
            "a topology (hwloc XML, or a snapshot folder or archive)",
            numalab_schema::input::TOPOLOGY,
        )
        .map_err(|e| TopoError::BadInput {
            path: path.to_path_buf(),
            reason: e.reason,
        })?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let archive_suffixes = [".tar.bz2", ".tbz2", ".tbz", ".tar.gz", ".tgz", ".tar"];
        if archive_suffixes.iter().any(|s| name.ends_with(s)) {
            return Ok(Input::SnapshotArchive(path.to_path_buf()));
        }
        // Sniff the content: archives by magic number, XML by its first characters.
        let mut head = [0u8; 512];
        let n = std::fs::File::open(path)
            .and_then(|mut f| f.read(&mut head))
            .map_err(|e| TopoError::Unreadable {
                path: path.to_path_buf(),
                reason: io_reason(&e),
            })?;
        let head = &head[..n];
        if head.starts_with(b"BZh") || head.starts_with(&[0x1f, 0x8b]) {
            return Ok(Input::SnapshotArchive(path.to_path_buf()));
        }
        Ok(Input::Xml(path.to_path_buf()))
    }

    /// The [`MachineSource`] recorded in descriptions loaded from this input.
    pub fn source(&self) -> MachineSource {
        match self {
            Input::Live => MachineSource::Live,
            Input::Xml(p) => MachineSource::HwlocXml {
                path: p.display().to_string(),
            },
            Input::SnapshotDir(p) | Input::SnapshotArchive(p) => MachineSource::Snapshot {
                path: p.display().to_string(),
            },
        }
    }
}

/// A loaded hwloc topology and what is needed to describe it.
pub struct Loaded {
    /// The hwloc topology.
    pub topology: Topology,
    /// Where it came from.
    pub source: MachineSource,
    /// Root of the filesystem the facts hwloc does not cover (cpufreq) are read from:
    /// `/` for the live machine, the snapshot root for snapshots, None for XML.
    pub fsroot: Option<PathBuf>,
    // Keeps an unpacked archive alive as long as the topology.
    _unpacked: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("source", &self.source)
            .field("fsroot", &self.fsroot)
            .finish_non_exhaustive()
    }
}

/// hwloc reads `HWLOC_FSROOT` from the environment while it loads; this lock makes
/// setting and using it atomic with respect to other loads in this process.
static ENV_LOCK: Mutex<()> = Mutex::new(());

/// hwloc's plugins for I/O discovery (PCI, OpenCL, OpenGL). numalab keeps no I/O
/// objects (hwloc's default I/O filter drops them), so these plugins never contribute;
/// loading them (and the libraries they link) is about a quarter of a live discovery
/// (1.2 ms of 4.3 ms for `numalab topo` on a 2-vCPU guest).
const UNUSED_PLUGINS: &str = "hwloc_pci,hwloc_opencl,hwloc_gl";

/// hwloc's libxml2-based XML plugin, which pulls in libxml2, ICU and libstdc++ (0.6 ms
/// more). A live discovery reads no XML, and hwloc's built-in parser reads and writes
/// hwloc's own XML the same (checked on every topology fixture, hwloc 1 to 3 formats).
const LIBXML_PLUGIN: &str = "hwloc_xml_libxml";

/// Keeps hwloc from loading [`UNUSED_PLUGINS`] (and [`LIBXML_PLUGIN`] when the first
/// topology of the process is the live machine), unless the user set
/// `HWLOC_PLUGINS_BLACKLIST` themselves. hwloc reads it when it first loads its
/// components; callers hold `ENV_LOCK`.
fn skip_unused_plugins(live: bool) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("HWLOC_PLUGINS_BLACKLIST").is_none() {
            let list = if live {
                format!("{UNUSED_PLUGINS},{LIBXML_PLUGIN}")
            } else {
                UNUSED_PLUGINS.to_string()
            };
            std::env::set_var("HWLOC_PLUGINS_BLACKLIST", list);
        }
    });
}

/// A builder that keeps what numalab describes and hwloc drops by default:
/// instruction caches and memory-side caches.
fn builder(live: bool) -> Result<TopologyBuilder, String> {
    skip_unused_plugins(live);
    Topology::builder()
        .with_cpu_icache_type_filter(TypeFilter::KeepAll)
        .map_err(|e| e.to_string())?
        .with_type_filter(ObjectType::MemCache, TypeFilter::KeepAll)
        .map_err(|e| e.to_string())
}

/// Loads a topology.
pub fn load(input: &Input) -> Result<Loaded, TopoError> {
    match input {
        Input::Live => load_in_process(input),
        Input::Xml(path) => {
            crate::isolate::check(crate::isolate::Kind::Xml, path, path)?;
            load_in_process(input)
        }
        Input::SnapshotDir(path) => {
            crate::isolate::check(crate::isolate::Kind::SnapshotDir, path, path)?;
            load_in_process(input)
        }
        Input::SnapshotArchive(path) => {
            // Unpacked here (bounded, in Rust), then checked in a child, then loaded.
            let dir = unpack(path)?;
            crate::isolate::check(crate::isolate::Kind::SnapshotDir, dir.path(), path)?;
            let root = find_snapshot_root(path, dir.path())?;
            load_snapshot(path, &root, Some(dir))
        }
    }
}

/// [`load`] without the child-process check ([`crate::isolate`]): what the child itself
/// runs.
pub fn load_in_process(input: &Input) -> Result<Loaded, TopoError> {
    match input {
        Input::Live => {
            let _guard = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
            let topology = builder(true)
                .and_then(|b| b.build().map_err(|e| e.to_string()))
                .map_err(|e| TopoError::Hwloc {
                    what: "this machine".into(),
                    detail: e,
                    remedy: "check that /sys and /proc are mounted and readable".into(),
                })?;
            Ok(Loaded {
                topology,
                source: MachineSource::Live,
                fsroot: Some(PathBuf::from("/")),
                _unpacked: None,
            })
        }
        Input::Xml(path) => load_xml(path),
        Input::SnapshotDir(path) => {
            let root = find_snapshot_root(path, path)?;
            load_snapshot(path, &root, None)
        }
        Input::SnapshotArchive(path) => {
            let dir = unpack(path)?;
            let root = find_snapshot_root(path, dir.path())?;
            load_snapshot(path, &root, Some(dir))
        }
    }
}

fn load_xml(path: &Path) -> Result<Loaded, TopoError> {
    let bad = |reason: String| TopoError::BadInput {
        path: path.to_path_buf(),
        reason,
    };
    let bytes = numalab_schema::input::read(
        path,
        "a topology (hwloc XML)",
        numalab_schema::input::TOPOLOGY,
    )
    .map_err(|e| TopoError::BadInput {
        path: path.to_path_buf(),
        reason: e.reason,
    })?;
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(bad(
            "the file is empty; export a topology with `numalab topo --export-xml FILE` or `lstopo FILE.xml`".into(),
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    let start = text.trim_start();
    if !start.starts_with('<') {
        return Err(bad(
            "this is not XML (nor a directory or .tar.bz2/.tar.gz snapshot); give an hwloc XML file".into(),
        ));
    }
    let Some(tag_pos) = text.find("<topology") else {
        return Err(bad(
            "this XML has no <topology> element: it was not written by hwloc".into(),
        ));
    };
    let tag_end = text[tag_pos..].find('>').map(|e| tag_pos + e);
    let tag = &text[tag_pos..tag_end.unwrap_or(text.len())];
    if let Some(version) = attribute(tag, "version") {
        let major: u32 = version
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        if major >= 3 {
            return Err(bad(format!(
                "written by hwloc 3.x (XML version {version}), which this hwloc {} cannot import; \
                 re-export it on the source machine with hwloc 2.x (`lstopo --of xml` from hwloc 2), \
                 or, if it has no 3.x-only content, change version=\"{version}\" to version=\"2.0\" in its <topology> tag",
                runtime_hwloc_version()
            )));
        }
    }
    if !text.contains("</topology>") {
        return Err(bad(
            "the XML is truncated (no closing </topology>); copy the whole file again".into(),
        ));
    }
    let _guard = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let builder = builder(false)
        .map_err(|e| bad(format!("hwloc refused the settings ({e})")))?
        .from_xml_file(path)
        .map_err(|e| bad(format!("hwloc refused the path ({e})")))?;
    let topology = builder.build().map_err(|e| TopoError::Hwloc {
        what: path.display().to_string(),
        detail: e.to_string(),
        remedy: "the XML is malformed; re-export it with `lstopo FILE.xml` or `numalab topo --export-xml FILE`".into(),
    })?;
    Ok(Loaded {
        topology,
        source: MachineSource::HwlocXml {
            path: path.display().to_string(),
        },
        fsroot: None,
        _unpacked: None,
    })
}

/// Value of `name="..."` in a tag, if present.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = tag[start..].find('"')? + start;
    Some(&tag[start..end])
}

/// The version of the hwloc library loaded at run time, e.g. "2.9.0".
///
/// `hwloc_get_api_version` only gives the API level (2.8.0 for hwloc 2.9), so the
/// release is read from the `hwlocVersion` info of a one-PU synthetic topology.
pub fn runtime_hwloc_version() -> String {
    let release = Topology::builder()
        .from_synthetic("pu:1")
        .ok()
        .and_then(|b| b.build().ok())
        .and_then(|t| {
            t.root_object()
                .info("hwlocVersion")
                .map(|v| v.to_string_lossy().to_string())
        });
    release.unwrap_or_else(|| {
        let v = hwlocality::hwloc_api_version();
        format!("API {}.{}", v >> 16, (v >> 8) & 0xff)
    })
}

/// Unpacks a snapshot archive with the bounds [`load`] applies and finds its root,
/// without handing it to hwloc: the part of loading that numalab implements itself
/// (for fuzzing). Other inputs pass.
pub fn unpack_only(input: &Input) -> Result<(), TopoError> {
    if let Input::SnapshotArchive(p) = input {
        let dir = unpack(p)?;
        find_snapshot_root(p, dir.path())?;
    }
    Ok(())
}

/// What unpacking a snapshot archive returns when Ctrl-C or SIGTERM stops it (polled
/// between members).
pub const UNPACK_INTERRUPTED: numalab_schema::interrupt::Interrupted =
    numalab_schema::interrupt::Interrupted {
        during: "unpacking the snapshot archive",
        left: "its unpacked copy was removed",
    };

/// Unpacks a snapshot archive into a temporary folder (in /dev/shm unless TMPDIR is set)
/// that is removed when the returned guard drops: on any error, on Ctrl-C or SIGTERM
/// (polled between members), or after the load. A member that is a FIFO or a device is
/// refused by name; links are left to [`check_tree`].
fn unpack(path: &Path) -> Result<tempfile::TempDir, TopoError> {
    let bad = |reason: String| TopoError::BadInput {
        path: path.to_path_buf(),
        reason,
    };
    let file = std::fs::File::open(path).map_err(|e| TopoError::Unreadable {
        path: path.to_path_buf(),
        reason: io_reason(&e),
    })?;
    let mut magic = [0u8; 3];
    let n = (&file).read(&mut magic).unwrap_or(0);
    if n == 0 {
        return Err(bad("the archive is empty (0 bytes); gather the snapshot again with `hwloc-gather-topology`".into()));
    }
    let file = std::fs::File::open(path).map_err(|e| TopoError::Unreadable {
        path: path.to_path_buf(),
        reason: io_reason(&e),
    })?;
    let reader: Box<dyn Read> = if magic.starts_with(b"BZh") {
        Box::new(bzip2::read::BzDecoder::new(file))
    } else if magic.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    // A snapshot is thousands of tiny files; creating them on a journaling disk can
    // take seconds, on tmpfs a fraction of that. Use /dev/shm unless TMPDIR is set.
    let mut builder = tempfile::Builder::new();
    builder.prefix("numalab-snapshot-");
    let shm = Path::new("/dev/shm");
    let use_shm = std::env::var_os("TMPDIR").is_none() && shm.is_dir();
    let dir = if use_shm {
        builder.tempdir_in(shm).or_else(|_| builder.tempdir())
    } else {
        builder.tempdir()
    }
    .map_err(|e| {
        bad(format!(
            "cannot create a temporary folder to unpack it ({e})"
        ))
    })?;
    let mut archive = tar::Archive::new(reader);
    archive.set_preserve_permissions(false);
    archive.set_overwrite(true);
    // Entry by entry, counting files and bytes so that a decompression bomb stops at
    // the limit; `unpack_in` refuses entries that would land outside the destination.
    let damaged = |e: std::io::Error| {
        bad(format!(
            "cannot unpack the archive ({e}); it is damaged or not a tar archive"
        ))
    };
    let max_bytes = numalab_schema::input::limit(numalab_schema::input::ARCHIVE_UNPACKED);
    let max_entries = numalab_schema::input::ARCHIVE_ENTRIES;
    let (mut entries, mut bytes) = (0u64, 0u64);
    for entry in archive.entries().map_err(damaged)? {
        let mut entry = entry.map_err(damaged)?;
        // Ctrl-C or SIGTERM: the unpacked part goes with `dir` on the way out.
        UNPACK_INTERRUPTED.check()?;
        entries += 1;
        bytes = bytes.saturating_add(entry.header().size().unwrap_or(0));
        if entries > max_entries {
            return Err(bad(format!(
                "the archive holds more than {max_entries} files, far more than a sysfs snapshot; check that this is one (`hwloc-gather-topology` output)"
            )));
        }
        let kind = entry.header().entry_type();
        if kind.is_fifo() || kind.is_character_special() || kind.is_block_special() {
            return Err(bad(format!(
                "{}: a {} entry; a snapshot holds only folders, files and links (make one with `hwloc-gather-topology`)",
                entry
                    .path()
                    .map(|p| numalab_schema::text::path_text(&p))
                    .unwrap_or_default(),
                if kind.is_fifo() { "FIFO" } else { "device" }
            )));
        }
        if bytes > max_bytes {
            return Err(bad(format!(
                "the archive unpacks to more than {}, far more than a sysfs snapshot; check that this is one, or raise the limit with {}",
                numalab_schema::units::bytes(max_bytes),
                numalab_schema::input::ENV
            )));
        }
        entry.unpack_in(dir.path()).map_err(damaged)?;
    }
    let empty = std::fs::read_dir(dir.path())
        .map(|mut d| d.next().is_none())
        .unwrap_or(true);
    if empty {
        return Err(bad(
            "the archive holds no files; gather the snapshot again with `hwloc-gather-topology`"
                .into(),
        ));
    }
    Ok(dir)
}

/// The folder of a snapshot that holds `sys/` (the folder itself or its only subfolder).
fn find_snapshot_root(input: &Path, dir: &Path) -> Result<PathBuf, TopoError> {
    let is_root = |d: &Path| d.join("sys/devices/system").is_dir();
    if is_root(dir) {
        return Ok(dir.to_path_buf());
    }
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| TopoError::Unreadable {
            path: input.to_path_buf(),
            reason: io_reason(&e),
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    if let [only] = entries.as_slice() {
        if is_root(only) {
            return Ok(only.clone());
        }
    }
    Err(TopoError::BadInput {
        path: input.to_path_buf(),
        reason: "no sys/devices/system folder found: this is not a sysfs snapshot (make one with `hwloc-gather-topology NAME` on the machine to describe)".into(),
    })
}

/// Checks a snapshot's tree before hwloc reads it: only folders, regular files and
/// links that stay inside the snapshot. A FIFO, socket or device would block or read
/// another thing than a file (a FIFO blocked `topo --input` forever); an absolute link,
/// or one climbing out of the snapshot, would read this machine's files instead of the
/// other machine's (a `cpu0` link loop once gave "Kunpeng 920, x86_64" with this host's
/// kernel mixed in); a link loop is refused by name.
pub fn check_tree(input: &Path, root: &Path) -> Result<(), TopoError> {
    use std::os::unix::fs::FileTypeExt;
    let bad = |rel: &Path, what: String| {
        TopoError::BadInput {
        path: input.to_path_buf(),
        reason: format!(
            "{}: {what}; a snapshot holds only folders, files and links inside it (make one with `hwloc-gather-topology`)",
            numalab_schema::text::path_text(rel)
        ),
    }
    };
    let special = |t: std::fs::FileType| {
        if t.is_fifo() {
            Some("a FIFO (named pipe)")
        } else if t.is_socket() {
            Some("a socket")
        } else if t.is_char_device() || t.is_block_device() {
            Some("a device")
        } else {
            None
        }
    };
    let max_entries = numalab_schema::input::ARCHIVE_ENTRIES;
    let mut seen = 0u64;
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| TopoError::Unreadable {
            path: dir.clone(),
            reason: io_reason(&e),
        })?;
        for e in entries {
            let e = e.map_err(|e| TopoError::Unreadable {
                path: dir.clone(),
                reason: io_reason(&e),
            })?;
            seen += 1;
            if seen > max_entries {
                return Err(bad(
                    Path::new("."),
                    format!("more than {max_entries} entries, far more than a sysfs snapshot"),
                ));
            }
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            let meta = std::fs::symlink_metadata(&path).map_err(|e| TopoError::Unreadable {
                path: path.clone(),
                reason: io_reason(&e),
            })?;
            let t = meta.file_type();
            if t.is_dir() {
                todo.push(path);
                continue;
            }
            if let Some(what) = special(t) {
                return Err(bad(&rel, format!("is {what}")));
            }
            if !t.is_symlink() {
                continue;
            }
            let target = std::fs::read_link(&path).map_err(|e| TopoError::Unreadable {
                path: path.clone(),
                reason: io_reason(&e),
            })?;
            if target.is_absolute() {
                return Err(bad(
                    &rel,
                    format!(
                        "a link to {}, outside the snapshot (it would read this machine's files)",
                        numalab_schema::text::path_text(&target)
                    ),
                ));
            }
            // Lexically, from the link's folder: never above the snapshot's root.
            let mut depth = rel.components().count() as i64 - 1;
            for c in target.components() {
                match c {
                    std::path::Component::ParentDir => depth -= 1,
                    std::path::Component::Normal(_) => depth += 1,
                    _ => {}
                }
                if depth < 0 {
                    return Err(bad(
                        &rel,
                        format!(
                            "a link to {}, which climbs out of the snapshot",
                            numalab_schema::text::path_text(&target)
                        ),
                    ));
                }
            }
            match std::fs::metadata(&path) {
                Ok(m) => {
                    if let Some(what) = special(m.file_type()) {
                        return Err(bad(&rel, format!("a link to {what}")));
                    }
                }
                Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                    return Err(bad(
                        &rel,
                        "a link that loops (it points back at itself)".into(),
                    ));
                }
                // A dangling link reads as a missing file, as hwloc expects of sysfs.
                Err(_) => {}
            }
        }
    }
    Ok(())
}

fn load_snapshot(
    input: &Path,
    root: &Path,
    unpacked: Option<tempfile::TempDir>,
) -> Result<Loaded, TopoError> {
    check_tree(input, root)?;
    // Without its CPU folder hwloc falls back to this host's facts and describes 0
    // packages: not a snapshot to describe (issue 50's campaign).
    if !root.join("sys/devices/system/cpu").is_dir() {
        return Err(TopoError::BadInput {
            path: input.to_path_buf(),
            reason: "an incomplete sysfs snapshot: it has no sys/devices/system/cpu folder; gather it again with `hwloc-gather-topology`".into(),
        });
    }
    let _guard = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let cpuid = root.join("cpuid");
    let has_cpuid = cpuid.is_dir();
    // hwloc reads these while loading; the lock above serializes every load in this
    // process, and they are removed again before the lock is released.
    std::env::set_var("HWLOC_FSROOT", root);
    if has_cpuid {
        std::env::set_var("HWLOC_CPUID_PATH", &cpuid);
    }
    let result = (|| {
        let mut builder = builder(false)?;
        if !has_cpuid {
            // Without dumped CPUID data the x86 backend would describe *this* CPU.
            builder = builder
                .without_component("x86")
                .map_err(|e| e.to_string())?;
        }
        builder.build().map_err(|e| e.to_string())
    })();
    std::env::remove_var("HWLOC_FSROOT");
    std::env::remove_var("HWLOC_CPUID_PATH");
    let topology = result.map_err(|detail| TopoError::Hwloc {
        what: input.display().to_string(),
        detail,
        remedy: "the snapshot is incomplete; gather it again with `hwloc-gather-topology`".into(),
    })?;
    Ok(Loaded {
        topology,
        source: MachineSource::Snapshot {
            path: input.display().to_string(),
        },
        fsroot: Some(root.to_path_buf()),
        _unpacked: unpacked,
    })
}

/// Builds a topology from an hwloc synthetic description, e.g.
/// `"pack:2 numa:1 core:80 pu:1"` (a 2 x 80-core machine with one NUMA node per
/// package). Used to test plans on machines no fixture describes; the description is
/// recorded as a model source (`hwloc synthetic: ...`).
pub fn load_synthetic(description: &str) -> Result<Loaded, TopoError> {
    let what = format!("hwloc synthetic topology {description:?}");
    let _guard = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let topology = builder(false)
        .and_then(|b| b.from_synthetic(description).map_err(|e| e.to_string()))
        .and_then(|b| b.build().map_err(|e| e.to_string()))
        .map_err(|detail| TopoError::Hwloc {
            what,
            detail,
            remedy: "check the description against hwloc's synthetic syntax (e.g. \"pack:2 numa:1 core:80 pu:1\")".into(),
        })?;
    Ok(Loaded {
        topology,
        source: MachineSource::Model {
            preset: format!("hwloc synthetic: {description}"),
        },
        fsroot: None,
        _unpacked: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_path_is_this_machine_a_path_is_looked_at() {
        assert_eq!(Input::given_or_live(None).unwrap(), Input::Live);
        assert!(Input::given_or_live(Some(Path::new("/nonexistent/topo.xml"))).is_err());
    }

    /// Issue 50: a snapshot whose `cpu0` is a link loop exited 0 describing a mix of the
    /// snapshot and this host; the tree check refuses it (exit 3) naming the link, for
    /// a link to itself and a loop of two links alike, before hwloc reads anything.
    #[test]
    fn snapshot_whose_cpu0_is_a_symlink_loop_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let cpu = root.join("sys/devices/system/cpu");
        std::fs::create_dir_all(cpu.join("cpu1")).unwrap();
        std::fs::write(cpu.join("online"), "0-1\n").unwrap();
        assert!(check_tree(root, root).is_ok());
        std::os::unix::fs::symlink("cpu0", cpu.join("cpu0")).unwrap();
        let e = check_tree(root, root).unwrap_err();
        assert!(matches!(e, TopoError::BadInput { .. }), "{e}");
        assert_eq!(
            numalab_schema::Classify::class(&e),
            numalab_schema::ErrorClass::Input
        );
        let t = e.to_string();
        assert!(
            t.contains("sys/devices/system/cpu/cpu0") && t.contains("loops"),
            "{t}"
        );
        // Two links pointing at each other.
        std::fs::remove_file(cpu.join("cpu0")).unwrap();
        std::fs::remove_dir(cpu.join("cpu1")).unwrap();
        std::os::unix::fs::symlink("cpu1", cpu.join("cpu0")).unwrap();
        std::os::unix::fs::symlink("cpu0", cpu.join("cpu1")).unwrap();
        let t = check_tree(root, root).unwrap_err().to_string();
        assert!(t.contains("loops"), "{t}");
    }

    /// A tar archive at `path` of a minimal snapshot (`cpu/online` a file) plus `extra`
    /// members: (path, header type, link target).
    fn archive(path: &Path, extra: &[(&str, tar::EntryType, &str)]) {
        let mut b = tar::Builder::new(std::fs::File::create(path).unwrap());
        let mut file = |name: &str, data: &[u8]| {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_entry_type(tar::EntryType::Regular);
            b.append_data(&mut h, name, data).unwrap();
        };
        file("snap/sys/devices/system/cpu/possible", b"0\n");
        for (name, kind, target) in extra {
            let mut h = tar::Header::new_gnu();
            h.set_size(0);
            h.set_mode(0o644);
            h.set_entry_type(*kind);
            if kind.is_symlink() {
                b.append_link(&mut h, name, target).unwrap();
            } else {
                b.append_data(&mut h, name, std::io::empty()).unwrap();
            }
        }
        b.finish().unwrap();
    }

    fn fifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    /// Issue 50: an archive member that is a FIFO or a device, or a link (absolute, or
    /// climbing out of the snapshot) to a FIFO, is refused as bad input naming the
    /// member, without reading it (a FIFO read would block forever).
    #[test]
    fn archive_members_that_are_or_point_to_fifos_or_devices_are_refused_by_name() {
        use tar::EntryType;
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("pipe");
        fifo(&pipe);
        let online = "snap/sys/devices/system/cpu/online";
        let cases: Vec<(&str, EntryType, String, &str)> = vec![
            (online, EntryType::Fifo, String::new(), "a FIFO entry"),
            (online, EntryType::Char, String::new(), "a device entry"),
            (online, EntryType::Block, String::new(), "a device entry"),
            (
                online,
                EntryType::Symlink,
                pipe.display().to_string(),
                "outside the snapshot",
            ),
            (
                online,
                EntryType::Symlink,
                format!("../../../../../..{}", pipe.display()),
                "climbs out of the snapshot",
            ),
        ];
        for (i, (name, kind, target, says)) in cases.into_iter().enumerate() {
            let tarball = dir.path().join(format!("case{i}.tar"));
            archive(&tarball, &[(name, kind, &target)]);
            let e = load(&Input::SnapshotArchive(tarball))
                .err()
                .unwrap_or_else(|| panic!("case {i} ({kind:?} {target}) was loaded"));
            assert_eq!(
                numalab_schema::Classify::class(&e),
                numalab_schema::ErrorClass::Input,
                "{e}"
            );
            let t = e.to_string();
            assert!(
                t.contains("sys/devices/system/cpu/online") && t.contains(says),
                "case {i}: {t}"
            );
        }
    }

    /// A snapshot folder holding a FIFO where sysfs has a file is refused naming it, at
    /// once (hwloc would block on it).
    #[test]
    fn a_snapshot_folder_holding_a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let cpu = dir.path().join("sys/devices/system/cpu");
        std::fs::create_dir_all(&cpu).unwrap();
        fifo(&cpu.join("online"));
        let Err(e) = load(&Input::SnapshotDir(dir.path().to_path_buf())) else {
            panic!("a FIFO in the snapshot was loaded");
        };
        let t = e.to_string();
        assert!(
            t.contains("sys/devices/system/cpu/online") && t.contains("a FIFO"),
            "{t}"
        );
    }

    /// The stop at Ctrl-C or SIGTERM is its own class: exit 130, not bad input.
    #[test]
    fn an_interrupted_unpack_exits_130_and_says_the_copy_is_gone() {
        let e = TopoError::from(UNPACK_INTERRUPTED);
        assert_eq!(numalab_schema::Classify::class(&e).exit_code(), 130);
        assert_eq!(
            e.to_string(),
            "interrupted (Ctrl-C, SIGTERM) while unpacking the snapshot archive; its unpacked copy was removed"
        );
    }

    /// Issue 50's campaign: a snapshot with no CPU folder (here only a node folder
    /// linking back to the snapshot's sys) described this host with 0 packages, exit 0.
    #[test]
    fn snapshot_without_its_cpu_folder_is_refused_before_hwloc_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sys/devices/system")).unwrap();
        std::os::unix::fs::symlink("../../../sys", root.join("sys/devices/system/node")).unwrap();
        let Err(e) = load_snapshot(root, root, None) else {
            panic!("a snapshot without its CPU folder was loaded");
        };
        assert!(matches!(e, TopoError::BadInput { .. }), "{e}");
        assert!(
            e.to_string().contains("no sys/devices/system/cpu folder"),
            "{e}"
        );
    }

    #[test]
    fn attribute_parsing() {
        assert_eq!(
            attribute("<topology version=\"3.0\">", "version"),
            Some("3.0")
        );
        assert_eq!(attribute("<topology>", "version"), None);
    }
}
