//! The current row of a record (in `mnemon.live` and `mnemon.ended`): its visible interval before the revision it holds, sealed with the record's id and namespace.

use crate::codec::CodecError;
use crate::id::{Namespace, RecordId};
use crate::time::Timestamp;

use super::*;

/// The version byte of the current-table row layout this build writes: sealed (format 13).
pub(crate) const CURRENT_ROW_VERSION: u8 = 2;
/// The version byte of current rows written before format 13: no checksum.
pub(crate) const CURRENT_ROW_UNSEALED: u8 = 1;

/// Bytes before the stored revision in a `CURRENT` row.
pub(super) const CURRENT_ROW_HEADER: usize = 1 + 4 + 8 + 8 + 8;

/// A `CURRENT` row: `[version = 2][rev: u32 LE][recorded_at: i64 LE][visible_from: i64 LE]
/// [visible_until: i64 LE][the revision, version 2 without its seal][CRC-32 of every byte
/// before it: u32 LE]` (version 1: the same with a version-1 revision and no checksum): the
/// fast path needs no second lookup for the parts that live in the revisions key, and can skip
/// rows not visible at the queried time without decoding them. `revision` is an encoded
/// revision of either version.
pub(crate) fn current_row(r: &Record, vis: Visible, revision: &[u8]) -> Vec<u8> {
    let payload = match revision.first() {
        Some(&REVISION_CODEC_VERSION) => revision.get(1..revision.len().saturating_sub(SEAL_BYTES)),
        _ => revision.get(1..),
    };
    let payload = payload.unwrap_or_default();
    let mut out = Vec::with_capacity(CURRENT_ROW_HEADER + 1 + payload.len() + SEAL_BYTES);
    out.push(CURRENT_ROW_VERSION);
    out.extend_from_slice(&r.rev.to_le_bytes());
    out.extend_from_slice(&r.recorded_at.as_micros().to_le_bytes());
    out.extend_from_slice(&vis.from.as_micros().to_le_bytes());
    out.extend_from_slice(&vis.until.as_micros().to_le_bytes());
    out.push(REVISION_CODEC_VERSION);
    out.extend_from_slice(payload);
    seal(&mut out, r.namespace.as_str(), &row_key(r.id));
    out
}

/// A version-1 revision stored under `ns` and `key` ([`revision_key`]) sealed as version 2
/// (the upgrade to format 13); `None` if it is not version 1.
pub(crate) fn sealed_revision(bytes: &[u8], ns: &str, key: &[u8]) -> Option<Vec<u8>> {
    let mut out = bytes.to_vec();
    let version = out.first_mut().filter(|v| **v == REVISION_UNSEALED)?;
    *version = REVISION_CODEC_VERSION;
    seal(&mut out, ns, key);
    Some(out)
}

/// A version-1 `CURRENT` row (holding a version-1 revision) of record `id` in `ns` sealed as
/// version 2, the row [`current_row`] makes of the same record; `None` if it is not version 1.
pub(crate) fn sealed_current_row(bytes: &[u8], ns: &str, id: RecordId) -> Option<Vec<u8>> {
    let mut out = bytes.to_vec();
    let version = out.first_mut().filter(|v| **v == CURRENT_ROW_UNSEALED)?;
    *version = CURRENT_ROW_VERSION;
    if let Some(v) = out.get_mut(CURRENT_ROW_HEADER).filter(|v| **v == REVISION_UNSEALED) {
        *v = REVISION_CODEC_VERSION;
    }
    seal(&mut out, ns, &row_key(id));
    Some(out)
}

/// Encode a `CURRENT` row for a visible record.
pub(crate) fn encode_current_row(r: &Record) -> Result<Option<Vec<u8>>, CodecError> {
    match r.visible() {
        Some(vis) => Ok(Some(current_row(r, vis, &encode_revision(r)?))),
        None => Ok(None),
    }
}

pub(super) fn le_i64(bytes: &[u8], at: usize) -> Option<i64> {
    bytes.get(at..at + 8).and_then(|b| b.try_into().ok()).map(i64::from_le_bytes)
}

/// A `CURRENT` row's bytes without its seal (its checksum checked against the record it is
/// stored under), of either version.
pub(super) fn open_current_row<'a>(bytes: &'a [u8], ns: &str, id: RecordId) -> Result<&'a [u8], CodecError> {
    match bytes.first() {
        Some(&CURRENT_ROW_VERSION) => unseal("current row", bytes, ns, &row_key(id)),
        Some(&CURRENT_ROW_UNSEALED) => Ok(bytes),
        found => Err(CodecError::Version {
            what: "current row",
            found: found.copied().unwrap_or(0),
            expected: CURRENT_ROW_VERSION,
        }),
    }
}

