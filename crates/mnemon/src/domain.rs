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

use mnemon_storage::body::{
    Conversation, Decision, DecisionStatus, Entity, Mention, Message, Priority, Role, StatusChange, Task,
    TaskStatus,
};
use mnemon_storage::{
    AsOf, Body, Envelope, JsonText, Kind, KindBody, ListQuery, NewRecord, Record, RecordId, Revise,
    Timestamp, WriteOp,
};
use serde_json::Value;

use crate::db::Ns;
use crate::error::{Error, Result};

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
#[derive(Clone, Debug, Default, serde::Serialize, schemars::JsonSchema)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Consolidation {
    /// Decisions still valid with status `superseded` (marked so by hand or an import) retired.
    pub decisions_retired: usize,
    /// Decisions that were superseded before the cutoff (already hidden from current queries).
    pub decisions_superseded: usize,
    /// Cancelled tasks retired.
    pub tasks_retired: usize,
}

// ---------------------------------------------------------------- decisions

/// Decisions of one namespace; see [`Ns::decisions`].
#[derive(Clone, Copy)]
pub struct Decisions<'a> {
    ns: &'a Ns,
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

fn link_decision_task(ns: &Ns, decision: RecordId, task: RecordId) -> Result<()> {
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

// ---------------------------------------------------------------- tasks

/// Whether a task can start: all its dependencies completed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CanStart {
    /// All dependencies are completed.
    pub ready: bool,
    /// The dependencies not completed yet (unknown ones included).
    pub waiting_on: Vec<RecordId>,
}

/// Which tasks [`Tasks::list`] returns.
#[derive(Clone, Debug, Default)]
pub struct TaskQuery {
    /// Only these statuses (empty: all but completed and cancelled unless included).
    pub statuses: Vec<TaskStatus>,
    /// Only these priorities (empty: all).
    pub priorities: Vec<Priority>,
    /// Only this assignee.
    pub assignee: Option<String>,
    /// Only tasks carrying this tag.
    pub tag: Option<String>,
    /// Include completed tasks.
    pub include_completed: bool,
    /// Include cancelled tasks.
    pub include_cancelled: bool,
    /// At most this many.
    pub limit: Option<usize>,
}

/// Tasks of one namespace; see [`Ns::tasks`].
#[derive(Clone, Copy)]
pub struct Tasks<'a> {
    ns: &'a Ns,
}

