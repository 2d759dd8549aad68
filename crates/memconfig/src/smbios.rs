//! A parser for the SMBIOS structures numalab needs, written from DMTF DSP0134 (3.x).
//!
//! It reads the entry point (SMBIOS 3.0 `_SM3_`, SMBIOS 2.1 `_SM_`, legacy `_DMI_`), walks
//! the structure table (each structure: a 4-byte header `type, length, handle`, the
//! formatted area of `length` bytes, then the string set: NUL-terminated strings ended
//! by a second NUL), and decodes types 1 (system), 4 (processor), 16 (physical memory
//! array), 17 (memory device), 19 (memory array mapped address) and 20 (memory device
//! mapped address). Fields a structure's length does not reach are absent (None), as
//! the specification says for older versions. Every offset is checked: a truncated or
//! hostile table ends the walk or skips the structure with a note, never panics.

use std::fmt;

/// Upper bound on the structures walked in one table (a real table holds a few hundred).
const MAX_STRUCTURES: usize = 65_536;
/// Strings longer than this are cut (the specification sets no limit; a locator is short).
const MAX_STRING_CHARS: usize = 256;

/// Why bytes are not a valid SMBIOS entry point or structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// The form of an entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryPointKind {
    /// `_SM3_`, SMBIOS 3.0 and later: 64-bit table address, a maximum table size.
    Smbios3,
    /// `_SM_` with `_DMI_`, SMBIOS 2.1 to 2.8: 32-bit address, exact table length.
    Smbios21,
    /// `_DMI_` alone (DMI 2.0).
    LegacyDmi,
}

impl fmt::Display for EntryPointKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EntryPointKind::Smbios3 => "SMBIOS 3.0 64-bit",
            EntryPointKind::Smbios21 => "SMBIOS 2.1 32-bit",
            EntryPointKind::LegacyDmi => "legacy DMI",
        })
    }
}

/// A decoded entry point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryPoint {
    /// Its form.
    pub kind: EntryPointKind,
    /// SMBIOS major version.
    pub major: u8,
    /// SMBIOS minor version.
    pub minor: u8,
    /// Docrev (3.0 entry points only; 0 otherwise).
    pub docrev: u8,
    /// Table length (2.1, legacy: exact) or maximum size (3.0), bytes.
    pub table_len: u64,
    /// Physical address of the table (informational: Linux exports the table itself).
    pub table_address: u64,
    /// Whether the checksum over the entry point's length is 0.
    pub checksum_ok: bool,
}

