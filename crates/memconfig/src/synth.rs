//! SMBIOS tables built from a readable description, laid out as DSP0134 3.x specifies
//! (not captured from machines): the shipped fixtures under
//! `crates/memconfig/tests/fixtures/smbios/` are written by
//! `cargo run -p numalab-memconfig --example gen_fixtures` from [`fixtures`], and tests
//! build variants of them in memory. Also writes sysfs NUMA node trees for tests.

use std::fs;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

const GIB: u64 = 1 << 30;

/// One structure's bytes: header, formatted area (`fields`, after the 4-byte header),
/// string set.
pub fn structure_bytes(ty: u8, handle: u16, fields: &[u8], strings: &[String]) -> Vec<u8> {
    let len = 4 + fields.len();
    assert!(len <= 255, "formatted area too long");
    let mut b = vec![ty, len as u8];
    b.extend_from_slice(&handle.to_le_bytes());
    b.extend_from_slice(fields);
    for s in strings {
        b.extend_from_slice(s.as_bytes());
        b.push(0);
    }
    if strings.is_empty() {
        b.push(0);
    }
    b.push(0);
    b
}

/// A formatted area being filled at spec offsets (offsets count the 4-byte header).
struct Fields {
    b: Vec<u8>,
    strings: Vec<String>,
}

impl Fields {
    fn new(len: usize) -> Self {
        Fields {
            b: vec![0; len.saturating_sub(4)],
            strings: Vec::new(),
        }
    }
    fn put(&mut self, at: usize, v: &[u8]) {
        if at >= 4 && at - 4 + v.len() <= self.b.len() {
            self.b[at - 4..at - 4 + v.len()].copy_from_slice(v);
        }
    }
    fn u8(&mut self, at: usize, v: u8) {
        self.put(at, &[v]);
    }
    fn u16(&mut self, at: usize, v: u16) {
        self.put(at, &v.to_le_bytes());
    }
    fn u32(&mut self, at: usize, v: u32) {
        self.put(at, &v.to_le_bytes());
    }
    fn u64(&mut self, at: usize, v: u64) {
        self.put(at, &v.to_le_bytes());
    }
    /// Adds a string and stores its 1-based index at `at` (empty: index 0).
    fn string(&mut self, at: usize, s: &str) {
        if s.is_empty() {
            return;
        }
        self.strings.push(s.to_string());
        let i = self.strings.len() as u8;
        self.u8(at, i);
    }
    fn finish(self, ty: u8, handle: u16) -> Vec<u8> {
        structure_bytes(ty, handle, &self.b, &self.strings)
    }
}

/// A processor socket (type 4, 2.6 layout).
#[derive(Debug, Clone)]
pub struct Processor {
    /// Handle.
    pub handle: u16,
    /// Socket designation.
    pub designation: String,
    /// Populated.
    pub populated: bool,
}

/// A physical memory array (type 16, 2.7 layout).
#[derive(Debug, Clone)]
pub struct Array {
    /// Handle.
    pub handle: u16,
    /// Location code (3: system board).
    pub location: u8,
    /// Use code (3: system memory).
    pub usage: u8,
    /// Error correction code (6: multi-bit ECC).
    pub ecc: u8,
    /// Maximum capacity, bytes.
    pub max_capacity: u64,
    /// Slots.
    pub slots: u16,
}

/// A memory device (type 17).
#[derive(Debug, Clone)]
pub struct Dimm {
    /// Handle.
    pub handle: u16,
    /// Array handle.
    pub array: u16,
    /// Device locator.
    pub locator: String,
    /// Bank locator (empty: no string).
    pub bank: String,
    /// Size, MiB (0: no module installed).
    pub size_mib: u32,
    /// Memory type code.
    pub memory_type: u8,
    /// Type detail bits.
    pub type_detail: u16,
    /// Form factor code.
    pub form_factor: u8,
    /// Total width (FFFFh unknown).
    pub total_width: u16,
    /// Data width (FFFFh unknown).
    pub data_width: u16,
    /// Rated speed, MT/s (0 unknown; above 65534 goes to the extended field).
    pub speed: u32,
    /// Configured speed, MT/s (same rules).
    pub configured: u32,
    /// Manufacturer.
    pub manufacturer: String,
    /// Part number.
    pub part: String,
    /// Ranks.
    pub rank: u8,
    /// Formatted length: 0x28 (2.8), 0x54 (3.2) or 0x5C (3.3).
    pub length: u8,
}

