//! Segment blocks (formats 10 to 15): their layout read in place, their encoding, the writer of a
//! segment's blocks, and the inputs of a merge read term by term.

use redb::{ReadableTable, Table};

use super::codec::*;
use super::layout::*;
use super::posting::*;
use crate::error::Error;

/// A block of a segment: `[3][entries u32]`, then per entry the end of its term in the term
/// bytes, the end of its postings in the postings and the end of its pieces' bounds in the
/// bounds (`u32` each), then the term bytes, then the bounds (8 bytes per piece of
/// [`PIECE`](super::posting::PIECE) postings, see `posting.rs`), then the postings in two
/// columns: every posting's text number (4 bytes), then every posting's tf and text length
/// (8 bytes), in number order within an entry. Entries are in term order; a term whose
/// postings do not fit continues in the next block. Read in place: a search finds its term
/// by binary search and decodes only its postings.
///
/// Since format 17 a block (version 4) ends with the CRC-32 of its bytes, checked by
/// [`Block::parse`]: damage inside a block (which spans several pages of the file) makes it
/// unreadable, an error and a damage mark, never other postings. Formats 15 and 16 wrote
/// version 3, the same without the checksum; the upgrade to 17 seals them.
///
/// Formats 10 to 14 wrote **keyed** blocks: version 1 (formats 10 and 11: no bounds, two
/// `u32`s per entry) and version 2, whose postings are 28 bytes, `(id, from_rev, tf, doc
/// length)`, in key order. A read-only handle on such a file reads them as they are; the
/// upgrade to format 15 numbers them.
pub(super) struct Block<'b> {
    pub(super) entries: usize,
    version: u8,
    dir: &'b [u8],
    terms: &'b [u8],
    bounds: &'b [u8],
    /// Version 3: the number column, then the counts column.
    numbers: &'b [u8],
    counts: &'b [u8],
    /// Versions 1 and 2: the keyed postings.
    keyed: &'b [u8],
}

/// Where an entry's term, postings and bounds start and end.
type Spans = ((usize, usize), (usize, usize), (usize, usize));

impl<'b> Block<'b> {
    /// The block over its bytes (`None` if malformed, or if a sealed block fails its
    /// checksum).
    pub(super) fn parse(b: &'b [u8]) -> Option<Self> {
        let mut version = *b.first()?;
        let b = if version == BLOCK_VERSION {
            if !super::codec::seal_holds(b) {
                return None;
            }
            // Version 3's layout, before the checksum.
            version = BLOCK_VERSION_3;
            b.get(..b.len() - 4)?
        } else {
            b
        };
        let width = match version {
            BLOCK_VERSION_1 => 8,
            BLOCK_VERSION_2 | BLOCK_VERSION_3 => 12,
            _ => return None,
        };
        let rest = b.get(1..)?;
        let entries = usize::try_from(u32::from_le_bytes(rest.get(..4)?.try_into().ok()?)).ok()?;
        let dir = rest.get(4..4 + entries.checked_mul(width)?)?;
        let mut block =
            Block { entries, version, dir, terms: &[], bounds: &[], numbers: &[], counts: &[], keyed: &[] };
        let (terms, postings, bounds) = match entries.checked_sub(1) {
            Some(last) => block.ends(last)?,
            None => (0, 0, 0),
        };
        let body = rest.get(4 + dir.len()..)?;
        block.terms = body.get(..terms)?;
        let body = body.get(terms..)?;
        block.bounds = body.get(..bounds.checked_mul(BOUND_BYTES)?)?;
        let body = body.get(block.bounds.len()..)?;
        if version == BLOCK_VERSION_3 {
            block.numbers = body.get(..postings.checked_mul(NUMBER_BYTES)?)?;
            block.counts = body.get(block.numbers.len()..)?;
            (block.counts.len() == postings.checked_mul(COUNT_BYTES)?).then_some(block)
        } else {
            block.keyed = body;
            (body.len() == postings.checked_mul(KEYED_BYTES)?).then_some(block)
        }
    }

    /// Whether its postings are numbered (versions 3 and 4), not keyed.
    pub(super) fn numbered(&self) -> bool {
        self.version == BLOCK_VERSION_3
    }

