//! The store handle: opening, the group-commit writer, snapshots.
//!
//! # Writes and durability
//!
//! A caller queues its job (a batch of operations) and blocks until the job's commit has
//! finished. Whoever finds no commit under way becomes the committer: it takes every job
//! waiting in the queue, and the jobs that arrive while it applies them, and commits them
//! together in one redb transaction, on its own thread; then it hands the turn to the next
//! waiting caller, posts the results and wakes their callers as a tree (see `Wakeups`), so
//! that the last of many callers is not kept waiting behind the others' wake-ups. With many
//! threads writing, one fsync acknowledges many jobs (group commit), so durable throughput
//! grows with concurrency instead of being capped at one fsync per write; a lone writer
//! commits on its own thread, with no hand-off to another thread and back.
//!
//! A job is atomic: all its operations are applied, or, if any is invalid, none (the other
//! jobs of the same commit are unaffected). A job acknowledged with [`Durability::Immediate`]
//! (the default) has been fsync'ed: it survives a process crash and, on a disk that honours
//! fsync, a power loss. [`Durability::Eventual`] jobs (for bulk imports) are committed and
//! visible at once but reach the disk only with the next immediate commit or a clean close;
//! a crash may lose them, but never a part of one, and never an earlier immediate commit.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, RwLock};

use redb::{Database, ReadableDatabase};

use crate::damage::Damage;
use crate::error::{Error, OpenError};
use crate::format::upgrade::upgrade_tables;
use crate::format::{self, REDB_MAGIC};
use crate::read::Snapshot;
use crate::tables;
use crate::time::{Clock, SystemClock, Timestamp};
use crate::write::{Outcome, WriteOp};

mod commit;
mod signal;
mod stats;
mod writer;

pub use signal::{Commits, POLL as COMMIT_POLL};

use commit::*;
pub use stats::{CommitStats, Histogram};
use writer::*;

/// How durable an acknowledged job is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// fsync'ed before the call returns.
    #[default]
    Immediate,
    /// Visible at once, on disk with the next immediate commit or a clean close (bulk imports).
    Eventual,
}

/// Options for opening a store.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Create the file if it does not exist.
    pub create: bool,
    /// Where transaction times come from.
    pub clock: Arc<dyn Clock>,
    /// The smallest number of events between timeline checkpoints.
    pub min_checkpoint_gap: u64,
    /// redb's page cache, in bytes.
    pub cache_size: usize,
    /// The most jobs one group commit carries.
    pub max_jobs_per_commit: usize,
    /// Open for reading only: any number of read-only handles, in this and other processes,
    /// share the file (a writer excludes them). Writes fail with [`Error::ReadOnly`]. A file
    /// that needs crash recovery is opened for writing once to recover it.
    pub read_only: bool,
    /// How long the writer may wait for more jobs before a commit, when the previous commit
    /// showed concurrent writers (it carried several jobs). A lone writer never waits.
    pub group_commit_window: std::time::Duration,
    /// Share the file with other processes that also open it shared (redb's multi-writer
    /// mode): any number of them read and write, one write transaction at a time across all
    /// of them. Every commit is then durable and two-phase ([`Durability::Eventual`] jobs are
    /// committed as immediate ones: redb keeps no non-durable commit that other processes
    /// could not see). A process that opens the file exclusively (the default) excludes
    /// every other process, and is excluded by a shared one.
    pub shared: bool,
    /// Write zeros ahead of the data into the file's never-written space (holes; Linux, not
    /// with `shared`), so that durable commits write over allocated blocks: the file system then
    /// has no blocks to allocate and no journal to commit in their fsync (commits of 16
    /// records 10 % faster on ext4). The file takes up to 8 MiB more disk than its data.
    pub zero_fill: bool,
    /// Watches (and may fail) every read, write, growth and sync of the file under redb, for
    /// fault-injection and power-loss tests; `None` in normal use.
    pub io_hook: Option<Arc<dyn crate::backend::IoHook>>,
    /// How durable [`Store::write`]'s jobs are (default [`Durability::Immediate`]): a handle
    /// for bulk loading may acknowledge [`Durability::Eventual`] ones, made durable by
    /// [`Store::sync`] or the next immediate commit.
    pub durability: Durability,
    /// A writable open first verifies a file of at most this many bytes: the checksum of
    /// every page of its committed trees (which redb checks only in its integrity check, not
    /// on each read or before a write copies a page), and its allocator state rebuilt from
    /// them, so that no write builds on damage that no read has met (a write copies the pages
    /// on its path, and would give a damaged one a fresh checksum). A damaged file opens for
    /// reading with its writes refused (see [`Store::damage`]). About 0.3 ms per MiB of
    /// revisions from the page cache (docs/reliability.md); `0` verifies nothing, `u64::MAX`
    /// every file.
    pub verify_up_to: u64,
}

