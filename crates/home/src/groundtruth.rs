//! `numalab home map --model PRESET`: the whole inference on a model-generated machine,
//! scored against the truth it never saw.
//!
//! The floorplan is inferred first, as on a real machine, from the machine's noisy
//! core-to-core matrix (`numalab_layout`: tile pairs from the c2c structure, then the
//! least-squares search); the map then runs through the replay probe. Scores:
//! - lines: the share of measured lines whose home matches the truth under the best
//!   one-to-one matching of ids (ids are arbitrary names), from the profiles alone and
//!   after the hash relabelled them;
//! - homes located: each found home is matched to the true home most of its lines
//!   belong to, and its stop compared with the true stop under the symmetry of the mesh
//!   that best matches the inferred core placement (a mirror image of the floorplan is
//!   as good as the floorplan);
//! - hash: random physical addresses (unobserved bits as in the first page) whose true
//!   home the recovered hash must give, through the same matching.

use crate::cluster::matched_accuracy;
use crate::error::HomeError;
use crate::locate::Floorplan;
use crate::map::{map, MapOptions, Mapped, Watch};
use crate::truth::{TruthMachine, TruthOptions, TruthProbe};
use numalab_layout::groundtruth::accuracy;
use numalab_layout::infer::{self, Problem};
use numalab_model::geometry::StopId;
use numalab_records::home::{AccuracyRecord, HashFit};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::time::Instant;

/// A model trial.
#[derive(Debug, Clone)]
pub struct TrialOptions {
    /// The machine.
    pub truth: TruthOptions,
    /// The map.
    pub map: MapOptions,
    /// Infer the floorplan (and locate homes) or not.
    pub floorplan: bool,
    /// Floorplan search settings (its seed is the truth's).
    pub search: infer::Options,
    /// Random addresses the hash is checked on.
    pub hash_checks: usize,
}

impl TrialOptions {
    /// Defaults for a preset.
    pub fn new(preset: &str) -> TrialOptions {
        TrialOptions {
            truth: TruthOptions::new(preset),
            map: MapOptions::default(),
            floorplan: true,
            search: infer::Options::default(),
            hash_checks: 100_000,
        }
    }
}

/// The majority true id of each found id.
fn majority(found: &[u8], truth: &[u8]) -> HashMap<u8, u8> {
    let mut count: HashMap<(u8, u8), usize> = HashMap::new();
    for (&f, &t) in found.iter().zip(truth) {
        *count.entry((f, t)).or_default() += 1;
    }
    let mut best: HashMap<u8, (usize, u8)> = HashMap::new();
    for ((f, t), c) in count {
        let e = best.entry(f).or_insert((0, t));
        if (c, std::cmp::Reverse(t)) > (e.0, std::cmp::Reverse(e.1)) {
            *e = (c, t);
        }
    }
    best.into_iter().map(|(f, (_, t))| (f, t)).collect()
}

/// Where random addresses for a hash check come from.
#[derive(Clone, Copy)]
struct Addresses {
    first_page: u64,
    phys_bits: u32,
    n: usize,
    seed: u64,
}

fn check_hash(
    fit: &HashFit,
    found: &[u8],
    truth: &[u8],
    true_id: &dyn Fn(u64) -> u8,
    a: &Addresses,
) -> (usize, usize) {
    let Addresses {
        first_page,
        phys_bits,
        n,
        seed,
    } = *a;
    let to_true = majority(found, truth);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let space = (1u64 << phys_bits) - 1;
    let mut right = 0;
    for _ in 0..n {
        let r = rng.random::<u64>() & space & !63;
        let pa = (r & fit.observed_bits) | (first_page & !fit.observed_bits & space);
        let got = fit.predict(pa).and_then(|id| to_true.get(&id).copied());
        if got == Some(true_id(pa)) {
            right += 1;
        }
    }
    (n, right)
}

/// What a trial produced.
#[derive(Debug, Clone)]
pub struct TrialOutcome {
    /// The map.
    pub mapped: Mapped,
    /// Its score.
    pub accuracy: AccuracyRecord,
    /// The machine (truth).
    pub machine: TruthMachine,
    /// The floorplan inferred, if asked.
    pub floorplan: Option<Floorplan>,
}

