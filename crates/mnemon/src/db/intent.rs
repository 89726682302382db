//! Writes planned before they are committed: what an operation asks for ([`Intent`]), turned
//! into storage operations by the same rules as [`Ns`]'s writes (domain rules, carried-over
//! fields, the text embedded in the same commit), so that many of them can go in one commit
//! ([`Db::write_intents`], the batch operation).

use std::collections::HashSet;

use mnemon_storage::{Namespace, NewRecord, OnConflict, Outcome, RecordId, Timestamp, WriteOp};
use serde_json::Value;

use super::{Db, Ns};
use crate::error::{Result, invalid};

/// A write an operation asks for, in a namespace.
#[derive(Clone, Debug)]
pub(crate) enum Intent {
    /// A new record (find-or-create by its identity, as [`Ns::insert`]).
    Insert(NewRecord),
    /// A JSON merge patch over a record (as [`Ns::revise_json`]).
    Revise { id: RecordId, patch: Value },
    /// A record replaced by a new one (as [`Ns::supersede_with`]).
    Supersede { old: RecordId, new: NewRecord },
    /// A record's validity ended.
    Retire { id: RecordId, at: Option<Timestamp> },
    /// A record's expiry set.
    Expire { id: RecordId, at: Option<Timestamp> },
    /// Every revision of a record erased.
    Erase { id: RecordId },
}

/// An intent planned: the storage operation to commit (none when a live record already holds
/// a new record's identity: `existing`), the operations embedding its text, or the text still
/// to embed (with the batch's others, in one call of the embedder).
pub(crate) struct Planned {
    op: Option<WriteOp>,
    existing: Option<RecordId>,
    embed: Vec<WriteOp>,
    text: Option<(RecordId, String)>,
}

impl Ns {
    /// Plan `intent` against the database as it is now; a new record's text is left to embed.
    pub(crate) fn plan(&self, intent: Intent) -> Result<Planned> {
        let (op, embed) = match intent {
            Intent::Insert(mut record) => {
                record.namespace = self.ns.clone();
                // The storage's own checks, here too: a batch's bad record is then named by
                // its place (the commit would refuse it without saying which it was).
                record.body.validate().map_err(|e| crate::Error::Storage(e.into()))?;
                record.envelope.validate().map_err(|e| crate::Error::Storage(e.into()))?;
                self.check_rules(&record)?;
                if record.on_conflict == OnConflict::ReturnExisting
                    && let Some(key) = self.identity_key(&record)
                    && let Some(id) = self.db.snapshot()?.identity(&self.ns, record.body.kind(), &key)?
                {
                    return Ok(Planned { op: None, existing: Some(id), embed: Vec::new(), text: None });
                }
                let text = Some((record.id, record.body.text()));
                return Ok(Planned {
                    op: Some(WriteOp::Insert(record)),
                    existing: None,
                    embed: Vec::new(),
                    text,
                });
            }
            Intent::Revise { id, patch } => self.plan_revise_json(id, &patch)?,
            Intent::Supersede { old, mut new } => {
                new.body.validate().map_err(|e| crate::Error::Storage(e.into()))?;
                new.envelope.validate().map_err(|e| crate::Error::Storage(e.into()))?;
                let new = self.checked_successor(old, new)?;
                let text = Some((new.id, new.body.text()));
                return Ok(Planned {
                    op: Some(WriteOp::Supersede { old, new }),
                    existing: None,
                    embed: Vec::new(),
                    text,
                });
            }
            Intent::Retire { id, at } => (WriteOp::Retire { namespace: self.ns.clone(), id, at }, Vec::new()),
            Intent::Expire { id, at } => (WriteOp::Expire { namespace: self.ns.clone(), id, at }, Vec::new()),
            Intent::Erase { id } => (WriteOp::Forget { namespace: self.ns.clone(), id }, Vec::new()),
        };
        Ok(Planned { op: Some(op), existing: None, embed, text: None })
    }
}

/// The record an intent writes (for a new record, none that exists yet).
fn target(intent: &Intent) -> Option<RecordId> {
    match intent {
        Intent::Insert(_) => None,
        Intent::Revise { id, .. }
        | Intent::Retire { id, .. }
        | Intent::Expire { id, .. }
        | Intent::Erase { id } => Some(*id),
        Intent::Supersede { old, .. } => Some(*old),
    }
}

impl Db {
    /// Commit `intents` (each in its namespace) in one durable commit, all or none: their
    /// outcomes in order, and the commit's sequence number. Each is planned as the single
    /// write would be; a record written by two of them is refused (plan them in two batches),
    /// and one changed by another writer between the planning and the commit makes the whole
    /// batch a conflict.
    pub(crate) fn write_intents(&self, intents: Vec<(Ns, Intent)>) -> Result<(Vec<Outcome>, u64)> {
        let mut seen = HashSet::new();
        for (ns, intent) in &intents {
            if let Some(id) = target(intent)
                && !seen.insert((ns.name().clone(), id))
            {
                return Err(invalid(format!("record {id} is written twice in one batch")));
            }
        }
        let mut planned = Vec::with_capacity(intents.len());
        // The new texts of each namespace, embedded in one call per namespace.
        let mut texts: Vec<(Namespace, Vec<(RecordId, String)>)> = Vec::new();
        for (index, (ns, intent)) in intents.into_iter().enumerate() {
            let mut p = ns.plan(intent).map_err(|e| crate::Error::InBatch { index, source: Box::new(e) })?;
            if let Some(t) = p.text.take() {
                match texts.iter_mut().find(|(n, _)| n == ns.name()) {
                    Some((_, v)) => v.push(t),
                    None => texts.push((ns.name().clone(), vec![t])),
                }
            }
            planned.push(p);
        }
        let mut ops: Vec<WriteOp> = planned.iter().filter_map(|p| p.op.clone()).collect();
        let written = ops.len();
        ops.extend(planned.iter_mut().flat_map(|p| std::mem::take(&mut p.embed)));
        for (ns, items) in &texts {
            ops.extend(self.embed_ops(ns, items)?);
        }
        let receipt = if ops.is_empty() { None } else { Some(self.write(ops)?) };
        let commit = match &receipt {
            Some(r) => r.commit_seq,
            None => self.snapshot()?.meta().commit_seq,
        };
        let mut outcomes = receipt.map(|r| r.outcomes).unwrap_or_default().into_iter().take(written);
        let mut out = Vec::with_capacity(planned.len());
        for p in planned {
            match (p.existing, p.op) {
                (Some(id), _) => out.push(Outcome::Existing { id }),
                (None, _) => {
                    out.push(outcomes.next().ok_or_else(|| invalid("the writer returned too few outcomes"))?)
                }
            }
        }
        Ok((out, commit))
    }
}
