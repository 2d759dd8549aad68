use numalab_home::cluster::cluster;
use rand::{RngExt, SeedableRng};
fn main() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let sig = 0.39;
    let dims = 17;
    for &(d, ngroups) in &[(1.66f64, 2usize), (1.66, 38)] {
        let mut pts = vec![];
        for i in 0..ngroups * 1000 {
            let k = i % ngroups;
            // centers: group k shifted by d along alternating +-0.59 pattern in dim (k % dims)
            let p: Vec<f64> = (0..dims)
                .map(|j| {
                    let c = if k == 0 {
                        0.0
                    } else if j < 8 {
                        d / (8f64).sqrt() * (k as f64)
                    } else {
                        0.0
                    };
                    let u: f64 = 1.0 - rng.random::<f64>();
                    let v: f64 = rng.random::<f64>();
                    c + sig * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
                })
                .collect();
            pts.push(p);
        }
        let c = cluster(&pts, sig, 1);
        println!(
            "D {d} groups {ngroups}: found {} sizes {:?}",
            c.centroids.len(),
            &c.sizes[..c.sizes.len().min(10)]
        );
    }
}
