//! Operations of an agent's own memory: its preferences, task metrics and error patterns, its
//! performance, its context block, the upkeep of its role knowledge and episodes. The
//! model-facing ones (learning, reinforcing and listing knowledge, storing and finding
//! episodes) are in [`super::memory`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Block, Operation, Session, Stored, time};
use crate::agent::{Access, Performance};
use crate::body::Metrics;
use crate::error::{Result, invalid};

/// Set some of the agent's preferences.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentPrefer {
    /// The preferences to set (`{"indent": 4}`); the others stay, and `null` removes one.
    pub preferences: Map<String, Value>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// An agent's preferences.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Preferences {
    /// The preferences, over the defaults asked with.
    pub preferences: Value,
}

impl Operation for AgentPrefer {
    const NAME: &'static str = "agent_prefer";
    const TITLE: &'static str = "Set preferences";
    const DESCRIPTION: &'static str = "Set some of an agent's preferences (a JSON object: the keys given change, `null` removes one, the others stay) and answer them all.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Preferences;

    fn run(self, session: &Session) -> Result<Preferences> {
        let ns = session.ns(self.namespace.as_deref())?;
        let agent = ns.agent();
        agent.set_preferences(&Value::Object(self.preferences))?;
        Ok(Preferences { preferences: agent.preferences(&Value::Object(Map::new()))? })
    }
}

/// An agent's preferences.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentPreferences {
    /// Defaults for the keys not set.
    #[serde(default)]
    pub defaults: Map<String, Value>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for AgentPreferences {
    const NAME: &'static str = "agent_preferences";
    const TITLE: &'static str = "Preferences";
    const DESCRIPTION: &'static str = "An agent's preferences, over the defaults given.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Preferences;

    fn run(self, session: &Session) -> Result<Preferences> {
        let ns = session.ns(self.namespace.as_deref())?;
        let agent = ns.agent();
        Ok(Preferences { preferences: agent.preferences(&Value::Object(self.defaults))? })
    }
}

/// Record a task an agent completed.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentCompleted {
    /// The task.
    #[serde(alias = "task_id")]
    pub task: String,
    /// Iterations it took.
    #[serde(default)]
    pub iterations: u32,
    /// Whether the quality gate passed.
    #[serde(default)]
    pub quality_gate_passed: bool,
    /// How long it took, in milliseconds.
    pub duration_ms: Option<u64>,
    /// Errors met on the way.
    #[serde(default)]
    pub errors: Vec<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for AgentCompleted {
    const NAME: &'static str = "agent_completed";
    const TITLE: &'static str = "Record a completed task";
    const DESCRIPTION: &'static str = "Record that an agent completed a task: its iterations, whether the quality gate passed, its duration and the errors met (for the agent's performance).";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Stored;

    fn run(self, session: &Session) -> Result<Stored> {
        let ns = session.ns(self.namespace.as_deref())?;
        let agent = ns.agent();
        let m = Metrics {
            task: self.task.as_str().into(),
            iterations: self.iterations,
            quality_gate_passed: self.quality_gate_passed,
            duration_ms: self.duration_ms,
            errors: self.errors,
        };
        Ok(Stored { id: agent.record_task(m)? })
    }
}

/// Record an error an agent met.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentError {
    /// The error, as it shows.
    pub pattern: String,
    /// How it was resolved.
    pub resolution: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for AgentError {
    const NAME: &'static str = "agent_error";
    const TITLE: &'static str = "Record an error pattern";
    const DESCRIPTION: &'static str = "Record an error an agent met and how it was resolved; a pattern seen before counts up (and takes the newer resolution).";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Stored;

    fn run(self, session: &Session) -> Result<Stored> {
        let ns = session.ns(self.namespace.as_deref())?;
        let agent = ns.agent();
        Ok(Stored { id: agent.record_error(&self.pattern, self.resolution.as_deref())? })
    }
}

