//! The best `k` records of a BM25 query, document at a time with MaxScore pruning (Turtle and
//! Flood, 1995): the terms whose greatest contributions together cannot lift a record above
//! the `k`-th best score found so far are *non-essential*; only records holding an essential
//! term are visited, and a non-essential term's postings are looked up (by galloping search)
//! only for a record that could still enter the best `k`. On a query that mixes rare and
//! common words, the common words' long lists are then mostly skipped instead of summed.
//!
//! A term's postings come in runs, one per place that holds them (posting lists, each
//! segment, the fresh texts), each in `(id, from_rev)` order and made of [`Chunk`]s read in
//! place: a term's cursor stands in each run, and a posting is decoded and weighed only when
//! visited. A non-essential term is sought by galloping over the fixed-width postings, so
//! most of a common term's postings are never decoded.
//!
//! A record may hold several texts (one per text revision, see the module `lexical`); it is ranked by
//! the best of them, an upper bound of the score it has at the time a search asks about,
//! which only resolving it tells (see [`crate::lexical`]'s search, which checks that the
//! pruning did not cost it a visible record and asks again for more if it did).
//!
//! A text's score is summed in the order of the query's terms, whatever the order in which
//! the pruning met them, so that it is the same to the last bit however the index stores
//! its postings and whether or not anything was pruned.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::posting::{Chunk, Posting};

/// One query term's postings over a namespace, in runs (see the module documentation).
pub(crate) struct TermList<'a> {
    runs: Vec<Vec<Chunk<'a>>>,
    /// The term's IDF: a posting weighs `weigh(tf, doc length) * idf`.
    idf: f64,
    /// The greatest weight a posting can have.
    max: f64,
}

impl<'a> TermList<'a> {
    /// A term of IDF `idf` whose postings weigh at most `max`, in `runs` (each in `(id,
    /// from_rev)` order, chunk after chunk).
    pub(crate) fn new(runs: Vec<Vec<Chunk<'a>>>, idf: f64, max: f64) -> Self {
        let runs = runs.into_iter().map(|r| r.into_iter().filter(|c| c.len() > 0).collect::<Vec<_>>());
        TermList { runs: runs.filter(|r| !r.is_empty()).collect(), idf, max }
    }
}

/// A record among the best: its best text's score and every text's `(from_rev, score)`.
#[derive(Debug)]
pub(crate) struct Candidate {
    pub(crate) id: u128,
    pub(crate) bound: f64,
    pub(crate) texts: Vec<(u32, f64)>,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Worse first: a lower bound, then a greater id (the order a heap of the best keeps at its
/// top, to be replaced).
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        other.bound.total_cmp(&self.bound).then(self.id.cmp(&other.id))
    }
}

/// The best `k` records by their best text's score, best first (ties by id), and the
/// score that a record left out can have at most: `None` when nothing was left out for its
/// score (fewer than `k` records hold any term).
pub(crate) struct Top {
    pub(crate) best: Vec<Candidate>,
    pub(crate) threshold: Option<f64>,
}

/// Where a cursor stands in a run: a chunk and a posting in it (past the last chunk at the
/// end), and the id there.
struct RunCursor<'r, 'a> {
    chunks: &'r [Chunk<'a>],
    chunk: usize,
    at: usize,
    id: Option<u128>,
}

impl<'r, 'a> RunCursor<'r, 'a> {
    fn new(chunks: &'r [Chunk<'a>]) -> Self {
        let mut c = RunCursor { chunks, chunk: 0, at: 0, id: None };
        c.settle();
        c
    }

    /// The posting at the cursor (`None` at the end).
    fn head(&self) -> Option<Posting> {
        self.chunks.get(self.chunk)?.get(self.at)
    }

    /// Move to the next chunk if the cursor is past this one's end, and read the id there.
    fn settle(&mut self) {
        if self.chunks.get(self.chunk).is_some_and(|c| self.at >= c.len()) {
            self.chunk += 1;
            self.at = 0;
        }
        self.id = self.chunks.get(self.chunk).and_then(|c| c.id(self.at));
    }

    /// Step past the posting at the cursor.
    fn advance(&mut self) {
        self.at += 1;
        self.settle();
    }

    /// Move to the first posting of a record `>= id`: past whole chunks by their last id,
    /// then by galloping within the chunk.
    fn seek(&mut self, id: u128) {
        if self.id.is_none_or(|h| h >= id) {
            return;
        }
        while let Some(c) = self.chunks.get(self.chunk) {
            if c.len().checked_sub(1).and_then(|l| c.id(l)).is_some_and(|last| last >= id) {
                break;
            }
            self.chunk += 1;
            self.at = 0;
        }
        if let Some(c) = self.chunks.get(self.chunk) {
            self.at = c.gallop(self.at, id);
        }
        self.settle();
    }
}

