//! A posting as a segment stores it (formats 9 to 12): `(id, from_rev, tf, doc length)` in
//! 28 bytes, little-endian; the bounds of a piece of postings (format 12); and [`Chunk`], a
//! stretch of postings that a search reads in place.

/// A posting: `(id, from_rev, tf, doc length)`.
pub(crate) type Posting = (u128, u32, u32, u32);

/// What orders postings: a text's `(id, from_rev)`.
pub(crate) type Key = (u128, u32);

/// Bytes of a stored posting: id, from_rev, tf, doc length.
pub(crate) const POSTING_BYTES: usize = 28;

/// Postings per piece: from format 12 a block stores, for each run of this many postings of
/// a term (from the first, the last run shorter), the greatest term frequency and the least
/// text length among them, which bound every posting's BM25 weight in the piece.
pub(crate) const PIECE: usize = 64;

/// Bytes of a piece's bounds: the greatest tf and the least text length (`u32` each).
pub(crate) const BOUND_BYTES: usize = 8;

/// Append a posting's 28 bytes to `out`.
pub(crate) fn put(out: &mut Vec<u8>, (id, rev, tf, len): Posting) {
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&rev.to_le_bytes());
    out.extend_from_slice(&tf.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
}

/// Append the bounds of each piece of `postings` to `out` (see [`PIECE`]).
pub(crate) fn put_bounds(out: &mut Vec<u8>, postings: &[Posting]) {
    for piece in postings.chunks(PIECE) {
        let (tf, len) = extremes_of(piece);
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

/// The greatest tf and the least length of `postings` (`(0, u32::MAX)` if none).
fn extremes_of(postings: &[Posting]) -> (u32, u32) {
    postings.iter().fold((0, u32::MAX), |(tf, len), p| (tf.max(p.2), len.min(p.3)))
}

/// A posting from its 28 bytes (`None` if fewer).
pub(crate) fn decode(c: &[u8]) -> Option<Posting> {
    let u32_at = |i: usize| c.get(i..i + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes);
    Some((id_of(c)?, u32_at(16)?, u32_at(20)?, u32_at(24)?))
}

/// The id of a stored posting (`None` if too short).
fn id_of(c: &[u8]) -> Option<u128> {
    c.first_chunk::<16>().map(|b| u128::from_le_bytes(*b))
}

/// The key of a stored posting (a search reads it for every posting it steps over or probes).
#[inline]
fn stored_key(c: &[u8; POSTING_BYTES]) -> Key {
    let (id, rest) = c.split_at(16);
    let id = id.first_chunk::<16>().map_or(0, |b| u128::from_le_bytes(*b));
    (id, rest.first_chunk::<4>().map_or(0, |b| u32::from_le_bytes(*b)))
}

/// A stretch of one term's postings in `(id, from_rev)` order: as a segment block stores them
/// (read in place, each decoded when visited: a search that skips most of a common term's
/// postings never decodes them) with their pieces' bounds (none in a block of format 11),
/// or decoded (posting lists, fresh texts, older formats).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Chunk<'a> {
    Stored { postings: &'a [[u8; POSTING_BYTES]], bounds: &'a [[u8; BOUND_BYTES]] },
    Decoded(&'a [Posting]),
}

impl<'a> Chunk<'a> {
    /// The stored postings of `bytes` with the bounds of their pieces in `bounds` (empty if
    /// the block has none; a trailing piece shorter than a posting or a bound is left out: a
    /// block's parser checks the lengths).
    pub(crate) fn stored(bytes: &'a [u8], bounds: &'a [u8]) -> Self {
        Chunk::Stored { postings: bytes.as_chunks().0, bounds: bounds.as_chunks().0 }
    }

    /// How many postings it holds.
    pub(crate) fn len(&self) -> usize {
        match self {
            Chunk::Stored { postings, .. } => postings.len(),
            Chunk::Decoded(p) => p.len(),
        }
    }

    /// Posting `i` (`None` past the end).
    pub(crate) fn get(&self, i: usize) -> Option<Posting> {
        match self {
            Chunk::Stored { postings, .. } => postings.get(i).and_then(|c| decode(c)),
            Chunk::Decoded(p) => p.get(i).copied(),
        }
    }

    /// The term frequency and text length of posting `i` (`None` past the end).
    #[inline]
    pub(crate) fn counts(&self, i: usize) -> Option<(u32, u32)> {
        match self {
            Chunk::Stored { postings, .. } => postings.get(i).map(|c| {
                let u32_at = |at: usize| u32::from_le_bytes([c[at], c[at + 1], c[at + 2], c[at + 3]]);
                (u32_at(20), u32_at(24))
            }),
            Chunk::Decoded(p) => p.get(i).map(|p| (p.2, p.3)),
        }
    }

    /// The greatest term frequency and the least text length among its postings (`(0,
    /// u32::MAX)` if none): a BM25 weight grows with the one and falls with the other, so
    /// the two bound every posting's weight. Read from the pieces' bounds where the block
    /// stores them, else from every posting.
    pub(crate) fn extremes(&self) -> (u32, u32) {
        let u32_at = |c: &[u8], at: usize| u32::from_le_bytes([c[at], c[at + 1], c[at + 2], c[at + 3]]);
        let fold = |(tf, len): (u32, u32), (t, l): (u32, u32)| (tf.max(t), len.min(l));
        match self {
            Chunk::Stored { postings, bounds } if bounds.len() == pieces(postings.len()) => {
                bounds.iter().map(|b| (u32_at(b, 0), u32_at(b, 4))).fold((0, u32::MAX), fold)
            }
            Chunk::Stored { postings, .. } => {
                postings.iter().map(|c| (u32_at(c, 20), u32_at(c, 24))).fold((0, u32::MAX), fold)
            }
            Chunk::Decoded(p) => extremes_of(p),
        }
    }

    /// The key of posting `i` (`None` past the end).
    #[inline]
    pub(crate) fn key(&self, i: usize) -> Option<Key> {
        match self {
            Chunk::Stored { postings, .. } => postings.get(i).map(stored_key),
            Chunk::Decoded(p) => p.get(i).map(|p| (p.0, p.1)),
        }
    }

    /// The first posting at or after `from` whose key is not below `key` (the length if
    /// none), by galloping: cheap for a near target, logarithmic for a far one. The keys must
    /// be in order from `from` on.
    pub(crate) fn gallop(&self, from: usize, key: Key) -> usize {
        match self {
            Chunk::Stored { postings, .. } => {
                gallop(postings.len(), from, |i| stored_key(&postings[i]) < key)
            }
            Chunk::Decoded(p) => gallop(p.len(), from, |i| (p[i].0, p[i].1) < key),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_and_decoded_chunks_read_alike() {
        let postings: Vec<Posting> =
            vec![(1, 0, 2, 30), (u128::MAX - 1, 7, 1, 12), (u128::MAX, u32::MAX, 9, 1)];
        let mut bytes = Vec::new();
        for &p in &postings {
            put(&mut bytes, p);
        }
        let mut bounds = Vec::new();
        put_bounds(&mut bounds, &postings);
        assert_eq!(bytes.len(), postings.len() * POSTING_BYTES);
        assert_eq!(bounds.len(), BOUND_BYTES);
        for chunk in [Chunk::stored(&bytes, &bounds), Chunk::stored(&bytes, &[]), Chunk::Decoded(&postings)] {
            assert_eq!(chunk.len(), 3);
            for (i, &p) in postings.iter().enumerate() {
                assert_eq!(chunk.get(i), Some(p));
                assert_eq!(chunk.key(i), Some((p.0, p.1)));
            }
            assert_eq!(chunk.get(3), None);
            assert_eq!(chunk.extremes(), (9, 1));
            assert_eq!(chunk.key(usize::MAX), None);
        }
        assert_eq!(Chunk::Decoded(&[]).extremes(), (0, u32::MAX));
        // A torn last posting is not read.
        assert_eq!(Chunk::stored(&bytes[..bytes.len() - 1], &[]).get(2), None);
    }

    #[test]
    fn galloping_finds_the_first_not_below() {
        let ids: Vec<Posting> = [2u128, 3, 5, 8, 13, 21, 34, 55, 89].iter().map(|&i| (i, 1, 1, 1)).collect();
        let mut bytes = Vec::new();
        ids.iter().for_each(|&p| put(&mut bytes, p));
        for chunk in [Chunk::Decoded(&ids), Chunk::stored(&bytes, &[])] {
            for from in 0..=ids.len() + 1 {
                for target in (0..100u128).flat_map(|id| (0..3).map(move |rev| (id, rev))) {
                    let want = (from..ids.len())
                        .find(|&i| (ids[i].0, ids[i].1) >= target)
                        .unwrap_or(ids.len())
                        .max(from.min(ids.len()));
                    assert_eq!(chunk.gallop(from, target), want, "from {from}, target {target:?}");
                }
            }
        }
    }

    #[test]
    fn pieces_are_bounded_one_by_one() {
        let postings: Vec<Posting> = (0..150u32).map(|i| (u128::from(i), 0, 1 + i % 70, 200 - i)).collect();
        let mut bounds = Vec::new();
        put_bounds(&mut bounds, &postings);
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
}
