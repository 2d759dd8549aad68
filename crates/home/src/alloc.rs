//! Memory homed near a core, from a home map: the pure part of `numalab home`'s allocator.
//!
//! - [`Homes`] knows where each home agent and each CPU sits on the floorplan, so that
//!   the distance between a CPU and the home of a line is the Manhattan distance, in
//!   mesh hops, between their stops (the mesh study's "affinity strength": a thread gets
//!   lines homed within a chosen distance of its core).
//! - [`LinePool`] hands out lines of a buffer whose homes are known, in address order
//!   among the lines homed close enough, and takes them back.
//! - [`Scattered`] is the inspector/executor helper: a task's data copied into the lines
//!   it was given (which are scattered over the buffer), reached through an index array.
//!
//! Nothing here touches hardware: the live pool over real memory is [`crate::ffi`].
//! The typed reads and writes in pool bytes, the only `unsafe` here, are `raw`'s.

#![deny(unsafe_code)]

mod raw;

pub use raw::LineValue;

use crate::HomeError;
use numalab_records::home::{HomeMapRecord, LINE_UNKNOWN};
use std::collections::HashMap;
use std::marker::PhantomData;

/// Where lines' homes are and where CPUs are, on the floorplan of a map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Homes {
    /// Stop `[x, y]` of each home, indexed by home id.
    home_stop: Vec<Option<[u32; 2]>>,
    /// Stop `[x, y]` of each CPU (OS id).
    cpu_stop: HashMap<u32, [u32; 2]>,
}

impl Homes {
    /// Homes at `home_stops` (indexed by home id; `None`: not located) and CPUs at
    /// `cpu_stops` (`[cpu, x, y]`; the first entry of a CPU listed twice counts).
    pub fn new(home_stops: Vec<Option<[u32; 2]>>, cpu_stops: &[[u32; 3]]) -> Homes {
        let mut cpu_stop = HashMap::with_capacity(cpu_stops.len());
        for &[cpu, x, y] in cpu_stops {
            cpu_stop.entry(cpu).or_insert([x, y]);
        }
        Homes {
            home_stop: home_stops,
            cpu_stop,
        }
    }

    /// The homes and CPUs of a map. A map without a floorplan (no home located on a
    /// stop, or no CPU placed) is refused, as is one listing a home or a CPU twice at
    /// different places.
    pub fn from_record(rec: &HomeMapRecord) -> Result<Homes, HomeError> {
        const NO_FLOORPLAN: &str =
            "the map has no floorplan: rerun `numalab home map --floorplan LAYOUT.json`";
        if !rec.homes.iter().any(|h| h.stop.is_some()) {
            return Err(HomeError::input(
                "home map",
                format!(
                    "none of its {} homes is located on a stop; {NO_FLOORPLAN}",
                    rec.homes.len()
                ),
            ));
        }
        if rec.cpu_stops.is_empty() {
            return Err(HomeError::input(
                "home map",
                format!("it places no CPU on a stop (cpu_stops is empty); {NO_FLOORPLAN}"),
            ));
        }
        let len = rec
            .homes
            .iter()
            .map(|h| usize::from(h.id) + 1)
            .max()
            .unwrap_or(0);
        let mut home_stop = vec![None; len];
        let mut seen = vec![false; len];
        for h in &rec.homes {
            let i = usize::from(h.id);
            if std::mem::replace(&mut seen[i], true) {
                return Err(HomeError::input(
                    "home map",
                    format!(
                        "home {} is listed twice; the map is damaged: map the machine again",
                        h.id
                    ),
                ));
            }
            home_stop[i] = h.stop;
        }
        let mut cpu_stop = HashMap::with_capacity(rec.cpu_stops.len());
        for &[cpu, x, y] in &rec.cpu_stops {
            if let Some(old) = cpu_stop.insert(cpu, [x, y]) {
                if old != [x, y] {
                    return Err(HomeError::input(
                        "home map",
                        format!(
                            "CPU {cpu} is placed at two stops, [{}, {}] and [{x}, {y}]; the map is damaged: map the machine again",
                            old[0], old[1]
                        ),
                    ));
                }
            }
        }
        Ok(Homes {
            home_stop,
            cpu_stop,
        })
    }

