//! A small C ABI over live memory: a pool of real memory whose lines' homes follow from
//! a recovered home hash, handing other programs lines homed near a core
//! (`include/numalab_home.h`, built into `libnumalab_home.so`).
//!
//! The work is done by [`LivePool`], which takes the map record, the machine's
//! fingerprint and the function reading physical addresses as arguments, so that it can
//! be tested without root and without a real map; the `extern "C"` functions are thin
//! wrappers that never unwind into C (a panic becomes an error code) and keep the last
//! error message per thread for [`numalab_home_last_error`].

use crate::alloc::{Homes, LinePool};
use crate::HomeError;
use numalab_records::home::{Fingerprint, HomeMapRecord, LINE_UNKNOWN};
use numalab_schema::memory::PageKind;
use numalab_schema::text::io_reason;
use numalab_schema::{Bundle, Classify, ErrorClass, Record, RecordKind};
use numalab_topo::bind::{base_page_size, Region};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::path::Path;
use std::sync::Mutex;

/// The huge page size a pool is made of (its size is rounded up to a multiple).
pub const POOL_PAGE_BYTES: usize = 2 << 20;

/// The largest share of the system's available memory (`MemAvailable`) a pool may take.
pub const MAX_AVAILABLE_SHARE: f64 = 0.5;

/// Why a pool cannot be placed without physical addresses.
pub const PHYS_NEED_ROOT: &str = "physical addresses need root (CAP_SYS_ADMIN): /proc/self/pagemap shows page frame numbers only to it, and the home of a line follows from its physical address; run the program as root or give it CAP_SYS_ADMIN";

fn topo_err(e: numalab_topo::TopoError) -> HomeError {
    match e.class() {
        ErrorClass::Usage => HomeError::Usage(e.to_string()),
        ErrorClass::Unsupported => HomeError::Unsupported(e.to_string()),
        _ => HomeError::Runtime(e.to_string()),
    }
}

/// The physical byte address of every page of `region` (pages of
/// `region.page_bytes()`), from `/proc/self/pagemap`. Needs CAP_SYS_ADMIN; the pages
/// must have been touched.
/// The physical byte address of each page of `region`, from `/proc/self/pagemap` (needs
/// root): what [`LivePool::open`] takes on a live machine.
pub fn pagemap_phys(region: &Region) -> Result<Vec<u64>, HomeError> {
    region_phys(region)
}

pub(crate) fn region_phys(region: &Region) -> Result<Vec<u64>, HomeError> {
    use std::os::unix::fs::FileExt;
    let base = base_page_size();
    let page = region.page_bytes();
    let start = region.as_slice().as_ptr() as usize;
    let pages = region.pages();
    let f = std::fs::File::open("/proc/self/pagemap").map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => {
            HomeError::Unsupported(format!("{PHYS_NEED_ROOT} (opening it: {})", io_reason(&e)))
        }
        _ => HomeError::Runtime(format!(
            "/proc/self/pagemap could not be opened: {}",
            io_reason(&e)
        )),
    })?;
    let read_err = |e: std::io::Error| {
        HomeError::Runtime(format!(
            "/proc/self/pagemap could not be read: {}",
            io_reason(&e)
        ))
    };
    let entries: Vec<u64> = if page == base {
        let mut raw = vec![0u8; pages * 8];
        f.read_exact_at(&mut raw, (start / base * 8) as u64)
            .map_err(read_err)?;
        raw.chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
            .collect()
    } else {
        let mut v = Vec::with_capacity(pages);
        for i in 0..pages {
            let mut b = [0u8; 8];
            f.read_exact_at(&mut b, ((start + i * page) / base * 8) as u64)
                .map_err(read_err)?;
            v.push(u64::from_ne_bytes(b));
        }
        v
    };
    let mut phys = Vec::with_capacity(pages);
    for (i, &e) in entries.iter().enumerate() {
        match crate::live::pagemap_pfn(e) {
            Some(pfn) => phys.push(pfn * base as u64),
            None => {
                return Err(HomeError::Runtime(format!(
                    "page {i} of the pool is not present in /proc/self/pagemap although it was touched (swapped out?); lock the pool in memory (`ulimit -l`) and retry"
                )))
            }
        }
    }
    if phys.iter().all(|&p| p == 0) {
        return Err(HomeError::Unsupported(PHYS_NEED_ROOT.into()));
    }
    Ok(phys)
}

/// A pool of real memory whose lines' homes are known, handing out lines homed near a
/// CPU.
#[derive(Debug)]
pub struct LivePool {
    region: Region,
    /// The start of the region, taken once from a mutable borrow of it: line pointers
    /// handed out are derived from it.
    base: *mut u8,
    line_bytes: usize,
    pool: LinePool,
    homes: Homes,
    /// Facts about the pool (page backing, a failed `mlock`, lines without a home), in
    /// sentences.
    pub notes: Vec<String>,
}

// SAFETY: `base` points into `region`, which the LivePool owns (Region is Send); the
// pointer is only turned into addresses, never dereferenced by the pool.
unsafe impl Send for LivePool {}

