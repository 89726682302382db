//! The lexical index: BM25 over the tokens of each record's text, kept in the same commits as
//! the records and answerable as of any (valid, known) time.
//!
//! A record's text is indexed when a revision changes it (or creates the record). Revision
//! `from_rev` then starts a new text, kept in one of two ways:
//!
//! - **fresh**: one row `(ns, id, from_rev) -> [1][doc length u32][terms u32]([tf u32][term
//!   length u16][term])*` in `mnemon.fresh`, holding the text's length and terms. A new text
//!   costs one row next to the previous one (ids are time-ordered), not one B-tree leaf per
//!   distinct term: a durable commit of a small record writes a few pages instead of dozens.
//! - **merged**: a row `(ns, id, from_rev) -> [1][0 u32][doc length u32]` in `mnemon.texts`
//!   saying that the revision starts a text, and one posting `(id, from_rev, tf, doc
//!   length)` per distinct term, either in a **segment** or in the **posting lists**
//!   (`(ns, term, id, from_rev) -> [1][tf u32][doc length u32]` in `mnemon.postings`).
//!
//! When a commit would leave a namespace with [`FRESH_LIMIT`] fresh texts or more, it merges
//! them all (and its own texts, the first [`crate::tables::FEW_ROWS`] of them after reading
//! them back from `mnemon.fresh`, where [`LexicalWriter::write`] put them as the jobs were
//! applied), so a search reads at most that many fresh rows. A merge writes its postings as a
//! new **segment** (format 10): sorted by `(term, id, from_rev)` and cut into blocks of about
//! 16 KiB, each one row `(ns, segment, first term, part)` in `mnemon.segment_blocks` holding
//! many terms' postings (see [`Block`]). A segment is one run of keys, a few large rows, where
//! inserting its postings into the posting lists would touch a leaf per distinct term, spread
//! over the tree (with texts of 30 words from a vocabulary of 5,000, that made merges most of
//! the cost of a write; format 9 wrote one row per term, which was still a B-tree insert per
//! term, format 8 one per posting).
//!
//! Segments are **tiered**: a segment's number holds its level (above bit 56) and a sequence
//! number. A merge of fresh texts makes a segment of level 0 (or, for a bulk commit, of the
//! level of its size, [`level_for`]); when a level would hold [`SEGMENT_FANOUT`] segments, the
//! merge reads them all, and writes them with its own postings as one segment of the next
//! level, and so on up. A merge reads term by term from each of its inputs (its own postings,
//! sorted, and each joined segment one block at a time) and writes the new segment block by
//! block: it holds a block per input, however large the levels. Each posting is thus rewritten once per level,
//! always as whole blocks, never inserted in place. A namespace of `n` texts has at most 7
//! segments per level and about `log8(n / 256) + 1` levels (at most 7, 14, 21, 28 segments
//! up to 2k, 16k, 131k, 1M texts), and a search reads one block (two where a term's postings
//! cross a boundary) per term and segment. The posting lists are written only by
//! [`crate::WriteOp::MergeTexts`], which moves a namespace's fresh texts and every segment
//! into them at any time (a server's quiet moment), so that searches read one place.
//!
//! A fresh text has no row in `mnemon.texts` (format 6; formats 2 to 5 wrote one for every
//! text at once, an insert per record that a durable commit paid for, and which a file of
//! those formats still holds beside its fresh rows: the two agree). The revisions starting a
//! record's texts are therefore the keys of its rows in `mnemon.texts` and `mnemon.fresh`
//! together.
//!
//! A text's terms serve revision `from_rev` and the later revisions until the next text:
//! a search resolves each matching record to its revision visible at the asked time and
//! counts only the terms of the text serving that revision. `forget` removes all of them,
//! from the posting lists and the segments.

use std::collections::BTreeMap;

use redb::{ReadableTable, Table};

use crate::analyzer::Analyzer;
use crate::error::Error;
use crate::id::{Namespace, RecordId};
use crate::posting::Chunk;
use crate::record::Record;

/// The analysis of the texts this build indexes: the current format's (see `analyzer.rs`).
pub(crate) const WRITE_ANALYZER: Analyzer = Analyzer::Stemmed;

const POSTING_VERSION: u8 = 1;
const FRESH_VERSION: u8 = 1;
/// Namespace totals without the fresh count (format 2).
const STATS_VERSION_1: u8 = 1;
const STATS_VERSION: u8 = 2;

/// A namespace's fresh texts are merged into the posting lists once a commit would leave this
/// many (see the module documentation).
pub const FRESH_LIMIT: u64 = 256;

/// BM25 parameters, chosen on the LoCoMo development split (docs/search.md): Anserini's
/// defaults, where the textbook 1.2 / 0.75 ranked conversation turns lower.
const K1: f64 = 0.9;
const B: f64 = 0.4;

pub(crate) type PostingKey = (&'static str, &'static str, u128, u32);
/// `(namespace, segment, first term, part)`: a block of a segment (format 10), or a row of
/// format 9's segments (`(namespace, segment, term, part)`).
pub(crate) type SegmentKey = (&'static str, u64, &'static str, u32);
/// `(namespace, segment, term, id, from_rev)`: a posting of format 8's segments.
pub(crate) type LegacySegmentKey = (&'static str, u64, &'static str, u128, u32);
/// A posting as a segment holds it: `(id, from_rev, tf, doc length)`.
pub(crate) use crate::posting::Posting as SegmentPosting;
/// Every posting of a namespace's segments: `(term, id, from_rev) -> (tf, doc length)`.
pub(crate) type SegmentMap = BTreeMap<(String, u128, u32), (u32, u32)>;

/// Bytes of a posting in a segment: id, from_rev, tf, doc length.
use crate::posting::POSTING_BYTES as SEGMENT_POSTING_BYTES;
/// Format 9's segment rows.
const SEGMENT_ROW_VERSION: u8 = 1;
/// Format 10's segment blocks.
const BLOCK_VERSION: u8 = 1;
/// A segment block is closed once it holds this many bytes: a search reads one block (two
/// when a term's postings cross a boundary) per term and segment. A block, its key (at most
/// 280 bytes: a namespace of 200, a term of 64, their lengths, the segment and the part) and
/// redb's leaf header (12 bytes for one entry) fit one 16 KiB page; a block of 16 KiB took a
/// 32 KiB page of its own, half of it empty, so a merge wrote twice the bytes it needed.
const BLOCK_BYTES: usize = 16 * 1024 - 320;

/// A level's segments are merged into one segment of the next level once it would hold this
/// many (see the module documentation).
pub const SEGMENT_FANOUT: usize = 8;
/// A segment's number holds its level in the bits above these (segments of a level are one
/// run of keys) and its sequence number below.
const LEVEL_SHIFT: u32 = 56;
/// A text's distinct terms with their counts, and its length in tokens.
pub(crate) type TermCounts = (BTreeMap<String, u32>, u32);
/// A text a commit indexes: `((id, from_rev), terms)`.
type NewText = ((u128, u32), TermCounts);
pub(crate) type TextKey = (&'static str, u128, u32);

/// Term frequencies and length of a text.
pub(crate) fn term_counts(text: &str) -> TermCounts {
    term_counts_by(WRITE_ANALYZER, text)
}

/// [`term_counts`] by the given analysis (a read-only handle on an older file checks its
/// index against that format's).
pub(crate) fn term_counts_by(analyzer: Analyzer, text: &str) -> TermCounts {
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    let len = analyzer.terms(text, |t| *counts.entry(t.into_owned()).or_insert(0) += 1);
    (counts, len)
}

/// [`term_counts`] as a list in term order, its terms borrowed from the text where they can
/// be (a plain lower-case word): what a fresh row is encoded from, without a copy per term.
/// Terms are those of [`WRITE_ANALYZER`].
pub(crate) fn term_list(text: &str) -> (Vec<(std::borrow::Cow<'_, str>, u32)>, u32) {
    let mut tokens: Vec<std::borrow::Cow<'_, str>> = Vec::new();
    let len = WRITE_ANALYZER.terms(text, |t| tokens.push(t));
    tokens.sort_unstable();
    let mut out: Vec<(std::borrow::Cow<'_, str>, u32)> = Vec::with_capacity(tokens.len());
    for t in tokens {
        match out.last_mut() {
            Some((last, tf)) if *last == t => *tf += 1,
            _ => out.push((t, 1)),
        }
    }
    (out, len)
}

pub(crate) fn encode_posting(tf: u32, len: u32) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[0] = POSTING_VERSION;
    out[1..5].copy_from_slice(&tf.to_le_bytes());
    out[5..9].copy_from_slice(&len.to_le_bytes());
    out
}

fn decode_posting(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() != 9 || b[0] != POSTING_VERSION {
        return None;
    }
    let tf = u32::from_le_bytes(b[1..5].try_into().ok()?);
    let len = u32::from_le_bytes(b[5..9].try_into().ok()?);
    Some((tf, len))
}

/// The postings of a format-9 segment row (`None` if malformed).
fn decode_segment_row(b: &[u8]) -> Option<Vec<SegmentPosting>> {
    let body = b.strip_prefix(&[SEGMENT_ROW_VERSION])?;
    if body.len() % SEGMENT_POSTING_BYTES != 0 {
        return None;
    }
    body.chunks_exact(SEGMENT_POSTING_BYTES).map(crate::posting::decode).collect()
}

/// [`decode_segment_row`], with the row named in the error.
fn decode_segment_row_at(ns: &str, seg: u64, term: &str, b: &[u8]) -> Result<Vec<SegmentPosting>, Error> {
    decode_segment_row(b).ok_or_else(|| malformed_segment(ns, seg, term))
}

fn malformed_segment(ns: &str, seg: u64, term: &str) -> Error {
    Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!("malformed block or row of segment {} at the term \"{term}\"", segment_name(seg)),
    }
}

/// A segment as people read it: `level/sequence`.
fn segment_name(seg: u64) -> String {
    format!("{}/{}", seg >> LEVEL_SHIFT, seg & ((1u64 << LEVEL_SHIFT) - 1))
}

/// A block of a segment (format 10): `[1][entries u32]`, then per entry the end of its term
/// in the term bytes and the end of its postings in the postings (`u32` each), then the
/// term bytes, then the postings (28 bytes each, `(id, from_rev)` order within an entry).
/// Entries are in term order; a term whose postings do not fit continues in the next block.
/// Read in place: a search finds its term by binary search and decodes only its postings.
struct Block<'b> {
    entries: usize,
    dir: &'b [u8],
    terms: &'b [u8],
    postings: &'b [u8],
}

