//! Postings: as segment blocks store them (format 15: a text's number in its segment, tf and
//! text length, 12 bytes in two columns; formats 9 to 14: the text's key, 28 bytes), the
//! bounds of a piece of postings (format 12), and [`Chunk`], a stretch of postings that a
//! search reads in place.

/// A posting with its text's key: `(id, from_rev, tf, doc length)` (the posting lists, the
/// fresh texts, and segment blocks before format 15).
pub(crate) type Keyed = (u128, u32, u32, u32);

/// A text's key: `(id, from_rev)`.
pub(crate) type Key = (u128, u32);

/// A posting as a search reads it: `(number, tf, doc length)`, where the number is the text's
/// within its place (a segment's, from format 15; numbers follow the texts' keys).
pub(crate) type Posting = (u32, u32, u32);

/// Bytes of a stored posting's number.
pub(crate) const NUMBER_BYTES: usize = 4;
/// Bytes of a stored posting's counts: tf and doc length.
pub(crate) const COUNT_BYTES: usize = 8;
/// Bytes of a stored posting (format 15): its number, and its counts in another column.
pub(crate) const POSTING_BYTES: usize = NUMBER_BYTES + COUNT_BYTES;
/// Bytes of a keyed posting (formats 9 to 14): id, from_rev, tf, doc length.
pub(crate) const KEYED_BYTES: usize = 28;

/// Postings per piece: from format 12 a block stores, for each run of this many postings of
/// a term (from the first, the last run shorter), the greatest term frequency and the least
/// text length among them, which bound every posting's BM25 weight in the piece.
pub(crate) const PIECE: usize = 64;

/// Bytes of a piece's bounds: the greatest tf and the least text length (`u32` each).
pub(crate) const BOUND_BYTES: usize = 8;

/// Append postings to a block's columns: their numbers to `numbers`, their counts to `counts`.
pub(crate) fn put(numbers: &mut Vec<u8>, counts: &mut Vec<u8>, postings: &[Posting]) {
    for &(n, tf, len) in postings {
        numbers.extend_from_slice(&n.to_le_bytes());
        counts.extend_from_slice(&tf.to_le_bytes());
        counts.extend_from_slice(&len.to_le_bytes());
    }
}

/// Append the bounds of each piece of postings to `out` (see [`PIECE`]); `counts` gives a
/// posting's tf and doc length.
pub(crate) fn put_bounds<P>(out: &mut Vec<u8>, postings: &[P], counts: impl Fn(&P) -> (u32, u32)) {
    for piece in postings.chunks(PIECE) {
        let (tf, len) =
            piece.iter().map(&counts).fold((0, u32::MAX), |(tf, len), c| (tf.max(c.0), len.min(c.1)));
        out.extend_from_slice(&tf.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
    }
}

/// The number of pieces of `n` postings.
pub(crate) fn pieces(n: usize) -> usize {
    n.div_ceil(PIECE)
}

/// How many postings, with their pieces' bounds, fit in `room` bytes.
pub(crate) fn fitting(room: usize) -> usize {
    let whole = PIECE * POSTING_BYTES + BOUND_BYTES;
    let rest = room % whole;
    (room / whole) * PIECE + rest.saturating_sub(BOUND_BYTES) / POSTING_BYTES
}

/// A keyed posting from its 28 bytes (`None` if fewer).
pub(crate) fn decode_keyed(c: &[u8]) -> Option<Keyed> {
    let u32_at = |i: usize| c.get(i..i + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes);
    let id = c.first_chunk::<16>().map(|b| u128::from_le_bytes(*b))?;
    Some((id, u32_at(16)?, u32_at(20)?, u32_at(24)?))
}

/// Append a keyed posting's 28 bytes to `out` (the layout of formats 9 to 14).
#[cfg(test)]
pub(crate) fn put_keyed(out: &mut Vec<u8>, (id, rev, tf, len): Keyed) {
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&rev.to_le_bytes());
    out.extend_from_slice(&tf.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
}

/// A stretch of one term's postings in number order, in two columns: as a segment block
/// stores them (read in place, each decoded when visited: a search that skips most of a
/// common term's postings never decodes them; the numbers in a column of their own, so that
/// a seek compares 4-byte numbers 16 to a cache line) with their pieces' bounds, or
/// [`Columns`] a search made (posting lists, fresh texts, older formats), without bounds.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Chunk<'a> {
    numbers: &'a [[u8; NUMBER_BYTES]],
    counts: &'a [[u8; COUNT_BYTES]],
    bounds: &'a [[u8; BOUND_BYTES]],
}

impl<'a> Chunk<'a> {
    /// The stored postings of the columns `numbers` and `counts` with the bounds of their
    /// pieces in `bounds` (a trailing piece shorter than a number, counts or bound is left
    /// out, and the shorter column sets the length: a block's parser checks the lengths).
    pub(crate) fn stored(numbers: &'a [u8], counts: &'a [u8], bounds: &'a [u8]) -> Self {
        let (numbers, counts) = (numbers.as_chunks().0, counts.as_chunks().0);
        let n = numbers.len().min(counts.len());
        Chunk { numbers: &numbers[..n], counts: &counts[..n], bounds: bounds.as_chunks().0 }
    }

