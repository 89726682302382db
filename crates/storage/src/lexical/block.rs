//! Segment blocks (formats 10 to 12): their layout read in place, their encoding, the writer of a
//! segment's blocks, and the inputs of a merge read term by term.

use redb::{ReadableTable, Table};

use super::codec::*;
use super::layout::*;
use super::posting::{BOUND_BYTES, Chunk, fitting};
use crate::error::Error;

/// A block of a segment: `[2][entries u32]`, then per entry the end of its term in the term
/// bytes, the end of its postings in the postings and the end of its pieces' bounds in the
/// bounds (`u32` each), then the term bytes, then the bounds (8 bytes per piece of
/// [`PIECE`] postings, see `posting.rs`), then the postings (28 bytes each, `(id, from_rev)`
/// order within an entry). Format 10 and 11 wrote version 1: no bounds, and two `u32`s per
/// entry. Entries are in term order; a term whose postings do not fit continues in the next
/// block. Read in place: a search finds its term by binary search and decodes only its
/// postings.
pub(super) struct Block<'b> {
    pub(super) entries: usize,
    /// Bytes per entry in the directory: 8 (version 1) or 12.
    width: usize,
    dir: &'b [u8],
    terms: &'b [u8],
    bounds: &'b [u8],
    postings: &'b [u8],
}

/// Where an entry's term, postings and bounds start and end.
type Spans = ((usize, usize), (usize, usize), (usize, usize));

impl<'b> Block<'b> {
    /// The block over its bytes (`None` if malformed).
    pub(super) fn parse(b: &'b [u8]) -> Option<Self> {
        let width = match *b.first()? {
            BLOCK_VERSION_1 => 8,
            BLOCK_VERSION => 12,
            _ => return None,
        };
        let rest = b.get(1..)?;
        let entries = usize::try_from(u32::from_le_bytes(rest.get(..4)?.try_into().ok()?)).ok()?;
        let dir = rest.get(4..4 + entries.checked_mul(width)?)?;
        let mut block = Block { entries, width, dir, terms: &[], bounds: &[], postings: &[] };
        let (terms, postings, bounds) = match entries.checked_sub(1) {
            Some(last) => block.ends(last)?,
            None => (0, 0, 0),
        };
        let body = rest.get(4 + dir.len()..)?;
        block.terms = body.get(..terms)?;
        let body = body.get(terms..)?;
        block.bounds = body.get(..bounds.checked_mul(BOUND_BYTES)?)?;
        block.postings = body.get(block.bounds.len()..)?;
        (block.postings.len() == postings.checked_mul(SEGMENT_POSTING_BYTES)?).then_some(block)
    }

    /// Where entry `i`'s term, postings and bounds end (a block of version 1 has no bounds).
    pub(super) fn ends(&self, i: usize) -> Option<(usize, usize, usize)> {
        let at = |o: usize| {
            self.dir.get(o..o + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes).map(|v| v as usize)
        };
        let o = i.checked_mul(self.width)?;
        let bounds = if self.width == 12 { at(o + 8)? } else { 0 };
        Some((at(o)?, at(o + 4)?, bounds))
    }

    /// Where entry `i`'s term, postings and bounds start and end.
    fn spans(&self, i: usize) -> Option<Spans> {
        let (t0, p0, b0) = match i.checked_sub(1) {
            Some(j) => self.ends(j)?,
            None => (0, 0, 0),
        };
        let (t1, p1, b1) = self.ends(i)?;
        Some(((t0, t1), (p0, p1), (b0, b1)))
    }

