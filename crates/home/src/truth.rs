//! Ground truth: a model-generated mesh machine with a known floorplan, a known
//! address-to-home hash and known latency noise, answering reads through the same
//! [`HomeProbe`] interface the live measurement uses (the replay backend).
//!
//! What the inference sees is only what a probe returns: noisy latencies of lines, the
//! buffer's page addresses (when "pagemap" is readable), and the noisy core-to-core
//! matrix the floorplan is inferred from. The truth (core numbering, home stops, the
//! hashes) stays here, for scoring.
//!
//! # The machine
//! - Cores and floorplan: `numalab_layout::groundtruth::generate` numbers the preset's
//!   cores at random over its tiles (tile pairs kept) and gives the noisy core-to-core
//!   matrix.
//! - Homes: the slices (CHA, HN-F) of the memory node's group (`slc.home_group`: the
//!   node's slices for `node`, the socket's otherwise), numbered at random. In quadrant
//!   mode (`mc-region`, KNL's default) a line's home is in its controller's region: the
//!   home hash is the interface hash's syndrome plus more bits, through one table.
//! - Interfaces: the node's memory controllers.
//! - Hashes: home and interface are each `table[L pa]` with `L` random XOR masks over
//!   physical address bits 6..`phys_bits` (`b` rows) and a table from the `2^b`
//!   syndromes to ids: a random one-to-one table when the count is a power of two (a
//!   linear hash, like Intel's slice hash and CMN's HN-F hash for power-of-two counts),
//!   otherwise `2^(ceil(log2 n) + 2)` buckets dealt evenly over the ids. The masks' part
//!   within a page has full rank (drawn again otherwise), as in real hashes, which use
//!   the low address bits: a page is then a shift of any other.
//! - Latency of a read from core c of a line homed at h, served by controller m:
//!   flushed: `memory_read_cycles(c, h, m)` (REQ c->h, lookup, REQ h->m, channel and
//!   DRAM, DAT m->c); forwarded by owner o: REQ c->h, lookup, SNP h->o, DAT o->c. In ns
//!   at the NoC clock, plus Gaussian noise of `noise_ns` on every read.

use crate::error::HomeError;
use crate::probe::{Access, BufferInfo, Fingerprint, HomeProbe, Line};
use numalab_layout::grid::{Grid, HopCosts};
use numalab_layout::groundtruth;
use numalab_layout::Kind;
use numalab_model::geometry::StopId;
use numalab_model::latency::memory_read_cycles;
use numalab_model::model::{DAT, REQ, SNP};
use numalab_model::spec::HomeGroup;
use numalab_model::Model;
use numalab_schema::identity::{CpuId, MachineIdentity};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What machine to generate.
#[derive(Debug, Clone)]
pub struct TruthOptions {
    /// Model preset (`knl-7210`, `neoverse-v1-64`, ...).
    pub preset: String,
    /// `--set key=value` overrides of the preset.
    pub sets: Vec<String>,
    /// Standard deviation of the noise on every read and matrix cell, ns.
    pub noise_ns: f64,
    /// Seed of everything random.
    pub seed: u64,
    /// Buffer pages.
    pub pages: usize,
    /// Page bytes (2 MiB huge pages by default).
    pub page_bytes: u64,
    /// Memory node the buffer is on.
    pub node: u32,
    /// Whether the probe gives physical addresses (pagemap readable).
    pub phys_known: bool,
    /// Physical address bits of the machine.
    pub phys_bits: u32,
}

/// Standard deviation of the model's noise, ns, unless `--noise-ns` says otherwise.
pub const DEFAULT_NOISE_NS: f64 = 4.0;

/// Buffer pages of a model machine unless `--pages` says otherwise (docs/home.md's
/// figures are of 64 pages of 2 MiB).
pub const DEFAULT_PAGES: usize = 64;

