//! A posting as a segment stores it (formats 9 and 10): `(id, from_rev, tf, doc length)` in
//! 28 bytes, little-endian, and [`Chunk`], a stretch of postings that a search reads in place.

/// A posting: `(id, from_rev, tf, doc length)`.
pub(crate) type Posting = (u128, u32, u32, u32);

/// Bytes of a stored posting: id, from_rev, tf, doc length.
pub(crate) const POSTING_BYTES: usize = 28;

/// Append a posting's 28 bytes to `out`.
pub(crate) fn put(out: &mut Vec<u8>, (id, rev, tf, len): Posting) {
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&rev.to_le_bytes());
    out.extend_from_slice(&tf.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
}

/// A posting from its 28 bytes (`None` if fewer).
pub(crate) fn decode(c: &[u8]) -> Option<Posting> {
    let u32_at = |i: usize| c.get(i..i + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes);
    Some((id_of(c)?, u32_at(16)?, u32_at(20)?, u32_at(24)?))
}

/// The id of a stored posting (`None` if too short).
fn id_of(c: &[u8]) -> Option<u128> {
    Some(u128::from_le_bytes(c.get(..16)?.try_into().ok()?))
}

/// A stretch of one term's postings in `(id, from_rev)` order: as a segment block stores them
/// (read in place, each decoded when visited: a search that skips most of a common term's
/// postings never decodes them), or decoded (posting lists, fresh texts, older formats).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Chunk<'a> {
    Stored(&'a [[u8; POSTING_BYTES]]),
    Decoded(&'a [Posting]),
}

impl<'a> Chunk<'a> {
    /// The stored postings of `bytes` (a trailing piece shorter than a posting is left out:
    /// a block's parser checks the length).
    pub(crate) fn stored(bytes: &'a [u8]) -> Self {
        Chunk::Stored(bytes.as_chunks().0)
    }

    /// How many postings it holds.
    pub(crate) fn len(&self) -> usize {
        match self {
            Chunk::Stored(b) => b.len(),
            Chunk::Decoded(p) => p.len(),
        }
    }

    /// Posting `i` (`None` past the end).
    pub(crate) fn get(&self, i: usize) -> Option<Posting> {
        match self {
            Chunk::Stored(b) => b.get(i).and_then(|c| decode(c)),
            Chunk::Decoded(p) => p.get(i).copied(),
        }
    }

    /// The greatest term frequency and the least text length among its postings (`(0,
    /// u32::MAX)` if none): a BM25 weight grows with the one and falls with the other, so
    /// the two bound every posting's weight.
    pub(crate) fn extremes(&self) -> (u32, u32) {
        let u32_at =
            |c: &[u8; POSTING_BYTES], at: usize| u32::from_le_bytes([c[at], c[at + 1], c[at + 2], c[at + 3]]);
        match self {
            Chunk::Stored(b) => {
                b.iter().fold((0, u32::MAX), |(tf, len), c| (tf.max(u32_at(c, 20)), len.min(u32_at(c, 24))))
            }
            Chunk::Decoded(p) => p.iter().fold((0, u32::MAX), |(tf, len), p| (tf.max(p.2), len.min(p.3))),
        }
    }

    /// The id of posting `i` (`None` past the end).
    pub(crate) fn id(&self, i: usize) -> Option<u128> {
        match self {
            Chunk::Stored(b) => b.get(i).and_then(|c| id_of(c)),
            Chunk::Decoded(p) => p.get(i).map(|p| p.0),
        }
    }
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
        assert_eq!(bytes.len(), postings.len() * POSTING_BYTES);
        for chunk in [Chunk::stored(&bytes), Chunk::Decoded(&postings)] {
            assert_eq!(chunk.len(), 3);
            for (i, &p) in postings.iter().enumerate() {
                assert_eq!(chunk.get(i), Some(p));
                assert_eq!(chunk.id(i), Some(p.0));
            }
            assert_eq!(chunk.get(3), None);
            assert_eq!(chunk.extremes(), (9, 1));
            assert_eq!(chunk.id(usize::MAX), None);
        }
        assert_eq!(Chunk::Decoded(&[]).extremes(), (0, u32::MAX));
        // A torn last posting is not read.
        assert_eq!(Chunk::stored(&bytes[..bytes.len() - 1]).get(2), None);
    }
}