    pub(super) fn term(&self, i: usize) -> Option<&'b str> {
        let ((t0, t1), ..) = self.spans(i)?;
        std::str::from_utf8(self.terms.get(t0..t1)?).ok()
    }

    /// Where entry `i`'s term lies in the block's bytes (those [`Self::parse`] was given), so
    /// that a reader going entry by entry finds it again without parsing the block.
    pub(super) fn term_span(&self, i: usize) -> Option<std::ops::Range<usize>> {
        let ((t0, t1), ..) = self.spans(i)?;
        let base = 1 + 4 + self.dir.len();
        (t0 <= t1 && t1 <= self.terms.len()).then_some(base + t0..base + t1)
    }

    /// Entry `i`'s postings, as stored (28 bytes each).
    pub(super) fn posting_bytes(&self, i: usize) -> Option<&'b [u8]> {
        let (_, (p0, p1), _) = self.spans(i)?;
        self.postings.get(p0.checked_mul(SEGMENT_POSTING_BYTES)?..p1.checked_mul(SEGMENT_POSTING_BYTES)?)
    }

    /// Entry `i`'s pieces' bounds, as stored (empty in a block of version 1).
    fn bound_bytes(&self, i: usize) -> Option<&'b [u8]> {
        let (_, _, (b0, b1)) = self.spans(i)?;
        self.bounds.get(b0.checked_mul(BOUND_BYTES)?..b1.checked_mul(BOUND_BYTES)?)
    }

    /// Entry `i`'s postings with their bounds, read in place.
    pub(super) fn chunk(&self, i: usize) -> Option<Chunk<'b>> {
        Some(Chunk::stored(self.posting_bytes(i)?, self.bound_bytes(i)?))
    }

    /// Entry `i`'s postings.
    pub(super) fn postings(&self, i: usize) -> Option<Vec<SegmentPosting>> {
        let mut out = Vec::new();
        self.postings_into(i, &mut out)?;
        Some(out)
    }

    /// Add entry `i`'s postings to `out` (`None` if malformed).
    pub(super) fn postings_into(&self, i: usize, out: &mut Vec<SegmentPosting>) -> Option<()> {
        self.each_posting(i, |p| out.push(p))
    }

    /// Call `f` with each of entry `i`'s postings (`None` if malformed).
    pub(super) fn each_posting(&self, i: usize, mut f: impl FnMut(SegmentPosting)) -> Option<()> {
        for c in self.posting_bytes(i)?.chunks_exact(SEGMENT_POSTING_BYTES) {
            f(super::posting::decode(c)?);
        }
        Some(())
    }

    /// Whether every entry is well formed and in order: terms in strictly increasing order,
    /// postings within a term in strictly increasing `(id, from_rev)` order, and (version 2)
    /// each piece's bounds those of its postings. Checked in place, without copying the
    /// postings out.
    pub(super) fn check(&self) -> bool {
        let key = |c: &[u8]| super::posting::decode(c).map(|p| (p.0, p.1));
        let mut previous: Option<&str> = None;
        for i in 0..self.entries {
            let (Some(term), Some(bytes)) = (self.term(i), self.posting_bytes(i)) else { return false };
            if self.width == 12 && !self.bounds_hold(i) {
                return false;
            }
            let mut list = bytes.chunks_exact(SEGMENT_POSTING_BYTES).map(key);
            let sorted = match list.next() {
                Some(first) => list.try_fold(first, |a, b| (a < b).then_some(b)).is_some(),
                None => true,
            };
            if previous.is_some_and(|p| p >= term) || !sorted {
                return false;
            }
            previous = Some(term);
        }
        true
    }

    /// Whether entry `i`'s stored bounds are those of its pieces.
    fn bounds_hold(&self, i: usize) -> bool {
        let (Some(postings), Some(stored)) = (self.postings(i), self.bound_bytes(i)) else { return false };
        let mut want = Vec::with_capacity(stored.len());
        super::posting::put_bounds(&mut want, &postings);
        want == stored
    }

    /// The entry of `term`, by binary search (`None` if malformed, `Some(None)` if absent).
    pub(super) fn find(&self, term: &str) -> Option<Option<usize>> {
        let (mut lo, mut hi) = (0, self.entries);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.term(mid)?.cmp(term) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(Some(mid)),
            }
        }
        Some(None)
    }

    /// Every entry, [checked](Self::check) (`None` if not in order, or malformed).
    pub(super) fn entries(&self) -> Option<Vec<(&'b str, Vec<SegmentPosting>)>> {
        if !self.check() {
            return None;
        }
        (0..self.entries).map(|i| Some((self.term(i)?, self.postings(i)?))).collect()
    }

    /// How many postings the block holds.
    pub(super) fn len(&self) -> usize {
        self.postings.len() / SEGMENT_POSTING_BYTES
    }
}

/// A block being encoded (see [`Block`]): its directory, term bytes and postings, appended
/// to as entries come, with no allocation per entry.
#[derive(Default)]
pub(super) struct BlockBuf {
    pub(super) entries: u32,
    dir: Vec<u8>,
    terms: Vec<u8>,
    bounds: Vec<u8>,
    postings: Vec<u8>,
}

