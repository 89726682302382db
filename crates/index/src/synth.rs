//! Seeded synthetic embeddings for tests and benchmarks.
//!
//! Real embeddings are not uniform in their space: they gather in topics and, inside a topic,
//! vary along far fewer directions than the vector has components. [`clustered`] imitates
//! that: `clusters` random centres, and around each a few latent directions of its own
//! (`latent`), plus a little isotropic noise. The same seed gives the same vectors on every
//! machine (a xorshift generator and Box-Muller, no platform-dependent library calls besides
//! `ln`, `sqrt` and `cos`).

/// A small deterministic generator (xorshift64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let x = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        x
    }

    /// Standard normal.
    pub fn gauss(&mut self) -> f32 {
        let (u, v) = (self.unit().max(1e-7), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
    }
}

/// The shape of a clustered data set.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Components per vector.
    pub dim: usize,
    /// Topics.
    pub clusters: usize,
    /// Directions of variation inside a topic.
    pub latent: usize,
    /// Standard deviation of the isotropic noise.
    pub noise: f32,
}

impl Shape {
    /// The default shape for a dimension: 100 topics, 16 latent directions (at most the
    /// dimension), noise 0.05.
    pub fn new(dim: usize) -> Shape {
        Shape { dim, clusters: 100, latent: 16.min(dim), noise: 0.05 }
    }
}

/// `n` vectors of `shape`. The topics depend only on the shape (every call with the same
/// shape shares them, so queries drawn with another seed fall in the same topics); which
/// topic each vector falls in and where depends on `seed`.
pub fn clustered(n: usize, shape: Shape, seed: u64) -> Vec<Vec<f32>> {
    let Shape { dim, clusters, latent, noise } = shape;
    let clusters = clusters.max(1);
    let mut frame = Rng::new(0x5EED ^ dim as u64);
    #[allow(clippy::cast_precision_loss)]
    let scale = 0.8 / (latent.max(1) as f32).sqrt();
    let centres: Vec<Vec<f32>> = (0..clusters).map(|_| (0..dim).map(|_| frame.gauss()).collect()).collect();
    let bases: Vec<Vec<Vec<f32>>> = (0..clusters)
        .map(|_| (0..latent).map(|_| (0..dim).map(|_| frame.gauss() * scale).collect()).collect())
        .collect();
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let c = usize::try_from(rng.next_u64() % clusters as u64).unwrap_or(0);
            let z: Vec<f32> = (0..latent).map(|_| rng.gauss()).collect();
            let mut v = centres[c].clone();
            for (l, zl) in z.iter().enumerate() {
                for (x, b) in v.iter_mut().zip(&bases[c][l]) {
                    *x += b * zl;
                }
            }
            for x in &mut v {
                *x += noise * rng.gauss();
            }
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_shaped() {
        let s = Shape::new(12);
        let a = clustered(5, s, 1);
        assert_eq!(a, clustered(5, s, 1));
        assert_ne!(a, clustered(5, s, 2));
        assert!(a.iter().all(|v| v.len() == 12 && v.iter().all(|x| x.is_finite())));
    }
}
