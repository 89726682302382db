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

use std::collections::VecDeque;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use redb::{Database, ReadableDatabase};

use crate::damage::Damage;
use crate::error::{Error, OpenError};
use crate::format::{self, REDB_MAGIC};
use crate::read::Snapshot;
use crate::tables;
use crate::time::{Clock, SystemClock, Timestamp};
use crate::timeline::{GapHints, TimelineWriter};
use crate::upgrade::upgrade_tables;
use crate::write::{self, Change, Outcome, Planner, WriteOp, WriteTables};

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
}

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

/// One job of a caller: its operations, and where its result goes.
struct Job {
    work: Work,
    slot: Arc<Slot>,
    /// The job's place among its caller's jobs.
    index: usize,
}

/// What a job asks a commit to do: its operations, at its durability, with the fresh rows of
/// its new texts that its caller encoded before queueing it (see [`crate::lexical::prepare`]).
struct Work {
    ops: Vec<WriteOp>,
    durability: Durability,
    prepared: Vec<crate::lexical::PreparedText>,
}

/// Where a caller waits: its jobs' results arrive here, and so does the turn to commit when
/// a committer hands it over. One per call, so that posting a result wakes exactly the
/// caller it belongs to (not every waiting caller, who would then queue on one lock).
struct Slot {
    state: Mutex<SlotState>,
    ready: Condvar,
}

struct SlotState {
    results: Vec<Option<Result<Receipt, Error>>>,
    missing: usize,
    /// The caller has been handed the turn: it commits the waiting jobs next.
    turn: bool,
    /// The caller sleeps on `ready`.
    sleeping: bool,
    /// The wake-ups of the commit that completed this slot: its caller does a share of them
    /// before it returns.
    wake: Option<Arc<Wakeups>>,
}

/// The callers a commit completed, woken as a tree: the committer wakes [`Wakeups::FAN_OUT`]
/// of them, and each caller it wakes as many more before it returns, and so on. Waking a
/// sleeping thread costs the waker several microseconds (a futex call and, on a VM, an
/// interrupt to the other core, which often hands that core to the woken thread), so one
/// committer waking sixteen callers in turn would keep the last of them, and with it the next
/// commit, waiting for a good part of a commit.
struct Wakeups {
    /// Set once every result of the commit is in its slot. Weak: a slot holds its commit's
    /// `Wakeups` until its caller returns, and a caller that has returned needs no wake-up.
    slots: std::sync::OnceLock<Vec<std::sync::Weak<Slot>>>,
    next: AtomicUsize,
}

impl Wakeups {
    const FAN_OUT: usize = 2;

    /// Wake up to [`Self::FAN_OUT`] more sleeping callers. A caller that is not asleep (it saw
    /// its results before it slept) is passed over: it needs no wake-up, and the wakers it would
    /// have been are made up by the next ones, so every sleeping caller of the list is woken.
    fn wake_some(&self) {
        let Some(slots) = self.slots.get() else { return };
        let mut woken = 0;
        while woken < Self::FAN_OUT {
            let Some(slot) = slots.get(self.next.fetch_add(1, Ordering::AcqRel)) else { return };
            let Some(slot) = slot.upgrade() else { continue };
            if slot.lock().sleeping {
                slot.ready.notify_one();
                woken += 1;
            }
        }
    }
}