impl EntryPoint {
    /// `major.minor.docrev`.
    pub fn version(&self) -> String {
        format!("{}.{}.{}", self.major, self.minor, self.docrev)
    }
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn le64(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

fn checksum_ok(b: &[u8], len: usize) -> bool {
    match b.get(..len) {
        Some(s) => s.iter().fold(0u8, |a, &x| a.wrapping_add(x)) == 0,
        None => false,
    }
}

/// Decodes an entry point (`/sys/firmware/dmi/tables/smbios_entry_point`).
pub fn parse_entry_point(b: &[u8]) -> Result<EntryPoint, ParseError> {
    let short = |what: &str, need: usize| {
        ParseError(format!(
            "{what} entry point truncated: {} bytes, {need} needed",
            b.len()
        ))
    };
    if b.starts_with(b"_SM3_") {
        // 3.0: 05 checksum, 06 length (18h), 07 major, 08 minor, 09 docrev,
        // 0A entry point revision, 0B reserved, 0C max table size (DWORD),
        // 10 table address (QWORD).
        if b.len() < 0x18 {
            return Err(short("SMBIOS 3.0", 0x18));
        }
        let len = usize::from(b[6]).clamp(0x18, b.len());
        return Ok(EntryPoint {
            kind: EntryPointKind::Smbios3,
            major: b[7],
            minor: b[8],
            docrev: b[9],
            table_len: u64::from(le32(b, 0x0C).unwrap_or(0)),
            table_address: le64(b, 0x10).unwrap_or(0),
            checksum_ok: checksum_ok(b, len),
        });
    }
    if b.starts_with(b"_SM_") {
        // 2.1: 04 checksum, 05 length (1Fh), 06 major, 07 minor, 08 max structure size,
        // 0A revision, 0B formatted area, 10 "_DMI_", 15 intermediate checksum,
        // 16 table length (WORD), 18 table address (DWORD), 1C structures, 1E BCD rev.
        if b.len() < 0x1F {
            return Err(short("SMBIOS 2.1", 0x1F));
        }
        if &b[0x10..0x15] != b"_DMI_" {
            return Err(ParseError(
                "SMBIOS 2.1 entry point without its _DMI_ intermediate anchor".into(),
            ));
        }
        let len = usize::from(b[5]).clamp(0x1F, b.len());
        return Ok(EntryPoint {
            kind: EntryPointKind::Smbios21,
            major: b[6],
            minor: b[7],
            docrev: 0,
            table_len: u64::from(le16(b, 0x16).unwrap_or(0)),
            table_address: u64::from(le32(b, 0x18).unwrap_or(0)),
            checksum_ok: checksum_ok(b, len),
        });
    }
    if b.starts_with(b"_DMI_") {
        // Legacy: 05 checksum, 06 table length, 08 address, 0C structures, 0E BCD rev.
        if b.len() < 0x0F {
            return Err(short("legacy DMI", 0x0F));
        }
        return Ok(EntryPoint {
            kind: EntryPointKind::LegacyDmi,
            major: b[0x0E] >> 4,
            minor: b[0x0E] & 0x0F,
            docrev: 0,
            table_len: u64::from(le16(b, 6).unwrap_or(0)),
            table_address: u64::from(le32(b, 8).unwrap_or(0)),
            checksum_ok: checksum_ok(b, 0x0F),
        });
    }
    Err(ParseError(
        "not an SMBIOS entry point (no _SM3_, _SM_ or _DMI_ anchor)".into(),
    ))
}

/// One structure: header, formatted area and strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Structure {
    /// Structure type.
    pub ty: u8,
    /// Handle.
    pub handle: u16,
    /// Byte offset in the table (0 for a structure read from its own file).
    pub offset: usize,
    /// The formatted area, header included (`length` bytes).
    pub formatted: Vec<u8>,
    /// The string set, 1-based in the structure's fields (index 0 here is string 1),
    /// control characters replaced.
    pub strings: Vec<String>,
}

impl Structure {
    /// The byte at `at` in the formatted area, if the structure is that long.
    pub fn byte(&self, at: usize) -> Option<u8> {
        self.formatted.get(at).copied()
    }

    /// The little-endian WORD at `at`.
    pub fn word(&self, at: usize) -> Option<u16> {
        le16(&self.formatted, at)
    }

    /// The little-endian DWORD at `at`.
    pub fn dword(&self, at: usize) -> Option<u32> {
        le32(&self.formatted, at)
    }

    /// The little-endian QWORD at `at`.
    pub fn qword(&self, at: usize) -> Option<u64> {
        le64(&self.formatted, at)
    }

