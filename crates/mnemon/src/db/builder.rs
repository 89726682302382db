//! Configuring and opening a database: `DbBuilder`.

use crate::embedding::{EmbedderRecord, Embedding, MODEL_KEY};
use crate::error::{Error, Result};
use mnemon_embed::{Embedder, HashEmbedder};
use mnemon_index::{IndexOptions, VectorIndexes};
use mnemon_storage::{Clock, Store, StoreOptions, WriteOp};
use std::path::PathBuf;
use std::sync::Arc;

use super::*;

/// Configure, then open, a database.
#[derive(Clone)]
pub struct DbBuilder {
    pub(super) path: PathBuf,
    pub(super) options: StoreOptions,
    pub(super) index: Option<IndexOptions>,
    pub(super) embedder: Option<Arc<dyn Embedder>>,
    pub(super) reembed: bool,
    pub(super) max_record_bytes: usize,
    pub(super) log: Option<Arc<dyn WriteLog>>,
    pub(super) batch_embeddings: bool,
    /// Whether embeddings are deferred (`None`: decided by the embedder).
    pub(super) defer_embeddings: Option<bool>,
    pub(super) embed_backlog: usize,
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

    /// How durable this handle's writes are when acknowledged (default
    /// [`Durability::Immediate`](crate::Durability::Immediate): fsync'ed, they survive a crash
    /// of the process or the machine). [`Durability::Eventual`](crate::Durability::Eventual)
    /// writes are visible at once and reach the disk with the next immediate commit,
    /// [`Db::sync`] or a clean close: many times faster for a bulk load from one thread, but a
    /// crash may lose the last of them (never a part of one, never an earlier durable one).
    pub fn durability(mut self, durability: crate::Durability) -> Self {
        self.options.durability = durability;
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

    /// Verify a file of at most this many bytes when it is opened for writing (default
    /// [`VERIFY_UP_TO`](mnemon_storage::VERIFY_UP_TO), 128 MiB): every page's checksum, and the
    /// allocator state rebuilt from the verified pages, so that no write builds on damage no
    /// read has met. A damaged file still opens, for reading: its writes are refused (see
    /// [`Store::damage`]). It costs about 0.3 ms per MiB once (docs/reliability.md, "Writes on a
    /// damaged file"); `0` turns it off, `u64::MAX` verifies every file.
    pub fn verify_up_to(mut self, bytes: u64) -> Self {
        self.options.verify_up_to = bytes;
        self
    }

    /// Embed concurrent writers' texts together (default off): while the embedder embeds
    /// one writer's texts, the texts of the writers that arrive queue, and the next call
    /// embeds all of them (up to as many calls at once as the machine has cores), so that the
    /// embedder is called once per group of writers rather than once per writer. It makes
    /// fewer calls, not faster writes: with 16 writers, 4 to 5 times fewer calls, at 8 % more
    /// adds/s with the local model (bound by its arithmetic per text, which a batch does not
    /// reduce) and 36 % fewer with a server answering in 20 ms, which took 16 requests at once
    /// (docs/search.md, "Embedding on write"). Worth it against a hosted API that limits
    /// requests per minute. An embedder cheaper than a cache lookup (the hashing one) is
    /// always called at once.
    pub fn batch_embeddings(mut self, yes: bool) -> Self {
        self.batch_embeddings = yes;
        self
    }

    /// Commit a written record before its vector exists, and attach the vector in the
    /// background moments later (default: yes for an embedder worth caching, a model local or
    /// remote; no for the hashing embedder, which embeds faster than a commit, and for a
    /// replica of a log). A write then takes what the commit takes rather than what the model
    /// takes (about 15 ms a text for the local model, 1 ms for a durable commit); the record
    /// is found by its words at once, by its meaning once its vector is attached, and a search
    /// waits for the vectors of its namespaces' earlier writes (at most 5 s), so a record is
    /// found by meaning right after it is written. The pending records are marked in the file:
    /// none is lost in a crash, each is embedded when the file is next opened for writing.
    /// At most [`DbBuilder::embed_backlog`] records wait; writers beyond that wait for room,
    /// so sustained writes still run at the model's pace. [`Db::embed_backlog`] reports the
    /// backlog, [`Db::wait_for_vectors`] waits for it, and dropping the last handle drains it.
    /// See docs/search.md, "Embedding on write".
    pub fn defer_embeddings(mut self, yes: bool) -> Self {
        self.defer_embeddings = Some(yes);
        self
    }

    /// The most records whose vectors may wait with deferred embeddings before writers wait
    /// for room (default [`DEFAULT_BACKLOG`](crate::DEFAULT_BACKLOG), 1,024: with the local
    /// model, a backlog of about 10 s of its work).
    pub fn embed_backlog(mut self, records: usize) -> Self {
        self.embed_backlog = records.max(1);
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

    /// Make the database a replica of a replicated log: its writes are appended to `log`,
    /// which applies them here (see [`WriteLog`]).
    pub fn write_log(mut self, log: Arc<dyn WriteLog>) -> Self {
        self.log = Some(log);
        self
    }

    /// Open it. A damaged file is an error, never a panic: a dependency's panic on a page it
    /// cannot read comes back as [`Error::Panicked`] (code `damaged`).
    pub fn open(self) -> Result<Db> {
        crate::error::guard("opening the database", || self.open_unguarded())
    }

    fn open_unguarded(self) -> Result<Db> {
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
        let embedding = Arc::new(Embedding::new(embedder, self.batch_embeddings));
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
        let defer = self.defer_embeddings.unwrap_or_else(|| embedding.embedder.worth_caching())
            && !read_only
            && self.log.is_none();
        let deferred = match defer {
            true => Some(Arc::new(Deferred::start(store.clone(), embedding.clone(), self.embed_backlog)?)),
            false => None,
        };
        Ok(Db {
            store,
            index,
            deferred,
            embedding,
            read_only,
            extensions: Arc::default(),
            max_record_bytes: self.max_record_bytes,
            log: self.log,
            router: None,
            front: false,
        })
    }
}
