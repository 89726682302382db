//! Planning one job: every operation checked against the transaction and the job's earlier operations, and turned into changes.

use crate::body::{Body, DecisionStatus};
use crate::error::{Error, InputError};
use crate::id::{Namespace, RecordId};
use crate::record::{self, Op, Record};
use crate::tables::names;
use crate::time::Timestamp;
use crate::vector;
use redb::ReadableTable;
use std::collections::HashMap;

use super::*;

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

pub(super) fn user_time(t: Timestamp) -> Result<Timestamp, InputError> {
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
        let new_key = new.identity();
        self.push_keyed(old, new, new_key);
    }

    /// [`Self::push`] with the new revision's identity key already computed.
    fn push_keyed(&mut self, old: Option<Record>, new: Record, new_key: Option<String>) {
        let old_key = old.as_ref().and_then(Record::identity);
        if self.track {
            let ns = new.namespace.clone();
            let kind = new.kind().code();
            if let (Some(o), Some(k)) = (&old, &old_key)
                && o.holds_identity()
            {
                self.identity.insert((ns.clone(), kind, k.clone()), None);
            }
            if let Some(k) = &new_key
                && new.holds_identity()
            {
                self.identity.insert((ns.clone(), kind, k.clone()), Some(new.id));
            }
            self.records.insert((ns, new.id), Some(new.clone()));
        }
        self.changes.push(Change::Write { old: old.map(Box::new), new: Box::new(new), old_key, new_key });
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
            WriteOp::PutVector { namespace, id, rev, space, vector } => {
                self.put_vector(namespace, id, rev, space, &vector)
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
        rev: Option<u32>,
        space: String,
        v: &[f32],
    ) -> Result<(), Error> {
        vector::check_space_name(&space)?;
        let rec = self.require(&namespace, id)?;
        if let Some(expected) = rev
            && expected != rec.rev
        {
            return Err(Error::RevisionConflict { id, expected, found: rec.rev });
        }
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
        let kind = rec.kind().code();
        self.changes.push(Change::Vector { namespace, id, kind, space, from_rev: rec.rev, vector });
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
        let identity = rec.identity();
        if rec.holds_identity()
            && let Some(key) = identity.clone()
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
        self.push_keyed(None, rec, identity);
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
        self.changes.push(Change::Forget { namespace, id, tx: self.tx.as_micros() });
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
