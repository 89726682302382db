//! Tasks: status moves with their rules, dependencies, links to decisions, listings.

use crate::db::Ns;
use crate::error::Result;
use mnemon_storage::body::{Priority, StatusChange, Task, TaskStatus};
use mnemon_storage::{AsOf, Body, Kind, ListQuery, NewRecord, Record, RecordId};
use std::collections::BTreeMap;

use super::*;

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
    pub(super) ns: &'a Ns,
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