/// Generates the machine, infers its floorplan, maps it, and scores the map.
pub fn trial(opts: &TrialOptions, watch: &mut dyn Watch) -> Result<TrialOutcome, HomeError> {
    let t0 = Instant::now();
    let machine = TruthMachine::generate(&opts.truth)?;
    let mut notes = machine.notes.clone();
    let grid = machine.grid.clone();
    let n = machine.model.cores.len();
    let (floorplan, inferred_cores, fp_exact) = if opts.floorplan {
        let m = machine
            .layout
            .c2c
            .as_ref()
            .ok_or_else(|| HomeError::Runtime("the truth has no core-to-core matrix".into()))?;
        let groups = if grid.capacity > 1 {
            // Ctrl-C or SIGTERM during the structure inference stops the trial.
            let s = numalab_c2c::try_infer(m).map_err(|_| HomeError::Interrupted)?;
            infer::tile_groups(&s, m.cpus(), grid.capacity)
        } else {
            Vec::new()
        };
        let problem = Problem::new(&grid, &machine.layout.measured, &groups)?;
        let mut search = opts.search.clone();
        search.seed = opts.truth.seed;
        let inf = infer::infer(&problem, &search, &|_| {})?;
        if inf.interrupted {
            // Some restarts were skipped: the floorplan would be taken as whole.
            return Err(HomeError::Interrupted);
        }
        let acc = accuracy(
            &grid,
            &grid.symmetries(),
            (&inf.core_stop, &[]),
            (&machine.layout.core_stop, &[]),
        );
        let fp = Floorplan {
            name: format!(
                "inferred from the model's core-to-core matrix ({} noise)",
                opts.truth.noise_ns
            ),
            cpu_stop: machine
                .layout
                .measured
                .cpus
                .iter()
                .zip(&inf.core_stop)
                .map(|(&c, &s)| (c, s))
                .collect(),
            candidates: grid.target_stops(),
            grid: grid.clone(),
        };
        (Some(fp), inf.core_stop.clone(), Some(acc.exact_fraction))
    } else {
        (None, Vec::new(), None)
    };
    let mut probe = TruthProbe::new(machine);
    let mapped = map(&mut probe, floorplan.as_ref(), &opts.map, watch)?;
    let machine = &probe.machine;
    let true_home: Vec<u8> = mapped
        .lines
        .iter()
        .map(|&l| machine.home_place_of(l))
        .collect();
    let true_iface: Vec<u8> = mapped
        .lines
        .iter()
        .map(|&l| machine.interface_place_of(l))
        .collect();
    let rec = &mapped.record;
    let hashed = rec
        .home_hash
        .as_ref()
        .is_some_and(|h| h.status != "not-found");
    let line_accuracy_profiles = matched_accuracy(
        &mapped
            .home_profiles
            .iter()
            .map(|&x| x as usize)
            .collect::<Vec<_>>(),
        &true_home.iter().map(|&x| x as usize).collect::<Vec<_>>(),
    );
    let line_accuracy_final = matched_accuracy(
        &mapped.home.iter().map(|&x| x as usize).collect::<Vec<_>>(),
        &true_home.iter().map(|&x| x as usize).collect::<Vec<_>>(),
    );
    let interface_accuracy = (!rec.interfaces.is_empty()).then(|| {
        matched_accuracy(
            &mapped
                .interface
                .iter()
                .map(|&x| x as usize)
                .collect::<Vec<_>>(),
            &true_iface.iter().map(|&x| x as usize).collect::<Vec<_>>(),
        )
    });
    // Homes located, under the symmetry that best matches the cores.
    let homes_located_exact = floorplan.as_ref().and_then(|_| {
        if rec.homes.iter().any(|h| h.stop.is_none()) {
            return None;
        }
        let to_true = majority(&mapped.home, &true_home);
        let mut inferred_targets: Vec<StopId> = vec![StopId::MAX; machine.home_places.len()];
        for h in &rec.homes {
            if let (Some(&t), Some([x, y])) = (to_true.get(&h.id), h.stop) {
                inferred_targets[t as usize] = grid.stop(x, y);
            }
        }
        // The frame is the final floorplan's (the one homes were located on).
        let final_cores: Vec<StopId> = match &mapped.floorplan {
            Some(fp) => (0..n as u32)
                .map(|c| fp.cpu_stop.get(&c).copied().unwrap_or(StopId::MAX))
                .collect(),
            None => inferred_cores.clone(),
        };
        // Stops no home was matched to count as wrong: map them to a stop no symmetry
        // reaches.
        let used = machine.places_used();
        let missing = inferred_targets
            .iter()
            .zip(&used)
            .filter(|(&s, &u)| u && s == StopId::MAX)
            .count();
        let present: Vec<(StopId, StopId)> = inferred_targets
            .iter()
            .zip(&machine.home_places)
            .filter(|(s, _)| **s != StopId::MAX)
            .map(|(a, b)| (*a, *b))
            .collect();
        let (inf_t, true_t): (Vec<StopId>, Vec<StopId>) = present.into_iter().unzip();
        let acc = accuracy(
            &grid,
            &grid.symmetries(),
            (&final_cores, &inf_t),
            (&machine.layout.core_stop, &true_t),
        );
        acc.target_exact_fraction
            .map(|f| f * inf_t.len() as f64 / (inf_t.len() + missing).max(1) as f64)
    });
    let first_page = machine.page_phys[0];
    let (tried, correct, hash_exact) = match &rec.home_hash {
        Some(fit) if fit.status == "recovered" => {
            let (t, c) = check_hash(
                fit,
                &mapped.home,
                &true_home,
                &|pa| machine.home_place[machine.home_hash.id(pa) as usize],
                &Addresses {
                    first_page,
                    phys_bits: opts.truth.phys_bits,
                    n: opts.hash_checks,
                    seed: opts.truth.seed ^ 0x6861_7368,
                },
            );
            (t, c, t > 0 && c == t)
        }
        _ => (0, 0, false),
    };
    let interface_hash_exact = rec.interface_hash.as_ref().map(|fit| {
        fit.status == "recovered" && {
            let (t, c) = check_hash(
                fit,
                &mapped.interface,
                &true_iface,
                &|pa| machine.interface_place[machine.interface_hash.id(pa) as usize],
                &Addresses {
                    first_page,
                    phys_bits: opts.truth.phys_bits,
                    n: opts.hash_checks,
                    seed: opts.truth.seed ^ 0x6966,
                },
            );
            t > 0 && c == t
        }
    });
    let refined_exact = mapped
        .floorplan
        .as_ref()
        .filter(|_| opts.map.refine_cpus && rec.homes.iter().all(|h| h.stop.is_some()))
        .map(|fp| {
            let stops: Vec<StopId> = (0..n as u32)
                .map(|c| fp.cpu_stop.get(&c).copied().unwrap_or(StopId::MAX))
                .collect();
            accuracy(
                &grid,
                &grid.symmetries(),
                (&stops, &[]),
                (&machine.layout.core_stop, &[]),
            )
            .exact_fraction
        });
    if let Some(f) = fp_exact {
        notes.push(format!(
            "The floorplan inferred from the noisy core-to-core matrix places {:.1}% of the {n} cores exactly (modulo the mesh's symmetries).",
            100.0 * f
        ));
    }
    let record = AccuracyRecord {
        preset: opts.truth.preset.clone(),
        noise_ns: opts.truth.noise_ns,
        seed: opts.truth.seed,
        homes_true: machine.homes_used(),
        home_places_true: machine.places_used().iter().filter(|&&u| u).count(),
        homes_found: rec.homes.len(),
        interfaces_true: machine.interfaces.len(),
        interface_places_true: machine.interface_places.len(),
        interfaces_found: rec.interfaces.len(),
        line_accuracy_profiles,
        line_accuracy_hash: hashed.then_some(line_accuracy_final),
        interface_accuracy,
        homes_located_exact,
        hash_exact,
        hash_addresses_tried: tried,
        hash_addresses_correct: correct,
        interface_hash_exact,
        floorplan_exact_fraction: fp_exact,
        floorplan_refined_exact_fraction: refined_exact,
        seconds: t0.elapsed().as_secs_f64(),
        notes,
    };
    let machine = probe.machine;
    Ok(TrialOutcome {
        mapped,
        accuracy: record,
        machine,
        floorplan,
    })
}