impl BlockBuf {
    /// Append an entry: a term (greater than the last one's) and its postings in `(id,
    /// from_rev)` order.
    pub(super) fn push(&mut self, term: &str, postings: &[SegmentPosting]) {
        self.terms.extend_from_slice(term.as_bytes());
        for p in postings {
            super::posting::put(&mut self.postings, *p);
        }
        super::posting::put_bounds(&mut self.bounds, postings);
        let ends =
            [self.terms.len(), self.postings.len() / SEGMENT_POSTING_BYTES, self.bounds.len() / BOUND_BYTES];
        for end in ends {
            self.dir.extend_from_slice(&u32::try_from(end).unwrap_or(u32::MAX).to_le_bytes());
        }
        self.entries += 1;
    }

    /// Bytes of the block so far.
    pub(super) fn size(&self) -> usize {
        5 + self.dir.len() + self.terms.len() + self.bounds.len() + self.postings.len()
    }

    /// The encoded block; the buffer is left empty (its allocations kept).
    pub(super) fn take(&mut self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size());
        out.push(BLOCK_VERSION);
        out.extend_from_slice(&self.entries.to_le_bytes());
        out.extend_from_slice(&self.dir);
        out.extend_from_slice(&self.terms);
        out.extend_from_slice(&self.bounds);
        out.extend_from_slice(&self.postings);
        self.entries = 0;
        self.dir.clear();
        self.terms.clear();
        self.bounds.clear();
        self.postings.clear();
        out
    }
}

/// Writes one segment's blocks as its terms come, in order, each block once it is full: a
/// merge holds one block of output, however large the segment.
pub(super) struct BlockWriter {
    ns: String,
    seg: u64,
    block: BlockBuf,
    /// The block's key: its first term, and how many blocks that term's postings went into
    /// before (a term that continues from the previous block starts the next at part 1, 2,
    /// ...), so that the keys are unique and ordered.
    key: Option<(String, u32)>,
}

impl BlockWriter {
    pub(super) fn new(ns: &str, seg: u64) -> Self {
        BlockWriter { ns: ns.to_string(), seg, block: BlockBuf::default(), key: None }
    }

    /// Add a term's postings (in `(id, from_rev)` order; terms in increasing order).
    pub(super) fn push(
        &mut self,
        table: &mut Table<'_, SegmentKey, &'static [u8]>,
        term: &str,
        mut postings: &[SegmentPosting],
    ) -> Result<(), Error> {
        let mut part = 0u32;
        while !postings.is_empty() {
            let head = 12 + term.len();
            if self.block.entries > 0
                && self.block.size() + head + SEGMENT_POSTING_BYTES + BOUND_BYTES > BLOCK_BYTES
            {
                self.flush(table)?;
            }
            let room = fitting(BLOCK_BYTES.saturating_sub(self.block.size() + head)).max(1);
            let (now, rest) = postings.split_at(postings.len().min(room));
            self.key.get_or_insert_with(|| (term.to_string(), part));
            self.block.push(term, now);
            postings = rest;
            part += 1;
        }
        Ok(())
    }

    /// Write the block being filled, if any.
    pub(super) fn flush(&mut self, table: &mut Table<'_, SegmentKey, &'static [u8]>) -> Result<(), Error> {
        if let Some((first, part)) = self.key.take() {
            table.insert((self.ns.as_str(), self.seg, first.as_str(), part), self.block.take().as_slice())?;
        }
        Ok(())
    }
}

/// One input of a merge, read term by term in order: the merge's own postings (sorted by
/// `(term, id, from_rev)`), or a segment read one block at a time, so that a merge of large
/// levels holds a block of each rather than the levels.
///
/// Terms are compared as bytes (UTF-8's byte order is the order of `str`): a block's terms
/// were checked when it was read, and a merge compares each source's head several times per
/// term, so it keeps where the head lies instead of parsing the block and checking the term
/// again each time.
pub(super) enum Source<'p> {
    Memory(&'p [(&'p str, SegmentPosting)]),
    Segment {
        seg: u64,
        /// The current block (checked when read), its number of entries and its next entry.
        block: Vec<u8>,
        entries: usize,
        at: usize,
        /// Where the term of entry `at` lies in `block` (`None` past the last entry).
        head: Option<std::ops::Range<usize>>,
        /// The key of the current block (`None` before the first).
        last: Option<(String, u32)>,
        done: bool,
    },
}

