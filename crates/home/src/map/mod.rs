//! `numalab home map`: measure lines of a buffer from cores across the floorplan, group
//! them into homes (and memory interfaces) by their latency profiles, fit the address
//! hash, locate the homes on the floorplan, and write one `home.map` record.
//!
//! # Lines
//! The first page is measured in full (every line offset: what the hash's page part is
//! fitted on), every other page at the same `sample_lines` offsets (what the bits above
//! the page are fitted on). Each line is read `repeats` times from every probe core and
//! the median kept.
//!
//! # Reads
//! With two CPUs or more, homes are found from forwarded reads (the owner core writes the
//! line, the reader reads it through its home: no memory interface in the path), and
//! memory interfaces from the difference between flushed and forwarded reads of the same
//! line (the path home -> interface -> reader), minus its mean over readers. With one CPU
//! only flushed reads are possible and homes and interfaces are not told apart.
//!
//! # After grouping
//! The hash ([`crate::hash`]) is fitted on the groups' ids; where it is found, every line
//! takes the id its address gives (the table is a majority over hundreds of lines per
//! syndrome, so it corrects lines that noise put in a neighbouring group) and the record
//! counts the lines it changed.

mod groups;
mod interfaces;
mod place;

use crate::error::HomeError;
use crate::locate::{Floorplan, Located};
use crate::probe::{Access, BufferInfo, HomeProbe, Line};
use numalab_records::home::{to_hex, HashFit, HomeMapRecord, PageMap};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// How to map.
#[derive(Debug, Clone, PartialEq)]
pub struct MapOptions {
    /// Reader cores (the owner comes on top).
    pub probe_cpus: usize,
    /// Reads per line and core.
    pub repeats: u32,
    /// Lines sampled on every page after the first.
    pub sample_lines: usize,
    /// Pages measured (the first in full, the others sampled); `None`: all.
    pub pages: Option<usize>,
    /// Also find memory interfaces (flushed reads on top of forwarded ones).
    pub interfaces: bool,
    /// Seed of the sample offsets and the grouping.
    pub seed: u64,
    /// With a floorplan: place every CPU again from its reads of lines of each located
    /// home (`REFINE_LINES` lines per home).
    pub refine_cpus: bool,
}

impl Default for MapOptions {
    fn default() -> Self {
        MapOptions {
            probe_cpus: 16,
            repeats: 128,
            sample_lines: 64,
            pages: None,
            interfaces: true,
            seed: 1,
            refine_cpus: true,
        }
    }
}

pub use crate::watch::{Quiet, Watch};

/// A map and what scoring it needs.
#[derive(Debug, Clone)]
pub struct Mapped {
    /// The record.
    pub record: HomeMapRecord,
    /// The lines measured, in order.
    pub lines: Vec<Line>,
    /// Home id of each line from the profiles alone.
    pub home_profiles: Vec<u8>,
    /// Final home id of each line.
    pub home: Vec<u8>,
    /// Final interface id of each line (`LINE_UNKNOWN` when not distinguished).
    pub interface: Vec<u8>,
    /// The owner and reader CPUs.
    pub readers: Vec<u32>,
    /// The floorplan with every CPU placed again by its latencies to the located homes
    /// (when there was a floorplan and homes were located).
    pub floorplan: Option<Floorplan>,
    /// The floorplan as homes were located on it (turned to the frame they fit best),
    /// before CPUs were placed again.
    pub frame: Option<Floorplan>,
}

fn choose_cpus(
    cpus: &[u32],
    fp: Option<&Floorplan>,
    k: usize,
    notes: &mut Vec<String>,
) -> Vec<u32> {
    if let Some(fp) = fp {
        let s = fp.spread(cpus, k);
        if s.len() >= 2.min(cpus.len()) {
            let (chosen, open) = fp.resolving(cpus, s, k);
            if chosen.len() > k {
                notes.push(format!(
                    "{} reader(s) were added to the {} spread over the floorplan so that every pair of stops a home may sit at reads differently.",
                    chosen.len() - k,
                    k - 1
                ));
            }
            if !open.is_empty() {
                notes.push(format!(
                    "{} pair(s) of stops read alike from every probe CPU (no CPU tells them apart): homes there cannot be told apart by place.",
                    open.len()
                ));
            }
            return chosen;
        }
    }
    if cpus.len() <= k {
        return cpus.to_vec();
    }
    (0..k).map(|i| cpus[i * cpus.len() / k]).collect()
}

