//! The host side: build the initramfs, boot the guest under QEMU, collect the results.
//!
//! Everything comes from Debian packages already on the host (qemu-system-x86 or
//! qemu-system-arm, linux-image-amd64, busybox-static, cpio; for the Arm guest the
//! arm64 kernel, its two virtio modules and busybox-static:arm64 that
//! `scripts/test-numa.sh --arch aarch64` unpacks) and from this build (numalab and the
//! `numa-guest` binary, cross-built for an Arm guest); nothing is downloaded here. The
//! initramfs holds busybox, the two binaries (debug info stripped when `strip` exists),
//! every shared library they need (plus the dynamic loader: `ldd` lists them for a
//! native guest, `readelf`'s NEEDED entries resolved in the multiarch folders for a
//! foreign one), an `/init` script and the guest's configuration. QEMU runs with a hard timeout and is killed on every exit path: on
//! timeout, when the driver returns or panics (a drop guard), and when the driver
//! itself dies (PR_SET_PDEATHSIG).

use crate::guest::GuestConfig;
use crate::platform::{Arch, Boot};
use crate::protocol::{self, Report};
use serde::Serialize;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How to run the guest.
#[derive(Debug, Clone)]
pub struct Options {
    /// The numalab binary to test (built for the guest's architecture).
    pub numalab: PathBuf,
    /// The `numa-guest` binary for inside the guest (default: this program; an Arm
    /// guest needs the aarch64 build).
    pub guest_exe: Option<PathBuf>,
    /// The guest kernel (default on x86: the newest Debian `/boot/vmlinuz-*-amd64`;
    /// required for an Arm guest).
    pub kernel: Option<PathBuf>,
    /// busybox for the guest (default on x86: the host's; required for an Arm guest:
    /// the static aarch64 build from busybox-static:arm64).
    pub busybox: Option<PathBuf>,
    /// A folder with the kernel modules the Arm guest loads for its results port
    /// (`virtio_mmio.ko`, `virtio_console.ko` of the same kernel).
    pub modules: Option<PathBuf>,
    /// QEMU accelerator: "tcg" (software, works everywhere) or "kvm".
    pub accel: String,
    /// Hard limit for the whole guest run.
    pub timeout: Duration,
    /// More words for the kernel command line, after the harness's own (empty: none).
    pub kernel_args: String,
    /// Keep the initramfs, console log and results here instead of a temporary folder.
    pub keep: Option<PathBuf>,
    /// Only checks whose name contains one of these comma-separated patterns.
    pub only: Option<String>,
    /// Echo the guest console live to stderr.
    pub verbose: bool,
    /// Write the files the checks exported here.
    pub export: Option<PathBuf>,
    /// The machine to emulate (architecture, CPU, layout, checks).
    pub boot: Boot,
}

/// The tools the run needs, found on the host.
#[derive(Debug, Clone, Serialize)]
pub struct Tools {
    /// qemu-system-x86_64 or qemu-system-aarch64.
    pub qemu: PathBuf,
    /// The guest kernel.
    pub kernel: PathBuf,
    /// busybox.
    pub busybox: PathBuf,
    /// cpio.
    pub cpio: PathBuf,
    /// `strip` for the guest's architecture (optional: without it binaries keep their
    /// debug info, and the Arm initramfs grows from about 50 to 180 MiB).
    pub strip: Option<PathBuf>,
    /// Kernel modules loaded by `/init` (Arm: the virtio console for the results).
    pub modules: Vec<PathBuf>,
}

/// What a run produced.
#[derive(Debug, Clone, Serialize)]
pub struct HostRun {
    /// The verdict on the guest's results.
    pub report: Report,
    /// The tools used.
    pub tools: Tools,
    /// Accelerator used.
    pub accel: String,
    /// How the kernel was booted: "pvh" (vmlinux extracted at test time) or "bzimage"
    /// (with the reason extraction was not used).
    pub kernel_boot: String,
    /// Whether the timeout cut the run.
    pub timed_out: bool,
    /// QEMU's exit code (None: killed).
    pub qemu_exit: Option<i32>,
    /// Time to build the initramfs, s.
    pub initramfs_build_s: f64,
    /// Size of the initramfs, bytes.
    pub initramfs_bytes: u64,
    /// Wall time from starting QEMU to its exit, s (boot + suite + power off).
    pub qemu_wall_s: f64,
    /// The guest console (kernel messages, init and the suite's human lines).
    pub console: String,
    /// What QEMU printed on stderr.
    pub qemu_stderr: String,
    /// The boot that ran.
    pub boot: String,
    /// Files the checks exported, where the host wrote them.
    pub exported: Vec<PathBuf>,
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn need(name: &str, package: &str) -> Result<PathBuf, String> {
    which(name).ok_or_else(|| {
        format!(
            "{name} not found: install the Debian package {package} (`scripts/deps.sh --test` does)"
        )
    })
}

/// Splits a version into numeric and text chunks, so 6.1.0-10 sorts after 6.1.0-9.
fn version_key(s: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        let mut chunk = String::new();
        let digit = c.is_ascii_digit();
        while let Some(&d) = chars.peek() {
            if d.is_ascii_digit() != digit {
                break;
            }
            chunk.push(d);
            chars.next();
        }
        out.push(if digit {
            (chunk.parse().unwrap_or(u64::MAX), String::new())
        } else {
            (0, chunk)
        });
    }
    out
}

/// Picks the guest kernel among `/boot/vmlinuz-*` names: the newest generic Debian
/// kernel (`-amd64`, not `-cloud-amd64` or `-rt-amd64`), else the newest of any.
pub fn pick_kernel(names: &[String]) -> Option<String> {
    let mut cands: Vec<&String> = names.iter().filter(|n| n.starts_with("vmlinuz-")).collect();
    cands.sort_by_key(|n| version_key(n));
    let generic = cands
        .iter()
        .rev()
        .find(|n| n.ends_with("-amd64") && !n.contains("-cloud-") && !n.contains("-rt-"));
    generic.or(cands.last()).map(|s| s.to_string())
}