    /// The string whose 1-based index is the byte at `at` (None: index 0, beyond the
    /// string set, or the field is absent).
    pub fn string(&self, at: usize) -> Option<String> {
        let i = usize::from(self.byte(at)?);
        if i == 0 {
            return None;
        }
        self.strings.get(i - 1).cloned()
    }
}

/// Makes a string from the table safe to print: invalid UTF-8 replaced, control
/// characters turned into spaces, trimmed, cut at 256 characters.
pub fn sanitize(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    let cleaned: String = s
        .chars()
        .take(MAX_STRING_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    cleaned.trim().to_string()
}

/// Reads one structure starting at `at`. Returns it and the offset after its string
/// set, or why it cannot be read (the walk cannot go on past it either).
fn structure_at(b: &[u8], at: usize) -> Result<(Structure, usize), String> {
    let header = b
        .get(at..at.saturating_add(4))
        .filter(|h| h.len() == 4)
        .ok_or_else(|| {
            format!(
                "table ends inside a structure header at offset {at} ({} bytes left)",
                b.len().saturating_sub(at)
            )
        })?;
    let (ty, len) = (header[0], usize::from(header[1]));
    let handle = u16::from_le_bytes([header[2], header[3]]);
    if len < 4 {
        return Err(format!(
            "structure type {ty} at offset {at} declares length {len} (< 4): the table is corrupt"
        ));
    }
    let end = at + len;
    if end > b.len() {
        return Err(format!(
            "structure type {ty} handle {handle:#06x} at offset {at} is truncated: its formatted area needs {len} bytes, {} left",
            b.len() - at
        ));
    }
    // The string set ends at the first double NUL at or after the formatted area.
    let rest = &b[end..];
    let term = rest
        .windows(2)
        .position(|w| w == [0, 0])
        .ok_or_else(|| {
            format!(
                "structure type {ty} handle {handle:#06x} at offset {at}: its string set is not terminated (table truncated)"
            )
        })?;
    let strings: Vec<String> = if term == 0 {
        Vec::new()
    } else {
        rest[..term].split(|&c| c == 0).map(sanitize).collect()
    };
    Ok((
        Structure {
            ty,
            handle,
            offset: at,
            formatted: b[at..end].to_vec(),
            strings,
        },
        end + term + 2,
    ))
}

/// A structure table walked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// The structures read, in table order.
    pub structures: Vec<Structure>,
    /// What went wrong or looked odd, one sentence each.
    pub notes: Vec<String>,
    /// Structures (or table tails) not read.
    pub skipped: usize,
    /// Whether the end-of-table structure (type 127) was met.
    pub ended: bool,
    /// Whether the walk stopped on a structure it could not delimit (structures after
    /// it, if any, were not read).
    pub cut: bool,
}

/// Walks a structure table (`/sys/firmware/dmi/tables/DMI`): up to the end-of-table
/// structure (type 127), the end of the bytes, or the first structure that cannot be
/// delimited (truncated, or a length below 4), with a note.
pub fn parse_table(b: &[u8]) -> Table {
    let mut t = Table::default();
    let mut at = 0usize;
    while at < b.len() {
        if t.structures.len() >= MAX_STRUCTURES {
            t.notes.push(format!(
                "stopped after {MAX_STRUCTURES} structures: the table is implausibly long"
            ));
            t.skipped += 1;
            t.cut = true;
            break;
        }
        match structure_at(b, at) {
            Ok((s, next)) => {
                let end = s.ty == 127;
                t.structures.push(s);
                at = next;
                if end {
                    t.ended = true;
                    break;
                }
            }
            Err(e) => {
                // A few zero bytes of padding after the last structure are harmless.
                if b[at..].iter().all(|&x| x == 0) {
                    break;
                }
                t.notes
                    .push(format!("{e}; the rest of the table was not read"));
                t.skipped += 1;
                t.cut = true;
                break;
            }
        }
    }
    t
}

/// Reads a structure from its own file (`/sys/firmware/dmi/entries/T-N/raw`: the
/// formatted area and the string set).
pub fn parse_structure(b: &[u8]) -> Result<Structure, ParseError> {
    structure_at(b, 0).map(|(s, _)| s).map_err(ParseError)
}

/// A processor socket (type 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Processor {
    /// Handle.
    pub handle: u16,
    /// Socket designation (`CPU0`, `P1`, `Socket 0`).
    pub designation: Option<String>,
    /// Whether the socket is populated (status bit 6).
    pub populated: bool,
    /// Whether it is a central processor (processor type 3).
    pub central: bool,
}

/// A physical memory array (type 16).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysicalMemoryArray {
    /// Handle.
    pub handle: u16,
    /// Location code (7.17.1).
    pub location: u8,
    /// Use code (7.17.2): 3 = system memory.
    pub usage: u8,
    /// Error correction code (7.17.3).
    pub error_correction: u8,
    /// Maximum capacity, bytes (extended field used when the DWORD is 8000_0000h).
    pub max_capacity_bytes: Option<u64>,
    /// Number of memory devices (slots).
    pub devices: Option<u16>,
}

