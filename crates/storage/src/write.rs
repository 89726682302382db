//! Write operations: validated and planned per job, then applied to every table.
//!
//! A commit carries several jobs (group commit). Each job is *planned* first: every operation
//! is checked against the transaction's state plus the job's own earlier operations (an
//! overlay), and turned into [`Change`]s. Only a job whose whole plan succeeded is applied, so
//! a bad operation rejects its job and nothing of it is written, while the other jobs of the
//! commit go ahead. Applying a change cannot fail except on storage errors, which abort the
//! whole commit.

use std::collections::HashMap;

use redb::{ReadableTable, Table};
use serde::{Deserialize, Serialize};

use crate::body::{Body, DecisionStatus};
use crate::codec;
use crate::error::{Error, InputError};
use crate::id::{Namespace, RecordId};
use crate::record::{self, Envelope, Op, Record, Visible};
use crate::tables::{Deferred, LazyTable, names};
use crate::time::Timestamp;
use crate::timeline::TimelineWriter;
use crate::vector;

/// How long a new record lives.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub enum Expiry {
    /// By importance, for the kinds of scoped memory ([`crate::Kind::has_ttl`]): 1, 7, 30, 90
    /// days for importance 1 to 4, counted from the recording (or from `valid_from` if later);
    /// permanent for 5, unset, and the other kinds.
    #[default]
    Default,
    /// Never expires.
    Never,
    /// Expires at this time.
    At(Timestamp),
}

/// What an insert does when a live record of the same kind already holds its identity key.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub enum OnConflict {
    /// Fail with [`Error::IdentityConflict`].
    #[default]
    Error,
    /// Write nothing and return the existing record's id.
    ReturnExisting,
    /// Supersede the existing record with the new one.
    Supersede,
}

/// A record to create.
#[derive(Clone, Debug)]
pub struct NewRecord {
    /// The namespace.
    pub namespace: Namespace,
    /// The id (a fresh UUIDv7 unless given).
    pub id: RecordId,
    /// The body.
    pub body: Body,
    /// Shared fields.
    pub envelope: Envelope,
    /// Valid from (default: the commit's transaction time).
    pub valid_from: Option<Timestamp>,
    /// Valid until (default: open).
    pub valid_until: Option<Timestamp>,
    /// Expiry.
    pub expiry: Expiry,
    /// Identity conflict policy.
    pub on_conflict: OnConflict,
}

impl NewRecord {
    /// A new record with a fresh id and defaults for everything else.
    pub fn new(namespace: Namespace, body: impl Into<Body>) -> Self {
        NewRecord {
            namespace,
            id: RecordId::new(),
            body: body.into(),
            envelope: Envelope::default(),
            valid_from: None,
            valid_until: None,
            expiry: Expiry::Default,
            on_conflict: OnConflict::Error,
        }
    }
}

/// A correction: a new revision of an existing record. Fields left `None` keep their value.
#[derive(Clone, Debug)]
pub struct Revise {
    /// The namespace.
    pub namespace: Namespace,
    /// The record.
    pub id: RecordId,
    /// Fail with [`Error::RevisionConflict`] unless the latest revision is this one.
    pub expected_rev: Option<u32>,
    /// New body (same kind).
    pub body: Option<Body>,
    /// New shared fields.
    pub envelope: Option<Envelope>,
    /// New valid-from.
    pub valid_from: Option<Timestamp>,
    /// New valid-until (`Some(None)` reopens).
    pub valid_until: Option<Option<Timestamp>>,
    /// New expiry (`Some(None)` removes it).
    pub expires_at: Option<Option<Timestamp>>,
}

impl Revise {
    /// A revision that changes nothing yet.
    pub fn new(namespace: Namespace, id: RecordId) -> Self {
        Revise {
            namespace,
            id,
            expected_rev: None,
            body: None,
            envelope: None,
            valid_from: None,
            valid_until: None,
            expires_at: None,
        }
    }
}

/// One operation of a write batch.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum WriteOp {
    /// Create a record.
    Insert(NewRecord),
    /// Correct a record.
    Revise(Revise),
    /// Close a record's valid interval at `at` (default: the commit time).
    Retire {
        /// The namespace.
        namespace: Namespace,
        /// The record.
        id: RecordId,
        /// When it stops being valid.
        at: Option<Timestamp>,
    },
    /// Set a record's expiry to `at` (default: the commit time).
    Expire {
        /// The namespace.
        namespace: Namespace,
        /// The record.
        id: RecordId,
        /// When it expires.
        at: Option<Timestamp>,
    },
    /// Replace `old` by a new record, from the new record's `valid_from` (default: commit time).
    Supersede {
        /// The record being replaced.
        old: RecordId,
        /// Its successor (same namespace and kind).
        new: NewRecord,
    },
    /// End `absorbed` at `at` (default: the commit time) as superseded by `into`, an existing
    /// live record of the same kind (a merge of duplicates: nothing is erased, the absorbed
    /// record's chain leads to the survivor and time travel still sees it).
    MergeInto {
        /// The namespace.
        namespace: Namespace,
        /// The record that ends.
        absorbed: RecordId,
        /// The record that stays.
        into: RecordId,
        /// When.
        at: Option<Timestamp>,
    },
    /// Erase every revision of a record (the one destructive operation).
    Forget {
        /// The namespace.
        namespace: Namespace,
        /// The record.
        id: RecordId,
    },
    /// Write one exported revision as it was (lossless import). Revisions of a record must
    /// come in order, starting at 0; one already stored identically is skipped.
    Restore(Box<Record>),
    /// Attach an embedding vector to a record, in vector space `space` (the embedding model's
    /// id). It is validated, normalised to unit length and serves the record's latest
    /// revision (counting earlier operations of the same job) and later ones until replaced.
    /// The first vector of a space fixes its dimension.
    PutVector {
        /// The namespace.
        namespace: Namespace,
        /// The record.
        id: RecordId,
        /// The vector space.
        space: String,
        /// The components.
        vector: Vec<f32>,
    },
    /// Set (`Some`) or delete (`None`) an auxiliary row (for the layers above storage: index
    /// manifests, the embedder record). Keys must start with `index/`, `embed/` or `app/`.
    PutAux {
        /// The key.
        key: String,
        /// The value.
        value: Option<Vec<u8>>,
    },
    /// Move the namespace's fresh texts into its posting lists now (see `lexical/`), rather
    /// than in the commit that brings it to [`crate::FRESH_LIMIT`] fresh texts: maintenance
    /// for a quiet moment, so that no caller's write pays for the merge. Changes no record and
    /// nothing any query returns.
    MergeTexts {
        /// The namespace.
        namespace: Namespace,
    },
}