/// The ELF machine of an executable (`e_machine`: 62 x86-64, 183 AArch64), if it is
/// a 64-bit little-endian ELF file.
pub fn elf_machine(path: &Path) -> Option<u16> {
    let mut head = [0u8; 20];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    (head[..4] == *b"\x7fELF" && head[4] == 2 && head[5] == 1)
        .then(|| u16::from_le_bytes([head[18], head[19]]))
}

/// Fails unless `path` is an executable for `arch`, naming the remedy.
pub fn expect_arch(path: &Path, what: &str, arch: Arch) -> Result<(), String> {
    let want = match arch {
        Arch::X86_64 => 62,
        Arch::Aarch64 => 183,
    };
    match elf_machine(path) {
        Some(m) if m == want => Ok(()),
        Some(m) => Err(format!(
            "{what} {} is built for ELF machine {m}, not {}: {}",
            path.display(),
            arch.name(),
            match arch {
                Arch::Aarch64 => "cross build it with scripts/cross-aarch64.sh",
                Arch::X86_64 => "build it natively with cargo",
            }
        )),
        None => Err(format!(
            "{what} {} is not a 64-bit little-endian ELF executable",
            path.display()
        )),
    }
}

/// Finds qemu, the kernel, busybox, cpio and (Arm) the modules, with a remedy for each
/// one missing.
pub fn find_tools(
    arch: Arch,
    kernel: Option<&Path>,
    busybox: Option<&Path>,
    modules: Option<&Path>,
) -> Result<Tools, String> {
    let mut missing = Vec::new();
    fn get(name: &str, package: &str, missing: &mut Vec<String>) -> Option<PathBuf> {
        need(name, package).map_err(|e| missing.push(e)).ok()
    }
    let (qemu_name, qemu_pkg) = arch.qemu();
    let qemu = get(qemu_name, qemu_pkg, &mut missing);
    let busybox = match (busybox, arch) {
        (Some(b), _) if b.is_file() => Some(b.to_path_buf()),
        (Some(b), _) => {
            missing.push(format!(
                "busybox {} does not exist (--busybox)",
                b.display()
            ));
            None
        }
        (None, Arch::X86_64) => get("busybox", "busybox-static", &mut missing),
        (None, Arch::Aarch64) => {
            missing.push("the Arm guest needs an aarch64 busybox (--busybox; scripts/test-numa.sh --arch aarch64 unpacks busybox-static:arm64)".into());
            None
        }
    };
    if let Some(b) = &busybox {
        if let Err(e) = expect_arch(b, "busybox", arch) {
            missing.push(e);
        }
    }
    let cpio = get("cpio", "cpio", &mut missing);
    let mut module_files = Vec::new();
    if arch == Arch::Aarch64 {
        match modules {
            Some(dir) => {
                for m in ["virtio_mmio.ko", "virtio_console.ko"] {
                    let p = dir.join(m);
                    if p.is_file() {
                        module_files.push(p);
                    } else {
                        missing.push(format!("{} is missing: the Arm guest's results port needs it (--modules: a folder with the guest kernel's virtio_mmio.ko and virtio_console.ko)", p.display()));
                    }
                }
            }
            None => missing.push("the Arm guest needs its kernel's virtio_mmio.ko and virtio_console.ko (--modules DIR; scripts/test-numa.sh --arch aarch64 unpacks them)".into()),
        }
    }
    let kernel = match kernel {
        Some(k) if k.is_file() => Some(k.to_path_buf()),
        Some(k) => {
            missing.push(format!(
                "the guest kernel {} does not exist (NUMALAB_GUEST_KERNEL / --kernel)",
                k.display()
            ));
            None
        }
        None if arch == Arch::Aarch64 => {
            missing.push("the Arm guest needs an arm64 kernel (--kernel / NUMALAB_GUEST_KERNEL; scripts/test-numa.sh --arch aarch64 unpacks Debian's linux-image-arm64)".into());
            None
        }
        None => {
            let names: Vec<String> = std::fs::read_dir("/boot")
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            match pick_kernel(&names) {
                Some(n) => Some(PathBuf::from("/boot").join(n)),
                None => {
                    missing.push("no kernel in /boot (vmlinuz-*): install the Debian package linux-image-amd64 (`scripts/deps.sh --test` does), or give one with NUMALAB_GUEST_KERNEL".into());
                    None
                }
            }
        }
    };
    if let Some(k) = &kernel {
        if let Err(e) = std::fs::File::open(k) {
            missing.push(format!(
                "cannot read the guest kernel {}: {e} (run as root, or give a readable copy with NUMALAB_GUEST_KERNEL)",
                k.display()
            ));
        }
    }
    match (qemu, kernel, busybox, cpio) {
        (Some(qemu), Some(kernel), Some(busybox), Some(cpio)) if missing.is_empty() => Ok(Tools {
            qemu,
            kernel,
            busybox,
            cpio,
            strip: arch.strip_tools().into_iter().find_map(which),
            modules: module_files,
        }),
        _ => Err(missing.join("\n")),
    }
}

/// The shared libraries (and loader) `ldd` lists, as absolute paths. Static
/// executables have none.
pub fn parse_ldd(text: &str) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.contains("not a dynamic executable") || line.contains("statically linked") {
            continue;
        }
        if line.contains("=> not found") {
            return Err(format!("a library is missing on the host: {line}"));
        }
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.trim(),
            None => line,
        };
        let path = path.split(" (").next().unwrap_or("").trim();
        if path.starts_with('/') {
            out.push(PathBuf::from(path));
        }
    }
    Ok(out)
}

fn ldd(bin: &Path) -> Result<Vec<PathBuf>, String> {
    let out = Command::new("ldd")
        .arg(bin)
        .output()
        .map_err(|e| format!("cannot run ldd: {e}"))?;
    // ldd exits 1 for static executables ("not a dynamic executable").
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    parse_ldd(&text).map_err(|e| format!("{}: {e}", bin.display()))
}