impl<'b> Block<'b> {
    /// The block over its bytes (`None` if malformed).
    fn parse(b: &'b [u8]) -> Option<Self> {
        let rest = b.strip_prefix(&[BLOCK_VERSION])?;
        let entries = usize::try_from(u32::from_le_bytes(rest.get(..4)?.try_into().ok()?)).ok()?;
        let dir = rest.get(4..4 + entries.checked_mul(8)?)?;
        let mut block = Block { entries, dir, terms: &[], postings: &[] };
        let (terms, postings) = match entries.checked_sub(1) {
            Some(last) => block.ends(last)?,
            None => (0, 0),
        };
        let body = rest.get(4 + dir.len()..)?;
        block.terms = body.get(..terms)?;
        block.postings = body.get(terms..)?;
        (block.postings.len() == postings.checked_mul(SEGMENT_POSTING_BYTES)?).then_some(block)
    }

    /// Where entry `i`'s term and postings end.
    fn ends(&self, i: usize) -> Option<(usize, usize)> {
        let at = |o: usize| {
            self.dir.get(o..o + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes).map(|v| v as usize)
        };
        Some((at(i * 8)?, at(i * 8 + 4)?))
    }

    /// Where entry `i`'s term and postings start and end.
    fn spans(&self, i: usize) -> Option<((usize, usize), (usize, usize))> {
        let (t0, p0) = match i.checked_sub(1) {
            Some(j) => self.ends(j)?,
            None => (0, 0),
        };
        let (t1, p1) = self.ends(i)?;
        Some(((t0, t1), (p0, p1)))
    }

    fn term(&self, i: usize) -> Option<&'b str> {
        let ((t0, t1), _) = self.spans(i)?;
        std::str::from_utf8(self.terms.get(t0..t1)?).ok()
    }

    /// Where entry `i`'s term lies in the block's bytes (those [`Self::parse`] was given), so
    /// that a reader going entry by entry finds it again without parsing the block.
    fn term_span(&self, i: usize) -> Option<std::ops::Range<usize>> {
        let ((t0, t1), _) = self.spans(i)?;
        let base = 1 + 4 + self.dir.len();
        (t0 <= t1 && t1 <= self.terms.len()).then_some(base + t0..base + t1)
    }

    /// Entry `i`'s postings, as stored (28 bytes each).
    fn posting_bytes(&self, i: usize) -> Option<&'b [u8]> {
        let (_, (p0, p1)) = self.spans(i)?;
        self.postings.get(p0.checked_mul(SEGMENT_POSTING_BYTES)?..p1.checked_mul(SEGMENT_POSTING_BYTES)?)
    }

    /// Entry `i`'s postings.
    fn postings(&self, i: usize) -> Option<Vec<SegmentPosting>> {
        let mut out = Vec::new();
        self.postings_into(i, &mut out)?;
        Some(out)
    }

    /// Add entry `i`'s postings to `out` (`None` if malformed).
    fn postings_into(&self, i: usize, out: &mut Vec<SegmentPosting>) -> Option<()> {
        self.each_posting(i, |p| out.push(p))
    }

    /// Call `f` with each of entry `i`'s postings (`None` if malformed).
    fn each_posting(&self, i: usize, mut f: impl FnMut(SegmentPosting)) -> Option<()> {
        for c in self.posting_bytes(i)?.chunks_exact(SEGMENT_POSTING_BYTES) {
            f(crate::posting::decode(c)?);
        }
        Some(())
    }

    /// Whether every entry is well formed and in order: terms in strictly increasing order,
    /// postings within a term in strictly increasing `(id, from_rev)` order. Checked in place,
    /// without copying the postings out.
    fn check(&self) -> bool {
        let key = |c: &[u8]| crate::posting::decode(c).map(|p| (p.0, p.1));
        let mut previous: Option<&str> = None;
        for i in 0..self.entries {
            let (Some(term), Some(bytes)) = (self.term(i), self.posting_bytes(i)) else { return false };
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

    /// The entry of `term`, by binary search (`None` if malformed, `Some(None)` if absent).
    fn find(&self, term: &str) -> Option<Option<usize>> {
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
    fn entries(&self) -> Option<Vec<(&'b str, Vec<SegmentPosting>)>> {
        if !self.check() {
            return None;
        }
        (0..self.entries).map(|i| Some((self.term(i)?, self.postings(i)?))).collect()
    }

    /// How many postings the block holds.
    fn len(&self) -> usize {
        self.postings.len() / SEGMENT_POSTING_BYTES
    }
}

/// A block being encoded (see [`Block`]): its directory, term bytes and postings, appended
/// to as entries come, with no allocation per entry.
#[derive(Default)]
struct BlockBuf {
    entries: u32,
    dir: Vec<u8>,
    terms: Vec<u8>,
    postings: Vec<u8>,
}

impl BlockBuf {
    /// Append an entry: a term (greater than the last one's) and its postings in `(id,
    /// from_rev)` order.
    fn push(&mut self, term: &str, postings: &[SegmentPosting]) {
        self.terms.extend_from_slice(term.as_bytes());
        for p in postings {
            crate::posting::put(&mut self.postings, *p);
        }
        for end in [self.terms.len(), self.postings.len() / SEGMENT_POSTING_BYTES] {
            self.dir.extend_from_slice(&u32::try_from(end).unwrap_or(u32::MAX).to_le_bytes());
        }
        self.entries += 1;
    }

    /// Bytes of the block so far.
    fn size(&self) -> usize {
        5 + self.dir.len() + self.terms.len() + self.postings.len()
    }

    /// The encoded block; the buffer is left empty (its allocations kept).
    fn take(&mut self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size());
        out.push(BLOCK_VERSION);
        out.extend_from_slice(&self.entries.to_le_bytes());
        out.extend_from_slice(&self.dir);
        out.extend_from_slice(&self.terms);
        out.extend_from_slice(&self.postings);
        self.entries = 0;
        self.dir.clear();
        self.terms.clear();
        self.postings.clear();
        out
    }
}

/// Writes one segment's blocks as its terms come, in order, each block once it is full: a
/// merge holds one block of output, however large the segment.
struct BlockWriter {
    ns: String,
    seg: u64,
    block: BlockBuf,
    /// The block's key: its first term, and how many blocks that term's postings went into
    /// before (a term that continues from the previous block starts the next at part 1, 2,
    /// ...), so that the keys are unique and ordered.
    key: Option<(String, u32)>,
}

impl BlockWriter {
    fn new(ns: &str, seg: u64) -> Self {
        BlockWriter { ns: ns.to_string(), seg, block: BlockBuf::default(), key: None }
    }

    /// Add a term's postings (in `(id, from_rev)` order; terms in increasing order).
    fn push(
        &mut self,
        table: &mut Table<'_, SegmentKey, &'static [u8]>,
        term: &str,
        mut postings: &[SegmentPosting],
    ) -> Result<(), Error> {
        let mut part = 0u32;
        while !postings.is_empty() {
            let head = 8 + term.len();
            if self.block.entries > 0 && self.block.size() + head + SEGMENT_POSTING_BYTES > BLOCK_BYTES {
                self.flush(table)?;
            }
            let room = (BLOCK_BYTES.saturating_sub(self.block.size() + head) / SEGMENT_POSTING_BYTES).max(1);
            let (now, rest) = postings.split_at(postings.len().min(room));
            self.key.get_or_insert_with(|| (term.to_string(), part));
            self.block.push(term, now);
            postings = rest;
            part += 1;
        }
        Ok(())
    }

    /// Write the block being filled, if any.
    fn flush(&mut self, table: &mut Table<'_, SegmentKey, &'static [u8]>) -> Result<(), Error> {
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
enum Source<'p> {
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
    fn fill(&mut self, table: &impl ReadableTable<SegmentKey, &'static [u8]>, ns: &str) -> Result<(), Error> {
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
    fn head(&self) -> Option<&[u8]> {
        match self {
            Source::Memory(p) => p.first().map(|x| x.0.as_bytes()),
            Source::Segment { block, head, .. } => head.as_ref().and_then(|r| block.get(r.clone())),
        }
    }

    /// Take the postings at the head, which is `term`, into `out`.
    fn take(&mut self, term: &[u8], out: &mut Vec<SegmentPosting>) {
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

/// The level a merge of `texts` fresh texts starts its segment at: the first whose segments
/// are at least that large (a bulk commit's segment goes straight to a higher level).
fn level_for(texts: usize) -> u64 {
    let mut level = 0;
    let mut size = FRESH_LIMIT as usize * SEGMENT_FANOUT;
    while texts >= size && level < 16 {
        level += 1;
        size = size.saturating_mul(SEGMENT_FANOUT);
    }
    level
}

/// The terms of a fresh text and its length.
fn encode_fresh<'t>(counts: impl ExactSizeIterator<Item = (&'t str, u32)> + Clone, len: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + counts.clone().map(|(t, _)| 6 + t.len()).sum::<usize>());
    out.push(FRESH_VERSION);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&u32::try_from(counts.len()).unwrap_or(u32::MAX).to_le_bytes());
    for (term, tf) in counts {
        // Terms are at most 64 bytes (see `term_counts`).
        let n = u16::try_from(term.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&tf.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&term.as_bytes()[..usize::from(n)]);
    }
    out
}

/// A decoded fresh row: the text's length and its `(term, tf)` in term order.
type FreshText<'b> = (u32, Vec<(&'b str, u32)>);

/// A fresh row being read: its text's length, then its terms one by one, as `(term bytes,
/// tf)` in term order (an item `None` where the row is malformed). The one reader of the
/// layout, for decoding a row ([`decode_fresh`]) and for scanning it in place ([`scan_fresh`]).
struct FreshTerms<'b> {
    len: u32,
    left: u32,
    rest: &'b [u8],
}