/// What an operation did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Outcome {
    /// A revision was written.
    Written {
        /// The record.
        id: RecordId,
        /// Its new revision number.
        rev: u32,
    },
    /// `old` was superseded by the new record `new`.
    Superseded {
        /// The replaced record.
        old: RecordId,
        /// The new record.
        new: RecordId,
    },
    /// An insert found a live record with the same identity and returned it.
    Existing {
        /// The existing record.
        id: RecordId,
    },
    /// Every revision of the record was erased.
    Forgotten {
        /// The record.
        id: RecordId,
        /// How many revisions were erased.
        revisions: u32,
    },
    /// A restored revision was already stored, identically.
    Unchanged {
        /// The record.
        id: RecordId,
    },
    /// A vector was stored for a record.
    VectorStored {
        /// The record.
        id: RecordId,
        /// The revision it attaches to.
        rev: u32,
    },
    /// An auxiliary row was written or deleted.
    AuxWritten,
    /// A namespace's fresh texts were merged into its posting lists.
    TextsMerged,
}

impl Outcome {
    /// The id a caller usually wants: the new record, the existing one, or the one written
    /// (the nil id for [`Outcome::AuxWritten`] and [`Outcome::TextsMerged`], which concern no
    /// record).
    pub fn id(&self) -> RecordId {
        match *self {
            Outcome::Written { id, .. }
            | Outcome::Existing { id }
            | Outcome::Forgotten { id, .. }
            | Outcome::Unchanged { id }
            | Outcome::VectorStored { id, .. } => id,
            Outcome::Superseded { new, .. } => new,
            Outcome::AuxWritten | Outcome::TextsMerged => RecordId::from_u128(0),
        }
    }
}

/// A planned change to one record.
#[derive(Debug)]
pub(crate) enum Change {
    /// A new revision (`old` is the previous latest, if any).
    Write { old: Option<Box<Record>>, new: Box<Record> },
    /// Erase the record.
    Forget { namespace: Namespace, id: RecordId },
    /// Store a vector (already normalised and checked against its space).
    Vector { namespace: Namespace, id: RecordId, space: String, from_rev: u32, vector: Vec<f32> },
    /// Register a vector space.
    Space { name: String, dimension: u32 },
    /// Set or delete an auxiliary row.
    Aux { key: String, value: Option<Vec<u8>> },
    /// Merge a namespace's fresh texts into its posting lists.
    MergeTexts { namespace: Namespace },
}

/// Counters per namespace (computed by [`crate::Snapshot::namespace_counters`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceCounters {
    /// Records (not forgotten).
    pub records: u64,
    /// Revisions stored.
    pub revisions: u64,
}

const NAMESPACE_VERSION: u8 = 1;
const COMMIT_VERSION: u8 = 1;

/// The stored commit log entry (in `mnemon.log`).
#[derive(Serialize, Deserialize)]
pub(crate) struct CommitEntry {
    pub(crate) tx: i64,
    pub(crate) changed: Vec<(String, u128)>,
}

pub(crate) fn decode_commit(bytes: &[u8]) -> Result<CommitEntry, Error> {
    codec::decode_versioned("commit entry", COMMIT_VERSION, bytes)
        .map_err(|e| Error::Codec { table: names::LOG, source: e })
}

/// Where formats 1 and 2 kept a commit log entry in the meta table.
pub(crate) fn format2_commit_key(seq: u64) -> String {
    format!("log/{seq:020}")
}

/// The commit log entries a format-1 or -2 meta table holds, from `seq` on: `(seq, entry)`.
pub(crate) fn format2_log(
    meta: &impl redb::ReadableTable<&'static str, &'static [u8]>,
    seq: u64,
) -> Result<Vec<(u64, Vec<u8>)>, Error> {
    let mut out = Vec::new();
    for r in meta.range(format2_commit_key(seq).as_str()..="log/~")? {
        let (k, v) = r?;
        let key = k.value();
        let seq = key.strip_prefix("log/").and_then(|n| n.parse::<u64>().ok()).ok_or_else(|| {
            Error::Inconsistent {
                namespace: String::new(),
                detail: format!("malformed commit log key {key:?}"),
            }
        })?;
        out.push((seq, v.value().to_vec()));
    }
    Ok(out)
}

