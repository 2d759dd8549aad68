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

use crate::cluster::{cluster, nearest, Clusters};
use crate::error::HomeError;
use crate::hash::{self, PageIds};
use crate::locate::{locate, Floorplan};
use crate::probe::{Access, HomeProbe, Line};
use numalab_records::home::{
    to_hex, HashFit, Home, HomeMapRecord, Interface, PageMap, LINE_UNKNOWN,
};
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

/// Places every CPU of the floorplan (but the owner) again, from its forwarded reads of
/// `REFINE_LINES` confident lines of each located home: the homes are now anchors at
/// known stops, and [`locate`] with readers and homes swapped finds each CPU's stop
/// (several CPUs may share one). Returns the new floorplan, the CPUs that moved, and
/// the CPUs placed.
#[allow(clippy::too_many_arguments)]
fn refine_cpus(
    probe: &mut dyn HomeProbe,
    fp: &Floorplan,
    loc: &[crate::locate::Located],
    ids: &[u8],
    conf: &[f64],
    lines: &[Line],
    reads: Reads,
    sigma: f64,
    watch: &mut dyn Watch,
) -> Result<(Floorplan, usize, usize), HomeError> {
    let mut picked: Vec<Vec<Line>> = vec![Vec::new(); loc.len()];
    for ((l, &id), &c) in lines.iter().zip(ids).zip(conf) {
        let h = id as usize;
        if h < picked.len() && picked[h].len() < REFINE_LINES && c > 0.99 {
            picked[h].push(*l);
        }
    }
    let homes: Vec<usize> = (0..loc.len()).filter(|&h| !picked[h].is_empty()).collect();
    let flat: Vec<Line> = homes.iter().flat_map(|&h| picked[h].clone()).collect();
    let anchors: Vec<u32> = homes.iter().map(|&h| loc[h].stop).collect();
    let for_cpus = Floorplan {
        candidates: fp.grid.core_stops(),
        ..fp.clone()
    };
    // Reads of every picked line by `cpus` with one owner, averaged per home, and the
    // CPUs placed on those profiles (one owner per fit: its distance to each home is
    // the per-home constant of the fit).
    let mut place = |cpus: &[u32],
                     owner: Option<u32>,
                     watch: &mut dyn Watch|
     -> Result<Vec<crate::locate::Located>, HomeError> {
        let mut profiles = Vec::with_capacity(cpus.len());
        for (k, &c) in cpus.iter().enumerate() {
            if watch.stop() {
                return Err(HomeError::Interrupted);
            }
            let v = probe.read_ns(reads.access, c, owner, &flat, reads.repeats)?;
            watch.step("placing CPUs", k as u64 + 1, cpus.len() as u64);
            let mut at = 0;
            let mut p = Vec::with_capacity(homes.len());
            for &h in &homes {
                let n = picked[h].len();
                p.push(v[at..at + n].iter().sum::<f64>() / n as f64);
                at += n;
            }
            profiles.push(p);
        }
        let weights = vec![REFINE_LINES; cpus.len()];
        Ok(locate(&for_cpus, &anchors, &profiles, &weights, sigma))
    };
    let mut cpus: Vec<u32> = fp
        .cpu_stop
        .keys()
        .copied()
        .filter(|&c| Some(c) != reads.owner)
        .collect();
    let mut placed = place(&cpus, reads.owner, watch)?;
    // The owner itself, with the first reader as owner, among the other readers.
    if let (Some(a), Some(&b)) = (reads.owner, reads.readers.first()) {
        if fp.cpu_stop.contains_key(&a) {
            let mut group: Vec<u32> = reads.readers[1..]
                .iter()
                .copied()
                .filter(|c| fp.cpu_stop.contains_key(c))
                .collect();
            group.push(a);
            if group.len() >= 3 {
                let again = place(&group, Some(b), watch)?;
                if let Some(p) = again.last() {
                    cpus.push(a);
                    placed.push(p.clone());
                }
            }
        }
    }
    // A CPU moves only where the anchors tell its new stop from its old one (homes all
    // on one side cannot tell two stops in line with them apart) and the fit is sure.
    let mut out = fp.clone();
    let mut moved = 0;
    for (&c, p) in cpus.iter().zip(&placed) {
        let old = fp.cpu_stop.get(&c).copied();
        let told = old.is_none_or(|o| for_cpus.resolves(&anchors, o, p.stop));
        if old != Some(p.stop) && told && p.confidence > 0.9 {
            moved += 1;
            out.cpu_stop.insert(c, p.stop);
        }
    }
    out.name = format!(
        "{}, CPUs placed again by their latencies to the homes",
        fp.name
    );
    Ok((out, moved, cpus.len()))
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

/// Flushed minus forwarded latency, minus its mean over readers.
fn shape(flushed: &[f64], forwarded: &[f64]) -> Vec<f64> {
    let d: Vec<f64> = flushed.iter().zip(forwarded).map(|(x, y)| x - y).collect();
    let m = d.iter().sum::<f64>() / d.len().max(1) as f64;
    d.into_iter().map(|x| x - m).collect()
}

/// Share of re-read profiles whose nearest group is the one their line had.
fn reproduced(check: &[usize], again: &[Vec<f64>], c: &Clusters) -> f64 {
    let same = check
        .iter()
        .zip(again)
        .filter(|(&i, p)| nearest(p, &c.centroids).0 == c.label[i])
        .count();
    same as f64 / check.len().max(1) as f64
}

/// Per group: its re-read lines, and how many of them fell in it again.
fn group_agreement(check: &[usize], again: &[Vec<f64>], c: &Clusters) -> Vec<(usize, usize)> {
    let mut v = vec![(0usize, 0usize); c.centroids.len()];
    for (&i, p) in check.iter().zip(again) {
        let g = c.label[i];
        v[g].0 += 1;
        if nearest(p, &c.centroids).0 == g {
            v[g].1 += 1;
        }
    }
    v
}

/// Lines (indices and lines) to re-read so that every group has [`REREAD_PER_GROUP`]
/// re-read lines, spread over its members, or all of its members when it has fewer.
fn group_rereads(c: &Clusters, check: &[usize], lines: &[Line]) -> (Vec<usize>, Vec<Line>) {
    let k = c.centroids.len();
    let mut in_check = vec![false; lines.len()];
    let mut have = vec![0usize; k];
    for &i in check {
        in_check[i] = true;
        have[c.label[i]] += 1;
    }
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); k];
    for (i, &g) in c.label.iter().enumerate() {
        if !in_check[i] {
            members[g].push(i);
        }
    }
    let mut idx = Vec::new();
    for g in 0..k {
        let need = REREAD_PER_GROUP
            .saturating_sub(have[g])
            .min(members[g].len());
        if need == 0 {
            continue;
        }
        let m = &members[g];
        idx.extend((0..need).map(|j| m[j * m.len() / need]));
    }
    idx.sort_unstable();
    let l = idx.iter().map(|&i| lines[i]).collect();
    (idx, l)
}

