//! The domain command groups' arguments: tasks, decisions, entities, conversations, knowledge,
//! agents, episodes, projects and scoped memory.

use clap::Subcommand;
use mnemon::Timestamp;
use mnemon::body::{Priority, Role, TaskStatus};
use serde_json::Value;

/// Parse a snake_case enum value the way the JSON forms spell it.
pub(crate) fn parse_enum<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, String> {
    serde_json::from_value(Value::String(s.to_string())).map_err(|e| {
        // serde names the values it expects ("unknown variant `x`, expected one of `a`, `b`").
        let text = e.to_string();
        match text.split_once("expected ") {
            Some((_, expected)) => format!("unknown value {s:?}: expected {expected}"),
            None => format!("unknown value {s:?}"),
        }
    })
}

/// `mnemon task ...`
#[derive(Debug, Subcommand)]
pub enum TaskCmd {
    /// Move to in_progress.
    Start { id: String },
    /// Move to completed.
    Complete { id: String },
    /// Move to planned.
    Plan { id: String },
    /// Move to blocked, with what blocks it.
    Block {
        id: String,
        #[arg(long)]
        reason: String,
    },
    /// Back to the status it had before it was blocked.
    Unblock { id: String },
    /// Move to cancelled.
    Cancel {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Make ID depend on ON (refused if it would close a cycle).
    Depend { id: String, on: String },
    /// Whether all its dependencies are completed.
    CanStart { id: String },
    /// Every current task and what it depends on.
    Deps,
    /// Open tasks past their due date.
    Overdue,
    /// Current tasks by priority (critical first), then newest first.
    List {
        /// Only these statuses (backlog, planned, in_progress, blocked, completed, cancelled).
        #[arg(long = "status", value_parser = parse_enum::<TaskStatus>)]
        statuses: Vec<TaskStatus>,
        /// Only these priorities (critical, high, medium, low).
        #[arg(long = "priority", value_parser = parse_enum::<Priority>)]
        priorities: Vec<Priority>,
        #[arg(long)]
        assignee: Option<String>,
        #[arg(long)]
        tag: Option<String>,
        /// Include completed and cancelled tasks.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Link the task to a decision (both ways).
    Link { id: String, decision: String },
}

/// `mnemon decision ...`
#[derive(Debug, Subcommand)]
pub enum DecisionCmd {
    /// Set the status to accepted.
    Accept { id: String },
    /// Set the status to rejected.
    Reject { id: String },
    /// Set the status to deprecated.
    Deprecate { id: String },
    /// Set the status to proposed.
    Propose { id: String },
    /// Replace a decision by a new one (JSON like `mnemon add decision`); prints the new id.
    /// The new one keeps the old one's tags unless it gives its own, and links to it.
    Supersede {
        /// The decision being replaced.
        id: String,
        /// The new decision as JSON (`-` for standard input, `@FILE` for a file).
        #[arg(long, value_name = "JSON")]
        data: String,
        /// From when the new decision holds (default: now).
        #[arg(long, value_name = "T", value_parser = crate::cli::time)]
        at: Option<Timestamp>,
    },
    /// The decision's supersession chain, oldest first.
    History { id: String },
    /// Accepted decisions valid now.
    Active,
    /// Link the decision to a task (both ways).
    Link { id: String, task: String },
}

/// `mnemon entity ...`
#[derive(Debug, Subcommand)]
pub enum EntityCmd {
    /// The entity with this name (case-insensitive).
    Find { name: String },
    /// The entity with this name, created if there is none; prints its id.
    Ensure {
        name: String,
        /// person, technology, component, service, concept, other, or any.
        #[arg(long = "type", default_value = "other")]
        entity_type: String,
        #[arg(long, default_value = "")]
        description: String,
    },
    /// Record a mention.
    Mention {
        id: String,
        context: String,
        #[arg(long, default_value = "manual")]
        source: String,
    },
    /// Set a property to a JSON value (`null` removes it).
    Set { id: String, key: String, value: String },
    /// Link two entities (both ways).
    Link { a: String, b: String },
    /// Merge ABSORB_ID into KEEP_ID: the absorbed entity is superseded by the kept one.
    Merge { keep: String, absorb: String },
    /// Current entities of a type, most recently mentioned first.
    ByType { entity_type: String },
}

/// `mnemon conversation ...`
#[derive(Debug, Subcommand)]
pub enum ConversationCmd {
    /// Start a conversation; prints its id. Only the last 100 per namespace stay current.
    Start {
        #[arg(default_value = "")]
        title: String,
    },
    /// Add a message.
    Add {
        id: String,
        /// user, assistant, system or tool.
        #[arg(long, value_parser = parse_enum::<Role>, default_value = "user")]
        role: Role,
        content: String,
    },
    /// End it, with a summary.
    End {
        id: String,
        #[arg(long)]
        summary: Option<String>,
    },
    /// A conversation and its messages.
    Show { id: String },
    /// The most recent conversations.
    Recent {
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
}

/// `mnemon knowledge ...` (an agent's role knowledge; use `--ns agent:NAME`).
#[derive(Debug, Subcommand)]
pub enum KnowledgeCmd {
    /// Add role knowledge (similar content in the same category reinforces instead); prints
    /// the id and whether it was reinforced.
    Learn {
        #[arg(long, default_value = "general")]
        category: String,
        content: String,
    },
    /// Confidence + 0.1 (capped at 1), last used now.
    Reinforce { id: String },
    /// Current role knowledge, strongest first.
    List {
        #[arg(long)]
        category: Option<String>,
    },
    /// Retire knowledge not used since T.
    Prune {
        #[arg(long, value_parser = crate::cli::time)]
        before: Timestamp,
    },
}

/// `mnemon agent ...` (preferences, metrics, errors, performance, the context block).
#[derive(Debug, Subcommand)]
pub enum AgentCmd {
    /// Set preferences from a JSON object (partial: other keys stay; `null` removes one).
    Prefer {
        #[arg(long)]
        data: String,
    },
    /// The preferences over defaults (a JSON object, default `{}`).
    Preferences {
        #[arg(long, default_value = "{}")]
        defaults: String,
    },
    /// Record a task completion: `{"task","iterations","quality_gate_passed","duration_ms","errors"}`.
    Completed {
        #[arg(long)]
        data: String,
    },
    /// Record an error pattern (and its resolution).
    Error {
        pattern: String,
        #[arg(long)]
        resolution: Option<String>,
    },
    /// Tasks completed, average iterations, quality-gate pass rate, common errors.
    Performance,
    /// The agent context block (markdown).
    Context,
}

/// `mnemon episode ...`
#[derive(Debug, Subcommand)]
pub enum EpisodeCmd {
    /// Store an episode (summary: the first 200 characters unless given); prints its id.
    Store {
        content: String,
        #[arg(long = "type", default_value = "note")]
        episode_type: String,
        #[arg(long)]
        summary: Option<String>,
        #[arg(long)]
        task: Option<String>,
        #[arg(long = "file")]
        files: Vec<String>,
        /// 1-5; 4 and 5 are kept longer by `prune --days`.
        #[arg(long)]
        importance: Option<u8>,
    },
    /// The most similar episodes (their accesses are counted).
    Query {
        query: String,
        #[arg(long, default_value_t = 5)]
        limit: usize,
    },
    /// A task's context: its episodes first, then the most relevant, within a token budget.
    Context {
        task: String,
        #[arg(long, default_value = "")]
        query: String,
        #[arg(long, default_value_t = 1000)]
        max_tokens: usize,
    },
    /// How often an episode was returned by queries.
    Access { id: String },
    /// Retire old episodes (`--days`, important ones kept `--important-factor` times longer)
    /// or all but the `--keep` most important and newest.
    Prune {
        #[arg(long)]
        days: Option<u32>,
        #[arg(long, default_value_t = 3)]
        important_factor: u32,
        #[arg(long)]
        keep: Option<usize>,
    },
}

/// `mnemon project ...` (a project's knowledge; use `--ns project:...`).
#[derive(Debug, Subcommand)]
pub enum ProjectCmd {
    /// Add a pattern (`{"title","description","category","example"}`); an existing one with
    /// the same title or a similar description is returned instead (its example filled in).
    Pattern {
        #[arg(long)]
        data: String,
        /// The agent that found it (written to the learnings log).
        #[arg(long)]
        agent: Option<String>,
    },
    /// Current patterns.
    Patterns {
        #[arg(long)]
        category: Option<String>,
    },
    /// Add a gotcha (`{"title","problem","solution","severity"}`).
    Gotcha {
        #[arg(long)]
        data: String,
    },
    /// Current gotchas, most severe first.
    Gotchas {
        /// low, medium, high, critical.
        #[arg(long, value_parser = parse_enum::<mnemon::body::Severity>)]
        severity: Option<mnemon::body::Severity>,
    },
    /// Record FROM TYPE TO (e.g. `api depends_on storage`); cycles of ordered types are refused.
    Relate {
        from: String,
        relation_type: String,
        to: String,
        #[arg(long, default_value = "")]
        description: String,
    },
    /// Current relationships (touching COMPONENT, if given).
    Relations { component: Option<String> },
    /// Append to the learnings log.
    Learn {
        text: String,
        #[arg(long, default_value = "unknown")]
        agent: String,
        #[arg(long = "type")]
        learning_type: Option<String>,
        #[arg(long = "file")]
        files: Vec<String>,
    },
    /// The recent learnings as markdown.
    Learnings {
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Search patterns, decisions, gotchas, relationships and learnings.
    Search {
        query: String,
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// The project context block (markdown).
    Context,
}

/// `mnemon memory ...`: scoped markdown memory (scopes `global`, `project:PATH`,
/// `project-id:ID`, `agent:NAME`; without --scope, the scope of --ns).
#[derive(Debug, Subcommand)]
pub enum MemoryCmd {
    /// Add an entry to a section (learnings, errors, patterns, preferences) with importance
    /// 1-5 (TTL 1, 7, 30, 90 days, permanent); prints its id.
    Add {
        section: String,
        content: String,
        /// global, project:PATH (or the project id `memory projects` prints), project-id:ID or
        /// agent:NAME; default: the scope of --ns (global when --ns is not given).
        #[arg(long)]
        scope: Option<String>,
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=5))]
        importance: u8,
    },
    /// Set a project's brief.
    Brief {
        /// As for `add` (default: the scope of --ns).
        #[arg(long)]
        scope: Option<String>,
        text: String,
    },
    /// Every section of a scope as markdown (or one section with --section).
    Show {
        /// global, project:PATH (or the project id `memory projects` prints), project-id:ID or
        /// agent:NAME; default: the scope of --ns (global when --ns is not given).
        #[arg(long)]
        scope: Option<String>,
        #[arg(long)]
        section: Option<String>,
    },
    /// Projects with current entries.
    Projects,
    /// Delete (retire) an entry.
    Delete {
        id: String,
        /// global, project:PATH (or the project id `memory projects` prints), project-id:ID or
        /// agent:NAME; default: the scope of --ns (global when --ns is not given).
        #[arg(long)]
        scope: Option<String>,
    },
    /// Close the validity of every entry whose TTL ran out.
    Prune,
    /// Retire every entry of a scope.
    Clear {
        /// As for `add` (default: the scope of --ns).
        #[arg(long)]
        scope: Option<String>,
    },
    /// Import a section's markdown file (`## <timestamp> | importance:N | ttl:N | id:X`).
    Import {
        file: std::path::PathBuf,
        #[arg(long)]
        section: String,
        /// global, project:PATH (or the project id `memory projects` prints), project-id:ID or
        /// agent:NAME; default: the scope of --ns (global when --ns is not given).
        #[arg(long)]
        scope: Option<String>,
    },
    /// Import a knowledge-graph memory.jsonl as scoped entries.
    ImportGraph { file: std::path::PathBuf },
    /// The memory block for a prompt.
    Context {
        /// global, project:PATH (or the project id `memory projects` prints), project-id:ID or
        /// agent:NAME; default: the scope of --ns (global when --ns is not given).
        #[arg(long)]
        scope: Option<String>,
        #[arg(long, default_value = "")]
        query: String,
        #[arg(long, default_value_t = 2000)]
        budget: usize,
    },
}