type RevKey = (&'static str, u128, i64, u32);

/// The tables a commit writes.
pub(crate) struct WriteTables<'txn> {
    pub(crate) revisions: Table<'txn, RevKey, &'static [u8]>,
    pub(crate) current: Deferred<'txn, &'static [u8], &'static [u8]>,
    pub(crate) current_ends: Deferred<'txn, (i64, &'static str, u8, u128), ()>,
    /// Written only for records whose latest revision has or had an end (see `ended.rs`).
    pub(crate) ended: LazyTable<'txn, crate::ended::EndedKey, &'static [u8]>,
    pub(crate) identity: LazyTable<'txn, (&'static str, u8, &'static str), u128>,
    pub(crate) namespaces: LazyTable<'txn, &'static str, &'static [u8]>,
    pub(crate) timeline: TimelineWriter<'txn, 'txn>,
    pub(crate) vectors: LazyTable<'txn, (&'static str, &'static str, u128, u32), &'static [u8]>,
    pub(crate) vector_spaces: LazyTable<'txn, &'static str, &'static [u8]>,
    pub(crate) aux: LazyTable<'txn, &'static str, &'static [u8]>,
    pub(crate) lexical: crate::lexical::LexicalWriter<'txn>,
    /// Namespaces known to exist in this commit.
    pub(crate) known_namespaces: std::collections::HashSet<String>,
    /// Per namespace, an id at least as great as every stored record's (the greatest when
    /// first read, raised by each revision written since): a new record's id above it needs
    /// no lookup to know it is not taken (UUIDv7 ids grow with time, so new ones mostly are).
    pub(crate) max_ids: std::cell::RefCell<HashMap<String, u128>>,
}

impl WriteTables<'_> {
    /// Whether a record id is free in a namespace's stored revisions.
    fn id_is_free(&self, ns: &Namespace, id: RecordId) -> Result<bool, Error> {
        let max = self.max_ids.borrow().get(ns.as_str()).copied();
        let max = match max {
            Some(m) => m,
            None => {
                let last = self
                    .revisions
                    .range(
                        (ns.as_str(), 0u128, i64::MIN, 0u32)..=(ns.as_str(), u128::MAX, i64::MAX, u32::MAX),
                    )?
                    .next_back()
                    .transpose()?
                    .map_or(0, |(k, _)| k.value().1);
                self.max_ids.borrow_mut().insert(ns.as_str().to_string(), last);
                last
            }
        };
        if id.as_u128() > max {
            return Ok(true);
        }
        Ok(latest_stored(&self.revisions, ns, id)?.is_none())
    }
}

/// The latest revision of a record as stored (not counting the overlay).
pub(crate) fn latest_stored(
    revisions: &impl ReadableTable<RevKey, &'static [u8]>,
    ns: &Namespace,
    id: RecordId,
) -> Result<Option<Record>, Error> {
    revision_at(revisions, ns, id, i64::MAX)
}

/// The revision of a record current at transaction time `k`: one seek of a cursor to the
/// greatest key at or below `(ns, id, k, max)`.
pub(crate) fn revision_at(
    revisions: &impl ReadableTable<RevKey, &'static [u8]>,
    ns: &Namespace,
    id: RecordId,
    k: i64,
) -> Result<Option<Record>, Error> {
    revision_at_with(revisions, ns, id, k, |r| r)
}

/// [`revision_at`], handing the record to `finish` (see `record::decode_revision_with`).
#[inline(always)]
pub(crate) fn revision_at_with<T>(
    revisions: &impl ReadableTable<RevKey, &'static [u8]>,
    ns: &Namespace,
    id: RecordId,
    k: i64,
    finish: impl FnOnce(Record) -> T,
) -> Result<Option<T>, Error> {
    let key = id.as_u128();
    let bound = (ns.as_str(), key, k, u32::MAX);
    let mut cursor = revisions.upper_bound(std::ops::Bound::Included(&bound))?;
    let Some((kg, vg)) = cursor.peek_prev()? else { return Ok(None) };
    let (n, found, rec, rev) = kg.value();
    if n != ns.as_str() || found != key {
        return Ok(None);
    }
    record::decode_revision_with(ns, id, rev, Timestamp::from_micros(rec), vg.value(), finish)
        .map(Some)
        .map_err(|e| Error::Codec { table: names::REVISIONS, source: e })
}

/// Plans one job against the transaction plus its own earlier operations.
pub(crate) struct Planner<'a, 'txn> {
    tables: &'a WriteTables<'txn>,
    tx: Timestamp,
    records: HashMap<(Namespace, RecordId), Option<Record>>,
    identity: HashMap<(Namespace, u8, String), Option<RecordId>>,
    spaces: HashMap<String, u32>,
    pub(crate) changes: Vec<Change>,
    pub(crate) outcomes: Vec<Outcome>,
    /// Whether later operations of the job may read this one's results (not for one-op jobs).
    track: bool,
}

fn user_time(t: Timestamp) -> Result<Timestamp, InputError> {
    if t.is_user_range() { Ok(t) } else { Err(InputError::TimeOutOfRange { time: t }) }
}

impl<'a, 'txn> Planner<'a, 'txn> {
    pub(crate) fn new(tables: &'a WriteTables<'txn>, tx: Timestamp, ops: usize) -> Self {
        Planner {
            tables,
            tx,
            records: HashMap::new(),
            identity: HashMap::new(),
            spaces: HashMap::new(),
            changes: Vec::with_capacity(ops),
            outcomes: Vec::with_capacity(ops),
            track: ops > 1,
        }
    }

    fn latest(&self, ns: &Namespace, id: RecordId) -> Result<Option<Record>, Error> {
        if let Some(r) = self.records.get(&(ns.clone(), id)) {
            return Ok(r.clone());
        }
        latest_stored(&self.tables.revisions, ns, id)
    }

    /// Whether a new record may take `id` (no revision of it, planned or stored).
    fn id_is_free(&self, ns: &Namespace, id: RecordId) -> Result<bool, Error> {
        if let Some(r) = self.records.get(&(ns.clone(), id)) {
            return Ok(r.is_none());
        }
        self.tables.id_is_free(ns, id)
    }

