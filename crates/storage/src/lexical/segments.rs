//! Where merged texts' postings wait for the posting lists: a namespace's segments, by level,
//! and how a search reads a term's postings in them.

use std::collections::BTreeMap;

use redb::ReadableTable;

use super::block::*;
use super::codec::*;
use super::layout::*;
use super::numbers::{NumberKey, Numbers};
use super::posting::Chunk;
use crate::error::Error;

/// A key bounding a namespace's segment blocks.
pub(super) type SegmentBound<'a> = (&'a str, u64, &'static str, u32);

/// Every key of a namespace's segments (segment `u64::MAX` is never used).
pub(super) fn segment_bounds(ns: &str) -> std::ops::Range<SegmentBound<'_>> {
    (ns, 0u64, "", 0u32)..(ns, u64::MAX, "", 0u32)
}

/// Every key of a namespace's segments of one level.
pub(super) fn level_bounds(ns: &str, level: u64) -> std::ops::Range<SegmentBound<'_>> {
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
pub(super) fn term_blocks<'t>(
    segments: &'t impl ReadableTable<SegmentKey, &'static [u8]>,
    ns: &str,
    seg: u64,
    term: &str,
    mut f: impl FnMut(&str, u32, redb::AccessGuard<'t, &'static [u8]>) -> Result<bool, Error>,
) -> Result<(), Error> {
    // One range read backwards (one descent of the tree where two ranges took two): the
    // blocks keyed by `term`, last first, down to part 0, or to the block before them.
    let mut blocks = Vec::new();
    for r in segments.range((ns, seg, "", 0u32)..=(ns, seg, term, u32::MAX))?.rev() {
        let (k, v) = r?;
        let (_, _, first, part) = k.value();
        let last = first != term || part == 0;
        blocks.push((k, v));
        if last {
            break;
        }
    }
    for (k, v) in blocks.into_iter().rev() {
        let (_, _, first, part) = k.value();
        if !f(first, part, v)? {
            break;
        }
    }
    Ok(())
}

/// Every key of a namespace's segments in format 8.
pub(super) fn legacy_segment_bounds(ns: &str) -> std::ops::Range<(&str, u64, &'static str, u128, u32)> {
    (ns, 0u64, "", 0u128, 0u32)..(ns, u64::MAX, "", 0u128, 0u32)
}