    /// Manhattan distance, hops, between the stop of `cpu` and the stop of `home`;
    /// `None` when the CPU or the home is unknown or has no stop.
    pub fn distance(&self, cpu: u32, home: u8) -> Option<u32> {
        let [cx, cy] = *self.cpu_stop.get(&cpu)?;
        let [hx, hy] = (*self.home_stop.get(usize::from(home))?)?;
        Some(cx.abs_diff(hx) + cy.abs_diff(hy))
    }

    /// Whether `cpu` has a stop on the floorplan.
    pub fn cpu_known(&self, cpu: u32) -> bool {
        self.cpu_stop.contains_key(&cpu)
    }

    /// The CPUs with a stop, ascending.
    pub fn cpus(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.cpu_stop.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// The stop of a home, when it has one.
    pub fn home_stop(&self, home: u8) -> Option<[u32; 2]> {
        self.home_stop.get(usize::from(home)).copied().flatten()
    }

    /// For every home id, whether a line of that home may go to `cpu` at `distance`
    /// (`None`: any home).
    fn allowed(&self, cpu: u32, distance: Option<u32>) -> [bool; 256] {
        let mut ok = [false; 256];
        for (id, slot) in ok.iter_mut().enumerate() {
            let id = id as u8;
            if id == LINE_UNKNOWN {
                continue;
            }
            *slot = match distance {
                None => true,
                Some(d) => self.distance(cpu, id).is_some_and(|h| h <= d),
            };
        }
        ok
    }
}

/// A pool of lines with known homes, handing out lines near a CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinePool {
    /// Home id of each line, in address order ([`LINE_UNKNOWN`]: never handed out).
    home: Vec<u8>,
    /// Whether each line is handed out.
    taken: Vec<bool>,
    /// Lines with a known home that are not taken.
    free: usize,
}

impl LinePool {
    /// A pool over lines `0..home_of_line.len()` (line i is the i-th line of the buffer)
    /// whose homes are given; lines marked [`LINE_UNKNOWN`] are never handed out.
    pub fn new(home_of_line: Vec<u8>) -> LinePool {
        let free = home_of_line.iter().filter(|&&h| h != LINE_UNKNOWN).count();
        let taken = vec![false; home_of_line.len()];
        LinePool {
            home: home_of_line,
            taken,
            free,
        }
    }

    /// Lines in the pool (with or without a known home).
    pub fn lines(&self) -> usize {
        self.home.len()
    }

    /// Lines with a known home not handed out.
    pub fn free_lines(&self) -> usize {
        self.free
    }

    /// The home of a line (`None`: outside the pool or no known home).
    pub fn home(&self, line: usize) -> Option<u8> {
        self.home.get(line).copied().filter(|&h| h != LINE_UNKNOWN)
    }

    /// Whether a line is handed out.
    pub fn is_taken(&self, line: usize) -> bool {
        self.taken.get(line).copied().unwrap_or(false)
    }

    fn check_cpu(homes: &Homes, cpu: u32, distance: Option<u32>) -> Result<(), HomeError> {
        if distance.is_some() && !homes.cpu_known(cpu) {
            let known = homes.cpus();
            return Err(HomeError::Usage(format!(
                "CPU {cpu} has no stop on the map's floorplan, so no distance to a home is known; use one of CPUs {} or ask for any line (no distance)",
                if known.is_empty() {
                    "(none)".to_string()
                } else {
                    numalab_schema::cpulist::format(&known)
                }
            )));
        }
        Ok(())
    }