impl<'b> FreshTerms<'b> {
    /// The row's header (`None` if it is not a fresh row of this version).
    fn new(b: &'b [u8]) -> Option<Self> {
        if b.first() != Some(&FRESH_VERSION) {
            return None;
        }
        let u32_at = |i: usize| b.get(i..i + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes);
        Some(FreshTerms { len: u32_at(1)?, left: u32_at(5)?, rest: b.get(9..)? })
    }
}

impl<'b> Iterator for FreshTerms<'b> {
    type Item = Option<(&'b [u8], u32)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let b = self.rest;
        let term = (|| {
            let tf = u32::from_le_bytes(b.get(..4)?.try_into().ok()?);
            let tl = usize::from(u16::from_le_bytes(b.get(4..6)?.try_into().ok()?));
            let term = b.get(6..6 + tl)?;
            self.rest = b.get(6 + tl..)?;
            Some((term, tf))
        })();
        if term.is_none() {
            // Malformed: nothing more to read.
            self.left = 0;
        }
        Some(term)
    }
}

/// A fresh row: its text's length and `(term, tf)` in term order (`None` if malformed).
fn decode_fresh(b: &[u8]) -> Option<FreshText<'_>> {
    let row = FreshTerms::new(b)?;
    let len = row.len;
    let mut terms = Vec::with_capacity(usize::try_from(row.left).unwrap_or(0).min(1024));
    for term in row {
        let (term, tf) = term?;
        terms.push((std::str::from_utf8(term).ok()?, tf));
    }
    Some((len, terms))
}

/// [`decode_fresh`], with the row named in the error.
fn decode_fresh_row<'b>(ns: &str, id: u128, rev: u32, bytes: &'b [u8]) -> Result<FreshText<'b>, Error> {
    decode_fresh(bytes).ok_or_else(|| malformed_fresh(ns, id, rev))
}

fn malformed_fresh(ns: &str, id: u128, rev: u32) -> Error {
    Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!("malformed fresh text row of {} revision {rev}", RecordId::from_u128(id)),
    }
}

/// Namespace totals: texts indexed, their summed length, and how many are fresh.
pub(crate) fn encode_stats(s: LexStats) -> [u8; 25] {
    let mut out = [0u8; 25];
    out[0] = STATS_VERSION;
    out[1..9].copy_from_slice(&s.docs.to_le_bytes());
    out[9..17].copy_from_slice(&s.total.to_le_bytes());
    out[17..25].copy_from_slice(&s.fresh.to_le_bytes());
    out
}

/// A namespace's lexical totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LexStats {
    /// Texts indexed.
    pub(crate) docs: u64,
    /// Their summed length in tokens.
    pub(crate) total: u64,
    /// How many of them are fresh (not yet in the posting lists).
    pub(crate) fresh: u64,
}

pub(crate) fn decode_stats(b: &[u8]) -> LexStats {
    let u64_at = |i: usize| b.get(i..i + 8).and_then(|s| s.try_into().ok()).map_or(0, u64::from_le_bytes);
    match (b.first(), b.len()) {
        (Some(&STATS_VERSION), 25) => LexStats { docs: u64_at(1), total: u64_at(9), fresh: u64_at(17) },
        // Format 2 had no fresh texts.
        (Some(&STATS_VERSION_1), 17) => LexStats { docs: u64_at(1), total: u64_at(9), fresh: 0 },
        _ => LexStats::default(),
    }
}

/// A new text's fresh row, encoded on its caller's thread before the job is queued (see
/// [`prepare`]), so that the committer, whom every caller of a group commit waits for, does
/// not tokenize it. Used only if the committed record has this id and exactly this text.
#[derive(Debug)]
pub(crate) struct PreparedText {
    id: u128,
    text: String,
    row: Vec<u8>,
    /// The text's length in tokens.
    len: u32,
}

/// The fresh rows of the texts a job's records will have, for at most `limit` texts (a
/// commit writes only its first [`crate::tables::FEW_ROWS`] fresh rows as its jobs are
/// applied; a bulk commit's further texts are placed by [`LexicalWriter::flush`] instead).
/// A text that ends differently (a revision's text is only known in the commit) is simply
/// not used.
pub(crate) fn prepare(ops: &[crate::write::WriteOp], limit: usize) -> Vec<PreparedText> {
    use crate::write::WriteOp;
    let mut out = Vec::new();
    for op in ops {
        if out.len() >= limit {
            break;
        }
        let new = match op {
            WriteOp::Insert(n) | WriteOp::Supersede { new: n, .. } => n,
            _ => continue,
        };
        let text = new.body.text();
        let (row, len) = fresh_row(&text);
        out.push(PreparedText { id: new.id.as_u128(), text, row, len });
    }
    out
}

/// A text's fresh row and its length in tokens.
fn fresh_row(text: &str) -> (Vec<u8>, u32) {
    let (terms, len) = term_list(text);
    (encode_fresh(terms.iter().map(|(t, tf)| (t.as_ref(), *tf)), len), len)
}

/// The write side, used by the commit that writes the revision.
pub(crate) struct LexicalWriter<'txn> {
    pub(crate) postings: crate::tables::LazyTable<'txn, PostingKey, &'static [u8]>,
    pub(crate) segments: crate::tables::LazyTable<'txn, SegmentKey, &'static [u8]>,
    /// Written by merges (and forgets) only: most commits do not open it.
    pub(crate) texts: crate::tables::LazyTable<'txn, TextKey, &'static [u8]>,
    pub(crate) fresh: Table<'txn, TextKey, &'static [u8]>,
    pub(crate) stats: Table<'txn, &'static str, &'static [u8]>,
    /// Per namespace: changes to the totals (texts, length, stored fresh rows), written once
    /// per commit by [`Self::flush`].
    pub(crate) pending: BTreeMap<String, (i64, i64, i64)>,
    /// The texts this commit indexes beyond its first [`crate::tables::FEW_ROWS`], placed by
    /// [`Self::flush`] (fresh, or merged). The first ones get their fresh rows at once, as the
    /// jobs are applied (see [`Self::write`]).
    pub(crate) new_texts: BTreeMap<(String, u128, u32), TermCounts>,
    /// Fresh rows this commit wrote at once.
    written: usize,
    /// The fresh rows the callers of the job being applied encoded (see [`prepare`]).
    pub(crate) prepared: Vec<PreparedText>,
    /// Namespaces whose fresh texts this commit merges whatever their number.
    pub(crate) merge_requested: std::collections::BTreeSet<String>,
}

impl<'txn> LexicalWriter<'txn> {
    /// The writer over a write transaction's tables.
    pub(crate) fn open(txn: &'txn redb::WriteTransaction) -> Result<Self, Error> {
        Ok(LexicalWriter {
            postings: crate::tables::LazyTable::new(txn, crate::tables::POSTINGS),
            segments: crate::tables::LazyTable::new(txn, crate::tables::SEGMENTS),
            texts: crate::tables::LazyTable::new(txn, crate::tables::TEXTS),
            fresh: txn.open_table(crate::tables::FRESH)?,
            stats: txn.open_table(crate::tables::LEXSTATS)?,
            pending: BTreeMap::new(),
            new_texts: BTreeMap::new(),
            written: 0,
            prepared: Vec::new(),
            merge_requested: std::collections::BTreeSet::new(),
        })
    }

    fn bump(&mut self, ns: &str, docs: i64, len: i64, fresh: i64) {
        // The namespace is copied only the first time (`entry` would copy it every time).
        match self.pending.get_mut(ns) {
            Some(e) => {
                e.0 += docs;
                e.1 += len;
                e.2 += fresh;
            }
            None => {
                self.pending.insert(ns.to_string(), (docs, len, fresh));
            }
        }
    }

    /// Place this commit's texts and write the namespace totals it changed. A namespace
    /// that would have [`FRESH_LIMIT`] fresh texts or more gets them all merged into its
    /// posting lists.
    pub(crate) fn flush(&mut self) -> Result<(), Error> {
        let mut by_ns: BTreeMap<String, Vec<NewText>> = BTreeMap::new();
        for ((ns, id, rev), text) in std::mem::take(&mut self.new_texts) {
            by_ns.entry(ns).or_default().push(((id, rev), text));
        }
        let requested = std::mem::take(&mut self.merge_requested);
        for ns in by_ns.keys().chain(requested.iter()) {
            self.pending.entry(ns.clone()).or_insert((0, 0, 0));
        }
        for (ns, (docs, len, fresh)) in std::mem::take(&mut self.pending) {
            let row = self.stats.get(ns.as_str())?.map(|v| decode_stats(v.value()));
            let s = row.unwrap_or_default();
            let stored = s.fresh.saturating_add_signed(fresh);
            let new = by_ns.remove(&ns).unwrap_or_default();
            let texts = stored + new.len() as u64;
            // A merge asked for also moves the segments, fresh texts or not.
            let merge = texts >= FRESH_LIMIT
                || (requested.contains(&ns)
                    && (texts > 0 || !segment_list(self.segments.get()?, &ns)?.is_empty()));
            if merge {
                self.merge(&ns, &new, requested.contains(&ns))?;
            } else {
                for ((id, rev), (counts, len)) in &new {
                    let row = encode_fresh(counts.iter().map(|(t, tf)| (t.as_str(), *tf)), *len);
                    self.fresh.insert((ns.as_str(), *id, *rev), row.as_slice())?;
                }
            }
            let s = LexStats {
                docs: s.docs.saturating_add_signed(docs),
                total: s.total.saturating_add_signed(len),
                fresh: if merge { 0 } else { texts },
            };
            // A merge asked for with nothing to merge (or in a namespace without texts) leaves
            // the totals as they were: no row written.
            if row != Some(s) && (row.is_some() || s != LexStats::default()) {
                self.stats.insert(ns.as_str(), encode_stats(s).as_slice())?;
            }
        }
        Ok(())
    }