    /// How many postings it holds.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.numbers.len()
    }

    /// Posting `i` (`None` past the end).
    pub(crate) fn get(&self, i: usize) -> Option<Posting> {
        let (tf, len) = self.counts(i)?;
        Some((self.number(i)?, tf, len))
    }

    /// The term frequency and text length of posting `i` (`None` past the end).
    #[inline]
    pub(crate) fn counts(&self, i: usize) -> Option<(u32, u32)> {
        self.counts.get(i).map(|c| {
            (u32::from_le_bytes([c[0], c[1], c[2], c[3]]), u32::from_le_bytes([c[4], c[5], c[6], c[7]]))
        })
    }

    /// The greatest term frequency and the least text length among its postings (`(0,
    /// u32::MAX)` if none): a BM25 weight grows with the one and falls with the other, so
    /// the two bound every posting's weight. Read from the pieces' bounds where the block
    /// stores them, else from every posting.
    pub(crate) fn extremes(&self) -> (u32, u32) {
        let u32_at = |c: &[u8], at: usize| u32::from_le_bytes([c[at], c[at + 1], c[at + 2], c[at + 3]]);
        let fold = |(tf, len): (u32, u32), (t, l): (u32, u32)| (tf.max(t), len.min(l));
        if self.bounds.len() == pieces(self.len()) {
            self.bounds.iter().map(|b| (u32_at(b, 0), u32_at(b, 4))).fold((0, u32::MAX), fold)
        } else {
            self.counts.iter().map(|c| (u32_at(c, 0), u32_at(c, 4))).fold((0, u32::MAX), fold)
        }
    }

    /// The number of posting `i` (`None` past the end).
    #[inline]
    pub(crate) fn number(&self, i: usize) -> Option<u32> {
        self.numbers.get(i).map(|b| u32::from_le_bytes(*b))
    }

    /// The first posting at or after `from` whose number is not below `n` (the length if
    /// none), by galloping: cheap for a near target, logarithmic for a far one. The numbers
    /// must be in order from `from` on.
    pub(crate) fn gallop(&self, from: usize, n: u32) -> usize {
        let numbers = self.numbers;
        gallop(numbers.len(), from, |i| u32::from_le_bytes(numbers[i]) < n)
    }
}

/// Postings a search numbered, in the columns of a [`Chunk`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Columns {
    numbers: Vec<[u8; NUMBER_BYTES]>,
    counts: Vec<[u8; COUNT_BYTES]>,
}

impl Columns {
    /// The columns of `postings` (in number order).
    pub(crate) fn of(postings: impl IntoIterator<Item = Posting>) -> Self {
        let mut out = Columns::default();
        for (n, tf, len) in postings {
            out.numbers.push(n.to_le_bytes());
            let mut c = [0u8; COUNT_BYTES];
            c[..4].copy_from_slice(&tf.to_le_bytes());
            c[4..].copy_from_slice(&len.to_le_bytes());
            out.counts.push(c);
        }
        out
    }

    /// Its postings as a chunk (without bounds).
    pub(crate) fn chunk(&self) -> Chunk<'_> {
        Chunk { numbers: &self.numbers, counts: &self.counts, bounds: &[] }
    }
}

/// The first index at or after `from` (below `len`) for which `below` is false (`len` if
/// none), for a `below` that is true then false: probes 1, 2, 4, ... past `from`, then
/// bisects the last step. `below` is called only with indexes below `len`.
#[inline]
fn gallop(len: usize, from: usize, below: impl Fn(usize) -> bool) -> usize {
    if from >= len || !below(from) {
        return from.min(len);
    }
    // `below(lo)`; `hi` is past the target or the end.
    let (mut lo, mut step) = (from, 1);
    let mut hi = loop {
        let probe = lo.saturating_add(step);
        if probe >= len || !below(probe) {
            break probe.min(len);
        }
        lo = probe;
        step *= 2;
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if below(mid) { lo = mid } else { hi = mid }
    }
    hi
}