    fn require(&self, ns: &Namespace, id: RecordId) -> Result<Record, Error> {
        self.latest(ns, id)?.ok_or_else(|| Error::NotFound { namespace: ns.clone(), id })
    }

    fn identity_holder(&self, ns: &Namespace, kind: u8, key: &str) -> Result<Option<RecordId>, Error> {
        if let Some(h) = self.identity.get(&(ns.clone(), kind, key.to_string())) {
            return Ok(*h);
        }
        Ok(self.tables.identity.get()?.get((ns.as_str(), kind, key))?.map(|v| RecordId::from_u128(v.value())))
    }

    /// Record a planned revision and keep the overlay in step.
    fn push(&mut self, old: Option<Record>, new: Record) {
        if !self.track {
            self.changes.push(Change::Write { old: old.map(Box::new), new: Box::new(new) });
            return;
        }
        let ns = new.namespace.clone();
        let kind = new.kind().code();
        if let Some(o) = &old
            && o.holds_identity()
            && let Some(k) = o.identity()
        {
            self.identity.insert((ns.clone(), kind, k), None);
        }
        if new.holds_identity()
            && let Some(k) = new.identity()
        {
            self.identity.insert((ns.clone(), kind, k), Some(new.id));
        }
        self.records.insert((ns, new.id), Some(new.clone()));
        self.changes.push(Change::Write { old: old.map(Box::new), new: Box::new(new) });
    }

    fn next_revision(&self, old: &Record, op: Op) -> Record {
        Record { rev: old.rev + 1, recorded_at: self.tx, replaced_at: None, op, ..old.clone() }
    }

    /// Plan one operation.
    pub(crate) fn plan(&mut self, op: WriteOp) -> Result<(), Error> {
        match op {
            WriteOp::Insert(n) => self.insert(n, None),
            WriteOp::Supersede { old, new } => self.supersede(old, new),
            WriteOp::Revise(r) => self.revise(r),
            WriteOp::Retire { namespace, id, at } => self.retire(&namespace, id, at),
            WriteOp::Expire { namespace, id, at } => self.expire(&namespace, id, at),
            WriteOp::MergeInto { namespace, absorbed, into, at } => {
                self.merge_into(&namespace, absorbed, into, at)
            }
            WriteOp::Forget { namespace, id } => self.forget(namespace, id),
            WriteOp::Restore(r) => self.restore(*r),
            WriteOp::PutVector { namespace, id, space, vector } => {
                self.put_vector(namespace, id, space, &vector)
            }
            WriteOp::PutAux { key, value } => {
                check_aux_key(&key)?;
                self.changes.push(Change::Aux { key, value });
                self.outcomes.push(Outcome::AuxWritten);
                Ok(())
            }
            WriteOp::MergeTexts { namespace } => {
                self.changes.push(Change::MergeTexts { namespace });
                self.outcomes.push(Outcome::TextsMerged);
                Ok(())
            }
        }
    }

    fn put_vector(
        &mut self,
        namespace: Namespace,
        id: RecordId,
        space: String,
        v: &[f32],
    ) -> Result<(), Error> {
        vector::check_space_name(&space)?;
        let rec = self.require(&namespace, id)?;
        let known = match self.spaces.get(&space) {
            Some(&d) => Some(d),
            None => match self.tables.vector_spaces.get()?.get(space.as_str())? {
                Some(row) => Some(
                    vector::decode_space(&space, row.value())
                        .map_err(|e| Error::Codec { table: names::VECTOR_SPACES, source: e })?
                        .dimension,
                ),
                None => None,
            },
        };
        match known {
            Some(d) if d as usize != v.len() => {
                return Err(InputError::DimensionMismatch { space, expected: d, got: v.len() }.into());
            }
            Some(_) => {}
            None => {
                let dimension = u32::try_from(v.len()).map_err(|_| InputError::BadVector {
                    reason: format!("dimension {} is too large", v.len()),
                })?;
                let _ = vector::normalise(v)?;
                self.spaces.insert(space.clone(), dimension);
                self.changes.push(Change::Space { name: space.clone(), dimension });
            }
        }
        let vector = vector::normalise(v)?;
        self.changes.push(Change::Vector { namespace, id, space, from_rev: rec.rev, vector });
        self.outcomes.push(Outcome::VectorStored { id, rev: rec.rev });
        Ok(())
    }

    /// Build the first revision of a new record (validated), without recording it.
    fn build_new(&self, n: NewRecord, op: Op, supersedes: Option<RecordId>) -> Result<Record, Error> {
        let NewRecord { namespace, id, body, mut envelope, valid_from, valid_until, expiry, on_conflict: _ } =
            n;
        body.validate()?;
        envelope.validate()?;
        let valid_from = match valid_from {
            Some(t) => user_time(t)?,
            None => self.tx,
        };
        if let Some(u) = valid_until {
            user_time(u)?;
            if u <= valid_from {
                return Err(InputError::BadInterval { from: valid_from, until: u }.into());
            }
        }
        let expires_at = match expiry {
            // The time to live runs from when the record is recorded (or from when it comes
            // into force, if later): a back-dated entry is never expired as it is added.
            Expiry::Default => envelope.default_expiry(body.kind(), valid_from.max(self.tx)),
            Expiry::Never => None,
            Expiry::At(t) => {
                user_time(t)?;
                if t <= valid_from {
                    return Err(InputError::Invalid(format!(
                        "expires_at {t} must be after valid_from {valid_from}"
                    ))
                    .into());
                }
                Some(t)
            }
        };
        Ok(Record {
            namespace,
            id,
            rev: 0,
            recorded_at: self.tx,
            replaced_at: None,
            op,
            valid_from,
            valid_until,
            expires_at,
            supersedes,
            superseded_by: None,
            envelope,
            body,
        })
    }

