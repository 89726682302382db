//! The write side of the lexical index: fresh rows, merges into tiered segments, forgetting.

use std::collections::BTreeMap;

use redb::{ReadableTable, Table};

use super::block::*;
use super::codec::*;
use super::layout::*;
use super::posting::Posting;
use super::segments::*;
use crate::error::Error;
use crate::record::Record;

/// A new text's fresh row, encoded on its caller's thread before the job is queued (see
/// [`prepare`]), so that the committer, whom every caller of a group commit waits for, does
/// not tokenize it. Used only if the committed record has this id and exactly this text.
#[derive(Debug)]
pub(crate) struct PreparedText {
    pub(super) id: u128,
    text: String,
    pub(super) row: Vec<u8>,
    /// The text's length in tokens.
    pub(super) len: u32,
}

/// The fresh rows of a job's new texts (`(id, text)`, see [`crate::write::new_texts`]), for
/// at most `limit` of them (a commit writes only its first [`crate::tables::FEW_ROWS`] fresh
/// rows as its jobs are applied; a bulk commit's further texts are placed by
/// [`LexicalWriter::flush`] instead). A text that ends differently (a revision's text is only
/// known in the commit) is simply not used.
pub(crate) fn prepare(texts: impl Iterator<Item = (u128, String)>, limit: usize) -> Vec<PreparedText> {
    texts
        .take(limit)
        .map(|(id, text)| {
            let (row, len) = fresh_row(&text);
            PreparedText { id, text, row, len }
        })
        .collect()
}

/// A text's fresh row and its length in tokens.
pub(super) fn fresh_row(text: &str) -> (Vec<u8>, u32) {
    let (terms, len) = term_list(text);
    (encode_fresh(terms.iter().map(|(t, tf)| (t.as_ref(), *tf)), len), len)
}

