//! Reading a snapshot whole: namespaces and their counters, current counts, table sizes, every revision, the commit log.

use crate::error::Error;
use crate::id::{Namespace, RecordId};
use crate::kind::Kind;
use crate::record::{self, Record};
use crate::tables::{self, names};
use crate::time::Timestamp;
use crate::timeline;
use crate::write::{self, NamespaceCounters};
use redb::{ReadableTable, ReadableTableMetadata};
use std::collections::BTreeMap;

use super::*;

impl Snapshot {
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
            // Revisions read per namespace, to compare with the counts at the end.
            let mut read: BTreeMap<String, u64> = BTreeMap::new();
            for r in iter {
                let (k, v) = r?;
                let (n, id, rec, rev) = k.value();
                match read.get_mut(n) {
                    Some(c) => *c += 1,
                    None => {
                        read.insert(n.to_string(), 1);
                    }
                }
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
            if let Some(counted) = crate::counts::revisions(&self.txn)? {
                for (n, c) in
                    counted.iter().filter(|(n, _)| ns.is_none_or(|want| want.as_str() == n.as_str()))
                {
                    let got = read.get(n).copied().unwrap_or(0);
                    if got != *c {
                        return Err(crate::counts::mismatch(n, "its revisions", got, *c));
                    }
                }
                if let Some((n, got)) = read.iter().find(|(n, _)| !counted.contains_key(*n)) {
                    return Err(crate::counts::mismatch(n, "its revisions", *got, 0));
                }
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
        self.commits_after_at_most(seq, usize::MAX)
    }

    /// The place in the commit log just before the first commit whose transaction time is at
    /// or after `tx` (a binary search: a commit's time is never less than an earlier one's,
    /// and never less than any of its changes'): reading the log after it misses no change
    /// at or after `tx`.
    pub fn commit_before(&self, tx: Timestamp) -> Result<u64, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::LOG)? else { return Ok(0) };
            let time_at = |seq: u64| -> Result<Option<(u64, i64)>, Error> {
                match t.range(seq..)?.next() {
                    Some(r) => {
                        let (k, v) = r?;
                        Ok(Some((k.value(), write::decode_commit(v.value())?.tx)))
                    }
                    None => Ok(None),
                }
            };
            // The answer lies in [lo, hi]: every commit at or before `lo` is before `tx`.
            let (mut lo, mut hi) = (0u64, self.meta.commit_seq);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                match time_at(mid)? {
                    Some((seq, t)) if t < tx.as_micros() => lo = seq.max(mid),
                    _ => hi = mid - 1,
                }
            }
            Ok(lo)
        })())
    }

    /// The latest `limit` commits of the log, newest first.
    pub fn latest_commits(&self, limit: usize) -> Result<Vec<CommitLogEntry>, Error> {
        let after = self.meta.commit_seq.saturating_sub(u64::try_from(limit).unwrap_or(u64::MAX));
        let mut commits = self.commits_after_at_most(after, limit)?;
        commits.reverse();
        Ok(commits)
    }

    /// [`Self::commits_after`], at most `limit` commits.
    pub fn commits_after_at_most(&self, seq: u64, limit: usize) -> Result<Vec<CommitLogEntry>, Error> {
        self.ctx((|| {
            let mut rows: Vec<(u64, Vec<u8>)> = Vec::new();
            if let Some(t) = self.open_optional(tables::LOG)? {
                for r in t.range(seq.saturating_add(1)..)?.take(limit) {
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
                let changes: Vec<LogChange> = entry
                    .changes
                    .into_iter()
                    .filter_map(|c| {
                        let namespace = Namespace::new(c.ns).ok()?;
                        let op = match c.what {
                            write::LoggedChange::FORGET => ChangeOp::Forgot,
                            write::LoggedChange::VECTOR => ChangeOp::Vector,
                            code => crate::record::Op::from_code(code)
                                .map_or(ChangeOp::Unrecorded, ChangeOp::Wrote),
                        };
                        Some(LogChange {
                            namespace,
                            id: RecordId::from_u128(c.id),
                            kind: Kind::from_code(c.kind),
                            op,
                            rev: c.rev,
                            tx: Timestamp::from_micros(c.tx),
                        })
                    })
                    .collect();
                let changed = changes.iter().map(|c| (c.namespace.clone(), c.id)).collect();
                out.push(CommitLogEntry { seq, tx: Timestamp::from_micros(entry.tx), changed, changes });
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

    /// The lexical index's segments: format 10's blocks (with format 15's text numbers), or
    /// the rows of a format-9 file or the postings of a format-8 file (opened read-only, so
    /// not upgraded).
    pub(crate) fn segments(&self) -> Result<crate::lexical::Segments, Error> {
        use crate::lexical::Segments;
        if let Some(t) = self.open_optional(tables::SEGMENTS)? {
            return Ok(Segments::Blocks(t, self.open_optional(tables::SEGMENT_TEXTS)?));
        }
        if let Some(t) = self.open_optional(tables::SEGMENTS_V9)? {
            return Ok(Segments::Rows(t));
        }
        Ok(self.open_optional(tables::SEGMENTS_V8)?.map_or(Segments::None, Segments::Legacy))
    }
}