    /// Where entry `i`'s term, postings and bounds end (a block of version 1 has no bounds).
    pub(super) fn ends(&self, i: usize) -> Option<(usize, usize, usize)> {
        let at = |o: usize| {
            self.dir.get(o..o + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes).map(|v| v as usize)
        };
        let o = i.checked_mul(if self.version == BLOCK_VERSION_1 { 8 } else { 12 })?;
        let bounds = if self.version == BLOCK_VERSION_1 { 0 } else { at(o + 8)? };
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

    /// Entry `i`'s pieces' bounds, as stored (empty in a block of version 1).
    fn bound_bytes(&self, i: usize) -> Option<&'b [u8]> {
        let (_, _, (b0, b1)) = self.spans(i)?;
        self.bounds.get(b0.checked_mul(BOUND_BYTES)?..b1.checked_mul(BOUND_BYTES)?)
    }

    /// Entry `i`'s numbered postings with their bounds, read in place (`None` in a keyed
    /// block).
    pub(super) fn chunk(&self, i: usize) -> Option<Chunk<'b>> {
        if !self.numbered() {
            return None;
        }
        let (_, (p0, p1), _) = self.spans(i)?;
        let numbers = self.numbers.get(p0.checked_mul(NUMBER_BYTES)?..p1.checked_mul(NUMBER_BYTES)?)?;
        let counts = self.counts.get(p0.checked_mul(COUNT_BYTES)?..p1.checked_mul(COUNT_BYTES)?)?;
        Some(Chunk::stored(numbers, counts, self.bound_bytes(i)?))
    }

    /// Entry `i`'s numbered postings (`None` in a keyed block, or if malformed).
    pub(super) fn postings(&self, i: usize) -> Option<Vec<Posting>> {
        let chunk = self.chunk(i)?;
        (0..chunk.len()).map(|j| chunk.get(j)).collect()
    }

    /// Entry `i`'s keyed postings (`None` in a numbered block, or if malformed).
    pub(super) fn keyed(&self, i: usize) -> Option<Vec<Keyed>> {
        if self.numbered() {
            return None;
        }
        let (_, (p0, p1), _) = self.spans(i)?;
        let bytes = self.keyed.get(p0.checked_mul(KEYED_BYTES)?..p1.checked_mul(KEYED_BYTES)?)?;
        bytes.chunks_exact(KEYED_BYTES).map(decode_keyed).collect()
    }

    /// Entry `i`'s postings as `(order, tf, doc length)`, where the order is the number or
    /// the key.
    fn counted(&self, i: usize) -> Option<Vec<(Key, u32, u32)>> {
        if self.numbered() {
            Some(self.postings(i)?.into_iter().map(|p| ((u128::from(p.0), 0), p.1, p.2)).collect())
        } else {
            Some(self.keyed(i)?.into_iter().map(|p| ((p.0, p.1), p.2, p.3)).collect())
        }
    }

    /// Whether every entry is well formed and in order: terms in strictly increasing order,
    /// postings within a term in strictly increasing number (or key) order, and (versions 2
    /// and 3) each piece's bounds those of its postings. Checked without copying the block.
    pub(super) fn check(&self) -> bool {
        let mut previous: Option<&str> = None;
        for i in 0..self.entries {
            let (Some(term), Some(list), Some(stored)) = (self.term(i), self.counted(i), self.bound_bytes(i))
            else {
                return false;
            };
            if self.version != BLOCK_VERSION_1 {
                let mut want = Vec::with_capacity(stored.len());
                put_bounds(&mut want, &list, |p| (p.1, p.2));
                if want != stored {
                    return false;
                }
            }
            let sorted = list.windows(2).all(|w| w[0].0 < w[1].0);
            if previous.is_some_and(|p| p >= term) || !sorted {
                return false;
            }
            previous = Some(term);
        }
        true
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

    /// Every entry of a numbered block, [checked](Self::check) (`None` if keyed, not in
    /// order, or malformed).
    pub(super) fn entries(&self) -> Option<Vec<(&'b str, Vec<Posting>)>> {
        if !self.numbered() || !self.check() {
            return None;
        }
        (0..self.entries).map(|i| Some((self.term(i)?, self.postings(i)?))).collect()
    }

    /// Every entry of a keyed block, [checked](Self::check) (`None` if numbered, not in
    /// order, or malformed).
    pub(super) fn keyed_entries(&self) -> Option<Vec<(&'b str, Vec<Keyed>)>> {
        if self.numbered() || !self.check() {
            return None;
        }
        (0..self.entries).map(|i| Some((self.term(i)?, self.keyed(i)?))).collect()
    }

    /// How many postings the block holds.
    pub(super) fn len(&self) -> usize {
        if self.numbered() { self.numbers.len() / NUMBER_BYTES } else { self.keyed.len() / KEYED_BYTES }
    }
}

