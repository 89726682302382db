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
//!   saying that the revision starts a text, and one posting per distinct term, either in a
//!   **segment** (format 9: one row `(ns, segment, term, part)` in `mnemon.segment_terms` per
//!   term of the segment, holding its postings `[id u128][from_rev u32][tf u32][doc length
//!   u32]` in `(id, from_rev)` order, at most [`SEGMENT_ROW_POSTINGS`] per part; format 8 kept
//!   one row per posting in `mnemon.segments`) or in the **posting lists** (`(ns, term, id,
//!   from_rev) -> [1][tf u32][doc length u32]` in `mnemon.postings`). When a commit would leave a namespace with [`FRESH_LIMIT`] fresh
//!   texts or more, it merges them all (and its own texts, the first
//!   [`crate::tables::FEW_ROWS`] of them after reading them back from `mnemon.fresh`, where
//!   [`LexicalWriter::write`] put them as the jobs were applied), so a search reads at most
//!   that many fresh rows. A merge writes its postings as the namespace's next segment: one
//!   run of keys after the other segments, a few whole leaves, where inserting them into the
//!   posting lists touches a leaf per distinct term, spread over the tree (with texts of 30
//!   words from a vocabulary of 5,000, that made merges most of the cost of a write). A merge
//!   that finds [`SEGMENT_LIMIT`] segments less one moves them all, with its own postings,
//!   into the posting lists, each term's new postings as one run (`tables::insert_sorted`),
//!   so a search reads at most that many segments beside the posting list of each term.
//!   [`crate::WriteOp::MergeTexts`] merges a namespace's fresh texts and segments at any time
//!   (a server's quiet moment), so that no caller's write pays for the merge.
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

use crate::error::Error;
use crate::id::{Namespace, RecordId};
use crate::record::Record;
use crate::tokens::{is_stopword, tokenize};

const POSTING_VERSION: u8 = 1;
const FRESH_VERSION: u8 = 1;
/// Namespace totals without the fresh count (format 2).
const STATS_VERSION_1: u8 = 1;
const STATS_VERSION: u8 = 2;

/// A namespace's fresh texts are merged into the posting lists once a commit would leave this
/// many (see the module documentation).
pub const FRESH_LIMIT: u64 = 256;

/// BM25 parameters (the usual ones).
const K1: f64 = 1.2;
const B: f64 = 0.75;

pub(crate) type PostingKey = (&'static str, &'static str, u128, u32);
/// `(namespace, segment, term, part)`: a row of a segment (format 9).
pub(crate) type SegmentKey = (&'static str, u64, &'static str, u32);
/// `(namespace, segment, term, id, from_rev)`: a posting of format 8's segments.
pub(crate) type LegacySegmentKey = (&'static str, u64, &'static str, u128, u32);
/// A posting as a segment holds it: `(id, from_rev, tf, doc length)`.
pub(crate) type SegmentPosting = (u128, u32, u32, u32);
/// Every posting of a namespace's segments: `(term, id, from_rev) -> (tf, doc length)`.
pub(crate) type SegmentMap = BTreeMap<(String, u128, u32), (u32, u32)>;

const SEGMENT_ROW_VERSION: u8 = 1;
/// Bytes of a posting in a segment row: id, from_rev, tf, doc length.
const SEGMENT_POSTING_BYTES: usize = 28;
/// The most postings of one term a segment row holds; a term with more in a merge (a bulk
/// commit's common words) continues in the next part, so no row grows without bound.
const SEGMENT_ROW_POSTINGS: usize = 512;

