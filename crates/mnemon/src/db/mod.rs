//! The database handle and the namespace handle.

use std::path::Path;
use std::sync::Arc;

use mnemon_storage::{
    Durability, Namespace, Record, RecordId, Snapshot, Store, StoreOptions, Timestamp, WriteOp,
};

use mnemon_embed::{Embedder, HashEmbedder};
use mnemon_index::{BuildReport, IndexOptions, SegmentStatus, VectorIndexes};

use crate::embedding::{Backlog, Deferred, EmbedStats, EmbedderRecord, Embedding, SETTLE_WAIT, mark};

use crate::error::Result;

mod builder;
mod intent;
mod log;
mod ns;
mod partitioned;
pub use builder::*;
pub(crate) use intent::Intent;
pub use log::WriteLog;
pub use ns::*;
pub use partitioned::Partitions;

/// An open mnemon database: cheap to clone, `Send + Sync`. Any number of threads read at once;
/// writes from all threads are group-committed.
#[derive(Clone, Debug)]
pub struct Db {
    store: Store,
    index: Arc<VectorIndexes>,
    embedding: Arc<Embedding>,
    /// The queue of records whose vectors are attached in the background, when embeddings
    /// are deferred ([`DbBuilder::defer_embeddings`]).
    deferred: Option<Arc<Deferred>>,
    read_only: bool,
    extensions: Arc<Extensions>,
    max_record_bytes: usize,
    /// The log this database is a replica of, if any (see `log.rs`).
    log: Option<Arc<dyn WriteLog>>,
    /// The partitions namespaces are routed to, if any (see `partitioned.rs`): a partitioned
    /// handle's, and that of each partition's database reached through it, so that a
    /// namespace handle reaches the others (a project's context reads `global`).
    router: Option<Arc<dyn Partitions>>,
    /// Whether this is the partitioned handle itself, which spreads what spans namespaces
    /// over the partitions (a partition's database reached through it is not).
    front: bool,
}

/// The state that modules above [`Db`] keep per database (the buffered access counts of
/// episodes, the entity graphs), by type: each is made on first use by its module and lives
/// as long as the database, which holds them without knowing them.
#[derive(Default)]
struct Extensions(
    std::sync::Mutex<std::collections::HashMap<std::any::TypeId, Arc<dyn std::any::Any + Send + Sync>>>,
);

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions").finish_non_exhaustive()
    }
}

impl Db {
    /// The database's `T` (see [`Extensions`]), made by `make` on first use. `make` must not
    /// ask for another extension.
    pub(crate) fn extension<T: std::any::Any + Send + Sync>(&self, make: impl FnOnce(&Db) -> T) -> Arc<T> {
        let mut map = self.extensions.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = std::any::TypeId::of::<T>();
        if let Some(found) = map.get(&key).and_then(|e| Arc::clone(e).downcast::<T>().ok()) {
            return found;
        }
        let made = Arc::new(make(self));
        map.insert(key, made.clone());
        made
    }

    /// Whether the database was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// A builder for the database at `path`.
    pub fn builder(path: impl AsRef<Path>) -> DbBuilder {
        DbBuilder {
            path: path.as_ref().to_path_buf(),
            options: StoreOptions::default(),
            index: None,
            embedder: None,
            reembed: false,
            max_record_bytes: MAX_RECORD_BYTES,
            log: None,
            batch_embeddings: false,
            defer_embeddings: None,
            embed_backlog: crate::embedding::DEFAULT_BACKLOG,
        }
    }

    /// The vector index options a database at `path` gets by default: files in
    /// `<path>.index`, graphs built and published in the background.
    pub fn default_index_options(path: &Path) -> IndexOptions {
        IndexOptions {
            dir: Some(IndexOptions::dir_beside(path)),
            auto_maintain: true,
            ..IndexOptions::default()
        }
    }

    /// Open an existing database.
    pub fn open(path: impl AsRef<Path>) -> Result<Db> {
        Db::builder(path).open()
    }

