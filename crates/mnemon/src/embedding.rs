//! Embedding records as they are written: the configured embedder, the cache of vectors by
//! text, concurrent writers' texts embedded together ([`batcher`]) or after their records are
//! committed ([`deferred`]), and the record of which embedder a database uses.

mod batcher;
mod deferred;

pub use deferred::{Backlog, DEFAULT_BACKLOG};
pub(crate) use deferred::{Deferred, SETTLE_WAIT, mark, marked};

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mnemon_embed::Embedder;
use mnemon_storage::{Namespace, RecordId, Snapshot, WriteOp};
use serde::{Deserialize, Serialize};

/// The aux key recording the database's embedder.
pub(crate) const MODEL_KEY: &str = "embed/model";
const CACHE_VERSION: u8 = 1;

/// Which embedder a database was set up with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderRecord {
    /// The model id (also the vector space).
    pub model: String,
    /// Its dimension.
    pub dimension: usize,
}

/// Counters of the embedding cache and of failures, since the database was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EmbedStats {
    /// Texts found in the cache.
    pub hits: u64,
    /// Texts embedded.
    pub misses: u64,
    /// Texts whose embedding failed (their records were stored without a vector).
    pub failures: u64,
    /// Calls to the embedder for written texts: concurrent writers' texts share calls, so
    /// `misses / calls` is the texts a call embedded on average.
    #[serde(default)]
    pub calls: u64,
}

pub(crate) struct Embedding {
    pub(crate) embedder: Arc<dyn Embedder>,
    /// Where writers' calls go, when batched ([`DbBuilder::batch_embeddings`](crate::DbBuilder::batch_embeddings)).
    batcher: Option<batcher::Batcher>,
    /// Calls made by writers themselves (not batched).
    calls: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    failures: AtomicU64,
}

impl std::fmt::Debug for Embedding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedding").field("model", &self.embedder.model_id()).finish()
    }
}

fn encode(v: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + 4 * v.len());
    out.push(CACHE_VERSION);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

fn decode(b: &[u8], dim: usize) -> Option<Vec<f32>> {
    let (&version, rest) = b.split_first()?;
    if version != CACHE_VERSION || rest.len() != dim * 4 {
        return None;
    }
    Some(rest.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

impl Embedding {
    pub(crate) fn new(embedder: Arc<dyn Embedder>, batch: bool) -> Self {
        Embedding {
            batcher: (batch && embedder.worth_caching()).then(batcher::Batcher::default),
            calls: AtomicU64::new(0),
            embedder,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }

    pub(crate) fn record(&self) -> EmbedderRecord {
        EmbedderRecord { model: self.embedder.model_id().to_string(), dimension: self.embedder.dimension() }
    }

    pub(crate) fn space(&self) -> &str {
        self.embedder.model_id()
    }

    pub(crate) fn stats(&self) -> EmbedStats {
        EmbedStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            calls: self.calls.load(Ordering::Relaxed) + self.batcher.as_ref().map_or(0, |b| b.counts().0),
        }
    }

    /// The cache key of a text: blake3 of the model id and the text.
    fn key(&self, text: &str) -> String {
        let mut h = blake3::Hasher::new();
        h.update(self.embedder.model_id().as_bytes());
        h.update(&[0]);
        h.update(text.as_bytes());
        format!("embed/c/{}", h.finalize().to_hex())
    }

    /// Vectors for texts: from the cache, or embedded in one batch. Returns per text the
    /// vector (`None` when empty or when embedding failed) and the cache rows to write.
    pub(crate) fn vectors(&self, snap: &Snapshot, texts: &[&str]) -> (Vec<Option<Vec<f32>>>, Vec<WriteOp>) {
        let dim = self.embedder.dimension();
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        let mut todo: Vec<usize> = Vec::new();
        let cached = self.embedder.worth_caching();
        for (i, t) in texts.iter().enumerate() {
            if t.trim().is_empty() {
                continue;
            }
            if !cached {
                todo.push(i);
                continue;
            }
            match snap.aux(&self.key(t)).ok().flatten().and_then(|b| decode(&b, dim)) {
                Some(v) => {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    out[i] = Some(v);
                }
                None => todo.push(i),
            }
        }
        let mut cache_ops = Vec::new();
        if todo.is_empty() {
            return (out, cache_ops);
        }
        let batch: Vec<&str> = todo.iter().map(|&i| texts[i]).collect();
        // Through the batcher, concurrent writers share calls; an embedder cheaper than a
        // lookup (or with batching off) is called at once.
        let embedded = match &self.batcher {
            Some(b) => b.embed(&*self.embedder, &batch),
            None => {
                self.calls.fetch_add(1, Ordering::Relaxed);
                self.embedder.embed(&batch)
            }
        };
        match embedded {
            Ok(vs) if vs.len() == batch.len() => {
                self.misses.fetch_add(todo.len() as u64, Ordering::Relaxed);
                for (&i, v) in todo.iter().zip(vs) {
                    if v.len() == dim {
                        if cached {
                            cache_ops
                                .push(WriteOp::PutAux { key: self.key(texts[i]), value: Some(encode(&v)) });
                        }
                        out[i] = Some(v);
                    } else {
                        self.failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            // One text the embedder refuses (no words) must not cost the others their vectors.
            Ok(_) | Err(_) if batch.len() > 1 => {
                for &i in &todo {
                    let (one, ops) = self.vectors(snap, &[texts[i]]);
                    out[i] = one.into_iter().next().flatten();
                    cache_ops.extend(ops);
                }
            }
            _ => {
                self.failures.fetch_add(1, Ordering::Relaxed);
            }
        }
        (out, cache_ops)
    }

    /// The operations attaching vectors to records (written in the same job as the records),
    /// each to the revision `revs` names for it if given (see [`WriteOp::PutVector`]), else to
    /// the latest.
    pub(crate) fn ops_for(
        &self,
        snap: &Snapshot,
        ns: &Namespace,
        items: &[(RecordId, String)],
        revs: Option<&[u32]>,
    ) -> Vec<WriteOp> {
        let texts: Vec<&str> = items.iter().map(|(_, t)| t.as_str()).collect();
        let (vectors, mut ops) = self.vectors(snap, &texts);
        for (i, ((id, _), v)) in items.iter().zip(vectors).enumerate() {
            if let Some(vector) = v {
                ops.push(WriteOp::PutVector {
                    namespace: ns.clone(),
                    id: *id,
                    rev: revs.and_then(|r| r.get(i).copied()),
                    space: self.space().to_string(),
                    vector,
                });
            }
        }
        ops
    }

    /// The vector of a search query (cached vectors are used, nothing is written).
    pub(crate) fn query(&self, snap: &Snapshot, text: &str) -> Result<Vec<f32>, mnemon_embed::EmbedError> {
        if self.embedder.worth_caching()
            && let Some(v) =
                snap.aux(&self.key(text)).ok().flatten().and_then(|b| decode(&b, self.embedder.dimension()))
        {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(v);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let mut v = self.embedder.embed(&[text])?;
        v.pop().ok_or(mnemon_embed::EmbedError::Empty { index: 0 })
    }
}
