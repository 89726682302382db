//! The project-assistant domain: decisions, tasks, entities and conversations on top of the
//! one record engine.
//!
//! Every operation here is a read-modify-write of typed bodies through [`Ns::edit`] (one
//! generic mechanism with optimistic retry), or a supersession, retirement or merge of the
//! storage engine; per-kind code is only the rules that differ: task transitions and their
//! history, decision statuses, entity identity by name. Nothing is deleted: a status change
//! is a new revision, a merged entity is superseded by the survivor, consolidation retires.
//!
//! ```
//! use mnemon::body::{Task, TaskStatus};
//! use mnemon::Db;
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::create(dir.path().join("m.redb"))?;
//! let ns = db.ns("project")?;
//! let tasks = ns.tasks();
//! let schema = tasks.create(Task { title: "Design the schema".into(), ..Default::default() })?;
//! let api = tasks.create(Task { title: "Build the API".into(), dependencies: vec![schema], ..Default::default() })?;
//! assert!(!tasks.can_start(api)?.ready);
//! tasks.start(schema)?;
//! tasks.complete(schema)?;
//! assert!(tasks.can_start(api)?.ready);
//! tasks.block(api, "waiting for review")?;
//! let t = tasks.unblock(api)?; // back to what it was before
//! assert_eq!(t.status, TaskStatus::Backlog);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;

use mnemon_storage::body::{Decision, DecisionStatus, Task, TaskStatus};
use mnemon_storage::{
    AsOf, Body, Envelope, Kind, KindBody, ListQuery, Record, RecordId, Revise, Timestamp, WriteOp,
};

use crate::db::Ns;
use crate::error::{Error, Result};

mod conversations;
mod decisions;
mod entities;
mod tasks;
pub use conversations::*;
pub use decisions::*;
pub use entities::*;
pub use tasks::*;

/// How often a multi-record edit is retried when another writer changes one of its records.
const ATTEMPTS: u32 = 16;
/// Conversations kept per namespace; older ones are retired (time travel still sees them).
pub const CONVERSATIONS_KEPT: usize = 100;

fn rule(id: RecordId, reason: impl Into<String>) -> Error {
    Error::Rule { id, reason: reason.into() }
}

fn not_found(ns: &Ns, id: RecordId) -> Error {
    Error::Storage(mnemon_storage::Error::NotFound { namespace: ns.name().clone(), id })
}

/// The typed body of a record, or a kind-mismatch error.
fn typed<T: KindBody + Clone>(r: &Record) -> Result<T> {
    T::from_body_ref(&r.body).cloned().ok_or_else(|| {
        Error::from(mnemon_storage::InputError::KindMismatch { id: r.id, expected: r.kind(), got: T::KIND })
    })
}

impl Ns {
    /// Read-modify-write of a typed body (and its envelope) on the latest revision; retried
    /// if another writer got there first. Fails if the record is not of kind `T`. Returns the
    /// new latest revision.
    pub fn edit<T: KindBody + Clone>(
        &self,
        id: RecordId,
        mut f: impl FnMut(&mut T, &mut Envelope) -> Result<()>,
    ) -> Result<Record> {
        self.update(id, |rec| {
            let mut body: T = typed(rec)?;
            f(&mut body, &mut rec.envelope)?;
            rec.body = body.into();
            Ok(())
        })?;
        self.latest(id)?.ok_or_else(|| not_found(self, id))
    }