impl TruthOptions {
    /// Defaults for a preset: 4 ns noise, [`DEFAULT_PAGES`] pages of 2 MiB, node 0, physical
    /// addresses known, 36 physical address bits (64 GiB).
    pub fn new(preset: &str) -> TruthOptions {
        TruthOptions {
            preset: preset.to_string(),
            sets: Vec::new(),
            noise_ns: DEFAULT_NOISE_NS,
            seed: 1,
            pages: DEFAULT_PAGES,
            page_bytes: 2 << 20,
            node: 0,
            phys_known: true,
            phys_bits: 36,
        }
    }
}

/// A true hash: `id = table[syndrome(pa)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TrueHash {
    /// XOR masks over byte addresses.
    pub masks: Vec<u64>,
    /// Syndrome -> id.
    pub table: Vec<u8>,
}

fn gf2_rank(rows: &[u64]) -> usize {
    let mut basis: Vec<u64> = Vec::new();
    for &r in rows {
        let mut x = r;
        for &b in &basis {
            x = x.min(x ^ b);
        }
        if x != 0 {
            basis.push(x);
            basis.sort_unstable_by(|a, b| b.cmp(a));
        }
    }
    basis.len()
}

/// `b` random masks over physical bits 6..`phys_bits` whose part within a page, with
/// `prefix`'s, has full rank.
fn draw_masks(
    b: usize,
    page_bytes: u64,
    phys_bits: u32,
    prefix: &[u64],
    rng: &mut ChaCha8Rng,
) -> Vec<u64> {
    let page_mask = (page_bytes - 1) & !63;
    let all = ((1u64 << phys_bits) - 1) & !63;
    loop {
        let m: Vec<u64> = (0..b).map(|_| rng.random::<u64>() & all).collect();
        let low: Vec<u64> = prefix.iter().chain(&m).map(|x| x & page_mask).collect();
        if gf2_rank(&low) == low.len() {
            return m;
        }
    }
}

impl TrueHash {
    /// Draws a hash onto `ids` ids (see the module doc).
    pub fn draw(ids: usize, page_bytes: u64, phys_bits: u32, rng: &mut ChaCha8Rng) -> TrueHash {
        let ids = ids.max(1);
        let pow2 = ids.is_power_of_two();
        let need = (usize::BITS - (ids - 1).leading_zeros()) as usize;
        let b = if pow2 { need } else { need + 2 };
        let page_mask = (page_bytes - 1) & !63;
        let all = ((1u64 << phys_bits) - 1) & !63;
        let masks = loop {
            let m: Vec<u64> = (0..b).map(|_| rng.random::<u64>() & all).collect();
            let low: Vec<u64> = m.iter().map(|x| x & page_mask).collect();
            if gf2_rank(&low) == b {
                break m;
            }
        };
        let mut table: Vec<u8> = (0..1usize << b).map(|s| (s % ids) as u8).collect();
        table.shuffle(rng);
        TrueHash { masks, table }
    }

    /// The id of a byte address.
    pub fn id(&self, pa: u64) -> u8 {
        let s: usize = self
            .masks
            .iter()
            .enumerate()
            .map(|(t, m)| (((pa & m).count_ones() & 1) as usize) << t)
            .sum();
        self.table[s]
    }
}

/// A generated machine.
#[derive(Debug, Clone)]
pub struct TruthMachine {
    /// The model.
    pub model: Model,
    /// The preset's grid (every tile; the floorplan inference's search space).
    pub grid: Grid,
    /// Cores' true stops, the noisy core-to-core matrix.
    pub layout: groundtruth::Truth,
    /// Home id -> stop.
    pub home_stops: Vec<StopId>,
    /// Interface id -> model controller index.
    pub interfaces: Vec<usize>,
    /// The home hash.
    pub home_hash: TrueHash,
    /// The interface hash.
    pub interface_hash: TrueHash,
    /// Distinct stops of the homes: homes at one stop (two SLC slices of one CMN home
    /// node) read alike from every core, so what latency can find is a place.
    pub home_places: Vec<StopId>,
    /// Place index of each home.
    pub home_place: Vec<u8>,
    /// Distinct stops of the interfaces.
    pub interface_places: Vec<StopId>,
    /// Place index of each interface.
    pub interface_place: Vec<u8>,
    /// True physical address of each page.
    pub page_phys: Vec<u64>,
    /// The buffer as the probe shows it.
    pub buffer: BufferInfo,
    /// The options.
    pub opts: TruthOptions,
    /// Facts about the generation, in sentences.
    pub notes: Vec<String>,
}

