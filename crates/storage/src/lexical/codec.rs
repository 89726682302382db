//! The lexical index's row encodings: posting-list rows, format 9's segment rows, fresh rows
//! and the namespace totals, and the errors naming a malformed one.

use super::layout::*;
use crate::error::Error;
use crate::id::RecordId;

/// Append the CRC-32 (IEEE) of `out`'s bytes: a sealed value (format 17's segment blocks and
/// text-number parts, format 18's small rows), whose damage is found when it is read.
pub(super) fn seal(out: &mut Vec<u8>) {
    let crc = crc32fast::hash(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Whether a sealed value's last four bytes are the CRC-32 of the bytes before them.
pub(super) fn seal_holds(b: &[u8]) -> bool {
    b.len() >= 4 && {
        let (body, crc) = b.split_at(b.len() - 4);
        crc32fast::hash(body).to_le_bytes() == crc
    }
}

/// A posting-list row or a text row: `[2][tf u32][doc length u32]`, sealed (format 18).
pub(crate) fn encode_posting(tf: u32, len: u32) -> [u8; ROW_BYTES] {
    let mut out = [0u8; ROW_BYTES];
    out[0] = POSTING_VERSION;
    out[1..5].copy_from_slice(&tf.to_le_bytes());
    out[5..9].copy_from_slice(&len.to_le_bytes());
    let crc = crc32fast::hash(&out[..9]);
    out[9..].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Bytes of a sealed posting-list or text row (format 18).
pub(crate) const ROW_BYTES: usize = 13;

/// `(tf, doc length)` of a posting-list or text row, sealed or of the version before (`None`
/// if malformed or failing its checksum).
pub(super) fn decode_posting(b: &[u8]) -> Option<(u32, u32)> {
    let ok = match (b.first(), b.len()) {
        (Some(&POSTING_VERSION), ROW_BYTES) => seal_holds(b),
        (Some(&POSTING_VERSION_1), 9) => true,
        _ => false,
    };
    if !ok {
        return None;
    }
    let tf = u32::from_le_bytes(b.get(1..5)?.try_into().ok()?);
    let len = u32::from_le_bytes(b.get(5..9)?.try_into().ok()?);
    Some((tf, len))
}

/// A row of version 1 (posting or text row, fresh row, namespace totals) sealed as its
/// current version (format 18's upgrade): `None` when it is sealed already; `Err(())` when it
/// is neither sealed nor a well-formed row of the versions before.
pub(crate) fn reseal_row(table: RowTable, b: &[u8]) -> Result<Option<Vec<u8>>, ()> {
    match table {
        RowTable::Posting => match decode_posting(b) {
            Some(_) if b.first() == Some(&POSTING_VERSION) => Ok(None),
            Some((tf, len)) => Ok(Some(encode_posting(tf, len).to_vec())),
            None => Err(()),
        },
        RowTable::Fresh => match decode_fresh(b) {
            Some(_) if b.first() == Some(&FRESH_VERSION) => Ok(None),
            Some((len, terms)) => Ok(Some(encode_fresh(terms.into_iter(), len))),
            None => Err(()),
        },
        RowTable::Stats => match decode_stats(b) {
            Some(_) if b.first() == Some(&STATS_VERSION) => Ok(None),
            Some(s) => Ok(Some(encode_stats(s).to_vec())),
            None => Err(()),
        },
    }
}

/// The tables of small lexical rows: what [`reseal_row`] reads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RowTable {
    /// `mnemon.postings` and `mnemon.texts`.
    Posting,
    /// `mnemon.fresh`.
    Fresh,
    /// `mnemon.lexstats`.
    Stats,
}

/// A posting-list row that is malformed or fails its checksum, named.
pub(super) fn malformed_posting(ns: &str, term: &str, id: u128, rev: u32) -> Error {
    Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!(
            "malformed posting of \"{term}\" for {} revision {rev}: the file is damaged",
            RecordId::from_u128(id)
        ),
    }
}

/// The postings of a format-9 segment row (`None` if malformed).
pub(super) fn decode_segment_row(b: &[u8]) -> Option<Vec<SegmentPosting>> {
    let body = b.strip_prefix(&[SEGMENT_ROW_VERSION])?;
    if body.len() % SEGMENT_POSTING_BYTES != 0 {
        return None;
    }
    body.chunks_exact(SEGMENT_POSTING_BYTES).map(super::posting::decode_keyed).collect()
}

/// [`decode_segment_row`], with the row named in the error.
pub(super) fn decode_segment_row_at(
    ns: &str,
    seg: u64,
    term: &str,
    b: &[u8],
) -> Result<Vec<SegmentPosting>, Error> {
    decode_segment_row(b).ok_or_else(|| malformed_segment(ns, seg, term))
}

pub(super) fn malformed_segment(ns: &str, seg: u64, term: &str) -> Error {
    Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!("malformed block or row of segment {} at the term \"{term}\"", segment_name(seg)),
    }
}