/// [`StoreOptions::verify_up_to`]'s default: 128 MiB (a file of 128 MiB was verified in 37 ms,
/// where its open took 0.8 ms: docs/reliability.md).
pub const VERIFY_UP_TO: u64 = 128 * 1024 * 1024;

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            create: false,
            clock: Arc::new(SystemClock),
            min_checkpoint_gap: 512,
            cache_size: 256 * 1024 * 1024,
            max_jobs_per_commit: 4096,
            read_only: false,
            group_commit_window: std::time::Duration::from_micros(250),
            shared: false,
            zero_fill: true,
            io_hook: None,
            durability: Durability::Immediate,
            verify_up_to: VERIFY_UP_TO,
        }
    }
}

/// What a committed job returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Receipt {
    /// The job's transaction time: when its revisions were recorded. Jobs that join a commit
    /// while it is being built are recorded later than the jobs it started with; all of them
    /// become visible together, at `commit_seq`.
    pub tx: Timestamp,
    /// The commit's sequence number.
    pub commit_seq: u64,
    /// One outcome per operation, in order.
    pub outcomes: Vec<Outcome>,
}

/// The open redb handle: writable (with its group-commit queue) or read-only.
enum Handle {
    Writable(Arc<Writer>),
    ReadOnly(redb::ReadOnlyDatabase),
}

struct Inner {
    db: Handle,
    path: PathBuf,
    clock: Arc<dyn Clock>,
    /// The file's format version when opened: [`format::FORMAT_VERSION`], except on a
    /// read-only handle on an older file (only a writer upgrades). A writer in another process
    /// can upgrade a shared file under such a handle: its snapshots read the version again
    /// (format 11 changed the lexical index's terms), and otherwise reading the file as the
    /// older format is still right (format 7 only changed `mnemon.ended`, which older files
    /// are not read through), just slower.
    format: u32,
    /// The first damage a read through this handle met: writes are refused from then on.
    damage: Damage,
    /// How durable [`Store::write`]'s jobs are.
    durability: Durability,
    /// The commits announced to watchers (see [`Store::commits`]).
    commits: Arc<Commits>,
    /// Whether other processes may commit to the file (shared, or this handle read-only).
    others_commit: bool,
}

/// A handle on an open mnemon database. Cheap to clone, `Send + Sync`: any number of threads
/// read concurrently (each snapshot is isolated), and writes are group-committed by one writer.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.inner.path).finish()
    }
}

/// [`open_error`] for an operation that must have the file to itself.
fn exclusive_open_error(path: &Path, e: redb::DatabaseError, operation: &'static str) -> OpenError {
    match open_error(path, e) {
        OpenError::InUse { path } => OpenError::NeedsExclusive { path, operation },
        other => other,
    }
}

/// An error from opening `path`, with the path, and named for what it is when the file is
/// damaged (cut short, or with pages redb finds inconsistent).
fn open_failure(path: &Path, e: Error) -> Error {
    let source = match &e {
        Error::Database { source, .. } | Error::Open(OpenError::Database { source, .. }) => source,
        _ => return e.with_path(path),
    };
    let reason = match &**source {
        redb::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "it ends before the data its header points to (cut short, as by an interrupted copy?)".to_string()
        }
        redb::Error::Corrupted(why) => why.clone(),
        _ => return e.with_path(path),
    };
    OpenError::Damaged { path: path.to_path_buf(), reason }.into()
}