    /// Open an existing database for reading only.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Db> {
        Db::builder(path).read_only(true).open()
    }

    /// Open the database, creating it (and its folder) if needed.
    pub fn create(path: impl AsRef<Path>) -> Result<Db> {
        Db::builder(path).create(true).open()
    }

    /// The storage engine underneath.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// The current time according to the database's clock.
    pub fn now(&self) -> Timestamp {
        self.store.clock().now()
    }

    /// A handle on one namespace (on its partition's database, for a partitioned handle).
    pub fn ns(&self, name: &str) -> Result<Ns> {
        let ns = Namespace::new(name)?;
        Ok(Ns { db: self.db_for(name)?, ns })
    }

    /// A consistent read-only view.
    pub fn snapshot(&self) -> Result<Snapshot> {
        Ok(self.store.snapshot()?)
    }

    /// Copy the database file, as of a commit, to `dest`: see [`Store::copy_to`] (one
    /// partition's file for a partitioned handle: copy each of [`Db::partitions`]).
    pub fn copy_to(&self, dest: &Path) -> Result<u64> {
        Ok(self.store.copy_to(dest)?)
    }

    /// Make every earlier commit durable (in every partition).
    pub fn sync(&self) -> Result<()> {
        if self.is_partitioned() {
            return self.partitions().iter().try_for_each(Db::sync);
        }
        Ok(self.store.sync()?)
    }

    /// Merge a namespace's fresh texts, and every segment, into its posting lists now, if it
    /// has at least `min` fresh texts; returns how many were merged. The commit that brings a
    /// namespace to [`mnemon_storage::FRESH_LIMIT`] fresh texts merges them into a segment on
    /// its own (see docs/search.md); a server calls this when it is idle, so that searches
    /// read one place. Durable, and changes no query's answer.
    pub fn merge_texts(&self, ns: &Namespace, min: u64) -> Result<u64> {
        if self.is_partitioned() {
            return self.db_for(ns.as_str())?.merge_texts(ns, min);
        }
        let fresh = self.store.snapshot()?.fresh_texts(ns)?;
        if fresh == 0 || fresh < min {
            return Ok(0);
        }
        self.store.write(vec![WriteOp::MergeTexts { namespace: ns.clone() }])?;
        Ok(fresh)
    }

    /// The embedder records are embedded with.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedding.embedder
    }

    /// The embedding cache's hits and misses, and failed embeddings, since opening.
    pub fn embed_stats(&self) -> EmbedStats {
        self.embedding.stats()
    }

    /// The most bytes a record may hold here ([`DbBuilder::max_record_bytes`]): larger ones
    /// are refused by every write, imports included.
    pub fn max_record_bytes(&self) -> usize {
        self.max_record_bytes
    }

    /// The vector space of the embedder (its model id).
    pub fn space(&self) -> &str {
        self.embedding.space()
    }

    /// Embed every record whose latest revision has no vector in the embedder's space (all
    /// namespaces, or one), in batches of `batch`; `progress` is called after each batch with
    /// (done, total). Records whose embedding fails stay without a vector.
    ///
    /// The batches are committed without a sync, and synced once at the end (a bulk job: an
    /// fsync per batch would cost more than embedding it with the default embedder). So when a
    /// commit fails on an I/O error (a full disk) midway, the batches before it are lost with
    /// it and the handle refuses to go on ([`mnemon_storage::Error::Closed`]); opened again,
    /// the database has every record, and running `reindex` again embeds what is missing.
    pub fn reindex(
        &self,
        ns: Option<&str>,
        batch: usize,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<EmbedStats> {
        if self.is_partitioned() {
            let parts = match ns {
                Some(n) => vec![self.db_for(n)?],
                None => self.partitions(),
            };
            let mut total = EmbedStats::default();
            for db in parts {
                // (One instantiation for every partition: `dyn`, not a new closure type each.)
                let p: &mut dyn FnMut(usize, usize) = &mut progress;
                let s = db.reindex(ns, batch, p)?;
                total = EmbedStats {
                    hits: total.hits + s.hits,
                    misses: total.misses + s.misses,
                    failures: total.failures + s.failures,
                    calls: total.calls + s.calls,
                };
            }
            return Ok(total);
        }
        let before = self.embedding.stats();
        let snap = self.snapshot()?;
        let namespaces = match ns {
            Some(n) => vec![Namespace::new(n)?],
            None => snap.namespaces()?,
        };
        let space = self.space().to_string();
        let mut todo: Vec<Pending> = Vec::new();
        for n in &namespaces {
            let mut last: Option<Record> = None;
            let check = |r: Option<Record>, todo: &mut Vec<Pending>| -> Result<()> {
                if let Some(r) = r {
                    let text = r.body.text();
                    if !text.trim().is_empty() && snap.vector_for(&space, n, r.id, r.rev)?.is_none() {
                        todo.push((n.clone(), r.id, r.rev, text));
                    }
                }
                Ok(())
            };
            let mut pending: Vec<Record> = Vec::new();
            snap.for_each_revision(Some(n), |r| {
                if last.as_ref().is_some_and(|l| l.id != r.id) {
                    pending.extend(last.take());
                }
                last = Some(r);
                Ok(())
            })?;
            pending.extend(last.take());
            for r in pending {
                check(Some(r), &mut todo)?;
            }
        }
        let total = todo.len();
        let mut done = 0;
        for chunk in todo.chunks(batch.max(1)) {
            let snap = self.snapshot()?;
            let mut jobs = Vec::new();
            for (n, group) in group_by_ns(chunk) {
                let items: Vec<(RecordId, String)> =
                    group.iter().map(|(_, id, _, t)| (*id, t.clone())).collect();
                let revs: Vec<u32> = group.iter().map(|(_, _, rev, _)| *rev).collect();
                // Each vector for the revision whose text it embeds: a record revised
                // meanwhile was embedded by its writer.
                let ops = self.embedding.ops_for(&snap, &n, &items, Some(&revs));
                if !ops.is_empty() {
                    jobs.push(ops);
                }
            }
            for r in self.write_jobs(jobs, Durability::Eventual) {
                // A record forgotten or revised meanwhile is not an error for a backfill.
                match r {
                    Ok(_)
                    | Err(crate::Error::Storage(
                        mnemon_storage::Error::NotFound { .. }
                        | mnemon_storage::Error::RevisionConflict { .. },
                    )) => {}
                    Err(e) => return Err(e),
                }
            }
            done += chunk.len();
            progress(done, total);
        }
        self.sync()?;
        let after = self.embedding.stats();
        Ok(EmbedStats {
            hits: after.hits - before.hits,
            misses: after.misses - before.misses,
            failures: after.failures - before.failures,
            calls: after.calls - before.calls,
        })
    }

    /// Vector operations for new record texts (used by every write that creates or changes
    /// text): the vectors, or, when embeddings are deferred, the records' pending marks
    /// (`embedding/deferred.rs`; [`Db::write`] queues them once committed).
    pub(crate) fn embed_ops(&self, ns: &Namespace, items: &[(RecordId, String)]) -> Result<Vec<WriteOp>> {
        if items.iter().all(|(_, t)| t.trim().is_empty()) {
            return Ok(Vec::new());
        }
        if self.deferred.is_some() {
            return Ok(items
                .iter()
                .filter(|(_, t)| !t.trim().is_empty())
                .map(|(id, _)| mark(ns, *id))
                .collect());
        }
        Ok(self.embedding.ops_for(&self.snapshot()?, ns, items, None))
    }

    /// Queue the records a committed job marked pending for their vectors.
    fn queue_marked(&self, marks: Vec<(Namespace, RecordId)>) {
        if let Some(d) = &self.deferred
            && !marks.is_empty()
        {
            d.enqueue(marks);
        }
    }

    /// Wait until every record written before this call has its vector (see
    /// [`DbBuilder::defer_embeddings`]), at most `timeout`: how many still wait (0 when all
    /// have, or when embeddings are not deferred).
    pub fn wait_for_vectors(&self, timeout: std::time::Duration) -> u64 {
        if self.is_partitioned() {
            return self.partitions().iter().map(|db| db.wait_for_vectors(timeout)).sum();
        }
        self.deferred.as_ref().map_or(0, |d| d.drain(timeout))
    }

    /// The records whose vectors are still to attach (see [`DbBuilder::defer_embeddings`]).
    pub fn embed_backlog(&self) -> Backlog {
        if self.is_partitioned() {
            return self.partitions().iter().map(Db::embed_backlog).fold(Backlog::default(), |a, b| {
                Backlog {
                    deferred: a.deferred || b.deferred,
                    pending: a.pending + b.pending,
                    oldest_ms: a.oldest_ms.max(b.oldest_ms),
                    limit: a.limit + b.limit,
                    attached: a.attached + b.attached,
                }
            });
        }
        self.deferred.as_ref().map_or_else(Backlog::default, |d| d.backlog())
    }

    /// Before a search of `namespaces` by meaning: wait (at most [`SETTLE_WAIT`]) until the
    /// records written to them before now have their vectors, so that a search finds what was
    /// written before it.
    pub(crate) fn settle_vectors(&self, namespaces: &[&Namespace]) {
        if let Some(d) = &self.deferred {
            d.settle(namespaces, SETTLE_WAIT);
        }
    }

    /// The vector of a search text.
    pub(crate) fn query_vector(
        &self,
        snap: &Snapshot,
        text: &str,
    ) -> std::result::Result<Vec<f32>, mnemon_embed::EmbedError> {
        self.embedding.query(snap, text)
    }

    /// The vector indexes.
    pub fn index(&self) -> &VectorIndexes {
        &self.index
    }

    /// Build (or rebuild) and publish the graph of one vector space in one namespace now.
    pub fn build_index(&self, space: &str, ns: &str) -> Result<BuildReport> {
        if self.is_partitioned() {
            return self.db_for(ns)?.build_index(space, ns);
        }
        Ok(self.index.build(space, &Namespace::new(ns)?)?)
    }

    /// The state of every (space, namespace) index, loading each one.
    pub fn index_status(&self) -> Result<Vec<SegmentStatus>> {
        if self.is_partitioned() {
            let mut out = Vec::new();
            for db in self.partitions() {
                out.extend(db.index_status()?);
            }
            return Ok(out);
        }
        let snap = self.snapshot()?;
        for space in snap.vector_spaces()? {
            for ns in snap.namespaces()? {
                self.index.open_segment(&space.name, &ns)?;
            }
        }
        Ok(self.index.status())
    }
}

