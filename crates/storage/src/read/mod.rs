//! Reads: a [`Snapshot`] is a consistent view of the database at one commit.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::ReadTransaction;

use crate::error::Error;
use crate::format::{self, MetaState};
use crate::id::{Namespace, RecordId};
use crate::kind::Kind;
use crate::record::{self, Record};
use crate::tables::{self, names};
use crate::time::{Clock, Timestamp};
use crate::write::{self};

mod current;
mod list;
mod scan;
mod vectors;
use current::*;

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

/// A test a record must pass besides a [`ListQuery`]'s own filters, plugged in by the caller
/// (mnemon's `where` filters over metadata): every access path that reads records for a query
/// applies it where it reads them (listings, the lexical search, the filtered vector search),
/// so that a filtered search or listing finds as many records as pass, not fewer.
pub trait RecordTest: Send + Sync + std::fmt::Debug {
    /// Whether `record` (as read at the query's time) passes.
    fn keeps(&self, record: &Record) -> bool;
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
    /// Only records that pass this test too.
    pub test: Option<Arc<dyn RecordTest>>,
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

    /// Only records that pass `test` too.
    pub fn test(mut self, test: Arc<dyn RecordTest>) -> Self {
        self.test = Some(test);
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
            && self.test.as_ref().is_none_or(|t| t.keeps(r))
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
    /// What each change did, in the order the commit made them (one per entry of `changed`).
    pub changes: Vec<LogChange>,
}

/// What one change of a commit did to a record (see [`CommitLogEntry::changes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogChange {
    /// The record's namespace.
    pub namespace: Namespace,
    /// The record.
    pub id: RecordId,
    /// Its kind (`None` in entries written before format 16).
    pub kind: Option<crate::Kind>,
    /// What happened to it.
    pub op: ChangeOp,
    /// The revision written (for a forgetting, the latest one erased; for a vector, the one
    /// it attaches to; 0 before format 16).
    pub rev: u32,
    /// When: the revision's transaction time, or the forgetting's. Never less than an earlier
    /// change's, so the log is ordered by it.
    pub tx: Timestamp,
}

/// What a change did (see [`LogChange`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChangeOp {
    /// A revision was written by this operation.
    Wrote(crate::record::Op),
    /// Every revision was erased.
    Forgot,
    /// A vector was stored for the record (its revisions did not change).
    Vector,
    /// An entry written before format 16, which did not say.
    Unrecorded,
}

/// A problem found by [`Snapshot::verify`].
pub type Problem = String;

/// Records as of one time, read from one opened table (see [`Snapshot::records_at`]).
pub struct RecordsAt<'s> {
    snap: &'s Snapshot,
    revisions: redb::ReadOnlyTable<(&'static str, u128, i64, u32), &'static [u8]>,
    valid: i64,
    known: i64,
}

impl RecordsAt<'_> {
    /// The record as valid and known at the time; `None` if it was not visible then
    /// ([`Snapshot::get`]).
    pub fn get(&self, ns: &Namespace, id: RecordId) -> Result<Option<Record>, Error> {
        self.snap.ctx((|| {
            let r = write::revision_at(&self.revisions, ns, id, self.known)?;
            match r.filter(|r| r.is_visible_at(Timestamp::from_micros(self.valid))) {
                Some(r) => Ok(Some(write::as_valid_at(&self.revisions, r, self.valid)?)),
                None => Ok(None),
            }
        })())
    }
}

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
        if self.format < format::FormatVersion::EndedByEnd.number() {
            return Ok(None);
        }
        self.open_optional(tables::ENDED)
    }

    /// A read's error with the file's path, damage recorded for the handle.
    pub(crate) fn ctx<T>(&self, r: Result<T, Error>) -> Result<T, Error> {
        r.map_err(|e| {
            let e = e.with_path(&self.path);
            if e.is_damage() {
                self.damage.note(&e.to_string());
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
        self.records_at(as_of)?.get(ns, id)
    }

    /// Records as of `as_of` from one opened table, for a read that resolves many of them
    /// (a search's hits): [`Self::get`] without opening the table for each.
    pub fn records_at(&self, as_of: AsOf) -> Result<RecordsAt<'_>, Error> {
        let (valid, known) = self.resolve(as_of);
        let revisions = self.ctx(self.txn.open_table(tables::REVISIONS).map_err(Error::from))?;
        Ok(RecordsAt { snap: self, revisions, valid, known })
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
}

impl Snapshot {
    /// An auxiliary row (see [`crate::WriteOp::PutAux`]).
    pub fn aux(&self, key: &str) -> Result<Option<Vec<u8>>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::aux_table(key))? else { return Ok(None) };
            Ok(t.get(key)?.map(|v| v.value().to_vec()))
        })())
    }

    /// The auxiliary rows whose keys start with `prefix` (those under `auth/` only for a
    /// prefix under it).
    pub fn aux_prefix(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::aux_table(prefix))? else { return Ok(Vec::new()) };
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
