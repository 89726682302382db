//! Operations on tasks: moving one through its statuses, its dependencies and links, and
//! listing them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Entries, Operation, Session};
use crate::RecordId;
use crate::body::{Priority, TaskStatus};
use crate::domain::TaskQuery;
use crate::error::Result;

/// Change a task's status.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskMove {
    /// The task: a record id (a unique head or tail of at least 6 hex digits also works).
    pub id: String,
    /// What to do with it.
    pub action: TaskAction,
    /// What blocks it (block), or why it is cancelled (cancel).
    pub reason: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// A task's move.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskAction {
    /// In progress.
    #[default]
    Start,
    /// Done (final).
    Complete,
    /// Blocked, with the reason.
    Block,
    /// Back to the status before the block.
    Unblock,
    /// Cancelled (final), optionally with a reason.
    Cancel,
    /// Planned.
    Plan,
}

/// A task after its move.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TaskMoved {
    /// The task.
    #[schemars(with = "String")]
    pub id: RecordId,
    /// Its fields now (status, title, dependencies...).
    pub task: Value,
}

impl Operation for TaskMove {
    const NAME: &'static str = "task";
    const TITLE: &'static str = "Move a task";
    const DESCRIPTION: &'static str = "Change a task's status: start (in progress), complete, block (give the reason), unblock (back to the status before the block), cancel (optionally with a reason) or plan. Completed and cancelled tasks are final. Every change is kept in the task's history.";
    const READ_ONLY: bool = false;
    type Output = TaskMoved;

    fn run(self, session: &Session) -> Result<TaskMoved> {
        let ns = session.ns(self.namespace.as_deref())?;
        let id = ns.resolve_id(&self.id)?;
        let t = ns.tasks();
        let task = match self.action {
            TaskAction::Start => t.start(id)?,
            TaskAction::Complete => t.complete(id)?,
            TaskAction::Block => t.block(id, self.reason.as_deref().unwrap_or("unspecified"))?,
            TaskAction::Unblock => t.unblock(id)?,
            TaskAction::Cancel => t.cancel(id, self.reason.as_deref())?,
            TaskAction::Plan => t.plan(id)?,
        };
        Ok(TaskMoved { id, task: serde_json::to_value(&task).unwrap_or(Value::Null) })
    }
}

/// Make a task wait for another.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskDepend {
    /// The task that waits.
    pub id: String,
    /// The task it waits for.
    pub on: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for TaskDepend {
    const NAME: &'static str = "task_depend";
    const TITLE: &'static str = "Add a task dependency";
    const DESCRIPTION: &'static str = "Make a task wait for another: it cannot start until that one is completed. A dependency that would close a cycle is refused.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = TaskMoved;

    fn run(self, session: &Session) -> Result<TaskMoved> {
        let ns = session.ns(self.namespace.as_deref())?;
        let (id, on) = (ns.resolve_id(&self.id)?, ns.resolve_id(&self.on)?);
        let task = ns.tasks().add_dependency(id, on)?;
        Ok(TaskMoved { id, task: serde_json::to_value(&task).unwrap_or(Value::Null) })
    }
}

/// Whether a task can start.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskCanStart {
    /// The task.
    pub id: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// Whether a task can start, and what it waits for.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Readiness {
    /// Every dependency is completed.
    pub ready: bool,
    /// The dependencies not completed yet.
    #[schemars(with = "Vec<String>")]
    pub waiting_on: Vec<RecordId>,
}

impl Operation for TaskCanStart {
    const NAME: &'static str = "task_can_start";
    const TITLE: &'static str = "Can a task start";
    const DESCRIPTION: &'static str = "Whether every dependency of a task is completed, and which are not.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Readiness;

    fn run(self, session: &Session) -> Result<Readiness> {
        let ns = session.ns(self.namespace.as_deref())?;
        let c = ns.tasks().can_start(ns.resolve_id(&self.id)?)?;
        Ok(Readiness { ready: c.ready, waiting_on: c.waiting_on })
    }
}

/// The dependency graph of the current tasks.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskGraph {
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// A task and what it depends on.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TaskDeps {
    /// The task.
    #[schemars(with = "String")]
    pub id: RecordId,
    /// The tasks it waits for.
    #[schemars(with = "Vec<String>")]
    pub dependencies: Vec<RecordId>,
}

/// Every current task with its dependencies.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Graph {
    /// By task id.
    pub tasks: Vec<TaskDeps>,
}

impl Operation for TaskGraph {
    const NAME: &'static str = "task_graph";
    const TITLE: &'static str = "Task dependencies";
    const DESCRIPTION: &'static str = "Every current task with the tasks it waits for.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Graph;

    fn run(self, session: &Session) -> Result<Graph> {
        let ns = session.ns(self.namespace.as_deref())?;
        let g = ns.tasks().dependency_graph()?;
        Ok(Graph { tasks: g.into_iter().map(|(id, dependencies)| TaskDeps { id, dependencies }).collect() })
    }
}

/// List tasks.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskList {
    /// Only these statuses (default: all open ones).
    #[serde(default)]
    pub statuses: Vec<TaskStatus>,
    /// Only these priorities.
    #[serde(default)]
    pub priorities: Vec<Priority>,
    /// Only this assignee's.
    pub assignee: Option<String>,
    /// Only tasks carrying this tag.
    pub tag: Option<String>,
    /// Include completed and cancelled tasks.
    #[serde(default)]
    pub all: bool,
    /// Only open tasks past their due date (the other filters do not apply).
    #[serde(default)]
    pub overdue: bool,
    /// At most this many (1 to 10,000; default: all).
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<usize>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for TaskList {
    const NAME: &'static str = "task_list";
    const TITLE: &'static str = "List tasks";
    const DESCRIPTION: &'static str = "The current tasks, by priority (critical first) then newest first, narrowed by status (default: all but completed and cancelled), priority, assignee or tag; or the overdue ones, soonest due first.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Entries;

    fn run(self, session: &Session) -> Result<Entries> {
        let ns = session.ns(self.namespace.as_deref())?;
        let tasks = ns.tasks();
        if self.overdue {
            return Ok(Entries::now(session, tasks.overdue()?));
        }
        let q = TaskQuery {
            statuses: self.statuses,
            priorities: self.priorities,
            assignee: self.assignee,
            tag: self.tag,
            include_completed: self.all,
            include_cancelled: self.all,
            limit: self.limit.map(|n| super::count(Some(n), n, 10_000)).transpose()?,
        };
        Ok(Entries::now(session, tasks.list(&q)?))
    }
}