impl Slot {
    fn new(jobs: usize) -> Slot {
        Slot {
            state: Mutex::new(SlotState {
                results: (0..jobs).map(|_| None).collect(),
                missing: jobs,
                turn: false,
                sleeping: false,
                wake: None,
            }),
            ready: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn post(&self, index: usize, result: Result<Receipt, Error>) {
        if self.fill(index, result, None) {
            self.ready.notify_one();
        }
    }

    /// Store a result without waking the caller; true when it was the last one missing (the
    /// caller is then to be woken; `wake` holds the wake-ups it shares in).
    fn fill(&self, index: usize, result: Result<Receipt, Error>, wake: Option<&Arc<Wakeups>>) -> bool {
        let mut s = self.lock();
        if let Some(place) = s.results.get_mut(index)
            && place.is_none()
        {
            *place = Some(result);
            s.missing -= 1;
            if s.missing == 0 {
                s.wake = wake.cloned();
                return true;
            }
        }
        false
    }

    fn hand_turn(&self) {
        self.lock().turn = true;
        self.ready.notify_one();
    }
}

/// How long a gathering committer yields its processor, polling the queue, before it sleeps
/// until a job is queued. Sleeping alone, commits of 64 writers on 2 cores settled at 40-48
/// jobs (`profile gc 64`, three interleaved pairs: 34.9-36.5k writes/s); yielding for 50 µs
/// first, at 55-61 jobs (41.0-42.2k/s, +14-17 %; 250 µs did no better). 4, 16 and 32 writers
/// were unchanged (three pairs each), and so is a lone writer, whose turn never gathers.
/// Yielding hands the processor to a runnable caller when there is one; when there is none, a
/// turn polls for at most this long.
const GATHER_YIELD: Duration = Duration::from_micros(50);

/// The group-commit queue of a writable store.
struct Writer {
    /// The open database; `None` after an I/O error until it opens again (see
    /// [`Writer::reopen`]).
    db: RwLock<Option<Arc<Database>>>,
    cache_size: usize,
    /// The `commit_seq` of the last commit this handle acknowledged.
    acknowledged: AtomicU64,
    /// Set when a reopened database lacked commits this handle had acknowledged (non-durable
    /// ones, lost with the I/O error): the store refuses to go on.
    broken: std::sync::OnceLock<String>,
    clock: Arc<dyn Clock>,
    path: PathBuf,
    min_gap: u64,
    shared: bool,
    /// Fill holes ahead of writes: [`StoreOptions::zero_fill`], and not `shared`.
    fill: bool,
    max_jobs: usize,
    window: Duration,
    state: Mutex<Queue>,
    /// Signalled when as many jobs are queued as a gathering committer wants.
    queued: Condvar,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Job>,
    /// The turn is taken: a caller is committing (or has been handed the turn).
    committing: bool,
    /// While a committer gathers jobs: how many it waits for (0 otherwise).
    wanted: usize,
    /// Checkpoint hints, kept between commits (the committer takes them).
    hints: Option<GapHints>,
    /// Jobs in the previous commit: how many writers are active.
    concurrency: usize,
}

/// The turn to commit, held by one caller at a time. Dropping it (also by unwinding) fails
/// the jobs it took and did not post, and passes the turn on: to the caller of the first
/// waiting job, or back to the queue when none waits.
struct Turn<'a> {
    writer: &'a Writer,
    jobs: Vec<(Arc<Slot>, usize)>,
    hints: Option<GapHints>,
    concurrency: usize,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let w = self.writer;
        let mut q = w.lock();
        q.hints = Some(self.hints.take().unwrap_or_default());
        q.concurrency = self.concurrency;
        let next = q.waiting.front().map(|j| Arc::clone(&j.slot));
        q.committing = next.is_some();
        drop(q);
        for (slot, index) in self.jobs.drain(..) {
            slot.post(
                index,
                Err(Error::CommitFailed {
                    path: w.path.clone(),
                    reason: "the committing thread stopped".into(),
                }),
            );
        }
        if let Some(slot) = next {
            slot.hand_turn();
        }
    }
}

impl Writer {
    /// The open database, or why there is none.
    fn database(&self) -> Result<Arc<Database>, Error> {
        if let Some(reason) = self.broken.get() {
            return Err(Error::Closed { path: self.path.clone(), reason: reason.clone() });
        }
        if let Some(db) = self.db.read().unwrap_or_else(PoisonError::into_inner).as_ref() {
            return Ok(Arc::clone(db));
        }
        // Closed by an I/O error that a reopen did not get past: try again (unless another
        // thread just did).
        self.reopen(false).map(|_| ())?;
        match self.db.read().unwrap_or_else(PoisonError::into_inner).as_ref() {
            Some(db) => Ok(Arc::clone(db)),
            None => Err(Error::Closed { path: self.path.clone(), reason: "it did not open again".into() }),
        }
    }

