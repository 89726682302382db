//! The group-commit writer: callers' jobs queued, one thread at a time taking the turn to commit a batch of them, and every caller woken with its result.

use crate::error::Error;
use crate::format::{self};
use crate::tables;
use crate::time::{Clock, Timestamp};
use crate::timeline::GapHints;
use crate::write::WriteOp;
use redb::{Database, ReadableDatabase};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use super::*;

/// One job of a caller: its operations, and where its result goes.
pub(super) struct Job {
    work: Work,
    slot: Arc<Slot>,
    /// The job's place among its caller's jobs.
    index: usize,
}

/// What a job asks a commit to do: its operations, at its durability, with the fresh rows of
/// its new texts that its caller encoded before queueing it (see [`crate::lexical::prepare`]).
pub(super) struct Work {
    pub(super) ops: Vec<WriteOp>,
    pub(super) durability: Durability,
    pub(super) prepared: Vec<crate::lexical::PreparedText>,
    /// The transaction time the job must be committed at (a replicated log's entry), if not
    /// the commit's own.
    pub(super) at: Option<Timestamp>,
}

/// Where a caller waits: its jobs' results arrive here, and so does the turn to commit when
/// a committer hands it over. One per call, so that posting a result wakes exactly the
/// caller it belongs to (not every waiting caller, who would then queue on one lock).
pub(super) struct Slot {
    state: Mutex<SlotState>,
    ready: Condvar,
}

pub(super) struct SlotState {
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
pub(super) struct Wakeups {
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
pub(super) const GATHER_YIELD: Duration = Duration::from_micros(50);

/// The group-commit queue of a writable store.
pub(super) struct Writer {
    /// Where each commit is announced (see [`super::Store::commits`]).
    pub(super) commits: Arc<super::Commits>,
    /// The open database; `None` after an I/O error until it opens again (see
    /// [`Writer::reopen`]).
    pub(super) db: RwLock<Option<Arc<Database>>>,
    pub(super) cache_size: usize,
    /// The `commit_seq` of the last commit this handle acknowledged.
    pub(super) acknowledged: AtomicU64,
    /// Set when a reopened database lacked commits this handle had acknowledged (non-durable
    /// ones, lost with the I/O error): the store refuses to go on.
    pub(super) broken: std::sync::OnceLock<String>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) path: PathBuf,
    pub(super) min_gap: u64,
    pub(super) shared: bool,
    /// Fill holes ahead of writes: [`StoreOptions::zero_fill`], and not `shared`.
    pub(super) fill: bool,
    /// The hook every reopening installs again ([`StoreOptions::io_hook`]).
    pub(super) io_hook: Option<Arc<dyn crate::backend::IoHook>>,
    pub(super) max_jobs: usize,
    pub(super) window: Duration,
    pub(super) state: Mutex<Queue>,
    /// Signalled when as many jobs are queued as a gathering committer wants.
    pub(super) queued: Condvar,
    /// What the commits have done.
    pub(super) stats: super::stats::CommitCounters,
}

#[derive(Default)]
pub(super) struct Queue {
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
pub(super) struct Turn<'a> {
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
    pub(super) fn database(&self) -> Result<Arc<Database>, Error> {
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
                self.commits.announce(seq);
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
        let db = crate::backend::open(&builder, &self.path, self.fill, self.io_hook.as_ref())
            .map_err(|e| open_error(&self.path, e))?;
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
    pub(super) fn submit(&self, jobs: Vec<(Vec<WriteOp>, Durability)>) -> Vec<Result<Receipt, Error>> {
        self.submit_at(jobs, None)
    }

    /// [`Self::submit`], the jobs committed at transaction time `at` if given (see
    /// [`crate::Store::write_at`]).
    pub(super) fn submit_at(
        &self,
        jobs: Vec<(Vec<WriteOp>, Durability)>,
        at: Option<Timestamp>,
    ) -> Vec<Result<Receipt, Error>> {
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
                Work { ops, durability, prepared, at }
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
                    Ok(Planned::Commit { txn, seq, durable, results }) => match timed_commit(*txn) {
                        (Ok(()), took) => {
                            self.stats.add(results.len(), durable, took);
                            self.acknowledged.fetch_max(seq, Ordering::AcqRel);
                            self.commits.announce(seq);
                            results
                        }
                        (Err(e), _) => {
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

/// Commit `txn`: the result, and how long it took.
fn timed_commit(txn: redb::WriteTransaction) -> (Result<(), redb::CommitError>, Duration) {
    let start = Instant::now();
    let done = txn.commit();
    (done, start.elapsed())
}