impl Dimm {
    /// An empty slot in the style of the populated ones.
    pub fn empty(handle: u16, array: u16, locator: &str, bank: &str, length: u8) -> Dimm {
        Dimm {
            handle,
            array,
            locator: locator.into(),
            bank: bank.into(),
            size_mib: 0,
            memory_type: 0x02,
            type_detail: 0x0002,
            form_factor: 0x09,
            total_width: 0xFFFF,
            data_width: 0xFFFF,
            speed: 0,
            configured: 0,
            manufacturer: "NO DIMM".into(),
            part: "NO DIMM".into(),
            rank: 0,
            length,
        }
    }
}

/// A memory array mapped address (type 19): `[start, end)`.
#[derive(Debug, Clone)]
pub struct ArrayMap {
    /// Handle.
    pub handle: u16,
    /// Array handle.
    pub array: u16,
    /// Range.
    pub range: Range<u64>,
    /// Partition width.
    pub partition_width: u8,
    /// Write the extended (byte) fields even when the KB fields would do.
    pub extended: bool,
}

/// A memory device mapped address (type 20): `[start, end)`.
#[derive(Debug, Clone)]
pub struct DeviceMap {
    /// Handle.
    pub handle: u16,
    /// Device handle.
    pub device: u16,
    /// Array mapped address handle.
    pub array_map: u16,
    /// Range.
    pub range: Range<u64>,
    /// Partition row position.
    pub row: u8,
    /// Interleave position.
    pub interleave_position: u8,
    /// Interleaved data depth.
    pub depth: u8,
}

/// A machine's SMBIOS memory description.
#[derive(Debug, Clone)]
pub struct Machine {
    /// SMBIOS version (major, minor, docrev).
    pub version: (u8, u8, u8),
    /// System manufacturer and product (type 1).
    pub system: (String, String),
    /// Processors.
    pub processors: Vec<Processor>,
    /// Arrays.
    pub arrays: Vec<Array>,
    /// Devices.
    pub dimms: Vec<Dimm>,
    /// Array mappings.
    pub array_maps: Vec<ArrayMap>,
    /// Device mappings.
    pub device_maps: Vec<DeviceMap>,
}

fn kb_or_ext(f: &mut Fields, at: usize, ext_at: usize, r: &Range<u64>, extended: bool) {
    let (start_kb, end_kb) = (r.start / 1024, (r.end - 1) / 1024);
    let aligned = r.start.is_multiple_of(1024) && r.end.is_multiple_of(1024);
    if !extended && aligned && end_kb < 0xFFFF_FFFF {
        f.u32(at, start_kb as u32);
        f.u32(at + 4, end_kb as u32);
    } else {
        f.u32(at, 0xFFFF_FFFF);
        f.u32(at + 4, 0xFFFF_FFFF);
        f.u64(ext_at, r.start);
        f.u64(ext_at + 8, r.end - 1);
    }
}

fn speed_fields(f: &mut Fields, at: usize, ext_at: usize, v: u32, length: u8) {
    if v > 0xFFFE && usize::from(length) >= ext_at + 4 {
        f.u16(at, 0xFFFF);
        f.u32(ext_at, v);
    } else {
        f.u16(at, v.min(0xFFFE) as u16);
    }
}