    fn insert(&mut self, n: NewRecord, supersedes: Option<RecordId>) -> Result<(), Error> {
        let on_conflict = n.on_conflict;
        let op = if supersedes.is_some() { Op::Supersede } else { Op::Insert };
        let rec = self.build_new(n, op, supersedes)?;
        if !self.id_is_free(&rec.namespace, rec.id)? {
            return Err(Error::DuplicateId { namespace: rec.namespace.clone(), id: rec.id });
        }
        if rec.holds_identity()
            && let Some(key) = rec.identity()
            && let Some(existing) = self.identity_holder(&rec.namespace, rec.kind().code(), &key)?
            && existing != rec.id
        {
            match on_conflict {
                OnConflict::Error => {
                    return Err(Error::IdentityConflict {
                        namespace: rec.namespace.clone(),
                        kind: rec.kind(),
                        key,
                        existing,
                    });
                }
                OnConflict::ReturnExisting => {
                    self.outcomes.push(Outcome::Existing { id: existing });
                    return Ok(());
                }
                OnConflict::Supersede => return self.supersede_record(existing, rec),
            }
        }
        let id = rec.id;
        self.push(None, rec);
        self.outcomes.push(Outcome::Written { id, rev: 0 });
        Ok(())
    }

    fn supersede(&mut self, old: RecordId, new: NewRecord) -> Result<(), Error> {
        let rec = self.build_new(new, Op::Supersede, Some(old))?;
        if !self.id_is_free(&rec.namespace, rec.id)? {
            return Err(Error::DuplicateId { namespace: rec.namespace.clone(), id: rec.id });
        }
        self.supersede_record(old, rec)
    }

    /// `new` is fully built (rev 0); replace `old_id` by it from `new.valid_from`.
    fn supersede_record(&mut self, old_id: RecordId, mut new: Record) -> Result<(), Error> {
        let ns = new.namespace.clone();
        let old = self.require(&ns, old_id)?;
        if old.kind() != new.kind() {
            return Err(InputError::KindMismatch { id: old_id, expected: old.kind(), got: new.kind() }.into());
        }
        if let Some(by) = old.superseded_by {
            return Err(Error::AlreadySuperseded { id: old_id, by });
        }
        let at = new.valid_from;
        if at < old.valid_from {
            return Err(Error::BeforeValid { id: old_id, at, valid_from: old.valid_from });
        }
        if let Some(ended) = old.valid_until
            && ended <= at
        {
            return Err(Error::AlreadyEnded { id: old_id, at, ended });
        }
        new.supersedes = Some(old_id);
        new.op = Op::Supersede;
        let mut replaced = self.next_revision(&old, Op::Superseded);
        replaced.valid_until = Some(at);
        replaced.superseded_by = Some(new.id);
        if let Body::Decision(d) = &mut replaced.body {
            d.status = DecisionStatus::Superseded;
        }
        // The successor may take over the old record's identity key.
        if new.holds_identity()
            && let Some(key) = new.identity()
            && let Some(holder) = self.identity_holder(&ns, new.kind().code(), &key)?
            && holder != old_id
            && holder != new.id
        {
            return Err(Error::IdentityConflict { namespace: ns, kind: new.kind(), key, existing: holder });
        }
        let new_id = new.id;
        self.push(Some(old), replaced);
        self.push(None, new);
        self.outcomes.push(Outcome::Superseded { old: old_id, new: new_id });
        Ok(())
    }

    fn revise(&mut self, r: Revise) -> Result<(), Error> {
        let old = self.require(&r.namespace, r.id)?;
        if let Some(expected) = r.expected_rev
            && expected != old.rev
        {
            return Err(Error::RevisionConflict { id: r.id, expected, found: old.rev });
        }
        let mut new = self.next_revision(&old, Op::Revise);
        if let Some(body) = r.body {
            if body.kind() != old.kind() {
                return Err(
                    InputError::KindMismatch { id: r.id, expected: old.kind(), got: body.kind() }.into()
                );
            }
            body.validate()?;
            new.body = body;
        }
        if let Some(mut env) = r.envelope {
            env.validate()?;
            new.envelope = env;
        }
        if let Some(from) = r.valid_from {
            let from = user_time(from)?;
            if from != old.valid_from && old.supersedes.is_some() {
                return Err(Error::ChainedValidTime { id: r.id });
            }
            new.valid_from = from;
        }
        if let Some(until) = r.valid_until {
            if let Some(u) = until {
                user_time(u)?;
            }
            if until != old.valid_until && old.superseded_by.is_some() {
                return Err(Error::ChainedValidTime { id: r.id });
            }
            new.valid_until = until;
        }
        if let Some(exp) = r.expires_at {
            if let Some(e) = exp {
                user_time(e)?;
            }
            new.expires_at = exp;
        }
        if let Some(u) = new.valid_until
            && u <= new.valid_from
        {
            return Err(InputError::BadInterval { from: new.valid_from, until: u }.into());
        }
        if new.holds_identity()
            && let Some(key) = new.identity()
            && let Some(holder) = self.identity_holder(&new.namespace, new.kind().code(), &key)?
            && holder != new.id
        {
            return Err(Error::IdentityConflict {
                namespace: new.namespace.clone(),
                kind: new.kind(),
                key,
                existing: holder,
            });
        }
        let (id, rev) = (new.id, new.rev);
        self.push(Some(old), new);
        self.outcomes.push(Outcome::Written { id, rev });
        Ok(())
    }

