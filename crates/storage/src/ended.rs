//! `mnemon.ended`: the latest revision of every record whose visibility ended by the last
//! sweep, filed so that "everything valid at V, as known now" is a few short range scans.
//!
//! As known now, a record's revision is its latest one, and the record is valid at `V` when
//! that revision's visible interval `[from, until)` holds `V`. Records with an open end are
//! all in `mnemon.live` (the current rows), and so are those whose end is still ahead (until
//! the sweep of the first commit after it moves them here); the others (retired, superseded,
//! expired, or given an end that has passed) are here, keyed `(namespace, level, until, id)`,
//! where the level is the smallest `L` with `until - from <= 2^L` microseconds. An interval of
//! level `L` that holds `V` ends in `(V, V + 2^L]`, so at each level the rows to read are
//! those with `until` in that range; of those, the ones that start by `V` are the answer.
//! Within a level the lengths differ by at most a factor of two, so in general most rows read
//! are returned. An interval tree flattened into one B-tree, with no rebalancing and no
//! per-level state.
//!
//! Filing by the end rather than the start (format 7; formats 5 and 6 filed by the start) is
//! what makes a listing not far in the past cheap: nothing here ends after the last sweep, so
//! at every level the rows read are only those that ended after `V`, the few the listing
//! needs and those that also started after `V`. Filed by the start, the same listing read every
//! row of a level that started in `(V - 2^L, V]`, most of which had ended long before `V` (483
//! rows for 27 hits, 100 minutes back in the benchmark's history; see docs/benchmarks.md).
//!
//! The value is the kind's code followed by the record's current row (the header with
//! the revision number, transaction time and visible interval, then the revision), so a listing
//! decodes it exactly as a current row, and filters by kind and end without decoding.
//!
//! The table is written only when a record's visibility ends by the commit that writes it
//! (retire, supersede, a back-dated end), when the sweep takes a current row whose end has
//! passed, and when a record that is here gets a new revision: inserting and revising records
//! whose end is open or still ahead (a default expiry, say), which is nearly every write,
//! never touches it.

use std::ops::Bound;

use redb::{ReadableTable, Table};

use crate::error::Error;
use crate::record::{self, Record, Visible};
use crate::tables::{self, names};

/// The key is bytes, compared with `memcmp`: `[namespace][0][level][until][id]`, with `until`
/// big-endian with its sign bit flipped and `id` big-endian, so the order is `(namespace, level,
/// until, id)` (a namespace holds no control character, so `0` ends it).
pub(crate) type EndedKey = &'static [u8];

/// The key of a row.
pub(crate) fn key(ns: &str, level: u8, until: i64, id: u128) -> Vec<u8> {
    let mut k = Vec::with_capacity(ns.len() + 26);
    k.extend_from_slice(ns.as_bytes());
    k.push(0);
    k.push(level);
    k.extend_from_slice(&((until as u64) ^ (1 << 63)).to_be_bytes());
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// The `(level, until, id)` of a key of namespace `ns` (whose length is `ns_len`).
pub(crate) fn parse_key(k: &[u8], ns_len: usize) -> Option<(u8, i64, u128)> {
    let rest = k.get(ns_len + 1..)?;
    let (&level, rest) = rest.split_first()?;
    let until: [u8; 8] = rest.get(..8)?.try_into().ok()?;
    let id: [u8; 16] = rest.get(8..24)?.try_into().ok()?;
    Some((level, (u64::from_be_bytes(until) ^ (1 << 63)) as i64, u128::from_be_bytes(id)))
}

/// Each level holds intervals up to twice as long as the level below.
const LEVEL_BITS: u32 = 1;
/// The highest level: `2^64` covers every interval of `i64` microseconds.
pub(crate) const MAX_LEVEL: u8 = 64;

/// The level of a visible interval: the smallest `L` with `until - from <= 2^L`.
pub(crate) fn level(v: Visible) -> u8 {
    let len = i128::from(v.until.as_micros()) - i128::from(v.from.as_micros());
    // A visible interval is never empty; be safe against a malformed one anyway.
    let len = u128::try_from(len.max(1)).unwrap_or(1);
    // ceil(log2(len)): the bits needed for len - 1.
    let bits = u128::BITS - (len - 1).leading_zeros();
    let level = bits.div_ceil(LEVEL_BITS);
    u8::try_from(level).unwrap_or(MAX_LEVEL).min(MAX_LEVEL)
}

/// The highest end an interval of `level` holding `v` can have: `v + 2^level` (it starts by `v`
/// and is at most `2^level` long).
fn highest_until(level: u8, v: i64) -> i64 {
    let width = 1i128 << (u32::from(level) * LEVEL_BITS);
    let hi = i128::from(v) + width;
    i64::try_from(hi).unwrap_or(i64::MAX)
}

/// The row of a record's latest revision, or `None` when it belongs in the current table (an
/// open end) or nowhere (never visible). `revision` is the encoded revision.
pub(crate) fn row_of(rec: &Record, revision: &[u8]) -> Option<(u8, i64, Vec<u8>)> {
    let v = rec.visible().filter(|v| !v.is_open())?;
    let value = value(rec.kind().code(), &record::current_row(rec, v, revision));
    Some((level(v), v.until.as_micros(), value))
}

/// A row's value: the kind's code, then the `CURRENT` row.
fn value(kind: u8, current: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + current.len());
    out.push(kind);
    out.extend_from_slice(current);
    out
}