impl Machine {
    /// The structures, in table order, each as (type, bytes).
    pub fn structures(&self) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        // Type 0, BIOS information (2.4 layout), not decoded by numalab: noise.
        let mut f = Fields::new(0x18);
        f.string(0x04, "numalab synth");
        f.string(0x05, "1.0");
        f.u16(0x06, 0xE800);
        f.string(0x08, "01/01/2024");
        f.u8(0x09, 0xFF);
        f.u64(0x0A, 0x08);
        out.push((0, f.finish(0, 0x0000)));
        // Type 1, system information (2.4 layout).
        let mut f = Fields::new(0x1B);
        f.string(0x04, &self.system.0);
        f.string(0x05, &self.system.1);
        f.u8(0x18, 0x06);
        out.push((1, f.finish(1, 0x0001)));
        for p in &self.processors {
            let mut f = Fields::new(0x2A);
            f.string(0x04, &p.designation);
            f.u8(0x05, 0x03);
            f.u8(0x06, 0xFE);
            f.u8(0x18, if p.populated { 0x41 } else { 0x00 });
            f.u16(0x1A, 0xFFFF);
            f.u16(0x1C, 0xFFFF);
            f.u16(0x1E, 0xFFFF);
            out.push((4, f.finish(4, p.handle)));
        }
        for a in &self.arrays {
            let mut f = Fields::new(0x17);
            f.u8(0x04, a.location);
            f.u8(0x05, a.usage);
            f.u8(0x06, a.ecc);
            let kb = a.max_capacity / 1024;
            if kb < 0x8000_0000 {
                f.u32(0x07, kb as u32);
            } else {
                f.u32(0x07, 0x8000_0000);
                f.u64(0x0F, a.max_capacity);
            }
            f.u16(0x0B, 0xFFFE);
            f.u16(0x0D, a.slots);
            out.push((16, f.finish(16, a.handle)));
        }
        for d in &self.dimms {
            let mut f = Fields::new(usize::from(d.length));
            f.u16(0x04, d.array);
            f.u16(0x06, 0xFFFE);
            f.u16(0x08, d.total_width);
            f.u16(0x0A, d.data_width);
            if d.size_mib < 0x7FFF {
                f.u16(0x0C, d.size_mib as u16);
            } else {
                f.u16(0x0C, 0x7FFF);
                f.u32(0x1C, d.size_mib);
            }
            f.u8(0x0E, d.form_factor);
            f.string(0x10, &d.locator);
            f.string(0x11, &d.bank);
            f.u8(0x12, d.memory_type);
            f.u16(0x13, d.type_detail);
            speed_fields(&mut f, 0x15, 0x54, d.speed, d.length);
            f.string(0x17, &d.manufacturer);
            f.string(0x1A, &d.part);
            f.u8(0x1B, d.rank & 0x0F);
            speed_fields(&mut f, 0x20, 0x58, d.configured, d.length);
            if d.size_mib != 0 {
                f.u16(0x22, 1200);
                f.u16(0x24, 1200);
                f.u16(0x26, 1200);
                f.u8(0x28, 0x03);
                f.u16(0x29, 0x0008);
                f.u64(0x3C, u64::from(d.size_mib) << 20);
            }
            out.push((17, f.finish(17, d.handle)));
        }
        for m in &self.array_maps {
            let mut f = Fields::new(0x1F);
            kb_or_ext(&mut f, 0x04, 0x0F, &m.range, m.extended);
            f.u16(0x0C, m.array);
            f.u8(0x0E, m.partition_width);
            out.push((19, f.finish(19, m.handle)));
        }
        for m in &self.device_maps {
            let mut f = Fields::new(0x23);
            kb_or_ext(&mut f, 0x04, 0x13, &m.range, false);
            f.u16(0x0C, m.device);
            f.u16(0x0E, m.array_map);
            f.u8(0x10, m.row);
            f.u8(0x11, m.interleave_position);
            f.u8(0x12, m.depth);
            out.push((20, f.finish(20, m.handle)));
        }
        out.push((127, structure_bytes(127, 0xFEFF, &[], &[])));
        out
    }

    /// The structure table.
    pub fn table(&self) -> Vec<u8> {
        self.structures().into_iter().flat_map(|(_, b)| b).collect()
    }

    /// The entry point: `_SM3_` for version 3 and later, `_SM_` before.
    pub fn entry_point(&self) -> Vec<u8> {
        let table = self.table();
        let (major, minor, docrev) = self.version;
        let mut ep;
        if major >= 3 {
            ep = vec![0u8; 0x18];
            ep[..5].copy_from_slice(b"_SM3_");
            ep[6] = 0x18;
            ep[7] = major;
            ep[8] = minor;
            ep[9] = docrev;
            ep[0x0A] = 0x01;
            ep[0x0C..0x10].copy_from_slice(&(table.len() as u32).to_le_bytes());
            ep[0x10..0x18].copy_from_slice(&0x000F_0000u64.to_le_bytes());
            let sum = ep.iter().fold(0u8, |a, &x| a.wrapping_add(x));
            ep[5] = 0u8.wrapping_sub(sum);
        } else {
            ep = vec![0u8; 0x1F];
            ep[..4].copy_from_slice(b"_SM_");
            ep[5] = 0x1F;
            ep[6] = major;
            ep[7] = minor;
            let max = self
                .structures()
                .iter()
                .map(|(_, b)| b.len())
                .max()
                .unwrap_or(0);
            ep[0x08..0x0A].copy_from_slice(&(max as u16).to_le_bytes());
            ep[0x10..0x15].copy_from_slice(b"_DMI_");
            ep[0x16..0x18].copy_from_slice(&(table.len() as u16).to_le_bytes());
            ep[0x18..0x1C].copy_from_slice(&0x000F_0000u32.to_le_bytes());
            let count = self.structures().len() as u16;
            ep[0x1C..0x1E].copy_from_slice(&count.to_le_bytes());
            ep[0x1E] = (major << 4) | (minor & 0x0F);
            let sum = ep[0x10..0x1F].iter().fold(0u8, |a, &x| a.wrapping_add(x));
            ep[0x15] = 0u8.wrapping_sub(sum);
            let sum = ep.iter().fold(0u8, |a, &x| a.wrapping_add(x));
            ep[4] = 0u8.wrapping_sub(sum);
        }
        ep
    }
}

