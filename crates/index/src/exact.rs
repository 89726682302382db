//! The exact scan: every candidate's dot product with the query, a bounded top-k.
//!
//! It is the oracle for the graph and the path for small or highly filtered candidate sets.
//! Rows are contiguous `f32` (one `dim`-long row per point); rayon splits the rows into chunks
//! of [`CHUNK`] and each worker keeps its own bounded heap, merged at the end.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use crate::kernel::dot;

/// Rows per parallel task (about 1.5 MB of 384-d vectors: big enough to amortise the task).
pub const CHUNK: usize = 1024;
/// Below this many rows the scan stays on the calling thread.
const PARALLEL_MIN: usize = 4 * CHUNK;

/// A scored point: higher `score` is more similar (cosine similarity of unit vectors).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scored {
    /// The point.
    pub point: u32,
    /// Its similarity to the query.
    pub score: f32,
}

/// Order for a min-heap on score (ties broken by point id, so results are deterministic).
#[derive(Clone, Copy, Debug, PartialEq)]
struct MinScored(Scored);

impl Eq for MinScored {}

impl Ord for MinScored {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.score.total_cmp(&self.0.score).then_with(|| self.0.point.cmp(&other.0.point))
    }
}

impl PartialOrd for MinScored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The best `k` of a stream of scored points.
#[derive(Debug)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<MinScored>,
}

impl TopK {
    /// An empty top-k.
    pub fn new(k: usize) -> Self {
        TopK { k, heap: BinaryHeap::with_capacity(k.saturating_add(1).min(1 << 16)) }
    }

    /// Offer a point.
    #[inline]
    pub fn push(&mut self, s: Scored) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(MinScored(s));
        } else if let Some(worst) = self.heap.peek()
            && MinScored(s) < *worst
        {
            self.heap.pop();
            self.heap.push(MinScored(s));
        }
    }

    /// The lowest score kept, once `k` are kept (a candidate below it cannot enter).
    pub fn threshold(&self) -> Option<f32> {
        if self.heap.len() == self.k { self.heap.peek().map(|w| w.0.score) } else { None }
    }

    /// Merge another top-k into this one.
    pub fn merge(&mut self, other: TopK) {
        for s in other.heap {
            self.push(s.0);
        }
    }

    /// The kept points, best first.
    pub fn into_sorted(self) -> Vec<Scored> {
        let mut v: Vec<Scored> = self.heap.into_iter().map(|m| m.0).collect();
        v.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.point.cmp(&b.point)));
        v
    }
}

/// Scan every row of `data` (rows of `dim`) for which `keep(point)` holds.
pub fn scan_all(
    data: &[f32],
    dim: usize,
    query: &[f32],
    k: usize,
    keep: &(dyn Fn(u32) -> bool + Sync),
) -> Vec<Scored> {
    if dim == 0 || query.len() != dim {
        return Vec::new();
    }
    let rows = data.len() / dim;
    let scan = |start: usize, end: usize| {
        let mut top = TopK::new(k);
        for (i, row) in data[start * dim..end * dim].chunks_exact(dim).enumerate() {
            let p = u32::try_from(start + i).unwrap_or(u32::MAX);
            if keep(p) {
                top.push(Scored { point: p, score: dot(query, row) });
            }
        }
        top
    };
    if rows < PARALLEL_MIN {
        return scan(0, rows).into_sorted();
    }
    let chunks: Vec<(usize, usize)> = (0..rows).step_by(CHUNK).map(|s| (s, (s + CHUNK).min(rows))).collect();
    chunks
        .into_par_iter()
        .map(|(s, e)| scan(s, e))
        .reduce(
            || TopK::new(k),
            |mut a, b| {
                a.merge(b);
                a
            },
        )
        .into_sorted()
}

/// Scan the listed rows of `data` only (for a filtered candidate set).
pub fn scan_points(data: &[f32], dim: usize, query: &[f32], k: usize, points: &[u32]) -> Vec<Scored> {
    if dim == 0 || query.len() != dim {
        return Vec::new();
    }
    let row = |p: u32| data.get(p as usize * dim..(p as usize + 1) * dim);
    let scan = |ps: &[u32]| {
        let mut top = TopK::new(k);
        for &p in ps {
            if let Some(r) = row(p) {
                top.push(Scored { point: p, score: dot(query, r) });
            }
        }
        top
    };
    if points.len() < PARALLEL_MIN {
        return scan(points).into_sorted();
    }
    points
        .par_chunks(CHUNK)
        .map(scan)
        .reduce(
            || TopK::new(k),
            |mut a, b| {
                a.merge(b);
                a
            },
        )
        .into_sorted()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::dot_scalar;

    fn data(rows: usize, dim: usize) -> Vec<f32> {
        let mut seed = 11u64;
        (0..rows * dim)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect()
    }

    fn oracle(data: &[f32], dim: usize, q: &[f32], k: usize, keep: impl Fn(u32) -> bool) -> Vec<u32> {
        let mut all: Vec<(f32, u32)> = data
            .chunks_exact(dim)
            .enumerate()
            .filter(|(i, _)| keep(*i as u32))
            .map(|(i, r)| (dot_scalar(q, r), i as u32))
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        all.into_iter().take(k).map(|x| x.1).collect()
    }

    #[test]
    fn scans_match_the_oracle_serial_and_parallel() {
        for rows in [0, 5, 100, 10_000] {
            let dim = 24;
            let d = data(rows, dim);
            let q = &data(1, dim)[..];
            let got: Vec<u32> = scan_all(&d, dim, q, 10, &|_| true).iter().map(|s| s.point).collect();
            assert_eq!(got, oracle(&d, dim, q, 10, |_| true), "rows {rows}");
            let got: Vec<u32> = scan_all(&d, dim, q, 7, &|p| p % 3 == 0).iter().map(|s| s.point).collect();
            assert_eq!(got, oracle(&d, dim, q, 7, |p| p % 3 == 0));
            let pts: Vec<u32> = (0..rows as u32).filter(|p| p % 5 == 1).collect();
            let got: Vec<u32> = scan_points(&d, dim, q, 10, &pts).iter().map(|s| s.point).collect();
            assert_eq!(got, oracle(&d, dim, q, 10, |p| p % 5 == 1));
        }
    }

    #[test]
    fn top_k_is_bounded_and_sorted() {
        let mut t = TopK::new(3);
        for (p, s) in [(0, 0.1), (1, 0.9), (2, 0.5), (3, 0.7), (4, 0.2)] {
            t.push(Scored { point: p, score: s });
        }
        assert_eq!(t.threshold(), Some(0.5));
        let v: Vec<u32> = t.into_sorted().iter().map(|s| s.point).collect();
        assert_eq!(v, vec![1, 3, 2]);
        assert!(TopK::new(0).into_sorted().is_empty());
    }
}