/// An agent's performance.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentPerformance {
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for AgentPerformance {
    const NAME: &'static str = "agent_performance";
    const TITLE: &'static str = "Agent performance";
    const DESCRIPTION: &'static str = "An agent's tasks completed, average iterations and duration, quality-gate pass rate and most common errors.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Performance;

    fn run(self, session: &Session) -> Result<Performance> {
        session.ns(self.namespace.as_deref())?.agent().performance()
    }
}

/// An agent's context block.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentContext {
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for AgentContext {
    const NAME: &'static str = "agent_context";
    const TITLE: &'static str = "Agent context";
    const DESCRIPTION: &'static str = "An agent's preferences, strongest role knowledge, performance and recent errors as a markdown block.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Block;

    fn run(self, session: &Session) -> Result<Block> {
        Ok(Block { context: session.ns(self.namespace.as_deref())?.agent().context()? })
    }
}

/// Retire role knowledge not used for a while.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgePrune {
    /// Retire what was last used before this time. RFC 3339 or a date.
    pub before: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// How many records an upkeep retired.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Retired {
    /// Records retired (their history stays).
    pub retired: usize,
}

impl Operation for KnowledgePrune {
    const NAME: &'static str = "knowledge_prune";
    const TITLE: &'static str = "Prune role knowledge";
    const DESCRIPTION: &'static str = "Retire the role knowledge not used since a time (its history stays).";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Retired;

    fn run(self, session: &Session) -> Result<Retired> {
        let before = time("before", &Some(self.before))?.ok_or_else(|| invalid("`before` is required"))?;
        let ns = session.ns(self.namespace.as_deref())?;
        let agent = ns.agent();
        Ok(Retired { retired: agent.prune_stale(before)? })
    }
}

/// A task's episodes as a block.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeContext {
    /// The task: its episodes come first.
    pub task: String,
    /// What to look for among the other episodes.
    #[serde(default)]
    pub query: String,
    /// The most tokens the block may have (about four characters each; default 1000).
    pub max_tokens: Option<usize>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for EpisodeContext {
    const NAME: &'static str = "episode_context";
    const TITLE: &'static str = "Episodes of a task";
    const DESCRIPTION: &'static str =
        "A task's episodes, then the episodes most relevant to the query, as a block within a token budget.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = crate::agent::EpisodeContext;

    fn run(self, session: &Session) -> Result<crate::agent::EpisodeContext> {
        let ns = session.ns(self.namespace.as_deref())?;
        let eps = ns.episodes();
        eps.context(&self.task, &self.query, self.max_tokens.unwrap_or(1000))
    }
}

/// How often an episode was returned.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeAccess {
    /// The episode.
    pub id: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for EpisodeAccess {
    const NAME: &'static str = "episode_access";
    const TITLE: &'static str = "Episode access";
    const DESCRIPTION: &'static str = "How often an episode was returned by queries, and when last.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Access;

    fn run(self, session: &Session) -> Result<Access> {
        let ns = session.ns(self.namespace.as_deref())?;
        ns.episodes().access(ns.resolve_id(&self.id)?)
    }
}

/// Retire old or surplus episodes.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodePrune {
    /// Retire episodes older than this many days.
    pub days: Option<u32>,
    /// Important episodes (importance 4 and 5) are kept this many times longer (default 3).
    pub important_factor: Option<u32>,
    /// Keep only this many episodes, the most important and newest.
    pub keep: Option<usize>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for EpisodePrune {
    const NAME: &'static str = "episode_prune";
    const TITLE: &'static str = "Prune episodes";
    const DESCRIPTION: &'static str = "Retire episodes older than some days (important ones kept longer), or all but the most important and newest (their history stays).";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Retired;

    fn run(self, session: &Session) -> Result<Retired> {
        if self.days.is_none() && self.keep.is_none() {
            return Err(invalid("give `days`, `keep`, or both"));
        }
        let ns = session.ns(self.namespace.as_deref())?;
        let eps = ns.episodes();
        let mut retired = 0;
        if let Some(d) = self.days {
            retired += eps.prune_by_age(d, self.important_factor.unwrap_or(3))?;
        }
        if let Some(k) = self.keep {
            retired += eps.prune_by_count(k)?;
        }
        Ok(Retired { retired })
    }
}
