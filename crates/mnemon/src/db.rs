//! The database handle and the namespace handle.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mnemon_storage::{
    AsOf, Body, Clock, Durability, Envelope, Expiry, KindBody, ListQuery, Namespace, NewRecord, OnConflict,
    Outcome, Receipt, Record, RecordId, Revise, Snapshot, Store, StoreOptions, Text, Timestamp, WriteOp,
};
use serde_json::Value;

use mnemon_embed::{Embedder, HashEmbedder};
use mnemon_index::{BuildReport, Found, IndexOptions, Mode, Query, SegmentStatus, VectorIndexes};

use crate::embedding::{EmbedStats, EmbedderRecord, Embedding, MODEL_KEY};

use crate::error::{Error, Result};
use crate::json;

/// Configure, then open, a database.
#[derive(Clone)]
pub struct DbBuilder {
    path: PathBuf,
    options: StoreOptions,
    index: Option<IndexOptions>,
    embedder: Option<Arc<dyn Embedder>>,
    reembed: bool,
    max_record_bytes: usize,
}

/// The most bytes a record may hold by default (its body and envelope as JSON): see
/// [`DbBuilder::max_record_bytes`].
pub const MAX_RECORD_BYTES: usize = 4 << 20;

impl std::fmt::Debug for DbBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbBuilder").field("path", &self.path).field("options", &self.options).finish()
    }
}

impl DbBuilder {
    /// Create the file (and its folder) if it does not exist. Off by default.
    pub fn create(mut self, yes: bool) -> Self {
        self.options.create = yes;
        self
    }

    /// Open for reading only (default off): read-only handles in any number of processes share
    /// the file; writes fail.
    pub fn read_only(mut self, yes: bool) -> Self {
        self.options.read_only = yes;
        self
    }

    /// Share the file with other processes that also open it shared (default off: the
    /// process that opens it has it alone). Shared, any number of processes (the `mnemon`
    /// CLI, `mnemon mcp` servers, programs embedding mnemon) read and write the same file at
    /// once; writes from all of them are serialised by redb's file locks, every commit is
    /// durable and two-phase, and each process sees the others' commits from its next
    /// snapshot. See docs/architecture.md, "Many processes, one file".
    pub fn shared(mut self, yes: bool) -> Self {
        self.options.shared = yes;
        self
    }