/// Ids ordered by the groups' mean latency (fastest first), as bytes.
fn ids(c: &Clusters) -> Result<Vec<u8>, HomeError> {
    if c.centroids.len() > 254 {
        return Err(HomeError::Usage(format!(
            "{} groups of lines: more than the 254 a map holds; the reads are too noisy to group (raise --repeats)",
            c.centroids.len()
        )));
    }
    let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mut order: Vec<usize> = (0..c.centroids.len()).collect();
    order.sort_by(|&a, &b| mean(&c.centroids[a]).total_cmp(&mean(&c.centroids[b])));
    let mut rank = vec![0u8; order.len()];
    for (r, &k) in order.iter().enumerate() {
        rank[k] = r as u8;
    }
    Ok(c.label.iter().map(|&l| rank[l]).collect())
}

/// Fits the hash on per-line ids and relabels the lines it covers. Returns the fit, the
/// new ids and how many lines changed.
fn fit_hash(
    what: &str,
    ids: &[u8],
    lines: &[Line],
    lpp: usize,
    line_bytes: u32,
    sample: &[u32],
    phys: Option<&Vec<u64>>,
) -> (HashFit, Vec<u8>, usize) {
    let full: Vec<u8> = ids[..lpp.min(ids.len())].to_vec();
    let mut pages: Vec<(Option<u64>, Vec<u8>)> = Vec::new();
    let mut i = lpp;
    while i < lines.len() {
        let p = lines[i].page;
        let n = sample.len();
        pages.push((phys.map(|v| v[p]), ids[i..i + n].to_vec()));
        i += n;
    }
    let input = PageIds {
        lines_per_page: lpp,
        line_bytes,
        full_page: &full,
        full_page_phys: phys.map(|v| v[0]),
        sample_offsets: sample,
        pages: pages.iter().map(|(p, v)| (*p, v.as_slice())).collect(),
    };
    let fit = hash::recover(what, &input);
    let mut out = ids.to_vec();
    if let Some(f) = hash::relabel_full_page(&fit, &input) {
        out[..f.len()].copy_from_slice(&f);
        let mut at = lpp;
        for k in 0..pages.len() {
            if let Some(p) = hash::relabel_page(&fit, &input, k) {
                out[at..at + p.len()].copy_from_slice(&p);
            }
            at += sample.len();
        }
    }
    let changed = out.iter().zip(ids).filter(|(a, b)| a != b).count();
    (fit, out, changed)
}

