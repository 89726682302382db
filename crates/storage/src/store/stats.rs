//! What the group commits have done: how many jobs each carried and how long its commit took
//! (the fsync included, for a durable one), counted in fixed buckets for monitoring
//! (`mnemon serve`'s `/metrics`). Lock-free: the committer adds, readers copy.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the jobs-per-commit buckets.
pub const JOB_BUCKETS: [f64; 11] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0];

/// Upper bounds of the commit-time buckets, in seconds.
pub const SECOND_BUCKETS: [f64; 12] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0];

/// One histogram's counters: a count per bucket (the last for values above every bound),
/// the sum, and the number of values.
#[derive(Debug)]
struct Counters<const N: usize> {
    buckets: [AtomicU64; N],
    above: AtomicU64,
    /// The sum, in millionths (of a job, or of a second).
    sum_micros: AtomicU64,
    count: AtomicU64,
}

impl<const N: usize> Default for Counters<N> {
    fn default() -> Self {
        Counters {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            above: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }
}

impl<const N: usize> Counters<N> {
    fn add(&self, bounds: &[f64; N], value: f64) {
        match bounds.iter().position(|b| value <= *b) {
            Some(i) => self.buckets[i].fetch_add(1, Ordering::Relaxed),
            None => self.above.fetch_add(1, Ordering::Relaxed),
        };
        self.sum_micros.fetch_add((value * 1e6) as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn read(&self, bounds: &[f64; N]) -> Histogram {
        Histogram {
            buckets: bounds.iter().zip(&self.buckets).map(|(b, c)| (*b, c.load(Ordering::Relaxed))).collect(),
            above: self.above.load(Ordering::Relaxed),
            sum: self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
            count: self.count.load(Ordering::Relaxed),
        }
    }
}

/// A histogram as read: per bucket (not cumulative) its upper bound and count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    /// `(upper bound, values in this bucket)`, bounds ascending.
    pub buckets: Vec<(f64, u64)>,
    /// Values above the last bound.
    pub above: u64,
    /// The sum of the values.
    pub sum: f64,
    /// How many values.
    pub count: u64,
}

/// The counters a writable store keeps.
#[derive(Debug, Default)]
pub(crate) struct CommitCounters {
    jobs: Counters<{ JOB_BUCKETS.len() }>,
    durable: Counters<{ SECOND_BUCKETS.len() }>,
    eventual: Counters<{ SECOND_BUCKETS.len() }>,
}

impl CommitCounters {
    /// Count a commit of `jobs` jobs that took `took` to commit.
    pub(crate) fn add(&self, jobs: usize, durable: bool, took: Duration) {
        self.jobs.add(&JOB_BUCKETS, jobs as f64);
        let times = if durable { &self.durable } else { &self.eventual };
        times.add(&SECOND_BUCKETS, took.as_secs_f64());
    }

    pub(crate) fn read(&self) -> CommitStats {
        CommitStats {
            jobs: self.jobs.read(&JOB_BUCKETS),
            durable_seconds: self.durable.read(&SECOND_BUCKETS),
            eventual_seconds: self.eventual.read(&SECOND_BUCKETS),
        }
    }
}

/// What this handle's group commits have done since it opened ([`crate::Store::commit_stats`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommitStats {
    /// Jobs (write calls) per commit.
    pub jobs: Histogram,
    /// Seconds to commit a durable group, the fsync included.
    pub durable_seconds: Histogram,
    /// Seconds to commit a group with no durable job (no fsync).
    pub eventual_seconds: Histogram,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_in_the_first_bucket_that_holds_them() {
        let c = CommitCounters::default();
        c.add(1, true, Duration::from_micros(80));
        c.add(3, true, Duration::from_millis(3));
        c.add(5000, false, Duration::from_secs(2));
        let s = c.read();
        assert_eq!(s.jobs.count, 3);
        assert_eq!(s.jobs.buckets[0], (1.0, 1));
        assert_eq!(s.jobs.buckets[2], (4.0, 1));
        assert_eq!(s.jobs.above, 1);
        assert_eq!(s.jobs.sum, 5004.0);
        assert_eq!((s.durable_seconds.count, s.eventual_seconds.count), (2, 1));
        assert_eq!(s.durable_seconds.buckets[0], (0.0001, 1));
        assert_eq!(s.durable_seconds.buckets[5], (0.005, 1));
        assert_eq!(s.eventual_seconds.above, 1);
        assert!((s.durable_seconds.sum - 0.00308).abs() < 1e-9);
    }
}