/// Maps a pool of `bytes` (a multiple of [`POOL_PAGE_BYTES`]) on hugetlbfs pages when
/// enough are free, else on transparent huge pages, touched.
fn allocate(bytes: usize, notes: &mut Vec<String>) -> Result<Region, HomeError> {
    let need = (bytes / POOL_PAGE_BYTES) as u64;
    let free = std::fs::read_to_string(format!(
        "/sys/kernel/mm/hugepages/hugepages-{}kB/free_hugepages",
        POOL_PAGE_BYTES / 1024
    ))
    .ok()
    .and_then(|t| t.trim().parse::<u64>().ok());
    let why_not = match free {
        None => "this kernel has no 2 MiB hugetlbfs pool".to_string(),
        Some(f) if f < need => format!("{f} free 2 MiB hugetlbfs pages, {need} needed"),
        Some(_) => match Region::new(bytes, PageKind::HugeTlb(POOL_PAGE_BYTES as u64)) {
            Err(e) => format!("the hugetlbfs mapping failed: {e}"),
            Ok(mut r) => {
                // Populate before touching: a pool emptied meanwhile is an error here,
                // not a SIGBUS at the touch.
                let rc = crate::sys::madvise(&mut r, libc::MADV_POPULATE_WRITE);
                let e = std::io::Error::last_os_error();
                // EINVAL: a kernel before 5.14, without MADV_POPULATE_WRITE; the free
                // count was checked above.
                if rc == 0 || e.raw_os_error() == Some(libc::EINVAL) {
                    r.touch();
                    notes.push(format!(
                        "pool: {bytes} bytes on {need} hugetlbfs pages of 2 MiB"
                    ));
                    return Ok(r);
                }
                format!("hugetlbfs pages could not be populated: {}", io_reason(&e))
            }
        },
    };
    let mut r = Region::new(bytes, PageKind::Transparent).map_err(topo_err)?;
    r.touch();
    // No later collapse into huge pages: khugepaged would move the pages, and their
    // physical addresses (the lines' homes) with them.
    crate::sys::madvise(&mut r, libc::MADV_NOHUGEPAGE);
    let thp = match r.thp_bytes() {
        Some(t) => format!("transparent huge pages back {t} of its bytes"),
        None => "its transparent huge pages could not be counted".to_string(),
    };
    notes.push(format!(
        "pool: {bytes} bytes on transparent huge pages if the kernel gave them ({thp}); hugetlbfs pages were not used: {why_not}"
    ));
    Ok(r)
}

impl LivePool {
    /// Makes a pool of at least `bytes` (rounded up to whole 2 MiB pages) for the map
    /// `rec`: refuses a map made on a machine other than `this_machine`, a map without
    /// a recovered home hash or without a floorplan; maps, touches and locks the memory,
    /// asks `phys` for the physical byte address of each of the region's pages (of
    /// `Region::page_bytes()`, in order) and gives each line the home the hash predicts.
    pub fn open(
        rec: &HomeMapRecord,
        bytes: usize,
        phys: &dyn Fn(&Region) -> Result<Vec<u64>, HomeError>,
        this_machine: &Fingerprint,
    ) -> Result<LivePool, HomeError> {
        let diffs = rec.fingerprint.differences(this_machine);
        if !diffs.is_empty() {
            return Err(HomeError::input(
                "home map",
                format!(
                    "it was made on another machine (the map's vs this one's: {}); map this machine with `numalab home map` and use that map",
                    diffs.join("; ")
                ),
            ));
        }
        let remap = "map again with `numalab home map` as root (physical addresses) over a buffer large enough for the hash to cover every address bit";
        let hash = match &rec.home_hash {
            None => {
                return Err(HomeError::input(
                    "home map",
                    format!("it has no home hash, so the home of a new address is unknown; {remap}"),
                ))
            }
            Some(h) if h.status != "recovered" => {
                return Err(HomeError::input(
                    "home map",
                    format!(
                        "its home hash is {:?}, not \"recovered\", so the home of a new address cannot be predicted; {remap}",
                        h.status
                    ),
                ))
            }
            Some(h) => h,
        };
        let homes = Homes::from_record(rec)?;
        let line_bytes = rec.line_bytes as usize;
        if !line_bytes.is_power_of_two() || !(8..=4096).contains(&line_bytes) {
            return Err(HomeError::input(
                "home map",
                format!("its line size of {line_bytes} bytes is not a cache line size (a power of two from 8 to 4096); the map is damaged: map the machine again"),
            ));
        }
        if bytes == 0 {
            return Err(HomeError::Usage(
                "a pool of 0 bytes was asked for; ask for the bytes the program needs".into(),
            ));
        }
        let bytes = bytes
            .checked_next_multiple_of(POOL_PAGE_BYTES)
            .ok_or_else(|| {
                HomeError::Usage(format!(
                    "a pool of {bytes} bytes does not fit this address space"
                ))
            })?;
        let mut notes = Vec::new();
        if let Some(avail) = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| numalab_topo::system::meminfo_bytes(&t, "MemAvailable"))
        {
            let limit = (avail as f64 * MAX_AVAILABLE_SHARE) as u64;
            if bytes as u64 > limit {
                return Err(HomeError::Usage(format!(
                    "a pool of {bytes} bytes is more than {:.0}% of the memory available ({avail} bytes, MemAvailable in /proc/meminfo); ask for at most {limit} bytes",
                    MAX_AVAILABLE_SHARE * 100.0
                )));
            }
        }
        let mut region = allocate(bytes, &mut notes)?;
        // Lock: the physical addresses, hence the lines' homes, stay put (no swap).
        let rc = crate::sys::mlock(&region);
        if rc != 0 {
            notes.push(format!(
                "mlock of the pool failed ({}): pages may be swapped out and come back elsewhere, with other homes; raise the locked-memory limit (`ulimit -l`) or run as root",
                std::io::Error::last_os_error()
            ));
        }
        let page_phys = phys(&region)?;
        if page_phys.len() != region.pages() {
            return Err(HomeError::Runtime(format!(
                "{} physical addresses were read for the {} pages of the pool",
                page_phys.len(),
                region.pages()
            )));
        }
        let per_page = region.page_bytes() / line_bytes;
        let mut home = Vec::with_capacity(region.len() / line_bytes);
        for &pa in &page_phys {
            home.extend((0..per_page).map(|j| {
                hash.predict(pa + (j * line_bytes) as u64)
                    .unwrap_or(LINE_UNKNOWN)
            }));
        }
        let known = home.iter().filter(|&&h| h != LINE_UNKNOWN).count();
        if known == 0 {
            return Err(HomeError::input(
                "home map",
                "its home hash gives no home for any line of the pool (its table has no entry for these addresses); the map is damaged: map the machine again",
            ));
        }
        if known < home.len() {
            notes.push(format!(
                "{} of the pool's {} lines have no home in the hash's table and are never handed out",
                home.len() - known,
                home.len()
            ));
        }
        let base = region.as_mut_slice().as_mut_ptr();
        Ok(LivePool {
            region,
            base,
            line_bytes,
            pool: LinePool::new(home),
            homes,
            notes,
        })
    }

    /// Line size, bytes.
    pub fn line_bytes(&self) -> usize {
        self.line_bytes
    }

    /// The memory.
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// The pool's memory, for timed accesses to the lines handed out from it.
    pub(crate) fn live_buffer(&mut self) -> crate::live::LiveBuffer<'_> {
        // SAFETY: `base` is the start of `region`, which the pool owns and keeps mapped,
        // readable and writable, for as long as it lives; the pool is borrowed mutably
        // for the buffer's lifetime.
        unsafe { crate::live::LiveBuffer::from_raw(self.base, self.region.len()) }
    }

    /// The lines and their homes.
    pub fn pool(&self) -> &LinePool {
        &self.pool
    }

    /// Where the homes and CPUs are.
    pub fn homes(&self) -> &Homes {
        &self.homes
    }

    /// The address of line `line` (not checked against the pool).
    pub fn line_ptr(&self, line: usize) -> *mut u8 {
        self.base.wrapping_add(line * self.line_bytes)
    }

    /// The line starting at `ptr`, when `ptr` is the start of a line of the pool.
    pub fn line_of(&self, ptr: *const u8) -> Option<usize> {
        let off = (ptr as usize).checked_sub(self.base as usize)?;
        (off < self.region.len() && off.is_multiple_of(self.line_bytes))
            .then_some(off / self.line_bytes)
    }

    /// `count` lines homed within `distance` hops of `cpu` (`None`: any line), as
    /// pointers to their first byte, in address order (see [`LinePool::take`]).
    pub fn alloc(
        &mut self,
        cpu: u32,
        distance: Option<u32>,
        count: usize,
    ) -> Result<Vec<*mut u8>, HomeError> {
        let lines = self.pool.take(&self.homes, cpu, distance, count)?;
        Ok(lines.into_iter().map(|l| self.line_ptr(l)).collect())
    }

    /// Gives lines back. Pointers that are not the start of a line of the pool are not
    /// given back and make the error; the others are given back all the same.
    pub fn free(&mut self, ptrs: &[*const u8]) -> Result<(), HomeError> {
        let mut lines = Vec::with_capacity(ptrs.len());
        let mut bad = Vec::new();
        for &p in ptrs {
            match self.line_of(p) {
                Some(l) => lines.push(l),
                None => bad.push(p),
            }
        }
        self.pool.give_back(&lines);
        if let Some(first) = bad.first() {
            return Err(HomeError::Usage(format!(
                "{} of the {} pointers given back (the first {first:p}) are not lines of this pool (from {:p}, {} bytes); give back only pointers numalab_home_alloc returned",
                bad.len(),
                ptrs.len(),
                self.base,
                self.region.len()
            )));
        }
        Ok(())
    }
}