/// Who reads, how, and how often.
#[derive(Debug, Clone, Copy)]
struct Reads<'a> {
    access: Access,
    readers: &'a [u32],
    owner: Option<u32>,
    repeats: u32,
}

fn measure(
    probe: &mut dyn HomeProbe,
    r: Reads,
    lines: &[Line],
    watch: &mut dyn Watch,
    what: &str,
) -> Result<Vec<Vec<f64>>, HomeError> {
    let Reads {
        access,
        readers,
        owner,
        repeats,
    } = r;
    const CHUNK: usize = 2048;
    let total = (readers.len() * lines.len()) as u64;
    let mut done = 0u64;
    let mut by_reader = Vec::with_capacity(readers.len());
    for &r in readers {
        let mut v = Vec::with_capacity(lines.len());
        for chunk in lines.chunks(CHUNK) {
            if watch.stop() {
                return Err(HomeError::Interrupted);
            }
            v.extend(probe.read_ns(access, r, owner, chunk, repeats)?);
            done += chunk.len() as u64;
            watch.step(what, done, total);
        }
        by_reader.push(v);
    }
    // Profiles: one row per line.
    Ok((0..lines.len())
        .map(|i| by_reader.iter().map(|v| v[i]).collect())
        .collect())
}

/// Lines per located home each CPU reads to be placed again.
pub const REFINE_LINES: usize = 4;

/// The most reads per line and CPU (`--repeats`): a buffer of that many times is kept
/// per line (issue 50: 4294967295 asked for 32 GiB at once and aborted).
pub const MAX_REPEATS: u32 = 1_000_000;

/// `Err` (usage) unless `repeats` is within [`MAX_REPEATS`].
pub fn check_repeats(repeats: u32) -> Result<(), HomeError> {
    if repeats > MAX_REPEATS {
        return Err(HomeError::Usage(format!(
            "--repeats {repeats}: at most {MAX_REPEATS} reads per line and CPU"
        )));
    }
    Ok(())
}

/// Lines re-read to check that groups reproduce.
pub const REREAD_LINES: usize = 512;
/// Groups whose re-read lines land in the same group less often than this are dropped.
pub const REPRODUCE_MIN: f64 = 0.8;
/// With physical addresses known, groups whose address hash is not recovered, or
/// predicts fewer lines than this share, are not homes and are dropped.
pub const HASH_AGREEMENT_MIN: f64 = 0.9;
/// Each group has at least this many re-read lines (all of its lines when it has fewer).
pub const REREAD_PER_GROUP: usize = 24;
/// A group whose own re-read lines land in it less often than this did not reproduce.
pub const REPRODUCE_GROUP_MIN: f64 = 0.5;
/// Third readings of the lines of groups that did not reproduce, at most.
pub const THIRD_READ_ROUNDS: usize = 2;
/// Lines of groups that did not reproduce are read a third time only while they are at
/// most this share of all lines (more, and the grouping as a whole is an artefact).
pub const THIRD_READ_MAX_SHARE: f64 = 0.25;

/// Maps the probe's buffer.
///
/// With a floorplan, the probe CPUs are chosen on it; when placing every CPU again by its
/// latencies to the located homes moves one of the chosen CPUs (the floorplan had put it
/// elsewhere, so the choice rested on a wrong place), the CPUs are chosen again on the
/// corrected floorplan and the map is measured once more; the record says so.
pub fn map(
    probe: &mut dyn HomeProbe,
    floorplan: Option<&Floorplan>,
    opts: &MapOptions,
    watch: &mut dyn Watch,
) -> Result<Mapped, HomeError> {
    let first = map_once(probe, floorplan, opts, watch)?;
    let (Some(fp), Some(fixed)) = (first.frame.as_ref(), first.floorplan.as_ref()) else {
        return Ok(first);
    };
    let chosen: Vec<u32> = first
        .record
        .owner_cpu
        .iter()
        .chain(&first.readers)
        .copied()
        .collect();
    let moved: Vec<u32> = chosen
        .iter()
        .copied()
        .filter(|c| fp.cpu_stop.get(c) != fixed.cpu_stop.get(c))
        .collect();
    if moved.is_empty() || !opts.refine_cpus {
        return Ok(first);
    }
    let fixed = fixed.clone();
    let mut second = map_once(probe, Some(&fixed), opts, watch)?;
    second.record.notes.insert(
        0,
        format!(
            "The floorplan misplaced {} of the {} probe CPUs (CPU {}): they were chosen again on the floorplan corrected by the first map, and the map measured again ({:.1} s of reads before).",
            moved.len(),
            chosen.len(),
            moved
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            first.record.measure_seconds
        ),
    );
    for n in first
        .record
        .notes
        .iter()
        .filter(|n| n.contains("was turned"))
    {
        second.record.notes.insert(0, n.clone());
    }
    second.record.measure_seconds += first.record.measure_seconds;
    second.record.infer_seconds += first.record.infer_seconds;
    Ok(second)
}

