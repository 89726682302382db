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
//! one place prunes the next. Within a place each text has a number, in the order of the
//! texts' keys `(id, from_rev)` (a segment's stored numbers, or numbers the search gives the
//! texts of a place that stores keys), and a term's postings are one run in number order,
//! made of [`Chunk`]s read in place: a posting is decoded and weighed only when visited, and
//! a non-essential term is sought by galloping over the column of 4-byte numbers, so most of
//! a common term's postings are never decoded. A text's key is read only for the texts kept
//! among the best, and ties between places are broken by key, as if the texts were in one
//! place.
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
use std::collections::{BinaryHeap, HashSet};

use super::posting::{Chunk, Key};
use crate::error::Error;

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
    /// number order, chunk after chunk).
    pub(crate) fn new(chunks: Vec<Chunk<'a>>, idf: f64, max: f64) -> Self {
        TermList { chunks: chunks.into_iter().filter(|c| c.len() > 0).collect(), idf, max }
    }
}

/// A place: one list per query term (in the query's order), and the key of a text from its
/// number there (numbers follow keys, so a place's texts come in key order).
pub(crate) struct Place<'a, 'k> {
    pub(crate) lists: Vec<TermList<'a>>,
    pub(crate) keys: KeyOf<'k>,
}

/// A text among the best: its record, the revision starting it, and its score.
#[derive(Debug)]
pub(crate) struct Candidate {
    pub(crate) id: u128,
    pub(crate) rev: u32,
    pub(crate) score: f64,
}

/// A text in the heap of the best: its score, its place and number there, and its key once
/// known. Two texts of one score are ordered by key; within a place number order is key
/// order, so a key is read only where texts of different places tie (see [`Best::tie`]).
#[derive(Debug)]
struct Entry {
    score: f64,
    place: usize,
    number: u32,
    key: Option<Key>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Worse first: a lower score, then a greater key (the order a heap of the best keeps at its
/// top, to be replaced).
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other.score.total_cmp(&self.score).then_with(|| match (self.key, other.key) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => (self.place, self.number).cmp(&(other.place, other.number)),
        })
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
/// chunk at the end), the chunk itself, and the number there.
struct Cursor<'r, 'a> {
    chunks: &'r [Chunk<'a>],
    chunk: usize,
    /// `chunks[chunk]` (empty past the last).
    here: Chunk<'a>,
    at: usize,
    number: Option<u32>,
    idf: f64,
}

impl<'r, 'a> Cursor<'r, 'a> {
    fn new(list: &'r TermList<'a>) -> Self {
        let here = list.chunks.first().copied().unwrap_or_default();
        let mut c = Cursor { chunks: &list.chunks, chunk: 0, here, at: 0, number: None, idf: list.idf };
        c.settle();
        c
    }

    /// Move to the next chunk if the cursor is past this one's end, and read the number there.
    #[inline]
    fn settle(&mut self) {
        if self.at >= self.here.len() && self.chunk < self.chunks.len() {
            self.next_chunk();
        }
        self.number = self.here.number(self.at);
    }

    /// Move to the start of the next chunk.
    fn next_chunk(&mut self) {
        self.chunk += 1;
        self.at = 0;
        self.here = self.chunks.get(self.chunk).copied().unwrap_or_default();
    }

    /// Move to the first posting whose number is not below `n`: past whole chunks by their
    /// last number, then by galloping within the chunk.
    fn seek(&mut self, n: u32) {
        if self.number.is_none_or(|h| h >= n) {
            return;
        }
        while self.chunk < self.chunks.len() {
            if self.here.len().checked_sub(1).and_then(|l| self.here.number(l)).is_some_and(|last| last >= n)
            {
                break;
            }
            self.next_chunk();
        }
        self.at = self.here.gallop(self.at, n);
        self.settle();
    }

    /// The weight of the posting of number `n` at the cursor, if it is there, and step past
    /// it.
    #[inline]
    fn take(&mut self, n: u32, weigh: &impl Fn(u32, u32) -> f64) -> Option<f64> {
        if self.number != Some(n) {
            return None;
        }
        let (tf, len) = self.here.counts(self.at)?;
        self.at += 1;
        self.settle();
        Some(weigh(tf, len) * self.idf)
    }
}

/// How a place finds a text's key from its number.
type KeyOf<'k> = Box<dyn FnMut(u32) -> Result<Key, Error> + 'k>;

