//! Decisions: their status, supersession, history and links to tasks.

use crate::db::Ns;
use crate::error::Result;
use mnemon_storage::body::{Decision, DecisionStatus};
use mnemon_storage::{AsOf, Body, NewRecord, Record, RecordId};

use super::*;

/// Decisions of one namespace; see [`Ns::decisions`].
#[derive(Clone, Copy)]
pub struct Decisions<'a> {
    pub(super) ns: &'a Ns,
}

impl Decisions<'_> {
    /// Record a decision; returns its id.
    pub fn create(&self, d: Decision) -> Result<RecordId> {
        self.ns.add(d)
    }

    /// Set the status (proposed, accepted, rejected, deprecated). `superseded` is only set by
    /// [`Decisions::supersede`].
    pub fn set_status(&self, id: RecordId, status: DecisionStatus) -> Result<Record> {
        if status == DecisionStatus::Superseded {
            return Err(rule(id, "a decision becomes superseded by superseding it with its replacement"));
        }
        self.ns.edit::<Decision>(id, |d, _| {
            if d.status == DecisionStatus::Superseded {
                return Err(rule(id, "the decision is superseded; change its replacement instead"));
            }
            d.status = status;
            Ok(())
        })
    }

    /// Replace `old` by `new` (from now): the new decision lists the old one among its related
    /// decisions, the old one ends with status `superseded` and points to the new one.
    pub fn supersede(&self, old: RecordId, new: Decision) -> Result<RecordId> {
        self.supersede_with(old, NewRecord::new(self.ns.name().clone(), new))
    }

    /// [`Self::supersede`] with a fully described new decision (its valid time, tags,
    /// importance...). As for any supersession, it keeps the old decision's tags when it
    /// gives none and links to it in `related_decisions`.
    pub fn supersede_with(&self, old: RecordId, new: NewRecord) -> Result<RecordId> {
        let prev = self.ns.latest(old)?.ok_or_else(|| not_found(self.ns, old))?;
        let _: Decision = typed(&prev)?;
        if !matches!(new.body, Body::Decision(_)) {
            return Err(rule(
                old,
                format!("a decision is superseded by a decision, not a {}", new.body.kind()),
            ));
        }
        self.ns.supersede_with(old, new)
    }

    /// The supersession chain through `id`, oldest first (the decision's history).
    pub fn history(&self, id: RecordId) -> Result<Vec<Record>> {
        self.ns.chain(id)
    }

    /// Accepted decisions valid now, newest first.
    pub fn active(&self) -> Result<Vec<Record>> {
        let all = self.ns.list_of::<Decision>(AsOf::now())?;
        Ok(all
            .into_iter()
            .filter(|r| matches!(&r.body, Body::Decision(d) if d.status == DecisionStatus::Accepted))
            .collect())
    }

    /// Link a decision and a task both ways (one commit).
    pub fn link_task(&self, decision: RecordId, task: RecordId) -> Result<()> {
        link_decision_task(self.ns, decision, task)
    }
}

pub(super) fn link_decision_task(ns: &Ns, decision: RecordId, task: RecordId) -> Result<()> {
    ns.edit_together(&[decision, task], |recs| {
        let [d, t] = recs else { return Ok(()) };
        let (Body::Decision(db), Body::Task(tb)) = (&mut d.body, &mut t.body) else {
            return Err(rule(
                decision,
                format!("link needs a decision and a task, got a {} and a {}", d.kind(), t.kind()),
            ));
        };
        if !db.related_tasks.contains(&task) {
            db.related_tasks.push(task);
        }
        if !tb.related_decisions.contains(&decision) {
            tb.related_decisions.push(decision);
        }
        Ok(())
    })
}
