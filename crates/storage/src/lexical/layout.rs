//! The lexical index's layout: table keys, versions of its rows, sizes, and the terms of a
//! text (the analysis of the format this build writes).

use std::collections::BTreeMap;

use crate::analyzer::Analyzer;

/// The analysis of the texts this build indexes: the current format's (see mnemon-text's
/// `analyzer`).
pub(crate) const WRITE_ANALYZER: Analyzer = Analyzer::Stemmed;

/// Posting-list rows and text rows (`[1][tf u32][doc length u32]`), formats 2 to 17.
pub(super) const POSTING_VERSION_1: u8 = 1;
/// Version 1's layout sealed by a CRC-32 of its bytes (format 18).
pub(super) const POSTING_VERSION: u8 = 2;
/// Fresh rows, formats 3 to 17.
pub(super) const FRESH_VERSION_1: u8 = 1;
/// Version 1's layout sealed by a CRC-32 of its bytes (format 18).
pub(super) const FRESH_VERSION: u8 = 2;
/// Namespace totals without the fresh count (format 2).
pub(super) const STATS_VERSION_1: u8 = 1;
/// Namespace totals with the fresh count (formats 3 to 17).
pub(super) const STATS_VERSION_2: u8 = 2;
/// Version 2's layout sealed by a CRC-32 of its bytes (format 18).
pub(super) const STATS_VERSION: u8 = 3;

/// A namespace's fresh texts are merged into the posting lists once a commit would leave this
/// many (see the module documentation).
pub const FRESH_LIMIT: u64 = 256;

pub(crate) type PostingKey = (&'static str, &'static str, u128, u32);
/// `(namespace, segment, first term, part)`: a block of a segment (format 10), or a row of
/// format 9's segments (`(namespace, segment, term, part)`).
pub(crate) type SegmentKey = (&'static str, u64, &'static str, u32);
/// `(namespace, segment, term, id, from_rev)`: a posting of format 8's segments.
pub(crate) type LegacySegmentKey = (&'static str, u64, &'static str, u128, u32);
/// A posting with its text's key: `(id, from_rev, tf, doc length)`.
pub(crate) use super::posting::Keyed as SegmentPosting;
/// Every posting of a namespace's segments: `(term, id, from_rev) -> (tf, doc length)`.
pub(crate) type SegmentMap = BTreeMap<(String, u128, u32), (u32, u32)>;

/// Bytes of a keyed posting (format 9's segment rows and format 8's to 14's blocks).
pub(super) use super::posting::KEYED_BYTES as SEGMENT_POSTING_BYTES;
/// Format 9's segment rows.
pub(super) const SEGMENT_ROW_VERSION: u8 = 1;
/// Format 10's and 11's segment blocks (keyed, no bounds).
pub(super) const BLOCK_VERSION_1: u8 = 1;
/// Keyed segment blocks with their pieces' bounds (formats 12 to 14).
pub(super) const BLOCK_VERSION_2: u8 = 2;
/// Numbered segment blocks (formats 15 and 16).
pub(super) const BLOCK_VERSION_3: u8 = 3;
/// Numbered segment blocks sealed by a CRC-32 at their end (format 17): version 3's layout,
/// then the checksum of every byte before it, checked when the block is parsed.
pub(super) const BLOCK_VERSION: u8 = 4;
/// A segment block is closed once it holds this many bytes: a search reads the blocks
/// holding a term's postings in each segment, one or two for all but the common terms. A block, its key (at most
/// 280 bytes: a namespace of 200, a term of 64, their lengths, the segment and the part) and
/// redb's leaf header (12 bytes for one entry) fit one 32 KiB page (a block of exactly 32 KiB
/// would take a 64 KiB page, half of it empty). Format 15 took blocks from 16 to 32 KiB: a
/// search fetches each page through redb's cache (a lookup and a reference count), and half
/// the fetches made a search about 10% faster (docs/search.md); a `forget` rewrites one block
/// per term of the text.
pub(super) const BLOCK_BYTES: usize = 32 * 1024 - 324;

/// A level's segments are merged into one segment of the next level once it would hold this
/// many (see the module documentation).
pub const SEGMENT_FANOUT: usize = 8;
/// A segment's number holds its level in the bits above these (segments of a level are one
/// run of keys) and its sequence number below.
pub(super) const LEVEL_SHIFT: u32 = 56;
/// A text's distinct terms with their counts, and its length in tokens.
pub(crate) type TermCounts = (BTreeMap<String, u32>, u32);
/// A text a commit indexes: `((id, from_rev), terms)`.
pub(super) type NewText = ((u128, u32), TermCounts);
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