    /// `count` free lines whose home is within `distance` hops of `cpu` (`None`: any
    /// line with a known home), the first ones in address order among those eligible
    /// (so consecutive data lands in consecutive eligible lines); they are marked taken.
    /// When fewer are eligible, nothing is taken and the error says how many there are.
    pub fn take(
        &mut self,
        homes: &Homes,
        cpu: u32,
        distance: Option<u32>,
        count: usize,
    ) -> Result<Vec<usize>, HomeError> {
        Self::check_cpu(homes, cpu, distance)?;
        if count == 0 {
            return Ok(Vec::new());
        }
        let ok = homes.allowed(cpu, distance);
        // Never more than the free lines: a count past them (u64::MAX from a command
        // line) must end in the error below, not in the allocation of its capacity.
        let mut out = Vec::with_capacity(count.min(self.free));
        for (i, (&h, &t)) in self.home.iter().zip(&self.taken).enumerate() {
            if !t && ok[usize::from(h)] {
                out.push(i);
                if out.len() == count {
                    break;
                }
            }
        }
        if out.len() < count {
            let (within, remedy) = match distance {
                Some(d) => (
                    format!(
                        "homed within {d} hop{} of CPU {cpu}",
                        if d == 1 { "" } else { "s" }
                    ),
                    "allow a larger distance or use a larger pool",
                ),
                None => (
                    "with a known home".to_string(),
                    "use a larger pool or give lines back first",
                ),
            };
            return Err(HomeError::Usage(format!(
                "{count} lines were asked for but only {} free lines are {within} ({} of {} lines free in the pool); {remedy}",
                out.len(),
                self.free,
                self.home.len()
            )));
        }
        for &i in &out {
            self.taken[i] = true;
        }
        self.free -= out.len();
        Ok(out)
    }

    /// Returns lines to the pool. Lines outside the pool or not handed out are ignored,
    /// so giving a line back twice is harmless.
    pub fn give_back(&mut self, lines: &[usize]) {
        for &i in lines {
            if let Some(t) = self.taken.get_mut(i) {
                if *t {
                    *t = false;
                    self.free += 1;
                }
            }
        }
    }

    /// Free lines [`LinePool::take`] could hand to `cpu` at `distance` (`None`: any).
    /// 0 when a distance is given and the CPU has no stop.
    pub fn eligible(&self, homes: &Homes, cpu: u32, distance: Option<u32>) -> usize {
        if distance.is_some() && !homes.cpu_known(cpu) {
            return 0;
        }
        let ok = homes.allowed(cpu, distance);
        self.home
            .iter()
            .zip(&self.taken)
            .filter(|&(&h, &t)| !t && ok[usize::from(h)])
            .count()
    }

    /// Free lines eligible for `cpu` at each distance `0..=max` (element d: homed
    /// within d hops), for a sweep to know which affinity strengths are possible.
    pub fn eligible_per_distance(&self, homes: &Homes, cpu: u32, max: u32) -> Vec<usize> {
        let mut at = vec![0usize; max as usize + 1];
        if !homes.cpu_known(cpu) {
            return at;
        }
        let mut per_home = [0usize; 256];
        for (&h, &t) in self.home.iter().zip(&self.taken) {
            if !t && h != LINE_UNKNOWN {
                per_home[usize::from(h)] += 1;
            }
        }
        for (id, &n) in per_home.iter().enumerate() {
            if let Some(d) = homes.distance(cpu, id as u8) {
                if d <= max {
                    at[d as usize] += n;
                }
            }
        }
        for d in 1..at.len() {
            at[d] += at[d - 1];
        }
        at
    }
}

/// The inspector/executor helper: a task's data copied into lines homed near its core,
/// reached through an index array. Element `i` lives in line `index()[i / per_line]` at
/// slot `i % per_line`, where `per_line = line_bytes / size_of::<T>()` and slot `s` is at
/// byte `s * size_of::<T>()` of the line.
#[derive(Debug)]
pub struct Scattered<'a, T: Copy> {
    pool: &'a mut [u8],
    line_bytes: usize,
    per_line: usize,
    index: Vec<usize>,
    len: usize,
    _t: PhantomData<T>,
}