    /// Move every fresh text of a namespace, and this commit's new texts, into a new segment
    /// (of the level [`level_for`] their number); when that level already has
    /// [`SEGMENT_FANOUT`] segments less one, merge them with it into one segment of the next
    /// level, and so on up. A merge asked for (`all`) moves them and every segment into the
    /// posting lists instead. A segment is written as one run of keys, a few large rows (see
    /// [`Block`]); in the posting lists each term's new postings go in as one run through one
    /// cursor rather than one descent each.
    fn merge(&mut self, ns: &str, new: &[NewText], all: bool) -> Result<(), Error> {
        let rows = fresh_rows(&self.fresh, ns)?;
        let mut postings: Vec<(&str, SegmentPosting)> = Vec::new();
        // The texts' rows, `(id, from_rev, [1][0][length])`: the stored fresh texts come in key
        // order, then this commit's (in key order among themselves, and mostly newer).
        let mut texts: Vec<(u128, u32, [u8; 9])> = Vec::with_capacity(rows.len() + new.len());
        for (id, rev, bytes) in &rows {
            let (len, terms) = decode_fresh_row(ns, *id, *rev, bytes)?;
            postings.extend(terms.into_iter().map(|(term, tf)| (term, (*id, *rev, tf, len))));
            texts.push((*id, *rev, encode_posting(0, len)));
        }
        for ((id, rev), (counts, len)) in new {
            postings.extend(counts.iter().map(|(term, tf)| (term.as_str(), (*id, *rev, *tf, *len))));
            texts.push((*id, *rev, encode_posting(0, *len)));
        }
        // Stable, and nearly sorted already.
        texts.sort_by_key(|t| (t.0, t.1));
        crate::tables::insert_sorted(
            self.texts.get_mut()?,
            texts.iter().map(|(id, rev, value)| ((ns, *id, *rev), value.as_slice())),
        )?;
        let segments = segment_list(self.segments.get()?, ns)?;
        // The segments that join this merge: all of them, or from the new segment's level up,
        // those of each level that the merge fills.
        let first = level_for(texts.len());
        let mut level = first;
        while !all && segments.iter().filter(|s| **s >> LEVEL_SHIFT == level).count() + 1 >= SEGMENT_FANOUT {
            level += 1;
        }
        let joins = |seg: u64| all || (first..level).contains(&(seg >> LEVEL_SHIFT));
        // Stable: of two equal keys (which a consistent file never has) the first is kept.
        postings.sort_by(|a, b| (a.0, a.1.0, a.1.1).cmp(&(b.0, b.1.0, b.1.1)));
        let mut sources = vec![Source::Memory(&postings)];
        sources.extend(segments.iter().filter(|s| joins(**s)).map(|&seg| Source::Segment {
            seg,
            block: Vec::new(),
            entries: 0,
            at: 0,
            head: None,
            last: None,
            done: false,
        }));
        // The next sequence number: after every segment's, at any level.
        let seq = segments.iter().map(|s| s & ((1u64 << LEVEL_SHIFT) - 1)).max().map_or(0, |m| m + 1);
        let mut writer = BlockWriter::new(ns, (level << LEVEL_SHIFT) | seq);
        // Term by term, in order: its postings from every source, in `(id, from_rev)` order.
        let mut list: Vec<SegmentPosting> = Vec::new();
        let mut term: Vec<u8> = Vec::new();
        for source in &mut sources {
            source.fill(self.segments.get()?, ns)?;
        }
        while let Some(head) = sources.iter().filter_map(Source::head).min() {
            term.clear();
            term.extend_from_slice(head);
            list.clear();
            for source in &mut sources {
                while source.head() == Some(term.as_slice()) {
                    source.take(&term, &mut list);
                    source.fill(self.segments.get()?, ns)?;
                }
            }
            // Checked when its block was read, or a term of this commit's texts: once per term.
            let term = std::str::from_utf8(&term).map_err(|_| Error::Inconsistent {
                namespace: ns.to_string(),
                detail: "a term of a segment merge is not UTF-8".to_string(),
            })?;
            list.sort_by_key(|p| (p.0, p.1));
            list.dedup_by_key(|p| (p.0, p.1));
            if all {
                let values: Vec<[u8; 9]> = list.iter().map(|p| encode_posting(p.2, p.3)).collect();
                crate::tables::insert_sorted(
                    self.postings.get_mut()?,
                    list.iter().zip(&values).map(|(p, value)| ((ns, term, p.0, p.1), value.as_slice())),
                )?;
            } else {
                writer.push(self.segments.get_mut()?, term, &list)?;
            }
        }
        writer.flush(self.segments.get_mut()?)?;
        // The joined segments go (a level's segments, or a namespace's, are one range of keys).
        if all && !segments.is_empty() {
            self.segments.get_mut()?.retain_in(segment_bounds(ns), |_, _| false)?;
        }
        for l in (first..level).filter(|_| !all) {
            self.segments.get_mut()?.retain_in(level_bounds(ns, l), |_, _| false)?;
        }
        if !rows.is_empty() {
            self.fresh.retain_in((ns, 0u128, 0u32)..=(ns, u128::MAX, u32::MAX), |_, _| false)?;
        }
        Ok(())
    }

    /// Merge a namespace's fresh texts in this commit's [`Self::flush`].
    pub(crate) fn request_merge(&mut self, ns: &str) {
        self.merge_requested.insert(ns.to_string());
    }

    /// Index revision `new` if it changes the text of `old` (or creates the record).
    pub(crate) fn write(&mut self, old: Option<&Record>, new: &Record) -> Result<(), Error> {
        let text = new.body.text();
        if old.is_some_and(|o| o.body.text() == text) {
            return Ok(());
        }
        let (ns, id) = (new.namespace.as_str(), new.id.as_u128());
        // Its row in `mnemon.texts` waits for the merge (see the module documentation).
        if self.written < crate::tables::FEW_ROWS {
            // A group commit's few texts go in now, while its later jobs are still on their
            // way, rather than after its last job, where they delay the fsync every caller
            // waits for. A merge in this commit reads them back with the stored ones. A bulk
            // commit's further texts wait for `flush`, which merges them without writing
            // their fresh rows at all when the namespace is due for a merge.
            let prepared = self.prepared.iter().position(|p| p.id == id && p.text == text);
            let (row, len) = match prepared.map(|i| self.prepared.swap_remove(i)) {
                Some(p) => (p.row, p.len),
                None => fresh_row(&text),
            };
            self.fresh.insert((ns, id, new.rev), row.as_slice())?;
            self.written += 1;
            self.bump(ns, 1, i64::from(len), 1);
        } else {
            let (counts, len) = term_counts(&text);
            self.new_texts.insert((ns.to_string(), id, new.rev), (counts, len));
            self.bump(ns, 1, i64::from(len), 0);
        }
        Ok(())
    }

    /// Remove every indexed text of a forgotten record (`all`: its revisions, in order).
    pub(crate) fn forget(&mut self, ns: &str, id: u128, all: &[Record]) -> Result<(), Error> {
        // Every text of the record: merged (a row in `texts`), fresh (a row in `fresh`; formats
        // before 6 also wrote its `texts` row) or indexed by this commit and not yet placed.
        let mut merged = Vec::new();
        for r in self.texts.get()?.range((ns, id, 0u32)..=(ns, id, u32::MAX))? {
            merged.push(r?.0.value().2);
        }
        let mut fresh_revs = Vec::new();
        for r in self.fresh.range((ns, id, 0u32)..=(ns, id, u32::MAX))? {
            fresh_revs.push(r?.0.value().2);
        }
        let unplaced: Vec<u32> = self
            .new_texts
            .range((ns.to_string(), id, 0u32)..=(ns.to_string(), id, u32::MAX))
            .map(|(k, _)| k.2)
            .collect();
        let mut revs: Vec<u32> = merged.iter().chain(&fresh_revs).chain(&unplaced).copied().collect();
        revs.sort_unstable();
        revs.dedup();
        for rev in &fresh_revs {
            self.fresh.remove((ns, id, *rev))?;
        }
        let mut removed_len = 0i64;
        let segments = segment_list(self.segments.get()?, ns)?;
        for rev in &revs {
            let unplaced = self.new_texts.remove(&(ns.to_string(), id, *rev)).is_some();
            if let Some(rec) = all.iter().find(|r| r.rev == *rev) {
                let (counts, len) = term_counts(&rec.body.text());
                if !unplaced && !fresh_revs.contains(rev) {
                    for term in counts.keys() {
                        self.postings.get_mut()?.remove((ns, term.as_str(), id, *rev))?;
                        for seg in &segments {
                            self.forget_in_segment(ns, *seg, term, id, *rev)?;
                        }
                    }
                }
                removed_len += i64::from(len);
            }
            if merged.contains(rev) {
                self.texts.get_mut()?.remove((ns, id, *rev))?;
            }
        }
        if !revs.is_empty() || !fresh_revs.is_empty() {
            let fresh = -i64::try_from(fresh_revs.len()).unwrap_or(0);
            self.bump(ns, -i64::try_from(revs.len()).unwrap_or(0), -removed_len, fresh);
        }
        Ok(())
    }
}

impl LexicalWriter<'_> {
    /// Remove the posting of `(id, rev)` from the blocks of a term in one segment, if it is
    /// there. A block keeps its key when its first entry goes (the key is then below its
    /// first term, which [`term_blocks`] allows); a block left empty is removed.
    fn forget_in_segment(&mut self, ns: &str, seg: u64, term: &str, id: u128, rev: u32) -> Result<(), Error> {
        let mut found: Option<((String, u32), Vec<u8>)> = None;
        term_blocks(self.segments.get()?, ns, seg, term, |first, part, guard| {
            let bytes = guard.value();
            let block = Block::parse(bytes).ok_or_else(|| malformed_segment(ns, seg, first))?;
            if let Some(i) = block.find(term).ok_or_else(|| malformed_segment(ns, seg, first))?
                && block
                    .postings(i)
                    .ok_or_else(|| malformed_segment(ns, seg, first))?
                    .iter()
                    .any(|p| (p.0, p.1) == (id, rev))
            {
                found = Some(((first.to_string(), part), bytes.to_vec()));
                return Ok(false);
            }
            Ok(true)
        })?;
        let Some(((first, part), bytes)) = found else { return Ok(()) };
        let entries = Block::parse(&bytes)
            .and_then(|b| b.entries())
            .ok_or_else(|| malformed_segment(ns, seg, &first))?;
        let mut kept = BlockBuf::default();
        for (t, mut list) in entries {
            if t == term {
                list.retain(|p| (p.0, p.1) != (id, rev));
            }
            if !list.is_empty() {
                kept.push(t, &list);
            }
        }
        let table = self.segments.get_mut()?;
        if kept.entries == 0 {
            table.remove((ns, seg, first.as_str(), part))?;
        } else {
            table.insert((ns, seg, first.as_str(), part), kept.take().as_slice())?;
        }
        Ok(())
    }
}

