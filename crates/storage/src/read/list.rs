//! Listing the records valid at a time: the access paths (current rows, the ended table, the timeline) and the current-rows cursors.

use crate::error::Error;
use crate::id::{Namespace, RecordId};
use crate::kind::Kind;
use crate::record::{self, Record};
use crate::tables::{self, names};
use crate::time::Timestamp;
use crate::timeline;
use crate::write::{self};
use redb::{ReadableTable, ReadableTableMetadata};

use super::*;

impl Snapshot {
    /// Records valid at `q.as_of`, newest first.
    pub fn list(&self, ns: &Namespace, q: &ListQuery) -> Result<Vec<Record>, Error> {
        self.list_explain(ns, q).map(|(r, _)| r)
    }

    /// [`Snapshot::list`], also saying which access path answered.
    pub fn list_explain(&self, ns: &Namespace, q: &ListQuery) -> Result<(Vec<Record>, ListPath), Error> {
        self.ctx((|| {
            let (records, path) = self.list_inner(ns, q)?;
            // Each as it stood at the valid time (see `write::as_valid_at`): rarely any to mend.
            if !records.iter().any(|r| r.superseded_by.is_some()) {
                return Ok((records, path));
            }
            let (v, _) = self.resolve(q.as_of);
            let revisions = self.txn.open_table(tables::REVISIONS)?;
            let records = records
                .into_iter()
                .map(|r| write::as_valid_at(&revisions, r, v))
                .collect::<Result<_, _>>()?;
            Ok((records, path))
        })())
    }

    fn list_inner(&self, ns: &Namespace, q: &ListQuery) -> Result<(Vec<Record>, ListPath), Error> {
        let (v, k) = self.resolve(q.as_of);
        let vt = Timestamp::from_micros(v);
        let kinds: Vec<u8> = q.kinds.iter().map(|k| k.code()).collect();
        let limit = q.limit.unwrap_or(usize::MAX);
        let mut out: Vec<Record> = Vec::new();
        if limit == 0 {
            return Ok((out, ListPath::Current));
        }
        let codes: Vec<u8> =
            if kinds.is_empty() { Kind::ALL.iter().map(|k| k.code()).collect() } else { kinds.clone() };
        let known_now = k >= self.meta.last_tx.as_micros();
        let current = self.open_optional(tables::CURRENT)?;
        if known_now
            && v >= self.meta.swept_through.as_micros()
            && let Some(t) = &current
        {
            // Records are large: reserve once (the table's length is stored, so this is free)
            // rather than moving them as the vector grows.
            let rows = usize::try_from(t.len()?).unwrap_or(usize::MAX);
            out.reserve(rows.min(limit).min(4096));
            let mut stream = CurrentRows::open(t, ns.as_str(), &codes, q.before)?;
            // Rows read, to compare with the namespace's counts when the whole of it is read.
            let mut read = 0u64;
            let mut whole = q.before.is_none();
            while let Some((id, kind, bytes)) = stream.next()? {
                read += 1;
                let decoded = record::decode_current_row_at(
                    ns,
                    RecordId::from_u128(id),
                    bytes.value(),
                    Some(vt),
                    |rec| out.push(rec),
                )
                .map_err(|e| Error::Codec { table: names::CURRENT, source: e })?;
                // The row's checksum covers its record's id; its kind must be its key's.
                if decoded.is_some()
                    && let Some(held) = out.last().map(|r| r.kind().code())
                    && held != kind
                {
                    return Err(Error::Codec {
                        table: names::CURRENT,
                        source: record::kind_mismatch(kind, held),
                    });
                }
                // Filter in place: moving a record out and back costs more than popping it.
                if decoded.is_some() && out.last().is_some_and(|rec| !q.accepts(rec)) {
                    out.pop();
                }
                if out.len() >= limit {
                    whole = false;
                    break;
                }
            }
            if whole
                && let Some(counted) = crate::counts::expected(&self.txn, ns.as_str(), &codes)?
                && counted != read
            {
                return Err(crate::counts::mismatch(ns.as_str(), "its current rows", read, counted));
            }
            return Ok((out, ListPath::Current));
        }
        if known_now
            && let Some(current) = &current
            && let Some(ended) = self.ended_table()?
        {
            return self.list_ended(
                ns,
                q,
                current,
                &ended,
                v,
                &codes,
                (!kinds.is_empty()).then_some(kinds.as_slice()),
                out,
            );
        }
        let events = self.txn.open_table(tables::EVENTS)?;
        let cps = self.txn.open_table(tables::CHECKPOINTS)?;
        let entries = self.txn.open_table(tables::CHECKPOINT_ENTRIES)?;
        let revs = self.txn.open_table(tables::REVISIONS)?;
        let filter = (!kinds.is_empty()).then_some(kinds.as_slice());
        let live = timeline::live_at(&events, &cps, &entries, ns.as_str(), v, k, filter)?;
        out.reserve(live.len().min(limit));
        // Known at an earlier time (or as known now on a format-4 file opened read-only, which
        // has neither the byte-keyed current table nor the ended table): one seek per record.
        let after = q.before.map(RecordId::as_u128);
        for (id, _) in live.into_iter().rev().filter(|(id, _)| after.is_none_or(|b| *id < b)) {
            let rid = RecordId::from_u128(id);
            // Decoded straight into `out`, then checked and filtered in place (see the
            // current-table path).
            let found = write::revision_at_with(&revs, ns, rid, k, |rec| out.push(rec))?;
            found.ok_or_else(|| Error::Inconsistent {
                namespace: ns.to_string(),
                detail: format!("timeline lists {rid} but no revision is known at {k}"),
            })?;
            let Some(rec) = out.last() else { break };
            if !rec.is_visible_at(vt) {
                return Err(Error::Inconsistent {
                    namespace: ns.to_string(),
                    detail: format!(
                        "timeline lists {rid} at {vt}, its revision {} is not visible then",
                        rec.rev
                    ),
                });
            }
            if !q.accepts(rec) {
                out.pop();
            } else if out.len() >= limit {
                break;
            }
        }
        Ok((out, ListPath::Timeline))
    }