impl Tasks<'_> {
    /// Record a task; its dependencies must exist and not form a cycle. Returns its id.
    pub fn create(&self, t: Task) -> Result<RecordId> {
        self.insert(NewRecord::new(self.ns.name().clone(), t)).map(|o| o.id())
    }

    /// Insert a fully described task record (tags, valid time...); [`Ns::insert`] checks its
    /// dependencies, as for any task.
    pub fn insert(&self, rec: NewRecord) -> Result<mnemon_storage::Outcome> {
        if !matches!(rec.body, Body::Task(_)) {
            return Err(rule(rec.id, format!("a {} is not a task", rec.body.kind())));
        }
        self.ns.insert(rec)
    }

    /// Move to in_progress.
    pub fn start(&self, id: RecordId) -> Result<Task> {
        self.transition(id, TaskStatus::InProgress, None)
    }

    /// Move to completed (sets `completed_at`).
    pub fn complete(&self, id: RecordId) -> Result<Task> {
        self.transition(id, TaskStatus::Completed, None)
    }

    /// Move to cancelled.
    pub fn cancel(&self, id: RecordId, reason: Option<&str>) -> Result<Task> {
        self.transition(id, TaskStatus::Cancelled, reason)
    }

    /// Move to planned.
    pub fn plan(&self, id: RecordId) -> Result<Task> {
        self.transition(id, TaskStatus::Planned, None)
    }

    /// Move to blocked, recording what blocks it.
    pub fn block(&self, id: RecordId, blocked_by: &str) -> Result<Task> {
        self.transition(id, TaskStatus::Blocked, Some(blocked_by))
    }

    /// Leave blocked for the status it had before it was blocked.
    pub fn unblock(&self, id: RecordId) -> Result<Task> {
        let latest = self.ns.latest(id)?.ok_or_else(|| not_found(self.ns, id))?;
        let t: Task = typed(&latest)?;
        if t.status != TaskStatus::Blocked {
            return Err(rule(id, format!("the task is {}, not blocked", json_name(&t.status))));
        }
        let before = t
            .status_history
            .iter()
            .rev()
            .find(|c| c.to == TaskStatus::Blocked)
            .map_or(TaskStatus::Backlog, |c| c.from);
        self.transition(id, before, None)
    }

    /// Change the status, appending to the status history. Completed and cancelled tasks are
    /// final; a change to the status it already has is refused.
    pub fn transition(&self, id: RecordId, to: TaskStatus, reason: Option<&str>) -> Result<Task> {
        let at = self.ns.db().now();
        let r = self.ns.edit::<Task>(id, |t, _| {
            if matches!(t.status, TaskStatus::Completed | TaskStatus::Cancelled) {
                return Err(rule(
                    id,
                    format!("the task is {}; it cannot become {}", json_name(&t.status), json_name(&to)),
                ));
            }
            if t.status == to {
                return Err(rule(id, format!("the task is already {}", json_name(&to))));
            }
            t.status_history.push(StatusChange {
                from: t.status,
                to,
                at,
                reason: reason.map(str::to_string),
            });
            t.status = to;
            match to {
                TaskStatus::Completed => t.completed_at = Some(at),
                TaskStatus::Blocked => t.blocked_by = reason.map(str::to_string),
                _ => t.blocked_by = None,
            }
            Ok(())
        })?;
        typed(&r)
    }

    /// Add a dependency (refused if it would close a cycle).
    pub fn add_dependency(&self, id: RecordId, on: RecordId) -> Result<Task> {
        crate::rules::task_dependencies(id, &[on], &self.ns.task_graph()?)?;
        let r = self.ns.edit::<Task>(id, |t, _| {
            if !t.dependencies.contains(&on) {
                t.dependencies.push(on);
            }
            Ok(())
        })?;
        typed(&r)
    }

    /// The dependencies must be tasks valid now, and none may (transitively) depend on `id`.
    /// Whether all its dependencies are completed.
    pub fn can_start(&self, id: RecordId) -> Result<CanStart> {
        let r = self.ns.get(id)?.ok_or_else(|| not_found(self.ns, id))?;
        let t: Task = typed(&r)?;
        let mut waiting_on = Vec::new();
        for d in t.dependencies {
            let done = self
                .ns
                .latest(d)?
                .is_some_and(|r| matches!(&r.body, Body::Task(t) if t.status == TaskStatus::Completed));
            if !done {
                waiting_on.push(d);
            }
        }
        Ok(CanStart { ready: waiting_on.is_empty(), waiting_on })
    }

    /// Every task valid now and the tasks it depends on.
    pub fn dependency_graph(&self) -> Result<BTreeMap<RecordId, Vec<RecordId>>> {
        self.ns.task_graph()
    }

    /// Open tasks past their due date, most overdue first.
    pub fn overdue(&self) -> Result<Vec<Record>> {
        let now = self.ns.db().now();
        let mut out: Vec<Record> = self
            .ns
            .list_of::<Task>(AsOf::now())?
            .into_iter()
            .filter(|r| matches!(&r.body, Body::Task(t) if is_overdue(t, now)))
            .collect();
        out.sort_by_key(|r| match &r.body {
            Body::Task(t) => t.due,
            _ => None,
        });
        Ok(out)
    }

    /// Tasks valid now matching `q`, by priority (critical first), then newest first.
    pub fn list(&self, q: &TaskQuery) -> Result<Vec<Record>> {
        let mut lq = ListQuery::new().kinds([Kind::Task]);
        lq.tags.extend(q.tag.clone());
        let mut out: Vec<Record> = self
            .ns
            .list(&lq)?
            .into_iter()
            .filter(|r| {
                let Body::Task(t) = &r.body else { return false };
                let status_ok = if q.statuses.is_empty() {
                    (q.include_completed || t.status != TaskStatus::Completed)
                        && (q.include_cancelled || t.status != TaskStatus::Cancelled)
                } else {
                    q.statuses.contains(&t.status)
                };
                status_ok
                    && (q.priorities.is_empty() || q.priorities.contains(&t.priority))
                    && q.assignee.as_deref().is_none_or(|a| t.assignee.as_deref() == Some(a))
            })
            .collect();
        out.sort_by(task_order);
        if let Some(n) = q.limit {
            out.truncate(n);
        }
        Ok(out)
    }

    /// Link a task and a decision both ways (one commit).
    pub fn link_decision(&self, task: RecordId, decision: RecordId) -> Result<()> {
        link_decision_task(self.ns, decision, task)
    }
}