/// The `(key, value)` of the row a swept `CURRENT` row becomes.
pub(crate) fn row_from_current(
    ns: &str,
    kind: u8,
    id: u128,
    current: &[u8],
) -> Result<(Vec<u8>, Vec<u8>), Error> {
    let (v, held) = record::current_row_visible(current, ns, crate::id::RecordId::from_u128(id))
        .map_err(|e| Error::Codec { table: names::CURRENT, source: e })?;
    if held != kind {
        return Err(Error::Codec { table: names::CURRENT, source: record::kind_mismatch(kind, held) });
    }
    Ok((key(ns, level(v), v.until.as_micros(), id), value(kind, current)))
}

/// The key a record's latest revision has in the table, if any.
pub(crate) fn key_of(rec: &Record) -> Option<(u8, i64)> {
    let v = rec.visible().filter(|v| !v.is_open())?;
    Some((level(v), v.until.as_micros()))
}

/// Split a row into its kind and its `CURRENT` row.
pub(crate) fn split(bytes: &[u8]) -> Result<(u8, &[u8]), Error> {
    match bytes.split_first() {
        Some((kind, row)) => Ok((*kind, row)),
        None => Err(Error::Codec {
            table: names::ENDED,
            source: crate::error::CodecError::Decode { what: "ended row", reason: "empty".to_string() },
        }),
    }
}

/// A row found by [`visible_at`]: the record's id and the stored row (kind, then a `CURRENT` row).
pub(crate) type Hit<'t> = (u128, redb::AccessGuard<'t, &'static [u8]>);

/// Append to `out` the rows of `ns` whose interval holds `v`, of the kinds in `kinds` (all
/// when `None`), in no particular order. One cursor per level that holds rows: a scan that
/// meets the next non-empty level first jumps to it.
pub(crate) fn visible_at<'t>(
    table: &'t impl ReadableTable<EndedKey, &'static [u8]>,
    ns: &str,
    v: i64,
    kinds: Option<&[u8]>,
    out: &mut Vec<Hit<'t>>,
) -> Result<(), Error> {
    // An interval holding `v` ends after it; nothing ends after the last microsecond.
    let Some(after) = v.checked_add(1) else { return Ok(()) };
    // Every key of the namespace sorts below `end`.
    let (_, end) = tables::namespace_range(ns);
    let mut level = 0u8;
    loop {
        // A cursor rather than a range: redb finds a range's both ends, a cursor only its start,
        // and every level costs one such descent.
        let start = key(ns, level, after, 0);
        let last = highest_until(level, v);
        let mut rows = table.lower_bound(Bound::Included(start.as_slice()))?;
        let mut next = None;
        while let Some((k, value)) = rows.next()? {
            let k = k.value();
            if k >= end.as_slice() {
                // Past the namespace's last row.
                break;
            }
            let Some((l, until, id)) = parse_key(k, ns.len()) else {
                return Err(bad_key());
            };
            if l != level {
                // No row of this level holds v: start again at the next level with rows.
                next = Some(l);
                break;
            }
            if until > last {
                next = level.checked_add(1);
                break;
            }
            let (kind, row) = split(value.value())?;
            if kinds.is_some_and(|k| !k.contains(&kind)) {
                continue;
            }
            // The row's checksum covers its record's id; its kind and end must be its key's.
            let (visible, held) = record::current_row_visible(row, ns, crate::id::RecordId::from_u128(id))
                .map_err(|e| Error::Codec { table: names::ENDED, source: e })?;
            if held != kind {
                return Err(Error::Codec { table: names::ENDED, source: record::kind_mismatch(kind, held) });
            }
            if visible.until.as_micros() != until {
                return Err(bad_key());
            }
            if visible.from.as_micros() <= v {
                out.push((id, value));
            }
        }
        match next {
            Some(l) if l <= MAX_LEVEL => level = l,
            _ => return Ok(()),
        }
    }
}