    /// The answer to each of `jobs` jobs of a commit that failed with `e`.
    fn fail_all(&self, e: &Error, jobs: usize) -> Vec<Result<Receipt, Error>> {
        (0..jobs).map(|_| Err(e.clone_reason(&self.path))).collect()
    }

    /// After a commit failed on an I/O error (redb then refuses every later commit with
    /// "previous I/O error" until the database is opened again): open it again, and answer
    /// the `jobs` from what the file holds. A commit whose `txn.commit()` failed (`attempted`:
    /// its `commit_seq` and the results it would have had) may have reached the file before
    /// the error (redb finishes a commit with bookkeeping that can fail after it): if the
    /// reopened file has it, its jobs succeeded after all.
    fn recover(
        &self,
        error: Error,
        attempted: Option<(u64, Vec<Result<Receipt, Error>>)>,
        jobs: usize,
    ) -> Vec<Result<Receipt, Error>> {
        let reason = error.with_path(&self.path).to_string();
        let failed = |e: Error| self.fail_all(&e, jobs);
        match (self.reopen(true), attempted) {
            (Ok(now), Some((seq, results))) if now >= seq => {
                self.acknowledged.fetch_max(seq, Ordering::AcqRel);
                results
            }
            (Ok(_), _) | (Err(_), None) => failed(Error::CommitFailed { path: self.path.clone(), reason }),
            // It opened, at a commit before ones acknowledged (so before this one too), and
            // stays closed.
            (Err(closed @ Error::Closed { .. }), Some(_)) => failed(Error::CommitFailed {
                path: self.path.clone(),
                reason: format!("{reason}; and then: {closed}"),
            }),
            (Err(again), Some(_)) => failed(Error::CommitUncertain {
                path: self.path.clone(),
                reason: format!("{reason}; opening it again failed: {again}"),
            }),
        }
    }