/// A key bounding a namespace's segment blocks.
type SegmentBound<'a> = (&'a str, u64, &'static str, u32);

/// Every key of a namespace's segments (segment `u64::MAX` is never used).
fn segment_bounds(ns: &str) -> std::ops::Range<SegmentBound<'_>> {
    (ns, 0u64, "", 0u32)..(ns, u64::MAX, "", 0u32)
}

/// Every key of a namespace's segments of one level.
fn level_bounds(ns: &str, level: u64) -> std::ops::Range<SegmentBound<'_>> {
    (ns, level << LEVEL_SHIFT, "", 0u32)..(ns, (level + 1) << LEVEL_SHIFT, "", 0u32)
}

/// A namespace's segments, in key order (by level, then age): one descent each.
pub(crate) fn segment_list(
    segments: &impl ReadableTable<SegmentKey, &'static [u8]>,
    ns: &str,
) -> Result<Vec<u64>, Error> {
    let mut out = Vec::new();
    let mut from = 0u64;
    while let Some(r) = segments.range((ns, from, "", 0u32)..(ns, u64::MAX, "", 0u32))?.next() {
        let seg = r?.0.value().1;
        out.push(seg);
        from = seg + 1;
    }
    Ok(out)
}

/// Call `f` with `(first term, part, bytes)` of each block of a segment that may hold
/// postings of `term`, in key order (so their postings come in order), until it returns
/// `false`: the blocks keyed by `term`, and the one before them when they do not start with
/// part 0 (`term` then starts inside it). A block's key is at most its first term, and the
/// terms of successive blocks increase.
fn term_blocks<'t>(
    segments: &'t impl ReadableTable<SegmentKey, &'static [u8]>,
    ns: &str,
    seg: u64,
    term: &str,
    mut f: impl FnMut(&str, u32, redb::AccessGuard<'t, &'static [u8]>) -> Result<bool, Error>,
) -> Result<(), Error> {
    let mut keyed = segments.range((ns, seg, term, 0u32)..=(ns, seg, term, u32::MAX))?;
    let first = keyed.next().transpose()?;
    if first.as_ref().is_none_or(|(k, _)| k.value().3 != 0)
        && let Some(r) = segments.range((ns, seg, "", 0u32)..(ns, seg, term, 0u32))?.next_back()
    {
        let (k, v) = r?;
        let (_, _, before, part) = k.value();
        if !f(before, part, v)? {
            return Ok(());
        }
    }
    for r in first.into_iter().map(Ok).chain(keyed) {
        let (k, v) = r?;
        let (_, _, _, part) = k.value();
        if !f(term, part, v)? {
            break;
        }
    }
    Ok(())
}

/// Every key of a namespace's segments in format 8.
fn legacy_segment_bounds(ns: &str) -> std::ops::Range<(&str, u64, &'static str, u128, u32)> {
    (ns, 0u64, "", 0u128, 0u32)..(ns, u64::MAX, "", 0u128, 0u32)
}

/// The segments of the first and last keys of a namespace's range of format-8 segment keys.
/// Format 8 numbered its segments without gaps: each merge added the next, and they all went
/// together.
fn first_and_last(
    mut range: redb::Range<'_, LegacySegmentKey, &'static [u8]>,
) -> Result<Option<(u64, u64)>, Error> {
    let Some(first) = range.next() else { return Ok(None) };
    let first = first?.0.value().1;
    let last = match range.next_back() {
        Some(r) => r?.0.value().1,
        None => first,
    };
    Ok(Some((first, last)))
}

/// A snapshot's segment table of one format.
type SegmentTable<K> = redb::ReadOnlyTable<K, &'static [u8]>;

/// Where a snapshot finds the postings of merged texts not yet in the posting lists: format
/// 10's blocks, or (in a file of an older format opened read-only) format 9's rows or format
/// 8's one row per posting.
pub(crate) enum Segments {
    /// Format 10: blocks of many terms, segments by level.
    Blocks(SegmentTable<SegmentKey>),
    /// Format 9: one row per term and segment.
    Rows(SegmentTable<SegmentKey>),
    /// Format 8: one row per posting.
    Legacy(SegmentTable<LegacySegmentKey>),
    /// No segments table (formats before 8).
    None,
}

impl Segments {
    /// A namespace's segments.
    pub(crate) fn list(&self, ns: &str) -> Result<Vec<u64>, Error> {
        match self {
            Segments::Blocks(t) | Segments::Rows(t) => segment_list(t, ns),
            Segments::Legacy(t) => Ok(first_and_last(t.range(legacy_segment_bounds(ns))?)?
                .map_or(Vec::new(), |(a, b)| (a..=b).collect())),
            Segments::None => Ok(Vec::new()),
        }
    }

    /// Call `f` with every posting of `term` in the namespace's segment `seg` (from
    /// [`Self::list`]), in `(id, from_rev)` order.
    pub(crate) fn postings(
        &self,
        ns: &str,
        seg: u64,
        term: &str,
        mut f: impl FnMut(SegmentPosting),
    ) -> Result<(), Error> {
        match self {
            Segments::Blocks(t) => term_blocks(t, ns, seg, term, |first, _, guard| {
                let malformed = || malformed_segment(ns, seg, first);
                let block = Block::parse(guard.value()).ok_or_else(malformed)?;
                if let Some(i) = block.find(term).ok_or_else(malformed)? {
                    block.each_posting(i, &mut f).ok_or_else(malformed)?;
                }
                Ok(true)
            })?,
            Segments::Rows(t) => {
                for r in t.range((ns, seg, term, 0u32)..=(ns, seg, term, u32::MAX))? {
                    let (_, v) = r?;
                    decode_segment_row_at(ns, seg, term, v.value())?.into_iter().for_each(&mut f);
                }
            }
            Segments::Legacy(t) => {
                for r in t.range((ns, seg, term, 0u128, 0u32)..=(ns, seg, term, u128::MAX, u32::MAX))? {
                    let (k, v) = r?;
                    let (_, _, _, id, rev) = k.value();
                    if let Some((tf, len)) = decode_posting(v.value()) {
                        f((id, rev, tf, len));
                    }
                }
            }
            Segments::None => {}
        }
        Ok(())
    }

    /// What a search holds of `term`'s postings in segment `seg`: its blocks, read in place
    /// (see [`Held::chunks`]), or (older formats) its postings decoded.
    fn hold(&self, ns: &str, seg: u64, term: &str) -> Result<Held<'_>, Error> {
        match self {
            Segments::Blocks(t) => {
                let mut blocks = Vec::new();
                term_blocks(t, ns, seg, term, |_, _, guard| {
                    blocks.push(guard);
                    Ok(true)
                })?;
                Ok(Held::Blocks { seg, blocks })
            }
            _ => {
                let mut out = Vec::new();
                self.postings(ns, seg, term, |p| out.push(p))?;
                Ok(Held::Decoded(out))
            }
        }
    }

    /// How many postings a namespace's segments hold (a malformed block or row counts for
    /// none), read block by block: no map of them all (a bulk import's one segment can hold
    /// millions).
    pub(crate) fn count(&self, ns: &str) -> Result<u64, Error> {
        let mut n = 0u64;
        match self {
            Segments::Blocks(t) => {
                for r in t.range(segment_bounds(ns))? {
                    let (_, v) = r?;
                    n += Block::parse(v.value()).map_or(0, |b| b.len() as u64);
                }
            }
            Segments::Rows(t) => {
                for r in t.range(segment_bounds(ns))? {
                    let (_, v) = r?;
                    let body = v.value().len().saturating_sub(1);
                    if body % SEGMENT_POSTING_BYTES == 0 {
                        n += (body / SEGMENT_POSTING_BYTES) as u64;
                    }
                }
            }
            Segments::Legacy(t) => {
                for r in t.range(legacy_segment_bounds(ns))? {
                    r?;
                    n += 1;
                }
            }
            Segments::None => {}
        }
        Ok(n)
    }

    /// Every posting of a namespace's segments, by `(term, id, from_rev)`, and how many places
    /// hold them (a posting stored twice counts twice). Malformed blocks and rows, and blocks
    /// keyed above their first term, are reported as problems.
    pub(crate) fn all(&self, ns: &str, problems: &mut Vec<String>) -> Result<(SegmentMap, u64), Error> {
        let mut out = BTreeMap::new();
        let (mut n, mut malformed) = (0u64, 0u64);
        let mut add = |term: &str, list: Vec<SegmentPosting>| {
            for (id, rev, tf, len) in list {
                n += 1;
                out.insert((term.to_string(), id, rev), (tf, len));
            }
        };
        match self {
            Segments::Blocks(t) => {
                for r in t.range(segment_bounds(ns))? {
                    let (k, v) = r?;
                    let (_, seg, first, _) = k.value();
                    let name = segment_name(seg);
                    match Block::parse(v.value()).and_then(|b| b.entries()) {
                        Some(entries) => {
                            if entries.first().is_some_and(|e| e.0 < first) {
                                problems.push(format!(
                                    "{ns}: a block of segment {name} keyed above its first term"
                                ));
                            }
                            for (term, list) in entries {
                                add(term, list);
                            }
                        }
                        None => {
                            problems.push(format!("{ns}: a malformed block of segment {name} at \"{first}\""))
                        }
                    }
                }
            }
            Segments::Rows(t) => {
                for r in t.range(segment_bounds(ns))? {
                    let (k, v) = r?;
                    let (_, seg, term, _) = k.value();
                    match decode_segment_row(v.value()) {
                        Some(list) => add(term, list),
                        None => {
                            problems.push(format!("{ns}: a malformed row of segment {seg} for \"{term}\""))
                        }
                    }
                }
            }
            Segments::Legacy(t) => {
                for r in t.range(legacy_segment_bounds(ns))? {
                    let (k, v) = r?;
                    let (_, seg, term, id, rev) = k.value();
                    match decode_posting(v.value()) {
                        Some((tf, len)) => add(term, vec![(id, rev, tf, len)]),
                        // Counted as a stored posting, as before.
                        None => {
                            malformed += 1;
                            problems
                                .push(format!("{ns}: a malformed posting in segment {seg} for \"{term}\""))
                        }
                    }
                }
            }
            Segments::None => {}
        }
        Ok((out, n + malformed))
    }
}

