//! Reads: a [`Snapshot`] is a consistent view of the database at one commit.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata};

use crate::error::Error;
use crate::format::{self, MetaState};
use crate::id::{Namespace, RecordId};
use crate::kind::Kind;
use crate::record::{self, Record};
use crate::tables::{self, names};
use crate::time::{Clock, Timestamp};
use crate::timeline;
use crate::vector::{self, VectorSpace};
use crate::write::{self, NamespaceCounters};

/// A stored vector and the revision it starts at.
pub type StoredVector = (u32, Vec<f32>);

/// A point on both time axes: "what was valid at `valid`, as the database knew it at `known`".
/// `None` means now (for `known`: everything committed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AsOf {
    /// Valid time; `None` is now.
    pub valid: Option<Timestamp>,
    /// Transaction time; `None` is the latest knowledge.
    pub known: Option<Timestamp>,
}

impl AsOf {
    /// Valid now, as known now: the default of every query.
    pub fn now() -> Self {
        AsOf::default()
    }

    /// Valid at `t`, as known now.
    pub fn valid_at(t: Timestamp) -> Self {
        AsOf { valid: Some(t), known: None }
    }

    /// The same valid time, as known at `k`.
    pub fn known_at(self, k: Timestamp) -> Self {
        AsOf { known: Some(k), ..self }
    }
}

impl From<Timestamp> for AsOf {
    fn from(t: Timestamp) -> Self {
        AsOf::valid_at(t)
    }
}

/// What to list.
#[derive(Clone, Debug, Default)]
pub struct ListQuery {
    /// Only these kinds (empty: all).
    pub kinds: Vec<Kind>,
    /// Only records carrying all these tags.
    pub tags: Vec<String>,
    /// Only records from this source agent.
    pub source: Option<String>,
    /// Only records of this task.
    pub task: Option<String>,
    /// When.
    pub as_of: AsOf,
    /// At most this many (the newest).
    pub limit: Option<usize>,
    /// Only records with an id below this one: the next page of a listing (records are
    /// listed newest id first, so a page continues before the last id of the previous one).
    pub before: Option<RecordId>,
}

impl ListQuery {
    /// Everything valid now.
    pub fn new() -> Self {
        ListQuery::default()
    }

    /// Only these kinds.
    pub fn kinds(mut self, kinds: impl IntoIterator<Item = Kind>) -> Self {
        self.kinds = kinds.into_iter().collect();
        self
    }

    /// At a point in time.
    pub fn as_of(mut self, as_of: impl Into<AsOf>) -> Self {
        self.as_of = as_of.into();
        self
    }

    /// With a tag.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// At most `n`.
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = Some(n);
        self
    }

    /// Only records with an id below `id`: the page after one that ended with `id`.
    pub fn before(mut self, id: RecordId) -> Self {
        self.before = Some(id);
        self
    }

    /// Whether a record passes every filter besides the time: kinds, tags, source, task.
    pub(crate) fn matches(&self, r: &Record) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(&r.kind())) && self.accepts(r)
    }

    /// Whether a record passes the filters besides the time and its kind (which listings
    /// apply through their access paths).
    fn accepts(&self, r: &Record) -> bool {
        self.before.is_none_or(|b| r.id < b)
            && self.tags.iter().all(|t| r.envelope.tags.iter().any(|x| x.as_str() == t.as_str()))
            && self.source.as_ref().is_none_or(|s| r.envelope.source.as_deref() == Some(s.as_str()))
            && self.task.as_ref().is_none_or(|s| r.envelope.task.as_deref() == Some(s.as_str()))
    }
}

/// Which access path a listing used (for tests and `--explain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListPath {
    /// The table of current records (valid now or later, as known now).
    Current,
    /// The timeline index (a checkpoint plus the events after it): any other knowledge time.
    Timeline,
    /// The current rows of open-ended records beside `mnemon.ended` (records whose visibility
    /// has an end): valid at a time before the current table's last sweep, as known now.
    Ended,
}

/// A consistent read-only view of the database.
pub struct Snapshot {
    pub(crate) txn: ReadTransaction,
    path: PathBuf,
    pub(crate) meta: MetaState,
    clock: Arc<dyn Clock>,
    /// The file's format version (older than this build's only on a read-only handle).
    pub(crate) format: u32,
    /// Where a read that meets damage records it for the handle (see `Store::damage`).
    damage: crate::damage::Damage,
}

