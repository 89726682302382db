//! Transaction-time spans (a record's belief intervals), checkpoint rows and the edges a change of visibility makes, with their encodings.

use crate::codec;
use crate::error::{CodecError, Error};
use crate::record::Visible;
use crate::tables::names;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::*;

pub(super) const SPANS_VERSION: u8 = 1;
pub(super) const ROW_VERSION: u8 = 1;

/// A set of transaction-time intervals `[start, end)`, sorted, disjoint and not touching.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Spans(pub(super) Vec<(i64, i64)>);

impl Spans {
    /// `[tx, +inf)`.
    pub(crate) fn open_from(tx: i64) -> Spans {
        Spans(vec![(tx, i64::MAX)])
    }

    /// `[from, until)`, empty if `from >= until`.
    pub(crate) fn between(from: i64, until: i64) -> Spans {
        if from < until { Spans(vec![(from, until)]) } else { Spans(Vec::new()) }
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, k: i64) -> bool {
        self.0.iter().any(|&(s, e)| s <= k && k < e)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn union(&self, other: &Spans) -> Spans {
        let mut all: Vec<(i64, i64)> = self.0.iter().chain(other.0.iter()).copied().collect();
        all.sort_unstable();
        let mut out: Vec<(i64, i64)> = Vec::with_capacity(all.len());
        for (s, e) in all {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        Spans(out)
    }

    pub(crate) fn minus(&self, other: &Spans) -> Spans {
        let mut out = Vec::with_capacity(self.0.len());
        for &(s, e) in &self.0 {
            let mut pieces = vec![(s, e)];
            for &(os, oe) in &other.0 {
                let mut next = Vec::with_capacity(pieces.len() + 1);
                for (ps, pe) in pieces {
                    if oe <= ps || os >= pe {
                        next.push((ps, pe));
                        continue;
                    }
                    if ps < os {
                        next.push((ps, os));
                    }
                    if oe < pe {
                        next.push((oe, pe));
                    }
                }
                pieces = next;
            }
            out.extend(pieces);
        }
        Spans(out)
    }
}

/// The stored value of an event or checkpoint entry:
/// `[version = 1][kind: u8][count: u16 LE][count x (start: i64 LE, end: i64 LE)]`.
/// A fixed layout, so readers test membership without decoding into memory.
pub(super) fn encode_spans(kind: u8, spans: &Spans) -> Result<Vec<u8>, Error> {
    let n = u16::try_from(spans.0.len()).map_err(|_| Error::Codec {
        table: names::EVENTS,
        source: CodecError::Encode(format!("{} transaction-time spans do not fit", spans.0.len())),
    })?;
    let mut out = Vec::with_capacity(4 + 16 * spans.0.len());
    out.push(SPANS_VERSION);
    out.push(kind);
    out.extend_from_slice(&n.to_le_bytes());
    for (a, b) in &spans.0 {
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&b.to_le_bytes());
    }
    Ok(out)
}

pub(super) fn spans_error(table: &'static str, reason: &str) -> Error {
    Error::Codec {
        table,
        source: CodecError::Decode { what: "transaction-time spans", reason: reason.to_string() },
    }
}

/// The kind, and the span pairs as raw bytes, of a stored span value.
pub(super) fn span_parts<'a>(table: &'static str, bytes: &'a [u8]) -> Result<(u8, &'a [u8]), Error> {
    match bytes {
        [SPANS_VERSION, kind, n0, n1, rest @ ..] => {
            let n = usize::from(u16::from_le_bytes([*n0, *n1]));
            if rest.len() != n * 16 {
                return Err(spans_error(table, "length does not match the count"));
            }
            Ok((*kind, rest))
        }
        [v, ..] if *v != SPANS_VERSION => Err(Error::Codec {
            table,
            source: CodecError::Version {
                what: "transaction-time spans",
                found: *v,
                expected: SPANS_VERSION,
            },
        }),
        _ => Err(spans_error(table, "truncated")),
    }
}

