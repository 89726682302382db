//! Vectors embedded after their records are committed: a write with a model embedder commits
//! its record at once, and background workers attach the vector moments later.
//!
//! A model takes far longer to embed a text (about 15 ms for MiniLM on one core) than the store
//! takes to commit a record durably (under a millisecond), so a write that waited for its
//! vector would run at the model's pace. Here a write commits its record together with a
//! **pending mark** (an auxiliary row `embed/p/<id>/<namespace>`), and hands the record to a
//! queue; workers (one per core) take records off the queue in batches, read each one's latest
//! revision, embed the texts in one call, and commit each vector with a guard naming the
//! revision it describes ([`WriteOp::PutVector`]'s `rev`) together with the deletion of the
//! mark. So:
//! - **nothing is lost**: a mark is deleted only in the commit that attaches the vector; the
//!   marks left by a crash (or by a handle closed before its queue drained) are queued again
//!   when the file is next opened for writing;
//! - **no vector describes another text**: a record revised while its text was being embedded
//!   fails the guard, and is embedded again as it now is;
//! - **searches see their writes**: a search waits (at most [`SETTLE_WAIT`]) until every record
//!   of its namespaces queued before it started has its vector, so a record written and then
//!   searched for is found by meaning as when it was embedded on the write's path;
//! - **the backlog is bounded**: a writer that finds [`Deferred::limit`] records waiting waits
//!   for room (back-pressure), so the delay of a vector stays bounded by the backlog over the
//!   model's rate, and both are reported ([`Backlog`]);
//! - closing the last handle waits for the queue to drain.
//!
//! A failed embedding leaves the record without a vector, as on the write's path (counted in
//! [`super::EmbedStats::failures`]; `reindex` embeds it later).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mnemon_storage::{Durability, Error as StorageError, Namespace, RecordId, Store, WriteOp};
use serde::{Deserialize, Serialize};

use super::Embedding;

/// Where pending marks live: `embed/p/<id as 32 hex digits>/<namespace>`.
const PREFIX: &str = "embed/p/";
/// Records a worker embeds in one call.
const BATCH: usize = 16;
/// The longest a search waits for the vectors of its namespaces' earlier writes.
pub(crate) const SETTLE_WAIT: Duration = Duration::from_secs(5);
/// Records that may wait for their vectors before writers wait for room (default).
pub const DEFAULT_BACKLOG: usize = 1024;

/// The pending mark of a record.
pub(crate) fn mark_key(ns: &Namespace, id: RecordId) -> String {
    format!("{PREFIX}{:032x}/{}", id.as_u128(), ns.as_str())
}

/// The record a pending mark names.
fn parse_mark(key: &str) -> Option<(Namespace, RecordId)> {
    let (id, ns) = key.strip_prefix(PREFIX)?.split_once('/')?;
    let id = u128::from_str_radix(id, 16).ok()?;
    Some((Namespace::new(ns).ok()?, RecordId::from_u128(id)))
}

/// The operation setting a record's pending mark (committed with the record).
pub(crate) fn mark(ns: &Namespace, id: RecordId) -> WriteOp {
    WriteOp::PutAux { key: mark_key(ns, id), value: Some(Vec::new()) }
}

/// The records a committed job marked pending.
pub(crate) fn marked(ops: &[WriteOp]) -> impl Iterator<Item = (Namespace, RecordId)> + '_ {
    ops.iter().filter_map(|op| match op {
        WriteOp::PutAux { key, value: Some(_) } => parse_mark(key),
        _ => None,
    })
}

/// The vectors still to attach, as [`crate::Db::embed_backlog`] reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Backlog {
    /// Whether written records get their vectors in the background (see
    /// [`crate::DbBuilder::defer_embeddings`]).
    pub deferred: bool,
    /// Records committed whose vectors are not attached yet.
    pub pending: u64,
    /// How long the oldest of them has waited, in milliseconds.
    pub oldest_ms: u64,
    /// The most records that wait before writers wait for room.
    pub limit: u64,
    /// Vectors attached in the background since the database was opened.
    pub attached: u64,
}

struct Item {
    ns: Namespace,
    id: RecordId,
    seq: u64,
    since: Instant,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Item>,
    /// The tickets of records queued or being embedded, by namespace.
    open: HashMap<Namespace, BTreeSet<u64>>,
    /// When each open ticket was queued (oldest first).
    since: BTreeSet<(Instant, u64)>,
    next_seq: u64,
    attached: u64,
    closing: bool,
    /// Workers still running (they stop on closing, or when the store refuses writes).
    workers: usize,
}