    /// Use this clock for transaction times (tests, reproducible demos).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.options.clock = clock;
        self
    }

    /// The smallest number of timeline events between checkpoints (default 512).
    pub fn min_checkpoint_gap(mut self, n: u64) -> Self {
        self.options.min_checkpoint_gap = n;
        self
    }

    /// How long the writer may wait for more jobs when the previous commit showed concurrent
    /// writers (default 250 µs; zero turns waiting off). A lone writer never waits.
    pub fn group_commit_window(mut self, window: std::time::Duration) -> Self {
        self.options.group_commit_window = window;
        self
    }

    /// Write zeros ahead of the data into the file's never-written space (holes; default on;
    /// Linux, not with [`DbBuilder::shared`]), so that durable commits write over blocks the file
    /// system has already allocated: commits of 16 records took 10 % less time on ext4. The
    /// file then takes up to 8 MiB more disk than its data. See docs/architecture.md.
    pub fn zero_fill(mut self, yes: bool) -> Self {
        self.options.zero_fill = yes;
        self
    }

    /// redb's page cache, in bytes (default 256 MiB).
    pub fn cache_size(mut self, bytes: usize) -> Self {
        self.options.cache_size = bytes;
        self
    }

    /// Vector index options (default: files in `<db>.index` beside the database, graphs built
    /// and published in the background once a namespace has 5,000 live vectors).
    pub fn index_options(mut self, opts: IndexOptions) -> Self {
        self.index = Some(opts);
        self
    }

    /// The embedder that turns record text into vectors (default: the offline
    /// [`HashEmbedder`]). A database remembers the embedder it was first written with;
    /// opening it with another is an error unless [`DbBuilder::reembed`] is set.
    pub fn embedder(mut self, e: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(e);
        self
    }

    /// Accept an embedder other than the recorded one and record it instead (then run
    /// [`Db::reindex`] to embed the existing records with it).
    pub fn reembed(mut self, yes: bool) -> Self {
        self.reembed = yes;
        self
    }

    /// The most bytes a new record may hold, its body and envelope measured as JSON (default
    /// [`MAX_RECORD_BYTES`], 4 MiB): a larger one is refused as invalid input before anything
    /// is written, whichever interface sends it.
    pub fn max_record_bytes(mut self, n: usize) -> Self {
        self.max_record_bytes = n;
        self
    }

    /// Open it.
    pub fn open(self) -> Result<Db> {
        if self.options.create
            && let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::CreateDir { path: parent.to_path_buf(), source: e })?;
        }
        let read_only = self.options.read_only;
        let store = Store::open(&self.path, self.options)?;
        let opts = self.index.unwrap_or_else(|| IndexOptions {
            auto_maintain: !read_only,
            ..Db::default_index_options(&self.path)
        });
        let index = Arc::new(VectorIndexes::new(store.clone(), opts));
        let recorded: Option<EmbedderRecord> =
            store.snapshot()?.aux(MODEL_KEY)?.and_then(|b| serde_json::from_slice(&b).ok());
        let embedder = match (self.embedder, &recorded) {
            (Some(e), _) => e,
            (None, Some(r)) => embedder_for(r)?,
            (None, None) => Arc::new(HashEmbedder::default()),
        };
        let embedding = Arc::new(Embedding::new(embedder));
        let wanted = embedding.record();
        match recorded {
            Some(r) if r == wanted => {}
            Some(r) if !self.reembed => {
                return Err(Error::EmbedderMismatch {
                    path: self.path,
                    recorded: r.model,
                    configured: wanted.model,
                });
            }
            _ if read_only => {}
            _ => {
                let value = serde_json::to_vec(&wanted).map_err(|e| crate::error::invalid(e.to_string()))?;
                store.write(vec![WriteOp::PutAux { key: MODEL_KEY.into(), value: Some(value) }])?;
            }
        }
        Ok(Db {
            store,
            index,
            embedding,
            read_only,
            extensions: Arc::default(),
            max_record_bytes: self.max_record_bytes,
        })
    }
}

/// An open mnemon database: cheap to clone, `Send + Sync`. Any number of threads read at once;
/// writes from all threads are group-committed.
#[derive(Clone, Debug)]
pub struct Db {
    store: Store,
    index: Arc<VectorIndexes>,
    embedding: Arc<Embedding>,
    read_only: bool,
    extensions: Arc<Extensions>,
    max_record_bytes: usize,
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

    /// A handle on one namespace.
    pub fn ns(&self, name: &str) -> Result<Ns> {
        Ok(Ns { db: self.clone(), ns: Namespace::new(name)? })
    }

    /// A consistent read-only view.
    pub fn snapshot(&self) -> Result<Snapshot> {
        Ok(self.store.snapshot()?)
    }

    /// Commit operations atomically and durably.
    pub fn write(&self, ops: Vec<WriteOp>) -> Result<Receipt> {
        Ok(self.store.write(ops)?)
    }

    /// Commit operations with the given durability.
    pub fn write_with(&self, ops: Vec<WriteOp>, durability: Durability) -> Result<Receipt> {
        Ok(self.store.write_with(ops, durability)?)
    }

    /// Make every earlier commit durable.
    pub fn sync(&self) -> Result<()> {
        Ok(self.store.sync()?)
    }