/// Size of a memory device (type 17, Size and Extended Size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceSize {
    /// 0: no module installed in the socket.
    NotInstalled,
    /// FFFFh, or 7FFFh without an extended size: installed, size unknown.
    Unknown,
    /// Size in bytes.
    Bytes(u64),
}

/// A memory device (type 17).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryDeviceRaw {
    /// Handle.
    pub handle: u16,
    /// Physical memory array handle (None: FFFEh/FFFFh, not provided).
    pub array_handle: Option<u16>,
    /// Total width, bits (None: FFFFh unknown).
    pub total_width: Option<u16>,
    /// Data width, bits (None: FFFFh unknown).
    pub data_width: Option<u16>,
    /// Size.
    pub size: DeviceSize,
    /// Form factor code (7.18.1).
    pub form_factor: u8,
    /// Device locator string.
    pub locator: Option<String>,
    /// Bank locator string.
    pub bank_locator: Option<String>,
    /// Memory type code (7.18.2).
    pub memory_type: u8,
    /// Type detail bits.
    pub type_detail: Option<u16>,
    /// Rated speed, MT/s (Extended Speed used when the WORD is FFFFh; None: unknown).
    pub speed: Option<u32>,
    /// Configured memory speed, MT/s (Extended Configured Memory Speed used when the
    /// WORD is FFFFh; None: unknown or absent).
    pub configured_speed: Option<u32>,
    /// Manufacturer string.
    pub manufacturer: Option<String>,
    /// Part number string.
    pub part_number: Option<String>,
    /// Rank (attributes bits 3:0; None: 0 = unknown or absent).
    pub rank: Option<u8>,
    /// Memory technology code (3.2+, 7.18.6).
    pub technology: Option<u8>,
}

/// A memory array mapped address (type 19).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayMappedAddress {
    /// Handle.
    pub handle: u16,
    /// The array (type 16) it maps.
    pub array_handle: u16,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Partition width (devices forming a row).
    pub partition_width: Option<u8>,
}

/// A memory device mapped address (type 20).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceMappedAddress {
    /// Handle.
    pub handle: u16,
    /// The device (type 17).
    pub device_handle: u16,
    /// The array mapping (type 19) it is part of.
    pub array_mapped_handle: u16,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Partition row position (None: FFh unknown).
    pub partition_row_position: Option<u8>,
    /// Interleave position (0 not interleaved; None: FFh unknown).
    pub interleave_position: Option<u8>,
    /// Interleaved data depth (None: FFh unknown).
    pub interleaved_data_depth: Option<u8>,
}

/// The memory-related structures of a table, decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decoded {
    /// System manufacturer and product (type 1).
    pub system: Option<String>,
    /// Processor sockets (type 4).
    pub processors: Vec<Processor>,
    /// Physical memory arrays (type 16), table order.
    pub arrays: Vec<PhysicalMemoryArray>,
    /// Memory devices (type 17), table order.
    pub devices: Vec<MemoryDeviceRaw>,
    /// Array mapped addresses (type 19).
    pub array_maps: Vec<ArrayMappedAddress>,
    /// Device mapped addresses (type 20).
    pub device_maps: Vec<DeviceMappedAddress>,
    /// Structures skipped, with why.
    pub notes: Vec<String>,
    /// How many were skipped.
    pub skipped: usize,
    /// How many of those were memory devices (type 17): the device list is incomplete.
    pub skipped_devices: usize,
}

fn handle_opt(h: u16) -> Option<u16> {
    (h < 0xFFFE).then_some(h)
}

fn width(w: u16) -> Option<u16> {
    (w != 0xFFFF).then_some(w)
}

fn unknown_ff(b: u8) -> Option<u8> {
    (b != 0xFF).then_some(b)
}