// ---------------------------------------------------------------- entities

/// The auxiliary row naming the entity that absorbed the one called `name`:
/// `app/alias/<namespace>/<blake3 of the normalised name, 32 hex digits>` (the name itself
/// is in the row).
fn alias_key(ns: &mnemon_storage::Namespace, name: &str) -> String {
    let hash = blake3::hash(mnemon_storage::body::normalise_key(name).as_bytes());
    format!("app/alias/{}/{}", ns.as_str(), &hash.to_hex()[..32])
}

/// Entities of one namespace; see [`Ns::entities`].
#[derive(Clone, Copy)]
pub struct Entities<'a> {
    ns: &'a Ns,
}

impl Entities<'_> {
    /// The entity valid now with this name, compared case-insensitively, or the entity that
    /// absorbed the one of that name ([`Self::merge`]: the absorbed name stays an alias).
    pub fn find_by_name(&self, name: &str) -> Result<Option<Record>> {
        let snap = self.ns.db().snapshot()?;
        if let Some(id) = snap.identity(self.ns.name(), Kind::Entity, name)? {
            return self.ns.get(id);
        }
        let Some(row) = snap.aux(&alias_key(self.ns.name(), name))? else { return Ok(None) };
        let Some(mut id) = serde_json::from_slice::<Value>(&row)
            .ok()
            .and_then(|v| v["id"].as_str().and_then(|s| s.parse::<RecordId>().ok()))
        else {
            return Ok(None);
        };
        // The survivor may itself have been absorbed since: follow the merges.
        for _ in 0..16 {
            match snap.latest(self.ns.name(), id)? {
                Some(r) if r.superseded_by.is_none() => return self.ns.get(r.id),
                Some(r) => id = r.superseded_by.unwrap_or(r.id),
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The entity with `e.name` if there is one (filling in its description and a type of
    /// `other` from `e`, and adding `e`'s properties it lacks), else a new one. Returns its id
    /// and whether it was created.
    pub fn find_or_create(&self, e: Entity) -> Result<(RecordId, bool)> {
        if let Some(existing) = self.find_by_name(&e.name)? {
            self.ns.edit::<Entity>(existing.id, |cur, _| {
                if cur.description.is_empty() {
                    cur.description.clone_from(&e.description);
                }
                if cur.entity_type.as_str() == "other" {
                    cur.entity_type = e.entity_type.clone();
                }
                cur.properties = merge_properties(&cur.properties, &e.properties);
                Ok(())
            })?;
            return Ok((existing.id, false));
        }
        let rec = NewRecord::new(self.ns.name().clone(), e);
        match self.ns.insert(rec)? {
            mnemon_storage::Outcome::Existing { id } => Ok((id, false)),
            o => Ok((o.id(), true)),
        }
    }

    /// Record a mention of the entity.
    pub fn mention(&self, id: RecordId, context: &str, source: &str) -> Result<Record> {
        let at = self.ns.db().now();
        self.ns.edit::<Entity>(id, |e, _| {
            e.mentions.push(Mention { context: context.to_string(), at, source: source.into() });
            Ok(())
        })
    }

    /// Set one property (a JSON value; `null` removes it).
    pub fn set_property(&self, id: RecordId, key: &str, value: Value) -> Result<Record> {
        self.ns.edit::<Entity>(id, |e, _| {
            let mut props = e.properties.value();
            let Some(obj) = props.as_object_mut() else {
                return Err(rule(id, "the entity's properties are not a JSON object"));
            };
            if value.is_null() {
                obj.remove(key);
            } else {
                obj.insert(key.to_string(), value.clone());
            }
            e.properties = JsonText::from_value(&props);
            Ok(())
        })
    }

    /// Link two entities both ways (one commit).
    pub fn link(&self, a: RecordId, b: RecordId) -> Result<()> {
        if a == b {
            return Err(rule(a, "an entity cannot be linked to itself"));
        }
        self.ns.edit_together(&[a, b], |recs| {
            let [x, y] = recs else { return Ok(()) };
            let (Body::Entity(xe), Body::Entity(ye)) = (&mut x.body, &mut y.body) else {
                return Err(rule(a, "both records must be entities"));
            };
            if !xe.related_entities.contains(&b) {
                xe.related_entities.push(b);
            }
            if !ye.related_entities.contains(&a) {
                ye.related_entities.push(a);
            }
            Ok(())
        })
    }

    /// Merge `absorb` into `keep` in one commit: `keep` gains the mentions, the properties it
    /// lacks, the links (re-pointed) and tags of `absorb`, and a description if it had none;
    /// `absorb` ends, superseded by `keep` (its history stays; its chain leads to `keep`).
    /// `keep`'s metadata lists what it absorbed under `merged_from`, and the absorbed name
    /// stays an alias of `keep` ([`Self::find_by_name`], so `find_or_create` finds it).
    pub fn merge(&self, keep: RecordId, absorb: RecordId) -> Result<Record> {
        if keep == absorb {
            return Err(rule(keep, "an entity cannot absorb itself"));
        }
        for _ in 0..ATTEMPTS {
            let snap = self.ns.db().snapshot()?;
            let k = snap.latest(self.ns.name(), keep)?.ok_or_else(|| not_found(self.ns, keep))?;
            let a = snap.latest(self.ns.name(), absorb)?.ok_or_else(|| not_found(self.ns, absorb))?;
            let mut ke: Entity = typed(&k)?;
            let ae: Entity = typed(&a)?;
            if a.superseded_by.is_some() || a.valid_until.is_some() {
                return Err(rule(absorb, "the entity has already ended"));
            }
            ke.mentions.extend(ae.mentions.iter().cloned());
            ke.mentions.sort_by_key(|m| m.at);
            for r in &ae.related_entities {
                if *r != keep && !ke.related_entities.contains(r) {
                    ke.related_entities.push(*r);
                }
            }
            ke.related_entities.retain(|r| *r != absorb);
            ke.properties = merge_properties(&ke.properties, &ae.properties);
            if ke.description.is_empty() {
                ke.description.clone_from(&ae.description);
            }
            let mut env = k.envelope.clone();
            for t in &a.envelope.tags {
                if !env.tags.contains(t) {
                    env.tags.push(t.clone());
                }
            }
            let mut meta = env.metadata.value();
            if !meta.is_object() {
                meta = Value::Object(serde_json::Map::new());
            }
            if let Some(obj) = meta.as_object_mut() {
                let list = obj.entry("merged_from").or_insert_with(|| Value::Array(Vec::new()));
                if let Some(arr) = list.as_array_mut() {
                    arr.push(serde_json::json!({"id": absorb.to_string(), "name": ae.name}));
                }
            }
            env.metadata = JsonText::from_value(&meta);
            let alias = serde_json::json!({ "name": ae.name, "id": keep.to_string() });
            let mut ops = vec![
                WriteOp::PutAux {
                    key: alias_key(self.ns.name(), &ae.name),
                    value: Some(
                        serde_json::to_vec(&alias).map_err(|e| crate::error::invalid(e.to_string()))?,
                    ),
                },
                WriteOp::MergeInto {
                    namespace: self.ns.name().clone(),
                    absorbed: absorb,
                    into: keep,
                    at: None,
                },
                WriteOp::Revise(Revise {
                    namespace: self.ns.name().clone(),
                    id: keep,
                    expected_rev: Some(k.rev),
                    body: Some(ke.into()),
                    envelope: Some(env),
                    valid_from: None,
                    valid_until: None,
                    expires_at: None,
                }),
            ];
            // Entities that linked to the absorbed one now link to the survivor.
            for other in ae.related_entities.iter().filter(|r| **r != keep) {
                if let Some(o) = snap.latest(self.ns.name(), *other)?
                    && let Body::Entity(mut oe) = o.body.clone()
                    && o.valid_until.is_none()
                {
                    oe.related_entities.retain(|r| *r != absorb);
                    if !oe.related_entities.contains(&keep) {
                        oe.related_entities.push(keep);
                    }
                    ops.push(WriteOp::Revise(Revise {
                        namespace: self.ns.name().clone(),
                        id: o.id,
                        expected_rev: Some(o.rev),
                        body: Some(oe.into()),
                        envelope: None,
                        valid_from: None,
                        valid_until: None,
                        expires_at: None,
                    }));
                }
            }
            match self.ns.db().write(ops) {
                Err(Error::Storage(mnemon_storage::Error::RevisionConflict { .. })) => continue,
                Err(e) => return Err(e),
                Ok(_) => return self.ns.latest(keep)?.ok_or_else(|| not_found(self.ns, keep)),
            }
        }
        Err(Error::Contended { id: keep, attempts: ATTEMPTS })
    }

    /// Entities valid now of one type, most recently mentioned first.
    pub fn by_type(&self, entity_type: &str) -> Result<Vec<Record>> {
        let mut out: Vec<Record> = self
            .ns
            .list_of::<Entity>(AsOf::now())?
            .into_iter()
            .filter(|r| matches!(&r.body, Body::Entity(e) if e.entity_type.as_str().eq_ignore_ascii_case(entity_type)))
            .collect();
        let last = |r: &Record| match &r.body {
            Body::Entity(e) => e.mentions.iter().map(|m| m.at).max(),
            _ => None,
        };
        out.sort_by(|a, b| last(b).cmp(&last(a)).then(b.id.cmp(&a.id)));
        Ok(out)
    }
}

/// `base` with the keys of `extra` it lacks (both JSON objects; anything else counts as empty).
fn merge_properties(base: &JsonText, extra: &JsonText) -> JsonText {
    let mut b = base.value();
    if !b.is_object() {
        b = Value::Object(serde_json::Map::new());
    }
    if let (Some(bo), Value::Object(eo)) = (b.as_object_mut(), extra.value()) {
        for (k, v) in eo {
            bo.entry(k).or_insert(v);
        }
    }
    JsonText::from_value(&b)
}

// ---------------------------------------------------------------- conversations

/// Conversations of one namespace; see [`Ns::conversations`].
#[derive(Clone, Copy)]
pub struct Conversations<'a> {
    ns: &'a Ns,
}

impl Conversations<'_> {
    /// Start a conversation; returns its id. Beyond [`CONVERSATIONS_KEPT`] conversations in
    /// the namespace, the oldest are retired (with their messages).
    pub fn start(&self, title: &str) -> Result<RecordId> {
        let id = self.ns.add(Conversation { title: title.to_string(), ..Default::default() })?;
        self.trim()?;
        Ok(id)
    }

    /// Add a message to an open conversation; returns the message's id.
    pub fn add(&self, conversation: RecordId, role: Role, content: &str) -> Result<RecordId> {
        let c = self.ns.get(conversation)?.ok_or_else(|| not_found(self.ns, conversation))?;
        let conv: Conversation = typed(&c)?;
        if conv.ended_at.is_some() {
            return Err(rule(conversation, "the conversation has ended"));
        }
        let mut rec = NewRecord::new(
            self.ns.name().clone(),
            Message { conversation: Some(conversation), role, content: content.to_string() },
        );
        rec.envelope.task = Some(conversation.to_string().into());
        self.ns.insert(rec).map(|o| o.id())
    }

    /// End a conversation with an optional summary.
    pub fn end(&self, conversation: RecordId, summary: Option<&str>) -> Result<Record> {
        let at = self.ns.db().now();
        self.ns.edit::<Conversation>(conversation, |c, _| {
            if c.ended_at.is_some() {
                return Err(rule(conversation, "the conversation has already ended"));
            }
            c.ended_at = Some(at);
            c.summary = summary.map(str::to_string);
            Ok(())
        })
    }

    /// The messages of a conversation, oldest first.
    pub fn messages(&self, conversation: RecordId) -> Result<Vec<Record>> {
        let mut q = ListQuery::new().kinds([Kind::Message]);
        q.task = Some(conversation.to_string());
        let mut out = self.ns.list(&q)?;
        out.sort_by_key(|r| r.id);
        Ok(out)
    }

    /// The most recent conversations, newest first.
    pub fn recent(&self, limit: usize) -> Result<Vec<Record>> {
        let mut all = self.ns.list_of::<Conversation>(AsOf::now())?;
        all.sort_by_key(|r| std::cmp::Reverse(r.id));
        all.truncate(limit);
        Ok(all)
    }

    fn trim(&self) -> Result<()> {
        let all = self.recent(usize::MAX)?;
        for old in all.iter().skip(CONVERSATIONS_KEPT) {
            for m in self.messages(old.id)? {
                self.ns.retire(m.id, None)?;
            }
            self.ns.retire(old.id, None)?;
        }
        Ok(())
    }
}