/// One mapping: CPUs chosen, lines read, grouped into homes (and interfaces), the hash
/// fitted, homes located, and the record made.
fn map_once(
    probe: &mut dyn HomeProbe,
    floorplan: Option<&Floorplan>,
    opts: &MapOptions,
    watch: &mut dyn Watch,
) -> Result<Mapped, HomeError> {
    let mut notes = Vec::new();
    let plan = plan(&*probe, floorplan, opts, &mut notes)?;
    let run = plan.run(opts);
    let found = read_and_group(probe, &run, opts.interfaces, watch, &mut notes)?;
    let Placed {
        located,
        framed,
        refined,
    } = place_homes(
        probe,
        &run,
        floorplan,
        &found,
        opts.refine_cpus,
        watch,
        &mut notes,
    )?;
    let Found {
        profiles,
        noise,
        sigma,
        homes_reproduced,
        home,
        ifaces,
        measure_seconds,
        infer_start: t1,
    } = found;
    let Plan {
        buf,
        pages,
        access,
        owner,
        readers,
        sample,
        lines,
    } = plan;
    let (lpp, phys) = (buf.lines_per_page(), buf.page_phys.as_ref());
    let floorplan = framed.as_ref();
    let homes = place::home_records(home.centroids, &home.counts, located.as_ref(), floorplan);
    let structure_visible = homes.len() > 1 || ifaces.list.len() > 1;
    if homes.len() == 1 {
        notes.push(flat_note(
            &profiles.fwd,
            lines.len(),
            readers.len(),
            noise,
            sigma,
        ));
    }
    buffer_notes(&buf, &mut notes);
    let page_maps = page_maps(
        pages,
        lpp,
        sample.len(),
        &home.conf,
        &home.ids,
        &ifaces.ids,
        phys,
    );
    let record = HomeMapRecord {
        input_origin: probe.origin().to_string(),
        fingerprint: probe.fingerprint(),
        buffer_bytes: buf.bytes,
        page_bytes: buf.page_bytes,
        huge_pages: buf.huge_pages,
        physical_addresses: buf.page_phys.is_some(),
        line_bytes: buf.line_bytes,
        access,
        probe_cpus: readers.clone(),
        owner_cpu: owner,
        repeats: opts.repeats,
        noise_ns: noise,
        sample_offsets: sample,
        lines_measured: lines.len(),
        floorplan: floorplan.map(|f| f.name.clone()),
        cpu_stops: refined
            .as_ref()
            .or(floorplan)
            .map(cpu_stops)
            .unwrap_or_default(),
        structure_visible,
        homes_reproduced,
        interfaces_reproduced: ifaces.reproduced,
        homes,
        interfaces: ifaces.list,
        pages: page_maps,
        home_hash: structure_visible.then_some(home.hash),
        interface_hash: ifaces.hash,
        slice_hash: None,
        measure_seconds,
        infer_seconds: t1.elapsed().as_secs_f64(),
        notes,
    };
    let mut record = record;
    record.slice_hash = crate::slicefit::of_fit(&record);
    Ok(Mapped {
        record,
        lines,
        home_profiles: home.profiles,
        home: home.ids,
        interface: ifaces.ids,
        readers,
        frame: framed.clone(),
        floorplan: refined.or_else(|| framed.clone()),
    })
}