fn open_error(path: &Path, e: redb::DatabaseError) -> OpenError {
    match e {
        redb::DatabaseError::DatabaseAlreadyOpen => OpenError::InUse { path: path.to_path_buf() },
        other => OpenError::Database { path: path.to_path_buf(), source: Box::new(other.into()) },
    }
}

/// Refuse anything that is not a redb file before redb touches it.
fn probe_file(path: &Path) -> Result<bool, OpenError> {
    let io = |e: std::io::Error| OpenError::Io { path: path.to_path_buf(), source: e };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io(e)),
    };
    if !meta.is_file() {
        return Err(OpenError::NotMnemon {
            path: path.to_path_buf(),
            reason: "it is not a regular file".into(),
        });
    }
    let mut head = [0u8; 9];
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut got = 0;
    while got < head.len() {
        match f.read(head.get_mut(got..).unwrap_or_default()).map_err(io)? {
            0 => break,
            n => got += n,
        }
    }
    if got == 0 {
        return Err(OpenError::NotMnemon { path: path.to_path_buf(), reason: "the file is empty".into() });
    }
    if got < head.len() || head != REDB_MAGIC {
        return Err(OpenError::NotMnemon {
            path: path.to_path_buf(),
            reason: "it is not a redb database file".into(),
        });
    }
    Ok(true)
}

impl Inner {
    fn snapshot(&self) -> Result<Snapshot, Error> {
        let txn = match &self.db {
            Handle::Writable(w) => w.database()?.begin_read(),
            Handle::ReadOnly(db) => db.begin_read(),
        }
        .map_err(|e| Error::from(e).with_path(&self.path))?;
        Snapshot::new(txn, &self.path, Arc::clone(&self.clock), self.format, self.damage.clone())
    }
}