/// A lexical hit.
#[derive(Clone, Debug)]
pub struct LexicalHit {
    /// The record as of the search's time.
    pub record: Record,
    /// Its BM25 score.
    pub score: f64,
    /// Its BM25 score as a share of the greatest score a text could have for this query (one
    /// holding every query term many times): in (0, 1], and comparable across queries, where
    /// BM25 scores grow with the number and rarity of the query's terms.
    pub relevance: f64,
}

/// A namespace's fresh rows, as a merge reads them: `(id, from_rev, row)`.
pub(crate) type FreshRows = Vec<(u128, u32, Vec<u8>)>;

/// What a search takes from the fresh rows: see [`fresh_hits`].
type FreshHits = (Vec<(u128, u32)>, Vec<Vec<SegmentPosting>>);

/// The keys `(id, from_rev)` of a namespace's fresh texts, and their postings of a search's
/// `terms`: per term, `(id, from_rev, tf, doc length)`, both in key order. A search reads
/// every fresh row of the namespace (up to [`FRESH_LIMIT`]), so each is scanned where redb
/// holds it, its terms compared with the query's as bytes, without copying the row or
/// decoding it into a list (a 30-word row cost about 0.8 µs that way). Bounds and the version
/// byte are checked as the row is read; the integrity check ([`verify`]) decodes every row in
/// full.
fn fresh_hits(
    fresh: &impl ReadableTable<TextKey, &'static [u8]>,
    ns: &str,
    terms: &[String],
) -> Result<FreshHits, Error> {
    let mut keys = Vec::new();
    let mut hits: Vec<Vec<SegmentPosting>> = vec![Vec::new(); terms.len()];
    if terms.is_empty() {
        return Ok((keys, hits));
    }
    for r in fresh.range((ns, 0u128, 0u32)..=(ns, u128::MAX, u32::MAX))? {
        let (k, v) = r?;
        let (_, id, rev) = k.value();
        keys.push((id, rev));
        let scanned = scan_fresh(v.value(), terms, |i, tf, len| {
            if let Some(list) = hits.get_mut(i) {
                list.push((id, rev, tf, len));
            }
        });
        if scanned.is_none() {
            return Err(malformed_fresh(ns, id, rev));
        }
    }
    Ok((keys, hits))
}

/// Call `hit(i, tf, doc length)` for every term of fresh row `b` equal to `terms[i]` (terms
/// distinct); `None` if the row is malformed. A row's terms are compared by length first, so
/// most cost one comparison of two integers per query term.
fn scan_fresh(b: &[u8], terms: &[String], mut hit: impl FnMut(usize, u32, u32)) -> Option<()> {
    let row = FreshTerms::new(b)?;
    let len = row.len;
    for term in row {
        let (term, tf) = term?;
        if let Some(i) = terms.iter().position(|t| t.len() == term.len() && t.as_bytes() == term) {
            hit(i, tf, len);
        }
    }
    Some(())
}

/// Read a namespace's fresh rows.
pub(crate) fn fresh_rows(
    fresh: &impl ReadableTable<TextKey, &'static [u8]>,
    ns: &str,
) -> Result<FreshRows, Error> {
    let mut out = Vec::new();
    for r in fresh.range((ns, 0u128, 0u32)..=(ns, u128::MAX, u32::MAX))? {
        let (k, v) = r?;
        let (_, id, rev) = k.value();
        out.push((id, rev, v.value().to_vec()));
    }
    Ok(out)
}

/// Score the posting lists, segments and fresh rows of the query's terms in a namespace,
/// resolve each record at `as_of` through `resolve` (which applies the filters), and keep the
/// best `k`.
///
/// Each term's postings become one list in `(id, from_rev)` order, weighted by BM25 (its IDF
/// counts the records holding it), and [`crate::maxscore::top`] finds the best records by
/// their best text, pruning those that cannot be among them. Those are then resolved, best
/// first: a record may be hidden at the asked time or by the filters, or its visible revision
/// served by a text that scores less. The answer is exact once the `k`-th visible score
/// beats every record the pruning left out; otherwise the search asks again for eight times
/// as many candidates, and at last for all of them (filters that hide most records).
#[allow(clippy::too_many_arguments)]
pub(crate) fn search(
    postings: &impl ReadableTable<PostingKey, &'static [u8]>,
    segments: &Segments,
    texts: &impl ReadableTable<TextKey, &'static [u8]>,
    fresh: Option<&impl ReadableTable<TextKey, &'static [u8]>>,
    stats: LexStats,
    ns: &Namespace,
    query: &str,
    analyzer: Analyzer,
    k: usize,
    resolve: &dyn Fn(RecordId) -> Result<Option<Record>, Error>,
) -> Result<Vec<LexicalHit>, Error> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let terms = analyzer.query_terms(query);
    // The fresh rows' terms that the query asks for: per query term, (id, rev, tf, len).
    let (fresh, fresh_hits) = match fresh {
        Some(t) => fresh_hits(t, ns.as_str(), &terms)?,
        None => (Vec::new(), vec![Vec::new(); terms.len()]),
    };
    // What the lists read in place: per term, its posting-list rows (decoded) and its
    // blocks in each segment.
    let segs = segments.list(ns.as_str())?;
    let mut held: Vec<(Vec<SegmentPosting>, Vec<Held<'_>>)> = Vec::with_capacity(terms.len());
    for term in &terms {
        let listed = listed_postings(postings, ns, term)?;
        let in_segments =
            segs.iter().map(|&seg| segments.hold(ns.as_str(), seg, term)).collect::<Result<_, _>>()?;
        held.push((listed, in_segments));
    }
    let n = stats.docs.max(1) as f64;
    let avgdl = if stats.docs == 0 { 1.0 } else { stats.total as f64 / stats.docs as f64 };
    let weight = |tf: u32, len: u32| {
        let tf = f64::from(tf);
        tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * f64::from(len) / avgdl))
    };
    // The greatest score a text can have: every query term, as often as can be (a term no
    // text holds counts with the IDF of a document frequency of zero).
    let mut ceiling = 0.0;
    let mut lists = Vec::with_capacity(terms.len());
    for ((term, (listed, in_segments)), fresh_hits) in terms.iter().zip(&held).zip(&fresh_hits) {
        let mut runs = vec![vec![Chunk::Decoded(listed)], vec![Chunk::Decoded(fresh_hits)]];
        for h in in_segments {
            runs.push(h.chunks(ns.as_str(), term)?);
        }
        // The texts holding the term, for its document frequency (the namespace's totals
        // count texts too).
        let df = runs.iter().flatten().map(Chunk::len).sum::<usize>() as f64;
        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        ceiling += idf * (K1 + 1.0);
        // No posting weighs more than the greatest frequency in the shortest text would.
        let (tf, len) = runs
            .iter()
            .flatten()
            .map(Chunk::extremes)
            .fold((0, u32::MAX), |a, b| (a.0.max(b.0), a.1.min(b.1)));
        let max = if tf == 0 { 0.0 } else { weight(tf, len) * idf };
        lists.push(crate::maxscore::TermList::new(runs, idf, max));
    }
    let place = TextPlace { texts, fresh: &fresh, ns };
    // Records found hidden, not resolved again when the search asks for more.
    let mut hidden = std::collections::HashSet::new();
    let mut want = k;
    loop {
        let top = crate::maxscore::top(&lists, want, weight);
        // Each hit with its record's bound.
        let mut hits: Vec<(LexicalHit, f64)> = Vec::new();
        // The least score among `hits`: once `k` are found and no candidate left can reach
        // it (a tie may still win by its id), the rest cannot enter.
        let mut least = f64::MAX;
        for c in &top.best {
            if hits.len() >= k && least > c.bound {
                break;
            }
            if hidden.contains(&c.id) {
                continue;
            }
            let Some(rec) = resolve(RecordId::from_u128(c.id))? else {
                hidden.insert(c.id);
                continue;
            };
            let Some(serving) = place.serving(c.id, rec.rev)? else { continue };
            if let Some(&(_, s)) = c.texts.iter().find(|(r, _)| *r == serving) {
                least = least.min(s);
                hits.push((LexicalHit { record: rec, score: s, relevance: s / ceiling }, c.bound));
            }
        }
        hits.sort_by(|a, b| b.0.score.total_cmp(&a.0.score).then(a.0.record.id.cmp(&b.0.record.id)));
        // A record left out scores at most the threshold, and if it reaches it, it comes
        // after every candidate of that bound (by id): it cannot rank above the `k`-th hit
        // if that one scores more, or as much at its best text.
        let exact = top.threshold.is_none_or(|t| {
            hits.get(k - 1).is_some_and(|(h, bound)| h.score > t || (h.score == t && *bound == t))
        });
        if exact || want == usize::MAX {
            hits.truncate(k);
            return Ok(hits.into_iter().map(|h| h.0).collect());
        }
        want = if want >= k.saturating_mul(8) { usize::MAX } else { want.saturating_mul(8) };
    }
}

/// The postings of `term` in the namespace's posting lists, in `(id, from_rev)` order.
fn listed_postings(
    postings: &impl ReadableTable<PostingKey, &'static [u8]>,
    ns: &Namespace,
    term: &str,
) -> Result<Vec<SegmentPosting>, Error> {
    let mut out = Vec::new();
    for r in postings.range((ns.as_str(), term, 0u128, 0u32)..=(ns.as_str(), term, u128::MAX, u32::MAX))? {
        let (key, v) = r?;
        let (_, _, id, rev) = key.value();
        if let Some((tf, len)) = decode_posting(v.value()) {
            out.push((id, rev, tf, len));
        }
    }
    Ok(out)
}