    /// Merge a namespace's fresh texts, and every segment, into its posting lists now, if it
    /// has at least `min` fresh texts; returns how many were merged. The commit that brings a
    /// namespace to [`mnemon_storage::FRESH_LIMIT`] fresh texts merges them into a segment on
    /// its own (see docs/search.md); a server calls this when it is idle, so that searches
    /// read one place. Durable, and changes no query's answer.
    pub fn merge_texts(&self, ns: &Namespace, min: u64) -> Result<u64> {
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
                        todo.push((n.clone(), r.id, text));
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
                    group.iter().map(|(_, id, t)| (*id, t.clone())).collect();
                let ops = self.embedding.ops_for(&snap, &n, &items);
                if !ops.is_empty() {
                    jobs.push(ops);
                }
            }
            for r in self.store.write_many(jobs, Durability::Eventual) {
                // A record forgotten meanwhile is not an error for a backfill.
                match r {
                    Ok(_) | Err(mnemon_storage::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
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
        })
    }

    /// Vector operations for new record texts (used by every write that creates or changes
    /// text).
    pub(crate) fn embed_ops(&self, ns: &Namespace, items: &[(RecordId, String)]) -> Result<Vec<WriteOp>> {
        if items.iter().all(|(_, t)| t.trim().is_empty()) {
            return Ok(Vec::new());
        }
        Ok(self.embedding.ops_for(&self.snapshot()?, ns, items))
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
        Ok(self.index.build(space, &Namespace::new(ns)?)?)
    }

