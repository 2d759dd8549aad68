//! What the synthetic-matrix tests share: a deterministic generator, matrices from a
//! function, and levels as sorted groups.

use numalab_c2c::matrix::LatencyMatrix;
use numalab_c2c::structure::Level;

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-12);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

pub fn matrix(n: usize, mut f: impl FnMut(usize, usize) -> f64) -> LatencyMatrix {
    let mut m = LatencyMatrix::new((0..n as u32).collect());
    for i in 0..n {
        for j in 0..i {
            m.set(i, j, f(i, j));
        }
    }
    m
}

pub fn groups(level: &Level) -> Vec<Vec<u32>> {
    let mut g: Vec<Vec<u32>> = level.groups.iter().map(|g| g.cpus.clone()).collect();
    g.sort();
    g
}

pub fn sorted(mut want: Vec<Vec<u32>>) -> Vec<Vec<u32>> {
    for g in &mut want {
        g.sort_unstable();
    }
    want.sort();
    want
}