    /// Edit several records in one commit: `f` gets their latest revisions (in the order of
    /// `ids`) and changes them; all or none are written.
    pub(crate) fn edit_together(
        &self,
        ids: &[RecordId],
        mut f: impl FnMut(&mut [Record]) -> Result<()>,
    ) -> Result<()> {
        for _ in 0..ATTEMPTS {
            let snap = self.db().snapshot()?;
            let mut recs = Vec::with_capacity(ids.len());
            for &id in ids {
                recs.push(snap.latest(self.name(), id)?.ok_or_else(|| not_found(self, id))?);
            }
            let before = recs.clone();
            f(&mut recs)?;
            let mut ops = Vec::new();
            for (old, new) in before.iter().zip(recs) {
                if old.body == new.body && old.envelope == new.envelope {
                    continue;
                }
                ops.push(WriteOp::Revise(Revise {
                    namespace: self.name().clone(),
                    id: old.id,
                    expected_rev: Some(old.rev),
                    body: Some(new.body),
                    envelope: Some(new.envelope),
                    valid_from: None,
                    valid_until: None,
                    expires_at: None,
                }));
            }
            if ops.is_empty() {
                return Ok(());
            }
            match self.db().write(ops) {
                Err(Error::Storage(mnemon_storage::Error::RevisionConflict { .. })) => continue,
                Err(e) => return Err(e),
                Ok(_) => return Ok(()),
            }
        }
        Err(Error::Contended {
            id: ids.first().copied().unwrap_or_else(|| RecordId::from_u128(0)),
            attempts: ATTEMPTS,
        })
    }

    /// Decisions: statuses, supersession chains, links to tasks.
    pub fn decisions(&self) -> Decisions<'_> {
        Decisions { ns: self }
    }

    /// Tasks: transitions with their history, dependencies, overdue tasks.
    pub fn tasks(&self) -> Tasks<'_> {
        Tasks { ns: self }
    }

    /// Entities: found or created by name, mentions, properties, links, merges.
    pub fn entities(&self) -> Entities<'_> {
        Entities { ns: self }
    }

    /// Conversations: start, messages, end with a summary, the recent ones.
    pub fn conversations(&self) -> Conversations<'_> {
        Conversations { ns: self }
    }

    /// Every record valid now that carries `tag`, grouped by kind.
    pub fn by_tag(&self, tag: &str) -> Result<BTreeMap<Kind, Vec<Record>>> {
        let mut q = ListQuery::new();
        q.tags.push(tag.to_string());
        let mut out: BTreeMap<Kind, Vec<Record>> = BTreeMap::new();
        for r in self.list(&q)? {
            out.entry(r.kind()).or_default().push(r);
        }
        Ok(out)
    }

    /// Statistics per kind of what is valid now (see [`DomainStats`]).
    pub fn domain_stats(&self) -> Result<DomainStats> {
        let now = self.db().now();
        let mut s = DomainStats::default();
        let mut completion_secs = Vec::new();
        for r in self.list(&ListQuery::new())? {
            *s.by_kind.entry(r.kind().to_string()).or_default() += 1;
            for t in &r.envelope.tags {
                *s.tags.entry(t.to_string()).or_default() += 1;
            }
            match &r.body {
                Body::Decision(d) => *s.decisions_by_status.entry(json_name(&d.status)).or_default() += 1,
                Body::Task(t) => {
                    *s.tasks_by_status.entry(json_name(&t.status)).or_default() += 1;
                    *s.tasks_by_priority.entry(json_name(&t.priority)).or_default() += 1;
                    if is_overdue(t, now) {
                        s.tasks_overdue += 1;
                    }
                    if let Some(done) = t.completed_at {
                        completion_secs.push((done.as_micros() - r.valid_from.as_micros()) as f64 / 1e6);
                    }
                }
                Body::Entity(e) => {
                    *s.entities_by_type.entry(e.entity_type.to_string()).or_default() += 1;
                    s.most_mentioned.push((e.name.clone(), e.mentions.len()));
                }
                _ => {}
            }
        }
        s.most_mentioned.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        s.most_mentioned.truncate(10);
        if !completion_secs.is_empty() {
            s.average_completion_secs =
                Some(completion_secs.iter().sum::<f64>() / completion_secs.len() as f64);
        }
        Ok(s)
    }

    /// Retire superseded decisions and cancelled tasks whose last change is older than
    /// `older_than_days`: hidden from current queries, still seen by time travel. Superseded
    /// decisions already ended when they were superseded; they are counted, not touched.
    pub fn consolidate(&self, older_than_days: u32) -> Result<Consolidation> {
        let now = self.db().now();
        let cutoff = now.as_micros() - i64::from(older_than_days) * 86_400_000_000;
        let mut report = Consolidation::default();
        // Superseded decisions: the supersession already closed their validity.
        let snap = self.db().snapshot()?;
        let mut superseded = 0usize;
        snap.for_each_revision(Some(self.name()), |r| {
            if r.replaced_at.is_none()
                && r.kind() == Kind::Decision
                && r.superseded_by.is_some()
                && r.valid_until.is_some_and(|u| u.as_micros() < cutoff)
            {
                superseded += 1;
            }
            Ok(())
        })?;
        report.decisions_superseded = superseded;
        let stale = |r: &Record| r.recorded_at.as_micros() < cutoff;
        for r in self.list_of::<Decision>(AsOf::now())? {
            // A decision superseded through `supersede` ends by itself when its successor
            // takes over (a later valid time): only one marked superseded by hand is retired.
            if let Body::Decision(d) = &r.body
                && d.status == DecisionStatus::Superseded
                && r.superseded_by.is_none()
                && stale(&r)
            {
                self.retire(r.id, None)?;
                report.decisions_retired += 1;
            }
        }
        for r in self.list_of::<Task>(AsOf::now())? {
            if let Body::Task(t) = &r.body
                && t.status == TaskStatus::Cancelled
                && stale(&r)
            {
                self.retire(r.id, None)?;
                report.tasks_retired += 1;
            }
        }
        Ok(report)
    }
}

