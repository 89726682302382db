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
    Start {
        /// The task: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
    },
    /// Move to completed.
    Complete {
        /// The task: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
    },
    /// Move to planned.
    Plan {
        /// The task: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
    },
    /// Move to blocked, with what blocks it.
    Block {
        /// The task: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
        /// What blocks it.
        #[arg(long)]
        reason: String,
    },
    /// Back to the status it had before it was blocked.
    Unblock {
        /// The task: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
    },
    /// Move to cancelled.
    Cancel {
        /// The task: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
        /// Why it is cancelled.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Make ID depend on ON (refused if it would close a cycle).
    Depend {
        /// The task: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
        /// The task it depends on (an id, or a unique start or end of it).
        on: String,
    },
    /// Whether all its dependencies are completed.
    CanStart {
        /// The task: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
    },
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
        /// Only tasks assigned to this person or agent.
        #[arg(long)]
        assignee: Option<String>,
        /// Only tasks carrying this tag.
        #[arg(long)]
        tag: Option<String>,
        /// Include completed and cancelled tasks.
        #[arg(long)]
        all: bool,
        /// At most this many.
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Link the task to a decision (both ways).
    Link {
        /// The task: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
        /// The decision (an id, or a unique start or end of it).
        decision: String,
    },
}

/// `mnemon decision ...`
#[derive(Debug, Subcommand)]
pub enum DecisionCmd {
    /// Set the status to accepted.
    Accept {
        /// The decision: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
    },
    /// Set the status to rejected.
    Reject {
        /// The decision: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
    },
    /// Set the status to deprecated.
    Deprecate {
        /// The decision: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
    },
    /// Set the status to proposed.
    Propose {
        /// The decision: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
    },
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
    History {
        /// The decision: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
    },
    /// Accepted decisions valid now.
    Active,
    /// Link the decision to a task (both ways).
    Link {
        /// The decision: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
        /// The task (an id, or a unique start or end of it).
        task: String,
    },
}

/// `mnemon entity ...`
#[derive(Debug, Subcommand)]
pub enum EntityCmd {
    /// The entity with this name (case-insensitive).
    Find {
        /// The name (or an alias it was merged under).
        name: String,
    },
    /// The entity with this name, created if there is none; prints its id.
    Ensure {
        /// The name.
        name: String,
        /// person, technology, component, service, concept, other, or any.
        #[arg(long = "type", default_value = "other")]
        entity_type: String,
        /// What it is (for a new entity).
        #[arg(long, default_value = "")]
        description: String,
    },
    /// Record a mention.
    Mention {
        /// The entity: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
        /// The words around the mention.
        context: String,
        /// Where it was mentioned (a file, a conversation, a URL...).
        #[arg(long, default_value = "manual")]
        source: String,
    },
    /// Set a property to a JSON value (`null` removes it).
    Set {
        /// The entity: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
        /// The property.
        key: String,
        /// Its value as JSON (`"text"`, `3`, `{"a":1}`; `null` removes the property).
        value: String,
    },
    /// Link two entities (both ways).
    Link {
        /// One entity (an id, or a unique start or end of it).
        a: String,
        /// The other.
        b: String,
    },
    /// Merge ABSORB_ID into KEEP_ID: the absorbed entity is superseded by the kept one.
    Merge {
        /// The entity that stays.
        keep: String,
        /// The entity merged into it (its name stays an alias).
        absorb: String,
    },
    /// Current entities of a type, most recently mentioned first.
    ByType {
        /// The type (person, technology, component, service, concept, other, or any).
        entity_type: String,
    },
}

/// `mnemon conversation ...`
#[derive(Debug, Subcommand)]
pub enum ConversationCmd {
    /// Start a conversation; prints its id. Only the last 100 per namespace stay current.
    Start {
        /// Its title.
        #[arg(default_value = "")]
        title: String,
    },
    /// Add a message.
    Add {
        /// The conversation: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
        /// user, assistant, system or tool.
        #[arg(long, value_parser = parse_enum::<Role>, default_value = "user")]
        role: Role,
        /// What was said.
        content: String,
    },
    /// End it, with a summary.
    End {
        /// The conversation: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
        /// What it came to.
        #[arg(long)]
        summary: Option<String>,
    },
    /// A conversation and its messages.
    Show {
        /// The conversation: its id, or a unique start or end of it (6 hex digits or more).
        id: String,
    },
    /// The most recent conversations.
    Recent {
        /// How many.
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
        /// Its category (testing, style, tooling...).
        #[arg(long, default_value = "general")]
        category: String,
        /// What was learned.
        content: String,
    },
    /// Confidence + 0.1 (capped at 1), last used now.
    Reinforce {
        /// The entry: its id, or a unique start or end of it.
        id: String,
    },
    /// Current role knowledge, strongest first.
    List {
        /// Only this category.
        #[arg(long)]
        category: Option<String>,
    },
    /// Retire knowledge not used since T.
    Prune {
        /// The time: RFC 3339 or a date.
        #[arg(long, value_parser = crate::cli::time)]
        before: Timestamp,
    },
}