pub(super) fn pairs(raw: &[u8]) -> impl Iterator<Item = (i64, i64)> + '_ {
    raw.chunks_exact(16).map(|c| {
        let mut a = [0u8; 8];
        let mut b = [0u8; 8];
        a.copy_from_slice(c.get(..8).unwrap_or(&[0; 8]));
        b.copy_from_slice(c.get(8..).unwrap_or(&[0; 8]));
        (i64::from_le_bytes(a), i64::from_le_bytes(b))
    })
}

/// Decode a stored span value.
pub(crate) fn decode_spans(table: &'static str, bytes: &[u8]) -> Result<(u8, Spans), Error> {
    let (kind, raw) = span_parts(table, bytes)?;
    Ok((kind, Spans(pairs(raw).collect())))
}

/// The kind of a stored span value and whether its spans contain `k`, without allocating.
pub(crate) fn spans_contain(table: &'static str, bytes: &[u8], k: i64) -> Result<(u8, bool), Error> {
    let (kind, raw) = span_parts(table, bytes)?;
    Ok((kind, pairs(raw).any(|(a, b)| a <= k && k < b)))
}

/// A checkpoint row: the counters of the gap after the checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CheckpointRow {
    /// The transaction time at which the checkpoint was made: its entries are exact for every
    /// transaction time from then on (`i64::MIN` for the first, empty checkpoint).
    pub(crate) created_tx: i64,
    /// Events asserted in the gap after this checkpoint (an estimate: assertions, not keys).
    pub(crate) events: u64,
    /// Entries stored at this checkpoint.
    pub(crate) entries: u64,
    /// Try to split the gap once `events` reaches this.
    pub(crate) recheck_events: u64,
    /// ... or once a commit happens at or after this transaction time (enough of the gap's
    /// future events have become past to place a checkpoint).
    pub(crate) recheck_tx: i64,
}

pub(super) fn encode_row(row: &CheckpointRow) -> Result<Vec<u8>, Error> {
    codec::encode_versioned(ROW_VERSION, row)
        .map_err(|e| Error::Codec { table: names::CHECKPOINTS, source: e })
}

pub(crate) fn decode_row(bytes: &[u8]) -> Result<CheckpointRow, Error> {
    codec::decode_versioned("checkpoint row", ROW_VERSION, bytes)
        .map_err(|e: CodecError| Error::Codec { table: names::CHECKPOINTS, source: e })
}

pub(super) type EventKey<'a> = (&'a str, i64, u128, u8);
pub(super) type CheckpointKey<'a> = (&'a str, i64);
pub(super) type EntryKey<'a> = (&'a str, i64, u128);

pub(super) fn edges(v: Option<Visible>) -> SmallVec<[(i64, u8); 2]> {
    let mut out = SmallVec::new();
    if let Some(v) = v {
        out.push((v.from.as_micros(), EDGE_START));
        if !v.is_open() {
            out.push((v.until.as_micros(), EDGE_END));
        }
    }
    out
}

pub(super) fn contains(v: Option<Visible>, c: i64) -> bool {
    v.is_some_and(|v| v.contains(Timestamp::from_micros(c)))
}

/// The valid-time segments `[a, b)` where membership in `old` and `new` differs.
pub(super) fn symmetric_difference(old: Option<Visible>, new: Option<Visible>) -> SmallVec<[(i64, i64); 2]> {
    let mut points: SmallVec<[i64; 4]> = SmallVec::new();
    for v in [old, new].into_iter().flatten() {
        points.push(v.from.as_micros());
        points.push(v.until.as_micros());
    }
    points.sort_unstable();
    points.dedup();
    let mut out: SmallVec<[(i64, i64); 2]> = SmallVec::new();
    for w in points.windows(2) {
        if let [a, b] = *w
            && contains(old, a) != contains(new, a)
        {
            match out.last_mut() {
                Some(last) if last.1 == a => last.1 = b,
                _ => out.push((a, b)),
            }
        }
    }
    out
}