    fn retire(&mut self, ns: &Namespace, id: RecordId, at: Option<Timestamp>) -> Result<(), Error> {
        let old = self.require(ns, id)?;
        let at = match at {
            Some(t) => user_time(t)?,
            None => self.tx,
        };
        if let Some(by) = old.superseded_by {
            return Err(Error::AlreadySuperseded { id, by });
        }
        if at < old.valid_from {
            return Err(Error::BeforeValid { id, at, valid_from: old.valid_from });
        }
        if let Some(ended) = old.valid_until
            && ended <= at
        {
            return Err(Error::AlreadyEnded { id, at, ended });
        }
        if at == old.valid_from {
            return Err(InputError::BadInterval { from: old.valid_from, until: at }.into());
        }
        let mut new = self.next_revision(&old, Op::Retire);
        new.valid_until = Some(at);
        let rev = new.rev;
        self.push(Some(old), new);
        self.outcomes.push(Outcome::Written { id, rev });
        Ok(())
    }

    fn merge_into(
        &mut self,
        ns: &Namespace,
        absorbed: RecordId,
        into: RecordId,
        at: Option<Timestamp>,
    ) -> Result<(), Error> {
        let keep = self.require(ns, into)?;
        let old = self.require(ns, absorbed)?;
        if absorbed == into {
            return Err(InputError::SelfMerge { id: into }.into());
        }
        if keep.kind() != old.kind() {
            return Err(InputError::KindMismatch { id: into, expected: keep.kind(), got: old.kind() }.into());
        }
        if let Some(by) = keep.superseded_by {
            return Err(Error::AlreadySuperseded { id: into, by });
        }
        if let Some(ended) = keep.valid_until {
            return Err(Error::AlreadyEnded { id: into, at: at.unwrap_or(self.tx), ended });
        }
        self.retire(ns, absorbed, at)?;
        // The retire above planned the absorbed record's last revision: mark it superseded.
        if let Some(Change::Write { new, .. }) = self.changes.last_mut() {
            new.op = Op::Superseded;
            new.superseded_by = Some(into);
        }
        Ok(())
    }

    fn expire(&mut self, ns: &Namespace, id: RecordId, at: Option<Timestamp>) -> Result<(), Error> {
        let old = self.require(ns, id)?;
        let at = match at {
            Some(t) => user_time(t)?,
            None => self.tx,
        };
        if at <= old.valid_from {
            return Err(Error::BeforeValid { id, at, valid_from: old.valid_from });
        }
        for ended in [old.valid_until, old.expires_at].into_iter().flatten() {
            if ended <= at {
                return Err(Error::AlreadyEnded { id, at, ended });
            }
        }
        let mut new = self.next_revision(&old, Op::Expire);
        new.expires_at = Some(at);
        let rev = new.rev;
        self.push(Some(old), new);
        self.outcomes.push(Outcome::Written { id, rev });
        Ok(())
    }

    fn forget(&mut self, namespace: Namespace, id: RecordId) -> Result<(), Error> {
        let old = self.require(&namespace, id)?;
        if old.holds_identity()
            && let Some(k) = old.identity()
        {
            self.identity.insert((namespace.clone(), old.kind().code(), k), None);
        }
        self.records.insert((namespace.clone(), id), None);
        self.changes.push(Change::Forget { namespace, id });
        self.outcomes.push(Outcome::Forgotten { id, revisions: old.rev + 1 });
        Ok(())
    }

    fn restore(&mut self, mut rec: Record) -> Result<(), Error> {
        rec.body.validate()?;
        rec.envelope.validate()?;
        rec.replaced_at = None;
        let (id, rev) = (rec.id, rec.rev);
        let mismatch = |reason: &str| Error::RestoreMismatch { id, rev, reason: reason.to_string() };
        match self.latest(&rec.namespace, id)? {
            None if rev != 0 => return Err(mismatch("the history of a new record must start at revision 0")),
            None => {}
            Some(latest) if rev <= latest.rev => {
                let stored = self.stored_revision(&rec.namespace, id, rev)?;
                return match stored {
                    Some(s) if s == rec => {
                        self.outcomes.push(Outcome::Unchanged { id });
                        Ok(())
                    }
                    _ => Err(mismatch("a different revision with this number is already stored")),
                };
            }
            Some(latest) if rev != latest.rev + 1 => {
                return Err(mismatch(&format!("the stored history ends at revision {}", latest.rev)));
            }
            Some(latest) if rec.recorded_at < latest.recorded_at => {
                return Err(mismatch("it was recorded before the revision it follows"));
            }
            Some(latest) => {
                if latest.kind() != rec.kind() {
                    return Err(
                        InputError::KindMismatch { id, expected: latest.kind(), got: rec.kind() }.into()
                    );
                }
                self.check_restored_identity(&rec)?;
                self.push(Some(latest), rec);
                self.outcomes.push(Outcome::Written { id, rev });
                return Ok(());
            }
        }
        self.check_restored_identity(&rec)?;
        self.push(None, rec);
        self.outcomes.push(Outcome::Written { id, rev });
        Ok(())
    }

    fn check_restored_identity(&self, rec: &Record) -> Result<(), Error> {
        if rec.holds_identity()
            && let Some(key) = rec.identity()
            && let Some(holder) = self.identity_holder(&rec.namespace, rec.kind().code(), &key)?
            && holder != rec.id
        {
            return Err(Error::IdentityConflict {
                namespace: rec.namespace.clone(),
                kind: rec.kind(),
                key,
                existing: holder,
            });
        }
        Ok(())
    }