impl<'a, T: LineValue> Scattered<'a, T> {
    /// Copies `data` into the lines `lines` (indices of `line_bytes`-byte lines of
    /// `pool`, used in the order given; lines beyond those needed are not used).
    ///
    /// Refused (usage error): a zero-sized `T`, a `T` larger than a line, a pool or line
    /// size not aligned for `T`, too few lines for the data, a line outside the pool, or
    /// a line given twice.
    pub fn gather(
        pool: &'a mut [u8],
        line_bytes: usize,
        lines: &[usize],
        data: &[T],
    ) -> Result<Self, HomeError> {
        let size = std::mem::size_of::<T>();
        let align = std::mem::align_of::<T>();
        let ty = std::any::type_name::<T>();
        if size == 0 {
            return Err(HomeError::Usage(format!(
                "{ty} has no size: nothing to place in lines"
            )));
        }
        if line_bytes < size {
            return Err(HomeError::Usage(format!(
                "an element of {ty} is {size} bytes, larger than a line of {line_bytes} bytes; store smaller elements or split them"
            )));
        }
        if !(pool.as_ptr() as usize).is_multiple_of(align) || !line_bytes.is_multiple_of(align) {
            return Err(HomeError::Usage(format!(
                "the pool at {:p} with lines of {line_bytes} bytes is not aligned for {ty} ({align}-byte alignment); give a pool that starts on a line boundary",
                pool.as_ptr()
            )));
        }
        let per_line = line_bytes / size;
        let needed = data.len().div_ceil(per_line);
        if lines.len() < needed {
            return Err(HomeError::Usage(format!(
                "{} elements of {ty} ({per_line} per line of {line_bytes} bytes) need {needed} lines, but {} were given; take more lines from the pool",
                data.len(),
                lines.len()
            )));
        }
        let pool_lines = pool.len() / line_bytes;
        let index = lines[..needed].to_vec();
        let mut seen = std::collections::HashSet::with_capacity(needed);
        for &l in &index {
            if l >= pool_lines {
                return Err(HomeError::Usage(format!(
                    "line {l} is outside the pool of {pool_lines} lines of {line_bytes} bytes"
                )));
            }
            if !seen.insert(l) {
                return Err(HomeError::Usage(format!(
                    "line {l} is given twice; give distinct lines (as LinePool::take returns them)"
                )));
            }
        }
        let mut s = Scattered {
            pool,
            line_bytes,
            per_line,
            index,
            len: data.len(),
            _t: PhantomData,
        };
        for (i, &v) in data.iter().enumerate() {
            s.set(i, v);
        }
        Ok(s)
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Byte offset of element `i` in the pool; panics when `i` is out of range.
    fn offset(&self, i: usize) -> usize {
        assert!(
            i < self.len,
            "element {i} of a scattered array of {} elements",
            self.len
        );
        self.index[i / self.per_line] * self.line_bytes
            + (i % self.per_line) * std::mem::size_of::<T>()
    }

    /// Element `i`.
    ///
    /// # Panics
    /// When `i >= len()`.
    pub fn get(&self, i: usize) -> T {
        // Inside the pool and aligned: gather checked that every line of `index` lies
        // inside the pool, that slots (`per_line * size_of::<T>() <= line_bytes`) stay
        // inside their line, and that the pool base and line size are aligned for T.
        raw::read(self.pool, self.offset(i))
    }

    /// Sets element `i`.
    ///
    /// # Panics
    /// When `i >= len()`.
    pub fn set(&mut self, i: usize, v: T) {
        let off = self.offset(i);
        // In bounds and aligned as in `get`.
        raw::write(self.pool, off, v)
    }

    /// Copies the elements back, in order, into `out` (the executor's result).
    ///
    /// # Panics
    /// When `out.len() != len()`.
    pub fn scatter_back(&self, out: &mut [T]) {
        assert_eq!(
            out.len(),
            self.len,
            "scatter_back into {} elements from a scattered array of {}",
            out.len(),
            self.len
        );
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.get(i);
        }
    }