/// A term's postings in one segment, as a search holds them (see [`Segments::hold`]).
enum Held<'t> {
    Blocks { seg: u64, blocks: Vec<redb::AccessGuard<'t, &'static [u8]>> },
    Decoded(Vec<SegmentPosting>),
}

impl Held<'_> {
    /// The postings of `term`, in order: in each block, its entry's postings as stored.
    fn chunks(&self, ns: &str, term: &str) -> Result<Vec<Chunk<'_>>, Error> {
        match self {
            Held::Blocks { seg, blocks } => {
                let mut out = Vec::with_capacity(blocks.len());
                for guard in blocks {
                    let malformed = || malformed_segment(ns, *seg, term);
                    let block = Block::parse(guard.value()).ok_or_else(malformed)?;
                    if let Some(i) = block.find(term).ok_or_else(malformed)? {
                        out.push(Chunk::stored(block.posting_bytes(i).ok_or_else(malformed)?));
                    }
                }
                Ok(out)
            }
            Held::Decoded(p) => Ok(vec![Chunk::Decoded(p)]),
        }
    }
}

/// Where a namespace's texts start (see [`TextPlace::serving`]).
struct TextPlace<'a, T> {
    texts: &'a T,
    /// The fresh texts' keys, in key order.
    fresh: &'a [(u128, u32)],
    ns: &'a Namespace,
}

impl<T: ReadableTable<TextKey, &'static [u8]>> TextPlace<'_, T> {
    /// The text serving revision `rev` of record `id`: the latest text starting at or below
    /// it, merged or fresh.
    fn serving(&self, id: u128, rev: u32) -> Result<Option<u32>, Error> {
        let ns = self.ns.as_str();
        let mut cursor = self.texts.range((ns, id, 0u32)..=(ns, id, rev))?;
        let merged = cursor.next_back().transpose()?.map(|row| row.0.value().2);
        let at = self.fresh.partition_point(|&(i, r)| (i, r) <= (id, rev));
        let fresh = at.checked_sub(1).and_then(|i| self.fresh.get(i)).filter(|f| f.0 == id).map(|f| f.1);
        Ok(merged.max(fresh))
    }
}

/// What [`crate::Snapshot::lexical_search`] filters by, besides the time.
pub(crate) fn matches(rec: &Record, q: &crate::read::ListQuery) -> bool {
    (q.kinds.is_empty() || q.kinds.contains(&rec.kind()))
        && q.tags.iter().all(|t| rec.envelope.tags.iter().any(|x| x.as_str() == t))
        && q.source.as_ref().is_none_or(|s| rec.envelope.source.as_deref() == Some(s.as_str()))
        && q.task.as_ref().is_none_or(|s| rec.envelope.task.as_deref() == Some(s.as_str()))
}

/// The rows of a namespace in a table whose keys start with it.
fn count_rows<K: redb::Key + 'static>(
    table: &impl ReadableTable<K, &'static [u8]>,
    start: K::SelfType<'_>,
    of_ns: impl Fn(&K::SelfType<'_>) -> bool,
) -> Result<u64, Error> {
    let mut n = 0;
    for r in table.range(start..)? {
        let (k, _) = r?;
        if !of_ns(&k.value()) {
            break;
        }
        n += 1;
    }
    Ok(n)
}

/// The lexical tables [`verify`] compares.
pub(crate) struct Stored<'a, P, T, F> {
    pub(crate) postings: &'a P,
    pub(crate) segments: &'a Segments,
    pub(crate) texts: &'a T,
    pub(crate) fresh: Option<&'a F>,
    pub(crate) stats: LexStats,
    /// The analysis the file's texts were indexed with.
    pub(crate) analyzer: Analyzer,
}