/// A block being encoded (see [`Block`]): its directory, term bytes, bounds and columns,
/// appended to as entries come, with no allocation per entry.
#[derive(Default)]
pub(super) struct BlockBuf {
    pub(super) entries: u32,
    dir: Vec<u8>,
    terms: Vec<u8>,
    bounds: Vec<u8>,
    numbers: Vec<u8>,
    counts: Vec<u8>,
}

impl BlockBuf {
    /// Append an entry: a term (greater than the last one's) and its postings in number
    /// order.
    pub(super) fn push(&mut self, term: &str, postings: &[Posting]) {
        self.terms.extend_from_slice(term.as_bytes());
        put(&mut self.numbers, &mut self.counts, postings);
        put_bounds(&mut self.bounds, postings, |p| (p.1, p.2));
        let ends = [self.terms.len(), self.numbers.len() / NUMBER_BYTES, self.bounds.len() / BOUND_BYTES];
        for end in ends {
            self.dir.extend_from_slice(&u32::try_from(end).unwrap_or(u32::MAX).to_le_bytes());
        }
        self.entries += 1;
    }

    /// Bytes of the block so far (its checksum included).
    pub(super) fn size(&self) -> usize {
        9 + self.dir.len() + self.terms.len() + self.bounds.len() + self.numbers.len() + self.counts.len()
    }

    /// The encoded block; the buffer is left empty (its allocations kept).
    pub(super) fn take(&mut self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size());
        out.push(BLOCK_VERSION);
        out.extend_from_slice(&self.entries.to_le_bytes());
        for part in [&mut self.dir, &mut self.terms, &mut self.bounds, &mut self.numbers, &mut self.counts] {
            out.extend_from_slice(part);
            part.clear();
        }
        self.entries = 0;
        super::codec::seal(&mut out);
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
    /// Whether any block was written.
    pub(super) wrote: bool,
}

impl BlockWriter {
    pub(super) fn new(ns: &str, seg: u64) -> Self {
        BlockWriter { ns: ns.to_string(), seg, block: BlockBuf::default(), key: None, wrote: false }
    }

    /// Add a term's postings (in number order; terms in increasing order).
    pub(super) fn push(
        &mut self,
        table: &mut Table<'_, SegmentKey, &'static [u8]>,
        term: &str,
        mut postings: &[Posting],
    ) -> Result<(), Error> {
        let mut part = 0u32;
        while !postings.is_empty() {
            let head = 12 + term.len();
            if self.block.entries > 0 && self.block.size() + head + POSTING_BYTES + BOUND_BYTES > BLOCK_BYTES
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
            self.wrote = true;
        }
        Ok(())
    }
}