    /// The lines holding the data, in element order: element `i` is in line
    /// `index()[i / per_line()]`.
    pub fn index(&self) -> &[usize] {
        &self.index
    }

    /// Elements per line.
    pub fn per_line(&self) -> usize {
        self.per_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_records::home::{Access, Fingerprint, HashFit, Home};

    /// A map of a 4x4 mesh: home h at stop (h % 4, h / 4) for h in 0..16 except home 5
    /// (not located); CPU c at stop (c % 4, c / 4) for c in 0..16.
    fn mesh_record() -> HomeMapRecord {
        let homes = (0..16u8)
            .map(|id| Home {
                id,
                lines: 0,
                profile_ns: vec![],
                stop: (id != 5).then_some([u32::from(id) % 4, u32::from(id) / 4]),
                stop_confidence: None,
                stop_residual_ns: None,
            })
            .collect();
        HomeMapRecord {
            input_origin: "model".into(),
            fingerprint: Fingerprint {
                recipe: numalab_records::home::FINGERPRINT_RECIPE.into(),
                source: "test".into(),
                cpu_model: "mesh 4x4".into(),
                stepping: "0".into(),
                cpus: 16,
                node_memory_bytes: vec![1 << 30],
                memory_basis: numalab_records::home::MEMORY_BLOCKS.into(),
                modes: vec!["1 NUMA node".into()],
            },
            buffer_bytes: 1 << 20,
            page_bytes: 4096,
            huge_pages: false,
            physical_addresses: true,
            line_bytes: 64,
            access: Access::Flushed,
            probe_cpus: vec![0, 15],
            owner_cpu: None,
            repeats: 1,
            noise_ns: 1.0,
            sample_offsets: vec![],
            lines_measured: 0,
            floorplan: Some("test.json".into()),
            cpu_stops: (0..16).map(|c| [c, c % 4, c / 4]).collect(),
            structure_visible: true,
            homes_reproduced: None,
            interfaces_reproduced: None,
            homes,
            interfaces: vec![],
            pages: vec![],
            home_hash: Some(HashFit {
                what: "home".into(),
                status: "recovered".into(),
                observed_bits: !0x3f,
                masks: vec![1 << 6, 1 << 7, 1 << 8, 1 << 9],
                table: (0..16).collect(),
                linear: true,
                agreement: 1.0,
                notes: vec![],
            }),
            interface_hash: None,
            slice_hash: None,
            measure_seconds: 0.0,
            infer_seconds: 0.0,
            notes: vec![],
        }
    }

    /// Line i has home (i * 7) % 16, except every 11th line, unknown.
    fn line_homes(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| {
                if i % 11 == 10 {
                    LINE_UNKNOWN
                } else {
                    (i * 7 % 16) as u8
                }
            })
            .collect()
    }

    fn true_distance(cpu: u32, home: u8) -> Option<u32> {
        if home == 5 || home == LINE_UNKNOWN {
            return None;
        }
        let (cx, cy) = (cpu % 4, cpu / 4);
        let (hx, hy) = (u32::from(home) % 4, u32::from(home) / 4);
        Some(cx.abs_diff(hx) + cy.abs_diff(hy))
    }