/// Recompute a namespace's lexical index from its records' revisions (`by_record`: each
/// record's revisions in order) and compare it with the stored one: every text (a record's
/// first revision and each revision that changed its text) has a fresh row or a merged
/// `texts` row, not both, with its terms in the fresh row or one posting per term in the
/// posting lists or a segment; no row is left that no text accounts for; and the namespace
/// totals agree. For files of format 6 and later (earlier ones kept a `texts` row for fresh
/// texts too).
pub(crate) fn verify<P, T, F>(
    ns: &str,
    by_record: &BTreeMap<u128, Vec<Record>>,
    stored: &Stored<'_, P, T, F>,
    problems: &mut Vec<String>,
) -> Result<(), Error>
where
    P: ReadableTable<PostingKey, &'static [u8]>,
    T: ReadableTable<TextKey, &'static [u8]>,
    F: ReadableTable<TextKey, &'static [u8]>,
{
    let (segments, in_segments) = stored.segments.all(ns, problems)?;
    let (mut docs, mut total, mut fresh_texts, mut merged_texts, mut postings) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    for (&id, list) in by_record {
        let mut previous: Option<String> = None;
        for rec in list {
            let text = rec.body.text();
            if previous.as_deref() == Some(text.as_str()) {
                continue;
            }
            let (counts, len) = term_counts_by(stored.analyzer, &text);
            previous = Some(text);
            docs += 1;
            total += u64::from(len);
            let key = (ns, id, rec.rev);
            let fresh = match stored.fresh {
                Some(t) => t.get(key)?.map(|v| v.value().to_vec()),
                None => None,
            };
            let what = format!("{ns}: the text of {id:032x} from revision {}", rec.rev);
            match (fresh, stored.texts.get(key)?.is_some()) {
                (Some(bytes), false) => {
                    fresh_texts += 1;
                    let (stored_len, terms) = decode_fresh_row(ns, id, rec.rev, &bytes)?;
                    let want: Vec<(&str, u32)> = counts.iter().map(|(t, c)| (t.as_str(), *c)).collect();
                    if stored_len != len || terms != want {
                        problems.push(format!("{what}: its fresh row holds other terms"));
                    }
                }
                (None, true) => {
                    merged_texts += 1;
                    for (term, tf) in &counts {
                        let want = encode_posting(*tf, len);
                        let mut found =
                            stored.postings.get((ns, term.as_str(), id, rec.rev))?.map(|v| v.value() == want);
                        if found.is_none() {
                            found = segments.get(&(term.clone(), id, rec.rev)).map(|p| *p == (*tf, len));
                        }
                        match found {
                            Some(right) => {
                                postings += 1;
                                if !right {
                                    problems
                                        .push(format!("{what}: the posting of \"{term}\" has a wrong count"));
                                }
                            }
                            None => problems.push(format!("{what}: no posting of \"{term}\"")),
                        }
                    }
                }
                (Some(_), true) => problems.push(format!("{what} is both fresh and merged")),
                (None, false) => problems.push(format!("{what} is not indexed")),
            }
        }
    }
    let stored_postings = count_rows(stored.postings, (ns, "", 0u128, 0u32), |k| k.0 == ns)? + in_segments;
    let stored_fresh = match stored.fresh {
        Some(t) => count_rows(t, (ns, 0u128, 0u32), |k| k.0 == ns)?,
        None => 0,
    };
    let rows = [
        ("postings", stored_postings, postings),
        ("merged texts", count_rows(stored.texts, (ns, 0u128, 0u32), |k| k.0 == ns)?, merged_texts),
        ("fresh texts", stored_fresh, fresh_texts),
    ];
    for (what, found, expected) in rows {
        if found != expected {
            problems.push(format!("{ns}: {found} {what} stored, {expected} expected"));
        }
    }
    let want = LexStats { docs, total, fresh: fresh_texts };
    if stored.stats != want {
        problems.push(format!("{ns}: the lexical totals are {:?}, expected {want:?}", stored.stats));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every term's postings through [`term_blocks`], as a search reads them.
    fn lookup(table: &impl ReadableTable<SegmentKey, &'static [u8]>, term: &str) -> Vec<SegmentPosting> {
        let mut out = Vec::new();
        term_blocks(table, "n", 5, term, |_, _, guard| {
            let block = Block::parse(guard.value()).ok_or_else(|| malformed_segment("n", 5, term))?;
            if let Some(i) = block.find(term).ok_or_else(|| malformed_segment("n", 5, term))? {
                out.extend(block.postings(i).ok_or_else(|| malformed_segment("n", 5, term))?);
            }
            Ok(true)
        })
        .unwrap();
        out.sort_unstable();
        out
    }

    /// Blocks split between terms and inside a term's postings (a term starting mid-block and
    /// continuing over several blocks); every term is found, and so is none that is absent,
    /// also after `forget` took a block's first entry out (its key is then below its first
    /// term) or emptied a block.
    /// A block is refused when its terms, or a term's postings, are out of order, or when
    /// it is cut short.
    #[test]
    fn a_block_out_of_order_fails_its_check() {
        let encode = |entries: &[(&str, &[SegmentPosting])]| {
            let mut b = BlockBuf::default();
            for (term, list) in entries {
                b.push(term, list);
            }
            b.take()
        };
        let ok = encode(&[("a", &[(1, 0, 1, 1), (2, 0, 1, 1)]), ("b", &[(1, 0, 1, 1)])]);
        assert!(Block::parse(&ok).is_some_and(|b| b.check()));
        assert_eq!(Block::parse(&ok).and_then(|b| b.entries()).map(|e| e.len()), Some(2));
        for bad in [
            encode(&[("b", &[(1, 0, 1, 1)]), ("a", &[(1, 0, 1, 1)])]),
            encode(&[("a", &[(1, 0, 1, 1)]), ("a", &[(2, 0, 1, 1)])]),
            encode(&[("a", &[(2, 0, 1, 1), (1, 0, 1, 1)])]),
            encode(&[("a", &[(1, 1, 1, 1), (1, 0, 1, 1)])]),
            encode(&[("a", &[(1, 0, 1, 1), (1, 0, 1, 1)])]),
        ] {
            assert!(Block::parse(&bad).is_some_and(|b| !b.check() && b.entries().is_none()), "{bad:?}");
        }
        assert!(Block::parse(&ok[..ok.len() - 1]).is_none());
    }

    #[test]
    fn blocks_find_every_term_across_boundaries_and_after_forgets() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("b.redb")).unwrap();
        // Terms of 1 to 3,000 postings: "t0000" has 1, "t0007" 3,000 (about five blocks).
        let mut want: BTreeMap<String, Vec<SegmentPosting>> = BTreeMap::new();
        for t in 0..40u32 {
            let n = if t % 7 == 0 { 3000 } else { 1 + t * 13 };
            let list = (0..n).map(|i| (u128::from(i) * 3 + u128::from(t), i % 3, 1 + i % 4, 10)).collect();
            want.insert(format!("t{:04}", t * 7), list);
        }
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(crate::tables::SEGMENTS).unwrap();
            let mut w = BlockWriter::new("n", 5);
            for (term, list) in &want {
                w.push(&mut table, term, list).unwrap();
                if term == "t0035" {
                    // A block boundary before a small term.
                    w.flush(&mut table).unwrap();
                }
            }
            w.flush(&mut table).unwrap();
            // Another segment on each side, to be left alone.
            for seg in [4, 6] {
                let mut w = BlockWriter::new("n", seg);
                w.push(&mut table, "t0007", &[(1, 0, 1, 1)]).unwrap();
                w.flush(&mut table).unwrap();
            }
            let keys: Vec<(String, u32)> = table
                .range(("n", 5u64, "", 0u32)..("n", 6u64, "", 0u32))
                .unwrap()
                .map(|r| {
                    let (k, _) = r.unwrap();
                    (k.value().2.to_string(), k.value().3)
                })
                .collect();
            assert!(keys.len() > 10, "{keys:?}");
            assert!(keys.iter().any(|k| k.1 > 1), "a term over three blocks or more: {keys:?}");
            assert!(keys.iter().any(|k| k.1 == 0 && want[&k.0].len() > 1), "{keys:?}");
            let check = |table: &Table<'_, SegmentKey, &'static [u8]>, want: &BTreeMap<String, Vec<_>>| {
                for (term, list) in want {
                    assert_eq!(&lookup(table, term), list, "{term}");
                }
                for absent in ["", "a", "t0001", "t0008", "t9", "u"] {
                    assert!(lookup(table, absent).is_empty(), "{absent}");
                }
            };
            check(&table, &want);
            let mut lexical = LexicalWriter {
                postings: crate::tables::LazyTable::new(&txn, crate::tables::POSTINGS),
                segments: crate::tables::LazyTable::new(&txn, crate::tables::SEGMENTS),
                texts: crate::tables::LazyTable::new(&txn, crate::tables::TEXTS),
                fresh: txn.open_table(crate::tables::FRESH).unwrap(),
                stats: txn.open_table(crate::tables::LEXSTATS).unwrap(),
                pending: BTreeMap::new(),
                new_texts: BTreeMap::new(),
                written: 0,
                prepared: Vec::new(),
                merge_requested: Default::default(),
            };
            drop(table);
            // Every posting of a term that starts a block and ends in it: the block keeps its
            // key, now below its first term.
            let emptied = "t0042".to_string();
            assert!(keys.contains(&(emptied.clone(), 0)) && want[&emptied].len() < 100, "{keys:?}");
            for (id, rev, _, _) in want.insert(emptied.clone(), Vec::new()).unwrap() {
                lexical.forget_in_segment("n", 5, &emptied, id, rev).unwrap();
            }
            // Then a posting of every other block's first term.
            for (term, part) in keys.iter().filter(|k| k.0 != emptied) {
                let list = want.get_mut(term).unwrap();
                let at = if *part == 0 { 0 } else { list.len() / 2 };
                let (id, rev, _, _) = list.remove(at);
                lexical.forget_in_segment("n", 5, term, id, rev).unwrap();
            }
            check(lexical.segments.get().unwrap(), &want);
            let first = |t: &Table<'_, SegmentKey, &'static [u8]>| {
                let v = t.get(("n", 5u64, emptied.as_str(), 0u32)).unwrap().unwrap();
                Block::parse(v.value()).unwrap().term(0).unwrap().to_string()
            };
            assert!(first(lexical.segments.get().unwrap()) > emptied, "the key is below the first term");
            let other = lexical
                .segments
                .get()
                .unwrap()
                .range(("n", 4u64, "", 0u32)..("n", 5u64, "", 0u32))
                .unwrap()
                .count();
            assert_eq!(other, 1);
        }
        txn.commit().unwrap();
    }

    /// A search scans fresh rows in place: it finds exactly the terms the full decoding finds,
    /// with their counts and the text's length, and a truncated or unknown row is an error, not
    /// a silent miss.
    #[test]
    fn a_fresh_row_scanned_in_place_matches_its_decoding() {
        let (counts, len) = term_counts("the cache keeps café keys; cache misses go to redb, café again");
        let row = encode_fresh(counts.iter().map(|(t, tf)| (t.as_str(), *tf)), len);
        let (_, decoded) = decode_fresh(&row).unwrap();
        let mut query: Vec<String> =
            ["cache", "café", "redb", "absent", "cach"].iter().map(|s| s.to_string()).collect();
        query.sort();
        let mut found = Vec::new();
        scan_fresh(&row, &query, |i, tf, l| found.push((query[i].clone(), tf, l))).unwrap();
        found.sort();
        let mut want: Vec<(String, u32, u32)> = decoded
            .iter()
            .filter(|(t, _)| query.iter().any(|q| q == t))
            .map(|(t, tf)| (t.to_string(), *tf, len))
            .collect();
        want.sort();
        assert_eq!(found, want);
        assert_eq!(found.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(), ["cach", "café", "redb"]);
        assert_eq!(found[0].1, 2, "{found:?}");
        for cut in [1, 5, 9, row.len() - 1] {
            assert!(scan_fresh(&row[..cut], &query, |_, _, _| {}).is_none(), "cut at {cut}");
        }
        let mut other = row.clone();
        other[0] = FRESH_VERSION + 1;
        assert!(scan_fresh(&other, &query, |_, _, _| {}).is_none());
    }

    /// A job's texts are encoded by its caller ([`prepare`]) exactly as the committer would
    /// encode them, for at most `limit` texts, and the committer uses such a row only for the
    /// record with its id and exactly its text: a record whose text turned out otherwise is
    /// tokenized in the commit.
    #[test]
    fn a_prepared_row_is_used_only_for_its_record_and_its_text() {
        use crate::body::Learning;
        use crate::record::{Envelope, Op, Record};
        use crate::write::{NewRecord, WriteOp};
        let ns = crate::id::Namespace::new("n").unwrap();
        let learning =
            |t: &str| -> crate::body::Body { Learning { text: t.into(), ..Default::default() }.into() };
        let a = NewRecord::new(ns.clone(), learning("Alpha beta, beta!"));
        let b = NewRecord::new(ns.clone(), learning("gamma"));
        let ops = vec![
            WriteOp::Insert(a.clone()),
            WriteOp::Retire { namespace: ns.clone(), id: a.id, at: None },
            WriteOp::Supersede { old: a.id, new: b.clone() },
        ];
        assert_eq!(prepare(&ops, 1).len(), 1);
        assert!(prepare(&ops, 0).is_empty());
        let prepared = prepare(&ops, 64);
        assert_eq!(prepared.iter().map(|p| p.id).collect::<Vec<_>>(), [a.id.as_u128(), b.id.as_u128()]);
        for (p, text) in prepared.iter().zip(["Alpha beta, beta!", "gamma"]) {
            let (terms, len) = term_list(text);
            assert_eq!(p.row, encode_fresh(terms.iter().map(|(t, tf)| (t.as_ref(), *tf)), len));
            assert_eq!(p.len, len);
        }
        let record = |n: &NewRecord, text: &str| Record {
            namespace: ns.clone(),
            id: n.id,
            rev: 1,
            recorded_at: crate::time::Timestamp::from_micros(10),
            replaced_at: None,
            op: Op::Insert,
            valid_from: crate::time::Timestamp::from_micros(10),
            valid_until: None,
            expires_at: None,
            supersedes: None,
            superseded_by: None,
            envelope: Envelope::default(),
            body: learning(text),
        };
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("p.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut w = LexicalWriter::open(&txn).unwrap();
            w.prepared = prepared;
            // `a`'s id with another text: its prepared row is not used, nor taken.
            w.write(None, &record(&a, "delta delta")).unwrap();
            assert_eq!(w.prepared.len(), 2);
            // `b` with its text: its row is taken.
            w.write(None, &record(&b, "gamma")).unwrap();
            assert_eq!(w.prepared.iter().map(|p| p.id).collect::<Vec<_>>(), [a.id.as_u128()]);
            let row = |id: crate::id::RecordId| {
                w.fresh.get(("n", id.as_u128(), 1u32)).unwrap().unwrap().value().to_vec()
            };
            let terms = |row: &[u8]| {
                let (len, terms) = decode_fresh(row).unwrap();
                (len, terms.into_iter().map(|(t, tf)| (t.to_string(), tf)).collect::<Vec<_>>())
            };
            assert_eq!(terms(&row(a.id)), (2, vec![("delta".to_string(), 2)]));
            assert_eq!(terms(&row(b.id)), (1, vec![("gamma".to_string(), 1)]));
        }
        txn.abort().unwrap();
    }

    /// A full block fits one 16 KiB page with its key, even with the longest namespace and
    /// terms: a block of 16 KiB took a 32 KiB page, half of it empty (`fragmented_bytes`).
    #[test]
    fn a_full_block_and_its_key_fit_one_page() {
        use redb::ReadableTableMetadata;
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("f.redb")).unwrap();
        let ns = "n".repeat(crate::id::MAX_NAMESPACE_LEN);
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(crate::tables::SEGMENTS).unwrap();
            let mut w = BlockWriter::new(&ns, 1);
            for t in 0..40u32 {
                let term = format!("{t:064}");
                let list: Vec<SegmentPosting> = (0..300u32).map(|i| (u128::from(i), 0, 1, 10)).collect();
                w.push(&mut table, &term, &list).unwrap();
            }
            w.flush(&mut table).unwrap();
            let stats = table.stats().unwrap();
            assert!(table.len().unwrap() >= 20, "{}", table.len().unwrap());
            assert!(
                stats.fragmented_bytes() * 8 < stats.stored_bytes(),
                "stored {} fragmented {} in {} leaves",
                stats.stored_bytes(),
                stats.fragmented_bytes(),
                stats.leaf_pages()
            );
        }
        txn.abort().unwrap();
    }
}