/// `mnemon agent ...` (preferences, metrics, errors, performance, the context block).
#[derive(Debug, Subcommand)]
pub enum AgentCmd {
    /// Set preferences from a JSON object (partial: other keys stay; `null` removes one).
    Prefer {
        /// A JSON object of preferences (`{"indent": 4, "theme": null}`).
        #[arg(long)]
        data: String,
    },
    /// The preferences over defaults (a JSON object, default `{}`).
    Preferences {
        /// The defaults, a JSON object.
        #[arg(long, default_value = "{}")]
        defaults: String,
    },
    /// Record a task completion: `{"task","iterations","quality_gate_passed","duration_ms","errors"}`.
    Completed {
        /// The completion as a JSON object (fields above).
        #[arg(long)]
        data: String,
    },
    /// Record an error pattern (and its resolution).
    Error {
        /// The error, as it shows.
        pattern: String,
        /// How it was resolved.
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
        /// What happened.
        content: String,
        /// Its type: code_generation, error_fix, review_feedback, decision, research, note...
        #[arg(long = "type", default_value = "note")]
        episode_type: String,
        /// A short summary (default: the first 200 characters).
        #[arg(long)]
        summary: Option<String>,
        /// The task it belongs to.
        #[arg(long)]
        task: Option<String>,
        /// A file involved (repeatable).
        #[arg(long = "file")]
        files: Vec<String>,
        /// 1-5; 4 and 5 are kept longer by `prune --days`.
        #[arg(long)]
        importance: Option<u8>,
    },
    /// The most similar episodes (their accesses are counted).
    Query {
        /// What to look for.
        query: String,
        /// How many.
        #[arg(long, default_value_t = 5)]
        limit: usize,
    },
    /// A task's context: its episodes first, then the most relevant, within a token budget.
    Context {
        /// The task.
        task: String,
        /// What to look for among the other episodes.
        #[arg(long, default_value = "")]
        query: String,
        /// The most tokens the block may have.
        #[arg(long, default_value_t = 1000)]
        max_tokens: usize,
    },
    /// How often an episode was returned by queries.
    Access {
        /// The episode: its id, or a unique start or end of it.
        id: String,
    },
    /// Retire old episodes (`--days`, important ones kept `--important-factor` times longer)
    /// or all but the `--keep` most important and newest.
    Prune {
        /// Episodes older than this many days.
        #[arg(long)]
        days: Option<u32>,
        /// Important episodes (importance 4 and 5) are kept this many times longer.
        #[arg(long, default_value_t = 3)]
        important_factor: u32,
        /// Keep only this many episodes, the most important and newest.
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
        /// The pattern as JSON.
        #[arg(long)]
        data: String,
        /// The agent that found it (written to the learnings log).
        #[arg(long)]
        agent: Option<String>,
    },
    /// Current patterns.
    Patterns {
        /// Only this category.
        #[arg(long)]
        category: Option<String>,
    },
    /// Add a gotcha (`{"title","problem","solution","severity"}`).
    Gotcha {
        /// The gotcha as JSON.
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
        /// The component that relates (created as an entity if new).
        from: String,
        /// How: depends_on, calls, extends, implements, uses, contains, or any.
        relation_type: String,
        /// The component related to.
        to: String,
        /// What the relationship is about.
        #[arg(long, default_value = "")]
        description: String,
    },
    /// Current relationships (touching COMPONENT, if given).
    Relations {
        /// Only relationships from or to this component.
        component: Option<String>,
    },
    /// Append to the learnings log.
    Learn {
        /// What was learned.
        text: String,
        /// The agent that learned it.
        #[arg(long, default_value = "unknown")]
        agent: String,
        /// Its type (for example bugfix, convention, performance).
        #[arg(long = "type")]
        learning_type: Option<String>,
        /// A file it concerns (repeatable).
        #[arg(long = "file")]
        files: Vec<String>,
    },
    /// The recent learnings as markdown.
    Learnings {
        /// How many.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Search patterns, decisions, gotchas, relationships and learnings.
    Search {
        /// What to look for.
        query: String,
        /// How many.
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
        /// The section: learnings, errors (`error → solution`), patterns (`name: description`) or preferences.
        section: String,
        /// The entry.
        content: String,
        /// global, project:PATH (or the project id `memory projects` prints), project-id:ID or
        /// agent:NAME; default: the scope of --ns (global when --ns is not given).
        #[arg(long)]
        scope: Option<String>,
        /// 1-5: the entry is kept 1, 7, 30 or 90 days, or for good (5).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=5))]
        importance: u8,
    },
    /// Set a project's brief.
    Brief {
        /// As for `add` (default: the scope of --ns).
        #[arg(long)]
        scope: Option<String>,
        /// The brief: what the project is, in plain text.
        text: String,
    },
    /// Every section of a scope as markdown (or one section with --section).
    Show {
        /// global, project:PATH (or the project id `memory projects` prints), project-id:ID or
        /// agent:NAME; default: the scope of --ns (global when --ns is not given).
        #[arg(long)]
        scope: Option<String>,
        /// Only this section (learnings, errors, patterns, preferences).
        #[arg(long)]
        section: Option<String>,
    },
    /// Projects with current entries.
    Projects,
    /// Delete (retire) an entry.
    Delete {
        /// The entry: its id, or a unique start or end of it.
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
        /// The markdown file.
        file: std::path::PathBuf,
        /// The section it holds (learnings, errors, patterns, preferences).
        #[arg(long)]
        section: String,
        /// global, project:PATH (or the project id `memory projects` prints), project-id:ID or
        /// agent:NAME; default: the scope of --ns (global when --ns is not given).
        #[arg(long)]
        scope: Option<String>,
    },
    /// Import a knowledge-graph memory.jsonl as scoped entries.
    ImportGraph {
        /// The memory.jsonl file.
        file: std::path::PathBuf,
    },
    /// The memory block for a prompt.
    Context {
        /// global, project:PATH (or the project id `memory projects` prints), project-id:ID or
        /// agent:NAME; default: the scope of --ns (global when --ns is not given).
        #[arg(long)]
        scope: Option<String>,
        /// What you are about to do: with a query, only matching entries are shown.
        #[arg(long, default_value = "")]
        query: String,
        /// The most tokens the block may have.
        #[arg(long, default_value_t = 2000)]
        budget: usize,
    },
}
