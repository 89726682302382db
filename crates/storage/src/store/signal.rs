//! Commits announced to whoever waits for them: what wakes the change feed.
//!
//! Every commit of this handle's writer announces its `commit_seq` at once. Commits of other
//! processes on a shared file (and of the writer under a read-only handle) cannot announce
//! themselves here, so while anyone watches ([`Store::commits`](super::Store::commits)) one
//! thread per handle reads the file's `commit_seq` every [`POLL`] and announces what it finds.
//! Waiters block ([`Commits::wait_past`]) or are woken as futures ([`Commits::poll_past`]).

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// How often the commits of other processes are looked for while anyone watches.
pub const POLL: Duration = Duration::from_millis(20);

/// The latest commit announced, and those waiting for a later one.
#[derive(Default)]
pub struct Commits {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    seq: u64,
    wakers: Vec<Waker>,
    /// Whether the thread that looks for other processes' commits runs.
    polling: bool,
}

impl std::fmt::Debug for Commits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Commits").field("seq", &self.seq()).finish()
    }
}

impl Commits {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The latest commit announced (`commit_seq`).
    pub fn seq(&self) -> u64 {
        self.lock().seq
    }

    /// Announce that the file holds commit `seq` (and every one before it): wake the waiters
    /// if it is new.
    pub(crate) fn announce(&self, seq: u64) {
        let wakers = {
            let mut s = self.lock();
            if seq <= s.seq {
                return;
            }
            s.seq = seq;
            std::mem::take(&mut s.wakers)
        };
        self.changed.notify_all();
        for w in wakers {
            w.wake();
        }
    }

    /// Wait until a commit after `seen` is announced, at most `timeout`: the latest announced.
    pub fn wait_past(&self, seen: u64, timeout: Duration) -> u64 {
        let deadline = Instant::now() + timeout;
        let mut s = self.lock();
        while s.seq <= seen {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = self.changed.wait_timeout(s, left).unwrap_or_else(PoisonError::into_inner).0;
        }
        s.seq
    }

    /// Ready with the latest commit once one after `seen` is announced; until then the task
    /// of `cx` is woken at the next announcement.
    pub fn poll_past(&self, seen: u64, cx: &mut Context<'_>) -> Poll<u64> {
        let mut s = self.lock();
        if s.seq > seen {
            return Poll::Ready(s.seq);
        }
        if !s.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            s.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Start the thread that announces the commits `read` finds (the file's `commit_seq`),
    /// every [`POLL`], unless it runs; it stops when `owner` is dropped.
    pub(crate) fn poll_file<T: Send + Sync + 'static>(
        self: &Arc<Self>,
        owner: Weak<T>,
        read: fn(&T) -> Option<u64>,
    ) {
        {
            let mut s = self.lock();
            if s.polling {
                return;
            }
            s.polling = true;
        }
        let commits = Arc::downgrade(self);
        let started = std::thread::Builder::new().name("mnemon-commits".into()).spawn(move || {
            loop {
                let (Some(owner), Some(commits)) = (owner.upgrade(), commits.upgrade()) else { return };
                if let Some(seq) = read(&owner) {
                    commits.announce(seq);
                }
                drop((owner, commits));
                std::thread::sleep(POLL);
            }
        });
        if started.is_err() {
            // No thread: other processes' commits are seen at this process's next commit.
            self.lock().polling = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_wakes_at_a_later_commit_and_not_before() {
        let c = Arc::new(Commits::default());
        c.announce(3);
        assert_eq!(c.wait_past(2, Duration::ZERO), 3);
        assert_eq!(c.wait_past(3, Duration::from_millis(5)), 3, "nothing new: the timeout");
        let c2 = Arc::clone(&c);
        let t = std::thread::spawn(move || c2.wait_past(3, Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(20));
        c.announce(4);
        assert_eq!(t.join().ok(), Some(4));
        c.announce(2);
        assert_eq!(c.seq(), 4, "an older announcement changes nothing");
    }

    #[test]
    fn a_future_is_woken_by_the_next_commit() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::task::Wake;
        struct Count(AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let woken = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&woken));
        let mut cx = Context::from_waker(&waker);
        let c = Commits::default();
        assert!(c.poll_past(0, &mut cx).is_pending());
        assert!(c.poll_past(0, &mut cx).is_pending(), "registered once");
        c.announce(1);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
        assert_eq!(c.poll_past(0, &mut cx), Poll::Ready(1));
    }
}
