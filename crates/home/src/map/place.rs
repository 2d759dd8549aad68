//! Homes placed on the floorplan: located in the frame they fit best, every CPU placed
//! again from its latencies to the located homes, and the homes' records.

use super::{Reads, Watch, REFINE_LINES};
use crate::error::HomeError;
use crate::locate::{locate, Floorplan, Located};
use crate::probe::{Access, HomeProbe, Line};
use numalab_records::home::Home;

/// Locates the homes (their mean profiles `centroids` over `counts` lines, read by
/// `readers`) on the floorplan, in the frame they fit best: a core-to-core floorplan is
/// defined up to the mesh's symmetries (a mirror image explains the matrix as well), but
/// the stops homes may sit at need not be symmetric, so the homes' fit tells the frames
/// apart. Returns where each home is, and the floorplan in that frame.
pub(super) fn locate_homes(
    floorplan: Option<&Floorplan>,
    access: Access,
    readers: &[u32],
    centroids: &[Vec<f64>],
    counts: &[usize],
    sigma: f64,
    notes: &mut Vec<String>,
) -> (Option<Vec<Located>>, Option<Floorplan>) {
    let mut framed: Option<Floorplan> = floorplan.cloned();
    let located = match (floorplan, access) {
        (Some(fp), Access::Forwarded) => {
            let stops: Vec<Option<u32>> = fp.stops_of(readers);
            if stops.iter().all(Option::is_some) && readers.len() >= 3 {
                let mut best: Option<(f64, String, Floorplan, Vec<Located>)> = None;
                for sym in fp.grid.symmetries() {
                    let f = fp.turned(&sym.map);
                    let s: Vec<u32> = f.stops_of(readers).into_iter().flatten().collect();
                    let loc = locate(&f, &s, centroids, counts, sigma);
                    let sse: f64 = loc
                        .iter()
                        .zip(counts)
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
    (located, framed)
}

/// The homes' records: each home's lines, profile and, where located, its stop.
pub(super) fn home_records(
    centroids: Vec<Vec<f64>>,
    counts: &[usize],
    located: Option<&Vec<Located>>,
    floorplan: Option<&Floorplan>,
) -> Vec<Home> {
    centroids
        .into_iter()
        .zip(counts)
        .enumerate()
        .map(|(i, (profile_ns, &lines))| {
            let l = located.and_then(|v| v.get(i));
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
        .collect()
}

/// Places every CPU of the floorplan (but the owner) again, from its forwarded reads of
/// `REFINE_LINES` confident lines of each located home: the homes are now anchors at
/// known stops, and [`locate`] with readers and homes swapped finds each CPU's stop
/// (several CPUs may share one). Returns the new floorplan, the CPUs that moved, and
/// the CPUs placed.
#[allow(clippy::too_many_arguments)]
pub(super) fn refine_cpus(
    probe: &mut dyn HomeProbe,
    fp: &Floorplan,
    loc: &[Located],
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
     -> Result<Vec<Located>, HomeError> {
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
