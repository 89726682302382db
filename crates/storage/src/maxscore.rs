//! The best `k` records of a BM25 query, document at a time with MaxScore pruning (Turtle and
//! Flood, 1995): the terms whose greatest contributions together cannot lift a record above
//! the `k`-th best score found so far are *non-essential*; only records holding an essential
//! term are visited, and a non-essential term's postings are looked up (by galloping search)
//! only for a record that could still enter the best `k`. On a query that mixes rare and
//! common words, the common words' long lists are then mostly skipped instead of summed.
//!
//! A record may hold several texts (one per text revision, see `lexical.rs`); it is ranked by
//! the best of them, an upper bound of the score it has at the time a search asks about,
//! which only resolving it tells (see [`crate::lexical`]'s search, which checks that the
//! pruning did not cost it a visible record and asks again for more if it did).
//!
//! A text's score is summed in the order of the query's terms, whatever the order in which
//! the pruning met them, so that it is the same to the last bit however the index stores
//! its postings and whether or not anything was pruned.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One query term's postings over a namespace: `(id, from_rev, weight)` in `(id, from_rev)`
/// order, the weight being the term's whole BM25 contribution (IDF included).
pub(crate) struct TermList {
    postings: Vec<(u128, u32, f64)>,
    /// The greatest weight in the list.
    max: f64,
}

impl TermList {
    /// A list over `postings`, which must be in `(id, from_rev)` order.
    pub(crate) fn new(postings: Vec<(u128, u32, f64)>) -> Self {
        let max = postings.iter().map(|p| p.2).fold(0.0, f64::max);
        TermList { postings, max }
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

/// Where a term's cursor stands.
struct Cursor<'l> {
    list: &'l [(u128, u32, f64)],
    at: usize,
}

impl Cursor<'_> {
    fn id(&self) -> Option<u128> {
        self.list.get(self.at).map(|p| p.0)
    }

    /// Move to the first posting of a record `>= id`, by galloping: cheap for a near
    /// target, logarithmic for a far one.
    fn seek(&mut self, id: u128) {
        let rest = &self.list[self.at.min(self.list.len())..];
        let mut step = 1;
        while step < rest.len() && rest[step].0 < id {
            step *= 2;
        }
        let window = &rest[..rest.len().min(step + 1)];
        self.at += window.partition_point(|p| p.0 < id);
    }

    /// Take the postings of record `id` at the cursor (the cursor at or before them), with
    /// the term's index, into `out`.
    fn take(&mut self, id: u128, term: usize, out: &mut Vec<(u32, usize, f64)>) {
        while let Some(&(i, rev, w)) = self.list.get(self.at) {
            if i != id {
                break;
            }
            out.push((rev, term, w));
            self.at += 1;
        }
    }
}

/// The best `k` records holding any of the terms of `lists` (one list per query term, in the
/// query's order); `k == usize::MAX` keeps every record, pruning nothing.
pub(crate) fn top(lists: &[TermList], k: usize) -> Top {
    let mut cursors: Vec<Cursor<'_>> = lists.iter().map(|l| Cursor { list: &l.postings, at: 0 }).collect();
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
    while let Some(id) = order[essential..].iter().filter_map(|&t| cursors[t].id()).min() {
        found.clear();
        for &t in &order[essential..] {
            cursors[t].take(id, t, &mut found);
        }
        if let Some(theta) = threshold {
            // The best a text of this record can still reach: its essential terms' sum (by
            // revision) and every non-essential term at its greatest.
            let partial = best_text(&mut found);
            let ceiling = partial + below[essential];
            if ceiling + ceiling.abs() * 1e-9 <= theta {
                continue;
            }
        }
        for &t in &order[..essential] {
            cursors[t].seek(id);
            cursors[t].take(id, t, &mut found);
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

/// The greatest of the per-text sums of `found` (`(from_rev, term, weight)`; sorts it by
/// text).
fn best_text(found: &mut [(u32, usize, f64)]) -> f64 {
    found.sort_by_key(|f| (f.0, f.1));
    let mut best = f64::MIN;
    let mut i = 0;
    while i < found.len() {
        let rev = found[i].0;
        let mut s = 0.0;
        while i < found.len() && found[i].0 == rev {
            s += found[i].2;
            i += 1;
        }
        best = best.max(s);
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

    /// Every record's texts scored without pruning, best first (the reference).
    fn exhaustive(lists: &[TermList]) -> Vec<(u128, f64)> {
        let mut all: Vec<(u128, u32, usize, f64)> = Vec::new();
        for (t, l) in lists.iter().enumerate() {
            all.extend(l.postings.iter().map(|&(id, rev, w)| (id, rev, t, w)));
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

    fn random_lists(seed: u64, terms: usize, records: u64) -> Vec<TermList> {
        let mut r = Lcg(seed);
        (0..terms)
            .map(|t| {
                // Term t is held by about one record in 2^t, with weights growing with rarity.
                let mut p = Vec::new();
                for id in 0..records {
                    if r.next().is_multiple_of(1 << t.min(6)) {
                        let revs = 1 + u32::from(r.next().is_multiple_of(5));
                        for rev in 0..revs {
                            if rev == 0 || r.next().is_multiple_of(2) {
                                let w = (t as f64 + 1.0) * (r.next() % 1000) as f64 / 1000.0;
                                p.push((u128::from(id), rev, w));
                            }
                        }
                    }
                }
                TermList::new(p)
            })
            .collect()
    }

    #[test]
    fn pruning_finds_the_same_best_as_scoring_everything() {
        for seed in 0..40 {
            let lists = random_lists(seed, 1 + (seed as usize % 6), 300);
            let want = exhaustive(&lists);
            for k in [1, 3, 10, 50, 1000] {
                let top = top(&lists, k);
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
        let a = TermList::new(vec![(1, 0, 1.0), (1, 3, 0.5), (2, 0, 0.25)]);
        let b = TermList::new(vec![(1, 3, 2.0), (3, 1, 0.1)]);
        let top = top(&[a, b], 2);
        assert_eq!(top.best[0].id, 1);
        assert_eq!(top.best[0].texts, vec![(0, 1.0), (3, 2.5)]);
        assert_eq!(top.best[0].bound, 2.5);
        assert_eq!(top.best[1].id, 2);
        assert_eq!(top.threshold, Some(0.25));
    }

    #[test]
    fn no_terms_or_no_postings_give_nothing() {
        assert!(top(&[], 10).best.is_empty());
        assert!(top(&[TermList::new(Vec::new())], 10).best.is_empty());
        assert!(top(&[TermList::new(vec![(1, 0, 1.0)])], 0).best.is_empty());
    }
}
