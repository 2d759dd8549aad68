//! Linear algebra over GF(2): a basis in reduced echelon form with tagged rows, and the
//! parity and syndrome of an address under bit masks.

/// What [`Gf2Basis::insert`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    /// The vector was independent of the basis and joined it.
    New,
    /// The vector was in the span; `residual` is its tag minus the tags of the rows it is
    /// a sum of (zero when the tags are consistent, as for equations `row·x = tag`).
    Dependent {
        /// Tag left after reduction.
        residual: u64,
    },
}

/// A basis of a subspace of GF(2)^64 kept in reduced echelon form: every row has a pivot
/// bit that no other row has. Each row carries a tag that follows it through the
/// elimination (the right-hand sides of equations `row·x = tag`, one bit per system).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gf2Basis {
    /// (pivot bit as a mask, row, tag).
    rows: Vec<(u64, u64, u64)>,
}

impl Gf2Basis {
    /// The empty basis.
    pub fn new() -> Self {
        Self::default()
    }

    /// Dimension of the span.
    pub fn dim(&self) -> usize {
        self.rows.len()
    }

    /// The rows and their tags.
    pub fn rows(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.rows.iter().map(|&(_, r, t)| (r, t))
    }

    /// The pivot bits, as a mask.
    pub fn pivots(&self) -> u64 {
        self.rows.iter().fold(0, |m, &(p, _, _)| m | p)
    }

    /// `v` (with its tag) minus every row whose pivot it has.
    pub fn reduce(&self, mut v: u64, mut tag: u64) -> (u64, u64) {
        for &(p, r, t) in &self.rows {
            if v & p != 0 {
                v ^= r;
                tag ^= t;
            }
        }
        (v, tag)
    }

    /// Whether `v` is in the span.
    pub fn contains(&self, v: u64) -> bool {
        self.reduce(v, 0).0 == 0
    }

    /// Adds `v` (with its tag) to the basis unless it is in the span.
    pub fn insert(&mut self, v: u64, tag: u64) -> Insert {
        let (v, tag) = self.reduce(v, tag);
        if v == 0 {
            return Insert::Dependent { residual: tag };
        }
        let pivot = 1u64 << (63 - v.leading_zeros());
        for row in &mut self.rows {
            if row.1 & pivot != 0 {
                row.1 ^= v;
                row.2 ^= tag;
            }
        }
        self.rows.push((pivot, v, tag));
        self.rows.sort_by_key(|&(p, _, _)| p);
        Insert::New
    }

    /// A basis of the vectors over bits `0..width` orthogonal to every row (rows are
    /// assumed within those bits): one vector per non-pivot bit, in increasing bit order.
    pub fn complement(&self, width: u32) -> Vec<u64> {
        let pivots = self.pivots();
        (0..width)
            .map(|f| 1u64 << f)
            .filter(|&f| pivots & f == 0)
            .map(|f| {
                self.rows
                    .iter()
                    .filter(|&&(_, r, _)| r & f != 0)
                    .fold(f, |w, &(p, _, _)| w | p)
            })
            .collect()
    }

    /// The solution of the equations `row·x = tag` (bit `t` of every tag is system `t`)
    /// with every non-pivot bit zero: `systems` vectors, the `t`-th solving system `t`.
    pub fn solve(&self, systems: usize) -> Vec<u64> {
        (0..systems)
            .map(|t| {
                self.rows
                    .iter()
                    .filter(|&&(_, _, tag)| (tag >> t) & 1 == 1)
                    .fold(0, |x, &(p, _, _)| x | p)
            })
            .collect()
    }
}

/// Parity of the set bits of `x`.
pub(super) fn parity(x: u64) -> u64 {
    u64::from(x.count_ones() & 1)
}

/// The syndrome of `x` under `masks` (bit `t` is the parity of `x & masks[t]`).
pub(super) fn syndrome_of(masks: &[u64], x: u64) -> usize {
    masks
        .iter()
        .enumerate()
        .map(|(t, &m)| (parity(x & m) as usize) << t)
        .sum()
}