/// A term's cursor: one per run, and the least id at their heads.
struct Cursor<'r, 'a> {
    runs: Vec<RunCursor<'r, 'a>>,
    idf: f64,
    head: Option<u128>,
}

impl<'r, 'a> Cursor<'r, 'a> {
    fn new(list: &'r TermList<'a>) -> Self {
        let runs = list.runs.iter().map(|r| RunCursor::new(r)).collect();
        let mut c = Cursor { runs, idf: list.idf, head: None };
        c.settle();
        c
    }

    fn settle(&mut self) {
        self.head = self.runs.iter().filter_map(|r| r.id).min();
    }

    /// Move every run to the first posting of a record `>= id`.
    fn seek(&mut self, id: u128) {
        if self.head.is_some_and(|h| h < id) {
            for r in &mut self.runs {
                r.seek(id);
            }
            self.settle();
        }
    }

    /// Take the postings of record `id` at the cursor (the cursor at or before them), weighed,
    /// with the term's index, into `out`.
    fn take(
        &mut self,
        id: u128,
        term: usize,
        weigh: &impl Fn(u32, u32) -> f64,
        out: &mut Vec<(u32, usize, f64)>,
    ) {
        if self.head != Some(id) {
            return;
        }
        for r in &mut self.runs {
            while r.id == Some(id) {
                if let Some((_, rev, tf, len)) = r.head() {
                    out.push((rev, term, weigh(tf, len) * self.idf));
                }
                r.advance();
            }
        }
        self.settle();
    }
}