fn centroids(profiles: &[Vec<f64>], ids: &[u8], n: usize) -> (Vec<Vec<f64>>, Vec<usize>) {
    let dims = profiles.first().map_or(0, Vec::len);
    let mut sum = vec![vec![0.0; dims]; n];
    let mut count = vec![0usize; n];
    for (p, &id) in profiles.iter().zip(ids) {
        if (id as usize) < n {
            count[id as usize] += 1;
            for (s, x) in sum[id as usize].iter_mut().zip(p) {
                *s += x;
            }
        }
    }
    for (s, &c) in sum.iter_mut().zip(&count) {
        s.iter_mut().for_each(|x| *x /= c.max(1) as f64);
    }
    (sum, count)
}

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

fn map_once(
    probe: &mut dyn HomeProbe,
    floorplan: Option<&Floorplan>,
    opts: &MapOptions,
    watch: &mut dyn Watch,
) -> Result<Mapped, HomeError> {
    if opts.repeats == 0 || opts.probe_cpus == 0 || opts.sample_lines == 0 {
        return Err(HomeError::Usage(
            "--repeats, --cpus and --sample-lines must be at least 1".into(),
        ));
    }
    let buf = probe.buffer().clone();
    let lpp = buf.lines_per_page();
    let pages = opts.pages.unwrap_or(buf.pages()).min(buf.pages()).max(1);
    let mut notes = Vec::new();
    let cpus = probe.cpus();
    if cpus.is_empty() {
        return Err(HomeError::Unsupported("no CPU to read from".into()));
    }
    let chosen = choose_cpus(&cpus, floorplan, opts.probe_cpus + 1, &mut notes);
    let (access, owner, readers) = if chosen.len() >= 2 {
        (Access::Forwarded, Some(chosen[0]), chosen[1..].to_vec())
    } else {
        notes.push(
            "Only one CPU: lines are read flushed, so a group is a home and interface together."
                .into(),
        );
        (Access::Flushed, None, chosen.clone())
    };
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
    let fwd_reads = Reads {
        access,
        readers: &readers,
        owner,
        repeats: opts.repeats,
    };
    let flush_reads = Reads {
        access: Access::Flushed,
        owner: None,
        ..fwd_reads
    };
    let t0 = Instant::now();
    let fwd = measure(probe, fwd_reads, &lines, watch, "homes")?;
    let flushed = if access == Access::Forwarded && opts.interfaces {
        Some(measure(probe, flush_reads, &lines, watch, "interfaces")?)
    } else {
        None
    };
    let measure_seconds = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let noise = probe.noise_ns().unwrap_or(0.0);
    // Element noise: the interquartile mean of `repeats` Gaussian reads (efficiency
    // about 0.83 of the mean's).
    let sigma_reads = (noise * 1.1 / f64::from(opts.repeats).sqrt()).max(1e-3);
    // Line-to-line repeatability: a spread sample read a second time. What separates
    // two readings of one line (drift, frequency changes, the clock) separates lines too,
    // so grouping uses the larger of the two.
    let step = (lines.len() / REREAD_LINES).max(1);
    let check: Vec<usize> = (0..lines.len()).step_by(step).take(REREAD_LINES).collect();
    let sub: Vec<Line> = check.iter().map(|&i| lines[i]).collect();
    let again = measure(probe, fwd_reads, &sub, watch, "re-reading")?;
    let mut diffs: Vec<f64> = check
        .iter()
        .zip(&again)
        .flat_map(|(&i, p)| p.iter().zip(&fwd[i]).map(|(a, b)| a - b))
        .collect();
    let repeatability = crate::probe::center_and_sigma(&mut diffs).1 / std::f64::consts::SQRT_2;
    let sigma = if repeatability.is_finite() {
        sigma_reads.max(repeatability)
    } else {
        sigma_reads
    };
    if sigma > 1.5 * sigma_reads {
        notes.push(format!(
            "Two readings of one line differ more than the reads' own noise explains ({repeatability:.2} ns against {sigma_reads:.2} ns per profile element): the latencies drift over the run, and lines are grouped at the larger figure."
        ));
    }
    // Groups must reproduce: re-read lines must fall in their group again, over all
    // lines and in every group (a group of lines read during a burst of load elsewhere
    // is small, so it hardly lowers the overall share, but its own lines, read again
    // later, leave it). Lines of a group that fails are read a third time, in another
    // time window, and grouped again.
    let mut fwd = fwd;
    let mut flushed = flushed;
    let spread = check.len();
    let mut check = check;
    let mut sub = sub;
    let mut again = again;
    let mut homes_c = cluster(&fwd, sigma, opts.seed);
    let mut homes_reproduced = None;
    let mut third_reads = 0usize;
    while homes_c.centroids.len() > 1 {
        let (extra_idx, extra_lines) = group_rereads(&homes_c, &check, &lines);
        if !extra_lines.is_empty() {
            again.extend(measure(
                probe,
                fwd_reads,
                &extra_lines,
                watch,
                "re-reading",
            )?);
            check.extend(extra_idx);
            sub.extend(extra_lines);
        }
        let per_group = group_agreement(&check, &again, &homes_c);
        // The overall share over the spread sample alone (the lines added for small
        // groups would weigh small groups more than their lines do).
        let agree = reproduced(&check[..spread], &again[..spread], &homes_c);
        homes_reproduced = Some(agree);
        let failing: Vec<usize> = (0..per_group.len())
            .filter(|&g| {
                let (n, s) = per_group[g];
                n > 0 && (s as f64) < REPRODUCE_GROUP_MIN * n as f64
            })
            .collect();
        if agree >= REPRODUCE_MIN && failing.is_empty() {
            break;
        }
        let redo: Vec<usize> = (0..lines.len())
            .filter(|&i| failing.contains(&homes_c.label[i]))
            .collect();
        let redo_share = redo.len() as f64 / lines.len().max(1) as f64;
        if !failing.is_empty()
            && third_reads < THIRD_READ_ROUNDS
            && redo_share <= THIRD_READ_MAX_SHARE
        {
            // Read them again, last line first, so that a drift in time does not fall
            // on the same addresses twice.
            let redo_lines: Vec<Line> = redo.iter().rev().map(|&i| lines[i]).collect();
            let fresh = measure(probe, fwd_reads, &redo_lines, watch, "reading again")?;
            for (&i, p) in redo.iter().rev().zip(fresh) {
                fwd[i] = p;
            }
            if let Some(fl) = flushed.as_mut() {
                let fresh = measure(probe, flush_reads, &redo_lines, watch, "reading again")?;
                for (&i, p) in redo.iter().rev().zip(fresh) {
                    fl[i] = p;
                }
            }
            notes.push(format!(
                "{} group(s) of lines ({} lines) did not reproduce on a second reading (their re-read lines fell in other groups): those lines were read a third time and all lines grouped again.",
                failing.len(),
                redo.len()
            ));
            third_reads += 1;
            homes_c = cluster(&fwd, sigma, opts.seed);
            continue;
        }
        notes.push(format!(
            "The lines fell into {} groups by latency, but a second reading of {} of them put only {:.1}% in the same group{}: the groups are measurement artefacts (timer resolution, frequency or scheduling changes, load elsewhere on the machine), not homes, and are dropped.",
            homes_c.centroids.len(),
            sub.len(),
            100.0 * agree,
            if failing.is_empty() {
                String::new()
            } else {
                format!(
                    ", and the re-read lines of {} group(s) left them{}",
                    failing.len(),
                    if third_reads > 0 {
                        " even after a third reading"
                    } else {
                        ""
                    }
                )
            }
        ));
        homes_c = Clusters::single(&fwd, sigma);
    }
    let mut again_fwd = Some(again);
    let mut home_profiles = ids(&homes_c)?;
    let phys = buf.page_phys.as_ref();
    let fit =
        |profiles: &[u8]| fit_hash("home", profiles, &lines, lpp, buf.line_bytes, &sample, phys);
    let (mut home_hash, mut home_ids, mut changed) = fit(&home_profiles);
    // A home is a function of the physical address. With physical addresses known, groups
    // that no hash of them explains are not homes, however well they reproduce: an
    // artefact of the reading order (the adjacent-line prefetcher pairs lines whose
    // address differs in bit 6, and a fully read page shows it where sampled pages do
    // not) reproduces on every reading.
    if phys.is_some()
        && homes_c.centroids.len() > 1
        && (home_hash.status != "recovered" || home_hash.agreement < HASH_AGREEMENT_MIN)
    {
        notes.push(format!(
            "The lines fell into {} groups that reproduce, but no hash of their physical addresses explains them (the fit: {}, {:.1}% of lines): they are not homes (an effect of the reading order, such as the adjacent-line prefetcher, reproduces too) and are dropped.",
            homes_c.centroids.len(),
            home_hash.status,
            100.0 * home_hash.agreement
        ));
        homes_c = Clusters::single(&fwd, sigma);
        home_profiles = ids(&homes_c)?;
        (home_hash, home_ids, changed) = fit(&home_profiles);
    }
    let mut conf: Vec<f64> = homes_c.confidence.clone();
    if changed > 0 {
        notes.push(format!(
            "The home hash relabelled {changed} of {} lines that their profiles had put in another group.",
            lines.len()
        ));
        for (c, (a, b)) in conf.iter_mut().zip(home_ids.iter().zip(&home_profiles)) {
            if a != b {
                *c = home_hash.agreement;
            }
        }
    }
    let n_homes = homes_c.centroids.len();
    let (home_centroids, home_counts) = centroids(&fwd, &home_ids, n_homes);
    let unknown = home_ids.iter().filter(|&&h| h == LINE_UNKNOWN).count();
    if unknown > 0 {
        notes.push(format!(
            "{unknown} of {} lines have no home (marked ff): their page matched no shift of the hash's table clearly, and a guess would be worse than no answer.",
            lines.len()
        ));
    }
    // Interfaces.
    let mut iface_ids = vec![LINE_UNKNOWN; lines.len()];
    let mut interfaces = Vec::new();
    let mut interface_hash = None;
    let mut interfaces_reproduced = None;
    if let Some(fl) = &flushed {
        let shapes: Vec<Vec<f64>> = fl.iter().zip(&fwd).map(|(a, b)| shape(a, b)).collect();
        let mut ic = cluster(&shapes, sigma * std::f64::consts::SQRT_2, opts.seed ^ 1);
        if ic.centroids.len() > 1 {
            let again_fwd = match again_fwd.take() {
                Some(a) => a,
                None => measure(probe, fwd_reads, &sub, watch, "re-reading")?,
            };
            let again_fl = measure(probe, flush_reads, &sub, watch, "re-reading")?;
            let again_shapes: Vec<Vec<f64>> = again_fl
                .iter()
                .zip(&again_fwd)
                .map(|(a, b)| shape(a, b))
                .collect();
            let agree = reproduced(&check, &again_shapes, &ic);
            interfaces_reproduced = Some(agree);
            if agree < REPRODUCE_MIN {
                notes.push(format!(
                    "Interface groups ({}) did not reproduce on a second reading ({:.1}% the same): dropped.",
                    ic.centroids.len(),
                    100.0 * agree
                ));
                ic = Clusters::single(&shapes, sigma);
            }
        }
        if ic.centroids.len() > 1 {
            let raw = ids(&ic)?;
            let (fit, final_ids, changed) = fit_hash(
                "interface",
                &raw,
                &lines,
                lpp,
                buf.line_bytes,
                &sample,
                phys,
            );
            if changed > 0 {
                notes.push(format!(
                    "The interface hash relabelled {changed} of {} lines.",
                    lines.len()
                ));
            }
            let (shape_c, counts) = centroids(&shapes, &final_ids, ic.centroids.len());
            interfaces = shape_c
                .into_iter()
                .zip(counts)
                .enumerate()
                .map(|(i, (shape_ns, lines))| Interface {
                    id: i as u8,
                    lines,
                    shape_ns,
                })
                .collect();
            iface_ids = final_ids;
            interface_hash = Some(fit);
        } else {
            notes.push(format!(
                "Flushed reads minus forwarded reads have one shape over the probe cores: memory interfaces are not distinguishable from {} reader(s).",
                readers.len()
            ));
        }
    }
    // Locate.
    // Locate, in the frame homes fit best: a core-to-core floorplan is defined up to the
    // mesh's symmetries (a mirror image explains the matrix as well), but the stops homes
    // may sit at need not be symmetric, so the homes' fit tells the frames apart.
    let mut framed: Option<Floorplan> = floorplan.cloned();
    let located = match (floorplan, access) {
        (Some(fp), Access::Forwarded) => {
            let stops: Vec<Option<u32>> = fp.stops_of(&readers);
            if stops.iter().all(Option::is_some) && readers.len() >= 3 {
                let mut best: Option<(f64, String, Floorplan, Vec<crate::locate::Located>)> = None;
                for sym in fp.grid.symmetries() {
                    let f = fp.turned(&sym.map);
                    let s: Vec<u32> = f.stops_of(&readers).into_iter().flatten().collect();
                    let loc = locate(&f, &s, &home_centroids, &home_counts, sigma);
                    let sse: f64 = loc
                        .iter()
                        .zip(&home_counts)
                        .map(|(l, &n)| n as f64 * l.residual_ns * l.residual_ns)
                        .sum();
                    if best.as_ref().is_none_or(|b| sse < b.0 * (1.0 - 1e-9)) {
                        best = Some((sse, sym.name.clone(), f, loc));
                    }
                }
                best.map(|(_, name, f, loc)| {
                    if name != "identity" {
                        notes.push(format!(
                            "The floorplan was turned ({name}): the homes fit its image better (a core-to-core matrix cannot tell the two apart; the stops homes may sit at can)."
                        ));
                    }
                    framed = Some(f);
                    loc
                })
            } else {
                notes.push("The floorplan does not place every probe CPU (or fewer than 3 readers): homes are not located.".into());
                None
            }
        }
        (Some(_), Access::Flushed) => {
            notes.push(
                "Homes are located from forwarded reads, which need two CPUs: not located.".into(),
            );
            None
        }
        _ => None,
    };
    let floorplan = framed.as_ref();
    // Every CPU placed again from its latencies to the located homes.
    let mut refined = None;
    if let (Some(fp), Some(loc), true) = (floorplan, &located, opts.refine_cpus) {
        if watch.stop() {
            return Err(HomeError::Interrupted);
        }
        let (fp2, moved, placed) = refine_cpus(
            probe, fp, loc, &home_ids, &conf, &lines, fwd_reads, sigma, watch,
        )?;
        notes.push(format!(
            "Every CPU was placed again from its reads of {REFINE_LINES} lines of each located home: {moved} of {placed} moved from the floorplan's stop."
        ));
        refined = Some(fp2);
    }
    let homes: Vec<Home> = home_centroids
        .into_iter()
        .zip(&home_counts)
        .enumerate()
        .map(|(i, (profile_ns, &lines))| {
            let l = located.as_ref().and_then(|v| v.get(i));
            Home {
                id: i as u8,
                lines,
                profile_ns,
                stop: l.zip(floorplan).map(|(l, fp)| {
                    let (x, y) = fp.grid.xy(l.stop);
                    [x, y]
                }),
                stop_confidence: l.map(|l| l.confidence),
                stop_residual_ns: l.map(|l| l.residual_ns),
            }
        })
        .collect();
    let structure_visible = homes.len() > 1 || interfaces.len() > 1;
    if homes.len() == 1 {
        let spread = fwd
            .iter()
            .map(|p| p.iter().sum::<f64>() / p.len().max(1) as f64)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(x), hi.max(x))
            });
        notes.push(format!(
            "No home structure is visible: all {} lines read alike from {} probe core(s) (one group; mean latencies {:.1}-{:.1} ns, noise {:.2} ns per read). Profiles that differ by less than about {:.2} ns would not be told apart.",
            lines.len(),
            readers.len(),
            spread.0,
            spread.1,
            noise,
            2.0 * (crate::cluster::MERGE_LAMBDA).sqrt() * sigma
        ));
    }
    if let Some(n) = &buf.phys_note {
        notes.push(format!("No physical addresses: {n}."));
    }
    if !buf.huge_pages && buf.page_phys.is_none() {
        notes.push(format!(
            "The buffer is on {} KiB pages: the hash sees only the bits within a page.",
            buf.page_bytes / 1024
        ));
    }
    let mut page_maps = Vec::new();
    let mut at = 0;
    for page in 0..pages {
        let n = if page == 0 { lpp } else { sample.len() };
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
            .map(|f| {
                f.cpu_stop
                    .iter()
                    .map(|(&c, &s)| {
                        let (x, y) = f.grid.xy(s);
                        [c, x, y]
                    })
                    .collect()
            })
            .unwrap_or_default(),
        structure_visible,
        homes_reproduced,
        interfaces_reproduced,
        homes,
        interfaces,
        pages: page_maps,
        home_hash: structure_visible.then_some(home_hash),
        interface_hash,
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
        home_profiles,
        home: home_ids,
        interface: iface_ids,
        readers,
        frame: framed.clone(),
        floorplan: refined.or_else(|| framed.clone()),
    })
}