/// One mapping run's fixed inputs: how lines are read, and which lines.
struct Run<'a> {
    /// Forwarded reads (flushed with one CPU): what homes are grouped on.
    fwd_reads: Reads<'a>,
    /// Flushed reads by the same readers: what interfaces are told from.
    flush_reads: Reads<'a>,
    /// The lines measured, in order: the first page in full, then `sample` of each page.
    lines: &'a [Line],
    /// Lines per page.
    lpp: usize,
    /// Bytes per line.
    line_bytes: u32,
    /// The line offsets sampled on every page after the first.
    sample: &'a [u32],
    /// Physical address of each page, when known.
    phys: Option<&'a Vec<u64>>,
    /// Seed of the grouping.
    seed: u64,
}

impl Run<'_> {
    /// Fits the `what` hash on per-line ids ([`groups::fit_hash`]).
    fn fit(&self, what: &str, ids: &[u8]) -> (HashFit, Vec<u8>, usize) {
        groups::fit_hash(
            what,
            ids,
            self.lines,
            self.lpp,
            self.line_bytes,
            self.sample,
            self.phys,
        )
    }
}

/// Each line's latency profile over the readers.
struct Profiles {
    /// Forwarded reads (flushed with one CPU).
    fwd: Vec<Vec<f64>>,
    /// Flushed reads, when interfaces are looked for.
    flushed: Option<Vec<Vec<f64>>>,
}

/// Lines read a second time to check that groups reproduce.
struct Rereads {
    /// The first `spread` of `check` are spread evenly over all lines; the others were
    /// added so that small groups have re-read lines too.
    spread: usize,
    /// Indices of the re-read lines.
    check: Vec<usize>,
    /// The re-read lines.
    sub: Vec<Line>,
    /// Their forwarded profiles, read again.
    again: Vec<Vec<f64>>,
}

/// What the reads found.
struct Found {
    /// Each line's profiles.
    profiles: Profiles,
    /// The probe's noise per read, ns.
    noise: f64,
    /// The noise lines are grouped at (per profile element), ns.
    sigma: f64,
    /// The share of re-read lines whose home group reproduced, when checked.
    homes_reproduced: Option<f64>,
    /// The homes.
    home: groups::HomeGroups,
    /// The memory interfaces.
    ifaces: interfaces::Interfaces,
    /// Seconds the first reading took.
    measure_seconds: f64,
    /// When the inference began (after the first reading).
    infer_start: Instant,
}

/// Reads the lines (forwarded, and flushed too when `want_interfaces` and there is an
/// owner), groups them into homes and interfaces that reproduce, and fits their hashes.
fn read_and_group(
    probe: &mut dyn HomeProbe,
    run: &Run,
    want_interfaces: bool,
    watch: &mut dyn Watch,
    notes: &mut Vec<String>,
) -> Result<Found, HomeError> {
    let t0 = Instant::now();
    let fwd = measure(probe, run.fwd_reads, run.lines, watch, "homes")?;
    let flushed = if run.fwd_reads.access == Access::Forwarded && want_interfaces {
        Some(measure(
            probe,
            run.flush_reads,
            run.lines,
            watch,
            "interfaces",
        )?)
    } else {
        None
    };
    let measure_seconds = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let noise = probe.noise_ns().unwrap_or(0.0);
    let (sigma, mut rereads) = groups::line_sigma(probe, run, &fwd, noise, watch, notes)?;
    let mut profiles = Profiles { fwd, flushed };
    let (homes_c, homes_reproduced) =
        groups::reproducing_groups(probe, run, &mut profiles, &mut rereads, sigma, watch, notes)?;
    let home = groups::fit_homes(run, homes_c, &profiles.fwd, sigma, notes)?;
    let ifaces = interfaces::find_interfaces(probe, run, &profiles, rereads, sigma, watch, notes)?;
    Ok(Found {
        profiles,
        noise,
        sigma,
        homes_reproduced,
        home,
        ifaces,
        measure_seconds,
        infer_start: t1,
    })
}

/// Where the homes are, and the CPUs.
struct Placed {
    /// Each home's stop, when located.
    located: Option<Vec<Located>>,
    /// The floorplan in the frame the homes fit best.
    framed: Option<Floorplan>,
    /// The floorplan with every CPU placed again from its latencies to the homes.
    refined: Option<Floorplan>,
}