    /// The state of every (space, namespace) index, loading each one.
    pub fn index_status(&self) -> Result<Vec<SegmentStatus>> {
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

/// Give the free pages inside a database file that no process has open back to the file
/// system: `(bytes before, bytes after)`. See [`Store::compact`].
pub fn compact(path: impl AsRef<Path>) -> Result<(u64, u64)> {
    Ok(Store::compact(path)?)
}

/// A handle on one namespace of a database, with the typed API over the kinds.
#[derive(Clone, Debug)]
pub struct Ns {
    db: Db,
    ns: Namespace,
}

/// How often a read-modify-write is retried when the record changes underneath it.
const UPDATE_ATTEMPTS: u32 = 16;

impl Ns {
    /// The namespace.
    pub fn name(&self) -> &Namespace {
        &self.ns
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Start a new record of any kind; finish with [`RecordBuilder::insert`].
    pub fn record(&self, body: impl Into<Body>) -> RecordBuilder {
        RecordBuilder { ns: self.clone(), record: NewRecord::new(self.ns.clone(), body), vector: None }
    }

    /// Insert a record with defaults; returns its id.
    pub fn add(&self, body: impl Into<Body>) -> Result<RecordId> {
        self.record(body).insert()
    }

    fn one(&self, op: WriteOp) -> Result<Outcome> {
        let receipt = self.db.write(vec![op])?;
        receipt
            .outcomes
            .into_iter()
            .next()
            .ok_or_else(|| crate::error::invalid("the writer returned no outcome"))
    }

    /// Insert a fully described record (embedding its text in the same commit). A task's
    /// dependencies must be tasks valid now and close no cycle (an [`Error::Rule`]).
    pub fn insert(&self, mut record: NewRecord) -> Result<Outcome> {
        record.namespace = self.ns.clone();
        self.check_rules(&record)?;
        // Find-or-create: when a live record holds the identity, return it without embedding
        // a text that will not be written (a race with another writer is retried below).
        let key =
            record.envelope.key.as_ref().map(|k| k.to_string()).or_else(|| record.body.default_identity());
        let find = record.on_conflict == OnConflict::ReturnExisting && key.is_some();
        for _ in 0..2 {
            if find
                && let Some(k) = &key
                && let Some(id) = self.db.snapshot()?.identity(&self.ns, record.body.kind(), k)?
            {
                return Ok(Outcome::Existing { id });
            }
            let embed = self.db.embed_ops(&self.ns, &[(record.id, record.body.text())])?;
            match self.first(vec![WriteOp::Insert(record.clone())], embed) {
                // Another writer created the holder between the check and the write: the
                // vector of the unwritten record was refused; look again.
                Err(Error::Storage(mnemon_storage::Error::NotFound { id, .. }))
                    if find && id == record.id => {}
                other => return other,
            }
        }
        Err(Error::Contended { id: record.id, attempts: 2 })
    }

    /// Write `ops` then `embed` (vectors and cache rows) as one job; the first outcome.
    fn first(&self, mut ops: Vec<WriteOp>, embed: Vec<WriteOp>) -> Result<Outcome> {
        ops.extend(embed);
        let receipt = self.db.write(ops)?;
        receipt
            .outcomes
            .into_iter()
            .next()
            .ok_or_else(|| crate::error::invalid("the writer returned no outcome"))
    }

    /// The domain rules a new record obeys (see `rules.rs`): its size, a task's dependencies.
    fn check_rules(&self, record: &NewRecord) -> Result<()> {
        crate::rules::record_size(record, self.db.max_record_bytes)?;
        if let mnemon_storage::Body::Task(t) = &record.body
            && !t.dependencies.is_empty()
        {
            crate::rules::task_dependencies(record.id, &t.dependencies, &self.task_graph()?)?;
        }
        Ok(())
    }

    /// Every task valid now and the tasks it depends on.
    pub(crate) fn task_graph(&self) -> Result<std::collections::BTreeMap<RecordId, Vec<RecordId>>> {
        Ok(self
            .list_of::<mnemon_storage::body::Task>(AsOf::now())?
            .into_iter()
            .filter_map(|r| match r.body {
                mnemon_storage::Body::Task(t) => Some((r.id, t.dependencies)),
                _ => None,
            })
            .collect())
    }

    /// A record id given in full, or as a unique tail (what [`RecordId::short`] prints) or
    /// head of at least 6 hex digits, in this namespace. Anything else, or digits several ids
    /// start or end with, is an input error; digits no id has is [`Error::NoSuchId`].
    pub fn resolve_id(&self, s: &str) -> Result<RecordId> {
        if let Ok(id) = RecordId::parse(s) {
            return Ok(id);
        }
        check_id_form(s)?;
        let hex: String = s.chars().filter(|c| *c != '-').collect();
        // Its end (what tables show) or its start (what a full id begins with): an id matching
        // either way counts, so a short id means one record or is refused as ambiguous.
        let snap = self.db.snapshot()?;
        let mut found = snap.ids_with_suffix(&self.ns, &hex)?;
        found.extend(snap.ids_with_prefix(&self.ns, &hex)?);
        found.sort();
        found.dedup();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(Error::NoSuchId { namespace: self.ns.as_str().to_string(), tail: s.to_string() }),
            many => Err(crate::error::invalid(format!(
                "{} records have an id starting or ending with {s}: {}",
                many.len(),
                many.iter().take(5).map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// The record as valid now.
    pub fn get(&self, id: RecordId) -> Result<Option<Record>> {
        self.get_as_of(id, AsOf::now())
    }

    /// The record as valid at `as_of`.
    pub fn get_as_of(&self, id: RecordId, as_of: impl Into<AsOf>) -> Result<Option<Record>> {
        Ok(self.db.snapshot()?.get(&self.ns, id, as_of.into())?)
    }

    /// The latest revision, whatever its validity.
    pub fn latest(&self, id: RecordId) -> Result<Option<Record>> {
        Ok(self.db.snapshot()?.latest(&self.ns, id)?)
    }

    /// Records matching the query, newest first.
    pub fn list(&self, query: &ListQuery) -> Result<Vec<Record>> {
        Ok(self.db.snapshot()?.list(&self.ns, query)?)
    }

    /// [`Ns::list`], also saying which index answered.
    pub fn list_explain(&self, query: &ListQuery) -> Result<(Vec<Record>, crate::ListPath)> {
        Ok(self.db.snapshot()?.list_explain(&self.ns, query)?)
    }

    /// Records of one kind valid at `as_of`; read their bodies with [`Record::body_as`].
    pub fn list_of<T: KindBody>(&self, as_of: impl Into<AsOf>) -> Result<Vec<Record>> {
        self.list(&ListQuery::new().kinds([T::KIND]).as_of(as_of))
    }

    /// Read-modify-write: apply `f` to the latest revision and write the result as a new
    /// revision, retrying if another writer got there first.
    pub fn update(&self, id: RecordId, mut f: impl FnMut(&mut Record) -> Result<()>) -> Result<Outcome> {
        for _ in 0..UPDATE_ATTEMPTS {
            let latest = self
                .db
                .snapshot()?
                .latest(&self.ns, id)?
                .ok_or_else(|| mnemon_storage::Error::NotFound { namespace: self.ns.clone(), id })?;
            let mut next = latest.clone();
            f(&mut next)?;
            let revise = Revise {
                namespace: self.ns.clone(),
                id,
                expected_rev: Some(latest.rev),
                body: Some(next.body),
                envelope: Some(next.envelope),
                valid_from: (next.valid_from != latest.valid_from).then_some(next.valid_from),
                valid_until: (next.valid_until != latest.valid_until).then_some(next.valid_until),
                expires_at: (next.expires_at != latest.expires_at).then_some(next.expires_at),
            };
            let text = revise.body.as_ref().map(Body::text).unwrap_or_default();
            let embed = if text != latest.body.text() {
                self.db.embed_ops(&self.ns, &[(id, text)])?
            } else {
                Vec::new()
            };
            match self.first(vec![WriteOp::Revise(revise)], embed) {
                Err(Error::Storage(mnemon_storage::Error::RevisionConflict { .. })) => continue,
                other => return other,
            }
        }
        Err(Error::Contended { id, attempts: UPDATE_ATTEMPTS })
    }

    /// Revise with a JSON merge patch over the loose form of the record (body fields and
    /// `tags`, `importance`, `confidence`, `source`, `task`, `key`, `metadata`, `valid_from`,
    /// `valid_until`, `expires_at`).
    pub fn revise_json(&self, id: RecordId, patch: &Value) -> Result<Outcome> {
        if !patch.is_object() {
            return Err(crate::error::invalid("the revision must be a JSON object"));
        }
        self.update(id, |rec| {
            let mut loose = loose_form(rec);
            json::merge_patch(&mut loose, &json::canonical_patch(rec.kind(), &rec.body.to_json(), patch));
            let parsed = json::parse_input(loose, Some(rec.kind()), &self.ns)?;
            let n = parsed.record;
            crate::rules::record_size(&n, self.db.max_record_bytes)?;
            rec.body = n.body;
            rec.envelope = n.envelope;
            if let Some(f) = n.valid_from {
                rec.valid_from = f;
            }
            rec.valid_until = n.valid_until;
            rec.expires_at = match n.expiry {
                Expiry::At(t) => Some(t),
                _ => None,
            };
            Ok(())
        })
    }

    /// Close the record's valid interval at `at` (default now).
    pub fn retire(&self, id: RecordId, at: Option<Timestamp>) -> Result<Outcome> {
        self.one(WriteOp::Retire { namespace: self.ns.clone(), id, at })
    }

    /// Set the record's expiry to `at` (default now).
    pub fn expire(&self, id: RecordId, at: Option<Timestamp>) -> Result<Outcome> {
        self.one(WriteOp::Expire { namespace: self.ns.clone(), id, at })
    }

    /// Replace `old` by a new record with `body`, from now; returns the new id.
    pub fn supersede(&self, old: RecordId, body: impl Into<Body>) -> Result<RecordId> {
        self.supersede_with(old, NewRecord::new(self.ns.clone(), body))
    }

    /// Replace `old` by `new` (from `new.valid_from`, default now); returns the new id.
    pub fn supersede_with(&self, old: RecordId, mut new: NewRecord) -> Result<RecordId> {
        new.namespace = self.ns.clone();
        let prev = self
            .latest(old)?
            .ok_or_else(|| mnemon_storage::Error::NotFound { namespace: self.ns.clone(), id: old })?;
        crate::rules::carry_over(&prev, &mut new);
        self.check_rules(&new)?;
        let embed = self.db.embed_ops(&self.ns, &[(new.id, new.body.text())])?;
        self.first(vec![WriteOp::Supersede { old, new }], embed).map(|o| o.id())
    }

    /// Erase every revision of the record; returns how many there were.
    pub fn forget(&self, id: RecordId) -> Result<u32> {
        match self.one(WriteOp::Forget { namespace: self.ns.clone(), id })? {
            Outcome::Forgotten { revisions, .. } => Ok(revisions),
            _ => Ok(0),
        }
    }

    /// Every revision of the record, oldest first.
    pub fn history(&self, id: RecordId) -> Result<Vec<Record>> {
        Ok(self.db.snapshot()?.history(&self.ns, id)?)
    }

    /// Attach an embedding vector to a record in vector space `space` (see
    /// [`WriteOp::PutVector`]): validated, normalised, serving its latest revision.
    pub fn put_vector(&self, id: RecordId, space: &str, vector: Vec<f32>) -> Result<Outcome> {
        let op = WriteOp::PutVector { namespace: self.ns.clone(), id, space: space.to_string(), vector };
        let r = self.db.write(vec![op])?;
        r.outcomes.into_iter().next().ok_or_else(|| {
            Error::Storage(mnemon_storage::Error::Inconsistent {
                namespace: self.ns.as_str().into(),
                detail: "a write returned no outcome".into(),
            })
        })
    }

    /// The records nearest to `vector` in space `space`; refine, then [`VectorSearch::run`].
    pub fn vector_search<'a>(&'a self, space: &'a str, vector: &'a [f32], k: usize) -> VectorSearch<'a> {
        VectorSearch { ns: self, query: Query::new(space, &self.ns, vector, k) }
    }

    /// The supersession chain through the record, oldest first.
    pub fn chain(&self, id: RecordId) -> Result<Vec<Record>> {
        Ok(self.db.snapshot()?.chain(&self.ns, id)?)
    }
}

/// The loose JSON form of a record: body fields with the envelope fields beside them.
pub fn loose_form(r: &Record) -> Value {
    let mut obj = match r.body.to_json() {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    let env = &r.envelope;
    let mut put = |k: &str, v: Value| {
        if !(r.kind() == mnemon_storage::Kind::Preference && k == "key"
            || r.kind() == mnemon_storage::Kind::Metrics && k == "task")
        {
            obj.insert(k.to_string(), v);
        }
    };
    put("tags", serde_json::json!(env.tags));
    put("importance", serde_json::json!(env.importance));
    put("confidence", serde_json::json!(env.confidence));
    put("source", serde_json::json!(env.source));
    put("task", serde_json::json!(env.task));
    put("key", serde_json::json!(env.key));
    put("metadata", env.metadata.value());
    put("valid_from", serde_json::json!(r.valid_from));
    put("valid_until", serde_json::json!(r.valid_until));
    put("expires_at", serde_json::json!(r.expires_at));
    Value::Object(obj)
}

/// A new record being described; see [`Ns::record`].
#[derive(Clone, Debug)]
pub struct RecordBuilder {
    ns: Ns,
    record: NewRecord,
    vector: Option<(String, Vec<f32>)>,
}

impl RecordBuilder {
    /// Add a tag.
    pub fn tag(mut self, tag: impl Into<Text>) -> Self {
        self.record.envelope.tags.push(tag.into());
        self
    }

    /// Set the importance (1..=5); it also sets the default expiry.
    pub fn importance(mut self, i: u8) -> Self {
        self.record.envelope.importance = Some(i);
        self
    }

    /// Set the confidence (0..=1).
    pub fn confidence(mut self, c: f32) -> Self {
        self.record.envelope.confidence = Some(c);
        self
    }

    /// Set the source agent.
    pub fn source(mut self, s: impl Into<Text>) -> Self {
        self.record.envelope.source = Some(s.into());
        self
    }

    /// Set the task.
    pub fn task(mut self, t: impl Into<Text>) -> Self {
        self.record.envelope.task = Some(t.into());
        self
    }

    /// Declare an identity key.
    pub fn key(mut self, k: impl Into<Text>) -> Self {
        self.record.envelope.key = Some(k.into());
        self
    }

    /// Attach free JSON metadata.
    pub fn metadata(mut self, m: Value) -> Self {
        self.record.envelope.metadata = m.into();
        self
    }

    /// Replace all shared fields.
    pub fn envelope(mut self, e: Envelope) -> Self {
        self.record.envelope = e;
        self
    }

    /// Valid from `t` (default: now).
    pub fn valid_from(mut self, t: Timestamp) -> Self {
        self.record.valid_from = Some(t);
        self
    }

    /// Valid until `t` (default: open).
    pub fn valid_until(mut self, t: Timestamp) -> Self {
        self.record.valid_until = Some(t);
        self
    }

    /// Expire at `t`.
    pub fn expires_at(mut self, t: Timestamp) -> Self {
        self.record.expiry = Expiry::At(t);
        self
    }

    /// Never expire, whatever the importance.
    pub fn permanent(mut self) -> Self {
        self.record.expiry = Expiry::Never;
        self
    }

    /// What to do when a live record already holds the identity key.
    pub fn on_conflict(mut self, c: OnConflict) -> Self {
        self.record.on_conflict = c;
        self
    }

    /// Use this id instead of a fresh one.
    pub fn id(mut self, id: RecordId) -> Self {
        self.record.id = id;
        self
    }

    /// The record as described so far.
    pub fn build(self) -> NewRecord {
        self.record
    }

    /// Store this embedding with the record, in the same commit.
    pub fn vector(mut self, space: impl Into<String>, vector: Vec<f32>) -> Self {
        self.vector = Some((space.into(), vector));
        self
    }

    /// Insert it; returns its id (or the existing record's, under [`OnConflict::ReturnExisting`]).
    pub fn insert(self) -> Result<RecordId> {
        let ns = self.ns.clone();
        match self.vector {
            None => ns.insert(self.record).map(|o| o.id()),
            Some((space, vector)) => {
                let id = self.record.id;
                let put = WriteOp::PutVector { namespace: ns.ns.clone(), id, space, vector };
                let r = ns.db.write(vec![WriteOp::Insert(self.record), put])?;
                Ok(r.outcomes.first().map_or(id, Outcome::id))
            }
        }
    }
}

/// A vector search being described; see [`Ns::vector_search`].
#[derive(Clone, Debug)]
pub struct VectorSearch<'a> {
    ns: &'a Ns,
    query: Query<'a>,
}

impl VectorSearch<'_> {
    /// As valid at, and known at, this time (default: now).
    pub fn as_of(mut self, as_of: impl Into<AsOf>) -> Self {
        self.query.filter.as_of = as_of.into();
        self
    }

    /// Only these kinds.
    pub fn kinds(mut self, kinds: impl IntoIterator<Item = mnemon_storage::Kind>) -> Self {
        self.query.filter.kinds = kinds.into_iter().collect();
        self
    }

    /// Only records carrying this tag (repeat for all of several).
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.query.filter.tags.push(tag.into());
        self
    }

    /// Exact, graph, or planned (default).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.query.mode = mode;
        self
    }

    /// Candidates examined in the graph.
    pub fn ef(mut self, ef: usize) -> Self {
        self.query.ef = Some(ef);
        self
    }

    /// Run it.
    pub fn run(self) -> Result<Found> {
        let snap = self.ns.db.snapshot()?;
        Ok(self.ns.db.index.search(&snap, &self.query)?)
    }
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
type Pending = (Namespace, RecordId, String);

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
