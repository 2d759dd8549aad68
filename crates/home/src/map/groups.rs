//! Lines grouped into homes: the noise a grouping must allow for, groups kept only where
//! their lines' second reading reproduces them, and the home hash fitted on the groups.

use super::{measure, Profiles, Rereads, Run, Watch};
use super::{
    HASH_AGREEMENT_MIN, REPRODUCE_GROUP_MIN, REPRODUCE_MIN, REREAD_LINES, REREAD_PER_GROUP,
    THIRD_READ_MAX_SHARE, THIRD_READ_ROUNDS,
};
use crate::cluster::{cluster, nearest, Clusters};
use crate::error::HomeError;
use crate::hash::{self, PageIds};
use crate::probe::{HomeProbe, Line};
use numalab_records::home::{HashFit, LINE_UNKNOWN};

/// The homes the lines fell into, after the hash.
pub(super) struct HomeGroups {
    /// Home id of each line from the profiles alone.
    pub(super) profiles: Vec<u8>,
    /// The home hash fitted on them.
    pub(super) hash: HashFit,
    /// Final home id of each line (the hash's, where it covers the line).
    pub(super) ids: Vec<u8>,
    /// Confidence of each line's home.
    pub(super) conf: Vec<f64>,
    /// Each home's mean profile.
    pub(super) centroids: Vec<Vec<f64>>,
    /// Each home's lines.
    pub(super) counts: Vec<usize>,
}

/// The noise a grouping allows for: the larger of the reads' own noise per profile
/// element and the line-to-line repeatability of a spread sample read a second time
/// (those re-reads are returned for the reproduction checks).
pub(super) fn line_sigma(
    probe: &mut dyn HomeProbe,
    run: &Run,
    fwd: &[Vec<f64>],
    noise: f64,
    watch: &mut dyn Watch,
    notes: &mut Vec<String>,
) -> Result<(f64, Rereads), HomeError> {
    let lines = run.lines;
    // Element noise: the interquartile mean of `repeats` Gaussian reads (efficiency
    // about 0.83 of the mean's).
    let sigma_reads = (noise * 1.1 / f64::from(run.fwd_reads.repeats).sqrt()).max(1e-3);
    // Line-to-line repeatability: a spread sample read a second time. What separates
    // two readings of one line (drift, frequency changes, the clock) separates lines too,
    // so grouping uses the larger of the two.
    let step = (lines.len() / REREAD_LINES).max(1);
    let check: Vec<usize> = (0..lines.len()).step_by(step).take(REREAD_LINES).collect();
    let sub: Vec<Line> = check.iter().map(|&i| lines[i]).collect();
    let again = measure(probe, run.fwd_reads, &sub, watch, "re-reading")?;
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
    let spread = check.len();
    Ok((
        sigma,
        Rereads {
            spread,
            check,
            sub,
            again,
        },
    ))
}

/// Groups the lines by their forwarded profiles and keeps the groups only if they
/// reproduce: re-read lines must fall in their group again, over all lines and in every
/// group (a group of lines read during a burst of load elsewhere is small, so it hardly
/// lowers the overall share, but its own lines, read again later, leave it). Lines of a
/// group that fails are read a third time, in another time window, and grouped again.
/// Returns the groups and the share of the spread sample that reproduced.
pub(super) fn reproducing_groups(
    probe: &mut dyn HomeProbe,
    run: &Run,
    profiles: &mut Profiles,
    rereads: &mut Rereads,
    sigma: f64,
    watch: &mut dyn Watch,
    notes: &mut Vec<String>,
) -> Result<(Clusters, Option<f64>), HomeError> {
    let lines = run.lines;
    let (fwd_reads, flush_reads) = (run.fwd_reads, run.flush_reads);
    let Profiles { fwd, flushed } = profiles;
    let Rereads {
        spread,
        check,
        sub,
        again,
    } = rereads;
    let spread = *spread;
    let mut homes_c = cluster(fwd, sigma, run.seed);
    let mut homes_reproduced = None;
    let mut third_reads = 0usize;
    while homes_c.centroids.len() > 1 {
        let (extra_idx, extra_lines) = group_rereads(&homes_c, check, lines);
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
        let per_group = group_agreement(check, again, &homes_c);
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
            homes_c = cluster(fwd, sigma, run.seed);
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
        homes_c = Clusters::single(fwd, sigma);
    }
    Ok((homes_c, homes_reproduced))
}

/// Fits the home hash on the groups and relabels the lines it covers; with physical
/// addresses known, groups that no hash of them explains are dropped. Notes the lines
/// the hash relabelled and those left without a home.
pub(super) fn fit_homes(
    run: &Run,
    homes_c: Clusters,
    fwd: &[Vec<f64>],
    sigma: f64,
    notes: &mut Vec<String>,
) -> Result<HomeGroups, HomeError> {
    let lines = run.lines;
    let phys = run.phys;
    let mut homes_c = homes_c;
    let mut home_profiles = ids(&homes_c)?;
    let fit = |profiles: &[u8]| run.fit("home", profiles);
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
        homes_c = Clusters::single(fwd, sigma);
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
    let (home_centroids, home_counts) = centroids(fwd, &home_ids, n_homes);
    let unknown = home_ids.iter().filter(|&&h| h == LINE_UNKNOWN).count();
    if unknown > 0 {
        notes.push(format!(
            "{unknown} of {} lines have no home (marked ff): their page matched no shift of the hash's table clearly, and a guess would be worse than no answer.",
            lines.len()
        ));
    }
    Ok(HomeGroups {
        profiles: home_profiles,
        hash: home_hash,
        ids: home_ids,
        conf,
        centroids: home_centroids,
        counts: home_counts,
    })
}

/// Share of re-read profiles whose nearest group is the one their line had.
pub(super) fn reproduced(check: &[usize], again: &[Vec<f64>], c: &Clusters) -> f64 {
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
pub(super) fn ids(c: &Clusters) -> Result<Vec<u8>, HomeError> {
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
pub(super) fn fit_hash(
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

/// The mean profile of each of `n` ids over the lines that have it, and their number.
pub(super) fn centroids(
    profiles: &[Vec<f64>],
    ids: &[u8],
    n: usize,
) -> (Vec<Vec<f64>>, Vec<usize>) {
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