/// The segments of the first and last keys of a namespace's range of format-8 segment keys.
/// Format 8 numbered its segments without gaps: each merge added the next, and they all went
/// together.
pub(super) fn first_and_last(
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
pub(super) type SegmentTable<K> = redb::ReadOnlyTable<K, &'static [u8]>;

/// Where a snapshot finds the postings of merged texts not yet in the posting lists: format
/// 10's blocks (numbered from format 15, with each segment's text numbers), or (in a file of
/// an older format opened read-only) format 9's rows or format 8's one row per posting.
pub(crate) enum Segments {
    /// Format 10: blocks of many terms, segments by level; from format 15 the segments' text
    /// numbers (`None` in an older file opened read-only, whose blocks are keyed).
    Blocks(SegmentTable<SegmentKey>, Option<SegmentTable<NumberKey>>),
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
            Segments::Blocks(t, _) | Segments::Rows(t) => segment_list(t, ns),
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
            Segments::Blocks(t, numbers) => {
                let mut numbers = numbers.as_ref().map(|n| Numbers::new(n, ns, seg));
                term_blocks(t, ns, seg, term, |first, _, guard| {
                    let malformed = || malformed_segment(ns, seg, first);
                    let block = Block::parse(guard.value()).ok_or_else(malformed)?;
                    let Some(i) = block.find(term).ok_or_else(malformed)? else { return Ok(true) };
                    if block.numbered() {
                        let numbers = numbers.as_mut().ok_or_else(malformed)?;
                        for (n, tf, len) in block.postings(i).ok_or_else(malformed)? {
                            let (id, rev) = numbers.key(n)?.ok_or_else(malformed)?;
                            f((id, rev, tf, len));
                        }
                    } else {
                        block.keyed(i).ok_or_else(malformed)?.into_iter().for_each(&mut f);
                    }
                    Ok(true)
                })?
            }
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
                    let (tf, len) =
                        decode_posting(v.value()).ok_or_else(|| malformed_segment(ns, seg, term))?;
                    f((id, rev, tf, len));
                }
            }
            Segments::None => {}
        }
        Ok(())
    }

    /// The text numbers of segment `seg` (`None` in a file whose segments are keyed).
    pub(super) fn numbers<'s>(
        &'s self,
        ns: &'s str,
        seg: u64,
    ) -> Option<Numbers<'s, SegmentTable<NumberKey>>> {
        match self {
            Segments::Blocks(_, Some(n)) => Some(Numbers::new(n, ns, seg)),
            _ => None,
        }
    }

    /// What a search holds of `term`'s postings in segment `seg`: its numbered blocks, read
    /// in place (see [`Held::chunks`]), or (older formats) its postings decoded with their keys.
    pub(super) fn hold(&self, ns: &str, seg: u64, term: &str) -> Result<Held<'_>, Error> {
        match self {
            Segments::Blocks(t, Some(_)) => {
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
            Segments::Blocks(t, _) => {
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
            Segments::Blocks(t, numbers) => {
                // The text numbers of the segment at hand, and the numbers its postings use.
                let mut texts: Option<(u64, Vec<super::posting::Key>, Vec<u32>)> = None;
                let check = |texts: Option<(u64, Vec<super::posting::Key>, Vec<u32>)>,
                             problems: &mut Vec<String>| {
                    if let Some((seg, keys, used)) = texts
                        && let Some(p) = super::numbers::check(&keys, used.into_iter())
                    {
                        problems.push(format!("{ns}: segment {}: {p}", segment_name(seg)));
                    }
                };
                for r in t.range(segment_bounds(ns))? {
                    let (k, v) = r?;
                    let (_, seg, first, _) = k.value();
                    let name = segment_name(seg);
                    let Some(block) = Block::parse(v.value()) else {
                        problems.push(format!("{ns}: a malformed block of segment {name} at \"{first}\""));
                        continue;
                    };
                    let entries: Option<Vec<(&str, Vec<SegmentPosting>)>> = if block.numbered() {
                        if texts.as_ref().is_none_or(|t| t.0 != seg) {
                            check(texts.take(), problems);
                            let keys = match numbers
                                .as_ref()
                                .map(|n| super::numbers::load(n, ns, seg))
                                .transpose()
                            {
                                Ok(keys) => keys.unwrap_or_default(),
                                // A part that fails its checksum or does not decode: reported.
                                Err(Error::Inconsistent { detail, .. }) => {
                                    problems.push(format!("{ns}: {detail}"));
                                    Vec::new()
                                }
                                Err(e) => return Err(e),
                            };
                            texts = Some((seg, keys, Vec::new()));
                        }
                        let (_, keys, used) =
                            texts.as_mut().ok_or_else(|| malformed_segment(ns, seg, first))?;
                        block.entries().map(|entries| {
                            entries
                                .into_iter()
                                .map(|(term, list)| {
                                    let keyed = list
                                        .into_iter()
                                        .map(|(n, tf, len)| {
                                            used.push(n);
                                            let (id, rev) = keys.get(n as usize).copied().unwrap_or((0, 0));
                                            (id, rev, tf, len)
                                        })
                                        .collect();
                                    (term, keyed)
                                })
                                .collect()
                        })
                    } else {
                        block.keyed_entries()
                    };
                    match entries {
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
                check(texts.take(), problems);
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

/// A term's postings in one segment, as a search holds them (see [`Segments::hold`]).
pub(super) enum Held<'t> {
    /// Numbered blocks (format 15).
    Blocks { seg: u64, blocks: Vec<redb::AccessGuard<'t, &'static [u8]>> },
    /// Keyed postings (older formats).
    Decoded(Vec<SegmentPosting>),
}

impl Held<'_> {
    /// The numbered postings of `term`, in order: in each block, its entry's postings as
    /// stored (`None` if keyed).
    pub(super) fn chunks(&self, ns: &str, term: &str) -> Result<Option<Vec<Chunk<'_>>>, Error> {
        match self {
            Held::Blocks { seg, blocks } => {
                let mut out = Vec::with_capacity(blocks.len());
                for guard in blocks {
                    let malformed = || malformed_segment(ns, *seg, term);
                    let block = Block::parse(guard.value()).ok_or_else(malformed)?;
                    if let Some(i) = block.find(term).ok_or_else(malformed)? {
                        out.push(block.chunk(i).ok_or_else(malformed)?);
                    }
                }
                Ok(Some(out))
            }
            Held::Decoded(_) => Ok(None),
        }
    }
}