/// One input of a merge, read term by term in order: the merge's own postings (sorted by
/// `(term, id, from_rev)`), or a segment read one block at a time, so that a merge of large
/// levels holds a block of each rather than the levels. Each gives its postings with the
/// numbers of the merge's segment: the memory's by finding their keys in the merge's list of
/// texts, a segment's through `renumber` (its numbers to the merge's).
///
/// Terms are compared as bytes (UTF-8's byte order is the order of `str`): a block's terms
/// were checked when it was read, and a merge compares each source's head several times per
/// term, so it keeps where the head lies instead of parsing the block and checking the term
/// again each time.
pub(super) enum Source<'p> {
    Memory(&'p [(&'p str, Keyed)]),
    Segment {
        seg: u64,
        renumber: Vec<u32>,
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
    /// A segment to be read from its first block, its numbers becoming `renumber`'s.
    pub(super) fn segment(seg: u64, renumber: Vec<u32>) -> Self {
        Source::Segment {
            seg,
            renumber,
            block: Vec::new(),
            entries: 0,
            at: 0,
            head: None,
            last: None,
            done: false,
        }
    }

    /// Read the segment's next block once the current one is used up.
    pub(super) fn fill(
        &mut self,
        table: &impl ReadableTable<SegmentKey, &'static [u8]>,
        ns: &str,
    ) -> Result<(), Error> {
        let Source::Segment { seg, block, entries, at, head, last, done, .. } = self else { return Ok(()) };
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
                    let Some(parsed) = Block::parse(v.value()).filter(|b| b.numbered() && b.check()) else {
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

    /// Take the postings at the head, which is `term`, into `out`, numbered by `texts` (the
    /// merge's list of text keys, in order).
    pub(super) fn take(&mut self, term: &[u8], texts: &[Key], out: &mut Vec<Posting>) {
        match self {
            Source::Memory(p) => {
                let n = p.partition_point(|x| x.0.as_bytes() == term);
                out.extend(p[..n].iter().filter_map(|(_, (id, rev, tf, len))| {
                    let at = texts.binary_search(&(*id, *rev)).ok()?;
                    Some((u32::try_from(at).ok()?, *tf, *len))
                }));
                *p = &p[n..];
            }
            Source::Segment { block, at, head, renumber, .. } => {
                // Checked when read (see `fill`).
                let b = Block::parse(block);
                if let Some(list) = b.as_ref().and_then(|b| b.postings(*at)) {
                    out.extend(list.into_iter().filter_map(|(n, tf, len)| {
                        renumber.get(n as usize).filter(|m| **m != u32::MAX).map(|m| (*m, tf, len))
                    }));
                }
                *at += 1;
                *head = b.and_then(|b| b.term_span(*at));
            }
        }
    }
}

/// Number every keyed segment (blocks of versions 1 and 2, formats 10 to 14: the upgrade to
/// format 15): per segment, its texts' keys are gathered from its postings and written as its
/// list of text numbers, then each block is written again, numbered, under the same key (the
/// same entries, in fewer bytes). Read and written a batch of blocks at a time.
pub(crate) fn number_blocks(txn: &redb::WriteTransaction) -> Result<(), Error> {
    type OwnedKey = (String, u64, String, u32);
    let mut table = txn.open_table(crate::tables::SEGMENTS)?;
    let mut numbers = txn.open_table(crate::tables::SEGMENT_TEXTS)?;
    // Every segment, with its texts' keys.
    let mut segs: Vec<((String, u64), Vec<Key>)> = Vec::new();
    for r in table.iter()? {
        let (k, v) = r?;
        let (ns, seg, first, _) = k.value();
        let Some(entries) = Block::parse(v.value()).and_then(|b| b.keyed_entries()) else {
            if Block::parse(v.value()).is_some_and(|b| b.numbered()) {
                continue;
            }
            return Err(malformed_segment(ns, seg, first));
        };
        if segs.last().is_none_or(|s| s.0.0 != ns || s.0.1 != seg) {
            segs.push(((ns.to_string(), seg), Vec::new()));
        }
        if let Some((_, keys)) = segs.last_mut() {
            keys.extend(entries.iter().flat_map(|e| e.1.iter().map(|p| (p.0, p.1))));
            // A text has a posting per term: keep a list of each text, not of each posting.
            if keys.len() >= 1 << 20 {
                keys.sort_unstable();
                keys.dedup();
            }
        }
    }
    for ((ns, seg), keys) in &mut segs {
        keys.sort_unstable();
        keys.dedup();
        super::numbers::write(&mut numbers, ns, *seg, keys)?;
    }
    let mut after: Option<OwnedKey> = None;
    let mut at = 0;
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
                if let Some(entries) = Block::parse(v.value()).and_then(|b| b.keyed_entries()) {
                    while segs.get(at).is_some_and(|s| (s.0.0.as_str(), s.0.1) < (ns, seg)) {
                        at += 1;
                    }
                    let texts = segs.get(at).map_or(&[][..], |s| &s.1[..]);
                    let mut buf = BlockBuf::default();
                    for (term, postings) in entries {
                        let numbered: Option<Vec<Posting>> = postings
                            .iter()
                            .map(|p| {
                                let n = texts.binary_search(&(p.0, p.1)).ok()?;
                                Some((u32::try_from(n).ok()?, p.2, p.3))
                            })
                            .collect();
                        buf.push(term, &numbered.ok_or_else(|| malformed_segment(ns, seg, first))?);
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

/// A block of version 3 sealed (version 4), for the upgrade to format 17; `None` if it is not
/// a well-formed block of version 3.
pub(crate) fn seal_block(b: &[u8]) -> Option<Vec<u8>> {
    Block::parse(b).filter(|p| p.numbered() && p.check() && b.first() == Some(&BLOCK_VERSION_3))?;
    let mut out = b.to_vec();
    out[0] = BLOCK_VERSION;
    super::codec::seal(&mut out);
    Some(out)
}
