//! The best `k` texts of a BM25 query, document at a time with MaxScore pruning (Turtle and
//! Flood, 1995): the terms whose greatest contributions together cannot lift a text above
//! the `k`-th best score found so far are *non-essential*; only texts holding an essential
//! term are visited, and a non-essential term's postings are looked up (by galloping search)
//! only for a text that could still enter the best `k`. On a query that mixes rare and
//! common words, the common words' long lists are then mostly skipped instead of summed.
//!
//! A namespace's texts lie in several **places** (the posting lists, each segment, the fresh
//! texts), each text wholly in one. The places are searched one after another, each with
//! its own bounds (a term's greatest weight in that place, often far below its greatest
//! anywhere) and one heap of the best and one threshold for them all, so the best found in
//! one place prunes the next. Within a place a term's postings are one run in `(id,
//! from_rev)` order, made of [`Chunk`]s read in place: a posting is decoded and weighed only
//! when visited, and a non-essential term is sought by galloping over the fixed-width
//! postings, so most of a common term's postings are never decoded.
//!
//! The unit ranked is a text, not a record: a record holding several texts (one per text
//! revision, see the module `lexical`) may appear once per text, and only resolving it at
//! the asked time tells which text serves it (see [`crate::lexical`]'s search, which checks
//! that the pruning did not cost it a visible record and asks again for more if it did).
//!
//! A text's score is summed in the order of the query's terms, whatever the order in which
//! the pruning met them, so that it is the same to the last bit however the index stores
//! its postings and whether or not anything was pruned.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::posting::{Chunk, Key};

/// One query term's postings in one place (see the module documentation).
pub(crate) struct TermList<'a> {
    chunks: Vec<Chunk<'a>>,
    /// The term's IDF: a posting weighs `weigh(tf, doc length) * idf`.
    idf: f64,
    /// The greatest weight a posting of this place can have.
    max: f64,
}

impl<'a> TermList<'a> {
    /// A term of IDF `idf` whose postings in a place weigh at most `max`, in `chunks` (in
    /// `(id, from_rev)` order, chunk after chunk).
    pub(crate) fn new(chunks: Vec<Chunk<'a>>, idf: f64, max: f64) -> Self {
        TermList { chunks: chunks.into_iter().filter(|c| c.len() > 0).collect(), idf, max }
    }
}

/// A text among the best: its record, the revision starting it, and its score.
#[derive(Debug)]
pub(crate) struct Candidate {
    pub(crate) id: u128,
    pub(crate) rev: u32,
    pub(crate) score: f64,
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

/// Worse first: a lower score, then a greater `(id, from_rev)` (the order a heap of the best
/// keeps at its top, to be replaced).
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        other.score.total_cmp(&self.score).then((self.id, self.rev).cmp(&(other.id, other.rev)))
    }
}

/// The best `k` texts by score, best first (ties by `(id, from_rev)`), and the score that a
/// text left out can have at most: `None` when nothing was left out for its score (fewer
/// than `k` texts hold any term).
pub(crate) struct Top {
    pub(crate) best: Vec<Candidate>,
    pub(crate) threshold: Option<f64>,
}

/// Where a term's cursor stands in its place: a chunk and a posting in it (past the last
/// chunk at the end), and the key there.
struct Cursor<'r, 'a> {
    chunks: &'r [Chunk<'a>],
    chunk: usize,
    at: usize,
    key: Option<Key>,
    idf: f64,
}

impl<'r, 'a> Cursor<'r, 'a> {
    fn new(list: &'r TermList<'a>) -> Self {
        let mut c = Cursor { chunks: &list.chunks, chunk: 0, at: 0, key: None, idf: list.idf };
        c.settle();
        c
    }

    /// Move to the next chunk if the cursor is past this one's end, and read the key there.
    #[inline]
    fn settle(&mut self) {
        if self.chunks.get(self.chunk).is_some_and(|c| self.at >= c.len()) {
            self.chunk += 1;
            self.at = 0;
        }
        self.key = self.chunks.get(self.chunk).and_then(|c| c.key(self.at));
    }

    /// Move to the first posting whose key is not below `key`: past whole chunks by their
    /// last key, then by galloping within the chunk.
    fn seek(&mut self, key: Key) {
        if self.key.is_none_or(|h| h >= key) {
            return;
        }
        while let Some(c) = self.chunks.get(self.chunk) {
            if c.len().checked_sub(1).and_then(|l| c.key(l)).is_some_and(|last| last >= key) {
                break;
            }
            self.chunk += 1;
            self.at = 0;
        }
        if let Some(c) = self.chunks.get(self.chunk) {
            self.at = c.gallop(self.at, key);
        }
        self.settle();
    }

    /// The weight of the posting of `key` at the cursor, if it is there, and step past it.
    #[inline]
    fn take(&mut self, key: Key, weigh: &impl Fn(u32, u32) -> f64) -> Option<f64> {
        if self.key != Some(key) {
            return None;
        }
        let (tf, len) = self.chunks.get(self.chunk)?.counts(self.at)?;
        self.at += 1;
        self.settle();
        Some(weigh(tf, len) * self.idf)
    }
}