/// Run redb's integrity check on a database file no process has open: `Ok(true)` when it was
/// consistent, `Ok(false)` when redb repaired it.
pub fn check_integrity(path: impl AsRef<Path>) -> Result<bool> {
    Ok(Store::check_integrity(path)?)
}

/// Mark the database file at `path` damaged (`FILE.damaged` beside it, holding `reason`):
/// every handle on it, in every process, refuses writes until the mark is cleared. See
/// [`Store::mark_damaged`].
pub fn mark_damaged(path: impl AsRef<Path>, reason: &str) -> Result<()> {
    Ok(Store::mark_damaged(path, reason)?)
}

/// Remove the damage mark of the database file at `path` (once it checks clean, or was
/// restored); `Ok(true)` if there was one. See [`Store::clear_damage_mark`].
pub fn clear_damage_mark(path: impl AsRef<Path>) -> Result<bool> {
    Ok(Store::clear_damage_mark(path)?)
}

/// Give the free pages inside a database file that no process has open back to the file
/// system: `(bytes before, bytes after)`. See [`Store::compact`].
pub fn compact(path: impl AsRef<Path>) -> Result<(u64, u64)> {
    Ok(Store::compact(path)?)
}

/// The embedder a database records, rebuilt: the hashing embedder of that dimension, the
/// HTTP embedder of that model configured from the environment (`MNEMON_EMBED_URL`,
/// `MNEMON_EMBED_KEY` / `OPENAI_API_KEY`), or the local MiniLM from its default directory
/// (`MNEMON_MINILM_DIR`, else `~/.cache/mnemon/models/all-minilm-l6-v2`; feature
/// `local-minilm`).
pub fn embedder_for(r: &EmbedderRecord) -> Result<Arc<dyn Embedder>> {
    if r.model == "all-MiniLM-L6-v2" {
        #[cfg(feature = "local-minilm")]
        {
            let e = mnemon_embed::LocalMiniLm::open(mnemon_embed::LocalMiniLm::default_dir())?;
            return Ok(Arc::new(e));
        }
        #[cfg(not(feature = "local-minilm"))]
        return Err(crate::error::invalid(
            "the database records the local all-MiniLM-L6-v2 embedder, but this build lacks the \
             local-minilm feature (cargo build --features local-minilm)",
        ));
    }
    if let Some(d) = r.model.strip_prefix("mnemon-hash-v1-").and_then(|d| d.parse::<usize>().ok()) {
        return Ok(Arc::new(HashEmbedder::new(d)));
    }
    if let Some(model) = r.model.strip_prefix("openai-compatible:") {
        let config = mnemon_embed::HttpConfig {
            model: model.to_string(),
            dimension: Some(r.dimension),
            ..mnemon_embed::HttpConfig::from_env()
        };
        return Ok(Arc::new(mnemon_embed::HttpEmbedder::new(config)?));
    }
    Err(crate::error::invalid(format!("the database records an unknown embedder {:?}", r.model)))
}

/// A record's text waiting to be embedded.
/// A record to embed in `reindex`: its namespace, id, latest revision and text.
type Pending = (Namespace, RecordId, u32, String);

/// Consecutive items of the same namespace.
fn group_by_ns(items: &[Pending]) -> Vec<(Namespace, Vec<&Pending>)> {
    let mut out: Vec<(Namespace, Vec<&Pending>)> = Vec::new();
    for it in items {
        match out.last_mut() {
            Some((n, v)) if *n == it.0 => v.push(it),
            _ => out.push((it.0.clone(), vec![it])),
        }
    }
    out
}

/// Whether `s` has the form of a record id as every interface takes it: a UUID, or a start
/// or end of one of at least 6 hex digits (dashes allowed). What it names is for
/// [`Ns::resolve_id`] to find.
pub fn check_id_form(s: &str) -> Result<()> {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    if RecordId::parse(s).is_ok() || (hex.len() >= 6 && hex.chars().all(|c| c.is_ascii_hexdigit())) {
        Ok(())
    } else {
        Err(crate::error::invalid(format!(
            "invalid record id {s:?}: expected a UUID, or a unique start or end of one (6 hex digits or more)"
        )))
    }
}