/// Where the homes are: located on the floorplan, in the frame they fit best, and then,
/// with `refine`, every CPU placed again from its latencies to the located homes.
fn place_homes(
    probe: &mut dyn HomeProbe,
    run: &Run,
    floorplan: Option<&Floorplan>,
    found: &Found,
    refine: bool,
    watch: &mut dyn Watch,
    notes: &mut Vec<String>,
) -> Result<Placed, HomeError> {
    let (reads, home, sigma) = (run.fwd_reads, &found.home, found.sigma);
    let (located, framed) = place::locate_homes(
        floorplan,
        reads.access,
        reads.readers,
        &home.centroids,
        &home.counts,
        sigma,
        notes,
    );
    // Every CPU placed again from its latencies to the located homes.
    let mut refined = None;
    if let (Some(fp), Some(loc), true) = (framed.as_ref(), &located, refine) {
        if watch.stop() {
            return Err(HomeError::Interrupted);
        }
        let (fp2, moved, placed) = place::refine_cpus(
            probe, fp, loc, &home.ids, &home.conf, run.lines, reads, sigma, watch,
        )?;
        notes.push(format!(
            "Every CPU was placed again from its reads of {REFINE_LINES} lines of each located home: {moved} of {placed} moved from the floorplan's stop."
        ));
        refined = Some(fp2);
    }
    Ok(Placed {
        located,
        framed,
        refined,
    })
}

/// What one mapping reads: the buffer, the CPUs and how they read, and the lines.
struct Plan {
    /// The probe's buffer.
    buf: BufferInfo,
    /// Pages measured.
    pages: usize,
    /// Forwarded reads with two CPUs or more, else flushed.
    access: Access,
    /// The CPU that writes each line before a forwarded read.
    owner: Option<u32>,
    /// The reading CPUs.
    readers: Vec<u32>,
    /// The line offsets sampled on every page after the first.
    sample: Vec<u32>,
    /// The lines measured, in order.
    lines: Vec<Line>,
}

impl Plan {
    /// The run these reads make, with `opts`' repeats and seed.
    fn run(&self, opts: &MapOptions) -> Run<'_> {
        let fwd_reads = Reads {
            access: self.access,
            readers: &self.readers,
            owner: self.owner,
            repeats: opts.repeats,
        };
        let flush_reads = Reads {
            access: Access::Flushed,
            owner: None,
            ..fwd_reads
        };
        Run {
            fwd_reads,
            flush_reads,
            lines: &self.lines,
            lpp: self.buf.lines_per_page(),
            line_bytes: self.buf.line_bytes,
            sample: &self.sample,
            phys: self.buf.page_phys.as_ref(),
            seed: opts.seed,
        }
    }
}

/// Checks the options and plans the reads: the pages, the CPUs and how they read
/// ([`plan_reads`]), and the lines ([`sample_lines`]).
fn plan(
    probe: &dyn HomeProbe,
    floorplan: Option<&Floorplan>,
    opts: &MapOptions,
    notes: &mut Vec<String>,
) -> Result<Plan, HomeError> {
    if opts.repeats == 0 || opts.probe_cpus == 0 || opts.sample_lines == 0 {
        return Err(HomeError::Usage(
            "--repeats, --cpus and --sample-lines must be at least 1".into(),
        ));
    }
    check_repeats(opts.repeats)?;
    let buf = probe.buffer().clone();
    let lpp = buf.lines_per_page();
    let pages = opts.pages.unwrap_or(buf.pages()).min(buf.pages()).max(1);
    let cpus = probe.cpus();
    if cpus.is_empty() {
        return Err(HomeError::Unsupported("no CPU to read from".into()));
    }
    let (access, owner, readers) = plan_reads(&cpus, floorplan, opts.probe_cpus, notes);
    let (sample, lines) = sample_lines(lpp, pages, opts);
    Ok(Plan {
        buf,
        pages,
        access,
        owner,
        readers,
        sample,
        lines,
    })
}

/// How lines are read: forwarded with an owner and readers when two CPUs or more are
/// chosen, else flushed by the one CPU.
fn plan_reads(
    cpus: &[u32],
    floorplan: Option<&Floorplan>,
    probe_cpus: usize,
    notes: &mut Vec<String>,
) -> (Access, Option<u32>, Vec<u32>) {
    // More readers than CPUs choose them all (`--cpus 18446744073709551615` overflowed).
    let k = probe_cpus.min(cpus.len()) + 1;
    let chosen = choose_cpus(cpus, floorplan, k, notes);
    if chosen.len() >= 2 {
        (Access::Forwarded, Some(chosen[0]), chosen[1..].to_vec())
    } else {
        notes.push(
            "Only one CPU: lines are read flushed, so a group is a home and interface together."
                .into(),
        );
        (Access::Flushed, None, chosen.clone())
    }
}