impl Store {
    /// Open (or, with `options.create`, create) the database at `path`.
    pub fn open(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store, Error> {
        let path = path.as_ref();
        Store::open_at(path.to_path_buf(), options).map_err(|e| open_failure(path, e))
    }

    fn open_at(path: PathBuf, options: StoreOptions) -> Result<Store, Error> {
        let exists = probe_file(&path)?;
        let builder = redb_builder(options.cache_size, options.shared);
        let fill = options.zero_fill && !options.shared;
        if !exists && options.create && !options.read_only {
            create_file(&builder, &path, options.clock.now(), fill)?;
            return Store::open_at(path, StoreOptions { create: false, ..options });
        }
        if options.read_only {
            if !exists {
                return Err(OpenError::Missing { path }.into());
            }
            let ro = match builder.open_read_only(&path) {
                Ok(ro) => ro,
                Err(redb::DatabaseError::RepairAborted) => {
                    // Recover what a crash left behind, then read (no zeros: the caller asked
                    // to read).
                    let db = crate::backend::open(&builder, &path, false, options.io_hook.as_ref())
                        .map_err(|e| open_error(&path, e))?;
                    check_meta(&path, &db.begin_read()?)?;
                    drop(db);
                    builder.open_read_only(&path).map_err(|e| open_error(&path, e))?
                }
                Err(e) => return Err(open_error(&path, e).into()),
            };
            let format = check_meta(&path, &ro.begin_read()?)?;
            return Ok(Store {
                inner: Arc::new(Inner {
                    db: Handle::ReadOnly(ro),
                    damage: Damage::new(&path),
                    path,
                    clock: options.clock,
                    format,
                    durability: options.durability,
                    commits: Arc::default(),
                    others_commit: true,
                }),
            });
        }
        let mut db = if exists {
            // Check the metadata through a read-only handle first, so a redb file that is not
            // a mnemon database is never opened for writing.
            match builder.open_read_only(&path) {
                Ok(ro) => {
                    let txn = ro.begin_read()?;
                    check_meta(&path, &txn)?;
                    drop(txn);
                    drop(ro);
                    crate::backend::open(&builder, &path, fill, options.io_hook.as_ref())
                        .map_err(|e| open_error(&path, e))?
                }
                // It needs the recovery a crash leaves behind: only a writer can repair.
                Err(redb::DatabaseError::RepairAborted) => {
                    crate::backend::open(&builder, &path, fill, options.io_hook.as_ref())
                        .map_err(|e| open_error(&path, e))?
                }
                Err(e) => return Err(open_error(&path, e).into()),
            }
        } else {
            return Err(OpenError::Missing { path }.into());
        };
        let damage = Damage::new(&path);
        let damaged = verify(&mut db, &path, options.verify_up_to)?;
        let version = check_meta(&path, &db.begin_read()?)?;
        let format = match &damaged {
            // Nothing is written to a damaged file, not even its upgrade: it is read as it is.
            Some(reason) => {
                damage.note(reason);
                version
            }
            None => {
                upgrade_tables(&db, version).map_err(|e| e.with_path(&path))?;
                format::FORMAT_VERSION
            }
        };
        let commits = Arc::<Commits>::default();
        let writer = Writer {
            commits: Arc::clone(&commits),
            db: RwLock::new(Some(Arc::new(db))),
            cache_size: options.cache_size,
            acknowledged: AtomicU64::new(0),
            broken: std::sync::OnceLock::new(),
            clock: Arc::clone(&options.clock),
            path: path.clone(),
            min_gap: options.min_checkpoint_gap,
            shared: options.shared,
            fill,
            io_hook: options.io_hook.clone(),
            max_jobs: options.max_jobs_per_commit.max(1),
            window: options.group_commit_window,
            state: Mutex::new(Queue::default()),
            queued: Condvar::new(),
            stats: stats::CommitCounters::default(),
        };
        Ok(Store {
            inner: Arc::new(Inner {
                db: Handle::Writable(Arc::new(writer)),
                damage,
                path,
                clock: options.clock,
                format,
                durability: options.durability,
                commits,
                others_commit: options.shared,
            }),
        })
    }

    /// The commits of the file, announced as they happen: what a change feed waits on. This
    /// handle's commits are announced at once; while the handle lives, other processes'
    /// commits to a shared file (or the writer's, under a read-only handle) are looked for
    /// every [`COMMIT_POLL`] from the first call on.
    pub fn commits(&self) -> Result<Arc<Commits>, Error> {
        let commits = Arc::clone(&self.inner.commits);
        commits.announce(self.snapshot()?.meta().commit_seq);
        if self.inner.others_commit {
            commits.poll_file(Arc::downgrade(&self.inner), |inner: &Inner| {
                inner.snapshot().ok().map(|s| s.meta().commit_seq)
            });
        }
        Ok(commits)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// What this handle's group commits have done since it opened: jobs per commit and
    /// commit times (fsync included for durable ones). Empty on a read-only handle.
    pub fn commit_stats(&self) -> CommitStats {
        match &self.inner.db {
            Handle::Writable(w) => w.stats.read(),
            Handle::ReadOnly(_) => CommitStats::default(),
        }
    }

    /// The first damage a read through this handle (or a clone of it) met, if any: a value
    /// failing its checksum, an index disagreeing with the revisions, a page redb found
    /// corrupted, or one reported with [`Store::note_damage`]; else the reason given by the
    /// file's damage mark ([`Store::damage_mark`]), which the first damage a handle meets
    /// writes. Writes are refused while there is one ([`Error::DamageFound`]), through every
    /// handle on the file, in every process, so that nothing builds on a damaged file; once
    /// the file is restored, or checks clean, [`Store::clear_damage_mark`] (what `mnemon
    /// check` does when it finds nothing) lets fresh handles write again.
    pub fn damage(&self) -> Option<String> {
        self.inner.damage.reason()
    }

    /// Record damage met outside the storage's own reads (a dependency's panic on a damaged
    /// page, caught above): writes are refused from then on, and the file is marked.
    pub fn note_damage(&self, reason: &str) {
        self.inner.damage.note(reason);
    }

    /// Where the damage mark of the database file at `path` lies: `FILE.damaged` beside it.
    pub fn damage_mark(path: impl AsRef<Path>) -> PathBuf {
        crate::damage::mark_path(path.as_ref())
    }

    /// Mark the database file at `path` damaged, for `reason` (what `mnemon check` does when it
    /// finds damage): every handle on it refuses writes until the mark is cleared.
    pub fn mark_damaged(path: impl AsRef<Path>, reason: &str) -> Result<(), Error> {
        let mark = crate::damage::mark_path(path.as_ref());
        crate::damage::write_mark(&mark, reason).map_err(|e| OpenError::Io { path: mark, source: e }.into())
    }

    /// Remove the damage mark of the database file at `path`, once it checks clean or was
    /// restored; `Ok(true)` if there was one.
    pub fn clear_damage_mark(path: impl AsRef<Path>) -> Result<bool, Error> {
        let mark = crate::damage::mark_path(path.as_ref());
        match std::fs::remove_file(&mark) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(OpenError::Io { path: mark, source: e }.into()),
        }
    }

    fn refuse_if_damaged(&self) -> Result<(), Error> {
        match self.damage() {
            Some(reason) => Err(Error::DamageFound { path: self.inner.path.clone(), reason }),
            None => Ok(()),
        }
    }

    /// The clock the store uses.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// A consistent read-only view at the latest commit.
    pub fn snapshot(&self) -> Result<Snapshot, Error> {
        self.inner.snapshot()
    }

    /// Commit a batch of operations atomically, as durably as the store was opened
    /// ([`StoreOptions::durability`]; immediate, fsync'ed, by default).
    ///
    /// When the commit fails on an I/O error (a full disk), the batch gets
    /// [`Error::CommitFailed`] with the cause and nothing of it was written; the store opens
    /// the file again at once, so later writes go through once there is room. Should the
    /// file not open again, the batch gets [`Error::CommitUncertain`] (it may have reached the
    /// file first) and the next write tries again. Should it open without commits this handle
    /// acknowledged (non-durable ones, lost as in a crash), every later use fails with
    /// [`Error::Closed`].
    pub fn write(&self, ops: Vec<WriteOp>) -> Result<Receipt, Error> {
        self.write_with(ops, self.inner.durability)
    }

    /// Copy the database file, as of a commit, to `dest` (created or replaced): a snapshot that
    /// another process or machine can open as it is (a cluster's new node starts from one).
    /// Every commit before the call is made durable first, then the file is copied and the
    /// copy synced; a copy during which anything committed (this process's writers, or
    /// another's on a shared file) is taken again, up to five times. Returns the commit the
    /// copy holds (`commit_seq`).
    pub fn copy_to(&self, dest: &Path) -> Result<u64, Error> {
        let fail = |reason: String| Error::Copy { path: dest.to_path_buf(), reason };
        for _ in 0..5 {
            self.sync()?;
            let before = self.snapshot()?.meta().commit_seq;
            std::fs::copy(&self.inner.path, dest).map_err(|e| fail(e.to_string()))?;
            std::fs::File::open(dest).and_then(|f| f.sync_all()).map_err(|e| fail(e.to_string()))?;
            if self.snapshot()?.meta().commit_seq == before {
                return Ok(before);
            }
        }
        Err(fail("every copy was torn by a commit; the database is too busy".into()))
    }

    /// The durability of [`Store::write`] ([`StoreOptions::durability`]).
    pub fn durability(&self) -> Durability {
        self.inner.durability
    }

    /// Commit a batch with the given durability.
    pub fn write_with(&self, ops: Vec<WriteOp>, durability: Durability) -> Result<Receipt, Error> {
        let Handle::Writable(w) = &self.inner.db else {
            return Err(Error::ReadOnly { path: self.inner.path.clone() });
        };
        self.refuse_if_damaged()?;
        w.submit(vec![(ops, durability)]).pop().unwrap_or_else(|| {
            Err(Error::CommitFailed { path: self.inner.path.clone(), reason: "no result".into() })
        })
    }

    /// Submit many jobs at once and wait for all of them. They are group-committed (a job is
    /// still atomic on its own: one failing job does not affect the others).
    pub fn write_many(&self, jobs: Vec<Vec<WriteOp>>, durability: Durability) -> Vec<Result<Receipt, Error>> {
        let Handle::Writable(w) = &self.inner.db else {
            return jobs.iter().map(|_| Err(Error::ReadOnly { path: self.inner.path.clone() })).collect();
        };
        if let Err(e) = self.refuse_if_damaged() {
            return jobs.iter().map(|_| Err(e.clone_reason(&self.inner.path))).collect();
        }
        w.submit(jobs.into_iter().map(|ops| (ops, durability)).collect())
    }

    /// Commit jobs at transaction time `at`, as a replica applies a replicated log's entry:
    /// each job is planned at `at` (its new revisions are recorded at `at`, defaults such as
    /// `valid_from` and the expiry of scoped memory count from it) instead of at the store
    /// clock's time, so that every replica applying the same entries in the same order records
    /// the same history. A job fails with [`Error::TimeOrder`] unless `at` comes after every
    /// revision recorded before it (commits that record no revision, such as auxiliary rows,
    /// do not count). The jobs are committed as [`Store::write_many`] commits them.
    ///
    /// ```
    /// use mnemon_storage::body::Decision;
    /// use mnemon_storage::*;
    ///
    /// # fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("db.mnemon"), StoreOptions { create: true, ..Default::default() })?;
    /// let ns = Namespace::new("default")?;
    /// let decision = |title: &str| Decision { title: title.into(), ..Default::default() };
    /// let at = Timestamp::parse("2026-01-02T03:04:05Z")?;
    /// let op = WriteOp::Insert(NewRecord::new(ns.clone(), decision("replicated")));
    /// let receipt = store.write_at(vec![vec![op]], at, Durability::Eventual).remove(0)?;
    /// assert_eq!(receipt.tx, at);
    /// let id = receipt.outcomes[0].id();
    /// assert_eq!(store.snapshot()?.get(&ns, id, AsOf::now())?.map(|r| r.recorded_at), Some(at));
    /// // The past cannot be written again.
    /// let late = WriteOp::Insert(NewRecord::new(ns, decision("late")));
    /// let refused = store.write_at(vec![vec![late]], at, Durability::Eventual).remove(0);
    /// assert!(matches!(refused, Err(Error::TimeOrder { .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn write_at(
        &self,
        jobs: Vec<Vec<WriteOp>>,
        at: Timestamp,
        durability: Durability,
    ) -> Vec<Result<Receipt, Error>> {
        let Handle::Writable(w) = &self.inner.db else {
            return jobs.iter().map(|_| Err(Error::ReadOnly { path: self.inner.path.clone() })).collect();
        };
        if let Err(e) = self.refuse_if_damaged() {
            return jobs.iter().map(|_| Err(e.clone_reason(&self.inner.path))).collect();
        }
        w.submit_at(jobs.into_iter().map(|ops| (ops, durability)).collect(), Some(at))
    }

