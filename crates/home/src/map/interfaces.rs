//! Memory interfaces: lines grouped by the shape of flushed minus forwarded reads over
//! the readers, kept if the grouping reproduces, and the interface hash fitted on them.

use super::groups::{centroids, ids, reproduced};
use super::{measure, Profiles, Rereads, Run, Watch, REPRODUCE_MIN};
use crate::cluster::{cluster, Clusters};
use crate::error::HomeError;
use crate::probe::HomeProbe;
use numalab_records::home::{HashFit, Interface, LINE_UNKNOWN};

/// The memory interfaces found, if any.
pub(super) struct Interfaces {
    /// Interface id of each line (`LINE_UNKNOWN` when not distinguished).
    pub(super) ids: Vec<u8>,
    /// The interfaces.
    pub(super) list: Vec<Interface>,
    /// The interface hash, when there was more than one interface.
    pub(super) hash: Option<HashFit>,
    /// The share of re-read lines whose interface group reproduced, when checked.
    pub(super) reproduced: Option<f64>,
}

/// Finds the memory interfaces from the flushed reads (none without them), checking
/// that they reproduce on the lines re-read for the homes.
pub(super) fn find_interfaces(
    probe: &mut dyn HomeProbe,
    run: &Run,
    profiles: &Profiles,
    rereads: Rereads,
    sigma: f64,
    watch: &mut dyn Watch,
    notes: &mut Vec<String>,
) -> Result<Interfaces, HomeError> {
    let lines = run.lines;
    let mut again_fwd = Some(rereads.again);
    let mut iface_ids = vec![LINE_UNKNOWN; lines.len()];
    let mut interfaces = Vec::new();
    let mut interface_hash = None;
    let mut interfaces_reproduced = None;
    if let Some(fl) = &profiles.flushed {
        let shapes: Vec<Vec<f64>> = fl
            .iter()
            .zip(&profiles.fwd)
            .map(|(a, b)| shape(a, b))
            .collect();
        let mut ic = cluster(&shapes, sigma * std::f64::consts::SQRT_2, run.seed ^ 1);
        if ic.centroids.len() > 1 {
            let again_fwd = match again_fwd.take() {
                Some(a) => a,
                None => measure(probe, run.fwd_reads, &rereads.sub, watch, "re-reading")?,
            };
            let again_fl = measure(probe, run.flush_reads, &rereads.sub, watch, "re-reading")?;
            let again_shapes: Vec<Vec<f64>> = again_fl
                .iter()
                .zip(&again_fwd)
                .map(|(a, b)| shape(a, b))
                .collect();
            let agree = reproduced(&rereads.check, &again_shapes, &ic);
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
            let (fit, final_ids, changed) = run.fit("interface", &raw);
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
                run.fwd_reads.readers.len()
            ));
        }
    }
    Ok(Interfaces {
        ids: iface_ids,
        list: interfaces,
        hash: interface_hash,
        reproduced: interfaces_reproduced,
    })
}

/// Flushed minus forwarded latency, minus its mean over readers.
fn shape(flushed: &[f64], forwarded: &[f64]) -> Vec<f64> {
    let d: Vec<f64> = flushed.iter().zip(forwarded).map(|(x, y)| x - y).collect();
    let m = d.iter().sum::<f64>() / d.len().max(1) as f64;
    d.into_iter().map(|x| x - m).collect()
}
