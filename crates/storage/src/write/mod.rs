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

use crate::body::Body;
use crate::codec;
use crate::error::{Error, InputError};
use crate::id::{Namespace, RecordId};
use crate::record::{self, Envelope, Record};
use crate::tables::{Deferred, LazyTable, names};
use crate::time::Timestamp;
use crate::timeline::TimelineWriter;

mod apply;
mod plan;
mod wire;
pub(crate) use apply::*;
pub(crate) use plan::*;
pub use wire::{decode_job, encode_job};

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
#[derive(Clone, Debug, PartialEq)]
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
    /// Check it as the store will when it is written (the fields its kind requires, the
    /// envelope's ranges and tags), without writing: for a caller that must refuse bad input
    /// before it writes anything, as an import does.
    pub fn check(&self) -> Result<(), InputError> {
        self.body.validate()?;
        self.envelope.clone().validate()
    }

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
#[derive(Clone, Debug, PartialEq)]
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
#[derive(Clone, Debug, PartialEq)]
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
    ///
    /// `rev`, when set, is the revision whose text was embedded: it must still be the
    /// record's latest, or the job fails with [`Error::RevisionConflict`] (a vector embedded
    /// in the background must not attach to a revision written meanwhile, whose text it does
    /// not describe).
    PutVector {
        /// The namespace.
        namespace: Namespace,
        /// The record.
        id: RecordId,
        /// The revision the vector describes, if the caller read one (see above).
        rev: Option<u32>,
        /// The vector space.
        space: String,
        /// The components.
        vector: Vec<f32>,
    },
    /// Set (`Some`) or delete (`None`) an auxiliary row (for the layers above storage: index
    /// manifests, the embedder record, a server's tokens, a replica's place in its log). Keys
    /// must start with `index/`, `embed/`, `app/`, `auth/` (kept in a table of their own) or
    /// `replica/`.
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
    /// A new revision (`old` is the previous latest, if any), with the identity keys of both
    /// (computed once, when planned).
    Write { old: Option<Box<Record>>, new: Box<Record>, old_key: Option<String>, new_key: Option<String> },
    /// Erase the record (at transaction time `tx`).
    Forget { namespace: Namespace, id: RecordId, tx: i64 },
    /// Store a vector (already normalised and checked against its space) for a record of kind
    /// code `kind`.
    Vector { namespace: Namespace, id: RecordId, kind: u8, space: String, from_rev: u32, vector: Vec<f32> },
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
/// Commit log entries before format 16: the changed records only.
const COMMIT_VERSION_1: u8 = 1;
/// Since format 16: what each change was ([`LoggedChange`]).
const COMMIT_VERSION: u8 = 2;

/// A commit log entry as formats 3 to 15 stored it (in `mnemon.log`).
#[derive(Serialize, Deserialize)]
struct CommitEntryV1 {
    tx: i64,
    changed: Vec<(String, u128)>,
}

/// The stored commit log entry (in `mnemon.log`, entry version 2).
#[derive(Serialize, Deserialize)]
pub(crate) struct CommitEntry {
    pub(crate) tx: i64,
    pub(crate) changes: Vec<LoggedChange>,
}

/// What one change of a commit did to a record, as the commit log keeps it (format 16).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct LoggedChange {
    pub(crate) ns: String,
    pub(crate) id: u128,
    /// The record's kind code.
    pub(crate) kind: u8,
    /// [`LoggedChange::FORGET`], [`LoggedChange::VECTOR`], or the revision's operation code.
    pub(crate) what: u8,
    /// The revision written (for a forgetting, the latest one erased; for a vector, the one it
    /// attaches to).
    pub(crate) rev: u32,
    /// The transaction time of the change (the revision's `recorded_at`, or the forgetting's).
    pub(crate) tx: i64,
}

impl LoggedChange {
    /// `what` of a forgetting.
    pub(crate) const FORGET: u8 = 100;
    /// `what` of a vector stored for a record.
    pub(crate) const VECTOR: u8 = 101;
    /// `what` of a change an entry of version 1 recorded (which did not say).
    pub(crate) const UNRECORDED: u8 = 255;
}

/// A commit log entry of either version (a version-1 entry's changes say only which record).
pub(crate) fn decode_commit(bytes: &[u8]) -> Result<CommitEntry, Error> {
    let err = |e| Error::Codec { table: names::LOG, source: e };
    if bytes.first() == Some(&COMMIT_VERSION_1) {
        let v1: CommitEntryV1 =
            codec::decode_versioned("commit entry", COMMIT_VERSION_1, bytes).map_err(err)?;
        let changes = v1
            .changed
            .into_iter()
            .map(|(ns, id)| LoggedChange {
                ns,
                id,
                kind: u8::MAX,
                what: LoggedChange::UNRECORDED,
                rev: 0,
                tx: v1.tx,
            })
            .collect();
        return Ok(CommitEntry { tx: v1.tx, changes });
    }
    codec::decode_versioned("commit entry", COMMIT_VERSION, bytes).map_err(err)
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

pub(crate) use crate::tables::RevKey;

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
    pub(crate) auth: LazyTable<'txn, &'static str, &'static [u8]>,
    pub(crate) lexical: crate::lexical::LexicalWriter<'txn>,
    /// Namespaces known to exist in this commit.
    pub(crate) known_namespaces: std::collections::HashSet<String>,
    /// Per namespace, an id at least as great as every stored record's (the greatest when
    /// first read, raised by each revision written since): a new record's id above it needs
    /// no lookup to know it is not taken (UUIDv7 ids grow with time, so new ones mostly are).
    pub(crate) max_ids: std::cell::RefCell<HashMap<String, u128>>,
    /// `mnemon.counts`, and this commit's changes to it (see [`crate::counts`]).
    pub(crate) counts: crate::counts::Counts<'txn>,
    /// The time `CURRENT` was swept through before this commit (see `format/mod.rs`).
    pub(crate) swept_through: i64,
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

/// `rec` as it stood at valid time `valid`. A supersession marks the replaced decision's
/// status `superseded` in the revision that closes its valid interval, but until the
/// interval's end the decision was what it was: viewed at a valid time before the end, it
/// shows the status of its latest earlier revision that was not superseded.
pub(crate) fn as_valid_at(
    revisions: &impl ReadableTable<RevKey, &'static [u8]>,
    mut rec: Record,
    valid: i64,
) -> Result<Record, Error> {
    let superseded_later =
        rec.superseded_by.is_some() && rec.valid_until.is_some_and(|u| valid < u.as_micros());
    if !superseded_later {
        return Ok(rec);
    }
    let Body::Decision(d) = &rec.body else { return Ok(rec) };
    if d.status != crate::body::DecisionStatus::Superseded {
        return Ok(rec);
    }
    let mut known = rec.recorded_at.as_micros();
    while let Some(earlier) = revision_at(revisions, &rec.namespace, rec.id, known.saturating_sub(1))? {
        if let Body::Decision(e) = &earlier.body
            && e.status != crate::body::DecisionStatus::Superseded
        {
            let status = e.status;
            if let Body::Decision(d) = &mut rec.body {
                d.status = status;
            }
            break;
        }
        if earlier.recorded_at.as_micros() >= known {
            break;
        }
        known = earlier.recorded_at.as_micros();
    }
    Ok(rec)
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