/// The visible interval stored in the header of record `id`'s `CURRENT` row in `ns`, and the
/// code of the kind its revision holds (its checksum checked: a caller that knows the kind
/// from the row's key compares them).
pub(crate) fn current_row_visible(bytes: &[u8], ns: &str, id: RecordId) -> Result<(Visible, u8), CodecError> {
    let row = open_current_row(bytes, ns, id)?;
    let kind = row.get(CURRENT_ROW_HEADER + 1).copied();
    let kind =
        kind.ok_or_else(|| CodecError::Decode { what: "current row", reason: "no revision".to_string() })?;
    Ok((visible_of(row)?, kind))
}

/// The error of a row stored under one kind that holds a record of another (a changed key).
pub(crate) fn kind_mismatch(key: u8, held: u8) -> CodecError {
    CodecError::Decode { what: "current row", reason: format!("stored under kind {key}, holds kind {held}") }
}

/// The visible interval in the header of an opened `CURRENT` row.
pub(super) fn visible_of(bytes: &[u8]) -> Result<Visible, CodecError> {
    let bad = || CodecError::Decode { what: "current row", reason: "truncated header".to_string() };
    let from = le_i64(bytes, 13).ok_or_else(bad)?;
    let until = le_i64(bytes, 21).ok_or_else(bad)?;
    Ok(Visible { from: Timestamp::from_micros(from), until: Timestamp::from_micros(until) })
}

/// Decode a `CURRENT` row.
#[cfg(test)]
pub(crate) fn decode_current_row(
    namespace: &Namespace,
    id: RecordId,
    bytes: &[u8],
) -> Result<Record, CodecError> {
    decode_current_row_at(namespace, id, bytes, None, |r| r)?
        .ok_or_else(|| CodecError::Decode { what: "current row", reason: "not decoded".to_string() })
}

/// Decode a `CURRENT` row and hand it to `finish` (see [`decode_revision_with`]), or return
/// `None` without decoding when the row is not visible at `at` (checked from the header).
#[inline(always)]
pub(crate) fn decode_current_row_at<T>(
    namespace: &Namespace,
    id: RecordId,
    bytes: &[u8],
    at: Option<Timestamp>,
    finish: impl FnOnce(Record) -> T,
) -> Result<Option<T>, CodecError> {
    let bad = || CodecError::Decode { what: "current row", reason: "truncated header".to_string() };
    let bytes = open_current_row(bytes, namespace.as_str(), id)?;
    let visible = visible_of(bytes)?;
    if at.is_some_and(|t| !visible.contains(t)) {
        return Ok(None);
    }
    let rev: [u8; 4] = bytes.get(1..5).and_then(|b| b.try_into().ok()).ok_or_else(bad)?;
    let rec = le_i64(bytes, 5).ok_or_else(bad)?;
    let body = bytes.get(CURRENT_ROW_HEADER..).ok_or_else(bad)?;
    parse_revision(namespace, id, u32::from_le_bytes(rev), Timestamp::from_micros(rec), body, finish)
        .map(Some)
}

/// [`decode_current_row_at`] with no time, of a row whose checksum the caller has checked on
/// these same bytes ([`current_row_visible`], as a listing does to pick its rows): one checksum
/// per row read, not two.
#[inline(always)]
pub(crate) fn decode_checked_current_row<T>(
    namespace: &Namespace,
    id: RecordId,
    bytes: &[u8],
    finish: impl FnOnce(Record) -> T,
) -> Result<T, CodecError> {
    let bad = || CodecError::Decode { what: "current row", reason: "truncated header".to_string() };
    let bytes = match bytes.first() {
        Some(&CURRENT_ROW_VERSION) => bytes.get(..bytes.len().saturating_sub(SEAL_BYTES)).ok_or_else(bad)?,
        _ => open_current_row(bytes, namespace.as_str(), id)?,
    };
    let rev: [u8; 4] = bytes.get(1..5).and_then(|b| b.try_into().ok()).ok_or_else(bad)?;
    let rec = le_i64(bytes, 5).ok_or_else(bad)?;
    let body = bytes.get(CURRENT_ROW_HEADER..).ok_or_else(bad)?;
    parse_revision(namespace, id, u32::from_le_bytes(rev), Timestamp::from_micros(rec), body, finish)
}