fn bad_key() -> Error {
    Error::Codec {
        table: names::ENDED,
        source: crate::error::CodecError::Decode { what: "ended key", reason: "truncated".to_string() },
    }
}

/// Fill the table from the revisions (a file upgraded from a format before 7): the records
/// whose visibility ended by the last sweep (the others with an end still have current rows).
pub(crate) fn fill(txn: &redb::WriteTransaction) -> Result<(), Error> {
    let swept = crate::format::read_state(&txn.open_table(tables::META)?)?.swept_through.as_micros();
    let revisions = txn.open_table(tables::REVISIONS)?;
    let mut ended = txn.open_table(tables::ENDED)?;
    let mut last: Option<(String, u128, i64, u32, Vec<u8>)> = None;
    let put = |ended: &mut Table<EndedKey, &'static [u8]>,
               latest: Option<(String, u128, i64, u32, Vec<u8>)>| {
        let Some((ns, id, rec, rev, bytes)) = latest else { return Ok::<(), Error>(()) };
        let namespace = crate::id::Namespace::new(ns.as_str()).map_err(|e| Error::Inconsistent {
            namespace: ns.clone(),
            detail: format!("stored revision under a bad namespace: {e}"),
        })?;
        let record = record::decode_revision(
            &namespace,
            crate::id::RecordId::from_u128(id),
            rev,
            crate::time::Timestamp::from_micros(rec),
            &bytes,
        )
        .map_err(|e| Error::Codec { table: names::REVISIONS, source: e })?;
        if record.visible().is_some_and(|v| v.until.as_micros() <= swept)
            && let Some((level, until, row)) = row_of(&record, &bytes)
        {
            ended.insert(key(&ns, level, until, id).as_slice(), row.as_slice())?;
        }
        Ok(())
    };
    for r in revisions.iter()? {
        let (k, v) = r?;
        let (ns, id, rec, rev) = k.value();
        if last.as_ref().is_some_and(|(n, i, ..)| (n.as_str(), *i) != (ns, id)) {
            put(&mut ended, last.take())?;
        }
        last = Some((ns.to_string(), id, rec, rev, v.value().to_vec()));
    }
    put(&mut ended, last)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::time::Timestamp;
    use redb::ReadableDatabase;

    fn vis(from: i64, until: i64) -> Visible {
        Visible { from: Timestamp::from_micros(from), until: Timestamp::from_micros(until) }
    }

    /// A row as the table holds it: the kind, then a current row's header with interval `v`
    /// (version 1, unsealed, and only the start of a revision after it: the search reads only
    /// the header and the revision's kind).
    fn row(kind: u8, v: Visible) -> Vec<u8> {
        let mut row = vec![kind, record::CURRENT_ROW_UNSEALED];
        row.extend_from_slice(&[0u8; 12]);
        row.extend_from_slice(&v.from.as_micros().to_le_bytes());
        row.extend_from_slice(&v.until.as_micros().to_le_bytes());
        // The start of a version-1 revision: its version and kind.
        row.extend_from_slice(&[record::REVISION_UNSEALED, kind]);
        row
    }

    /// The ids [`visible_at`] finds in namespace `ns` of `t` at `at`, in ascending order.
    fn found(t: &impl ReadableTable<EndedKey, &'static [u8]>, at: i64, kinds: Option<&[u8]>) -> Vec<u128> {
        let mut hits = Vec::new();
        visible_at(t, "ns", at, kinds, &mut hits).unwrap();
        let mut got: Vec<u128> = hits.iter().map(|(id, _)| *id).collect();
        got.sort_unstable();
        got
    }

    #[test]
    fn levels_cover_their_lengths() {
        assert_eq!(level(vis(0, 1)), 0);
        assert_eq!(level(vis(0, 2)), 1);
        assert_eq!(level(vis(0, 3)), 2);
        assert_eq!(level(vis(0, 4)), 2);
        assert_eq!(level(vis(0, 5)), 3);
        assert_eq!(level(vis(0, 16)), 4);
        assert_eq!(level(vis(0, 17)), 5);
        assert_eq!(level(vis(-5, 5)), 4);
        assert_eq!(level(vis(i64::MIN, i64::MAX - 1)), MAX_LEVEL);
        for len in [1i64, 2, 3, 4, 5, 15, 16, 17, 1000, 1 << 40, (1 << 40) + 1, i64::MAX / 2] {
            let l = level(vis(0, len));
            let width = 1i128 << (LEVEL_BITS * u32::from(l));
            assert!(i128::from(len) <= width, "{len} fits level {l}");
            if l > 0 {
                assert!(i128::from(len) > width >> LEVEL_BITS, "{len} is too long for level {}", l - 1);
            }
        }
    }

    /// The edges of each level: an interval of length `2^L` starting at `v` (ending at the
    /// highest end read), one ending just after `v`, and the neighbours that miss `v` by a
    /// microsecond, also at the ends of time.
    #[test]
    fn the_levels_find_intervals_at_their_edges() {
        const T: redb::TableDefinition<EndedKey, &[u8]> = redb::TableDefinition::new("t");
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("t.redb")).unwrap();
        for at in [0i64, 1_000_000, -77, i64::MAX - 1, i64::MIN + 1] {
            for l in [0u32, 1, 5, 20, 40] {
                let len = 1i64 << l;
                let at_least = |x: i64, d: i64| x.checked_sub(d).unwrap_or(i64::MIN);
                let at_most = |x: i64, d: i64| x.checked_add(d).unwrap_or(i64::MAX);
                let cases = [
                    (vis(at, at_most(at, len)), true),
                    (vis(at_least(at, len - 1), at_most(at, 1)), true),
                    (vis(at_most(at, 1), at_most(at, len + 1)), false),
                    (vis(at_least(at, len), at), false),
                ];
                let txn = db.begin_write().unwrap();
                txn.delete_table(T).unwrap();
                {
                    let mut t = txn.open_table(T).unwrap();
                    for (id, (v, _)) in cases.iter().enumerate() {
                        if v.from < v.until {
                            let k = key("ns", level(*v), v.until.as_micros(), id as u128);
                            t.insert(k.as_slice(), row(0, *v).as_slice()).unwrap();
                        }
                    }
                }
                txn.commit().unwrap();
                let read = db.begin_read().unwrap();
                let t = read.open_table(T).unwrap();
                let got = found(&t, at, None);
                let want: Vec<u128> = cases
                    .iter()
                    .enumerate()
                    .filter(|(_, (v, holds))| *holds && v.contains(Timestamp::from_micros(at)))
                    .map(|(id, _)| id as u128)
                    .collect();
                assert_eq!(got, want, "at {at}, length 2^{l}");
                if at.abs() < 1 << 50 {
                    assert_eq!(got, [0, 1], "at {at}, length 2^{l}");
                }
            }
        }
    }

    /// Every interval holding `v` is found, and no other: random intervals of every scale in a
    /// real table, against a plain filter.
    #[test]
    fn the_levels_find_exactly_the_intervals_holding_a_time() {
        const T: redb::TableDefinition<EndedKey, &[u8]> = redb::TableDefinition::new("t");
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("t.redb")).unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut intervals = Vec::new();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(T).unwrap();
            for id in 0..3000u128 {
                // Around zero, where the sign bit of the key's `until` flips.
                let from = i64::try_from(rand() % 1_000_000).unwrap() - 500_000;
                let len = 1i64 << (rand() % 22);
                let len = 1 + i64::try_from(rand() % u64::try_from(len).unwrap()).unwrap();
                let v = vis(from, from + len);
                let ns = if id % 7 == 0 { "other" } else { "ns" };
                let kind = u8::try_from(id % 3).unwrap();
                t.insert(key(ns, level(v), v.until.as_micros(), id).as_slice(), row(kind, v).as_slice())
                    .unwrap();
                intervals.push((id, ns, kind, v));
            }
        }
        txn.commit().unwrap();
        let read = db.begin_read().unwrap();
        let t = read.open_table(T).unwrap();
        for _ in 0..300 {
            let at = i64::try_from(rand() % 1_400_000).unwrap() - 700_000;
            for kinds in [None, Some(&[1u8, 2][..])] {
                let got = found(&t, at, kinds);
                let want: Vec<u128> = intervals
                    .iter()
                    .filter(|(_, ns, kind, v)| {
                        *ns == "ns"
                            && v.contains(Timestamp::from_micros(at))
                            && kinds.is_none_or(|k| k.contains(kind))
                    })
                    .map(|(id, ..)| *id)
                    .collect();
                assert_eq!(got, want, "at {at}, kinds {kinds:?}");
            }
        }
    }
}