/// The best `k` texts holding any of the query's terms, over `places`, a posting weighing
/// `weigh(tf, doc length)` times its term's IDF; `k == usize::MAX` keeps every text, pruning
/// nothing. Fails only where a place cannot give a text's key.
///
/// The places are searched largest first (by the postings of the query's terms they hold),
/// so that the threshold is high early; keys are read for the texts kept at the end, and for
/// texts of different places that tie on the way.
pub(crate) fn top(
    places: &mut [Place<'_, '_>],
    k: usize,
    weigh: impl Fn(u32, u32) -> f64,
) -> Result<Top, Error> {
    let (lists, mut keys): (Vec<&[TermList<'_>]>, Vec<&mut KeyOf<'_>>) =
        places.iter_mut().map(|Place { lists, keys }| (&lists[..], keys)).unzip();
    let mut best = Best { heap: BinaryHeap::new(), k, threshold: None, before: HashSet::new() };
    if k > 0 {
        let size = |p: usize| lists[p].iter().flat_map(|l| &l.chunks).map(Chunk::len).sum::<usize>();
        let mut order: Vec<usize> = (0..lists.len()).collect();
        order.sort_by_key(|&p| std::cmp::Reverse(size(p)));
        for p in order {
            best.place(p, lists[p], &mut keys, &weigh)?;
        }
    }
    let threshold = best.threshold;
    let mut out = best.heap.into_vec();
    // The keys of the texts kept, a place at a time in number order (a segment reads its
    // numbers a part at a time).
    out.sort_unstable_by_key(|e| (e.place, e.number));
    for e in out.iter_mut().filter(|e| e.key.is_none()) {
        e.key = Some(keys.get_mut(e.place).ok_or_else(|| no_place(e.place))?(e.number)?);
    }
    out.sort();
    let best = out
        .into_iter()
        .map(|e| {
            let (id, rev) = e.key.unwrap_or_default();
            Candidate { id, rev, score: e.score }
        })
        .collect();
    Ok(Top { best, threshold })
}

fn no_place(p: usize) -> Error {
    Error::Inconsistent { namespace: String::new(), detail: format!("a lexical search has no place {p}") }
}

/// The best texts found so far, and the threshold they set once there are `k` of them.
struct Best {
    heap: BinaryHeap<Entry>,
    k: usize,
    threshold: Option<f64>,
    /// The scores of the texts of the places searched before (in the heap when their place
    /// was done): a text of another place with one of them is ordered by key.
    before: HashSet<u64>,
}

impl Best {
    /// Search place `p`, whose lists are `lists`.
    fn place(
        &mut self,
        p: usize,
        lists: &[TermList<'_>],
        keys: &mut [&mut KeyOf<'_>],
        weigh: &impl Fn(u32, u32) -> f64,
    ) -> Result<(), Error> {
        let mut cursors: Vec<Cursor<'_, '_>> = lists.iter().map(Cursor::new).collect();
        // Terms by their greatest weight here, smallest first; `below[i]`: the sum of the
        // greatest weights of the terms before `i` in that order.
        let mut order: Vec<usize> = (0..lists.len()).filter(|&t| cursors[t].number.is_some()).collect();
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
        // ties with the worst of the best and wins on its key).
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
        while let Some(n) = order[essential..].iter().filter_map(|&t| cursors[t].number).min() {
            found.clear();
            for &t in &order[essential..] {
                if let Some(w) = cursors[t].take(n, weigh) {
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
                cursors[t].seek(n);
                if let Some(w) = cursors[t].take(n, weigh) {
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
            let mut entry = Entry { score, place: p, number: n, key: None };
            if self.before.contains(&score.to_bits()) {
                self.tie(&mut entry, keys)?;
            }
            if self.heap.len() < self.k {
                self.heap.push(entry);
            } else if self.heap.peek().is_some_and(|worst| entry < *worst) {
                self.heap.pop();
                self.heap.push(entry);
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
        self.before.extend(self.heap.iter().filter(|e| e.place == p).map(|e| e.score.to_bits()));
        Ok(())
    }

    /// Give `entry`, and every text in the heap of its score, its key: texts of different
    /// places that tie are ordered by key (rare: the heap is rebuilt).
    fn tie(&mut self, entry: &mut Entry, keys: &mut [&mut KeyOf<'_>]) -> Result<(), Error> {
        let mut key = |e: &mut Entry| -> Result<(), Error> {
            if e.key.is_none() {
                e.key = Some(keys.get_mut(e.place).ok_or_else(|| no_place(e.place))?(e.number)?);
            }
            Ok(())
        };
        key(entry)?;
        if self.heap.iter().any(|e| e.key.is_none() && e.score.to_bits() == entry.score.to_bits()) {
            let mut all = std::mem::take(&mut self.heap).into_vec();
            for e in all.iter_mut().filter(|e| e.score.to_bits() == entry.score.to_bits()) {
                key(e)?;
            }
            self.heap = BinaryHeap::from(all);
        }
        Ok(())
    }
}

/// Whether a text that can reach `ceiling` at most cannot enter the best for `theta` (with a
/// margin for sums taken in another order, which may round differently).
fn below_threshold(ceiling: f64, theta: f64) -> bool {
    ceiling + ceiling.abs() * 1e-9 <= theta
}

#[cfg(test)]
mod tests {
    use super::super::posting::{Columns, Keyed, NUMBER_BYTES, number_lists, put};
    use super::*;

    /// The weight of a test posting: its tf, scaled by its length (any function will do).
    fn weigh(tf: u32, len: u32) -> f64 {
        f64::from(tf) / f64::from(len)
    }

    /// Per place, per term: keyed postings; and each term's IDF.
    type Places = (Vec<Vec<Vec<Keyed>>>, Vec<f64>);

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
    /// holding term `t` with a chance of one in 2^t; a few texts are copies of others (the
    /// same terms and length: ties across places).
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
        let copies: Vec<(usize, usize, Keyed)> = out
            .iter()
            .enumerate()
            .flat_map(|(p, terms)| {
                terms.iter().enumerate().flat_map(move |(t, l)| l.iter().map(move |k| (p, t, *k)))
            })
            .filter(|(_, _, k)| k.0 % 17 == 3)
            .collect();
        for (p, t, (id, rev, tf, len)) in copies {
            let place = (p + 1 + id as usize) % places;
            out[place][t].push((id + u128::from(records), rev, tf, len));
        }
        for terms in &mut out {
            for list in terms.iter_mut() {
                list.sort_unstable();
            }
        }
        (out, (0..terms).map(|t| 1.0 + t as f64).collect())
    }

    /// Each place numbered: its keys, and per term its postings by number.
    fn numbered((places, _): &Places) -> Vec<(Vec<Key>, Vec<Columns>)> {
        places
            .iter()
            .map(|terms| number_lists(&terms.iter().map(Vec::as_slice).collect::<Vec<_>>()))
            .collect()
    }

    /// The postings of each place's numbered lists as stored columns, per place and term.
    fn stored(numbered: &[(Vec<Key>, Vec<Columns>)]) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
        numbered
            .iter()
            .map(|(_, terms)| {
                terms
                    .iter()
                    .map(|list| {
                        let chunk = list.chunk();
                        let postings: Vec<_> = (0..chunk.len()).filter_map(|i| chunk.get(i)).collect();
                        let (mut n, mut c) = (Vec::new(), Vec::new());
                        put(&mut n, &mut c, &postings);
                        (n, c)
                    })
                    .collect()
            })
            .collect()
    }

    /// The places a search builds: each place's lists cut into chunks, stored in even
    /// places, decoded in odd ones; a term's bound its greatest weight in the place; keys
    /// from the place's numbering.
    fn lists<'a>(
        idfs: &'a [f64],
        numbered: &'a [(Vec<Key>, Vec<Columns>)],
        bytes: &'a [Vec<(Vec<u8>, Vec<u8>)>],
    ) -> Vec<Place<'a, 'a>> {
        numbered
            .iter()
            .zip(bytes)
            .enumerate()
            .map(|(p, ((keys, terms), bytes))| {
                let lists = terms
                    .iter()
                    .zip(bytes)
                    .enumerate()
                    .map(|(t, (list, (n, c)))| {
                        // Stored in chunks of 5, or as the search's columns in one.
                        let chunks: Vec<Chunk<'_>> = if p % 2 == 0 {
                            n.chunks(5 * NUMBER_BYTES)
                                .zip(c.chunks(5 * 8))
                                .map(|(n, c)| Chunk::stored(n, c, &[]))
                                .collect()
                        } else {
                            vec![list.chunk()]
                        };
                        let chunk = list.chunk();
                        let max = (0..chunk.len())
                            .filter_map(|i| chunk.counts(i))
                            .map(|(tf, len)| weigh(tf, len) * idfs[t])
                            .fold(0.0, f64::max);
                        TermList::new(chunks, idfs[t], max)
                    })
                    .collect();
                let keys: Box<dyn FnMut(u32) -> Result<Key, Error>> =
                    Box::new(move |n| keys.get(n as usize).copied().ok_or_else(missing));
                Place { lists, keys }
            })
            .collect()
    }

    #[test]
    fn pruning_finds_the_same_best_as_scoring_everything() {
        for seed in 0..60 {
            let places = random_places(seed, 1 + (seed as usize % 6), 300);
            let numbered = numbered(&places);
            let bytes = stored(&numbered);
            let want = exhaustive(&places);
            for k in [1, 3, 10, 50, 1000, usize::MAX] {
                let mut lists = lists(&places.1, &numbered, &bytes);
                let top = top(&mut lists, k, weigh).unwrap();
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

    fn missing() -> Error {
        Error::Inconsistent { namespace: "t".into(), detail: "no such text".into() }
    }

    /// A place's keys: its numbers' texts.
    fn keys_of(keys: &[Key]) -> Box<dyn FnMut(u32) -> Result<Key, Error> + '_> {
        Box::new(move |n| keys.get(n as usize).copied().ok_or_else(missing))
    }

    #[test]
    fn each_text_of_a_record_is_its_own_candidate() {
        let first = [(1, 0), (1, 3), (2, 0)];
        let a = Columns::of([(0, 4, 4), (1, 2, 4), (2, 1, 4)]);
        let b = Columns::of([(1, 8, 4)]);
        let second = [(3, 1)];
        let c = Columns::of([(0, 1, 10)]);
        let mut places = [
            Place {
                lists: vec![
                    TermList::new(vec![a.chunk()], 1.0, 1.0),
                    TermList::new(vec![b.chunk()], 1.0, 2.0),
                ],
                keys: keys_of(&first),
            },
            Place {
                lists: vec![TermList::new(vec![], 1.0, 0.0), TermList::new(vec![c.chunk()], 1.0, 0.1)],
                keys: keys_of(&second),
            },
        ];
        let top = top(&mut places, 3, weigh).unwrap();
        let got: Vec<(u128, u32, f64)> = top.best.iter().map(|c| (c.id, c.rev, c.score)).collect();
        assert_eq!(got, vec![(1, 3, 2.5), (1, 0, 1.0), (2, 0, 0.25)]);
        assert_eq!(top.threshold, Some(0.25));
    }

    /// Texts of equal scores in two places come in key order, whichever place is searched
    /// first; a place that cannot give a key fails the search.
    #[test]
    fn ties_between_places_are_broken_by_key() {
        let (low, high) = ([(5u128, 0u32), (9, 0)], [(1u128, 0u32), (7, 0)]);
        let postings = Columns::of([(0, 1, 1), (1, 1, 1)]);
        for k in [1, 2, 3, 4] {
            let mut places = [&low, &high].map(|keys| Place {
                lists: vec![TermList::new(vec![postings.chunk()], 1.0, 1.0)],
                keys: keys_of(keys),
            });
            let top = top(&mut places, k, weigh).unwrap();
            let got: Vec<u128> = top.best.iter().map(|c| c.id).collect();
            assert_eq!(got, [1, 5, 7, 9][..k].to_vec(), "k {k}");
        }
        let mut broken =
            [Place { lists: vec![TermList::new(vec![postings.chunk()], 1.0, 1.0)], keys: keys_of(&[]) }];
        assert!(top(&mut broken, 2, weigh).is_err());
    }

    #[test]
    fn no_terms_or_no_postings_give_nothing() {
        let none = |lists| Place { lists, keys: keys_of(&[]) };
        assert!(top(&mut [], 10, weigh).unwrap().best.is_empty());
        assert!(top(&mut [none(vec![])], 10, weigh).unwrap().best.is_empty());
        let empty = TermList::new(vec![Chunk::default()], 1.0, 1.0);
        assert!(top(&mut [none(vec![empty])], 10, weigh).unwrap().best.is_empty());
        let one = Columns::of([(0, 1, 1)]);
        let list = TermList::new(vec![one.chunk()], 1.0, 1.0);
        assert!(top(&mut [none(vec![list])], 0, weigh).unwrap().best.is_empty());
    }
}