/// A speed WORD with its DWORD extension: 0 unknown, FFFFh "see the extended field"
/// whose bits 30:0 hold MT/s (bit 31 reserved).
fn speed(s: &Structure, word_at: usize, ext_at: usize) -> Option<u32> {
    match s.word(word_at)? {
        0 => None,
        0xFFFF => s.dword(ext_at).map(|v| v & 0x7FFF_FFFF).filter(|&v| v != 0),
        v => Some(u32::from(v)),
    }
}

/// Start and end (exclusive) from the KB DWORDs or, when the start DWORD is
/// FFFF_FFFFh, the byte QWORDs (inclusive end).
fn range(s: &Structure, at: usize, ext_at: usize) -> Result<(u64, u64), String> {
    let (start_kb, end_kb) = (s.dword(at), s.dword(at + 4));
    let (Some(start_kb), Some(end_kb)) = (start_kb, end_kb) else {
        return Err("too short for its address fields".into());
    };
    let (start, last) = if start_kb == 0xFFFF_FFFF {
        match (s.qword(ext_at), s.qword(ext_at + 8)) {
            (Some(a), Some(b)) => (a, b),
            _ => {
                return Err(
                    "points to the extended address fields but is too short to hold them".into(),
                )
            }
        }
    } else {
        (u64::from(start_kb) * 1024, u64::from(end_kb) * 1024 + 1023)
    };
    if last < start {
        return Err(format!("ends ({last:#x}) before it starts ({start:#x})"));
    }
    Ok((start, last.saturating_add(1)))
}

/// Decodes the structures numalab uses; others are ignored. A structure too short for
/// its required fields (the 2.1 layout) is skipped with a note.
pub fn decode(structures: &[Structure]) -> Decoded {
    let mut d = Decoded::default();
    for s in structures {
        let skip = |d: &mut Decoded, why: &str| {
            d.notes.push(format!(
                "type {} structure {:#06x} skipped: {why}",
                s.ty, s.handle
            ));
            d.skipped += 1;
            if s.ty == 17 {
                d.skipped_devices += 1;
            }
        };
        match s.ty {
            1 => {
                let parts: Vec<String> = [s.string(0x04), s.string(0x05)]
                    .into_iter()
                    .flatten()
                    .filter(|x| !x.is_empty())
                    .collect();
                if !parts.is_empty() && d.system.is_none() {
                    d.system = Some(parts.join(" "));
                }
            }
            4 => {
                let Some(status) = s.byte(0x18) else {
                    skip(&mut d, "shorter than the processor status field (0x18)");
                    continue;
                };
                d.processors.push(Processor {
                    handle: s.handle,
                    designation: s.string(0x04),
                    populated: status & 0x40 != 0,
                    central: s.byte(0x05) == Some(3),
                });
            }
            16 => {
                if s.formatted.len() < 0x0F {
                    skip(
                        &mut d,
                        "shorter than the 15 bytes of a physical memory array",
                    );
                    continue;
                }
                let max_kb = s.dword(0x07).unwrap_or(0x8000_0000);
                let max = if max_kb == 0x8000_0000 {
                    s.qword(0x0F).filter(|&v| v != 0)
                } else {
                    Some(u64::from(max_kb) * 1024)
                };
                d.arrays.push(PhysicalMemoryArray {
                    handle: s.handle,
                    location: s.byte(0x04).unwrap_or(2),
                    usage: s.byte(0x05).unwrap_or(2),
                    error_correction: s.byte(0x06).unwrap_or(2),
                    max_capacity_bytes: max,
                    devices: s.word(0x0D),
                });
            }
            17 => {
                if s.formatted.len() < 0x15 {
                    skip(&mut d, "shorter than the 21 bytes of a memory device");
                    continue;
                }
                let size = match s.word(0x0C).unwrap_or(0xFFFF) {
                    0 => DeviceSize::NotInstalled,
                    0xFFFF => DeviceSize::Unknown,
                    0x7FFF => match s.dword(0x1C) {
                        Some(mb) if mb & 0x7FFF_FFFF != 0 => {
                            DeviceSize::Bytes(u64::from(mb & 0x7FFF_FFFF) << 20)
                        }
                        _ => DeviceSize::Unknown,
                    },
                    v if v & 0x8000 != 0 => DeviceSize::Bytes(u64::from(v & 0x7FFF) << 10),
                    v => DeviceSize::Bytes(u64::from(v) << 20),
                };
                d.devices.push(MemoryDeviceRaw {
                    handle: s.handle,
                    array_handle: s.word(0x04).and_then(handle_opt),
                    total_width: s.word(0x08).and_then(width),
                    data_width: s.word(0x0A).and_then(width),
                    size,
                    form_factor: s.byte(0x0E).unwrap_or(2),
                    locator: s.string(0x10),
                    bank_locator: s.string(0x11),
                    memory_type: s.byte(0x12).unwrap_or(2),
                    type_detail: s.word(0x13),
                    speed: speed(s, 0x15, 0x54),
                    configured_speed: speed(s, 0x20, 0x58),
                    manufacturer: s.string(0x17),
                    part_number: s.string(0x1A),
                    rank: s.byte(0x1B).map(|a| a & 0x0F).filter(|&r| r != 0),
                    technology: s.byte(0x28),
                });
            }
            19 => {
                if s.formatted.len() < 0x0F {
                    skip(
                        &mut d,
                        "shorter than the 15 bytes of an array mapped address",
                    );
                    continue;
                }
                match range(s, 0x04, 0x0F) {
                    Ok((start, end)) => d.array_maps.push(ArrayMappedAddress {
                        handle: s.handle,
                        array_handle: s.word(0x0C).unwrap_or(0xFFFF),
                        start,
                        end,
                        partition_width: s.byte(0x0E),
                    }),
                    Err(e) => skip(&mut d, &e),
                }
            }
            20 => {
                if s.formatted.len() < 0x13 {
                    skip(
                        &mut d,
                        "shorter than the 19 bytes of a device mapped address",
                    );
                    continue;
                }
                match range(s, 0x04, 0x13) {
                    Ok((start, end)) => d.device_maps.push(DeviceMappedAddress {
                        handle: s.handle,
                        device_handle: s.word(0x0C).unwrap_or(0xFFFF),
                        array_mapped_handle: s.word(0x0E).unwrap_or(0xFFFF),
                        start,
                        end,
                        partition_row_position: s.byte(0x10).and_then(unknown_ff),
                        interleave_position: s.byte(0x11).and_then(unknown_ff),
                        interleaved_data_depth: s.byte(0x12).and_then(unknown_ff),
                    }),
                    Err(e) => skip(&mut d, &e),
                }
            }
            _ => {}
        }
    }
    d
}