    #[test]
    fn homes_measure_manhattan_hops() {
        let h = Homes::from_record(&mesh_record()).unwrap();
        for cpu in 0..16 {
            assert!(h.cpu_known(cpu));
            for home in 0..16u8 {
                assert_eq!(
                    h.distance(cpu, home),
                    true_distance(cpu, home),
                    "{cpu} {home}"
                );
            }
        }
        assert!(!h.cpu_known(16));
        assert_eq!(h.distance(16, 0), None);
        assert_eq!(h.distance(0, 16), None);
        assert_eq!(h.distance(0, LINE_UNKNOWN), None);
        assert_eq!(h.distance(0, 15), Some(6));
        assert_eq!(h.home_stop(6), Some([2, 1]));
        assert_eq!(h.cpus(), (0..16).collect::<Vec<_>>());
        let same = Homes::new(
            (0..16u32)
                .map(|i| (i != 5).then_some([i % 4, i / 4]))
                .collect(),
            &mesh_record().cpu_stops,
        );
        assert_eq!(same, h);
    }

    #[test]
    fn a_map_without_floorplan_is_refused() {
        let mut rec = mesh_record();
        for h in &mut rec.homes {
            h.stop = None;
        }
        let e = Homes::from_record(&rec).unwrap_err();
        assert!(matches!(e, HomeError::Input { .. }), "{e}");
        assert!(e.to_string().contains("--floorplan"), "{e}");
        let mut rec = mesh_record();
        rec.cpu_stops.clear();
        let e = Homes::from_record(&rec).unwrap_err();
        assert!(e.to_string().contains("--floorplan"), "{e}");
        let mut rec = mesh_record();
        rec.cpu_stops.push([3, 0, 0]);
        let e = Homes::from_record(&rec).unwrap_err();
        assert!(e.to_string().contains("CPU 3"), "{e}");
    }

    #[test]
    fn take_hands_out_only_lines_within_the_distance_in_address_order() {
        let homes = Homes::from_record(&mesh_record()).unwrap();
        let truth = line_homes(1000);
        let known = truth.iter().filter(|&&h| h != LINE_UNKNOWN).count();
        for cpu in [0u32, 5, 10, 15] {
            for distance in [Some(0), Some(1), Some(2), None] {
                let mut pool = LinePool::new(truth.clone());
                assert_eq!(pool.free_lines(), known);
                let eligible: Vec<usize> = (0..truth.len())
                    .filter(|&i| match distance {
                        None => truth[i] != LINE_UNKNOWN,
                        Some(d) => true_distance(cpu, truth[i]).is_some_and(|t| t <= d),
                    })
                    .collect();
                assert_eq!(pool.eligible(&homes, cpu, distance), eligible.len());
                let n = eligible.len() / 3;
                let a = pool.take(&homes, cpu, distance, n).unwrap();
                let b = pool.take(&homes, cpu, distance, n).unwrap();
                // Address order among the eligible lines, and no line twice.
                assert_eq!(a, eligible[..n]);
                assert_eq!(b, eligible[n..2 * n]);
                assert!(a.iter().all(|l| pool.is_taken(*l)));
                assert_eq!(pool.free_lines(), known - 2 * n);
                assert_eq!(pool.eligible(&homes, cpu, distance), eligible.len() - 2 * n);
                for &l in a.iter().chain(&b) {
                    assert_ne!(truth[l], LINE_UNKNOWN);
                    assert_eq!(pool.home(l), Some(truth[l]));
                    if let Some(d) = distance {
                        assert!(true_distance(cpu, truth[l]).unwrap() <= d);
                    }
                }
            }
        }
    }