/// The best `k` records holding any of the terms of `lists` (one list per query term, in the
/// query's order), a posting weighing `weigh(tf, doc length)` times its term's IDF;
/// `k == usize::MAX` keeps every record, pruning nothing.
pub(crate) fn top(lists: &[TermList<'_>], k: usize, weigh: impl Fn(u32, u32) -> f64) -> Top {
    let mut cursors: Vec<Cursor<'_, '_>> = lists.iter().map(Cursor::new).collect();
    // Terms by their greatest weight, smallest first; `below[i]`: the sum of the greatest
    // weights of the terms before `i` in that order.
    let mut order: Vec<usize> = (0..lists.len()).collect();
    order.sort_by(|&a, &b| lists[a].max.total_cmp(&lists[b].max).then(a.cmp(&b)));
    let mut below = Vec::with_capacity(order.len() + 1);
    let mut sum = 0.0;
    for &t in &order {
        below.push(sum);
        sum += lists[t].max;
    }
    below.push(sum);
    let mut heap: BinaryHeap<Candidate> = BinaryHeap::new();
    let mut threshold: Option<f64> = None;
    // Terms `order[..essential]` are non-essential: together they cannot lift a record to
    // the threshold.
    let mut essential = 0;
    let mut found: Vec<(u32, usize, f64)> = Vec::new();
    while let Some(id) = order[essential..].iter().filter_map(|&t| cursors[t].head).min() {
        found.clear();
        for &t in &order[essential..] {
            cursors[t].take(id, t, &weigh, &mut found);
        }
        // The non-essential terms, the greatest first, while this record can still enter:
        // the best text so far with every term not yet looked up at its greatest.
        let mut partial = best_text(&mut found);
        let mut out = false;
        for j in (0..essential).rev() {
            if threshold.is_some_and(|theta| below_threshold(partial + below[j + 1], theta)) {
                out = true;
                break;
            }
            let t = order[j];
            let before = found.len();
            cursors[t].seek(id);
            cursors[t].take(id, t, &weigh, &mut found);
            if found.len() > before {
                partial = best_text(&mut found);
            }
        }
        if out || threshold.is_some_and(|theta| below_threshold(partial, theta)) {
            continue;
        }
        let texts = text_scores(&mut found);
        let bound = texts.iter().map(|t| t.1).fold(f64::MIN, f64::max);
        let candidate = Candidate { id, bound, texts };
        if heap.len() < k {
            heap.push(candidate);
        } else if heap.peek().is_some_and(|worst| candidate < *worst) {
            heap.pop();
            heap.push(candidate);
        } else {
            continue;
        }
        if heap.len() >= k
            && let Some(worst) = heap.peek()
        {
            threshold = Some(worst.bound);
            while essential < order.len() && below[essential + 1] <= worst.bound {
                essential += 1;
            }
        }
    }
    let mut best = heap.into_vec();
    best.sort();
    Top { best, threshold }
}

/// Whether a record that can reach `ceiling` at most cannot enter the best for `theta`
/// (with a margin for sums taken in another order, which may round differently).
fn below_threshold(ceiling: f64, theta: f64) -> bool {
    ceiling + ceiling.abs() * 1e-9 <= theta
}

/// The greatest of the per-text sums of `found` (`(from_rev, term, weight)`; sorts it by
/// text).
fn best_text(found: &mut [(u32, usize, f64)]) -> f64 {
    if let Some(first) = found.first()
        && found.iter().all(|f| f.0 == first.0)
    {
        // One text (the common case): its sum, in any order (a bound for pruning, which
        // allows for rounding; `text_scores` sums in the query's order).
        return found.iter().map(|f| f.2).sum();
    }
    found.sort_by_key(|f| (f.0, f.1));
    let mut best = f64::MIN;
    for text in found.chunk_by(|a, b| a.0 == b.0) {
        best = best.max(text.iter().map(|f| f.2).sum());
    }
    best
}

/// Each text's score: its weights summed in the order of the query's terms.
fn text_scores(found: &mut [(u32, usize, f64)]) -> Vec<(u32, f64)> {
    found.sort_by_key(|f| (f.0, f.1));
    let mut out: Vec<(u32, f64)> = Vec::with_capacity(1);
    for &(rev, _, w) in found.iter() {
        match out.last_mut() {
            Some(l) if l.0 == rev => l.1 += w,
            _ => out.push((rev, w)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The weight of a test posting: its tf, scaled by its length (any function will do).
    fn weigh(tf: u32, len: u32) -> f64 {
        f64::from(tf) / f64::from(len)
    }

    /// Every record's texts scored without pruning, best first (the reference).
    fn exhaustive(terms: &[(Vec<Vec<Posting>>, f64)]) -> Vec<(u128, f64)> {
        let mut all: Vec<(u128, u32, usize, f64)> = Vec::new();
        for (t, (runs, idf)) in terms.iter().enumerate() {
            for run in runs {
                all.extend(run.iter().map(|&(id, rev, tf, len)| (id, rev, t, weigh(tf, len) * idf)));
            }
        }
        all.sort_by_key(|a| (a.0, a.1, a.2));
        let mut texts: Vec<(u128, u32, f64)> = Vec::new();
        for (id, rev, _, w) in all {
            match texts.last_mut() {
                Some(l) if l.0 == id && l.1 == rev => l.2 += w,
                _ => texts.push((id, rev, w)),
            }
        }
        let mut best: Vec<(u128, f64)> = Vec::new();
        for (id, _, s) in texts {
            match best.last_mut() {
                Some(l) if l.0 == id => l.1 = l.1.max(s),
                _ => best.push((id, s)),
            }
        }
        best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        best
    }

    /// A small deterministic generator (no dependency for a test).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    /// Terms held by about one record in 2^t, in up to three runs of interleaved ids, some
    /// records with two texts.
    fn random_terms(seed: u64, terms: usize, records: u64) -> Vec<(Vec<Vec<Posting>>, f64)> {
        let mut r = Lcg(seed);
        (0..terms)
            .map(|t| {
                let mut runs = vec![Vec::new(); 1 + (r.next() % 3) as usize];
                for id in 0..records {
                    if r.next().is_multiple_of(1 << t.min(6)) {
                        let revs = 1 + u32::from(r.next().is_multiple_of(5));
                        for rev in 0..revs {
                            if rev == 0 || r.next().is_multiple_of(2) {
                                let run = (r.next() % runs.len() as u64) as usize;
                                let p = (
                                    u128::from(id),
                                    rev,
                                    1 + (r.next() % 4) as u32,
                                    1 + (r.next() % 30) as u32,
                                );
                                runs[run].push(p);
                            }
                        }
                    }
                }
                (runs, 1.0 + t as f64)
            })
            .collect()
    }

    /// A term's lists as a search builds them: each run cut into chunks, stored or decoded.
    fn lists<'a>(terms: &'a [(Vec<Vec<Posting>>, f64)], stored: &'a [Vec<Vec<u8>>]) -> Vec<TermList<'a>> {
        terms
            .iter()
            .zip(stored)
            .map(|((runs, idf), stored)| {
                let chunks = runs
                    .iter()
                    .zip(stored)
                    .enumerate()
                    .map(|(i, (run, bytes))| {
                        if i % 2 == 0 {
                            bytes
                                .chunks(5 * super::super::posting::POSTING_BYTES)
                                .map(|b| Chunk::stored(b, &[]))
                                .collect()
                        } else {
                            run.chunks(7).map(Chunk::Decoded).collect()
                        }
                    })
                    .collect();
                TermList::new(chunks, *idf, *idf * 4.0)
            })
            .collect()
    }

    fn stored(terms: &[(Vec<Vec<Posting>>, f64)]) -> Vec<Vec<Vec<u8>>> {
        terms
            .iter()
            .map(|(runs, _)| {
                runs.iter()
                    .map(|run| {
                        let mut b = Vec::new();
                        run.iter().for_each(|&p| super::super::posting::put(&mut b, p));
                        b
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn pruning_finds_the_same_best_as_scoring_everything() {
        for seed in 0..40 {
            let terms = random_terms(seed, 1 + (seed as usize % 6), 300);
            let bytes = stored(&terms);
            let lists = lists(&terms, &bytes);
            let want = exhaustive(&terms);
            for k in [1, 3, 10, 50, 1000] {
                let top = top(&lists, k, weigh);
                let got: Vec<(u128, f64)> = top.best.iter().map(|c| (c.id, c.bound)).collect();
                let n = k.min(want.len());
                assert_eq!(got, want[..n].to_vec(), "seed {seed}, k {k}");
                match top.threshold {
                    None => assert!(want.len() <= k),
                    Some(t) => assert!(want[n..].iter().all(|w| w.1 <= t), "seed {seed}, k {k}"),
                }
            }
        }
    }

    #[test]
    fn every_text_of_a_candidate_is_scored() {
        let a = [(1, 0, 4, 4), (1, 3, 2, 4), (2, 0, 1, 4)];
        let b = [(1, 3, 8, 4)];
        let c = [(3, 1, 1, 10)];
        let lists = [
            TermList::new(vec![vec![Chunk::Decoded(&a)]], 1.0, 1.0),
            TermList::new(vec![vec![Chunk::Decoded(&c)], vec![Chunk::Decoded(&b)]], 1.0, 2.0),
        ];
        let top = top(&lists, 2, weigh);
        assert_eq!(top.best[0].id, 1);
        assert_eq!(top.best[0].texts, vec![(0, 1.0), (3, 2.5)]);
        assert_eq!(top.best[0].bound, 2.5);
        assert_eq!(top.best[1].id, 2);
        assert_eq!(top.threshold, Some(0.25));
    }

    #[test]
    fn no_terms_or_no_postings_give_nothing() {
        assert!(top(&[], 10, weigh).best.is_empty());
        assert!(top(&[TermList::new(vec![vec![Chunk::Decoded(&[])]], 1.0, 1.0)], 10, weigh).best.is_empty());
        let one = [(1, 0, 1, 1)];
        assert!(top(&[TermList::new(vec![vec![Chunk::Decoded(&one)]], 1.0, 1.0)], 0, weigh).best.is_empty());
    }
}