/// Segments a namespace gathers before a merge moves them all into the posting lists (see the
/// module documentation).
pub const SEGMENT_LIMIT: u64 = 16;
/// A text's distinct terms with their counts, and its length in tokens.
pub(crate) type TermCounts = (BTreeMap<String, u32>, u32);
/// A text a commit indexes: `((id, from_rev), terms)`.
type NewText = ((u128, u32), TermCounts);
pub(crate) type TextKey = (&'static str, u128, u32);

/// Term frequencies and length of a text.
pub(crate) fn term_counts(text: &str) -> TermCounts {
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    let tokens = tokenize(text);
    let len = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
    for t in tokens {
        if t.len() <= 64 && !is_stopword(&t) {
            *counts.entry(t).or_insert(0) += 1;
        }
    }
    (counts, len)
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

/// A segment row: postings of one term, in `(id, from_rev)` order.
fn encode_segment_row(postings: &[SegmentPosting]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + postings.len() * SEGMENT_POSTING_BYTES);
    out.push(SEGMENT_ROW_VERSION);
    for &(id, rev, tf, len) in postings {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&rev.to_le_bytes());
        out.extend_from_slice(&tf.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
    }
    out
}

/// The postings of a segment row (`None` if malformed).
fn decode_segment_row(b: &[u8]) -> Option<Vec<SegmentPosting>> {
    let body = b.strip_prefix(&[SEGMENT_ROW_VERSION])?;
    if body.len() % SEGMENT_POSTING_BYTES != 0 {
        return None;
    }
    body.chunks_exact(SEGMENT_POSTING_BYTES)
        .map(|c| {
            let u32_at = |i: usize| c.get(i..i + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes);
            Some((u128::from_le_bytes(c.get(..16)?.try_into().ok()?), u32_at(16)?, u32_at(20)?, u32_at(24)?))
        })
        .collect()
}

/// [`decode_segment_row`], with the row named in the error.
fn decode_segment_row_at(ns: &str, seg: u64, term: &str, b: &[u8]) -> Result<Vec<SegmentPosting>, Error> {
    decode_segment_row(b).ok_or_else(|| Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!("malformed row of segment {seg} for the term \"{term}\""),
    })
}

/// The rows of one segment for postings sorted by `(term, id, from_rev)`: per term, its
/// postings in parts of at most [`SEGMENT_ROW_POSTINGS`], as `(term, part, row)`.
fn segment_rows<'p>(postings: &[(&'p str, SegmentPosting)]) -> Vec<(&'p str, u32, Vec<u8>)> {
    let mut rows = Vec::new();
    let mut i = 0;
    while let Some(&(term, _)) = postings.get(i) {
        let run = postings[i..].partition_point(|p| p.0 == term);
        let list: Vec<SegmentPosting> = postings[i..i + run].iter().map(|p| p.1).collect();
        for (part, chunk) in list.chunks(SEGMENT_ROW_POSTINGS).enumerate() {
            rows.push((term, u32::try_from(part).unwrap_or(u32::MAX), encode_segment_row(chunk)));
        }
        i += run;
    }
    rows
}

/// The terms of a fresh text and its length.
fn encode_fresh(counts: &BTreeMap<String, u32>, len: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + counts.keys().map(|t| 6 + t.len()).sum::<usize>());
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

/// A fresh row: its text's length and `(term, tf)` in term order (`None` if malformed).
fn decode_fresh(b: &[u8]) -> Option<FreshText<'_>> {
    let u32_at = |i: usize| b.get(i..i + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes);
    if b.first() != Some(&FRESH_VERSION) {
        return None;
    }
    let len = u32_at(1)?;
    let n = usize::try_from(u32_at(5)?).ok()?;
    let mut terms = Vec::with_capacity(n.min(1024));
    let mut at = 9;
    for _ in 0..n {
        let tf = u32_at(at)?;
        let tl = usize::from(u16::from_le_bytes(b.get(at + 4..at + 6)?.try_into().ok()?));
        let term = std::str::from_utf8(b.get(at + 6..at + 6 + tl)?).ok()?;
        terms.push((term, tf));
        at += 6 + tl;
    }
    Some((len, terms))
}

