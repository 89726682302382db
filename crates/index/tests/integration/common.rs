//! Seeded clustered vectors and a store loaded with them.

use mnemon_index::{IndexOptions, VectorIndexes};
use mnemon_storage::body::Learning;
use mnemon_storage::*;

pub const SPACE: &str = "test-model";

/// `n` clustered vectors (see `mnemon_index::synth`) with `clusters` topics and 6 latent
/// directions each.
pub fn clustered(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<Vec<f32>> {
    let shape = mnemon_index::synth::Shape { clusters, latent: 6, ..mnemon_index::synth::Shape::new(dim) };
    mnemon_index::synth::clustered(n, shape, seed)
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
                WriteOp::PutVector {
                    namespace: ns.clone(),
                    id,
                    rev: None,
                    space: SPACE.into(),
                    vector: v.clone(),
                },
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