/// The `(NEEDED)` libraries and the program interpreter in `readelf -d -l` output.
pub fn parse_readelf(text: &str) -> (Vec<String>, Option<String>) {
    let mut needed = Vec::new();
    let mut interp = None;
    for line in text.lines() {
        if line.contains("(NEEDED)") {
            if let Some(name) = line.split('[').nth(1).and_then(|r| r.split(']').next()) {
                needed.push(name.to_string());
            }
        } else if let Some(rest) = line.split("program interpreter: ").nth(1) {
            interp = rest.split(']').next().map(str::to_string);
        }
    }
    (needed, interp)
}

/// The multiarch library folders of a foreign guest's architecture.
fn lib_dirs(arch: Arch) -> [PathBuf; 2] {
    let t = format!("{}-linux-gnu", arch.name());
    [
        PathBuf::from("/lib").join(&t),
        PathBuf::from("/usr/lib").join(&t),
    ]
}

/// The shared libraries (and loader) a foreign executable needs, found by following
/// its NEEDED entries through the multiarch folders (ldd cannot run it).
fn foreign_libs(bin: &Path, arch: Arch) -> Result<Vec<PathBuf>, String> {
    let readelf = |p: &Path| -> Result<(Vec<String>, Option<String>), String> {
        let out = Command::new("readelf")
            .args(["-d", "-l", "-W"])
            .arg(p)
            .output()
            .map_err(|e| format!("cannot run readelf (Debian package binutils): {e}"))?;
        Ok(parse_readelf(&String::from_utf8_lossy(&out.stdout)))
    };
    let dirs = lib_dirs(arch);
    let (mut todo, interp) = readelf(bin)?;
    let mut out = Vec::new();
    if let Some(i) = interp {
        out.push(PathBuf::from(i));
    }
    let mut seen = BTreeSet::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let path = dirs.iter().map(|d| d.join(&name)).find(|p| p.is_file()).ok_or_else(|| {
            format!(
                "{}: library {name} not found in {} (install the arm64 package that has it, e.g. libhwloc-dev:arm64; scripts/deps.sh --arm)",
                bin.display(),
                dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(" or ")
            )
        })?;
        todo.extend(readelf(&path)?.0);
        out.push(path);
    }
    Ok(out)
}

/// Copies `from` to `to` (mode 0755), through `strip --strip-debug` when a `strip` is
/// given; when it fails (a `strip` that cannot read the file's architecture), says so on
/// stderr and copies the file as it is. Returns whether it was stripped.
fn copy_file(from: &Path, to: &Path, strip: Option<&Path>) -> Result<bool, String> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let stripped = strip.is_some_and(|s| {
        Command::new(s)
            .arg("--strip-debug")
            .arg("-o")
            .arg(to)
            .arg(from)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|st| st.success())
    });
    if !stripped {
        if let Some(s) = strip {
            eprintln!(
                "numa-guest: {} could not strip {}: it goes into the initramfs with its debug info",
                s.display(),
                from.display()
            );
        }
        std::fs::copy(from, to)
            .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))?;
    }
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", to.display()))?;
    Ok(stripped)
}

/// The guest's `/init`: mount the kernel's filesystems, load the modules (`/lib/numa-guest-modules`,
/// Arm: the virtio console), wait for the results port, run the suite, power off.
pub fn init_script(lib_dirs: &[String], modules: &[String], results_port: &str) -> String {
    let mut load = String::new();
    for m in modules {
        load.push_str(&format!(
            "insmod /lib/numa-guest-modules/{m} || echo \"numa-guest: insmod {m} failed\"\n"
        ));
    }
    format!(
        r#"#!/bin/busybox sh
# numalab NUMA guest: mount the kernel's filesystems, run the suite, power off.
/bin/busybox mkdir -p /proc /sys /dev /tmp /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
export LD_LIBRARY_PATH={libs}
echo "numa-guest: init running at $(cut -d' ' -f1 /proc/uptime) s"
{load}i=0
while [ ! -e {port} ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
[ -e {port} ] || echo "numa-guest: the results port {port} did not appear"
/bin/numa-guest guest --config /numa-guest/config.json --results {port}
echo "numa-guest: suite exited with status $?"
poweroff -f
"#,
        libs = lib_dirs.join(":"),
        port = results_port,
    )
}

fn list_files(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(root.join(rel))?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let r = rel.join(e.file_name());
        out.push(r.clone());
        if e.file_type()?.is_dir() {
            list_files(root, &r, out)?;
        }
    }
    Ok(())
}

/// Builds the initramfs in `work`; returns its path and size.
pub fn build_initramfs(
    work: &Path,
    tools: &Tools,
    numalab: &Path,
    guest_exe: &Path,
    config: &GuestConfig,
) -> Result<(PathBuf, u64), String> {
    let arch = config.boot.arch;
    let root = work.join("root");
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    }
    let strip = tools.strip.as_deref();
    copy_file(&tools.busybox, &root.join("bin/busybox"), None)?;
    copy_file(numalab, &root.join("bin/numalab"), strip)?;
    copy_file(guest_exe, &root.join("bin/numa-guest"), strip)?;
    let mut libs = BTreeSet::new();
    for b in [
        &tools.busybox,
        &numalab.to_path_buf(),
        &guest_exe.to_path_buf(),
    ] {
        if arch == Arch::X86_64 && cfg!(target_arch = "x86_64") {
            libs.extend(ldd(b)?);
        } else {
            libs.extend(foreign_libs(b, arch)?);
        }
    }
    let mut module_names = Vec::new();
    for m in &tools.modules {
        let name = m
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        copy_file(m, &root.join("lib/numa-guest-modules").join(&name), None)?;
        module_names.push(name);
    }
    let mut lib_dirs = BTreeSet::new();
    for lib in &libs {
        let rel = lib.strip_prefix("/").expect("ldd paths are absolute");
        copy_file(lib, &root.join(rel), None)?;
        if let Some(d) = lib.parent() {
            lib_dirs.insert(d.display().to_string());
        }
    }
    let init = root.join("init");
    std::fs::write(
        &init,
        init_script(
            &lib_dirs.into_iter().collect::<Vec<_>>(),
            &module_names,
            arch.results_port(),
        ),
    )
    .map_err(|e| format!("{}: {e}", init.display()))?;
    std::fs::set_permissions(&init, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    let cfg_dir = root.join("numa-guest");
    std::fs::create_dir_all(&cfg_dir).map_err(|e| e.to_string())?;
    std::fs::write(
        cfg_dir.join("config.json"),
        serde_json::to_string_pretty(config).expect("config serializes"),
    )
    .map_err(|e| e.to_string())?;

    let mut files = Vec::new();
    list_files(&root, Path::new(""), &mut files).map_err(|e| e.to_string())?;
    let list: String = files.iter().map(|p| format!("{}\n", p.display())).collect();
    let image = work.join("initramfs.cpio");
    let out = std::fs::File::create(&image).map_err(|e| format!("{}: {e}", image.display()))?;
    let mut child = Command::new(&tools.cpio)
        .args(["-o", "-H", "newc", "--quiet", "-R", "0:0"])
        .current_dir(&root)
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cpio: {e}"))?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(list.as_bytes())
        .map_err(|e| format!("writing the file list to cpio: {e}"))?;
    let done = child.wait_with_output().map_err(|e| e.to_string())?;
    if !done.status.success() {
        return Err(format!(
            "cpio failed: {}",
            String::from_utf8_lossy(&done.stderr)
        ));
    }
    let size = std::fs::metadata(&image).map_err(|e| e.to_string())?.len();
    Ok((image, size))
}