/// The write side, used by the commit that writes the revision.
pub(crate) struct LexicalWriter<'txn> {
    pub(crate) postings: crate::tables::LazyTable<'txn, PostingKey, &'static [u8]>,
    pub(crate) segments: crate::tables::LazyTable<'txn, SegmentKey, &'static [u8]>,
    /// The segments' text numbers, written with them.
    pub(crate) numbers: crate::tables::LazyTable<'txn, super::numbers::NumberKey, &'static [u8]>,
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
    pub(super) written: usize,
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
            numbers: crate::tables::LazyTable::new(txn, crate::tables::SEGMENT_TEXTS),
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
            let row = match self.stats.get(ns.as_str())? {
                Some(v) => Some(stats_row(&ns, Some(v.value()))?),
                None => None,
            };
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
        let mut texts: Vec<(u128, u32, [u8; ROW_BYTES])> = Vec::with_capacity(rows.len() + new.len());
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
        let joined: Vec<u64> = segments.iter().copied().filter(|s| joins(*s)).collect();
        // The new segment's texts, numbered in key order: this merge's and every joined
        // segment's (an overwritten entry, see `numbers.rs`, repeats a key or is zeros).
        let mut olds = Vec::with_capacity(joined.len());
        for &seg in &joined {
            olds.push(super::numbers::load(self.numbers.get()?, ns, seg)?);
        }
        let mut union: Vec<(u128, u32)> = texts.iter().map(|t| (t.0, t.1)).collect();
        union.extend(olds.iter().flatten().filter(|k| **k != (0, 0)));
        union.sort_unstable();
        union.dedup();
        // Stable: of two equal keys (which a consistent file never has) the first is kept.
        postings.sort_by(|a, b| (a.0, a.1.0, a.1.1).cmp(&(b.0, b.1.0, b.1.1)));
        let mut sources = vec![Source::Memory(&postings)];
        for (&seg, old) in joined.iter().zip(&olds) {
            let renumber = old
                .iter()
                .map(|k| union.binary_search(k).ok().and_then(|n| u32::try_from(n).ok()).unwrap_or(u32::MAX))
                .collect();
            sources.push(Source::segment(seg, renumber));
        }
        drop(olds);
        // The next sequence number: after every segment's, at any level.
        let seq = segments.iter().map(|s| s & ((1u64 << LEVEL_SHIFT) - 1)).max().map_or(0, |m| m + 1);
        let seg = (level << LEVEL_SHIFT) | seq;
        let mut writer = BlockWriter::new(ns, seg);
        // Term by term, in order: its postings from every source, in number order.
        let mut list: Vec<Posting> = Vec::new();
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
                    source.take(&term, &union, &mut list);
                    source.fill(self.segments.get()?, ns)?;
                }
            }
            // Checked when its block was read, or a term of this commit's texts: once per term.
            let term = std::str::from_utf8(&term).map_err(|_| Error::Inconsistent {
                namespace: ns.to_string(),
                detail: "a term of a segment merge is not UTF-8".to_string(),
            })?;
            list.sort_by_key(|p| p.0);
            list.dedup_by_key(|p| p.0);
            if all {
                let keyed: Vec<((u128, u32), [u8; ROW_BYTES])> = list
                    .iter()
                    .filter_map(|p| Some((*union.get(p.0 as usize)?, encode_posting(p.1, p.2))))
                    .collect();
                crate::tables::insert_sorted(
                    self.postings.get_mut()?,
                    keyed.iter().map(|(k, value)| ((ns, term, k.0, k.1), value.as_slice())),
                )?;
            } else {
                writer.push(self.segments.get_mut()?, term, &list)?;
            }
        }
        writer.flush(self.segments.get_mut()?)?;
        if writer.wrote {
            super::numbers::write(self.numbers.get_mut()?, ns, seg, &union)?;
        }
        // The joined segments go (a level's segments, or a namespace's, are one range of keys).
        if all && !segments.is_empty() {
            self.segments.get_mut()?.retain_in(segment_bounds(ns), |_, _| false)?;
            self.numbers.get_mut()?.retain_in(super::numbers::part_bounds(ns, 0, u64::MAX), |_, _| false)?;
        }
        for l in (first..level).filter(|_| !all) {
            self.segments.get_mut()?.retain_in(level_bounds(ns, l), |_, _| false)?;
            let (from, to) = (l << LEVEL_SHIFT, (l + 1) << LEVEL_SHIFT);
            self.numbers.get_mut()?.retain_in(super::numbers::part_bounds(ns, from, to), |_, _| false)?;
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
                    }
                    let terms: Vec<&str> = counts.keys().map(String::as_str).collect();
                    for seg in &segments {
                        self.forget_in_segment(ns, *seg, &terms, id, *rev)?;
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
    /// Remove the text `(id, rev)` from a segment, if it is there: its postings of `terms`
    /// (the terms of its text), then its entry in the segment's text numbers (see
    /// `numbers.rs`).
    pub(super) fn forget_in_segment(
        &mut self,
        ns: &str,
        seg: u64,
        terms: &[&str],
        id: u128,
        rev: u32,
    ) -> Result<(), Error> {
        let Some(n) = super::numbers::Numbers::new(self.numbers.get()?, ns, seg).find((id, rev))? else {
            return Ok(());
        };
        for term in terms {
            self.forget_posting(ns, seg, term, n)?;
        }
        super::numbers::forget(self.numbers.get_mut()?, ns, seg, n)
    }

    /// Remove the posting of text `n` from the blocks of a term in one segment, if it is
    /// there. A block keeps its key when its first entry goes (the key is then below its
    /// first term, which [`term_blocks`] allows); a block left empty is removed.
    pub(super) fn forget_posting(&mut self, ns: &str, seg: u64, term: &str, n: u32) -> Result<(), Error> {
        let mut found: Option<((String, u32), Vec<u8>)> = None;
        term_blocks(self.segments.get()?, ns, seg, term, |first, part, guard| {
            let bytes = guard.value();
            let block = Block::parse(bytes).ok_or_else(|| malformed_segment(ns, seg, first))?;
            if let Some(i) = block.find(term).ok_or_else(|| malformed_segment(ns, seg, first))?
                && block
                    .postings(i)
                    .ok_or_else(|| malformed_segment(ns, seg, first))?
                    .iter()
                    .any(|p| p.0 == n)
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
                list.retain(|p| p.0 != n);
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

/// A namespace's fresh rows, as a merge reads them: `(id, from_rev, row)`.
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