/// A segment as people read it: `level/sequence`.
pub(super) fn segment_name(seg: u64) -> String {
    format!("{}/{}", seg >> LEVEL_SHIFT, seg & ((1u64 << LEVEL_SHIFT) - 1))
}

/// The terms of a fresh text and its length, sealed (format 18).
pub(super) fn encode_fresh<'t>(
    counts: impl ExactSizeIterator<Item = (&'t str, u32)> + Clone,
    len: u32,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(13 + counts.clone().map(|(t, _)| 6 + t.len()).sum::<usize>());
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
    seal(&mut out);
    out
}

/// A decoded fresh row: the text's length and its `(term, tf)` in term order.
pub(super) type FreshText<'b> = (u32, Vec<(&'b str, u32)>);

/// A fresh row being read: its text's length, then its terms one by one, as `(term bytes,
/// tf)` in term order (an item `None` where the row is malformed). The one reader of the
/// layout, for decoding a row ([`decode_fresh`]) and for scanning it in place ([`scan_fresh`](super::search::scan_fresh)).
pub(super) struct FreshTerms<'b> {
    pub(super) len: u32,
    left: u32,
    rest: &'b [u8],
}

impl<'b> FreshTerms<'b> {
    /// The row's header (`None` if it is not a fresh row, or a sealed one fails its
    /// checksum). A row of the version before (formats 3 to 17) is read unsealed.
    pub(super) fn new(b: &'b [u8]) -> Option<Self> {
        let b = match b.first() {
            Some(&FRESH_VERSION) if seal_holds(b) => b.get(..b.len() - 4)?,
            Some(&FRESH_VERSION_1) => b,
            _ => return None,
        };
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
pub(super) fn decode_fresh(b: &[u8]) -> Option<FreshText<'_>> {
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
pub(super) fn decode_fresh_row<'b>(
    ns: &str,
    id: u128,
    rev: u32,
    bytes: &'b [u8],
) -> Result<FreshText<'b>, Error> {
    decode_fresh(bytes).ok_or_else(|| malformed_fresh(ns, id, rev))
}

pub(super) fn malformed_fresh(ns: &str, id: u128, rev: u32) -> Error {
    Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!("malformed fresh text row of {} revision {rev}", RecordId::from_u128(id)),
    }
}

/// Namespace totals: texts indexed, their summed length, and how many are fresh, sealed
/// (format 18).
pub(crate) fn encode_stats(s: LexStats) -> [u8; 29] {
    let mut out = [0u8; 29];
    out[0] = STATS_VERSION;
    out[1..9].copy_from_slice(&s.docs.to_le_bytes());
    out[9..17].copy_from_slice(&s.total.to_le_bytes());
    out[17..25].copy_from_slice(&s.fresh.to_le_bytes());
    let crc = crc32fast::hash(&out[..25]);
    out[25..].copy_from_slice(&crc.to_le_bytes());
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

/// A namespace's totals, sealed or of a version before (`None` if malformed or failing its
/// checksum).
pub(crate) fn decode_stats(b: &[u8]) -> Option<LexStats> {
    let u64_at = |i: usize| b.get(i..i + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes);
    match (b.first(), b.len()) {
        (Some(&STATS_VERSION), 29) if seal_holds(b) => {
            Some(LexStats { docs: u64_at(1)?, total: u64_at(9)?, fresh: u64_at(17)? })
        }
        (Some(&STATS_VERSION_2), 25) => {
            Some(LexStats { docs: u64_at(1)?, total: u64_at(9)?, fresh: u64_at(17)? })
        }
        // Format 2 had no fresh texts.
        (Some(&STATS_VERSION_1), 17) => Some(LexStats { docs: u64_at(1)?, total: u64_at(9)?, fresh: 0 }),
        _ => None,
    }
}

/// A namespace's stored totals (none stored: zeros); a row that does not decode is damage,
/// named in the error.
pub(crate) fn stats_row(ns: &str, row: Option<&[u8]>) -> Result<LexStats, Error> {
    match row {
        None => Ok(LexStats::default()),
        Some(b) => decode_stats(b).ok_or_else(|| Error::Inconsistent {
            namespace: ns.to_string(),
            detail: "the lexical index's totals (mnemon.lexstats) are malformed or fail their checksum: \
                     the file is damaged"
                .into(),
        }),
    }
}