/// Decodes the `home.map` record of a bundle: exactly one must be there.
fn from_bundle(bundle: &Bundle, what: &str) -> Result<HomeMapRecord, HomeError> {
    let maps: Vec<&Record> = bundle
        .records
        .iter()
        .filter(|r| r.kind == HomeMapRecord::KIND)
        .collect();
    match maps.as_slice() {
        [] => {
            let mut kinds: Vec<&str> = bundle.records.iter().map(|r| r.kind.as_str()).collect();
            kinds.sort_unstable();
            kinds.dedup();
            Err(HomeError::input(
                what,
                format!(
                    "it holds no home.map record (its {} records are of kinds: {}); give the results of `numalab home map`",
                    bundle.records.len(),
                    if kinds.is_empty() { "none".to_string() } else { kinds.join(", ") }
                ),
            ))
        }
        [r] => from_record(r, what),
        many => Err(HomeError::input(
            what,
            format!(
                "it holds {} home.map records (keys {}); save the one to use in a file of its own",
                many.len(),
                many.iter()
                    .map(|r| format!("{:?}", r.key))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

fn from_record(r: &Record, what: &str) -> Result<HomeMapRecord, HomeError> {
    if r.kind != HomeMapRecord::KIND {
        return Err(HomeError::input(
            what,
            format!(
                "it holds a {} record, not a home.map record; give the results of `numalab home map`",
                r.kind
            ),
        ));
    }
    serde_json::from_value(r.data.clone())
        .map_err(|e| HomeError::input(what, format!("its home.map record cannot be read: {e}")))
}

/// Reads a `home.map` record from the bytes of a file named `what`: the bare record
/// JSON, a record as stored in a bundle (`{"key", "kind": "home.map", "data": ...}`,
/// with or without the journal's `"line": "record"`), a bundle document, or a journal
/// (JSON Lines) holding exactly one `home.map` record.
pub fn parse_map(text: &[u8], what: &str) -> Result<HomeMapRecord, HomeError> {
    let value = match serde_json::from_slice::<serde_json::Value>(text) {
        Ok(v) => v,
        Err(first) => {
            // Not one JSON document: a journal, one JSON value per line.
            return match numalab_schema::journal::parse_bundle(Path::new(what), text) {
                Ok((bundle, _)) => from_bundle(&bundle, what),
                Err(e) => Err(HomeError::input(
                    what,
                    format!("it is neither a home.map record in JSON ({first}) nor a numalab journal ({e})"),
                )),
            };
        }
    };
    let has = |k: &str| value.get(k).is_some();
    if has("kind") && has("data") {
        let r: Record = serde_json::from_value(value).map_err(|e| {
            HomeError::input(
                what,
                format!("it looks like a stored record but cannot be read: {e}"),
            )
        })?;
        return from_record(&r, what);
    }
    if has("envelope") && has("records") {
        let b: Bundle = serde_json::from_value(value).map_err(|e| {
            HomeError::input(
                what,
                format!("it looks like a results bundle but cannot be read: {e}"),
            )
        })?;
        return from_bundle(&b, what);
    }
    if has("schema_version") && has("tool") {
        return Err(HomeError::input(
            what,
            "it holds only the envelope of a journal, without records; give the whole journal (results.jsonl) or the home.map record",
        ));
    }
    serde_json::from_value(value).map_err(|e| {
        HomeError::input(
            what,
            format!("it is not a home.map record ({e}); give the record, a journal line holding it, or the journal (results.jsonl) of `numalab home map`"),
        )
    })
}

/// Reads a `home.map` record from a file (see [`parse_map`] for the forms accepted) or
/// from the `--out` folder of `numalab home map` (its journal; the last map in it).
pub fn load_map(path: &Path) -> Result<HomeMapRecord, HomeError> {
    let what = numalab_schema::text::path_text(path);
    if path.is_dir() {
        let (bundle, _) = numalab_schema::journal::read_bundle(path)
            .map_err(|e| HomeError::input(what.clone(), e.to_string()))?;
        return bundle
            .records_of::<HomeMapRecord>()
            .into_iter()
            .last()
            .map(|(_, r)| r)
            .ok_or_else(|| {
                HomeError::input(
                    what,
                    "the folder holds no home.map record; run `numalab home map --out DIR` first",
                )
            });
    }
    let text = numalab_schema::input::read(path, "a home map", numalab_schema::input::BUNDLE)
        .map_err(|e| HomeError::input(what.clone(), e.reason))?;
    parse_map(&text, &what)
}

/// Why the home map `rec` cannot give the home affinity of a schedule on the machine
/// `here`: it was made on another machine, or it places no homes on a floorplan.
/// `None` when it can.
pub fn affinity_refusal(rec: &HomeMapRecord, here: &Fingerprint) -> Option<String> {
    let d = rec.fingerprint.differences(here);
    if !d.is_empty() {
        return Some(format!(
            "the map was made on another machine ({}); map this one with `numalab home map --out DIR`",
            d.join("; ")
        ));
    }
    if !rec.structure_visible || rec.homes.iter().all(|h| h.stop.is_none()) {
        return Some("the map shows no homes placed on a floorplan, so there is no affinity to enforce; map with `--floorplan LAYOUT` on a machine whose homes are visible".into());
    }
    None
}

/// The home map at `path` ([`load_map`]) checked for home affinity on this machine
/// ([`affinity_refusal`]); what is wrong in words otherwise.
pub fn check_affinity_map(path: &Path) -> Result<(), String> {
    let rec = load_map(path).map_err(|e| e.to_string())?;
    affinity_refusal(&rec, &this_machine()).map_or(Ok(()), Err)
}

/// The fingerprint of the machine this process runs on.
fn this_machine() -> Fingerprint {
    crate::live::live_fingerprint()
}

// ---- the C ABI ---------------------------------------------------------------------

/// The handle C programs hold (`numalab_home *`).
#[derive(Debug)]
pub struct NumalabHome {
    line_bytes: usize,
    pool: Mutex<LivePool>,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(msg: String) {
    let mut bytes = msg.into_bytes();
    bytes.retain(|&b| b != 0);
    let c = CString::new(bytes).unwrap_or_default();
    // During thread teardown the slot may be gone: the message is then lost.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = c);
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs `f` without letting a panic unwind into C: an error or a panic is stored as
/// the last error and `fail` returned.
fn guarded<R>(fail: R, f: impl FnOnce() -> Result<R, HomeError>) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            set_last_error(e.to_string());
            fail
        }
        Err(p) => {
            set_last_error(format!(
                "internal error in numalab_home (please report it): {}",
                panic_text(p.as_ref())
            ));
            fail
        }
    }
}

fn lock(h: &NumalabHome) -> std::sync::MutexGuard<'_, LivePool> {
    // A panic while locked was caught and reported; the pool's state is still whole
    // (lines are marked taken only after every check).
    h.pool.lock().unwrap_or_else(|p| p.into_inner())
}

/// Loads the home map at `map_path` and makes a pool of `bytes` of memory homed as it
/// says (see `numalab_home.h`). Returns NULL on error (message in
/// [`numalab_home_last_error`]).
///
/// # Safety
/// `map_path` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn numalab_home_open(
    map_path: *const c_char,
    bytes: usize,
) -> *mut NumalabHome {
    guarded(std::ptr::null_mut(), || {
        if map_path.is_null() {
            return Err(HomeError::Usage(
                "numalab_home_open: map_path is NULL; give the path of a home map".into(),
            ));
        }
        // SAFETY: non-NULL and NUL-terminated (caller's contract).
        let c = unsafe { CStr::from_ptr(map_path) };
        let path =
            Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(c.to_bytes()));
        let rec = load_map(path)?;
        let pool = LivePool::open(&rec, bytes, &region_phys, &this_machine())?;
        Ok(Box::into_raw(Box::new(NumalabHome {
            line_bytes: pool.line_bytes(),
            pool: Mutex::new(pool),
        })))
    })
}

/// Fills `out[0..count)` with `count` lines homed within `distance` hops of `cpu`
/// (`distance < 0`: any line). Returns 0, or -1 on error.
///
/// # Safety
/// `h` must be NULL or a handle from [`numalab_home_open`] not yet closed; `out` must be
/// NULL or point to `count` writable pointers.
#[no_mangle]
pub unsafe extern "C" fn numalab_home_alloc(
    h: *mut NumalabHome,
    cpu: c_uint,
    distance: c_int,
    count: usize,
    out: *mut *mut c_void,
) -> c_int {
    guarded(-1, || {
        // SAFETY: NULL or a live handle (caller's contract); only shared access, the
        // pool is behind a mutex.
        let Some(h) = (unsafe { h.as_ref() }) else {
            return Err(HomeError::Usage(
                "numalab_home_alloc: the handle is NULL; open one with numalab_home_open".into(),
            ));
        };
        if count == 0 {
            return Ok(0);
        }
        if out.is_null() {
            return Err(HomeError::Usage(format!(
                "numalab_home_alloc: out is NULL; give an array of {count} pointers"
            )));
        }
        let distance = u32::try_from(distance).ok();
        let lines = lock(h).alloc(cpu, distance, count)?;
        // SAFETY: out points to `count` writable pointers (caller's contract), and
        // `lines.len() == count`.
        let out = unsafe { std::slice::from_raw_parts_mut(out, count) };
        for (o, l) in out.iter_mut().zip(lines) {
            *o = l.cast();
        }
        Ok(0)
    })
}

/// Gives `count` lines back to the pool. Pointers that are not lines of the pool are
/// skipped (and reported in [`numalab_home_last_error`]).
///
/// # Safety
/// `h` must be NULL or a live handle; `lines` must be NULL or point to `count` pointers.
#[no_mangle]
pub unsafe extern "C" fn numalab_home_free(
    h: *mut NumalabHome,
    lines: *const *mut c_void,
    count: usize,
) {
    guarded((), || {
        // SAFETY: NULL or a live handle (caller's contract).
        let Some(h) = (unsafe { h.as_ref() }) else {
            return Err(HomeError::Usage(
                "numalab_home_free: the handle is NULL".into(),
            ));
        };
        if count == 0 {
            return Ok(());
        }
        if lines.is_null() {
            return Err(HomeError::Usage("numalab_home_free: lines is NULL".into()));
        }
        // SAFETY: `lines` points to `count` pointers (caller's contract).
        let ptrs = unsafe { std::slice::from_raw_parts(lines, count) };
        let ptrs: Vec<*const u8> = ptrs.iter().map(|p| p.cast_const().cast()).collect();
        lock(h).free(&ptrs)
    })
}

/// The line size of the pool, bytes (0 for a NULL handle).
///
/// # Safety
/// `h` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn numalab_home_line_bytes(h: *const NumalabHome) -> usize {
    // SAFETY: NULL or a live handle (caller's contract).
    guarded(0, || Ok(unsafe { h.as_ref() }.map_or(0, |h| h.line_bytes)))
}