    /// Make every earlier commit durable (an empty immediate commit).
    pub fn sync(&self) -> Result<(), Error> {
        self.write_with(Vec::new(), Durability::Immediate).map(|_| ())
    }

    /// Give the free pages inside a database file that no process has open back to the file
    /// system, and return its size before and after, in bytes. A copy-on-write B-tree keeps
    /// the pages a commit replaced for reuse rather than shrinking the file, so a file that
    /// took a large import or many large commits can hold much more free space than data.
    /// Crash-safe (redb compacts in transactions); the format version is left as it is.
    /// Refuses a file that is not a mnemon database or has a newer format, and one that
    /// another process has open.
    pub fn compact(path: impl AsRef<Path>) -> Result<(u64, u64), Error> {
        let path = path.as_ref();
        if !probe_file(path)? {
            return Err(OpenError::Missing { path: path.to_path_buf() }.into());
        }
        let size = |p: &Path| {
            std::fs::metadata(p)
                .map(|m| m.len())
                .map_err(|e| OpenError::Io { path: p.to_path_buf(), source: e })
        };
        let before = size(path)?;
        let mut db = Database::open(path).map_err(|e| exclusive_open_error(path, e, "compaction"))?;
        check_meta(path, &db.begin_read().map_err(|e| Error::from(e).with_path(path))?)?;
        while db.compact().map_err(|e| Error::from(e).with_path(path))? {}
        drop(db);
        Ok((before, size(path)?))
    }