/// The compressed kernel inside a bzImage (boot protocol 2.08+: `payload_offset` and
/// `payload_length` in the setup header).
pub fn bzimage_payload(data: &[u8]) -> Result<&[u8], String> {
    if data.len() < 0x250 || &data[0x202..0x206] != b"HdrS" {
        return Err("not a bzImage (no HdrS setup header)".into());
    }
    let u16_at = |o: usize| u16::from_le_bytes([data[o], data[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes([data[o], data[o + 1], data[o + 2], data[o + 3]]);
    if u16_at(0x206) < 0x208 {
        return Err(format!(
            "boot protocol {:#x} has no payload fields",
            u16_at(0x206)
        ));
    }
    let setup_sects = match data[0x1f1] {
        0 => 4,
        n => n as usize,
    };
    let start = (setup_sects + 1) * 512 + u32_at(0x248) as usize;
    let end = start + u32_at(0x24c) as usize;
    data.get(start..end)
        .ok_or_else(|| "the payload lies outside the file".into())
}

/// Whether an ELF64 kernel carries the PVH entry note (Xen note type 18), which QEMU
/// needs to boot it directly.
pub fn has_pvh_note(elf: &[u8]) -> bool {
    let u16_at = |o: usize| elf.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        elf.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |o: usize| {
        elf.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    if elf.get(0..5) != Some(&b"\x7fELF\x02"[..]) {
        return false;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return false;
    };
    for i in 0..phnum as usize {
        let ph = phoff as usize + i * phentsize as usize;
        if u32_at(ph) != Some(4) {
            continue; // not PT_NOTE
        }
        let (Some(off), Some(size)) = (u64_at(ph + 8), u64_at(ph + 32)) else {
            continue;
        };
        let (mut at, end) = (off as usize, (off + size) as usize);
        while at + 12 <= end {
            let (Some(namesz), Some(descsz), Some(kind)) =
                (u32_at(at), u32_at(at + 4), u32_at(at + 8))
            else {
                break;
            };
            let name = elf.get(at + 12..at + 12 + namesz as usize);
            if kind == 18 && name == Some(&b"Xen\0"[..]) {
                return true;
            }
            at += 12 + (namesz as usize).div_ceil(4) * 4 + (descsz as usize).div_ceil(4) * 4;
        }
    }
    false
}

/// Decompresses a Debian bzImage (xz) into an ELF `vmlinux` that QEMU boots through its
/// PVH entry, skipping the kernel's own decompression (about half the boot under TCG).
pub fn extract_vmlinux(bzimage: &Path, out: &Path) -> Result<(), String> {
    let data = std::fs::read(bzimage).map_err(|e| format!("{}: {e}", bzimage.display()))?;
    let payload = bzimage_payload(&data)?;
    if !payload.starts_with(b"\xfd7zXZ\0") {
        return Err("the kernel is not xz-compressed".into());
    }
    let xz = which("xz").ok_or("xz not found (Debian package xz-utils)")?;
    let file = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut child = Command::new(xz)
        .args(["-dc", "--single-stream"])
        .stdin(Stdio::piped())
        .stdout(file)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run xz: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    let owned = payload.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&owned));
    let done = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = writer.join();
    if !done.status.success() {
        return Err(format!(
            "xz failed: {}",
            String::from_utf8_lossy(&done.stderr).trim()
        ));
    }
    let elf = std::fs::read(out).map_err(|e| e.to_string())?;
    if !has_pvh_note(&elf) {
        return Err("the kernel has no PVH entry note (CONFIG_PVH)".into());
    }
    Ok(())
}

/// QEMU's arguments for this boot, kernel, initramfs and results file.
pub fn qemu_args(
    boot: &Boot,
    accel: &str,
    kernel: &Path,
    initramfs: &Path,
    results: &Path,
) -> Vec<String> {
    let cpu = if accel == "kvm" {
        "host"
    } else {
        boot.cpu.as_str()
    };
    // Arm: virt's default GICv2 takes at most 8 CPUs; more (the n1-wide server) need a
    // GICv3 ("exceeds max CPUs supported by machine 'mach-virt' (8)").
    let machine = match boot.arch {
        Arch::X86_64 => "q35",
        Arch::Aarch64 if boot.layout.cpu_count() > 8 => "virt,gic-version=3",
        Arch::Aarch64 => "virt",
    };
    let mut a: Vec<String> = [
        "-machine",
        machine,
        "-accel",
        accel,
        "-cpu",
        cpu,
        "-nodefaults",
        "-display",
        "none",
        "-no-reboot",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if boot.icount {
        // One instruction per virtual nanosecond, counted exactly (the emulated PMU's
        // INST_RETIRED then counts too); sleep=off lets idle time pass at once.
        a.extend(["-icount".to_string(), "shift=0,sleep=off".to_string()]);
    }
    a.extend(boot.layout.qemu_args());
    // numa_balancing=disable: the kernel must not move pages while checks look.
    // mitigations=off saves emulated work in a throwaway guest. x86: lpj skips the
    // delay-loop calibration (slow and noisy under TCG; x86 delays use the TSC).
    // x86: tsc=reliable keeps the TSC as the clocksource. Without it the kernel's
    // boot-time sync check sees the emulated vCPUs' TSCs "unsynchronized" (they are one
    // host counter read at different emulated moments) and falls back to the HPET, whose
    // every read is an MMIO exit under QEMU's global lock: with 32 or more vCPUs each
    // clock read (timers, the scheduler, clock_gettime, which the vDSO cannot serve from
    // the HPET) queues on that one lock.
    let mut cmdline = format!(
        "console={} quiet panic=-1 numa_balancing=disable mitigations=off",
        boot.arch.console()
    );
    if boot.arch == Arch::X86_64 {
        cmdline.push_str(" lpj=4000000 tsc=reliable");
    }
    a.extend([
        "-kernel".into(),
        kernel.display().to_string(),
        "-initrd".into(),
        initramfs.display().to_string(),
        "-append".into(),
        cmdline,
        // The console on stdout.
        "-serial".into(),
        "stdio".into(),
    ]);
    match boot.arch {
        // ttyS1: the results, to a file.
        Arch::X86_64 => a.extend(["-serial".into(), format!("file:{}", results.display())]),
        // virt has one UART: the results go to a virtio console (hvc0), to a file.
        Arch::Aarch64 => a.extend([
            "-device".into(),
            "virtio-serial-device".into(),
            "-chardev".into(),
            format!("file,id=results,path={}", results.display()),
            "-device".into(),
            "virtconsole,chardev=results".into(),
        ]),
    }
    a
}

/// A soft lockup at least this long (seconds) ends the guest's run as hung: the kernel
/// says so every ~26 s from 20 s stuck on, and no check recovers from 10 minutes of a
/// CPU stuck in the kernel (the 160-vCPU long mode waited 107 minutes on one).
pub const HUNG_LOCKUP_S: u64 = 600;

/// How long the kernel says a CPU has been stuck, from its soft lockup line ("watchdog:
/// BUG: soft lockup - CPU#80 stuck for 224s! [kworker/80:1:828]"), in seconds.
pub fn lockup_seconds(line: &str) -> Option<u64> {
    let rest = &line[line.find("soft lockup - CPU#")?..];
    let n = &rest[rest.find(" stuck for ")? + " stuck for ".len()..];
    let digits = n.split('s').next()?;
    digits.parse().ok()
}

/// Adds `extra` to the kernel command line in QEMU's arguments (after `-append`): later
/// words win over the harness's own (`loglevel=7` over `quiet`).
fn append_kernel_args(args: &mut [String], extra: &str) {
    let extra = extra.trim();
    if extra.is_empty() {
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "-append") {
        if let Some(line) = args.get_mut(i + 1) {
            line.push(' ');
            line.push_str(extra);
        }
    }
}

/// Kills QEMU when dropped (every exit path of the driver, panics included).
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// Builds, boots and judges. `Err` means the run could not be set up (a missing tool,
/// an unwritable folder); a guest that fails is an `Ok` whose report is not ok.
pub fn run(opts: &Options) -> Result<HostRun, String> {
    let arch = opts.boot.arch;
    opts.boot.layout.validate()?;
    if opts.accel != "tcg" && opts.accel != "kvm" {
        return Err(format!(
            "accelerator {:?}: use tcg or kvm (NUMALAB_GUEST_ACCEL)",
            opts.accel
        ));
    }
    if opts.accel == "kvm" && arch.name() != std::env::consts::ARCH {
        return Err(format!(
            "KVM cannot run a {} guest on this {} host: use tcg",
            arch.name(),
            std::env::consts::ARCH
        ));
    }
    let tools = find_tools(
        arch,
        opts.kernel.as_deref(),
        opts.busybox.as_deref(),
        opts.modules.as_deref(),
    )?;
    if !opts.numalab.is_file() {
        return Err(format!(
            "the numalab binary {} does not exist: build it first (`cargo build -p numalab`{})",
            opts.numalab.display(),
            if arch == Arch::Aarch64 {
                ", or scripts/cross-aarch64.sh for the Arm guest"
            } else {
                ""
            }
        ));
    }
    expect_arch(&opts.numalab, "the numalab binary", arch)?;
    let guest_exe = match &opts.guest_exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?,
    };
    expect_arch(
        &guest_exe,
        "the numa-guest binary for the guest (--guest-exe)",
        arch,
    )?;
    let tmp;
    let work = match &opts.keep {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
            d.clone()
        }
        None => {
            tmp = tempfile::Builder::new()
                .prefix("numa-guest-")
                .tempdir()
                .map_err(|e| format!("cannot create a temporary folder: {e}"))?;
            tmp.path().to_path_buf()
        }
    };
    let config = GuestConfig {
        boot: opts.boot.clone(),
        numalab: "/bin/numalab".into(),
        only: opts.only.clone(),
    };
    let t0 = Instant::now();
    let (image, initramfs_bytes) =
        build_initramfs(&work, &tools, &opts.numalab, &guest_exe, &config)?;
    let initramfs_build_s = t0.elapsed().as_secs_f64();
    let results = work.join("results.txt");
    let _ = std::fs::remove_file(&results);
    let vmlinux = work.join("vmlinux");
    let (kernel, kernel_boot) = match arch {
        Arch::X86_64 => match extract_vmlinux(&tools.kernel, &vmlinux) {
            Ok(()) => (vmlinux, "pvh".to_string()),
            Err(e) => (tools.kernel.clone(), format!("bzimage ({e})")),
        },
        Arch::Aarch64 => (tools.kernel.clone(), "arm64 Image".to_string()),
    };

    let mut args = qemu_args(&opts.boot, &opts.accel, &kernel, &image, &results);
    append_kernel_args(&mut args, &opts.kernel_args);
    let mut cmd = Command::new(&tools.qemu);
    cmd.args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; it makes the kernel kill QEMU if this
    // driver dies (even by SIGKILL), so no guest outlives its test.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", tools.qemu.display()))?;
    let mut guard = KillOnDrop(child);
    let stdout = guard.0.stdout.take().expect("piped");
    let mut stderr = guard.0.stderr.take().expect("piped");
    let verbose = opts.verbose;
    // A soft lockup this long is a hung guest: the run ends there, not at the timeout.
    let hung: Arc<Mutex<Option<String>>> = Arc::default();
    let console_t = {
        let hung = Arc::clone(&hung);
        std::thread::spawn(move || {
            let mut all = String::new();
            let mut r = BufReader::new(stdout);
            let mut buf = Vec::new();
            while let Ok(n) = r.read_until(b'\n', &mut buf) {
                if n == 0 {
                    break;
                }
                let line = String::from_utf8_lossy(&buf).replace('\r', "");
                if verbose {
                    eprint!("guest| {line}");
                }
                if lockup_seconds(&line).is_some_and(|s| s >= HUNG_LOCKUP_S) {
                    let mut h = hung.lock().unwrap_or_else(|e| e.into_inner());
                    h.get_or_insert_with(|| line.trim().to_string());
                }
                all.push_str(&line);
                buf.clear();
            }
            all
        })
    };
    let stderr_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = started + opts.timeout;
    let mut timed_out = false;
    let is_hung = || hung.lock().map(|h| h.is_some()).unwrap_or(false);
    let status = loop {
        match guard.0.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() >= deadline => {
                timed_out = true;
                let _ = guard.0.kill();
                break guard.0.wait().ok();
            }
            Ok(None) if is_hung() => {
                let _ = guard.0.kill();
                break guard.0.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for QEMU: {e}")),
        }
    };
    let qemu_wall_s = started.elapsed().as_secs_f64();
    drop(guard);
    let console = console_t.join().unwrap_or_default();
    let qemu_stderr = stderr_t.join().unwrap_or_default();
    let text = std::fs::read_to_string(&results).unwrap_or_default();
    let expected = crate::suite::planned_names(&opts.boot, opts.only.as_deref());
    let mut report = protocol::judge(&expected, &text);
    if timed_out {
        report.problems.push(format!(
            "the guest was killed after the {} s timeout (NUMALAB_GUEST_TIMEOUT)",
            opts.timeout.as_secs()
        ));
    }
    if let Some(line) = hung.lock().ok().and_then(|h| h.clone()) {
        report.problems.push(format!(
            "the guest's kernel hung, killed after {qemu_wall_s:.0} s of QEMU time: \"{line}\" \
             (a CPU {HUNG_LOCKUP_S} s or more in the kernel without scheduling; under TCG with \
             many vCPUs this has been the emulator, docs/numa-guest.md: rerun it, and with \
             NUMALAB_GUEST_KERNEL_ARGS=loglevel=7 -v to see the stuck CPU's backtrace)"
        ));
    }
    if let Some(keep) = &opts.keep {
        let _ = std::fs::write(keep.join("console.log"), &console);
    }
    let mut exported = Vec::new();
    let files = std::mem::take(&mut report.files);
    if !files.is_empty() {
        let dir = opts.export.clone().unwrap_or_else(|| work.join("exported"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (name, bytes) in files {
            let p = dir.join(&name);
            std::fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
            exported.push(p);
        }
    }
    Ok(HostRun {
        report,
        tools,
        accel: opts.accel.clone(),
        kernel_boot,
        timed_out,
        qemu_exit: status.and_then(|s| s.code()),
        initramfs_build_s,
        initramfs_bytes,
        qemu_wall_s,
        console,
        qemu_stderr,
        boot: opts.boot.name.clone(),
        exported,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has_debug_info(path: &Path) -> bool {
        let bytes = std::fs::read(path).unwrap();
        bytes.windows(11).any(|w| w == b".debug_info")
    }

    /// An aarch64 executable with debug info, built by Debian's cross compiler
    /// (gcc-aarch64-linux-gnu, which scripts/deps.sh --test installs with its binutils).
    fn aarch64_program(dir: &Path) -> PathBuf {
        let src = dir.join("p.c");
        std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
        let exe = dir.join("p");
        let out = Command::new("aarch64-linux-gnu-gcc")
            .arg("-g")
            .arg("-o")
            .arg(&exe)
            .arg(&src)
            .output()
            .expect("aarch64-linux-gnu-gcc (scripts/deps.sh --test installs it)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(has_debug_info(&exe), "gcc -g left no .debug_info");
        exe
    }

    #[test]
    fn arm_binaries_are_stripped_by_a_strip_that_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let exe = aarch64_program(dir.path());
        let strip = Arch::Aarch64
            .strip_tools()
            .into_iter()
            .find_map(which)
            .expect("a strip for aarch64 (binutils-aarch64-linux-gnu)");
        assert!(
            strip.ends_with("aarch64-linux-gnu-strip"),
            "the cross strip comes first: {}",
            strip.display()
        );
        let to = dir.path().join("out/p");
        assert!(copy_file(&exe, &to, Some(&strip)).unwrap());
        assert!(!has_debug_info(&to));
        let mode = std::fs::metadata(&to).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[test]
    fn a_strip_that_fails_leaves_an_exact_copy() {
        let dir = tempfile::tempdir().unwrap();
        let exe = aarch64_program(dir.path());
        let to = dir.path().join("out/p");
        let failing = which("false").expect("false(1)");
        assert!(!copy_file(&exe, &to, Some(&failing)).unwrap());
        assert_eq!(std::fs::read(&exe).unwrap(), std::fs::read(&to).unwrap());
        let mode = std::fs::metadata(&to).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        // No strip at all: the same copy, and nothing to say.
        let plain = dir.path().join("plain/p");
        assert!(!copy_file(&exe, &plain, None).unwrap());
        assert_eq!(std::fs::read(&exe).unwrap(), std::fs::read(&plain).unwrap());
    }

    #[test]
    fn ldd_output_is_parsed() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibhwloc.so.15 => /lib/x86_64-linux-gnu/libhwloc.so.15 (0x00007f60)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f60c56b8000)\n";
        assert_eq!(
            parse_ldd(text).unwrap(),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libhwloc.so.15"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
        assert!(parse_ldd("\tnot a dynamic executable\n")
            .unwrap()
            .is_empty());
        assert!(parse_ldd("\tlibudev.so.1 => not found\n")
            .unwrap_err()
            .contains("libudev"));
    }

    #[test]
    fn ldd_finds_this_programs_libraries() {
        // This test binary links libhwloc through numalab-topo.
        let libs = ldd(&std::env::current_exe().unwrap()).unwrap();
        assert!(
            libs.iter()
                .any(|l| l.to_string_lossy().contains("libhwloc")),
            "{libs:?}"
        );
        assert!(libs
            .iter()
            .any(|l| l.to_string_lossy().contains("ld-linux")));
    }

    #[test]
    fn the_newest_generic_kernel_is_picked() {
        let names: Vec<String> = [
            "config-6.1.0-9-amd64",
            "vmlinuz-6.1.0-9-amd64",
            "vmlinuz-6.1.0-10-amd64",
            "vmlinuz-6.1.0-12-cloud-amd64",
            "initrd.img-6.1.0-10-amd64",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(pick_kernel(&names).unwrap(), "vmlinuz-6.1.0-10-amd64");
        assert_eq!(
            pick_kernel(&["vmlinuz-6.1.0-12-cloud-amd64".to_string()]).unwrap(),
            "vmlinuz-6.1.0-12-cloud-amd64"
        );
        assert!(pick_kernel(&["config-6.1".to_string()]).is_none());
    }

    #[test]
    fn a_soft_lockup_line_says_how_long_the_cpu_was_stuck() {
        let l =
            "[  297.633825] watchdog: BUG: soft lockup - CPU#80 stuck for 224s! [kworker/80:1:828]";
        assert_eq!(lockup_seconds(l), Some(224));
        assert_eq!(
            lockup_seconds("watchdog: BUG: soft lockup - CPU#3 stuck for 601s! [numalab:91]"),
            Some(601)
        );
        assert_eq!(
            lockup_seconds("rcu: INFO: rcu_preempt detected stalls"),
            None
        );
        assert_eq!(lockup_seconds("soft lockup - CPU#1 stuck for xs!"), None);
        assert!(lockup_seconds(l).unwrap() < HUNG_LOCKUP_S);
    }

    #[test]
    fn extra_kernel_args_go_last_on_the_command_line() {
        let mut a = qemu_args(
            &Boot::x86(),
            "tcg",
            Path::new("/k"),
            Path::new("/i"),
            Path::new("/r"),
        );
        let before = a.clone();
        append_kernel_args(&mut a, "  ");
        assert_eq!(a, before, "blank adds nothing");
        append_kernel_args(&mut a, "loglevel=7 nohz=off");
        let i = a.iter().position(|w| w == "-append").unwrap();
        assert!(a[i + 1].starts_with("console=ttyS0 quiet "), "{}", a[i + 1]);
        assert!(
            a[i + 1].ends_with(" tsc=reliable loglevel=7 nohz=off"),
            "{}",
            a[i + 1]
        );
        assert_eq!(a.len(), before.len());
    }

    #[test]
    fn qemu_gets_two_serial_ports_and_the_numa_layout() {
        let a = qemu_args(
            &Boot::x86(),
            "tcg",
            Path::new("/boot/k"),
            Path::new("/w/i.cpio"),
            Path::new("/w/r.txt"),
        );
        let j = a.join(" ");
        assert!(j.contains("-accel tcg -cpu max,l3-cache=off"), "{j}");
        assert!(j.contains("-serial stdio -serial file:/w/r.txt"), "{j}");
        assert!(j.contains("numa_balancing=disable"));
        assert!(j.contains("-numa node,nodeid=4,memdev=m4"));
        let k = qemu_args(
            &Boot::x86(),
            "kvm",
            Path::new("/k"),
            Path::new("/i"),
            Path::new("/r"),
        );
        assert!(k.join(" ").contains("-accel kvm -cpu host"));
        assert!(
            j.contains("lpj=4000000 tsc=reliable") && !j.contains("-icount"),
            "{j}"
        );
    }

    #[test]
    fn the_arm_server_boots_virt_with_a_virtio_console_and_icount_when_asked() {
        let args = |b: &Boot| {
            qemu_args(
                b,
                "tcg",
                Path::new("/k"),
                Path::new("/i"),
                Path::new("/w/r.txt"),
            )
            .join(" ")
        };
        let n1 = args(&Boot::n1());
        assert!(
            n1.starts_with("-machine virt -accel tcg -cpu neoverse-n1 "),
            "{n1}"
        );
        assert!(n1.contains("-smp 4,sockets=2,cores=2,threads=1"), "{n1}");
        // More than 8 CPUs: a GICv3.
        let wide = args(
            &Boot::wide(
                Arch::Aarch64,
                crate::platform::Wide {
                    cpus: Some(64),
                    long: false,
                },
            )
            .unwrap(),
        );
        assert!(
            wide.starts_with("-machine virt,gic-version=3 -accel tcg -cpu neoverse-n1 "),
            "{wide}"
        );
        assert!(
            n1.contains("console=ttyAMA0") && !n1.contains("lpj="),
            "{n1}"
        );
        assert!(
            n1.contains(
                "-chardev file,id=results,path=/w/r.txt -device virtconsole,chardev=results"
            ),
            "{n1}"
        );
        assert_eq!(n1.matches("-serial ").count(), 1, "{n1}");
        assert!(!n1.contains("-icount"));
        let counting = args(&Boot::n1_icount());
        assert!(counting.contains("-icount shift=0,sleep=off"), "{counting}");
        assert!(args(&Boot::sve()).contains("-cpu max,pmu=off"));
    }

    #[test]
    fn readelf_output_gives_needed_libraries_and_the_interpreter() {
        let text = "Program Headers:\n      [Requesting program interpreter: /lib/ld-linux-aarch64.so.1]\nDynamic section at offset 0x1 contains 30 entries:\n 0x0000000000000001 (NEEDED)             Shared library: [libhwloc.so.15]\n 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]\n 0x000000000000000e (SONAME)             Library soname: [x.so]\n";
        let (needed, interp) = parse_readelf(text);
        assert_eq!(needed, ["libhwloc.so.15", "libc.so.6"]);
        assert_eq!(interp.as_deref(), Some("/lib/ld-linux-aarch64.so.1"));
        assert_eq!(parse_readelf("static\n"), (Vec::new(), None));
    }

    #[test]
    fn a_binary_for_the_wrong_architecture_is_refused_with_the_remedy() {
        let me = std::env::current_exe().unwrap();
        let native = Arch::parse(std::env::consts::ARCH).unwrap();
        expect_arch(&me, "this test", native).unwrap();
        let other = match native {
            Arch::X86_64 => Arch::Aarch64,
            Arch::Aarch64 => Arch::X86_64,
        };
        let e = expect_arch(&me, "this test", other).unwrap_err();
        assert!(e.contains("ELF machine") && e.contains(other.name()), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x");
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        assert!(expect_arch(&f, "x", native)
            .unwrap_err()
            .contains("not a 64-bit"));
    }

    #[test]
    fn the_init_script_runs_the_suite_and_powers_off() {
        let s = init_script(
            &["/lib/x86_64-linux-gnu".into(), "/lib64".into()],
            &[],
            "/dev/ttyS1",
        );
        assert!(s.starts_with("#!/bin/busybox sh\n"));
        assert!(s.contains("LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/lib64"));
        assert!(s.contains("--results /dev/ttyS1"));
        assert!(!s.contains("insmod"));
        assert!(s.trim_end().ends_with("poweroff -f"));
        let arm = init_script(
            &[],
            &["virtio_mmio.ko".into(), "virtio_console.ko".into()],
            "/dev/hvc0",
        );
        let mmio = arm
            .find("insmod /lib/numa-guest-modules/virtio_mmio.ko")
            .unwrap();
        let console = arm
            .find("insmod /lib/numa-guest-modules/virtio_console.ko")
            .unwrap();
        let suite = arm.find("--results /dev/hvc0").unwrap();
        assert!(mmio < console && console < suite, "{arm}");
    }

    /// A minimal ELF64 with one PT_NOTE segment holding one note.
    fn elf_with_note(name: &[u8], kind: u32) -> Vec<u8> {
        let mut e = vec![0u8; 0x40];
        e[..5].copy_from_slice(b"\x7fELF\x02");
        e[0x20..0x28].copy_from_slice(&0x40u64.to_le_bytes()); // e_phoff
        e[0x36..0x38].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        e[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        let mut note = Vec::new();
        note.extend((name.len() as u32).to_le_bytes());
        note.extend(8u32.to_le_bytes());
        note.extend(kind.to_le_bytes());
        note.extend(name);
        note.resize(12 + name.len().div_ceil(4) * 4, 0);
        note.extend([0u8; 8]);
        let mut ph = vec![0u8; 56];
        ph[..4].copy_from_slice(&4u32.to_le_bytes()); // PT_NOTE
        ph[8..16].copy_from_slice(&((0x40 + 56) as u64).to_le_bytes());
        ph[32..40].copy_from_slice(&(note.len() as u64).to_le_bytes());
        e.extend(ph);
        e.extend(note);
        e
    }

    #[test]
    fn the_pvh_note_is_found_only_when_present() {
        assert!(has_pvh_note(&elf_with_note(b"Xen\0", 18)));
        assert!(!has_pvh_note(&elf_with_note(b"Xen\0", 17)));
        assert!(!has_pvh_note(&elf_with_note(b"GNU\0", 18)));
        assert!(!has_pvh_note(b"\x7fELF\x02"));
        assert!(!has_pvh_note(b"MZ not an elf"));
    }

    #[test]
    fn the_bzimage_payload_is_located_from_the_setup_header() {
        let mut k = vec![0u8; 0x1000];
        k[0x1f1] = 2; // setup sectors: the kernel proper starts at 3 * 512
        k[0x202..0x206].copy_from_slice(b"HdrS");
        k[0x206..0x208].copy_from_slice(&0x20fu16.to_le_bytes());
        k[0x248..0x24c].copy_from_slice(&0x10u32.to_le_bytes());
        k[0x24c..0x250].copy_from_slice(&6u32.to_le_bytes());
        k[3 * 512 + 0x10..3 * 512 + 0x16].copy_from_slice(b"\xfd7zXZ\0");
        assert_eq!(bzimage_payload(&k).unwrap(), b"\xfd7zXZ\0");
        k[0x24c..0x250].copy_from_slice(&0x10000u32.to_le_bytes());
        assert!(bzimage_payload(&k).unwrap_err().contains("outside"));
        assert!(bzimage_payload(b"no header")
            .unwrap_err()
            .contains("not a bzImage"));
    }

    #[test]
    fn missing_kernel_is_named_with_its_remedy() {
        let e = find_tools(
            Arch::X86_64,
            Some(Path::new("/nonexistent/vmlinuz")),
            None,
            None,
        )
        .unwrap_err();
        assert!(e.contains("/nonexistent/vmlinuz"), "{e}");
        let e = find_tools(Arch::Aarch64, None, None, None).unwrap_err();
        assert!(
            e.contains("arm64 kernel")
                && e.contains("aarch64 busybox")
                && e.contains("virtio_console.ko"),
            "{e}"
        );
    }
}
