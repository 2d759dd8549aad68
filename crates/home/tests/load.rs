//! The map under load elsewhere on the machine: a burst that slows a stretch of reads
//! makes the lines read during it look like a group of their own. Such a group is small,
//! so it barely moves the overall share of re-read lines that land in their group again;
//! its own re-read lines, read later, leave it. The map must then read those lines a
//! third time and find what is really there: no structure on a flat machine, every home
//! on a mesh.

use numalab_home::error::HomeError;
use numalab_home::map::{map, MapOptions, Quiet};
use numalab_home::probe::{Access, BufferInfo, HomeProbe, Line};
use numalab_home::truth::{TruthMachine, TruthOptions, TruthProbe};
use numalab_records::home::Fingerprint;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::ops::Range;

/// A probe whose reads are changed by `adjust(read count so far, line)`, which returns
/// the nanoseconds to add: load elsewhere on the machine or an effect of the reading
/// order, in the probe's own time.
struct Adjust<P, F> {
    inner: P,
    reads: u64,
    adjust: F,
}

impl<P: HomeProbe, F: FnMut(u64, &Line) -> f64> HomeProbe for Adjust<P, F> {
    fn buffer(&self) -> &BufferInfo {
        self.inner.buffer()
    }
    fn cpus(&self) -> Vec<u32> {
        self.inner.cpus()
    }
    fn fingerprint(&self) -> Fingerprint {
        self.inner.fingerprint()
    }
    fn origin(&self) -> &'static str {
        self.inner.origin()
    }
    fn read_ns(
        &mut self,
        access: Access,
        reader: u32,
        owner: Option<u32>,
        lines: &[Line],
        repeats: u32,
    ) -> Result<Vec<f64>, HomeError> {
        let mut v = self.inner.read_ns(access, reader, owner, lines, repeats)?;
        for (x, l) in v.iter_mut().zip(lines) {
            *x += (self.adjust)(self.reads, l);
            self.reads += 1;
        }
        Ok(v)
    }
    fn noise_ns(&self) -> Option<f64> {
        self.inner.noise_ns()
    }
}

/// Adds `add_ns` to every read made while the count of line reads so far is in
/// `window` (a burst of load elsewhere).
fn burst<P: HomeProbe>(
    inner: P,
    window: Range<u64>,
    add_ns: f64,
) -> Adjust<P, impl FnMut(u64, &Line) -> f64> {
    Adjust {
        inner,
        reads: 0,
        adjust: move |read, _: &Line| if window.contains(&read) { add_ns } else { 0.0 },
    }
}

/// Two CPUs and one home: every line reads the same but for Gaussian noise (this
/// machine, as the live map sees it).
struct Flat {
    buffer: BufferInfo,
    rng: ChaCha8Rng,
    noise: f64,
}

impl HomeProbe for Flat {
    fn buffer(&self) -> &BufferInfo {
        &self.buffer
    }
    fn cpus(&self) -> Vec<u32> {
        vec![0, 1]
    }
    fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            recipe: numalab_records::home::FINGERPRINT_RECIPE.into(),
            source: "test:flat".into(),
            cpu_model: "flat".into(),
            stepping: String::new(),
            cpus: 2,
            node_memory_bytes: vec![1 << 30],
            memory_basis: numalab_records::home::MEMORY_BLOCKS.into(),
            modes: vec![],
        }
    }
    fn origin(&self) -> &'static str {
        "model"
    }
    fn read_ns(
        &mut self,
        _: Access,
        reader: u32,
        _: Option<u32>,
        lines: &[Line],
        repeats: u32,
    ) -> Result<Vec<f64>, HomeError> {
        let base = 90.0 + f64::from(reader);
        Ok(lines
            .iter()
            .map(|_| {
                // The interquartile mean of `repeats` reads, as Gaussian.
                let u: f64 = 1.0 - self.rng.random::<f64>();
                let w: f64 = self.rng.random::<f64>();
                let g = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * w).cos();
                base + g * self.noise * 1.1 / f64::from(repeats).sqrt()
            })
            .collect())
    }
    fn noise_ns(&self) -> Option<f64> {
        Some(self.noise)
    }
}

fn flat() -> Flat {
    Flat {
        buffer: BufferInfo {
            bytes: 2 << 20,
            page_bytes: 2 << 20,
            huge_pages: true,
            line_bytes: 64,
            page_phys: None,
            phys_note: Some("test".into()),
        },
        rng: ChaCha8Rng::seed_from_u64(3),
        noise: 3.0,
    }
}

fn flat_opts() -> MapOptions {
    MapOptions {
        probe_cpus: 1,
        repeats: 8,
        interfaces: false,
        ..MapOptions::default()
    }
}