impl Source<'_> {
    /// Read the segment's next block once the current one is used up.
    pub(super) fn fill(
        &mut self,
        table: &impl ReadableTable<SegmentKey, &'static [u8]>,
        ns: &str,
    ) -> Result<(), Error> {
        let Source::Segment { seg, block, entries, at, head, last, done } = self else { return Ok(()) };
        while *at >= *entries && !*done {
            // The first key after the current block's: `part + 1` of its term, or a later term.
            let from = match last {
                Some((term, part)) => (ns, *seg, term.as_str(), part.saturating_add(1)),
                None => (ns, *seg, "", 0u32),
            };
            let next = match table.range(from..(ns, *seg + 1, "", 0u32))?.next() {
                Some(r) => {
                    let (k, v) = r?;
                    let (_, _, first, part) = k.value();
                    let Some(parsed) = Block::parse(v.value()).filter(Block::check) else {
                        return Err(malformed_segment(ns, *seg, first));
                    };
                    *entries = parsed.entries;
                    block.clear();
                    block.extend_from_slice(v.value());
                    *at = 0;
                    Some((first.to_string(), part))
                }
                None => None,
            };
            match next {
                Some(key) => *last = Some(key),
                None => *done = true,
            }
            *head = Block::parse(block).and_then(|b| b.term_span(*at));
        }
        Ok(())
    }

    /// The term at the head (after [`Self::fill`]).
    pub(super) fn head(&self) -> Option<&[u8]> {
        match self {
            Source::Memory(p) => p.first().map(|x| x.0.as_bytes()),
            Source::Segment { block, head, .. } => head.as_ref().and_then(|r| block.get(r.clone())),
        }
    }

    /// Take the postings at the head, which is `term`, into `out`.
    pub(super) fn take(&mut self, term: &[u8], out: &mut Vec<SegmentPosting>) {
        match self {
            Source::Memory(p) => {
                let n = p.partition_point(|x| x.0.as_bytes() == term);
                out.extend(p[..n].iter().map(|x| x.1));
                *p = &p[n..];
            }
            Source::Segment { block, at, head, .. } => {
                // Checked when read (see `fill`).
                let b = Block::parse(block);
                if let Some(b) = &b {
                    b.postings_into(*at, out);
                }
                *at += 1;
                *head = b.and_then(|b| b.term_span(*at));
            }
        }
    }
}

/// Write every segment block of version 1 (formats 10 and 11) again with its pieces' bounds
/// (the upgrade to format 12), under the same key: the same entries and postings, a few
/// bytes more per block. Read and written a batch of blocks at a time.
pub(crate) fn bound_blocks(txn: &redb::WriteTransaction) -> Result<(), Error> {
    type OwnedKey = (String, u64, String, u32);
    let mut table = txn.open_table(crate::tables::SEGMENTS)?;
    let mut after: Option<OwnedKey> = None;
    loop {
        let mut batch: Vec<(OwnedKey, Vec<u8>)> = Vec::new();
        {
            let range = match &after {
                Some((ns, seg, term, part)) => table.range((ns.as_str(), *seg, term.as_str(), *part)..)?,
                None => table.range::<SegmentKey>(..)?,
            };
            for r in range {
                let (k, v) = r?;
                let (ns, seg, first, part) = k.value();
                let key = (ns.to_string(), seg, first.to_string(), part);
                if after.as_ref() == Some(&key) {
                    continue;
                }
                if v.value().first() == Some(&BLOCK_VERSION_1) {
                    let entries = Block::parse(v.value())
                        .and_then(|b| b.entries())
                        .ok_or_else(|| malformed_segment(ns, seg, first))?;
                    let mut buf = BlockBuf::default();
                    for (term, postings) in entries {
                        buf.push(term, &postings);
                    }
                    batch.push((key.clone(), buf.take()));
                }
                after = Some(key);
                if batch.len() >= 256 {
                    break;
                }
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        for ((ns, seg, first, part), bytes) in batch {
            table.insert((ns.as_str(), seg, first.as_str(), part), bytes.as_slice())?;
        }
    }
}

/// The level a merge of `texts` fresh texts starts its segment at: the first whose segments
/// are at least that large (a bulk commit's segment goes straight to a higher level).
pub(super) fn level_for(texts: usize) -> u64 {
    let mut level = 0;
    let mut size = FRESH_LIMIT as usize * SEGMENT_FANOUT;
    while texts >= size && level < 16 {
        level += 1;
        size = size.saturating_mul(SEGMENT_FANOUT);
    }
    level
}