/// The best `k` texts holding any of the query's terms, over `places` (per place, one list
/// per query term, in the query's order), a posting weighing `weigh(tf, doc length)` times
/// its term's IDF; `k == usize::MAX` keeps every text, pruning nothing.
pub(crate) fn top(places: &[Vec<TermList<'_>>], k: usize, weigh: impl Fn(u32, u32) -> f64) -> Top {
    let mut best = Best { heap: BinaryHeap::new(), k, threshold: None };
    if k > 0 {
        for lists in places {
            best.place(lists, &weigh);
        }
    }
    let mut out = best.heap.into_vec();
    out.sort();
    Top { best: out, threshold: best.threshold }
}

/// The best texts found so far, and the threshold they set once there are `k` of them.
struct Best {
    heap: BinaryHeap<Candidate>,
    k: usize,
    threshold: Option<f64>,
}

impl Best {
    /// Search one place.
    fn place(&mut self, lists: &[TermList<'_>], weigh: &impl Fn(u32, u32) -> f64) {
        let mut cursors: Vec<Cursor<'_, '_>> = lists.iter().map(Cursor::new).collect();
        // Terms by their greatest weight here, smallest first; `below[i]`: the sum of the
        // greatest weights of the terms before `i` in that order.
        let mut order: Vec<usize> = (0..lists.len()).filter(|&t| cursors[t].key.is_some()).collect();
        order.sort_by(|&a, &b| lists[a].max.total_cmp(&lists[b].max).then(a.cmp(&b)));
        let mut below = Vec::with_capacity(order.len() + 1);
        let mut sum = 0.0;
        for &t in &order {
            below.push(sum);
            sum += lists[t].max;
        }
        below.push(sum);
        // Terms `order[..essential]` are non-essential: together they cannot lift a text to
        // the threshold (strictly below it, so that a text left out for its score never
        // ties with the worst of the best and wins on its id).
        let mut essential = 0;
        let lift = |essential: &mut usize, theta: f64| {
            while *essential < order.len() && below[*essential + 1] < theta {
                *essential += 1;
            }
        };
        if let Some(theta) = self.threshold {
            lift(&mut essential, theta);
        }
        // The weights of the text at hand: `(term, weight)`.
        let mut found: Vec<(usize, f64)> = Vec::with_capacity(order.len());
        while let Some(key) = order[essential..].iter().filter_map(|&t| cursors[t].key).min() {
            found.clear();
            for &t in &order[essential..] {
                if let Some(w) = cursors[t].take(key, weigh) {
                    found.push((t, w));
                }
            }
            // The non-essential terms, the greatest first, while this text can still enter:
            // its weights so far with every term not yet looked up at its greatest.
            let mut partial: f64 = found.iter().map(|f| f.1).sum();
            let mut out = false;
            for j in (0..essential).rev() {
                if self.threshold.is_some_and(|theta| below_threshold(partial + below[j + 1], theta)) {
                    out = true;
                    break;
                }
                let t = order[j];
                cursors[t].seek(key);
                if let Some(w) = cursors[t].take(key, weigh) {
                    found.push((t, w));
                    partial += w;
                }
            }
            if out || self.threshold.is_some_and(|theta| below_threshold(partial, theta)) {
                continue;
            }
            // The score, summed in the query's order.
            found.sort_unstable_by_key(|f| f.0);
            let score = found.iter().fold(0.0, |s, f| s + f.1);
            let candidate = Candidate { id: key.0, rev: key.1, score };
            if self.heap.len() < self.k {
                self.heap.push(candidate);
            } else if self.heap.peek().is_some_and(|worst| candidate < *worst) {
                self.heap.pop();
                self.heap.push(candidate);
            } else {
                continue;
            }
            if self.heap.len() >= self.k
                && let Some(worst) = self.heap.peek()
            {
                self.threshold = Some(worst.score);
                lift(&mut essential, worst.score);
            }
        }
    }
}

/// Whether a text that can reach `ceiling` at most cannot enter the best for `theta` (with a
/// margin for sums taken in another order, which may round differently).
fn below_threshold(ceiling: f64, theta: f64) -> bool {
    ceiling + ceiling.abs() * 1e-9 <= theta
}

#[cfg(test)]
mod tests {
    use super::super::posting::{POSTING_BYTES, Posting, put};
    use super::*;

    /// The weight of a test posting: its tf, scaled by its length (any function will do).
    fn weigh(tf: u32, len: u32) -> f64 {
        f64::from(tf) / f64::from(len)
    }

    /// Per place, per term: postings; and each term's IDF.
    type Places = (Vec<Vec<Vec<Posting>>>, Vec<f64>);

    /// Every text scored without pruning, best first (the reference).
    fn exhaustive((places, idfs): &Places) -> Vec<(u128, u32, f64)> {
        let mut all: Vec<(u128, u32, usize, f64)> = Vec::new();
        for terms in places {
            for (t, list) in terms.iter().enumerate() {
                all.extend(list.iter().map(|&(id, rev, tf, len)| (id, rev, t, weigh(tf, len) * idfs[t])));
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
        texts.sort_by(|a, b| b.2.total_cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
        texts
    }

    /// A small deterministic generator (no dependency for a test).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    /// Texts of `records` records (some with two texts) spread over up to four places, each
    /// holding term `t` with a chance of one in 2^t.
    fn random_places(seed: u64, terms: usize, records: u64) -> Places {
        let mut r = Lcg(seed);
        let places = 1 + (r.next() % 4) as usize;
        let mut out = vec![vec![Vec::new(); terms]; places];
        for id in 0..records {
            for rev in 0..1 + u32::from(r.next().is_multiple_of(5)) {
                let place = (r.next() % places as u64) as usize;
                let len = 1 + (r.next() % 30) as u32;
                for (t, list) in out[place].iter_mut().enumerate() {
                    if r.next().is_multiple_of(1 << t.min(6)) {
                        list.push((u128::from(id), rev * 3, 1 + (r.next() % 4) as u32, len));
                    }
                }
            }
        }
        (out, (0..terms).map(|t| 1.0 + t as f64).collect())
    }

    /// The postings of `places` as stored bytes, per place and term.
    fn stored((places, _): &Places) -> Vec<Vec<Vec<u8>>> {
        places
            .iter()
            .map(|terms| {
                terms
                    .iter()
                    .map(|list| {
                        let mut b = Vec::new();
                        list.iter().for_each(|&p| put(&mut b, p));
                        b
                    })
                    .collect()
            })
            .collect()
    }

    /// The lists a search builds: each place's lists cut into chunks, stored in even places,
    /// decoded in odd ones; a term's bound its greatest weight in the place.
    fn lists<'a>((places, idfs): &'a Places, bytes: &'a [Vec<Vec<u8>>]) -> Vec<Vec<TermList<'a>>> {
        places
            .iter()
            .zip(bytes)
            .enumerate()
            .map(|(p, (terms, bytes))| {
                terms
                    .iter()
                    .zip(bytes)
                    .enumerate()
                    .map(|(t, (list, b))| {
                        let chunks: Vec<Chunk<'_>> = if p % 2 == 0 {
                            b.chunks(5 * POSTING_BYTES).map(|b| Chunk::stored(b, &[])).collect()
                        } else {
                            list.chunks(7).map(Chunk::Decoded).collect()
                        };
                        let max =
                            list.iter().map(|&(_, _, tf, len)| weigh(tf, len) * idfs[t]).fold(0.0, f64::max);
                        TermList::new(chunks, idfs[t], max)
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn pruning_finds_the_same_best_as_scoring_everything() {
        for seed in 0..60 {
            let places = random_places(seed, 1 + (seed as usize % 6), 300);
            let bytes = stored(&places);
            let lists = lists(&places, &bytes);
            let want = exhaustive(&places);
            for k in [1, 3, 10, 50, 1000, usize::MAX] {
                let top = top(&lists, k, weigh);
                let got: Vec<(u128, u32, f64)> = top.best.iter().map(|c| (c.id, c.rev, c.score)).collect();
                let n = k.min(want.len());
                assert_eq!(got, want[..n].to_vec(), "seed {seed}, k {k}");
                match top.threshold {
                    None => assert!(want.len() <= k),
                    Some(t) => assert!(want[n..].iter().all(|w| w.2 <= t), "seed {seed}, k {k}"),
                }
            }
        }
    }

    #[test]
    fn each_text_of_a_record_is_its_own_candidate() {
        let a = [(1, 0, 4, 4), (1, 3, 2, 4), (2, 0, 1, 4)];
        let b = [(1, 3, 8, 4)];
        let c = [(3, 1, 1, 10)];
        let places = [
            vec![
                TermList::new(vec![Chunk::Decoded(&a)], 1.0, 1.0),
                TermList::new(vec![Chunk::Decoded(&b)], 1.0, 2.0),
            ],
            vec![TermList::new(vec![], 1.0, 0.0), TermList::new(vec![Chunk::Decoded(&c)], 1.0, 0.1)],
        ];
        let top = top(&places, 3, weigh);
        let got: Vec<(u128, u32, f64)> = top.best.iter().map(|c| (c.id, c.rev, c.score)).collect();
        assert_eq!(got, vec![(1, 3, 2.5), (1, 0, 1.0), (2, 0, 0.25)]);
        assert_eq!(top.threshold, Some(0.25));
    }

    #[test]
    fn no_terms_or_no_postings_give_nothing() {
        assert!(top(&[], 10, weigh).best.is_empty());
        assert!(top(&[vec![]], 10, weigh).best.is_empty());
        assert!(top(&[vec![TermList::new(vec![Chunk::Decoded(&[])], 1.0, 1.0)]], 10, weigh).best.is_empty());
        let one = [(1, 0, 1, 1)];
        assert!(top(&[vec![TermList::new(vec![Chunk::Decoded(&one)], 1.0, 1.0)]], 0, weigh).best.is_empty());
    }
}