/// Physical memory array location (7.17.1).
pub fn array_location_name(code: u8) -> String {
    match code {
        0x01 => "Other",
        0x02 => "Unknown",
        0x03 => "System board or motherboard",
        0x04 => "ISA add-on card",
        0x05 => "EISA add-on card",
        0x06 => "PCI add-on card",
        0x07 => "MCA add-on card",
        0x08 => "PCMCIA add-on card",
        0x09 => "Proprietary add-on card",
        0x0A => "NuBus",
        0xA0 => "PC-98/C20 add-on card",
        0xA1 => "PC-98/C24 add-on card",
        0xA2 => "PC-98/E add-on card",
        0xA3 => "PC-98/Local bus add-on card",
        0xA4 => "CXL add-on card",
        _ => return format!("code {code:#04x}"),
    }
    .to_string()
}

/// Physical memory array use (7.17.2).
pub fn array_use_name(code: u8) -> String {
    match code {
        0x01 => "Other",
        0x02 => "Unknown",
        0x03 => "System memory",
        0x04 => "Video memory",
        0x05 => "Flash memory",
        0x06 => "Non-volatile RAM",
        0x07 => "Cache memory",
        _ => return format!("code {code:#04x}"),
    }
    .to_string()
}

/// Physical memory array error correction (7.17.3).
pub fn error_correction_name(code: u8) -> String {
    match code {
        0x01 => "Other",
        0x02 => "Unknown",
        0x03 => "None",
        0x04 => "Parity",
        0x05 => "Single-bit ECC",
        0x06 => "Multi-bit ECC",
        0x07 => "CRC",
        _ => return format!("code {code:#04x}"),
    }
    .to_string()
}