    /// Close the database (`replace`: the one open, which an I/O error left refusing commits)
    /// and open it again (redb recovers it to its last commit); returns the reopened file's
    /// `commit_seq`. Without `replace` an open database is left as it is (another thread
    /// reopened it first) and 0 returned. Only the committer replaces, holding the turn, so no
    /// write transaction is open; snapshots taken before lose their file (their reads fail).
    fn reopen(&self, replace: bool) -> Result<u64, Error> {
        let mut slot = self.db.write().unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() && !replace {
            return Ok(0);
        }
        if let Some(old) = slot.take() {
            match Arc::try_unwrap(old) {
                // Its own error is the I/O trouble already reported.
                Ok(db) => drop(db.close()),
                Err(old) => {
                    *slot = Some(old);
                    return Err(Error::CommitFailed {
                        path: self.path.clone(),
                        reason: "the database is in use and cannot be reopened".into(),
                    });
                }
            }
        }
        let builder = redb_builder(self.cache_size, self.shared);
        let db =
            crate::backend::open(&builder, &self.path, self.fill).map_err(|e| open_error(&self.path, e))?;
        let seq = {
            let txn = db.begin_read().map_err(|e| Error::from(e).with_path(&self.path))?;
            let meta = txn.open_table(tables::META).map_err(|e| Error::from(e).with_path(&self.path))?;
            format::read_state(&meta).map_err(|e| e.with_path(&self.path))?.commit_seq
        };
        let acknowledged = self.acknowledged.load(Ordering::Acquire);
        if seq < acknowledged {
            let reason = format!(
                "an I/O error lost acknowledged non-durable commits (the file is at commit {seq}, \
                 commit {acknowledged} had been acknowledged); open the database again"
            );
            let _ = self.broken.set(reason.clone());
            return Err(Error::Closed { path: self.path.clone(), reason });
        }
        *slot = Some(Arc::new(db));
        Ok(seq)
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue jobs and wait for their results (in order).
    fn submit(&self, jobs: Vec<(Vec<WriteOp>, Durability)>) -> Vec<Result<Receipt, Error>> {
        if jobs.is_empty() {
            return Vec::new();
        }
        let slot = Arc::new(Slot::new(jobs.len()));
        // On this thread, before the queue: the texts a commit writes as fresh rows at once
        // (its first few) are tokenized here rather than by the committer, whom every caller
        // of a group commit waits for.
        let mut budget = crate::tables::FEW_ROWS;
        let work: Vec<Work> = jobs
            .into_iter()
            .map(|(ops, durability)| {
                let prepared = crate::lexical::prepare(crate::write::new_texts(&ops), budget);
                budget -= prepared.len();
                Work { ops, durability, prepared }
            })
            .collect();
        let mut q = self.lock();
        for (index, work) in work.into_iter().enumerate() {
            q.waiting.push_back(Job { work, slot: Arc::clone(&slot), index });
        }
        if !q.committing {
            q.committing = true;
            self.commit_turn(q);
        } else {
            if q.wanted > 0 && q.waiting.len() >= q.wanted {
                self.queued.notify_one();
            }
            drop(q);
        }
        loop {
            let mut s = slot.lock();
            while s.missing > 0 && !s.turn {
                s.sleeping = true;
                s = slot.ready.wait(s).unwrap_or_else(PoisonError::into_inner);
                s.sleeping = false;
            }
            if s.missing == 0 {
                if let Some(wake) = s.wake.take() {
                    drop(s);
                    wake.wake_some();
                    s = slot.lock();
                }
                let results = std::mem::take(&mut s.results);
                return results
                    .into_iter()
                    .map(|r| {
                        r.unwrap_or_else(|| {
                            Err(Error::CommitFailed { path: self.path.clone(), reason: "no result".into() })
                        })
                    })
                    .collect();
            }
            // Handed the turn: some of this caller's jobs still wait in the queue.
            s.turn = false;
            drop(s);
            self.commit_turn(self.lock());
        }
    }

    /// Commit with the turn (`committing` is set): take the waiting jobs and start applying
    /// them without the lock; take the jobs that arrive meanwhile into the same commit; commit;
    /// pass the turn on; post the results.
    fn commit_turn(&self, mut q: MutexGuard<'_, Queue>) {
        let n = q.waiting.len().min(self.max_jobs);
        let (work, places): (Vec<_>, Vec<_>) =
            q.waiting.drain(..n).map(|j| (j.work, (j.slot, j.index))).unzip();
        // The writers of the last commit are usually still writing: give them a moment to join
        // this one (they were just woken), rather than committing a handful of jobs and making
        // the rest wait a whole commit. The jobs already taken are applied meanwhile. A lone
        // writer never waits.
        let want = q.concurrency.clamp(1, self.max_jobs);
        let deadline = Instant::now() + self.window;
        let mut turn = Turn { writer: self, jobs: places, hints: None, concurrency: n };
        let mut hints = q.hints.take().unwrap_or_default();
        drop(q);
        let mut more = |taken: usize| -> Vec<Work> {
            if taken >= want || self.window.is_zero() {
                return Vec::new();
            }
            // Take whatever has arrived, and wait only when nothing has: the jobs taken are
            // applied while the rest are still on their way.
            let mut q = self.lock();
            // Briefly, let the callers on their way run rather than sleep: a committer asleep
            // on `queued` wakes tens of microseconds after the next job is queued, and a turn
            // that sleeps and wakes several times runs into the window's end with jobs still on
            // their way, which the next turn then expects fewer of (see `GATHER_YIELD`).
            let yield_until = (Instant::now() + GATHER_YIELD).min(deadline);
            while q.waiting.is_empty() && Instant::now() < yield_until {
                drop(q);
                std::thread::yield_now();
                q = self.lock();
            }
            if q.waiting.is_empty() {
                q.wanted = 1;
                while q.waiting.is_empty() {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    q = self.queued.wait_timeout(q, left).unwrap_or_else(PoisonError::into_inner).0;
                }
                q.wanted = 0;
            }
            let n = q.waiting.len().min(self.max_jobs - taken);
            let mut work = Vec::with_capacity(n);
            for j in q.waiting.drain(..n) {
                work.push(j.work);
                turn.jobs.push((j.slot, j.index));
            }
            work
        };
        let results = match self.database() {
            // (The jobs still queued get the same answer on their turn.)
            Err(e) => self.fail_all(&e, work.len()),
            Ok(db) => {
                let planned = commit(
                    &db,
                    self.clock.as_ref(),
                    (self.min_gap, self.shared.then_some(self.path.as_path())),
                    &mut hints,
                    work,
                    &mut more,
                );
                match planned {
                    Ok(Planned::Nothing(results)) => results,
                    Ok(Planned::Commit { txn, seq, results }) => match (*txn).commit() {
                        Ok(()) => {
                            self.acknowledged.fetch_max(seq, Ordering::AcqRel);
                            results
                        }
                        Err(e) => {
                            drop(db);
                            hints = GapHints::default();
                            self.recover(Error::from(e), Some((seq, results)), turn.jobs.len())
                        }
                    },
                    Err(e) if needs_reopen(&e) => {
                        drop(db);
                        hints = GapHints::default();
                        self.recover(e, None, turn.jobs.len())
                    }
                    Err(e) => self.fail_all(&e.with_path(&self.path), turn.jobs.len()),
                }
            }
        };
        turn.hints = Some(hints);
        turn.concurrency = turn.jobs.len();
        let posted = std::mem::take(&mut turn.jobs);
        // Pass the turn on first, so the next commit can start while results are posted.
        drop(turn);
        // Every result first, then the wake-ups, as a tree (see `Wakeups`).
        let wake = Arc::new(Wakeups { slots: std::sync::OnceLock::new(), next: AtomicUsize::new(0) });
        let mut complete = Vec::with_capacity(posted.len());
        for ((slot, index), r) in posted.into_iter().zip(results) {
            if slot.fill(index, r.map_err(|e| e.with_path(&self.path)), Some(&wake)) {
                complete.push(Arc::downgrade(&slot));
            }
        }
        let _ = wake.slots.set(complete);
        wake.wake_some();
    }
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
                    let db =
                        crate::backend::open(&builder, &path, false).map_err(|e| open_error(&path, e))?;
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
                    path,
                    clock: options.clock,
                    format,
                    damage: Damage::default(),
                }),
            });
        }
        let db = if exists {
            // Check the metadata through a read-only handle first, so a redb file that is not
            // a mnemon database is never opened for writing.
            match builder.open_read_only(&path) {
                Ok(ro) => {
                    let txn = ro.begin_read()?;
                    check_meta(&path, &txn)?;
                    drop(txn);
                    drop(ro);
                    let db = crate::backend::open(&builder, &path, fill).map_err(|e| open_error(&path, e))?;
                    let version = check_meta(&path, &db.begin_read()?)?;
                    upgrade_tables(&db, version).map_err(|e| e.with_path(&path))?;
                    db
                }
                Err(redb::DatabaseError::RepairAborted) => {
                    // It needs the recovery a crash leaves behind: only a writer can repair.
                    let db = crate::backend::open(&builder, &path, fill).map_err(|e| open_error(&path, e))?;
                    let version = check_meta(&path, &db.begin_read()?)?;
                    upgrade_tables(&db, version).map_err(|e| e.with_path(&path))?;
                    db
                }
                Err(e) => return Err(open_error(&path, e).into()),
            }
        } else {
            return Err(OpenError::Missing { path }.into());
        };
        let writer = Writer {
            db: RwLock::new(Some(Arc::new(db))),
            cache_size: options.cache_size,
            acknowledged: AtomicU64::new(0),
            broken: std::sync::OnceLock::new(),
            clock: Arc::clone(&options.clock),
            path: path.clone(),
            min_gap: options.min_checkpoint_gap,
            shared: options.shared,
            fill,
            max_jobs: options.max_jobs_per_commit.max(1),
            window: options.group_commit_window,
            state: Mutex::new(Queue::default()),
            queued: Condvar::new(),
        };
        Ok(Store {
            inner: Arc::new(Inner {
                db: Handle::Writable(Arc::new(writer)),
                path,
                clock: options.clock,
                format: format::FORMAT_VERSION,
                damage: Damage::default(),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The first damage a read through this handle (or a clone of it) met, if any: a value
    /// failing its checksum, an index disagreeing with the revisions, a page redb found
    /// corrupted, or one reported with [`Store::note_damage`]. Writes through the handle are
    /// refused from then on ([`Error::DamageFound`]), so that a server that met damage does
    /// not build on it; a handle opened afresh writes again (after a restore, or once `mnemon
    /// check` passes).
    pub fn damage(&self) -> Option<String> {
        self.inner.damage.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Record damage met outside the storage's own reads (a dependency's panic on a damaged
    /// page, caught above): writes through this handle are refused from then on.
    pub fn note_damage(&self, reason: &str) {
        crate::damage::note_damage(&self.inner.damage, reason);
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
        let txn = match &self.inner.db {
            Handle::Writable(w) => w.database()?.begin_read(),
            Handle::ReadOnly(db) => db.begin_read(),
        }
        .map_err(|e| Error::from(e).with_path(&self.inner.path))?;
        Snapshot::new(
            txn,
            &self.inner.path,
            Arc::clone(&self.inner.clock),
            self.inner.format,
            Arc::clone(&self.inner.damage),
        )
    }

    /// Commit a batch of operations atomically and durably.
    ///
    /// When the commit fails on an I/O error (a full disk), the batch gets
    /// [`Error::CommitFailed`] with the cause and nothing of it was written; the store opens
    /// the file again at once, so later writes go through once there is room. Should the
    /// file not open again, the batch gets [`Error::CommitUncertain`] (it may have reached the
    /// file first) and the next write tries again. Should it open without commits this handle
    /// acknowledged (non-durable ones, lost as in a crash), every later use fails with
    /// [`Error::Closed`].
    pub fn write(&self, ops: Vec<WriteOp>) -> Result<Receipt, Error> {
        self.write_with(ops, Durability::Immediate)
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

/// One group commit: the jobs `first`, then those `more` hands over (called with the number of
/// jobs taken so far, until it returns none). Each batch of jobs is planned at its own
/// transaction time, taken when the batch is, so no job is recorded before it was submitted.
/// An `Err` means nothing was committed; the caller commits the transaction returned.
fn commit(
    db: &Database,
    clock: &dyn Clock,
    (min_gap, shared): (u64, Option<&Path>),
    hints: &mut GapHints,
    first: Vec<Work>,
    more: &mut dyn FnMut(usize) -> Vec<Work>,
) -> Result<Planned, Error> {
    let mut txn = db.begin_write()?;
    let mut meta_t = txn.open_table(tables::META)?;
    if let Some(path) = shared {
        // Another process may have upgraded the file since this one opened it: its indexes
        // (format 5's `mnemon.ended`, say) are then kept by writers this build does not know.
        let found = format::read_version(&meta_t)?;
        if found > format::FORMAT_VERSION {
            return Err(OpenError::NewerFormat {
                path: path.to_path_buf(),
                found,
                supported: format::FORMAT_VERSION,
            }
            .into());
        }
    }
    let shared = shared.is_some();
    let mut per_job: Vec<(Result<Vec<Outcome>, Error>, Timestamp)> = Vec::with_capacity(first.len());
    let mut changed: Vec<(String, u128)> = Vec::new();
    let mut wrote = false;
    // A shared file has no non-durable commits (redb keeps them in one process's memory).
    let mut durable = shared;
    let mut wants_commit = false;
    let mut meta = format::read_state(&meta_t)?;
    let mut tx = clock.now().max(meta.last_tx.plus_micros(1));
    let mut last_tx = tx;
    {
        let mut tables = WriteTables {
            revisions: txn.open_table(tables::REVISIONS)?,
            current: tables::Deferred::new(txn.open_table(tables::CURRENT)?),
            current_ends: tables::Deferred::new(txn.open_table(tables::CURRENT_ENDS)?),
            ended: tables::LazyTable::new(&txn, tables::ENDED),
            identity: tables::LazyTable::new(&txn, tables::IDENTITY),
            namespaces: tables::LazyTable::new(&txn, tables::NAMESPACES),
            timeline: TimelineWriter::new(
                tables::Deferred::new(txn.open_table(tables::EVENTS)?),
                txn.open_table(tables::CHECKPOINTS)?,
                tables::LazyTable::new(&txn, tables::CHECKPOINT_ENTRIES),
                hints,
                min_gap,
            ),
            vectors: tables::LazyTable::new(&txn, tables::VECTORS),
            vector_spaces: tables::LazyTable::new(&txn, tables::VECTOR_SPACES),
            aux: tables::LazyTable::new(&txn, tables::AUX),
            lexical: crate::lexical::LexicalWriter::open(&txn)?,
            known_namespaces: std::collections::HashSet::new(),
            max_ids: Default::default(),
        };
        let mut batch = first;
        while !batch.is_empty() {
            for Work { ops, durability, prepared } in batch {
                tables.lexical.prepared = prepared;
                durable |= durability == Durability::Immediate;
                wants_commit |= ops.is_empty() && durability == Durability::Immediate;
                let mut planner = Planner::new(&tables, tx, ops.len());
                let planned = ops.into_iter().try_for_each(|op| planner.plan(op));
                let (changes, outcomes) =
                    (std::mem::take(&mut planner.changes), std::mem::take(&mut planner.outcomes));
                drop(planner);
                match planned {
                    Err(e) => per_job.push((Err(e), tx)),
                    Ok(()) => {
                        wrote |= !changes.is_empty();
                        for change in changes {
                            if let Change::Write { new, .. } = &change {
                                last_tx = last_tx.max(new.recorded_at);
                            }
                            if let Some(c) = tables.apply(change, tx.as_micros())? {
                                changed.push(c);
                            }
                        }
                        per_job.push((Ok(outcomes), tx));
                    }
                }
            }
            batch = more(per_job.len());
            if !batch.is_empty() {
                tx = clock.now().max(last_tx.plus_micros(1));
                last_tx = tx;
            }
        }
        if !wrote && !wants_commit {
            drop((tables, meta_t));
            txn.abort()?;
            return Ok(Planned::Nothing(
                per_job
                    .into_iter()
                    .map(|(r, _)| {
                        r.map(|outcomes| Receipt { tx: meta.last_tx, commit_seq: meta.commit_seq, outcomes })
                    })
                    .collect(),
            ));
        }
        tables.finish(tx.as_micros())?;
    }
    meta.commit_seq += 1;
    meta.last_tx = last_tx;
    meta.swept_through = tx;
    {
        format::write_state(&mut meta_t, &meta)?;
        drop(meta_t);
        let mut log = txn.open_table(tables::LOG)?;
        write::log_commit(&mut log, meta.commit_seq, tx.as_micros(), changed)?;
    }
    if !durable {
        txn.set_durability(redb::Durability::None)?;
    }
    let seq = meta.commit_seq;
    let results = per_job
        .into_iter()
        .map(|(r, tx)| r.map(|outcomes| Receipt { tx, commit_seq: seq, outcomes }))
        .collect();
    Ok(Planned::Commit { txn: Box::new(txn), seq, results })
}

/// A group commit, planned and written into its transaction.
enum Planned {
    /// Nothing to write (the transaction was aborted): the jobs' results.
    Nothing(Vec<Result<Receipt, Error>>),
    /// The transaction to commit, its `commit_seq`, and the jobs' results once it is.
    Commit { txn: Box<redb::WriteTransaction>, seq: u64, results: Vec<Result<Receipt, Error>> },
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