    fn stored_revision(&self, ns: &Namespace, id: RecordId, rev: u32) -> Result<Option<Record>, Error> {
        let key = id.as_u128();
        for r in self
            .tables
            .revisions
            .range((ns.as_str(), key, i64::MIN, 0u32)..=(ns.as_str(), key, i64::MAX, u32::MAX))?
        {
            let (k, v) = r?;
            let (_, _, rec, r_no) = k.value();
            if r_no == rev {
                return record::decode_revision(ns, id, rev, Timestamp::from_micros(rec), v.value())
                    .map(Some)
                    .map_err(|e| Error::Codec { table: names::REVISIONS, source: e });
            }
        }
        Ok(None)
    }
}

impl WriteTables<'_> {
    /// Register a namespace on its first write (and give it its first checkpoint).
    fn register_namespace(&mut self, ns: &str, tx: i64) -> Result<(), Error> {
        if self.known_namespaces.contains(ns) {
            return Ok(());
        }
        if self.namespaces.get()?.get(ns)?.is_none() {
            let bytes = codec::encode_versioned(NAMESPACE_VERSION, &tx)
                .map_err(|e| Error::Codec { table: names::NAMESPACES, source: e })?;
            self.namespaces.get_mut()?.insert(ns, bytes.as_slice())?;
            self.timeline.ensure_namespace(ns)?;
        }
        self.known_namespaces.insert(ns.to_string());
        Ok(())
    }

    /// End of a commit at transaction time `now`: maintain the timeline and sweep the current
    /// table.
    pub(crate) fn finish(&mut self, now: i64) -> Result<(), Error> {
        self.lexical.flush()?;
        self.timeline.finish(now)?;
        self.sweep(now)?;
        // The waiting inserts (see `Deferred`): the commit must not go without them.
        self.current.flush()?;
        self.current_ends.flush()?;
        Ok(())
    }

    fn remove_current(&mut self, rec: &Record) -> Result<(), Error> {
        let ns = rec.namespace.as_str();
        let kind = rec.kind().code();
        let id = rec.id.as_u128();
        self.current.table()?.remove(crate::tables::current_key(ns, kind, id).as_slice())?;
        if let Some(v) = rec.visible()
            && !v.is_open()
        {
            self.current_ends.table()?.remove((v.until.as_micros(), ns, kind, id))?;
        }
        Ok(())
    }

    /// Remove the `ENDED` row of what was a record's latest revision, if it may have one: its
    /// visibility ended by `now` (rows with a later end are still current, never in `ENDED`).
    fn remove_ended(&mut self, rec: &Record, now: i64) -> Result<(), Error> {
        if let Some((level, until)) = crate::ended::key_of(rec)
            && until <= now
        {
            let key = crate::ended::key(rec.namespace.as_str(), level, until, rec.id.as_u128());
            self.ended.get_mut()?.remove(key.as_slice())?;
        }
        Ok(())
    }

    fn release_identity(&mut self, rec: &Record) -> Result<(), Error> {
        if rec.holds_identity()
            && let Some(k) = rec.identity()
        {
            let key = (rec.namespace.as_str(), rec.kind().code(), k.as_str());
            let holder = self.identity.get()?.get(key)?.map(|v| v.value());
            if holder == Some(rec.id.as_u128()) {
                self.identity.get_mut()?.remove(key)?;
            }
        }
        Ok(())
    }

    /// Apply one planned change. `commit_tx` is the commit's transaction time (restored
    /// revisions carry older ones).
    pub(crate) fn apply(&mut self, change: Change, commit_tx: i64) -> Result<Option<(String, u128)>, Error> {
        match change {
            Change::Write { old, new } => {
                let ns = new.namespace.as_str();
                let id = new.id.as_u128();
                let kind = new.kind().code();
                let bytes = record::encode_revision(&new)
                    .map_err(|e| Error::Codec { table: names::REVISIONS, source: e })?;
                let new_vis = new.visible();
                self.revisions.insert((ns, id, new.recorded_at.as_micros(), new.rev), bytes.as_slice())?;
                if let Some(max) = self.max_ids.get_mut().get_mut(ns) {
                    *max = (*max).max(id);
                }
                self.lexical.write(old.as_deref(), &new)?;
                if old.is_none() {
                    self.register_namespace(ns, commit_tx)?;
                }
                let old_vis: Option<Visible> = old.as_ref().and_then(|o| o.visible());
                self.timeline.change(
                    ns,
                    id,
                    kind,
                    old_vis,
                    new_vis,
                    new.recorded_at.as_micros(),
                    old.is_none(),
                )?;
                if let Some(o) = &old {
                    self.remove_current(o)?;
                    self.release_identity(o)?;
                    self.remove_ended(o, commit_tx)?;
                }
                if let Some(v) = new_vis
                    && v.until.as_micros() > commit_tx
                {
                    let row = record::current_row(&new, v, &bytes);
                    self.current
                        .insert(crate::tables::current_key(ns, kind, id).as_slice(), row.as_slice())?;
                    if !v.is_open() {
                        self.current_ends.insert((v.until.as_micros(), ns, kind, id), ())?;
                    }
                } else if let Some((level, until, row)) = crate::ended::row_of(&new, &bytes) {
                    // Visible, but no longer by the end of this commit: straight to `ENDED` (a
                    // record with a later end gets there when the sweep takes its current row).
                    self.ended
                        .get_mut()?
                        .insert(crate::ended::key(ns, level, until, id).as_slice(), row.as_slice())?;
                }
                if new.holds_identity()
                    && let Some(k) = new.identity()
                {
                    self.identity.get_mut()?.insert((ns, kind, k.as_str()), id)?;
                }
                Ok(Some((ns.to_string(), id)))
            }
            Change::Forget { namespace, id } => {
                let ns = namespace.as_str();
                let key = id.as_u128();
                let mut all: Vec<Record> = Vec::new();
                let mut keys: Vec<(i64, u32)> = Vec::new();
                for r in self.revisions.range((ns, key, i64::MIN, 0u32)..=(ns, key, i64::MAX, u32::MAX))? {
                    let (k, v) = r?;
                    let (_, _, rec, rev) = k.value();
                    keys.push((rec, rev));
                    all.push(
                        record::decode_revision(&namespace, id, rev, Timestamp::from_micros(rec), v.value())
                            .map_err(|e| Error::Codec { table: names::REVISIONS, source: e })?,
                    );
                }
                for (rec, rev) in &keys {
                    self.revisions.remove((ns, key, *rec, *rev))?;
                }
                let intervals: Vec<Visible> = all.iter().filter_map(Record::visible).collect();
                self.timeline.forget(ns, key, &intervals)?;
                if let Some(latest) = all.last() {
                    self.remove_current(latest)?;
                    self.release_identity(latest)?;
                    self.remove_ended(latest, i64::MAX)?;
                }
                self.forget_vectors(ns, key)?;
                self.lexical.forget(ns, key, &all)?;
                Ok(Some((ns.to_string(), key)))
            }
            Change::Vector { namespace, id, space, from_rev, vector } => {
                let bytes = vector::encode(&vector);
                let (ns, key) = (namespace.as_str(), id.as_u128());
                self.vectors.get_mut()?.insert((space.as_str(), ns, key, from_rev), bytes.as_slice())?;
                Ok(Some((ns.to_string(), key)))
            }
            Change::Space { name, dimension } => {
                let row = vector::encode_space(dimension, Timestamp::from_micros(commit_tx));
                self.vector_spaces.get_mut()?.insert(name.as_str(), row.as_slice())?;
                Ok(None)
            }
            Change::MergeTexts { namespace } => {
                self.lexical.request_merge(namespace.as_str());
                Ok(None)
            }
            Change::Aux { key, value } => {
                match value {
                    Some(v) => self.aux.get_mut()?.insert(key.as_str(), v.as_slice())?,
                    None => self.aux.get_mut()?.remove(key.as_str())?,
                };
                Ok(None)
            }
        }
    }

    /// Erase every vector of a forgotten record, in every space.
    fn forget_vectors(&mut self, ns: &str, id: u128) -> Result<(), Error> {
        let mut spaces = Vec::new();
        for r in self.vector_spaces.get()?.iter()? {
            spaces.push(r?.0.value().to_string());
        }
        for space in &spaces {
            let mut revs = Vec::new();
            for r in self
                .vectors
                .get()?
                .range((space.as_str(), ns, id, 0u32)..=(space.as_str(), ns, id, u32::MAX))?
            {
                revs.push(r?.0.value().3);
            }
            for rev in revs {
                self.vectors.get_mut()?.remove((space.as_str(), ns, id, rev))?;
            }
        }
        Ok(())
    }

    /// Remove `CURRENT` rows whose visibility ended at or before `through`.
    fn sweep(&mut self, through: i64) -> Result<usize, Error> {
        let mut expired: Vec<(i64, String, u8, u128)> = Vec::new();
        let end = through.saturating_add(1);
        for r in self.current_ends.table()?.range((i64::MIN, "", 0u8, 0u128)..(end, "", 0u8, 0u128))? {
            let (k, _) = r?;
            let (t, ns, kind, id) = k.value();
            expired.push((t, ns.to_string(), kind, id));
        }
        for (t, ns, kind, id) in &expired {
            self.current_ends.table()?.remove((*t, ns.as_str(), *kind, *id))?;
            // The swept row moves to `ENDED`, where the past as known now finds it.
            let row = self.current.table()?.remove(crate::tables::current_key(ns, *kind, *id).as_slice())?;
            if let Some(row) = row {
                let (key, value) = crate::ended::row_from_current(ns, *kind, *id, row.value())?;
                drop(row);
                self.ended.get_mut()?.insert(key.as_slice(), value.as_slice())?;
            }
        }
        Ok(expired.len())
    }
}