/// The message of the last failed call on this thread ("" when none failed). Valid
/// until the next failing call on this thread.
#[no_mangle]
pub extern "C" fn numalab_home_last_error() -> *const c_char {
    const EMPTY: &CStr = c"";
    guarded(EMPTY.as_ptr(), || {
        Ok(LAST_ERROR
            .try_with(|e| e.borrow().as_ptr())
            .unwrap_or(EMPTY.as_ptr()))
    })
}

/// Frees the pool and the handle; lines handed out become invalid. NULL is ignored.
///
/// # Safety
/// `h` must be NULL or a live handle, not used again after this call.
#[no_mangle]
pub unsafe extern "C" fn numalab_home_close(h: *mut NumalabHome) {
    guarded((), || {
        if !h.is_null() {
            // SAFETY: a handle from numalab_home_open (Box::into_raw), closed once
            // (caller's contract).
            drop(unsafe { Box::from_raw(h) });
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_records::home::{Access, HashFit, Home};
    use std::cell::Cell;

    /// A map whose hash gives home (bit 6) + 2 (bit 7) of an address: lines cycle through
    /// homes 0, 1, 2, 3, at the corners of a 4x4 mesh; CPU 0 at (0, 0), CPU 1 at
    /// (3, 3), CPU 2 at (1, 0).
    fn record(fingerprint: Fingerprint) -> HomeMapRecord {
        let stops = [[0, 0], [3, 0], [0, 3], [3, 3]];
        HomeMapRecord {
            input_origin: "measured".into(),
            fingerprint,
            buffer_bytes: 4 << 20,
            page_bytes: 2 << 20,
            huge_pages: true,
            physical_addresses: true,
            line_bytes: 64,
            access: Access::Flushed,
            probe_cpus: vec![0, 1],
            owner_cpu: None,
            repeats: 3,
            noise_ns: 1.0,
            sample_offsets: vec![],
            lines_measured: 1024,
            floorplan: Some("mesh4x4.json".into()),
            cpu_stops: vec![[0, 0, 0], [1, 3, 3], [2, 1, 0]],
            structure_visible: true,
            homes_reproduced: None,
            interfaces_reproduced: None,
            homes: (0..4u8)
                .map(|id| Home {
                    id,
                    lines: 256,
                    profile_ns: vec![100.0, 110.0],
                    stop: Some(stops[usize::from(id)]),
                    stop_confidence: Some(0.99),
                    stop_residual_ns: Some(1.0),
                })
                .collect(),
            interfaces: vec![],
            pages: vec![],
            home_hash: Some(HashFit {
                what: "home".into(),
                status: "recovered".into(),
                observed_bits: !0x3f,
                masks: vec![1 << 6, 1 << 7],
                table: vec![0, 1, 2, 3],
                linear: true,
                agreement: 1.0,
                notes: vec![],
            }),
            interface_hash: None,
            slice_hash: None,
            measure_seconds: 1.0,
            infer_seconds: 1.0,
            notes: vec![],
        }
    }

    #[test]
    fn a_map_gives_affinity_only_here_and_with_homes_on_a_floorplan() {
        let here = test_machine();
        let mut rec = record(here.clone());
        assert_eq!(affinity_refusal(&rec, &here), None);
        let mut elsewhere = here.clone();
        elsewhere.cpus = 32;
        let e = affinity_refusal(&rec, &elsewhere).unwrap();
        assert!(
            e.starts_with("the map was made on another machine ("),
            "{e}"
        );
        rec.structure_visible = false;
        let e = affinity_refusal(&rec, &here).unwrap();
        assert!(
            e.starts_with("the map shows no homes placed on a floorplan"),
            "{e}"
        );
        rec.structure_visible = true;
        for h in &mut rec.homes {
            h.stop = None;
        }
        assert!(affinity_refusal(&rec, &here).is_some());
        assert!(check_affinity_map(Path::new("/nonexistent/home.map")).is_err());
    }

    fn test_machine() -> Fingerprint {
        Fingerprint {
            recipe: numalab_records::home::FINGERPRINT_RECIPE.into(),
            source: "test".into(),
            cpu_model: "mesh 4x4".into(),
            stepping: "0".into(),
            cpus: 16,
            node_memory_bytes: vec![1 << 30],
            memory_basis: numalab_records::home::MEMORY_BLOCKS.into(),
            modes: vec!["1 NUMA node".into()],
        }
    }

    const FAKE_PHYS_BASE: u64 = 0x40_0000_0000;

    /// Pages at consecutive physical addresses from FAKE_PHYS_BASE.
    fn fake_phys(r: &Region) -> Result<Vec<u64>, HomeError> {
        Ok((0..r.pages())
            .map(|i| FAKE_PHYS_BASE + (i * r.page_bytes()) as u64)
            .collect())
    }

    fn has_cap_sys_admin() -> bool {
        std::fs::read_to_string("/proc/self/status")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .is_some_and(|caps| caps >> 21 & 1 == 1)
    }

    #[test]
    fn live_pool_hands_out_lines_near_a_cpu() {
        let calls = Cell::new(0);
        let phys = |r: &Region| {
            calls.set(calls.get() + 1);
            assert!(r.len() >= 4 << 20);
            fake_phys(r)
        };
        let mut p =
            LivePool::open(&record(test_machine()), 4 << 20, &phys, &test_machine()).unwrap();
        assert_eq!(calls.get(), 1);
        assert_eq!(p.line_bytes(), 64);
        assert_eq!(p.region().len(), 4 << 20);
        assert_eq!(p.pool().lines(), (4 << 20) / 64);
        assert_eq!(p.pool().free_lines(), p.pool().lines());
        // Every line's home is the hash of its (fake) physical address.
        let hash = record(test_machine()).home_hash.unwrap();
        let pb = p.region().page_bytes();
        for l in (0..p.pool().lines()).step_by(97) {
            let pa = FAKE_PHYS_BASE + ((l * 64) / pb * pb + (l * 64) % pb) as u64;
            assert_eq!(p.pool().home(l), hash.predict(pa), "line {l}");
            assert_eq!(p.pool().home(l), Some((l % 4) as u8));
        }
        let base = p.region().as_slice().as_ptr() as usize;
        let line_of = |q: *mut u8| (q as usize - base) / 64;

        // Distance 0 from CPU 0: home 0 only, i.e. every 4th line, in address order.
        let a = p.alloc(0, Some(0), 100).unwrap();
        assert_eq!(a.len(), 100);
        for (k, &q) in a.iter().enumerate() {
            assert_eq!((q as usize - base) % 64, 0);
            assert_eq!(line_of(q), 4 * k);
        }
        // Real memory: write through the lines and read back.
        for (k, &q) in a.iter().enumerate() {
            // SAFETY: q is the start of a 64-byte line of the pool, 8-byte aligned.
            unsafe { q.cast::<u64>().write(k as u64 * 3 + 1) };
        }
        for (k, &q) in a.iter().enumerate() {
            // SAFETY: as above.
            assert_eq!(unsafe { q.cast::<u64>().read() }, k as u64 * 3 + 1);
        }
        // CPU 2 at (1, 0): within 1 hop only home 0 (home 1 is 2 hops away), not the
        // lines CPU 0 holds.
        let b = p.alloc(2, Some(1), 10).unwrap();
        for (k, &q) in b.iter().enumerate() {
            assert_eq!(line_of(q), 4 * (100 + k));
        }
        // CPU 1 at (3, 3): home 3.
        let c = p.alloc(1, Some(0), 5).unwrap();
        assert!(c.iter().all(|&q| line_of(q) % 4 == 3));
        // Within 3 hops of CPU 0: homes 0, 1, 2.
        let d = p.alloc(0, Some(3), 30).unwrap();
        assert!(d.iter().all(|&q| line_of(q) % 4 != 3));
        // Any line.
        let e = p.alloc(0, None, 8).unwrap();
        assert_eq!(e.len(), 8);
        let mut all: Vec<usize> = a
            .iter()
            .chain(&b)
            .chain(&c)
            .chain(&d)
            .chain(&e)
            .map(|&q| line_of(q))
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a line was handed out twice");
        assert_eq!(p.pool().free_lines(), p.pool().lines() - n);

        // Too many for the distance: a usage error with counts, nothing taken.
        let left = p.pool().eligible(p.homes(), 0, Some(0));
        let err = p.alloc(0, Some(0), left + 1).unwrap_err();
        assert!(matches!(err, HomeError::Usage(_)), "{err}");
        assert!(
            err.to_string().contains(&format!("only {left} free lines")),
            "{err}"
        );

        // Give back: the same lines come again.
        let back: Vec<*const u8> = a.iter().map(|&q| q.cast_const()).collect();
        p.free(&back).unwrap();
        assert_eq!(p.alloc(0, Some(0), 100).unwrap(), a);
        // Pointers that are not lines of the pool are refused, the good ones taken back.
        let inside = a[0].cast_const();
        let err = p
            .free(&[inside, inside.wrapping_add(1), std::ptr::null()])
            .unwrap_err();
        assert!(matches!(err, HomeError::Usage(_)), "{err}");
        assert!(err.to_string().starts_with("2 of the 3 pointers"), "{err}");
        assert!(!p.pool().is_taken(0));
    }

    #[test]
    fn a_map_of_another_machine_is_refused() {
        let other = Fingerprint {
            cpus: 99,
            cpu_model: "another".into(),
            ..test_machine()
        };
        let called = Cell::new(false);
        let phys = |r: &Region| {
            called.set(true);
            fake_phys(r)
        };
        let e = LivePool::open(&record(test_machine()), 4 << 20, &phys, &other).unwrap_err();
        assert!(matches!(e, HomeError::Input { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("another machine"), "{msg}");
        assert!(
            msg.contains("16 vs 99 CPUs") && msg.contains("CPU model"),
            "{msg}"
        );
        assert!(!called.get(), "no memory is read for a refused map");
    }

    #[test]
    fn a_hash_not_recovered_is_refused() {
        let mut rec = record(test_machine());
        rec.home_hash.as_mut().unwrap().status = "page-offset".into();
        let e = LivePool::open(&rec, 4 << 20, &fake_phys, &test_machine()).unwrap_err();
        assert!(matches!(e, HomeError::Input { .. }), "{e}");
        assert!(
            e.to_string().contains("\"page-offset\", not \"recovered\""),
            "{e}"
        );
        rec.home_hash = None;
        let e = LivePool::open(&rec, 4 << 20, &fake_phys, &test_machine()).unwrap_err();
        assert!(e.to_string().contains("no home hash"), "{e}");
        // Without a floorplan, and with nothing asked for.
        let mut rec = record(test_machine());
        rec.cpu_stops.clear();
        let e = LivePool::open(&rec, 4 << 20, &fake_phys, &test_machine()).unwrap_err();
        assert!(e.to_string().contains("--floorplan"), "{e}");
        let e =
            LivePool::open(&record(test_machine()), 0, &fake_phys, &test_machine()).unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
    }

    #[test]
    fn physical_address_failures_are_reported() {
        let rec = record(test_machine());
        let short = |_: &Region| Ok(vec![0u64; 1]);
        let e = LivePool::open(&rec, 4 << 20, &short, &test_machine()).unwrap_err();
        assert!(matches!(e, HomeError::Runtime(_)), "{e}");
        let hidden = |_: &Region| Err(HomeError::Unsupported(PHYS_NEED_ROOT.into()));
        let e = LivePool::open(&rec, 4 << 20, &hidden, &test_machine()).unwrap_err();
        assert!(
            e.to_string().starts_with("physical addresses need root"),
            "{e}"
        );
    }

    #[test]
    fn pagemap_gives_distinct_page_addresses_or_needs_root() {
        let mut r = Region::new(64 << 10, PageKind::Base).unwrap();
        r.touch();
        match region_phys(&r) {
            Ok(phys) => {
                assert_eq!(phys.len(), r.pages());
                let mut s = phys.clone();
                s.sort_unstable();
                s.dedup();
                assert_eq!(s.len(), phys.len());
                assert!(phys
                    .iter()
                    .all(|&a| a > 0 && a % r.page_bytes() as u64 == 0));
            }
            Err(e) => {
                assert!(!has_cap_sys_admin(), "{e}");
                assert!(e.to_string().contains("need root"), "{e}");
            }
        }
    }

    #[test]
    fn maps_are_read_bare_or_wrapped() {
        use numalab_schema::journal::Line;
        use numalab_schema::record::{Host, Tool};
        use numalab_schema::{Envelope, Origin};
        let rec = record(test_machine());
        let bare = serde_json::to_vec(&rec).unwrap();
        assert_eq!(parse_map(&bare, "m.json").unwrap(), rec);
        let stored = Record::new("home/map", Origin::Measured, &rec);
        let as_record = serde_json::to_vec(&stored).unwrap();
        assert_eq!(parse_map(&as_record, "m.json").unwrap(), rec);
        let line = serde_json::to_vec(&Line::Record(stored.clone())).unwrap();
        assert_eq!(parse_map(&line, "m.json").unwrap(), rec);
        let envelope = Envelope {
            schema_version: 1,
            tool: Tool::this("0.1.0"),
            created_utc: "2024-01-01T00:00:00Z".into(),
            command: vec!["numalab".into(), "home".into(), "map".into()],
            config: serde_json::Value::Null,
            origin: Origin::Measured,
            host: Host::unknown("abc"),
        };
        let other = Record::new(
            "other",
            Origin::Measured,
            &numalab_records::home::BenchRecord {
                input_origin: "model".into(),
                machine: "x".into(),
                lines_per_thread: 1,
                sweep: vec![],
                stencil: vec![],
                notes: vec![],
            },
        );
        let mut journal =
            serde_json::to_string(&Line::Envelope(Box::new(envelope.clone()))).unwrap();
        for r in [&other, &stored] {
            journal.push('\n');
            journal.push_str(&serde_json::to_string(&Line::Record(r.clone())).unwrap());
        }
        journal.push('\n');
        assert_eq!(parse_map(journal.as_bytes(), "results.jsonl").unwrap(), rec);
        let bundle = Bundle {
            schema_version: 1,
            envelope: envelope.clone(),
            records: vec![other.clone(), stored.clone()],
        };
        assert_eq!(
            parse_map(&serde_json::to_vec(&bundle).unwrap(), "b.json").unwrap(),
            rec
        );
        // Refusals name the file and what is wrong.
        let e = parse_map(&serde_json::to_vec(&other).unwrap(), "o.json").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("o.json: it holds a home.bench record"),
            "{e}"
        );
        let two = Bundle {
            records: vec![
                stored.clone(),
                Record {
                    key: "again".into(),
                    ..stored.clone()
                },
            ],
            ..bundle.clone()
        };
        let e = parse_map(&serde_json::to_vec(&two).unwrap(), "b.json").unwrap_err();
        assert!(e.to_string().contains("2 home.map records"), "{e}");
        let none = Bundle {
            records: vec![other],
            ..bundle
        };
        let e = parse_map(&serde_json::to_vec(&none).unwrap(), "b.json").unwrap_err();
        assert!(
            e.to_string().contains("no home.map record") && e.to_string().contains("home.bench"),
            "{e}"
        );
        let e = parse_map(b"{\"homes\": 3}", "x.json").unwrap_err();
        assert!(matches!(e, HomeError::Input { .. }), "{e}");
        assert!(e.to_string().contains("not a home.map record"), "{e}");
        let e = parse_map(b"not json at all", "x.json").unwrap_err();
        assert!(e.to_string().contains("neither a home.map record"), "{e}");
    }

    fn last_error() -> String {
        // SAFETY: numalab_home_last_error returns a NUL-terminated string valid until
        // the next failing call on this thread; it is copied at once.
        unsafe { CStr::from_ptr(numalab_home_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn c_functions_report_errors() {
        let path = c"/nonexistent/numalab-home-map.json";
        // SAFETY: a NUL-terminated path.
        let h = unsafe { numalab_home_open(path.as_ptr(), 4 << 20) };
        assert!(h.is_null());
        let msg = last_error();
        assert!(msg.contains("/nonexistent/numalab-home-map.json"), "{msg}");
        assert!(msg.contains("no such file"), "{msg}");
        // SAFETY: NULL is allowed.
        assert!(unsafe { numalab_home_open(std::ptr::null(), 1) }.is_null());
        assert!(last_error().contains("map_path is NULL"));
        let mut out = [std::ptr::null_mut(); 4];
        // SAFETY: a NULL handle is allowed; out has 4 slots.
        let rc = unsafe { numalab_home_alloc(std::ptr::null_mut(), 0, 1, 4, out.as_mut_ptr()) };
        assert_eq!(rc, -1);
        assert!(last_error().contains("handle is NULL"), "{}", last_error());
        assert!(out.iter().all(|p| p.is_null()));
        // SAFETY: NULL handles are allowed.
        unsafe {
            assert_eq!(numalab_home_line_bytes(std::ptr::null()), 0);
            numalab_home_free(std::ptr::null_mut(), out.as_ptr(), 4);
            numalab_home_close(std::ptr::null_mut());
        }
        // The last error is per thread.
        let other = std::thread::spawn(last_error).join().unwrap();
        assert_eq!(other, "");
    }

    #[test]
    fn c_functions_on_this_machine() {
        // A map of this machine (its fingerprint; the synthetic hash and floorplan).
        let rec = record(this_machine());
        let path =
            std::env::temp_dir().join(format!("numalab-home-ffi-{}.json", std::process::id()));
        std::fs::write(&path, serde_json::to_vec(&rec).unwrap()).unwrap();
        let cpath = CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        let h = unsafe { numalab_home_open(cpath.as_ptr(), 4 << 20) };
        std::fs::remove_file(&path).unwrap();
        if h.is_null() {
            let msg = last_error();
            assert!(!has_cap_sys_admin(), "{msg}");
            assert!(msg.contains("need root"), "{msg}");
            return;
        }
        // SAFETY: h is a live handle; out arrays have the sizes given.
        unsafe {
            assert_eq!(numalab_home_line_bytes(h), 64);
            let mut out = vec![std::ptr::null_mut::<c_void>(); 64];
            assert_eq!(
                numalab_home_alloc(h, 0, 0, 64, out.as_mut_ptr()),
                0,
                "{}",
                last_error()
            );
            // Real physical addresses: each line's home (bits 6 and 7) is 0.
            let pool = (*h).pool.lock().unwrap();
            eprintln!("live pool: {:?}", pool.notes);
            let phys = region_phys(pool.region()).unwrap();
            let pb = pool.region().page_bytes();
            let base = pool.region().as_slice().as_ptr() as usize;
            for &q in &out {
                let off = q as usize - base;
                let pa = phys[off / pb] + (off % pb) as u64;
                assert_eq!(pa >> 6 & 3, 0, "{pa:#x}");
                q.cast::<u64>().write(7);
            }
            drop(pool);
            let mut many = vec![std::ptr::null_mut::<c_void>(); 1 << 20];
            assert_eq!(
                numalab_home_alloc(h, 0, -1, many.len(), many.as_mut_ptr()),
                -1
            );
            assert!(last_error().contains("only"), "{}", last_error());
            assert_eq!(numalab_home_alloc(h, 99, 2, 1, many.as_mut_ptr()), -1);
            assert!(last_error().contains("CPU 99"), "{}", last_error());
            numalab_home_free(h, out.as_ptr(), out.len());
            let mut again = vec![std::ptr::null_mut::<c_void>(); 64];
            assert_eq!(numalab_home_alloc(h, 0, 0, 64, again.as_mut_ptr()), 0);
            assert_eq!(again, out);
            numalab_home_close(h);
        }
    }
}
