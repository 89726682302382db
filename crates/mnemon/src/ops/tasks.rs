//! Operations on tasks: moving one through its statuses.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Operation, Session};
use crate::RecordId;
use crate::error::Result;

/// Change a task's status.
#[derive(Debug, Default, Deserialize, JsonSchema)]
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
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema)]
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
#[derive(Debug, Serialize, JsonSchema)]
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