/// Memory device form factor (7.18.1).
pub fn form_factor_name(code: u8) -> String {
    match code {
        0x01 => "Other",
        0x02 => "Unknown",
        0x03 => "SIMM",
        0x04 => "SIP",
        0x05 => "Chip",
        0x06 => "DIP",
        0x07 => "ZIP",
        0x08 => "Proprietary card",
        0x09 => "DIMM",
        0x0A => "TSOP",
        0x0B => "Row of chips",
        0x0C => "RIMM",
        0x0D => "SODIMM",
        0x0E => "SRIMM",
        0x0F => "FB-DIMM",
        0x10 => "Die",
        0x11 => "CAMM",
        _ => return format!("code {code:#04x}"),
    }
    .to_string()
}

/// Memory device type (7.18.2). 15h-17h are reserved.
pub fn memory_type_name(code: u8) -> String {
    match code {
        0x01 => "Other",
        0x02 => "Unknown",
        0x03 => "DRAM",
        0x04 => "EDRAM",
        0x05 => "VRAM",
        0x06 => "SRAM",
        0x07 => "RAM",
        0x08 => "ROM",
        0x09 => "Flash",
        0x0A => "EEPROM",
        0x0B => "FEPROM",
        0x0C => "EPROM",
        0x0D => "CDRAM",
        0x0E => "3DRAM",
        0x0F => "SDRAM",
        0x10 => "SGRAM",
        0x11 => "RDRAM",
        0x12 => "DDR",
        0x13 => "DDR2",
        0x14 => "DDR2 FB-DIMM",
        0x18 => "DDR3",
        0x19 => "FBD2",
        0x1A => "DDR4",
        0x1B => "LPDDR",
        0x1C => "LPDDR2",
        0x1D => "LPDDR3",
        0x1E => "LPDDR4",
        0x1F => "Logical non-volatile device",
        0x20 => "HBM",
        0x21 => "HBM2",
        0x22 => "DDR5",
        0x23 => "LPDDR5",
        0x24 => "HBM3",
        _ => return format!("type {code:#04x}"),
    }
    .to_string()
}

/// Memory device technology (7.18.6, SMBIOS 3.2+).
pub fn technology_name(code: u8) -> String {
    match code {
        0x01 => "Other",
        0x02 => "Unknown",
        0x03 => "DRAM",
        0x04 => "NVDIMM-N",
        0x05 => "NVDIMM-F",
        0x06 => "NVDIMM-P",
        0x07 => "Intel Optane persistent memory",
        _ => return format!("code {code:#04x}"),
    }
    .to_string()
}

/// Memory type codes of the DDR SDRAM generations whose JEDEC modules carry 64 data
/// bits (DDR, DDR2, DDR3, DDR4, DDR5).
pub fn is_ddr_dimm_type(code: u8) -> bool {
    matches!(code, 0x12 | 0x13 | 0x18 | 0x1A | 0x22)
}