    #[test]
    fn distance_zero_gives_the_cpus_own_home() {
        let homes = Homes::from_record(&mesh_record()).unwrap();
        let mut pool = LinePool::new(line_homes(2000));
        // CPU 6 is at (2, 1), home 6's stop; CPU 5's home has no stop.
        let got = pool.take(&homes, 6, Some(0), 20).unwrap();
        assert!(got.iter().all(|&l| pool.home(l) == Some(6)));
        assert_eq!(pool.eligible(&homes, 5, Some(0)), 0);
        // At distance 1 of CPU 5 (1, 1): homes 1, 4, 6, 9.
        let n = pool.eligible(&homes, 5, Some(1));
        let got = pool.take(&homes, 5, Some(1), n).unwrap();
        let mut seen: Vec<u8> = got.iter().map(|&l| pool.home(l).unwrap()).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, vec![1, 4, 6, 9]);
    }

    #[test]
    fn not_enough_lines_is_a_usage_error_with_counts() {
        let homes = Homes::from_record(&mesh_record()).unwrap();
        let mut pool = LinePool::new(line_homes(160));
        let have = pool.eligible(&homes, 0, Some(0));
        assert!(have > 0);
        let free = pool.free_lines();
        let e = pool.take(&homes, 0, Some(0), have + 1).unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        let msg = e.to_string();
        assert!(msg.contains(&format!("only {have} free lines")), "{msg}");
        assert!(msg.contains("within 0 hops of CPU 0"), "{msg}");
        assert!(
            msg.contains("larger distance") && msg.contains("larger pool"),
            "{msg}"
        );
        // Nothing was taken by the failed call.
        assert_eq!(pool.free_lines(), free);
        let e = pool.take(&homes, 0, None, free + 1).unwrap_err();
        assert!(
            e.to_string().contains(&format!("only {free} free lines")),
            "{e}"
        );
        // An unknown CPU with a distance names the CPUs known.
        let e = pool.take(&homes, 99, Some(3), 1).unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        assert!(
            e.to_string().contains("CPU 99") && e.to_string().contains("0-15"),
            "{e}"
        );
        assert_eq!(pool.eligible(&homes, 99, Some(3)), 0);
        // Any line needs no CPU stop.
        assert_eq!(pool.take(&homes, 99, None, 2).unwrap().len(), 2);
        assert!(pool.take(&homes, 0, Some(0), 0).unwrap().is_empty());
    }

    #[test]
    fn give_back_makes_lines_available_again() {
        let homes = Homes::from_record(&mesh_record()).unwrap();
        let mut pool = LinePool::new(line_homes(500));
        let all = pool.eligible(&homes, 3, Some(1));
        let first = pool.take(&homes, 3, Some(1), all).unwrap();
        assert_eq!(pool.eligible(&homes, 3, Some(1)), 0);
        assert!(pool.take(&homes, 3, Some(1), 1).is_err());
        pool.give_back(&first[2..5]);
        pool.give_back(&first[2..5]); // twice: harmless
        pool.give_back(&[usize::MAX, 100_000]); // outside: ignored
        assert_eq!(pool.eligible(&homes, 3, Some(1)), 3);
        let again = pool.take(&homes, 3, Some(1), 3).unwrap();
        assert_eq!(again, first[2..5]);
        pool.give_back(&first);
        assert_eq!(
            pool.free_lines(),
            line_homes(500)
                .iter()
                .filter(|&&h| h != LINE_UNKNOWN)
                .count()
        );
    }

    #[test]
    fn eligible_per_distance_is_cumulative() {
        let homes = Homes::from_record(&mesh_record()).unwrap();
        let pool = LinePool::new(line_homes(700));
        for cpu in [0, 6, 15] {
            let per = pool.eligible_per_distance(&homes, cpu, 6);
            assert_eq!(per.len(), 7);
            for (d, &n) in per.iter().enumerate() {
                assert_eq!(n, pool.eligible(&homes, cpu, Some(d as u32)), "{cpu} {d}");
            }
        }
        assert_eq!(pool.eligible_per_distance(&homes, 77, 2), vec![0, 0, 0]);
    }

    /// A pool of `lines` 64-byte lines, aligned to 64 bytes.
    fn pool_memory(lines: usize) -> Vec<u64> {
        vec![0u64; lines * 8]
    }

    fn as_bytes(v: &mut [u64]) -> &mut [u8] {
        super::raw::bytes_of_mut(v)
    }

    #[test]
    fn scattered_round_trips_f64() {
        let mut mem = pool_memory(64);
        let data: Vec<f64> = (0..37).map(|i| i as f64 * 1.5 - 3.0).collect();
        let lines = [40usize, 3, 17, 60, 8, 9, 1];
        {
            let mut s = Scattered::gather(as_bytes(&mut mem), 64, &lines, &data).unwrap();
            assert_eq!(s.len(), 37);
            assert!(!s.is_empty());
            assert_eq!(s.per_line(), 8);
            // 37 elements need 5 lines of 8.
            assert_eq!(s.index(), &lines[..5]);
            for (i, &v) in data.iter().enumerate() {
                assert_eq!(s.get(i), v);
            }
            for i in 0..s.len() {
                let v = s.get(i);
                s.set(i, v * 2.0);
            }
            let mut out = vec![0.0; 37];
            s.scatter_back(&mut out);
            let want: Vec<f64> = data.iter().map(|v| v * 2.0).collect();
            assert_eq!(out, want);
        }
        // Element i is in line index[i / 8] at slot i % 8.
        for (i, v) in data.iter().enumerate() {
            let word = lines[i / 8] * 8 + i % 8;
            assert_eq!(f64::from_bits(mem[word]), v * 2.0, "element {i}");
        }
        // Lines not used stay untouched.
        assert!(mem[9 * 8..10 * 8].iter().all(|&w| w == 0));
        assert!(mem[8 * 8..9 * 8].iter().any(|&w| w != 0));
    }

    #[test]
    fn scattered_refuses_bad_layouts() {
        let mut mem = pool_memory(16);
        let data = vec![1.0f64; 20];
        // Too few lines: 20 doubles need 3 lines of 64 bytes.
        let e = Scattered::gather(as_bytes(&mut mem), 64, &[0, 1], &data).unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        assert!(e.to_string().contains("need 3 lines"), "{e}");
        // A line outside the pool.
        let e = Scattered::gather(as_bytes(&mut mem), 64, &[0, 1, 16], &data).unwrap_err();
        assert!(e.to_string().contains("line 16 is outside"), "{e}");
        // A line twice.
        let e = Scattered::gather(as_bytes(&mut mem), 64, &[0, 1, 0], &data).unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
        // A misaligned pool base, and a misaligned line size.
        let e = Scattered::gather(&mut as_bytes(&mut mem)[4..], 64, &[0, 1, 2], &data).unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        assert!(e.to_string().contains("aligned"), "{e}");
        let e = Scattered::gather(as_bytes(&mut mem), 60, &[0, 1, 2, 3], &data).unwrap_err();
        assert!(e.to_string().contains("aligned"), "{e}");
        // An element larger than a line.
        let big = vec![[0u64; 16]; 2];
        let e = Scattered::gather(as_bytes(&mut mem), 64, &[0, 1], &big).unwrap_err();
        assert!(e.to_string().contains("larger than a line"), "{e}");
        // Nothing to store is fine.
        let s = Scattered::<f64>::gather(as_bytes(&mut mem), 64, &[], &[]).unwrap();
        assert!(s.is_empty());
    }

    #[test]
    #[should_panic(expected = "element 3")]
    fn scattered_get_out_of_range_panics() {
        let mut mem = pool_memory(2);
        let s = Scattered::gather(as_bytes(&mut mem), 64, &[1], &[1u32, 2, 3]).unwrap();
        s.get(3);
    }

    #[test]
    fn scattered_with_lines_from_the_pool() {
        let homes = Homes::from_record(&mesh_record()).unwrap();
        let truth = line_homes(256);
        let mut pool = LinePool::new(truth.clone());
        let mut mem = pool_memory(256);
        let data: Vec<u32> = (0..100).collect();
        let lines = pool
            .take(&homes, 10, Some(1), 100usize.div_ceil(16))
            .unwrap();
        let s = Scattered::gather(as_bytes(&mut mem), 64, &lines, &data).unwrap();
        for &l in s.index() {
            assert!(true_distance(10, truth[l]).unwrap() <= 1);
        }
        let mut out = vec![0u32; 100];
        s.scatter_back(&mut out);
        assert_eq!(out, data);
    }
}