/// One commit of the commit log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitLogEntry {
    /// The commit's sequence number.
    pub seq: u64,
    /// Its transaction time.
    pub tx: Timestamp,
    /// The records it changed.
    pub changed: Vec<(Namespace, RecordId)>,
}

/// A problem found by [`Snapshot::verify`].
pub type Problem = String;

impl Snapshot {
    pub(crate) fn new(
        txn: ReadTransaction,
        path: &Path,
        clock: Arc<dyn Clock>,
        format: u32,
        damage: crate::damage::Damage,
    ) -> Result<Snapshot, Error> {
        let (meta, format) = {
            let t = txn.open_table(tables::META)?;
            // A read-only handle on an older file: a writer in another process may have
            // upgraded it since (its lexical index then holds another analysis's terms).
            let format =
                if format < format::FORMAT_VERSION { format::read_version(&t)?.max(format) } else { format };
            (format::read_state(&t)?, format)
        };
        Ok(Snapshot { txn, path: path.to_path_buf(), meta, clock, format, damage })
    }

    /// `mnemon.ended`, if the file has it in this build's layout: a format-5 or -6 file opened
    /// read-only files its rows by their start, and is read through the timeline instead.
    pub(crate) fn ended_table(
        &self,
    ) -> Result<Option<redb::ReadOnlyTable<crate::ended::EndedKey, &'static [u8]>>, Error> {
        if self.format < format::ENDED_BY_END {
            return Ok(None);
        }
        self.open_optional(tables::ENDED)
    }

    /// A read's error with the file's path, damage recorded for the handle.
    pub(crate) fn ctx<T>(&self, r: Result<T, Error>) -> Result<T, Error> {
        r.map_err(|e| {
            let e = e.with_path(&self.path);
            if e.is_damage() {
                crate::damage::note_damage(&self.damage, &e.to_string());
            }
            e
        })
    }

    /// The time now (what `AsOf::now()` resolves to): the store's clock, but never before the
    /// last commit this snapshot sees, so that a write is visible "now" to a read that follows
    /// it even when both fall in one microsecond (the commit's time is then bumped past the
    /// clock to keep transaction time strictly increasing).
    pub fn now(&self) -> Timestamp {
        self.clock.now().max(self.meta.last_tx)
    }

    /// The clocks and counters at this snapshot.
    pub fn meta(&self) -> MetaState {
        self.meta
    }

    fn resolve(&self, as_of: AsOf) -> (i64, i64) {
        let v = as_of.valid.unwrap_or_else(|| self.now()).as_micros();
        // Open transaction-time spans end at i64::MAX (exclusive), so "latest knowledge" is the
        // instant before it.
        let k = as_of.known.map_or(i64::MAX, Timestamp::as_micros).min(i64::MAX - 1);
        (v, k)
    }

    /// The record as valid at `as_of.valid`, as known at `as_of.known`; `None` if it was not
    /// valid then (or not known, or never existed).
    pub fn get(&self, ns: &Namespace, id: RecordId, as_of: AsOf) -> Result<Option<Record>, Error> {
        let (v, k) = self.resolve(as_of);
        let r = self.revision_at(ns, id, Timestamp::from_micros(k))?;
        Ok(r.filter(|r| r.is_visible_at(Timestamp::from_micros(v))))
    }

    /// The revision current at transaction time `known`, whatever its validity.
    pub fn revision_at(
        &self,
        ns: &Namespace,
        id: RecordId,
        known: Timestamp,
    ) -> Result<Option<Record>, Error> {
        self.ctx((|| {
            let t = self.txn.open_table(tables::REVISIONS)?;
            write::revision_at(&t, ns, id, known.as_micros())
        })())
    }

    /// The latest revision, whatever its validity.
    pub fn latest(&self, ns: &Namespace, id: RecordId) -> Result<Option<Record>, Error> {
        self.revision_at(ns, id, Timestamp::MAX)
    }

    /// The ids of records in the namespace whose hyphen-less hex form starts with `prefix`
    /// (case-insensitive; what tables show of an id): one range of keys.
    pub fn ids_with_prefix(&self, ns: &Namespace, prefix: &str) -> Result<Vec<RecordId>, Error> {
        let want: String = prefix.chars().filter(|c| *c != '-').collect::<String>().to_ascii_lowercase();
        let Some(bits) = u128::from_str_radix(&want, 16).ok().filter(|_| (1..=32).contains(&want.len()))
        else {
            return Ok(Vec::new());
        };
        // The ids from `want` followed by zeros to `want` followed by `f`s: one range of keys.
        let shift = 4 * (32 - want.len() as u32);
        let lo = bits.checked_shl(shift).unwrap_or(0);
        let hi = lo | 1u128.checked_shl(shift).map_or(u128::MAX, |b| b - 1);
        self.ctx((|| {
            let t = self.txn.open_table(tables::REVISIONS)?;
            let mut out: Vec<RecordId> = Vec::new();
            for r in t.range((ns.as_str(), lo, i64::MIN, 0u32)..=(ns.as_str(), hi, i64::MAX, u32::MAX))? {
                let id = RecordId::from_u128(r?.0.value().1);
                if out.last() != Some(&id) {
                    out.push(id);
                }
            }
            Ok(out)
        })())
    }

    /// The ids of records in the namespace whose hyphen-less hex form ends with `suffix`
    /// (case-insensitive). Scans the namespace's revisions: meant for people typing short ids.
    pub fn ids_with_suffix(&self, ns: &Namespace, suffix: &str) -> Result<Vec<RecordId>, Error> {
        let want: String = suffix.chars().filter(|c| *c != '-').collect::<String>().to_ascii_lowercase();
        self.ctx((|| {
            let t = self.txn.open_table(tables::REVISIONS)?;
            let mut out: Vec<RecordId> = Vec::new();
            for r in
                t.range((ns.as_str(), 0u128, i64::MIN, 0u32)..=(ns.as_str(), u128::MAX, i64::MAX, u32::MAX))?
            {
                let id = r?.0.value().1;
                if out.last().is_some_and(|l| l.as_u128() == id) {
                    continue;
                }
                if format!("{id:032x}").ends_with(&want) {
                    out.push(RecordId::from_u128(id));
                }
            }
            out.dedup();
            Ok(out)
        })())
    }

    /// Every revision of a record, oldest first, with both intervals (`replaced_at` filled in).
    pub fn history(&self, ns: &Namespace, id: RecordId) -> Result<Vec<Record>, Error> {
        self.ctx((|| {
            let t = self.txn.open_table(tables::REVISIONS)?;
            let key = id.as_u128();
            let mut out: Vec<Record> = Vec::new();
            for r in t.range((ns.as_str(), key, i64::MIN, 0u32)..=(ns.as_str(), key, i64::MAX, u32::MAX))? {
                let (k, v) = r?;
                let (_, _, rec, rev) = k.value();
                let recorded = Timestamp::from_micros(rec);
                let record = record::decode_revision(ns, id, rev, recorded, v.value())
                    .map_err(|e| Error::Codec { table: names::REVISIONS, source: e })?;
                if let Some(prev) = out.last_mut() {
                    prev.replaced_at = Some(recorded);
                }
                out.push(record);
            }
            Ok(out)
        })())
    }

    /// The supersession chain through a record, oldest first, using the latest revisions.
    /// Links to forgotten records end the walk in that direction.
    pub fn chain(&self, ns: &Namespace, id: RecordId) -> Result<Vec<Record>, Error> {
        let start = self.latest(ns, id)?.ok_or_else(|| Error::NotFound { namespace: ns.clone(), id })?;
        let mut seen: HashSet<RecordId> = HashSet::from([id]);
        let mut back: Vec<Record> = Vec::new();
        let mut cursor = start.supersedes;
        while let Some(p) = cursor {
            if !seen.insert(p) {
                break;
            }
            match self.latest(ns, p)? {
                Some(r) => {
                    cursor = r.supersedes;
                    back.push(r);
                }
                None => break,
            }
        }
        back.reverse();
        let mut cursor = start.superseded_by;
        back.push(start);
        while let Some(n) = cursor {
            if !seen.insert(n) {
                break;
            }
            match self.latest(ns, n)? {
                Some(r) => {
                    cursor = r.superseded_by;
                    back.push(r);
                }
                None => break,
            }
        }
        Ok(back)
    }

    /// Records valid at `q.as_of`, newest first.
    pub fn list(&self, ns: &Namespace, q: &ListQuery) -> Result<Vec<Record>, Error> {
        self.list_explain(ns, q).map(|(r, _)| r)
    }

    /// [`Snapshot::list`], also saying which access path answered.
    pub fn list_explain(&self, ns: &Namespace, q: &ListQuery) -> Result<(Vec<Record>, ListPath), Error> {
        self.ctx(self.list_inner(ns, q))
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
            while let Some((id, kind, bytes)) = stream.next()? {
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
                    break;
                }
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

    /// The live record of `kind` holding identity `key` (normalised by the caller or not).
    pub fn identity(&self, ns: &Namespace, kind: Kind, key: &str) -> Result<Option<RecordId>, Error> {
        let key = crate::body::normalise_key(key);
        self.ctx((|| {
            let t = self.txn.open_table(tables::IDENTITY)?;
            Ok(t.get((ns.as_str(), kind.code(), key.as_str()))?.map(|v| RecordId::from_u128(v.value())))
        })())
    }

    /// Every namespace ever written to (forgotten records leave their namespace behind).
    pub fn namespaces(&self) -> Result<Vec<Namespace>, Error> {
        self.ctx((|| {
            let t = self.txn.open_table(tables::NAMESPACES)?;
            let mut out = Vec::new();
            for r in t.iter()? {
                let (k, _) = r?;
                let ns = Namespace::new(k.value()).map_err(|e| Error::Inconsistent {
                    namespace: k.value().to_string(),
                    detail: format!("stored namespace name is invalid: {e}"),
                })?;
                out.push(ns);
            }
            Ok(out)
        })())
    }

    /// Records and revisions stored in a namespace (counted by scanning its revision keys).
    pub fn namespace_counters(&self, ns: &Namespace) -> Result<NamespaceCounters, Error> {
        self.ctx((|| {
            let t = self.txn.open_table(tables::REVISIONS)?;
            let mut c = NamespaceCounters::default();
            let mut last: Option<u128> = None;
            for r in
                t.range((ns.as_str(), 0u128, i64::MIN, 0u32)..=(ns.as_str(), u128::MAX, i64::MAX, u32::MAX))?
            {
                let id = r?.0.value().1;
                c.revisions += 1;
                if last != Some(id) {
                    c.records += 1;
                    last = Some(id);
                }
            }
            Ok(c)
        })())
    }

    /// Visit the current rows of a namespace, `(kind, id, row)`, in key order: from the
    /// byte-keyed table, or from format 4's tuple-keyed one in a file opened read-only before
    /// its upgrade.
    pub(crate) fn for_each_current_row(
        &self,
        ns: &str,
        mut f: impl FnMut(u8, u128, &[u8]),
    ) -> Result<(), Error> {
        if let Some(t) = self.open_optional(tables::CURRENT)? {
            let (lo, hi) = tables::namespace_range(ns);
            for r in t.range(lo.as_slice()..hi.as_slice())? {
                let (k, v) = r?;
                let (kind, id) =
                    tables::parse_current_key(k.value(), ns.len()).ok_or_else(bad_current_key)?;
                f(kind, id, v.value());
            }
        } else if let Some(t) = self.open_optional(tables::CURRENT_V4)? {
            for r in t.range((ns, 0u8, 0u128)..=(ns, u8::MAX, u128::MAX))? {
                let (k, v) = r?;
                let (_, kind, id) = k.value();
                f(kind, id, v.value());
            }
        }
        Ok(())
    }

    /// Counts of current rows per kind in a namespace (valid now or later, as known now).
    pub fn current_counts(&self, ns: &Namespace) -> Result<BTreeMap<Kind, u64>, Error> {
        self.ctx((|| {
            let mut out: BTreeMap<Kind, u64> = BTreeMap::new();
            self.for_each_current_row(ns.as_str(), |kind, _, _| {
                if let Some(kind) = Kind::from_code(kind) {
                    *out.entry(kind).or_insert(0) += 1;
                }
            })?;
            Ok(out)
        })())
    }

    /// Number of stored revisions, checkpoints and events (for `stats`).
    pub fn table_sizes(&self) -> Result<BTreeMap<&'static str, u64>, Error> {
        self.ctx((|| {
            let mut out = BTreeMap::new();
            out.insert("revisions", self.txn.open_table(tables::REVISIONS)?.len()?);
            let current = match self.open_optional(tables::CURRENT)? {
                Some(t) => t.len()?,
                None => self.open_optional(tables::CURRENT_V4)?.map_or(Ok(0), |t| t.len())?,
            };
            out.insert("current", current);
            out.insert("ended", self.open_optional(tables::ENDED)?.map_or(Ok(0), |t| t.len())?);
            out.insert("events", self.txn.open_table(tables::EVENTS)?.len()?);
            out.insert("checkpoints", self.txn.open_table(tables::CHECKPOINTS)?.len()?);
            out.insert("checkpoint_entries", self.txn.open_table(tables::CHECKPOINT_ENTRIES)?.len()?);
            let log = match self.open_optional(tables::LOG)? {
                Some(t) => t.len()?,
                // A format-2 file opened read-only.
                None => write::format2_log(&self.txn.open_table(tables::META)?, 0)?.len() as u64,
            };
            out.insert("commit_log", log);
            out.insert("vectors", self.open_optional(tables::VECTORS)?.map_or(Ok(0), |t| t.len())?);
            out.insert("postings", self.open_optional(tables::POSTINGS)?.map_or(Ok(0), |t| t.len())?);
            let (mut in_segments, mut count) = (0, 0);
            let segments = self.segments()?;
            for ns in self.namespaces()? {
                in_segments += segments.count(ns.as_str())?;
                count += segments.list(ns.as_str())?.len() as u64;
            }
            out.insert("segment postings", in_segments);
            out.insert("segments", count);
            out.insert("fresh texts", self.open_optional(tables::FRESH)?.map_or(Ok(0), |t| t.len())?);
            // Texts merged into the posting lists (a format-5 file also counts its fresh ones).
            out.insert("merged texts", self.open_optional(tables::TEXTS)?.map_or(Ok(0), |t| t.len())?);
            let aux = self.open_optional(tables::AUX)?.map_or(Ok(0), |t| t.len())?;
            out.insert("aux (index manifests, embedding cache)", aux);
            Ok(out)
        })())
    }

    /// Visit every revision (of one namespace, or of all), in key order: by namespace, then
    /// record id, then revision. `replaced_at` is filled in.
    pub fn for_each_revision(
        &self,
        ns: Option<&Namespace>,
        mut f: impl FnMut(Record) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.ctx((|| {
            let t = self.txn.open_table(tables::REVISIONS)?;
            let iter = match ns {
                Some(n) => t.range(
                    (n.as_str(), 0u128, i64::MIN, 0u32)..=(n.as_str(), u128::MAX, i64::MAX, u32::MAX),
                )?,
                None => t.range::<(&str, u128, i64, u32)>(..)?,
            };
            let mut pending: Option<Record> = None;
            let mut ns_cache: Option<Namespace> = None;
            for r in iter {
                let (k, v) = r?;
                let (n, id, rec, rev) = k.value();
                if ns_cache.as_ref().is_none_or(|c| c.as_str() != n) {
                    ns_cache = Some(Namespace::new(n).map_err(|e| Error::Inconsistent {
                        namespace: n.to_string(),
                        detail: e.to_string(),
                    })?);
                }
                let Some(nsv) = ns_cache.as_ref() else { continue };
                let recorded = Timestamp::from_micros(rec);
                let record = record::decode_revision(nsv, RecordId::from_u128(id), rev, recorded, v.value())
                    .map_err(|e| Error::Codec { table: names::REVISIONS, source: e })?;
                if let Some(mut p) = pending.take() {
                    if p.id == record.id && p.namespace == record.namespace {
                        p.replaced_at = Some(recorded);
                    }
                    f(p)?;
                }
                pending = Some(record);
            }
            if let Some(p) = pending {
                f(p)?;
            }
            Ok(())
        })())
    }

    /// The first valid time after `after` at which a record of one of `kinds` (empty: any)
    /// starts or stops being visible in `ns`, as known now: until then, and until the next
    /// commit, `list(ns, as of t)` gives the same records for every `t` in between. Caches of
    /// the records valid "now" use it to know when they go stale without a commit (a
    /// future-dated record coming into force, an expiry).
    pub fn next_change(
        &self,
        ns: &Namespace,
        after: Timestamp,
        kinds: &[Kind],
    ) -> Result<Option<Timestamp>, Error> {
        self.ctx((|| {
            let events = self.txn.open_table(tables::EVENTS)?;
            let codes: Vec<u8> = kinds.iter().map(|k| k.code()).collect();
            let filter = (!codes.is_empty()).then_some(codes.as_slice());
            Ok(timeline::next_event_after(&events, ns.as_str(), after.as_micros(), i64::MAX - 1, filter)?
                .map(Timestamp::from_micros))
        })())
    }

    /// The commit log after `seq`: `(seq, transaction time, changed records)`.
    pub fn commits_after(&self, seq: u64) -> Result<Vec<CommitLogEntry>, Error> {
        self.ctx((|| {
            let mut rows: Vec<(u64, Vec<u8>)> = Vec::new();
            if let Some(t) = self.open_optional(tables::LOG)? {
                for r in t.range(seq.saturating_add(1)..)? {
                    let (k, v) = r?;
                    rows.push((k.value(), v.value().to_vec()));
                }
            } else {
                // A format-2 file opened read-only (not upgraded) keeps its log in the meta table.
                rows = write::format2_log(&self.txn.open_table(tables::META)?, seq.saturating_add(1))?;
            }
            let mut out = Vec::new();
            for (seq, bytes) in rows {
                let entry = write::decode_commit(&bytes)?;
                let changed = entry
                    .changed
                    .into_iter()
                    .filter_map(|(n, id)| Namespace::new(n).ok().map(|n| (n, RecordId::from_u128(id))))
                    .collect();
                out.push(CommitLogEntry { seq, tx: Timestamp::from_micros(entry.tx), changed });
            }
            Ok(out)
        })())
    }

    pub(crate) fn open_optional<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: redb::TableDefinition<K, V>,
    ) -> Result<Option<redb::ReadOnlyTable<K, V>>, Error> {
        // Files upgraded from format 1 by a read-only open lack the tables added since.
        match self.txn.open_table(def) {
            Ok(t) => Ok(Some(t)),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The lexical index's segments: format 10's blocks, or the rows of a format-9 file or
    /// the postings of a format-8 file (opened read-only, so not upgraded).
    pub(crate) fn segments(&self) -> Result<crate::lexical::Segments, Error> {
        use crate::lexical::Segments;
        if let Some(t) = self.open_optional(tables::SEGMENTS)? {
            return Ok(Segments::Blocks(t));
        }
        if let Some(t) = self.open_optional(tables::SEGMENTS_V9)? {
            return Ok(Segments::Rows(t));
        }
        Ok(self.open_optional(tables::SEGMENTS_V8)?.map_or(Segments::None, Segments::Legacy))
    }

    /// The vector spaces, by name.
    pub fn vector_spaces(&self) -> Result<Vec<VectorSpace>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::VECTOR_SPACES)? else { return Ok(Vec::new()) };
            let mut out = Vec::new();
            for r in t.iter()? {
                let (k, v) = r?;
                out.push(
                    vector::decode_space(k.value(), v.value())
                        .map_err(|e| Error::Codec { table: names::VECTOR_SPACES, source: e })?,
                );
            }
            Ok(out)
        })())
    }

    /// One vector space.
    pub fn vector_space(&self, name: &str) -> Result<Option<VectorSpace>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::VECTOR_SPACES)? else { return Ok(None) };
            t.get(name)?
                .map(|v| vector::decode_space(name, v.value()))
                .transpose()
                .map_err(|e| Error::Codec { table: names::VECTOR_SPACES, source: e })
        })())
    }

    /// Every vector of a record in a space, as `(from_rev, vector)` in revision order.
    pub fn vectors_of(
        &self,
        space: &str,
        ns: &Namespace,
        id: RecordId,
    ) -> Result<Vec<(u32, Vec<f32>)>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::VECTORS)? else { return Ok(Vec::new()) };
            let key = id.as_u128();
            let mut out = Vec::new();
            for r in t.range((space, ns.as_str(), key, 0u32)..=(space, ns.as_str(), key, u32::MAX))? {
                let (k, v) = r?;
                let mut vec = Vec::new();
                vector::decode_into(v.value(), &mut vec)
                    .map_err(|e| Error::Codec { table: names::VECTORS, source: e })?;
                out.push((k.value().3, vec));
            }
            Ok(out)
        })())
    }

    /// The vector serving revision `rev` of a record: the one written at the greatest
    /// `from_rev <= rev`. Returns `(from_rev, vector)`.
    pub fn vector_for(
        &self,
        space: &str,
        ns: &Namespace,
        id: RecordId,
        rev: u32,
    ) -> Result<Option<(u32, Vec<f32>)>, Error> {
        Ok(self.vectors_for(space, ns, &[(id, rev)])?.pop().flatten())
    }

    /// The vectors of many records, as [`Self::vector_for`] finds each (`None` where a
    /// record has none): the table is opened once, where a call per record opens it each
    /// time.
    pub fn vectors_for(
        &self,
        space: &str,
        ns: &Namespace,
        records: &[(RecordId, u32)],
    ) -> Result<Vec<Option<StoredVector>>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::VECTORS)? else { return Ok(vec![None; records.len()]) };
            let mut out = Vec::with_capacity(records.len());
            for &(id, rev) in records {
                let key = id.as_u128();
                let mut cursor = t.range((space, ns.as_str(), key, 0u32)..=(space, ns.as_str(), key, rev))?;
                let Some(r) = cursor.next_back() else {
                    out.push(None);
                    continue;
                };
                let (k, v) = r?;
                let mut vec = Vec::new();
                vector::decode_into(v.value(), &mut vec)
                    .map_err(|e| Error::Codec { table: names::VECTORS, source: e })?;
                out.push(Some((k.value().3, vec)));
            }
            Ok(out)
        })())
    }

    /// Visit every vector of a space (in one namespace, or all) in key order: by namespace,
    /// record id, then `from_rev`. The slice is only valid during the call.
    pub fn for_each_vector(
        &self,
        space: &str,
        ns: Option<&Namespace>,
        mut f: impl FnMut(&Namespace, RecordId, u32, &[f32]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::VECTORS)? else { return Ok(()) };
            let iter = match ns {
                Some(n) => {
                    t.range((space, n.as_str(), 0u128, 0u32)..=(space, n.as_str(), u128::MAX, u32::MAX))?
                }
                None => t.range((space, "", 0u128, 0u32)..=(space, "\u{10FFFF}", u128::MAX, u32::MAX))?,
            };
            let mut ns_cache: Option<Namespace> = None;
            let mut buf = Vec::new();
            for r in iter {
                let (k, v) = r?;
                let (sp, n, id, from_rev) = k.value();
                if sp != space {
                    continue;
                }
                if ns_cache.as_ref().is_none_or(|c| c.as_str() != n) {
                    ns_cache = Some(Namespace::new(n).map_err(|e| Error::Inconsistent {
                        namespace: n.to_string(),
                        detail: format!("stored vector under a bad namespace: {e}"),
                    })?);
                }
                vector::decode_into(v.value(), &mut buf)
                    .map_err(|e| Error::Codec { table: names::VECTORS, source: e })?;
                if let Some(n) = &ns_cache {
                    f(n, RecordId::from_u128(id), from_rev, &buf)?;
                }
            }
            Ok(())
        })())
    }

    /// How many of the namespace's texts are fresh (not yet merged into the posting lists; see
    /// [`crate::WriteOp::MergeTexts`]).
    pub fn fresh_texts(&self, ns: &Namespace) -> Result<u64, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::LEXSTATS)? else { return Ok(0) };
            Ok(t.get(ns.as_str())?.map_or(0, |v| crate::lexical::decode_stats(v.value()).fresh))
        })())
    }

    /// The `k` records whose text best matches `query` by BM25, among those the list query
    /// selects (kinds, tags, agent, task) as of its time. Records are matched by the text of
    /// the revision visible then; forgotten records are gone from the index.
    pub fn lexical_search(
        &self,
        ns: &Namespace,
        query: &str,
        filter: &ListQuery,
        k: usize,
    ) -> Result<Vec<crate::lexical::LexicalHit>, Error> {
        self.ctx((|| {
            let (Some(postings), Some(texts)) =
                (self.open_optional(tables::POSTINGS)?, self.open_optional(tables::TEXTS)?)
            else {
                return Ok(Vec::new());
            };
            let stats = match self.open_optional(tables::LEXSTATS)? {
                Some(t) => {
                    t.get(ns.as_str())?.map(|v| crate::lexical::decode_stats(v.value())).unwrap_or_default()
                }
                None => crate::lexical::LexStats::default(),
            };
            let fresh = self.open_optional(tables::FRESH)?;
            let resolve = |id: RecordId| -> Result<Option<Record>, Error> {
                Ok(self.get(ns, id, filter.as_of)?.filter(|r| filter.matches(r)))
            };
            let segments = self.segments()?;
            crate::lexical::search(
                &postings,
                &segments,
                &texts,
                fresh.as_ref(),
                stats,
                ns,
                query,
                crate::analyzer::Analyzer::for_format(self.format),
                k,
                &resolve,
            )
        })())
    }

    /// An auxiliary row (see [`crate::WriteOp::PutAux`]).
    pub fn aux(&self, key: &str) -> Result<Option<Vec<u8>>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::AUX)? else { return Ok(None) };
            Ok(t.get(key)?.map(|v| v.value().to_vec()))
        })())
    }

    /// The auxiliary rows whose keys start with `prefix`.
    pub fn aux_prefix(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::AUX)? else { return Ok(Vec::new()) };
            let mut out = Vec::new();
            for r in t.range(prefix..)? {
                let (k, v) = r?;
                if !k.value().starts_with(prefix) {
                    break;
                }
                out.push((k.value().to_string(), v.value().to_vec()));
            }
            Ok(out)
        })())
    }
}