/// [`decode_fresh`], with the row named in the error.
fn decode_fresh_row<'b>(ns: &str, id: u128, rev: u32, bytes: &'b [u8]) -> Result<FreshText<'b>, Error> {
    decode_fresh(bytes).ok_or_else(|| Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!("malformed fresh text row of {} revision {rev}", RecordId::from_u128(id)),
    })
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
            merge_requested: std::collections::BTreeSet::new(),
        })
    }

    fn bump(&mut self, ns: &str, docs: i64, len: i64, fresh: i64) {
        let e = self.pending.entry(ns.to_string()).or_insert((0, 0, 0));
        e.0 += docs;
        e.1 += len;
        e.2 += fresh;
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
                    && (texts > 0 || segment_range(self.segments.get()?, &ns)?.is_some()));
            if merge {
                self.merge(&ns, &new, requested.contains(&ns))?;
            } else {
                for ((id, rev), (counts, len)) in &new {
                    self.fresh.insert((ns.as_str(), *id, *rev), encode_fresh(counts, *len).as_slice())?;
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
    /// of postings; or, when the namespace has [`SEGMENT_LIMIT`] segments less one, or the
    /// merge was asked for (`all`), move them and every segment into the posting lists. The
    /// postings are inserted in key order: a segment's as one run at the end of the namespace's
    /// segments, and in the posting lists each term's new postings (whose ids are mostly newer
    /// than its old ones) as one run through one cursor rather than one descent each.
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
        let segments = segment_range(self.segments.get()?, ns)?;
        let count = segments.map_or(0, |(first, last)| last - first + 1);
        if all || count + 1 >= SEGMENT_LIMIT {
            // The segments' rows, read out (their keys borrow the table), and removed.
            let mut held: Vec<(String, Vec<SegmentPosting>)> = Vec::new();
            if count > 0 {
                for r in self.segments.get()?.range(segment_bounds(ns))? {
                    let (k, v) = r?;
                    let (_, seg, term, _) = k.value();
                    held.push((term.to_string(), decode_segment_row_at(ns, seg, term, v.value())?));
                }
                self.segments.get_mut()?.retain_in(segment_bounds(ns), |_, _| false)?;
            }
            postings.extend(held.iter().flat_map(|(term, list)| list.iter().map(|p| (term.as_str(), *p))));
            // Stable: of two equal keys (which a consistent file never has) the later wins, as
            // before.
            postings.sort_by(|a, b| (a.0, a.1.0, a.1.1).cmp(&(b.0, b.1.0, b.1.1)));
            let values: Vec<[u8; 9]> =
                postings.iter().map(|(_, (_, _, tf, len))| encode_posting(*tf, *len)).collect();
            crate::tables::insert_sorted(
                self.postings.get_mut()?,
                postings
                    .iter()
                    .zip(&values)
                    .map(|((term, (id, rev, _, _)), value)| ((ns, *term, *id, *rev), value.as_slice())),
            )?;
        } else {
            let seg = segments.map_or(0, |(_, last)| last + 1);
            postings.sort_by(|a, b| (a.0, a.1.0, a.1.1).cmp(&(b.0, b.1.0, b.1.1)));
            let rows = segment_rows(&postings);
            crate::tables::insert_sorted(
                self.segments.get_mut()?,
                rows.iter().map(|(term, part, row)| ((ns, seg, *term, *part), row.as_slice())),
            )?;
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
        let (counts, len) = term_counts(&text);
        let (ns, id) = (new.namespace.as_str(), new.id.as_u128());
        // Its row in `mnemon.texts` waits for the merge (see the module documentation).
        if self.written < crate::tables::FEW_ROWS {
            // A group commit's few texts go in now, while its later jobs are still on their
            // way, rather than after its last job, where they delay the fsync every caller
            // waits for. A merge in this commit reads them back with the stored ones. A bulk
            // commit's further texts wait for `flush`, which merges them without writing
            // their fresh rows at all when the namespace is due for a merge.
            self.fresh.insert((ns, id, new.rev), encode_fresh(&counts, len).as_slice())?;
            self.written += 1;
            self.bump(ns, 1, i64::from(len), 1);
        } else {
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
        let segments = segment_range(self.segments.get()?, ns)?;
        for rev in &revs {
            let unplaced = self.new_texts.remove(&(ns.to_string(), id, *rev)).is_some();
            if let Some(rec) = all.iter().find(|r| r.rev == *rev) {
                let (counts, len) = term_counts(&rec.body.text());
                if !unplaced && !fresh_revs.contains(rev) {
                    for term in counts.keys() {
                        self.postings.get_mut()?.remove((ns, term.as_str(), id, *rev))?;
                        if let Some((first, last)) = segments {
                            for seg in first..=last {
                                self.forget_in_segment(ns, seg, term, id, *rev)?;
                            }
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
    /// Remove the posting of `(id, rev)` from a term's rows in one segment, if it is there.
    fn forget_in_segment(&mut self, ns: &str, seg: u64, term: &str, id: u128, rev: u32) -> Result<(), Error> {
        let mut found: Option<(u32, Vec<SegmentPosting>)> = None;
        for r in self.segments.get()?.range((ns, seg, term, 0u32)..=(ns, seg, term, u32::MAX))? {
            let (k, v) = r?;
            let list = decode_segment_row_at(ns, seg, term, v.value())?;
            if list.iter().any(|p| (p.0, p.1) == (id, rev)) {
                found = Some((k.value().3, list));
                break;
            }
        }
        if let Some((part, mut list)) = found {
            list.retain(|p| (p.0, p.1) != (id, rev));
            let table = self.segments.get_mut()?;
            if list.is_empty() {
                table.remove((ns, seg, term, part))?;
            } else {
                table.insert((ns, seg, term, part), encode_segment_row(&list).as_slice())?;
            }
        }
        Ok(())
    }
}

/// Every key of a namespace's segments (segment `u64::MAX` is never used).
fn segment_bounds(ns: &str) -> std::ops::Range<(&str, u64, &'static str, u32)> {
    (ns, 0u64, "", 0u32)..(ns, u64::MAX, "", 0u32)
}

/// Every key of a namespace's segments in format 8.
fn legacy_segment_bounds(ns: &str) -> std::ops::Range<(&str, u64, &'static str, u128, u32)> {
    (ns, 0u64, "", 0u128, 0u32)..(ns, u64::MAX, "", 0u128, 0u32)
}

/// A namespace's first and last segment, if it has any. Segments are numbered without gaps:
/// each merge adds the next, and they all go together.
pub(crate) fn segment_range(
    segments: &impl ReadableTable<SegmentKey, &'static [u8]>,
    ns: &str,
) -> Result<Option<(u64, u64)>, Error> {
    first_and_last(segments.range(segment_bounds(ns))?, |k| k.1)
}

/// The segments of the first and last keys of a namespace's range of segment keys (`seg`
/// reads a key's segment), in either format.
fn first_and_last<K: redb::Key + 'static>(
    mut range: redb::Range<'_, K, &'static [u8]>,
    seg: impl for<'k> Fn(K::SelfType<'k>) -> u64,
) -> Result<Option<(u64, u64)>, Error> {
    let Some(first) = range.next() else { return Ok(None) };
    let first = seg(first?.0.value());
    let last = match range.next_back() {
        Some(r) => seg(r?.0.value()),
        None => first,
    };
    Ok(Some((first, last)))
}

/// Where a snapshot finds the postings of merged texts not yet in the posting lists: format
/// 9's segment rows, or format 8's one row per posting (a format-8 file opened read-only).
pub(crate) enum Segments<A, B> {
    /// Format 9: one row per term and segment.
    Rows(A),
    /// Format 8: one row per posting.
    Legacy(B),
    /// No segments table (formats before 8).
    None,
}

impl<A, B> Segments<A, B>
where
    A: ReadableTable<SegmentKey, &'static [u8]>,
    B: ReadableTable<LegacySegmentKey, &'static [u8]>,
{
    /// Every posting of `term` in a namespace's segments, segment by segment.
    pub(crate) fn postings(&self, ns: &str, term: &str) -> Result<Vec<SegmentPosting>, Error> {
        let mut out = Vec::new();
        match self {
            Segments::Rows(t) => {
                let Some((first, last)) = segment_range(t, ns)? else { return Ok(out) };
                for seg in first..=last {
                    for r in t.range((ns, seg, term, 0u32)..=(ns, seg, term, u32::MAX))? {
                        let (_, v) = r?;
                        out.extend(decode_segment_row_at(ns, seg, term, v.value())?);
                    }
                }
            }
            Segments::Legacy(t) => {
                let Some((first, last)) = first_and_last(t.range(legacy_segment_bounds(ns))?, |k| k.1)?
                else {
                    return Ok(out);
                };
                for seg in first..=last {
                    for r in t.range((ns, seg, term, 0u128, 0u32)..=(ns, seg, term, u128::MAX, u32::MAX))? {
                        let (k, v) = r?;
                        let (_, _, _, id, rev) = k.value();
                        if let Some((tf, len)) = decode_posting(v.value()) {
                            out.push((id, rev, tf, len));
                        }
                    }
                }
            }
            Segments::None => {}
        }
        Ok(out)
    }

    /// How many postings a namespace's segments hold (a malformed row counts for none), read
    /// row by row: no map of them all (a bulk import's one segment can hold millions).
    pub(crate) fn count(&self, ns: &str) -> Result<u64, Error> {
        let mut n = 0u64;
        match self {
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

    /// Every posting of a namespace's segments, by `(term, id, from_rev)`, and how many rows
    /// hold them (a posting stored twice counts twice). Malformed rows are reported as
    /// problems.
    pub(crate) fn all(&self, ns: &str, problems: &mut Vec<String>) -> Result<(SegmentMap, u64), Error> {
        let mut out = BTreeMap::new();
        let mut n = 0u64;
        match self {
            Segments::Rows(t) => {
                for r in t.range(segment_bounds(ns))? {
                    let (k, v) = r?;
                    let (_, seg, term, _) = k.value();
                    match decode_segment_row(v.value()) {
                        Some(list) => {
                            for (id, rev, tf, len) in list {
                                n += 1;
                                out.insert((term.to_string(), id, rev), (tf, len));
                            }
                        }
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
                    n += 1;
                    match decode_posting(v.value()) {
                        Some(p) => {
                            out.insert((term.to_string(), id, rev), p);
                        }
                        None => problems
                            .push(format!("{ns}: a malformed posting in segment {seg} for \"{term}\"")),
                    }
                }
            }
            Segments::None => {}
        }
        Ok((out, n))
    }
}

/// Move format 8's segments to format 9's rows (in the upgrading transaction), keeping their
/// numbers, then drop the old table.
pub(crate) fn upgrade_segments(txn: &redb::WriteTransaction) -> Result<(), Error> {
    {
        let old = match txn.open_table(crate::tables::SEGMENTS_V8) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let mut new = txn.open_table(crate::tables::SEGMENTS)?;
        // The old rows come by (namespace, segment, term, id, from_rev): one run per row group.
        let mut group: Option<(String, u64, String)> = None;
        let mut list: Vec<SegmentPosting> = Vec::new();
        let mut write =
            |group: &Option<(String, u64, String)>, list: &mut Vec<SegmentPosting>| -> Result<(), Error> {
                if let Some((ns, seg, term)) = group {
                    for (part, chunk) in list.chunks(SEGMENT_ROW_POSTINGS).enumerate() {
                        let part = u32::try_from(part).unwrap_or(u32::MAX);
                        new.insert(
                            (ns.as_str(), *seg, term.as_str(), part),
                            encode_segment_row(chunk).as_slice(),
                        )?;
                    }
                }
                list.clear();
                Ok(())
            };
        for r in old.iter()? {
            let (k, v) = r?;
            let (ns, seg, term, id, rev) = k.value();
            let same = group.as_ref().is_some_and(|(n, s, t)| n == ns && *s == seg && t == term);
            if !same {
                write(&group, &mut list)?;
                group = Some((ns.to_string(), seg, term.to_string()));
            }
            let (tf, len) = decode_posting(v.value()).ok_or_else(|| Error::Inconsistent {
                namespace: ns.to_string(),
                detail: format!("malformed posting in segment {seg} for the term \"{term}\""),
            })?;
            list.push((id, rev, tf, len));
        }
        write(&group, &mut list)?;
    }
    txn.delete_table(crate::tables::SEGMENTS_V8)?;
    Ok(())
}

/// A lexical hit.
#[derive(Clone, Debug)]
pub struct LexicalHit {
    /// The record as of the search's time.
    pub record: Record,
    /// Its BM25 score.
    pub score: f64,
}

/// A namespace's fresh rows, as read for one search: `(id, from_rev, row)`.
pub(crate) type FreshRows = Vec<(u128, u32, Vec<u8>)>;

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

/// Score the posting lists and the fresh rows of the query's terms in a namespace, resolve
/// each record at `as_of` through `resolve` (which applies the filters), and keep the best `k`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn search<A, B>(
    postings: &impl ReadableTable<PostingKey, &'static [u8]>,
    segments: &Segments<A, B>,
    texts: &impl ReadableTable<TextKey, &'static [u8]>,
    fresh: &FreshRows,
    stats: LexStats,
    ns: &Namespace,
    query: &str,
    k: usize,
    resolve: &dyn Fn(RecordId) -> Result<Option<Record>, Error>,
) -> Result<Vec<LexicalHit>, Error>
where
    A: ReadableTable<SegmentKey, &'static [u8]>,
    B: ReadableTable<LegacySegmentKey, &'static [u8]>,
{
    let mut terms: Vec<String> = tokenize(query).into_iter().filter(|t| !is_stopword(t)).collect();
    terms.sort();
    terms.dedup();
    let n = stats.docs.max(1) as f64;
    let avgdl = if stats.docs == 0 { 1.0 } else { stats.total as f64 / stats.docs as f64 };
    // The fresh rows' terms that the query asks for: per query term, (id, rev, tf, len).
    let mut fresh_hits: Vec<Vec<(u128, u32, u32, u32)>> = vec![Vec::new(); terms.len()];
    for (id, rev, bytes) in fresh {
        let (len, row_terms) = decode_fresh_row(ns.as_str(), *id, *rev, bytes)?;
        for (term, tf) in row_terms {
            if let Ok(i) = terms.binary_search_by(|t| t.as_str().cmp(term)) {
                fresh_hits[i].push((*id, *rev, tf, len));
            }
        }
    }
    let weight = |tf: u32, len: u32| {
        let tf = f64::from(tf);
        tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * f64::from(len) / avgdl))
    };
    // (id, from_rev) -> score
    // Every posting's contribution, then summed per (record, text revision) by sorting: no
    // hashing in the loop.
    let mut contributions: Vec<(u128, u32, f64)> = Vec::new();
    for (term, fresh_hits) in terms.iter().zip(&fresh_hits) {
        let start = contributions.len();
        // The records holding the term, for its document frequency.
        let mut holders: Vec<u128> = Vec::new();
        for r in postings.range(
            (ns.as_str(), term.as_str(), 0u128, 0u32)..=(ns.as_str(), term.as_str(), u128::MAX, u32::MAX),
        )? {
            let (key, v) = r?;
            let (_, _, id, rev) = key.value();
            if let Some((tf, len)) = decode_posting(v.value()) {
                holders.push(id);
                // The term's weight without its IDF (known once the list is read).
                contributions.push((id, rev, weight(tf, len)));
            }
        }
        for (id, rev, tf, len) in segments.postings(ns.as_str(), term)? {
            holders.push(id);
            contributions.push((id, rev, weight(tf, len)));
        }
        for &(id, rev, tf, len) in fresh_hits {
            holders.push(id);
            contributions.push((id, rev, weight(tf, len)));
        }
        holders.sort_unstable();
        holders.dedup();
        let df = holders.len() as f64;
        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        for c in &mut contributions[start..] {
            c.2 *= idf;
        }
    }
    contributions.sort_unstable_by_key(|c| (c.0, c.1));
    let mut scored: Vec<(u128, u32, f64)> = Vec::with_capacity(contributions.len());
    for (id, rev, s) in contributions {
        match scored.last_mut() {
            Some(l) if l.0 == id && l.1 == rev => l.2 += s,
            _ => scored.push((id, rev, s)),
        }
    }
    // Per record: its text revisions' scores (a run of `scored`) and the best of them, an
    // upper bound of the score it can have as of the asked time. Resolve records best-first
    // and stop once k are found and no bound can beat them.
    let mut runs: Vec<(f64, usize, usize)> = Vec::new();
    let mut i = 0;
    while i < scored.len() {
        let mut j = i;
        let mut best = f64::MIN;
        while j < scored.len() && scored[j].0 == scored[i].0 {
            best = best.max(scored[j].2);
            j += 1;
        }
        runs.push((best, i, j));
        i = j;
    }
    runs.sort_by(|a, b| b.0.total_cmp(&a.0).then(scored[a.1].0.cmp(&scored[b.1].0)));
    let mut hits: Vec<LexicalHit> = Vec::new();
    for (bound, from, to) in runs {
        if hits.len() >= k && hits.iter().map(|h| h.score).fold(f64::MAX, f64::min) >= bound {
            break;
        }
        let id = scored[from].0;
        let Some(rec) = resolve(RecordId::from_u128(id))? else { continue };
        // The text serving the visible revision: the latest text at or below it, merged or
        // fresh (`fresh` is in key order).
        let mut cursor = texts.range((ns.as_str(), id, 0u32)..=(ns.as_str(), id, rec.rev))?;
        let merged = cursor.next_back().transpose()?.map(|row| row.0.value().2);
        let at = fresh.partition_point(|(i, r, _)| (*i, *r) <= (id, rec.rev));
        let fresh_rev = at.checked_sub(1).and_then(|i| fresh.get(i)).filter(|f| f.0 == id).map(|f| f.1);
        let Some(serving) = merged.max(fresh_rev) else { continue };
        if let Some(&(_, _, s)) = scored[from..to].iter().find(|(_, r, _)| *r == serving) {
            hits.push(LexicalHit { record: rec, score: s });
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.record.id.cmp(&b.record.id)));
    hits.truncate(k);
    Ok(hits)
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
pub(crate) struct Stored<'a, P, A, B, T, F> {
    pub(crate) postings: &'a P,
    pub(crate) segments: &'a Segments<A, B>,
    pub(crate) texts: &'a T,
    pub(crate) fresh: Option<&'a F>,
    pub(crate) stats: LexStats,
}

/// Recompute a namespace's lexical index from its records' revisions (`by_record`: each
/// record's revisions in order) and compare it with the stored one: every text (a record's
/// first revision and each revision that changed its text) has a fresh row or a merged
/// `texts` row, not both, with its terms in the fresh row or one posting per term in the
/// posting lists or a segment; no row is left that no text accounts for; and the namespace
/// totals agree. For files of format 6 and later (earlier ones kept a `texts` row for fresh
/// texts too).
pub(crate) fn verify<P, A, B, T, F>(
    ns: &str,
    by_record: &BTreeMap<u128, Vec<Record>>,
    stored: &Stored<'_, P, A, B, T, F>,
    problems: &mut Vec<String>,
) -> Result<(), Error>
where
    P: ReadableTable<PostingKey, &'static [u8]>,
    A: ReadableTable<SegmentKey, &'static [u8]>,
    B: ReadableTable<LegacySegmentKey, &'static [u8]>,
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
            let (counts, len) = term_counts(&text);
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