/// The queue and its workers (see the module documentation).
pub(crate) struct Deferred {
    shared: Arc<Shared>,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when records are queued, done, or the queue closes.
    changed: Condvar,
    limit: usize,
    store: Store,
    embedding: Arc<Embedding>,
}

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deferred").field("limit", &self.shared.limit).finish_non_exhaustive()
    }
}

impl Deferred {
    /// Start the workers for the database in `store`, with the marks a previous handle left
    /// queued again.
    pub(crate) fn start(
        store: Store,
        embedding: Arc<Embedding>,
        limit: usize,
    ) -> crate::error::Result<Deferred> {
        let left: Vec<(Namespace, RecordId)> =
            store.snapshot()?.aux_prefix(PREFIX)?.iter().filter_map(|(k, _)| parse_mark(k)).collect();
        let workers = std::thread::available_parallelism().map_or(1, usize::from);
        let shared = Arc::new(Shared {
            state: Mutex::new(State { workers, ..State::default() }),
            changed: Condvar::new(),
            limit: limit.max(1),
            store,
            embedding,
        });
        {
            let mut s = shared.lock();
            for (ns, id) in left {
                s.push(ns, id);
            }
        }
        let mut handles = Vec::with_capacity(workers);
        for n in 0..workers {
            let sh = Arc::clone(&shared);
            let spawned =
                std::thread::Builder::new().name(format!("mnemon-embed-{n}")).spawn(move || sh.work());
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    shared.lock().workers -= workers - n;
                    if n == 0 {
                        return Err(crate::Error::Io { path: shared.store.path().to_path_buf(), source: e });
                    }
                    break;
                }
            }
        }
        Ok(Deferred { shared, handles: Mutex::new(handles) })
    }

    /// Queue committed records for their vectors, waiting for room while the backlog is full
    /// (unless no worker runs: their marks stay for the next open).
    pub(crate) fn enqueue(&self, records: impl IntoIterator<Item = (Namespace, RecordId)>) {
        let sh = &self.shared;
        let mut s = sh.lock();
        for (ns, id) in records {
            while s.queue.len() >= sh.limit && s.workers > 0 && !s.closing {
                s = sh.changed.wait(s).unwrap_or_else(PoisonError::into_inner);
            }
            s.push(ns, id);
        }
        drop(s);
        sh.changed.notify_all();
    }

    /// Wait until every record of `namespaces` queued before now has its vector (or failed),
    /// at most `timeout`; whether they all have.
    pub(crate) fn settle(&self, namespaces: &[&Namespace], timeout: Duration) -> bool {
        let sh = &self.shared;
        let deadline = Instant::now() + timeout;
        let mut s = sh.lock();
        let last = s.next_seq;
        loop {
            let waiting = namespaces
                .iter()
                .any(|ns| s.open.get(*ns).and_then(|t| t.first()).is_some_and(|&first| first < last));
            if !waiting {
                return true;
            }
            let now = Instant::now();
            if now >= deadline || s.workers == 0 {
                return false;
            }
            s = sh.changed.wait_timeout(s, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// Wait until the queue is empty, at most `timeout`: how many records still wait.
    pub(crate) fn drain(&self, timeout: Duration) -> u64 {
        let sh = &self.shared;
        let deadline = Instant::now() + timeout;
        let mut s = sh.lock();
        loop {
            let left = s.since.len() as u64;
            let now = Instant::now();
            if left == 0 || now >= deadline || s.workers == 0 {
                return left;
            }
            s = sh.changed.wait_timeout(s, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// The backlog now.
    pub(crate) fn backlog(&self) -> Backlog {
        let s = self.shared.lock();
        Backlog {
            deferred: true,
            pending: s.since.len() as u64,
            oldest_ms: s.since.first().map_or(0, |(t, _)| t.elapsed().as_millis() as u64),
            limit: self.shared.limit as u64,
            attached: s.attached,
        }
    }
}

impl Drop for Deferred {
    /// Let the workers finish the queue, then stop them, and sync what they wrote.
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.changed.notify_all();
        let handles = std::mem::take(&mut *self.handles.lock().unwrap_or_else(PoisonError::into_inner));
        for h in handles {
            let _ = h.join();
        }
        // The workers commit without a sync: make their vectors durable with the handle's
        // last act (were it lost, the marks would bring them back at the next open).
        let _ = self.shared.store.sync();
    }
}

impl State {
    fn push(&mut self, ns: Namespace, id: RecordId) {
        let (seq, since) = (self.next_seq, Instant::now());
        self.next_seq += 1;
        self.open.entry(ns.clone()).or_default().insert(seq);
        self.since.insert((since, seq));
        self.queue.push_back(Item { ns, id, seq, since });
    }

    fn done(&mut self, item: &Item) {
        if let Some(t) = self.open.get_mut(&item.ns) {
            t.remove(&item.seq);
            if t.is_empty() {
                self.open.remove(&item.ns);
            }
        }
        self.since.remove(&(item.since, item.seq));
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A worker: take batches off the queue until it is closed and empty.
    fn work(&self) {
        loop {
            let batch: Vec<Item> = {
                let mut s = self.lock();
                while s.queue.is_empty() && !s.closing {
                    s = self.changed.wait(s).unwrap_or_else(PoisonError::into_inner);
                }
                if s.queue.is_empty() {
                    s.workers -= 1;
                    drop(s);
                    self.changed.notify_all();
                    return;
                }
                let n = s.queue.len().min(BATCH);
                s.queue.drain(..n).collect()
            };
            // Room in the queue for waiting writers.
            self.changed.notify_all();
            let (finished, again, stop) = self.embed(batch);
            let mut s = self.lock();
            for item in &finished {
                s.done(item);
            }
            for item in again.into_iter().rev() {
                s.queue.push_front(item);
            }
            if stop {
                // The store refuses writes (an I/O error, a full disk): the marks stay for
                // the next open; nothing more is taken here.
                for item in std::mem::take(&mut s.queue) {
                    s.done(&item);
                }
                s.workers -= 1;
                drop(s);
                self.changed.notify_all();
                return;
            }
            drop(s);
            self.changed.notify_all();
        }
    }

    /// Embed a batch and attach its vectors: the records finished, those to embed again
    /// (revised meanwhile), and whether the store refused to write.
    fn embed(&self, batch: Vec<Item>) -> (Vec<Item>, Vec<Item>, bool) {
        let snap = match self.store.snapshot() {
            Ok(s) => s,
            Err(_) => return (batch, Vec::new(), true),
        };
        // Each record's latest revision and text (none when it was forgotten meanwhile).
        let latest: Vec<Option<(u32, String)>> = batch
            .iter()
            .map(|i| snap.latest(&i.ns, i.id).ok().flatten().map(|r| (r.rev, r.body.text())))
            .collect();
        let texts: Vec<&str> = latest.iter().map(|l| l.as_ref().map_or("", |(_, t)| t.as_str())).collect();
        // An embedder that panics fails its batch, not the worker.
        let embedded =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.embedding.vectors(&snap, &texts)));
        let (vectors, cache) = embedded.unwrap_or_else(|_| {
            self.embedding.failures.fetch_add(texts.len() as u64, Ordering::Relaxed);
            (vec![None; texts.len()], Vec::new())
        });
        let space = self.embedding.space().to_string();
        let mut jobs: Vec<Vec<WriteOp>> = Vec::with_capacity(batch.len() + 1);
        for ((item, l), v) in batch.iter().zip(&latest).zip(vectors) {
            let unmark = WriteOp::PutAux { key: mark_key(&item.ns, item.id), value: None };
            jobs.push(match (l, v) {
                (Some((rev, _)), Some(vector)) => vec![
                    WriteOp::PutVector {
                        namespace: item.ns.clone(),
                        id: item.id,
                        rev: Some(*rev),
                        space: space.clone(),
                        vector,
                    },
                    unmark,
                ],
                // Forgotten, no text, or the embedding failed: nothing to attach.
                _ => vec![unmark],
            });
        }
        if !cache.is_empty() {
            jobs.push(cache);
        }
        let results = self.store.write_many(jobs, Durability::Eventual);
        let (mut finished, mut again, mut refused, mut stop) = (Vec::new(), Vec::new(), Vec::new(), false);
        let mut attached = 0u64;
        for (item, r) in batch.into_iter().zip(results) {
            match r {
                Ok(receipt) => {
                    attached += u64::from(receipt.outcomes.len() == 2);
                    finished.push(item);
                }
                // Revised, or forgotten, between the read and the commit: read it again.
                Err(StorageError::RevisionConflict { .. } | StorageError::NotFound { .. }) => {
                    again.push(item)
                }
                // A vector the store refuses (the embedder returned a bad one): no vector, as
                // when the embedding fails, and the mark goes.
                Err(e) if e.is_input() => refused.push(item),
                Err(_) => {
                    stop = true;
                    finished.push(item);
                }
            }
        }
        if !refused.is_empty() && !stop {
            self.embedding.failures.fetch_add(refused.len() as u64, Ordering::Relaxed);
            let unmark = refused
                .iter()
                .map(|i| vec![WriteOp::PutAux { key: mark_key(&i.ns, i.id), value: None }])
                .collect();
            stop = self.store.write_many(unmark, Durability::Eventual).iter().any(Result::is_err);
        }
        finished.extend(refused);
        self.lock().attached += attached;
        (finished, again, stop)
    }
}

#[cfg(test)]
mod tests;