impl TruthMachine {
    /// Generates a machine.
    pub fn generate(opts: &TruthOptions) -> Result<TruthMachine, HomeError> {
        if !(opts.noise_ns.is_finite() && opts.noise_ns >= 0.0) {
            return Err(HomeError::Usage(format!(
                "--noise {}: give a standard deviation of 0 ns or more",
                opts.noise_ns
            )));
        }
        if opts.pages == 0 || !opts.page_bytes.is_power_of_two() || opts.page_bytes < 4096 {
            return Err(HomeError::Usage(format!(
                "a buffer of {} pages of {} bytes: give at least one page of a power-of-two size of 4 KiB or more",
                opts.pages, opts.page_bytes
            )));
        }
        let model = Model::load(&opts.preset, &opts.sets)?;
        let grid = groundtruth::preset_grid(&model, HopCosts::Fit)?;
        let layout =
            groundtruth::generate(&model, &grid, Kind::CoreToCore, opts.noise_ns, opts.seed)?;
        let Some(node) = model.nodes.get(opts.node as usize) else {
            return Err(HomeError::Usage(format!(
                "--node {}: the preset has nodes 0..{}",
                opts.node,
                model.nodes.len()
            )));
        };
        let mut notes = Vec::new();
        let mut homes: Vec<usize> = match model.spec.slc.home_group {
            HomeGroup::Node if !node.slices.is_empty() => node.slices.clone(),
            _ => (0..model.slices.len())
                .filter(|&i| model.slices[i].socket == node.socket)
                .collect(),
        };
        let interfaces = node.mcs.clone();
        if homes.is_empty() || interfaces.is_empty() || homes.len() > 254 || interfaces.len() > 254
        {
            return Err(HomeError::Usage(format!(
                "preset {}: node {} has {} homes and {} memory controllers; a map needs 1 to 254 of each",
                opts.preset,
                opts.node,
                homes.len(),
                interfaces.len()
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0x486f_6d65);
        homes.shuffle(&mut rng);
        let home_stops: Vec<StopId> = homes.iter().map(|&i| model.slices[i].stop).collect();
        let (home_places, home_place) = places(&home_stops);
        let iface_stops: Vec<StopId> = interfaces.iter().map(|&i| model.mcs[i].stop).collect();
        let (interface_places, interface_place) = places(&iface_stops);
        if home_places.len() < home_stops.len() {
            notes.push(format!(
                "{} homes sit at {} stops: homes sharing a stop read alike from every core, so they are scored as one place.",
                home_stops.len(),
                home_places.len()
            ));
        }
        if interface_places.len() < iface_stops.len() {
            notes.push(format!(
                "{} memory interfaces sit at {} stops: scored as places likewise.",
                iface_stops.len(),
                interface_places.len()
            ));
        }
        let quadrants = match (model.spec.slc.home_group, model.spec.slc.region_split) {
            (HomeGroup::McRegion, Some(split)) => Some(split),
            _ => None,
        };
        let (home_hash, interface_hash) = match quadrants {
            None => {
                let h = TrueHash::draw(homes.len(), opts.page_bytes, opts.phys_bits, &mut rng);
                let i = TrueHash::draw(interfaces.len(), opts.page_bytes, opts.phys_bits, &mut rng);
                (h, i)
            }
            Some([rx, ry]) => {
                // A line's home is in its controller's quadrant: the home hash is the
                // interface hash's syndrome (which quadrant) and more bits (which home
                // of the quadrant), through one table.
                let iface =
                    TrueHash::draw(interfaces.len(), opts.page_bytes, opts.phys_bits, &mut rng);
                let g = &model.geo;
                let region = |s: StopId| {
                    let (_, x, y) = g.coords(s);
                    ((y * ry / g.rows) * rx + x * rx / g.cols) as usize
                };
                let mut by_region: Vec<Vec<u8>> = vec![Vec::new(); (rx * ry) as usize];
                for (id, &s) in home_stops.iter().enumerate() {
                    by_region[region(s)].push(id as u8);
                }
                // A controller serves the regions it touches: its own stop's and its
                // neighbours' (a controller on a boundary row, KNL's DDR, serves the two
                // quadrants on its side).
                let regions_of = |s: StopId| -> Vec<usize> {
                    let (_, x, y) = g.coords(s);
                    let mut r: Vec<usize> = [(0i64, 0i64), (1, 0), (-1, 0), (0, 1), (0, -1)]
                        .iter()
                        .filter_map(|&(dx, dy)| {
                            let (nx, ny) = (i64::from(x) + dx, i64::from(y) + dy);
                            (nx >= 0 && ny >= 0 && nx < i64::from(g.cols) && ny < i64::from(g.rows))
                                .then(|| region(g.stop(0, nx as u32, ny as u32)))
                        })
                        .collect();
                    r.sort_unstable();
                    r.dedup();
                    r
                };
                let serves: Vec<Vec<u8>> = interfaces
                    .iter()
                    .map(|&m| {
                        regions_of(model.mcs[m].stop)
                            .into_iter()
                            .flat_map(|r| by_region[r].clone())
                            .collect()
                    })
                    .collect();
                let most = serves.iter().map(Vec::len).max().unwrap_or(1).max(1);
                let need = (usize::BITS - (most - 1).leading_zeros()) as usize;
                let b_h = if most.is_power_of_two() {
                    need
                } else {
                    need + 2
                };
                let extra =
                    draw_masks(b_h, opts.page_bytes, opts.phys_bits, &iface.masks, &mut rng);
                let b_m = iface.masks.len();
                let deal: Vec<Vec<u8>> = serves
                    .iter()
                    .map(|homes| {
                        let mut t: Vec<u8> = (0..1usize << b_h)
                            .map(|k| homes.get(k % homes.len().max(1)).copied().unwrap_or(0))
                            .collect();
                        t.shuffle(&mut rng);
                        t
                    })
                    .collect();
                let table = (0..1usize << (b_m + b_h))
                    .map(|s| {
                        let mc = iface.table[s & ((1 << b_m) - 1)] as usize;
                        if serves[mc].is_empty() {
                            // No home in the controller's regions: any home.
                            (s >> b_m) as u8 % homes.len() as u8
                        } else {
                            deal[mc][s >> b_m]
                        }
                    })
                    .collect();
                let masks = iface.masks.iter().chain(&extra).copied().collect();
                let used: std::collections::BTreeSet<u8> =
                    serves.iter().flatten().copied().collect();
                notes.push(format!(
                    "Quadrant mode: a line's home is in the quadrant(s) its memory controller touches ({rx} x {ry} regions); the home hash takes the interface hash's bits and {b_h} more; {} of the {} homes serve this node's lines.",
                    used.len(),
                    homes.len()
                ));
                (TrueHash { masks, table }, iface)
            }
        };
        let frames = 1u64 << (opts.phys_bits - opts.page_bytes.trailing_zeros());
        if opts.pages as u64 > frames / 2 {
            return Err(HomeError::Usage(format!(
                "{} pages do not fit half of a {}-bit physical address space",
                opts.pages, opts.phys_bits
            )));
        }
        let mut used = std::collections::BTreeSet::new();
        let mut page_phys = Vec::with_capacity(opts.pages);
        while page_phys.len() < opts.pages {
            let f = rng.random_range(1..frames);
            if used.insert(f) {
                page_phys.push(f * opts.page_bytes);
            }
        }
        let buffer = BufferInfo {
            bytes: opts.pages as u64 * opts.page_bytes,
            page_bytes: opts.page_bytes,
            huge_pages: opts.page_bytes >= 2 << 20,
            line_bytes: model.line_bytes(),
            page_phys: opts.phys_known.then(|| page_phys.clone()),
            phys_note: (!opts.phys_known).then(|| {
                "the model was told to hide physical addresses (as without root)".to_string()
            }),
        };
        Ok(TruthMachine {
            model,
            grid,
            layout,
            home_stops,
            interfaces,
            home_places,
            home_place,
            interface_places,
            interface_place,
            home_hash,
            interface_hash,
            page_phys,
            buffer,
            opts: opts.clone(),
            notes,
        })
    }

    /// Physical byte address of a line.
    pub fn pa(&self, line: Line) -> u64 {
        self.page_phys[line.page] + u64::from(line.offset) * u64::from(self.buffer.line_bytes)
    }

    /// Homes the home hash gives any address (in quadrant mode on a node whose
    /// controllers sit in some regions only, the others get none of its lines).
    pub fn homes_used(&self) -> usize {
        let mut used = vec![false; self.home_stops.len()];
        for &id in &self.home_hash.table {
            used[id as usize] = true;
        }
        used.iter().filter(|&&u| u).count()
    }

    /// Whether each home place serves any address.
    pub fn places_used(&self) -> Vec<bool> {
        let mut used = vec![false; self.home_places.len()];
        for &id in &self.home_hash.table {
            used[self.home_place[id as usize] as usize] = true;
        }
        used
    }

    /// True home id of a line.
    pub fn home_of(&self, line: Line) -> u8 {
        self.home_hash.id(self.pa(line))
    }

    /// True place (see `home_places`) of a line's home.
    pub fn home_place_of(&self, line: Line) -> u8 {
        self.home_place[self.home_of(line) as usize]
    }

    /// True place of a line's interface.
    pub fn interface_place_of(&self, line: Line) -> u8 {
        self.interface_place[self.interface_of(line) as usize]
    }

    /// True interface id of a line.
    pub fn interface_of(&self, line: Line) -> u8 {
        self.interface_hash.id(self.pa(line))
    }

    /// Noise-free latency, ns, of a read by `reader` of a line homed at `home` served by
    /// interface `iface`.
    pub fn latency_ns(
        &self,
        access: Access,
        reader: u32,
        owner: Option<u32>,
        home: u8,
        iface: u8,
    ) -> f64 {
        let m = &self.model;
        let g = &m.geo;
        let c = self.layout.core_stop[reader as usize];
        let h = self.home_stops[home as usize];
        let cycles = match access {
            Access::Flushed => memory_read_cycles(m, c, h, self.interfaces[iface as usize]),
            Access::Forwarded => {
                let o = self.layout.core_stop[owner.unwrap_or(reader) as usize];
                f64::from(g.packet_cycles(c, h, m.flits[REQ]))
                    + f64::from(m.spec.slc.lookup_cycles)
                    + f64::from(g.packet_cycles(h, o, m.flits[SNP]))
                    + f64::from(g.packet_cycles(o, c, m.flits[DAT]))
            }
        };
        m.ns(cycles)
    }

    /// The fingerprint a map made on this machine carries.
    pub fn fingerprint(&self) -> Fingerprint {
        let m = &self.model;
        // A model's CPU is its label, its CPU id the seed its hashes were drawn with.
        let identity = MachineIdentity {
            cpu: CpuId {
                vendor: None,
                model_name: Some(m.label.clone()),
                cpu_id: Some(format!("seed {}", self.opts.seed)),
            },
            cores: Some(m.cores.len() as u64),
            pus: Some(m.cores.len() as u64),
            numa_nodes: Some(m.nodes.len() as u64),
        };
        Fingerprint::new(
            format!("model:{}", self.opts.preset),
            &identity,
            m.nodes.iter().map(|n| n.memory_bytes).collect(),
            "model",
            vec![
                format!("{} NUMA nodes", m.nodes.len()),
                format!("sets {}", self.opts.sets.join(",")),
            ],
        )
    }
}

/// The distinct stops of `stops` (first-seen order) and each entry's index among them.
pub fn places(stops: &[StopId]) -> (Vec<StopId>, Vec<u8>) {
    let mut distinct: Vec<StopId> = Vec::new();
    let idx = stops
        .iter()
        .map(|s| match distinct.iter().position(|d| d == s) {
            Some(i) => i as u8,
            None => {
                distinct.push(*s);
                (distinct.len() - 1) as u8
            }
        })
        .collect();
    (distinct, idx)
}

/// The replay backend: a [`TruthMachine`] answering reads with noise.
#[derive(Debug, Clone)]
pub struct TruthProbe {
    /// The machine.
    pub machine: TruthMachine,
    rng: ChaCha8Rng,
    sigmas: Vec<f64>,
}

impl TruthProbe {
    /// A probe of `machine`.
    pub fn new(machine: TruthMachine) -> TruthProbe {
        let rng = ChaCha8Rng::seed_from_u64(machine.opts.seed ^ 0x7265_6164);
        TruthProbe {
            machine,
            rng,
            sigmas: Vec::new(),
        }
    }

    fn gauss(&mut self) -> f64 {
        let u: f64 = 1.0 - self.rng.random::<f64>();
        let v: f64 = self.rng.random::<f64>();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

impl HomeProbe for TruthProbe {
    fn buffer(&self) -> &BufferInfo {
        &self.machine.buffer
    }

    fn cpus(&self) -> Vec<u32> {
        (0..self.machine.model.cores.len() as u32).collect()
    }

    fn fingerprint(&self) -> Fingerprint {
        self.machine.fingerprint()
    }

    fn origin(&self) -> &'static str {
        "model"
    }

    fn read_ns(
        &mut self,
        access: Access,
        reader: u32,
        owner: Option<u32>,
        lines: &[Line],
        repeats: u32,
    ) -> Result<Vec<f64>, HomeError> {
        let n = self.machine.model.cores.len() as u32;
        if reader >= n || owner.is_some_and(|o| o >= n) {
            return Err(HomeError::Usage(format!(
                "CPU {} is not one of the model's CPUs 0-{}",
                if reader >= n {
                    reader
                } else {
                    owner.unwrap_or(0)
                },
                n - 1
            )));
        }
        if access == Access::Forwarded && (owner.is_none() || owner == Some(reader)) {
            return Err(HomeError::Usage(
                "a forwarded read needs an owner CPU other than the reader".into(),
            ));
        }
        let pages = self.machine.page_phys.len();
        let lpp = self.machine.buffer.lines_per_page() as u32;
        let sigma = self.machine.opts.noise_ns;
        let mut out = Vec::with_capacity(lines.len());
        let mut reads = vec![0.0; repeats.max(1) as usize];
        for &l in lines {
            if l.page >= pages || l.offset >= lpp {
                return Err(HomeError::Usage(format!(
                    "line {} of page {} is outside the buffer ({pages} pages of {lpp} lines)",
                    l.offset, l.page
                )));
            }
            let base = self.machine.latency_ns(
                access,
                reader,
                owner,
                self.machine.home_of(l),
                self.machine.interface_of(l),
            );
            for r in reads.iter_mut() {
                *r = base + sigma * self.gauss();
            }
            let (m, s) = crate::probe::center_and_sigma(&mut reads);
            if self.sigmas.len() < 4096 {
                self.sigmas.push(s);
            }
            out.push(m);
        }
        Ok(out)
    }

    fn noise_ns(&self) -> Option<f64> {
        let mut s = self.sigmas.clone();
        (!s.is_empty()).then(|| crate::probe::median_and_sigma(&mut s).0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(preset: &str) -> TruthOptions {
        TruthOptions {
            pages: 4,
            page_bytes: 64 << 10,
            ..TruthOptions::new(preset)
        }
    }

    #[test]
    fn hashes_spread_lines_over_every_id() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for ids in [1usize, 2, 38, 64] {
            let h = TrueHash::draw(ids, 2 << 20, 36, &mut rng);
            let mut count = vec![0usize; ids];
            for l in 0..(1u64 << 15) {
                count[h.id(l << 6) as usize] += 1;
            }
            let (lo, hi) = (count.iter().min().unwrap(), count.iter().max().unwrap());
            assert!(*lo > 0, "{ids}: an id never used");
            if ids.is_power_of_two() {
                assert_eq!(lo, hi, "{ids}: a linear hash within a page is exactly even");
            } else {
                assert!(*hi as f64 / *lo as f64 <= 1.5, "{ids}: {lo}..{hi}");
            }
        }
    }

    #[test]
    fn the_knl_truth_has_its_homes_and_controllers() {
        let m = TruthMachine::generate(&small("knl-7210")).unwrap();
        assert_eq!(m.home_stops.len(), 38);
        assert_eq!(m.interfaces.len(), 2);
        assert!(m.notes.iter().any(|n| n.contains("Quadrant mode")));
        // Every line's home is on its controller's side (KNL's DDR controllers sit on
        // the west and east edges, each touching the two quadrants of its side).
        let g = &m.model.geo;
        for o in 0..1024 {
            let l = Line { page: 1, offset: o };
            let (_, hx, _) = g.coords(m.home_stops[m.home_of(l) as usize]);
            let (_, cx, _) = g.coords(m.model.mcs[m.interfaces[m.interface_of(l) as usize]].stop);
            assert_eq!(hx * 2 / g.cols, cx * 2 / g.cols, "line {o}");
        }
        assert_eq!(m.homes_used(), 38);
        let mut p = TruthProbe::new(m);
        let lines: Vec<Line> = (0..8).map(|o| Line { page: 1, offset: o }).collect();
        let a = p.read_ns(Access::Flushed, 0, None, &lines, 9).unwrap();
        assert!(a.iter().all(|x| x.is_finite() && *x > 40.0), "{a:?}");
        let f = p.read_ns(Access::Forwarded, 0, Some(5), &lines, 9).unwrap();
        assert!(
            f.iter().zip(&a).all(|(f, a)| f < a),
            "forwarded reads skip DRAM"
        );
        let s = p.noise_ns().unwrap();
        assert!((2.0..6.5).contains(&s), "noise estimate {s} for 4 ns");
    }

    #[test]
    fn latency_grows_with_the_distance_to_the_home() {
        let m = TruthMachine::generate(&TruthOptions {
            noise_ns: 0.0,
            ..small("knl-7210")
        })
        .unwrap();
        let g = &m.model.geo;
        let reader = 0u32;
        let c = m.layout.core_stop[0];
        let mut by_hops: Vec<(u32, f64)> = (0..m.home_stops.len() as u8)
            .map(|h| {
                (
                    g.hops(c, m.home_stops[h as usize]),
                    m.latency_ns(Access::Forwarded, reader, Some(1), h, 0),
                )
            })
            .collect();
        by_hops.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let near = by_hops.first().unwrap();
        let far = by_hops.last().unwrap();
        assert!(far.1 > near.1, "{by_hops:?}");
    }

    #[test]
    fn bad_requests_are_refused() {
        assert!(matches!(
            TruthMachine::generate(&TruthOptions {
                noise_ns: -1.0,
                ..small("mesh")
            }),
            Err(HomeError::Usage(_))
        ));
        assert!(matches!(
            TruthMachine::generate(&TruthOptions {
                node: 9,
                ..small("mesh")
            }),
            Err(HomeError::Usage(_))
        ));
        let mut p = TruthProbe::new(TruthMachine::generate(&small("mesh")).unwrap());
        let l = [Line {
            page: 99,
            offset: 0,
        }];
        assert!(p.read_ns(Access::Flushed, 0, None, &l, 1).is_err());
        let l = [Line { page: 0, offset: 0 }];
        assert!(p.read_ns(Access::Forwarded, 0, Some(0), &l, 1).is_err());
        assert!(p.read_ns(Access::Flushed, 9999, None, &l, 1).is_err());
    }
}