/// Tasks in the order they are listed: by priority (critical first), then newest first.
pub(crate) fn task_order(a: &Record, b: &Record) -> std::cmp::Ordering {
    let p = |r: &Record| match &r.body {
        Body::Task(t) => t.priority as u8,
        _ => u8::MAX,
    };
    p(a).cmp(&p(b)).then(b.valid_from.cmp(&a.valid_from)).then(b.id.cmp(&a.id))
}

/// Sort most important first (importance 1-5, 3 when unset), then newest first.
pub(crate) fn by_importance(recs: &mut [Record]) {
    let imp = |r: &Record| r.envelope.importance.unwrap_or(3);
    recs.sort_by(|a, b| imp(b).cmp(&imp(a)).then(b.id.cmp(&a.id)));
}

/// The snake_case name serde gives an enum value.
fn json_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

fn is_overdue(t: &Task, now: Timestamp) -> bool {
    t.due.is_some_and(|d| d < now) && !matches!(t.status, TaskStatus::Completed | TaskStatus::Cancelled)
}

/// What [`Ns::domain_stats`] counts (records valid now).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct DomainStats {
    /// Records per kind.
    pub by_kind: BTreeMap<String, usize>,
    /// Records per tag.
    pub tags: BTreeMap<String, usize>,
    /// Decisions per status.
    pub decisions_by_status: BTreeMap<String, usize>,
    /// Tasks per status.
    pub tasks_by_status: BTreeMap<String, usize>,
    /// Tasks per priority.
    pub tasks_by_priority: BTreeMap<String, usize>,
    /// Open tasks past their due date.
    pub tasks_overdue: usize,
    /// Mean time from a task's valid_from to its completion, in seconds.
    pub average_completion_secs: Option<f64>,
    /// Entities per type.
    pub entities_by_type: BTreeMap<String, usize>,
    /// The ten most mentioned entities (name, mentions).
    pub most_mentioned: Vec<(String, usize)>,
}

/// What [`Ns::consolidate`] did.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Consolidation {
    /// Decisions still valid with status `superseded` (marked so by hand or an import) retired.
    pub decisions_retired: usize,
    /// Decisions that were superseded before the cutoff (already hidden from current queries).
    pub decisions_superseded: usize,
    /// Cancelled tasks retired.
    pub tasks_retired: usize,
}