/// Number keyed lists of postings by their keys' order: every key the lists hold, sorted,
/// and each list with its keys replaced by their numbers (a place whose postings carry
/// their keys: the posting lists, the fresh texts, segments of older formats). Each list
/// must be in key order.
pub(crate) fn number_lists(lists: &[&[Keyed]]) -> (Vec<Key>, Vec<Columns>) {
    let mut keys: Vec<Key> = lists.iter().flat_map(|l| l.iter()).map(|p| (p.0, p.1)).collect();
    keys.sort_unstable();
    keys.dedup();
    let numbered = lists
        .iter()
        .map(|list| {
            let mut at = 0;
            Columns::of(list.iter().map(|p| {
                at += keys[at..].partition_point(|k| *k < (p.0, p.1));
                (u32::try_from(at).unwrap_or(u32::MAX), p.2, p.3)
            }))
        })
        .collect();
    (keys, numbered)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(postings: &[Posting]) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let (mut numbers, mut counts, mut bounds) = (Vec::new(), Vec::new(), Vec::new());
        put(&mut numbers, &mut counts, postings);
        put_bounds(&mut bounds, postings, |p| (p.1, p.2));
        (numbers, counts, bounds)
    }

    #[test]
    fn stored_and_decoded_chunks_read_alike() {
        let postings: Vec<Posting> = vec![(1, 2, 30), (u32::MAX - 1, 1, 12), (u32::MAX, 9, 1)];
        let (numbers, counts, bounds) = columns(&postings);
        assert_eq!(numbers.len() + counts.len(), postings.len() * POSTING_BYTES);
        assert_eq!(bounds.len(), BOUND_BYTES);
        let columns = Columns::of(postings.iter().copied());
        for chunk in [
            Chunk::stored(&numbers, &counts, &bounds),
            Chunk::stored(&numbers, &counts, &[]),
            columns.chunk(),
        ] {
            assert_eq!(chunk.len(), 3);
            for (i, &p) in postings.iter().enumerate() {
                assert_eq!(chunk.get(i), Some(p));
                assert_eq!(chunk.number(i), Some(p.0));
            }
            assert_eq!(chunk.get(3), None);
            assert_eq!(chunk.extremes(), (9, 1));
            assert_eq!(chunk.number(usize::MAX), None);
        }
        assert_eq!(Chunk::default().extremes(), (0, u32::MAX));
        // A torn last posting is not read.
        assert_eq!(Chunk::stored(&numbers, &counts[..counts.len() - 1], &[]).get(2), None);
        assert_eq!(Chunk::stored(&numbers[..numbers.len() - 1], &counts, &[]).len(), 2);
    }

    #[test]
    fn keyed_postings_round_trip() {
        for p in [(1u128, 0, 2, 30), (u128::MAX, u32::MAX, 9, 1)] {
            let mut b = Vec::new();
            put_keyed(&mut b, p);
            assert_eq!(b.len(), KEYED_BYTES);
            assert_eq!(decode_keyed(&b), Some(p));
            assert_eq!(decode_keyed(&b[..KEYED_BYTES - 1]), None);
        }
    }

    #[test]
    fn galloping_finds_the_first_not_below() {
        let ns: Vec<Posting> = [2u32, 3, 5, 8, 13, 21, 34, 55, 89].iter().map(|&i| (i, 1, 1)).collect();
        let (numbers, counts, _) = columns(&ns);
        let columns = Columns::of(ns.iter().copied());
        for chunk in [columns.chunk(), Chunk::stored(&numbers, &counts, &[])] {
            for from in 0..=ns.len() + 1 {
                for target in 0..100u32 {
                    let want = (from..ns.len())
                        .find(|&i| ns[i].0 >= target)
                        .unwrap_or(ns.len())
                        .max(from.min(ns.len()));
                    assert_eq!(chunk.gallop(from, target), want, "from {from}, target {target}");
                }
            }
        }
    }

    #[test]
    fn pieces_are_bounded_one_by_one() {
        let postings: Vec<Posting> = (0..150u32).map(|i| (i, 1 + i % 70, 200 - i)).collect();
        let (_, _, bounds) = columns(&postings);
        assert_eq!(bounds.len(), pieces(150) * BOUND_BYTES);
        assert_eq!(pieces(150), 3);
        let read = |j: usize| {
            let b = &bounds[j * BOUND_BYTES..(j + 1) * BOUND_BYTES];
            (u32::from_le_bytes(b[..4].try_into().unwrap()), u32::from_le_bytes(b[4..].try_into().unwrap()))
        };
        assert_eq!(read(0), (64, 137));
        assert_eq!(read(1), (70, 73));
        assert_eq!(read(2), (70, 51));
    }

    #[test]
    fn fitting_never_overfills() {
        for room in 0..5000 {
            let n = fitting(room);
            assert!(n * POSTING_BYTES + pieces(n) * BOUND_BYTES <= room, "{room}");
            let more = n + 1;
            assert!(more * POSTING_BYTES + pieces(more) * BOUND_BYTES > room, "{room}");
        }
    }

    #[test]
    fn keyed_lists_are_numbered_in_key_order() {
        let a: Vec<Keyed> = vec![(1, 0, 1, 5), (3, 2, 2, 6), (9, 0, 1, 7)];
        let b: Vec<Keyed> = vec![(3, 1, 4, 8), (3, 2, 1, 6), (10, 0, 1, 9)];
        let (keys, numbered) = number_lists(&[&a, &b, &[]]);
        assert_eq!(keys, vec![(1, 0), (3, 1), (3, 2), (9, 0), (10, 0)]);
        assert_eq!(numbered[0], Columns::of([(0, 1, 5), (2, 2, 6), (3, 1, 7)]));
        assert_eq!(numbered[1], Columns::of([(1, 4, 8), (2, 1, 6), (4, 1, 9)]));
        assert_eq!(numbered[2].chunk().len(), 0);
    }
}