/// How a fixture is laid out under its root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `sys/firmware/dmi/tables/{DMI,smbios_entry_point}`.
    Tables,
    /// `sys/firmware/dmi/entries/T-N/raw`, the memory-related types only.
    Entries,
}

/// A shipped fixture.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// Folder name under `tests/fixtures/smbios/`.
    pub name: &'static str,
    /// What it describes.
    pub description: &'static str,
    /// The machine.
    pub machine: Machine,
    /// Layout.
    pub form: Form,
    /// Cut the table file after this many bytes (a truncated table).
    pub truncate_at: Option<usize>,
}

/// The files of a fixture: (path relative to its root, bytes).
pub fn files(f: &Fixture) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    match f.form {
        Form::Tables => {
            let mut table = f.machine.table();
            if let Some(n) = f.truncate_at {
                table.truncate(n);
            }
            out.push((
                PathBuf::from("sys/firmware/dmi/tables/smbios_entry_point"),
                f.machine.entry_point(),
            ));
            out.push((PathBuf::from("sys/firmware/dmi/tables/DMI"), table));
        }
        Form::Entries => {
            let mut instance = std::collections::BTreeMap::<u8, u32>::new();
            for (ty, bytes) in f.machine.structures() {
                let i = instance.entry(ty).or_insert(0);
                if [1u8, 4, 16, 17, 19, 20].contains(&ty) {
                    out.push((
                        PathBuf::from(format!("sys/firmware/dmi/entries/{ty}-{i}/raw")),
                        bytes,
                    ));
                }
                *i += 1;
            }
        }
    }
    out
}