/// Auxiliary keys belong to named owners above storage.
fn check_aux_key(key: &str) -> Result<(), InputError> {
    let bad = |reason| InputError::BadAuxKey { key: key.to_string(), reason };
    if !["index/", "embed/", "app/"].iter().any(|p| key.starts_with(p)) {
        return Err(bad("keys start with index/, embed/ or app/"));
    }
    if key.len() > 1024 {
        return Err(bad("it is longer than 1024 bytes"));
    }
    Ok(())
}

/// Append the commit log entry.
pub(crate) fn log_commit(
    log: &mut Table<u64, &'static [u8]>,
    seq: u64,
    tx: i64,
    changed: Vec<(String, u128)>,
) -> Result<(), Error> {
    let bytes = codec::encode_versioned(COMMIT_VERSION, &CommitEntry { tx, changed })
        .map_err(|e| Error::Codec { table: names::LOG, source: e })?;
    log.insert(seq, bytes.as_slice())?;
    Ok(())
}

/// The texts of the records a job creates (`(id, text)`: inserts and supersessions' new
/// records), which its caller can tokenize before queueing it (see
/// [`crate::lexical::prepare`]).
pub(crate) fn new_texts(ops: &[WriteOp]) -> impl Iterator<Item = (u128, String)> + '_ {
    ops.iter().filter_map(|op| match op {
        WriteOp::Insert(n) | WriteOp::Supersede { new: n, .. } => Some((n.id.as_u128(), n.body.text())),
        _ => None,
    })
}