/// The sample offsets (`opts.sample_lines` of a page's `lpp`, chosen by the seed) and the
/// lines measured: the first page in full, then the sample of each of `pages - 1` pages.
fn sample_lines(lpp: usize, pages: usize, opts: &MapOptions) -> (Vec<u32>, Vec<Line>) {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut sample: Vec<u32> = (0..lpp as u32).collect();
    sample.shuffle(&mut rng);
    sample.truncate(opts.sample_lines.min(lpp));
    sample.sort_unstable();
    let mut lines: Vec<Line> = (0..lpp as u32)
        .map(|o| Line { page: 0, offset: o })
        .collect();
    for page in 1..pages {
        lines.extend(sample.iter().map(|&o| Line { page, offset: o }));
    }
    (sample, lines)
}

/// The note for a map with one home: how alike the lines read, and how small a
/// difference would have been seen.
fn flat_note(fwd: &[Vec<f64>], lines: usize, readers: usize, noise: f64, sigma: f64) -> String {
    let spread = fwd
        .iter()
        .map(|p| p.iter().sum::<f64>() / p.len().max(1) as f64)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    format!(
        "No home structure is visible: all {} lines read alike from {} probe core(s) (one group; mean latencies {:.1}-{:.1} ns, noise {:.2} ns per read). Profiles that differ by less than about {:.2} ns would not be told apart.",
        lines,
        readers,
        spread.0,
        spread.1,
        noise,
        2.0 * (crate::cluster::MERGE_LAMBDA).sqrt() * sigma
    )
}

/// Notes on what the buffer lets the hash see.
fn buffer_notes(buf: &BufferInfo, notes: &mut Vec<String>) {
    if let Some(n) = &buf.phys_note {
        notes.push(format!("No physical addresses: {n}."));
    }
    if !buf.huge_pages && buf.page_phys.is_none() {
        notes.push(format!(
            "The buffer is on {} KiB pages: the hash sees only the bits within a page.",
            buf.page_bytes / 1024
        ));
    }
}

/// Each page's map: its lines' homes, interfaces and confidences, in hex.
fn page_maps(
    pages: usize,
    lpp: usize,
    sample_len: usize,
    conf: &[f64],
    home_ids: &[u8],
    iface_ids: &[u8],
    phys: Option<&Vec<u64>>,
) -> Vec<PageMap> {
    let mut page_maps = Vec::new();
    let mut at = 0;
    for page in 0..pages {
        let n = if page == 0 { lpp } else { sample_len };
        let conf_bytes: Vec<u8> = conf[at..at + n]
            .iter()
            .map(|p| (p.clamp(0.0, 1.0) * 255.0).round() as u8)
            .collect();
        page_maps.push(PageMap {
            index: page,
            phys: phys.map(|v| v[page]),
            full: page == 0,
            home: to_hex(&home_ids[at..at + n]),
            interface: to_hex(&iface_ids[at..at + n]),
            confidence: to_hex(&conf_bytes),
        });
        at += n;
    }
    page_maps
}

/// Each CPU's stop on the floorplan, as `[cpu, x, y]`.
fn cpu_stops(f: &Floorplan) -> Vec<[u32; 3]> {
    f.cpu_stop
        .iter()
        .map(|(&c, &s)| {
            let (x, y) = f.grid.xy(s);
            [c, x, y]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 50's campaign: `home map --cpus 18446744073709551615` overflowed (a panic,
    /// exit 101); more readers than CPUs read from every CPU.
    #[test]
    fn repeats_past_the_bound_are_refused() {
        assert!(check_repeats(MAX_REPEATS).is_ok());
        let e = check_repeats(4_294_967_295).unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        assert_eq!(
            e.to_string(),
            "--repeats 4294967295: at most 1000000 reads per line and CPU"
        );
    }

    #[test]
    fn more_readers_than_cpus_take_every_cpu() {
        let mut notes = Vec::new();
        let (access, owner, readers) = plan_reads(&[0, 1, 2, 3], None, usize::MAX, &mut notes);
        assert_eq!(access, Access::Forwarded);
        assert_eq!(owner, Some(0));
        assert_eq!(readers, vec![1, 2, 3]);
    }
}