    /// Everything valid at `v`, as known now, at a time before the current table's sweep: the
    /// records with an open end from their current rows (those that started by `v`), the others
    /// from `mnemon.ended` (those whose interval holds `v`), merged newest id first.
    #[allow(clippy::too_many_arguments, reason = "the parts of one listing, split off for length")]
    fn list_ended(
        &self,
        ns: &Namespace,
        q: &ListQuery,
        current: &redb::ReadOnlyTable<&'static [u8], &'static [u8]>,
        ended: &redb::ReadOnlyTable<crate::ended::EndedKey, &'static [u8]>,
        v: i64,
        codes: &[u8],
        filter: Option<&[u8]>,
        mut out: Vec<Record>,
    ) -> Result<(Vec<Record>, ListPath), Error> {
        let limit = q.limit.unwrap_or(usize::MAX);
        // The live set at `v` is usually about as large as now's: reserve that much (a row is
        // large; the table's length is stored, so this costs nothing).
        let mut rows = Vec::with_capacity(usize::try_from(current.len()?).unwrap_or(0).min(4096) + 64);
        crate::ended::visible_at(ended, ns.as_str(), v, filter, &mut rows)?;
        let from_ended = rows.len();
        // The records still current that are visible at `v`, in one forward scan of the
        // namespace's current rows (a record moves to `mnemon.ended` when its row is swept).
        let (lo, hi) = tables::namespace_range(ns.as_str());
        // A cursor rather than a range: redb finds both ends of a range, a cursor only its start.
        let mut cursor = current.lower_bound(std::ops::Bound::Included(lo.as_slice()))?;
        while let Some((k, row)) = cursor.next()? {
            if k.value() >= hi.as_slice() {
                break;
            }
            let Some((kind, id)) = tables::parse_current_key(k.value(), ns.as_str().len()) else {
                return Err(bad_current_key());
            };
            if !codes.contains(&kind) {
                continue;
            }
            let (vis, held) = record::current_row_visible(row.value(), ns.as_str(), RecordId::from_u128(id))
                .map_err(|e| Error::Codec { table: names::CURRENT, source: e })?;
            if held != kind {
                return Err(Error::Codec {
                    table: names::CURRENT,
                    source: record::kind_mismatch(kind, held),
                });
            }
            if vis.contains(Timestamp::from_micros(v)) {
                rows.push((id, row));
            }
        }
        // Newest id first, as every listing: sort small `(id, position)` pairs, not the rows (ids
        // are unique, so the positions never decide). A stable sort, which finds runs: the
        // current rows come in runs of ascending ids, one per kind, and are most of a listing
        // not far in the past (`profile recent` at 100k: 258-263 -> 246-250 µs).
        let below = q.before.map_or(u128::MAX, |b| b.as_u128());
        let mut order: Vec<(u128, u32)> = rows
            .iter()
            .enumerate()
            .filter(|(_, (id, _))| q.before.is_none() || *id < below)
            .map(|(i, (id, _))| (*id, u32::try_from(i).unwrap_or(u32::MAX)))
            .collect();
        order.sort_by_key(|p| std::cmp::Reverse(p.0));
        out.reserve(order.len().min(limit));
        for (id, i) in order {
            let i = i as usize;
            let Some((_, row)) = rows.get(i) else { continue };
            let (table, bytes) = if i < from_ended {
                (names::ENDED, crate::ended::split(row.value())?.1)
            } else {
                (names::CURRENT, row.value())
            };
            // Both kinds of rows had their checksums checked when their visibility was read.
            record::decode_checked_current_row(ns, RecordId::from_u128(id), bytes, |rec| out.push(rec))
                .map_err(|e| Error::Codec { table, source: e })?;
            if out.last().is_some_and(|rec| !q.accepts(rec)) {
                out.pop();
            } else if out.len() >= limit {
                break;
            }
        }
        Ok((out, ListPath::Ended))
    }
}