    /// Run redb's integrity check on a database file that no process has open. Returns
    /// `Ok(true)` when the file was consistent, `Ok(false)` when redb had to repair it.
    pub fn check_integrity(path: impl AsRef<Path>) -> Result<bool, Error> {
        let path = path.as_ref();
        probe_file(path)?;
        let mut db =
            Database::open(path).map_err(|e| exclusive_open_error(path, e, "the integrity check"))?;
        db.check_integrity().map_err(|e| Error::from(e).with_path(path))
    }
}

/// Verify a file opened for writing (see [`StoreOptions::verify_up_to`]) when it is at most
/// `up_to` bytes: `Some(reason)` when it is damaged. A file whose allocator state had to be
/// rebuilt (pages leaked, its record of them damaged) is repaired, not damaged: the rebuilt
/// state is the one every tree's pages, all verified, agree on.
fn verify(db: &mut Database, path: &Path, up_to: u64) -> Result<Option<String>, Error> {
    let len =
        std::fs::metadata(path).map_err(|e| OpenError::Io { path: path.to_path_buf(), source: e })?.len();
    if len > up_to {
        return Ok(None);
    }
    match db.check_integrity() {
        Ok(_) => Ok(None),
        Err(redb::DatabaseError::Storage(redb::StorageError::Corrupted(why))) => {
            Ok(Some(format!("its pages fail redb's integrity check ({why})")))
        }
        Err(e) => Err(Error::from(e).with_path(path)),
    }
}