/// Memory type codes of high-bandwidth memory (HBM, HBM2, HBM3).
pub fn is_hbm_type(code: u8) -> bool {
    matches!(code, 0x20 | 0x21 | 0x24)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t17(len: u8, fields: &[(usize, &[u8])], strings: &[&str]) -> Vec<u8> {
        let mut f = vec![0u8; usize::from(len)];
        f[0] = 17;
        f[1] = len;
        f[2] = 0x00;
        f[3] = 0x11;
        for (at, bytes) in fields {
            f[*at..*at + bytes.len()].copy_from_slice(bytes);
        }
        for s in strings {
            f.extend_from_slice(s.as_bytes());
            f.push(0);
        }
        if strings.is_empty() {
            f.push(0);
        }
        f.push(0);
        f
    }

    #[test]
    fn entry_point_3_0() {
        let mut ep = vec![0u8; 0x18];
        ep[..5].copy_from_slice(b"_SM3_");
        ep[6] = 0x18;
        ep[7] = 3;
        ep[8] = 3;
        ep[9] = 0;
        ep[0x0C..0x10].copy_from_slice(&1234u32.to_le_bytes());
        let sum = ep.iter().fold(0u8, |a, &x| a.wrapping_add(x));
        ep[5] = 0u8.wrapping_sub(sum);
        let e = parse_entry_point(&ep).unwrap();
        assert_eq!(e.kind, EntryPointKind::Smbios3);
        assert_eq!(e.version(), "3.3.0");
        assert_eq!(e.table_len, 1234);
        assert!(e.checksum_ok);
        assert!(parse_entry_point(&ep[..10]).is_err());
        assert!(parse_entry_point(b"garbage garbage garbage garbage").is_err());
    }

    #[test]
    fn strings_are_one_based_and_sanitized() {
        let b = t17(
            0x15,
            &[(0x10, &[2]), (0x11, &[1])],
            &["BANK\t0", "DIMM_A1\x1b[31m"],
        );
        let s = parse_structure(&b).unwrap();
        assert_eq!(s.string(0x10).as_deref(), Some("DIMM_A1 [31m"));
        assert_eq!(s.string(0x11).as_deref(), Some("BANK 0"));
        // Index 0 and out-of-range indices are no string.
        assert_eq!(s.string(0x12), None);
        let b = t17(0x15, &[(0x10, &[9])], &["x"]);
        assert_eq!(parse_structure(&b).unwrap().string(0x10), None);
    }

    #[test]
    fn size_and_extended_fields() {
        // 0x7FFF: extended size (MB), 0xFFFF speeds: extended speeds (3.3).
        let b = t17(
            0x5C,
            &[
                (0x0C, &0x7FFFu16.to_le_bytes()),
                (0x1C, &(64u32 * 1024).to_le_bytes()),
                (0x15, &0xFFFFu16.to_le_bytes()),
                (0x20, &0xFFFFu16.to_le_bytes()),
                (0x54, &70_000u32.to_le_bytes()),
                (0x58, &68_000u32.to_le_bytes()),
            ],
            &[],
        );
        let d = decode(&[parse_structure(&b).unwrap()]);
        let m = &d.devices[0];
        assert_eq!(m.size, DeviceSize::Bytes(64 << 30));
        assert_eq!(m.speed, Some(70_000));
        assert_eq!(m.configured_speed, Some(68_000));
        // KB granularity (bit 15).
        let b = t17(0x15, &[(0x0C, &(0x8000u16 | 512).to_le_bytes())], &[]);
        assert_eq!(
            decode(&[parse_structure(&b).unwrap()]).devices[0].size,
            DeviceSize::Bytes(512 * 1024)
        );
        // 0xFFFF speed on a structure too short for the extension: unknown.
        let b = t17(0x22, &[(0x15, &0xFFFFu16.to_le_bytes())], &[]);
        assert_eq!(
            decode(&[parse_structure(&b).unwrap()]).devices[0].speed,
            None
        );
    }

    #[test]
    fn short_structures_are_skipped_with_a_note() {
        let b = t17(0x10, &[], &[]);
        let d = decode(&[parse_structure(&b).unwrap()]);
        assert!(d.devices.is_empty());
        assert_eq!(d.skipped, 1);
        assert!(d.notes[0].contains("shorter"), "{:?}", d.notes);
    }

    #[test]
    fn table_walk_stops_on_bad_length_and_truncation() {
        let mut b = t17(0x15, &[], &["DIMM 0"]);
        b.extend_from_slice(&[17, 2, 0, 0, 0, 0]);
        let t = parse_table(&b);
        assert_eq!(t.structures.len(), 1);
        assert_eq!(t.skipped, 1);
        assert!(t.notes[0].contains("length 2"), "{:?}", t.notes);
        let b = t17(0x15, &[], &["DIMM 0"]);
        let t = parse_table(&b[..b.len() - 1]);
        assert!(t.structures.is_empty());
        assert!(t.notes[0].contains("not terminated"), "{:?}", t.notes);
    }
}