/// Writes a fixture's files under `root`.
pub fn write(f: &Fixture, root: &Path) -> io::Result<()> {
    for (rel, bytes) in files(f) {
        let p = root.join(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(p, bytes)?;
    }
    Ok(())
}

/// A NUMA node for [`write_nodes`].
#[derive(Debug, Clone)]
pub struct NodeSpec {
    /// Node id.
    pub node: u32,
    /// Its memory blocks (block numbers).
    pub blocks: Vec<Range<u64>>,
    /// Its CPUs.
    pub cpus: Range<u32>,
    /// Their physical package id.
    pub package: u32,
}

/// Writes a sysfs NUMA tree under `root`: node folders with empty `memoryM` entries
/// (symlinks on a real system) and `cpulist`, the block size, the CPUs' package ids.
pub fn write_nodes(root: &Path, block_size: u64, nodes: &[NodeSpec]) -> io::Result<()> {
    let sys = root.join("sys/devices/system");
    fs::create_dir_all(sys.join("memory"))?;
    fs::write(
        sys.join("memory/block_size_bytes"),
        format!("{block_size:x}\n"),
    )?;
    for n in nodes {
        let nd = sys.join(format!("node/node{}", n.node));
        fs::create_dir_all(&nd)?;
        for r in &n.blocks {
            for b in r.clone() {
                fs::write(nd.join(format!("memory{b}")), "")?;
            }
        }
        let list = if n.cpus.is_empty() {
            String::new()
        } else {
            format!("{}-{}", n.cpus.start, n.cpus.end - 1)
        };
        fs::write(nd.join("cpulist"), format!("{list}\n"))?;
        for c in n.cpus.clone() {
            let t = sys.join(format!("cpu/cpu{c}/topology"));
            fs::create_dir_all(&t)?;
            fs::write(t.join("physical_package_id"), format!("{}\n", n.package))?;
        }
    }
    Ok(())
}

fn rdimm(
    handle: u16,
    array: u16,
    (locator, bank): (String, String),
    size_gib: u32,
    memory_type: u8,
    speeds: (u32, u32),
    length: u8,
) -> Dimm {
    let ddr5 = memory_type == 0x22;
    Dimm {
        handle,
        array,
        locator,
        bank,
        size_mib: size_gib * 1024,
        memory_type,
        type_detail: 0x2080, // synchronous, registered (buffered)
        form_factor: 0x09,
        total_width: if ddr5 { 80 } else { 72 },
        data_width: 64,
        speed: speeds.0,
        configured: speeds.1,
        manufacturer: "Samsung".into(),
        part: if ddr5 {
            "M321R8GA0BB0-CQK".into()
        } else {
            "M393A4K40DB3-CWE".into()
        },
        rank: 2,
        length,
    }
}

/// (a) Ampere Altra, one socket, Wiwynn Mt. Jade style: 16 slots `DIMM 1` ...
/// `DIMM 16` with bank locators `Bank 1` ..., the odd ones populated with 32 GiB
/// DDR4-3200 RDIMMs (8 DIMMs, one per channel; the locators do not say the channel).
pub fn altra_1s() -> Machine {
    let mut dimms = Vec::new();
    for k in 1..=16u16 {
        let (loc, bank) = (format!("DIMM {k}"), format!("Bank {k}"));
        let h = 0x0026 + 2 * (k - 1);
        dimms.push(if k % 2 == 1 {
            rdimm(h, 0x0020, (loc, bank), 32, 0x1A, (3200, 3200), 0x5C)
        } else {
            Dimm::empty(h, 0x0020, &loc, &bank, 0x5C)
        });
    }
    Machine {
        version: (3, 3, 0),
        system: ("WIWYNN".into(), "Mt.Jade Server System".into()),
        processors: vec![Processor {
            handle: 0x0004,
            designation: "CPU 0".into(),
            populated: true,
        }],
        arrays: vec![Array {
            handle: 0x0020,
            location: 0x03,
            usage: 0x03,
            ecc: 0x06,
            max_capacity: 4096 * GIB,
            slots: 16,
        }],
        dimms,
        array_maps: vec![ArrayMap {
            handle: 0x0060,
            array: 0x0020,
            range: 0x8000_0000..0x8000_0000 + 256 * GIB,
            partition_width: 8,
            extended: true,
        }],
        device_maps: Vec::new(),
    }
}

/// (b) AMD EPYC Genoa, one socket: 12 channels A-L, one 64 GiB DDR5-4800 RDIMM each,
/// AGESA-style locators `DIMM 0` with bank locators `P0 CHANNEL A` ... `P0 CHANNEL L`.
/// Memory at `[0, 2 GiB)` and `[4 GiB, 770 GiB)`, no type 20.
pub fn genoa_1s() -> Machine {
    let dimms = (0..12u16)
        .map(|c| {
            let letter = char::from(b'A' + c as u8);
            rdimm(
                0x0040 + c,
                0x0030,
                ("DIMM 0".into(), format!("P0 CHANNEL {letter}")),
                64,
                0x22,
                (4800, 4800),
                0x5C,
            )
        })
        .collect();
    Machine {
        version: (3, 5, 0),
        system: ("AMD Corporation".into(), "Titanite".into()),
        processors: vec![Processor {
            handle: 0x0010,
            designation: "P0".into(),
            populated: true,
        }],
        arrays: vec![Array {
            handle: 0x0030,
            location: 0x03,
            usage: 0x03,
            ecc: 0x06,
            max_capacity: 6144 * GIB,
            slots: 12,
        }],
        dimms,
        array_maps: vec![
            ArrayMap {
                handle: 0x0060,
                array: 0x0030,
                range: 0..2 * GIB,
                partition_width: 12,
                extended: false,
            },
            ArrayMap {
                handle: 0x0061,
                array: 0x0030,
                range: 4 * GIB..770 * GIB,
                partition_width: 12,
                extended: false,
            },
        ],
        device_maps: Vec::new(),
    }
}

/// (c) A dual-socket Intel board (Supermicro style) half populated: 16 slots, 4
/// channels x 2 slots per socket (`P1-DIMMA1`, bank `P0_Node0_Channel0_Dimm0` ...), 8
/// 32 GiB DDR4-2933 RDIMMs: socket 0 A1, A2, B1, C1 (3 channels), socket 1 A1, B1, C1,
/// D1 (4 channels). One array per socket; socket 0 at `[0, 128 GiB)`, socket 1 at
/// `[128 GiB, 256 GiB)`, each device mapped (type 20) over its socket's interleaved range.
pub fn intel_2s_half() -> Machine {
    let populated = [
        ["A1", "A2", "B1", "C1"].as_slice(),
        ["A1", "B1", "C1", "D1"].as_slice(),
    ];
    let mut dimms = Vec::new();
    let mut device_maps = Vec::new();
    for s in 0..2u16 {
        let array = 0x0030 + s;
        let mut pos = 0u8;
        for (c, letter) in ["A", "B", "C", "D"].iter().enumerate() {
            for k in 1..=2u16 {
                let loc = format!("P{}-DIMM{letter}{k}", s + 1);
                let bank = format!("P{s}_Node{}_Channel{}_Dimm{}", c / 2, c % 2, k - 1);
                let h = 0x0040 + s * 8 + (c as u16) * 2 + (k - 1);
                if populated[usize::from(s)].contains(&format!("{letter}{k}").as_str()) {
                    dimms.push(rdimm(h, array, (loc, bank), 32, 0x1A, (2933, 2933), 0x54));
                    pos += 1;
                    device_maps.push(DeviceMap {
                        handle: 0x0070 + h - 0x0040,
                        device: h,
                        array_map: 0x0060 + s,
                        range: u64::from(s) * 128 * GIB..(u64::from(s) + 1) * 128 * GIB,
                        row: 1,
                        interleave_position: pos,
                        depth: 1,
                    });
                } else {
                    dimms.push(Dimm::empty(h, array, &loc, &bank, 0x54));
                }
            }
        }
    }
    Machine {
        version: (3, 2, 0),
        system: ("Supermicro".into(), "SYS-6029P".into()),
        processors: vec![
            Processor {
                handle: 0x0010,
                designation: "CPU1".into(),
                populated: true,
            },
            Processor {
                handle: 0x0011,
                designation: "CPU2".into(),
                populated: true,
            },
        ],
        arrays: (0..2u16)
            .map(|s| Array {
                handle: 0x0030 + s,
                location: 0x03,
                usage: 0x03,
                ecc: 0x06,
                max_capacity: 3072 * GIB,
                slots: 8,
            })
            .collect(),
        dimms,
        array_maps: (0..2u16)
            .map(|s| ArrayMap {
                handle: 0x0060 + s,
                array: 0x0030 + s,
                range: u64::from(s) * 128 * GIB..(u64::from(s) + 1) * 128 * GIB,
                partition_width: 4,
                extended: false,
            })
            .collect(),
        device_maps,
    }
}

/// (d) A single-socket board with 2 DIMMs per channel, all populated: 4 channels x 2
/// slots (`CPU0_DIMM_A1`, `CPU0_DIMM_A2` ..., bank `BANK 0` ...), eight 16 GiB DDR4
/// RDIMMs rated 2933 and configured at 2666 MT/s (2 DIMMs per channel). SMBIOS 2.8.
pub fn ws_2dpc() -> Machine {
    let mut dimms = Vec::new();
    for (c, letter) in ["A", "B", "C", "D"].iter().enumerate() {
        for k in 1..=2u16 {
            let h = 0x0020 + (c as u16) * 2 + (k - 1);
            dimms.push(rdimm(
                h,
                0x0010,
                (
                    format!("CPU0_DIMM_{letter}{k}"),
                    format!("BANK {}", c * 2 + usize::from(k - 1)),
                ),
                16,
                0x1A,
                (2933, 2666),
                0x28,
            ));
        }
    }
    Machine {
        version: (2, 8, 0),
        system: ("Intel Corporation".into(), "W2600CR".into()),
        processors: vec![Processor {
            handle: 0x0004,
            designation: "CPU0".into(),
            populated: true,
        }],
        arrays: vec![Array {
            handle: 0x0010,
            location: 0x03,
            usage: 0x03,
            ecc: 0x06,
            max_capacity: 1024 * GIB,
            slots: 8,
        }],
        dimms,
        array_maps: vec![ArrayMap {
            handle: 0x0030,
            array: 0x0010,
            range: 0..128 * GIB,
            partition_width: 8,
            extended: false,
        }],
        device_maps: Vec::new(),
    }
}

/// (e) QEMU's default tables for an 8 GiB guest (q35): one `DIMM 0` of type RAM with
/// speed 0 (unknown) and widths FFFFh (unknown), as QEMU builds them unless
/// `-smbios type=17,speed=N` is given. `speed` sets that option's effect.
pub fn qemu(speed: u32) -> Machine {
    let mut d = Dimm::empty(0x1100, 0x1000, "DIMM 0", "", 0x28);
    d.size_mib = 8192;
    d.memory_type = 0x07;
    d.speed = speed;
    d.configured = speed;
    d.manufacturer = "QEMU".into();
    d.part = String::new();
    Machine {
        version: (3, 0, 0),
        system: ("QEMU".into(), "Standard PC (Q35 + ICH9, 2009)".into()),
        processors: vec![Processor {
            handle: 0x0400,
            designation: "CPU 0".into(),
            populated: true,
        }],
        arrays: vec![Array {
            handle: 0x1000,
            location: 0x01,
            usage: 0x03,
            ecc: 0x06,
            max_capacity: 8 * GIB,
            slots: 1,
        }],
        dimms: vec![d],
        array_maps: vec![
            ArrayMap {
                handle: 0x1300,
                array: 0x1000,
                range: 0..2 * GIB,
                partition_width: 1,
                extended: false,
            },
            ArrayMap {
                handle: 0x1301,
                array: 0x1000,
                range: 4 * GIB..10 * GIB,
                partition_width: 1,
                extended: false,
            },
        ],
        device_maps: Vec::new(),
    }
}

/// Offset inside the sixth memory device of [`genoa_1s`]'s table, for the truncated
/// fixture.
fn genoa_cut() -> usize {
    let mut at = 0usize;
    let mut devices = 0;
    for (ty, b) in genoa_1s().structures() {
        if ty == 17 {
            devices += 1;
            if devices == 6 {
                return at + 40;
            }
        }
        at += b.len();
    }
    at
}

/// The shipped fixtures.
pub fn fixtures() -> Vec<Fixture> {
    vec![
        Fixture {
            name: "altra-1s-ddr4-3200",
            description: "Ampere Altra, 1 socket, 8 of 16 slots DDR4-3200 (Mt. Jade locators)",
            machine: altra_1s(),
            form: Form::Tables,
            truncate_at: None,
        },
        Fixture {
            name: "genoa-1s-ddr5-4800",
            description: "AMD EPYC Genoa, 1 socket, 12 channels DDR5-4800 (P0 CHANNEL A-L)",
            machine: genoa_1s(),
            form: Form::Tables,
            truncate_at: None,
        },
        Fixture {
            name: "intel-2s-half-ddr4-2933",
            description: "Intel 2 sockets, 8 of 16 slots DDR4-2933, 7 channels, type 20 ranges",
            machine: intel_2s_half(),
            form: Form::Tables,
            truncate_at: None,
        },
        Fixture {
            name: "ws-1s-2dpc-ddr4-2666",
            description:
                "1 socket, 4 channels x 2 DIMMs, DDR4 at 2666, per-structure entries files",
            machine: ws_2dpc(),
            form: Form::Entries,
            truncate_at: None,
        },
        Fixture {
            name: "qemu-default",
            description: "QEMU q35 default tables: DIMM 0, speed and width unknown",
            machine: qemu(0),
            form: Form::Tables,
            truncate_at: None,
        },
        Fixture {
            name: "genoa-truncated",
            description: "the Genoa table cut inside its sixth memory device",
            machine: genoa_1s(),
            form: Form::Tables,
            truncate_at: Some(genoa_cut()),
        },
    ]
}