fn check_meta(path: &Path, txn: &redb::ReadTransaction) -> Result<u32, Error> {
    match txn.open_table(tables::META) {
        Ok(t) => Ok(format::check(path, &t)?),
        Err(redb::TableError::TableDoesNotExist(_)) => Err(OpenError::NotMnemon {
            path: path.to_path_buf(),
            reason: "it is a redb file without mnemon metadata".into(),
        }
        .into()),
        Err(e) => Err(Error::from(e).with_path(path)),
    }
}

/// Create a new database at `path` so that no process ever sees it half made: build it under
/// a temporary name beside `path`, then link it into place, which fails if another process
/// created `path` meanwhile (its file is kept; ours is dropped).
fn redb_builder(cache_size: usize, shared: bool) -> redb::Builder {
    let mut builder = redb::Builder::new();
    builder.set_cache_size(cache_size);
    if shared {
        builder.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
    }
    builder
}

/// Whether redb failed in a way that leaves the open database refusing every later commit
/// (it asks to be opened again).
fn needs_reopen(e: &Error) -> bool {
    matches!(
        e,
        Error::Database { source, .. }
            if matches!(**source, redb::Error::Io(_) | redb::Error::PreviousIo | redb::Error::TransactionPoisoned)
    )
}

fn create_file(builder: &redb::Builder, path: &Path, now: Timestamp, fill: bool) -> Result<(), Error> {
    let io = |e: std::io::Error| OpenError::Io { path: path.to_path_buf(), source: e };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.creating-{}", std::process::id()));
    let built = (|| {
        let db = crate::backend::create(builder, &tmp, fill).map_err(|e| match e {
            redb::DatabaseError::Storage(redb::StorageError::Io(e)) => io(e).into(),
            other => Error::from(open_error(path, other)),
        })?;
        init_tables(&db, now).map_err(|e| e.with_path(path))?;
        drop(db);
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            // A file system without hard links: a rename (only racy against a concurrent create).
            Err(_) if !path.exists() => std::fs::rename(&tmp, path).map_err(|e| io(e).into()),
            Err(e) => Err(io(e).into()),
        }
    })();
    let _ = std::fs::remove_file(&tmp);
    built
}

fn init_tables(db: &Database, now: Timestamp) -> Result<(), Error> {
    let txn = db.begin_write()?;
    {
        let mut meta = txn.open_table(tables::META)?;
        format::init(&mut meta, now)?;
    }
    tables::create_all(&txn)?;
    txn.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_is_send_and_sync() {
        fn is<T: Send + Sync + Clone>() {}
        is::<Store>();
    }
}