/// The current rows of some kinds of a namespace, newest id first across the kinds: one cursor
/// per kind runs backwards from the kind's last key, and several are merged by id (most
/// namespaces hold few kinds, so the empty kinds are dropped first and a listing of one kind
/// is a plain backward scan). Cursors rather than ranges: redb finds both ends of a range, a
/// cursor only its start, and a listing of every kind starts one per kind.
struct CurrentRows<'t> {
    kinds: Vec<KindRows<'t>>,
}

/// One kind's current rows, read backwards: the row read next, and the cursor before it.
struct KindRows<'t> {
    /// The kind's code.
    kind: u8,
    head: CurrentRow<'t>,
    cursor: redb::Cursor<'t, &'static [u8], &'static [u8]>,
    /// The kind's lowest key: a key below it belongs to another kind.
    lo: Vec<u8>,
}

/// A current row: the record's id and the stored row.
type CurrentRow<'t> = (u128, redb::AccessGuard<'t, &'static [u8]>);
/// A current row with the kind of its key: `(id, kind, row)`.
type KindedRow<'t> = (u128, u8, redb::AccessGuard<'t, &'static [u8]>);

/// The id of a current row's key: its last 16 bytes.
fn current_key_id(key: &[u8]) -> Option<u128> {
    let start = key.len().checked_sub(16)?;
    key.get(start..).and_then(|b| b.try_into().ok()).map(u128::from_be_bytes)
}

