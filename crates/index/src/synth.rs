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
    /// Clusters.
    pub clusters: usize,
    /// Directions of variation inside a cluster.
    pub latent: usize,
    /// Standard deviation of the isotropic noise.
    pub noise: f32,
    /// Topics the clusters gather around (0: clusters independent of each other). With
    /// topics, a cluster's centre is its topic's centre plus a smaller offset of its own, so
    /// clusters of one topic are near each other, as subjects of one field are.
    pub topics: usize,
    /// The spread of a cluster along its latent directions (the default 0.8).
    pub spread: f32,
    /// How unequal the latent directions are: direction `l` varies with a scale of
    /// `(l + 1)^-anisotropy` (0: all alike).
    pub anisotropy: f32,
}

impl Shape {
    /// The default shape for a dimension: 100 clusters, 16 latent directions (at most the
    /// dimension), noise 0.05, no topics, spread 0.8, isotropic.
    pub fn new(dim: usize) -> Shape {
        Shape {
            dim,
            clusters: 100,
            latent: 16.min(dim),
            noise: 0.05,
            topics: 0,
            spread: 0.8,
            anisotropy: 0.0,
        }
    }
}

/// Where queries are drawn (see [`queries`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryKind {
    /// From the base's own distribution (another seed).
    Inside,
    /// Out of it: each query the mean of two points of two different clusters, with twice
    /// the noise, so it falls between the clusters where no base vector lies.
    Between,
}

/// The topic centres, cluster centres and latent bases of a shape: they depend only on it.
fn frame(shape: Shape) -> (Vec<Vec<f32>>, Vec<Vec<Vec<f32>>>) {
    let Shape { dim, clusters, latent, topics, spread, anisotropy, .. } = shape;
    let clusters = clusters.max(1);
    let mut frame = Rng::new(0x5EED ^ dim as u64);
    #[allow(clippy::cast_precision_loss)]
    let scale = spread / (latent.max(1) as f32).sqrt();
    let topic_centres: Vec<Vec<f32>> =
        (0..topics).map(|_| (0..dim).map(|_| frame.gauss()).collect()).collect();
    let centres: Vec<Vec<f32>> = (0..clusters)
        .map(|c| {
            let own: Vec<f32> = (0..dim).map(|_| frame.gauss()).collect();
            match topic_centres.get(c % topics.max(1)) {
                Some(t) if topics > 0 => t.iter().zip(&own).map(|(t, o)| t + 0.5 * o).collect(),
                _ => own,
            }
        })
        .collect();
    let bases: Vec<Vec<Vec<f32>>> = (0..clusters)
        .map(|_| {
            (0..latent)
                .map(|l| {
                    #[allow(clippy::cast_precision_loss)]
                    let s = scale * ((l + 1) as f32).powf(-anisotropy);
                    (0..dim).map(|_| frame.gauss() * s).collect()
                })
                .collect()
        })
        .collect();
    (centres, bases)
}

/// One point of cluster `c`.
fn point(
    shape: Shape,
    centres: &[Vec<f32>],
    bases: &[Vec<Vec<f32>>],
    c: usize,
    noise: f32,
    rng: &mut Rng,
) -> Vec<f32> {
    let z: Vec<f32> = (0..shape.latent).map(|_| rng.gauss()).collect();
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
}

/// `n` vectors of `shape`. The clusters depend only on the shape (every call with the same
/// shape shares them, so queries drawn with another seed fall in the same clusters); which
/// cluster each vector falls in and where depends on `seed`.
pub fn clustered(n: usize, shape: Shape, seed: u64) -> Vec<Vec<f32>> {
    queries(n, shape, seed, QueryKind::Inside)
}

/// `n` vectors of `shape` drawn as `kind` says (with [`QueryKind::Inside`], [`clustered`]).
pub fn queries(n: usize, shape: Shape, seed: u64, kind: QueryKind) -> Vec<Vec<f32>> {
    let (centres, bases) = frame(shape);
    let clusters = centres.len() as u64;
    let mut rng = Rng::new(seed);
    let pick = |rng: &mut Rng| usize::try_from(rng.next_u64() % clusters).unwrap_or(0);
    (0..n)
        .map(|_| match kind {
            QueryKind::Inside => {
                let c = pick(&mut rng);
                point(shape, &centres, &bases, c, shape.noise, &mut rng)
            }
            QueryKind::Between => {
                let a = pick(&mut rng);
                let mut b = pick(&mut rng);
                if b == a && clusters > 1 {
                    b = (a + 1) % centres.len();
                }
                let x = point(shape, &centres, &bases, a, 2.0 * shape.noise, &mut rng);
                let y = point(shape, &centres, &bases, b, 2.0 * shape.noise, &mut rng);
                x.iter().zip(&y).map(|(x, y)| 0.5 * (x + y)).collect()
            }
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
        let t = Shape { topics: 3, anisotropy: 1.0, ..s };
        let b = queries(5, t, 1, QueryKind::Between);
        assert_eq!(b, queries(5, t, 1, QueryKind::Between));
        assert_ne!(b, clustered(5, t, 1));
        assert!(b.iter().all(|v| v.len() == 12 && v.iter().all(|x| x.is_finite())));
    }
}