#[test]
fn a_flat_machine_shows_no_structure_without_load() {
    let mut p = flat();
    let m = map(&mut p, None, &flat_opts(), &mut Quiet).unwrap();
    assert!(!m.record.structure_visible, "{:?}", m.record.notes);
    assert_eq!(m.record.homes.len(), 1);
}

#[test]
fn a_burst_of_load_on_a_flat_machine_is_not_a_home() {
    // 32768 lines, one reader: a burst over 1,500 of them (4.6%) adds 12 ns, four
    // times the reads' noise and far above a profile's.
    let mut p = burst(flat(), 20_000..21_500, 12.0);
    let m = map(&mut p, None, &flat_opts(), &mut Quiet).unwrap();
    let r = &m.record;
    assert!(!r.structure_visible, "{:?}", r.notes);
    assert_eq!(r.homes.len(), 1, "{:?}", r.notes);
    assert!(
        r.notes.iter().any(|n| n.contains("read a third time")),
        "{:?}",
        r.notes
    );
    assert!(r.notes.iter().any(|n| n.contains("No home structure")));
}

/// Maps a KNL-like mesh with a burst of `add_ns` over 400 line reads: (homes found,
/// each line's group, notes).
fn knl_with_burst(add_ns: f64) -> (usize, Vec<u8>, Vec<String>) {
    let mut t = TruthOptions::new("knl-7210");
    t.noise_ns = 2.0;
    t.seed = 4;
    t.page_bytes = 64 << 10;
    t.pages = 20;
    let machine = TruthMachine::generate(&t).unwrap();
    let mut p = burst(TruthProbe::new(machine), 3_000..3_400, add_ns);
    let opts = MapOptions {
        interfaces: false,
        refine_cpus: false,
        ..MapOptions::default()
    };
    let m = map(&mut p, None, &opts, &mut Quiet).unwrap();
    (m.record.homes.len(), m.home_profiles, m.record.notes)
}

/// Share of lines whose group in `a` is, up to relabelling, their group in `b`.
fn same_partition(a: &[u8], b: &[u8]) -> f64 {
    let mut pairs = std::collections::HashMap::new();
    for (&x, &y) in a.iter().zip(b) {
        *pairs.entry((x, y)).or_insert(0usize) += 1;
    }
    let mut best = std::collections::HashMap::new();
    for (&(x, _), &n) in &pairs {
        let v = best.entry(x).or_insert(0usize);
        *v = (*v).max(n);
    }
    best.values().sum::<usize>() as f64 / a.len() as f64
}

#[test]
fn a_burst_of_load_on_a_mesh_leaves_every_home_in_place() {
    // Without a floorplan the probe CPUs are not chosen across the mesh, so some homes
    // read alike from them: the burst-free map is the reference.
    let (homes, ids, notes) = knl_with_burst(0.0);
    assert!(homes > 16, "{notes:?}");
    assert!(!notes.iter().any(|n| n.contains("third")), "{notes:?}");
    let (homes_b, ids_b, notes_b) = knl_with_burst(25.0);
    assert!(
        notes_b.iter().any(|n| n.contains("read a third time")),
        "{notes_b:?}"
    );
    assert_eq!(homes_b, homes, "{notes_b:?}");
    let same = same_partition(&ids_b, &ids);
    assert!(same >= 0.99, "{same}: {notes_b:?}");
}

#[test]
fn groups_that_no_address_hash_explains_are_not_homes() {
    // 8 MiB of 4 KiB pages at scattered physical addresses, as base pages come.
    let pages = 2048u64;
    let mut flat = flat();
    flat.buffer = BufferInfo {
        bytes: pages * 4096,
        page_bytes: 4096,
        huge_pages: false,
        line_bytes: 64,
        page_phys: Some(
            (0..pages)
                .map(|i| ((i * 7919 + 13) % 65_536) * 4096)
                .collect(),
        ),
        phys_note: None,
    };
    // A flat machine whose fully read first page shows an effect of the reading order:
    // every odd line of page 0 reads 30 ns slower (as the adjacent-line prefetcher can
    // make a line's buddy look), the same on every reading.
    let mut p = Adjust {
        inner: flat,
        reads: 0,
        adjust: |_, l: &Line| {
            if l.page == 0 && l.offset % 2 == 1 {
                30.0
            } else {
                0.0
            }
        },
    };
    // As the live map that showed it: 64 reads per line, 4 lines sampled per page.
    let opts = MapOptions {
        sample_lines: 4,
        repeats: 64,
        ..flat_opts()
    };
    let m = map(&mut p, None, &opts, &mut Quiet).unwrap();
    let r = &m.record;
    assert!(!r.structure_visible, "{:?}", r.notes);
    assert_eq!(r.homes.len(), 1);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("no hash of their physical addresses")),
        "{:?}",
        r.notes
    );
}