fn bad_current_key() -> Error {
    Error::Codec {
        table: names::CURRENT,
        source: crate::error::CodecError::Decode { what: "current key", reason: "truncated".to_string() },
    }
}

/// The row before `cursor`'s position, if it still has a key of at least `lo`.
fn previous_row<'t>(
    cursor: &mut redb::Cursor<'t, &'static [u8], &'static [u8]>,
    lo: &[u8],
) -> Result<Option<CurrentRow<'t>>, Error> {
    match cursor.prev()? {
        Some((key, row)) if key.value() >= lo => {
            Ok(Some((current_key_id(key.value()).ok_or_else(bad_current_key)?, row)))
        }
        _ => Ok(None),
    }
}

impl<'t> CurrentRows<'t> {
    /// The rows of kinds `codes`, of ids below `before` if given.
    fn open(
        t: &'t redb::ReadOnlyTable<&'static [u8], &'static [u8]>,
        ns: &str,
        codes: &[u8],
        before: Option<RecordId>,
    ) -> Result<Self, Error> {
        let mut kinds = Vec::with_capacity(codes.len());
        for &c in codes {
            let (lo, hi) = tables::current_kind_range(ns, c);
            let end = before.map(|b| tables::current_key(ns, c, b.as_u128()));
            let bound = match &end {
                Some(e) => std::ops::Bound::Excluded(e.as_slice()),
                None => std::ops::Bound::Included(hi.as_slice()),
            };
            let mut cursor = t.upper_bound(bound)?;
            if let Some(head) = previous_row(&mut cursor, &lo)? {
                kinds.push(KindRows { kind: c, head, cursor, lo });
            }
        }
        Ok(CurrentRows { kinds })
    }

    /// The next row, `(id, kind of its key, row)`.
    fn next(&mut self) -> Result<Option<KindedRow<'t>>, Error> {
        // The kind whose next row has the highest id.
        let Some(i) = self.kinds.iter().enumerate().max_by_key(|(_, k)| k.head.0).map(|(i, _)| i) else {
            return Ok(None);
        };
        let Some(kind) = self.kinds.get_mut(i) else { return Ok(None) };
        let code = kind.kind;
        let (id, row) = match previous_row(&mut kind.cursor, &kind.lo)? {
            Some(row) => std::mem::replace(&mut kind.head, row),
            None => self.kinds.swap_remove(i).head,
        };
        Ok(Some((id, code, row)))
    }
}
