//! Seeded clustered vectors and a store loaded with them.

use mnemon_index::{IndexOptions, VectorIndexes};
use mnemon_storage::body::Learning;
use mnemon_storage::*;

pub const SPACE: &str = "test-model";

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub fn gauss(&mut self) -> f32 {
        let (u, v) = (self.unit().max(1e-7), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
    }
}

/// `n` vectors around `clusters` random centres, each spread over a few latent directions
/// of its own (like real embeddings, whose intrinsic dimension is far below their width).
pub fn clustered(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<Vec<f32>> {
    const LATENT: usize = 6;
    let mut frame = Rng(0x5EED);
    let centres: Vec<Vec<f32>> = (0..clusters).map(|_| (0..dim).map(|_| frame.gauss()).collect()).collect();
    let bases: Vec<Vec<Vec<f32>>> = (0..clusters)
        .map(|_| (0..LATENT).map(|_| (0..dim).map(|_| frame.gauss() * 0.4).collect()).collect())
        .collect();
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    (0..n)
        .map(|_| {
            let c = (rng.next() as usize) % clusters;
            let z: Vec<f32> = (0..LATENT).map(|_| rng.gauss()).collect();
            (0..dim)
                .map(|d| {
                    centres[c][d]
                        + (0..LATENT).map(|l| bases[c][l][d] * z[l]).sum::<f32>()
                        + 0.05 * rng.gauss()
                })
                .collect()
        })
        .collect()
}

pub fn open(path: &std::path::Path) -> Store {
    Store::open(path, StoreOptions { create: true, ..Default::default() }).unwrap()
}

/// Insert one learning per vector (tags from `tags(i)`), returning the ids in order.
pub fn load(
    store: &Store,
    ns: &Namespace,
    vectors: &[Vec<f32>],
    tags: impl Fn(usize) -> Vec<String>,
) -> Vec<RecordId> {
    let mut ids = Vec::with_capacity(vectors.len());
    for (c, chunk) in vectors.chunks(1000).enumerate() {
        let mut jobs = Vec::new();
        for (j, v) in chunk.iter().enumerate() {
            let i = c * 1000 + j;
            let mut rec =
                NewRecord::new(ns.clone(), Learning { text: format!("item {i}"), ..Default::default() });
            rec.envelope.tags = tags(i).into_iter().map(Into::into).collect();
            ids.push(rec.id);
            let id = rec.id;
            jobs.push(vec![
                WriteOp::Insert(rec),
                WriteOp::PutVector { namespace: ns.clone(), id, space: SPACE.into(), vector: v.clone() },
            ]);
        }
        for r in store.write_many(jobs, Durability::Eventual) {
            r.unwrap();
        }
    }
    store.sync().unwrap();
    ids
}

pub fn options(dir: Option<std::path::PathBuf>) -> IndexOptions {
    IndexOptions {
        params: mnemon_index::HnswParams { m: 16, ef_construction: 100, ef_search: 64 },
        graph_min: 1_000,
        exact_max: 500,
        dir,
        ..IndexOptions::default()
    }
}

pub fn index(store: &Store, dir: Option<std::path::PathBuf>) -> VectorIndexes {
    VectorIndexes::new(store.clone(), options(dir))
}
