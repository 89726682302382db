//! Operations of the agent-memory domain: scoped memory (sections of a project's or the
//! global memory, with a time to live by importance), episodes with their access counts, an
//! agent's role knowledge, and a project's knowledge.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Entries, One, Operation, RecordOut, Session};
use crate::RecordId;
use crate::body::Episode;
use crate::error::{Result, invalid};
use crate::scoped::{Scope, Section};

/// A section of a scope's memory.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SectionArg {
    /// What was learned.
    Learnings,
    /// Errors and their solutions (`error → solution`).
    Errors,
    /// Patterns (`name: description`; one per name, a new description supersedes).
    Patterns,
    /// Preferences.
    Preferences,
}

impl From<Section> for SectionArg {
    fn from(s: Section) -> SectionArg {
        match s {
            Section::Learnings => SectionArg::Learnings,
            Section::Errors => SectionArg::Errors,
            Section::Patterns => SectionArg::Patterns,
            Section::Preferences => SectionArg::Preferences,
        }
    }
}

impl From<SectionArg> for Section {
    fn from(s: SectionArg) -> Section {
        match s {
            SectionArg::Learnings => Section::Learnings,
            SectionArg::Errors => Section::Errors,
            SectionArg::Patterns => Section::Patterns,
            SectionArg::Preferences => Section::Preferences,
        }
    }
}

/// The scope a request names (`current` or none: the session's own namespace, which must be
/// `global`, `project:ID` or `agent:NAME`), checked against the session's reach.
pub(super) fn scope_of(session: &Session, scope: Option<&str>) -> Result<Scope> {
    let scope = match scope {
        None | Some("current") => Scope::of_namespace(session.namespace()).ok_or_else(|| {
            invalid(format!(
                "namespace {:?} is not a memory scope (global, project:ID, agent:NAME): name a scope",
                session.namespace()
            ))
        })?,
        Some(s) => Scope::parse(s)?,
    };
    session.ns(Some(&scope.namespace()))?;
    Ok(scope)
}

/// The section an entry goes to when none is named: errors if it speaks of an error,
/// patterns of a pattern, else learnings (preferences in the global scope).
fn route(scope: &Scope, content: &str) -> Section {
    let lower = content.to_lowercase();
    if lower.contains("error") {
        Section::Errors
    } else if lower.contains("pattern") {
        Section::Patterns
    } else if *scope == Scope::Global {
        Section::Preferences
    } else {
        Section::Learnings
    }
}

/// The name of a section, as requests give it.
fn section_name(s: Section) -> String {
    s.title().to_lowercase()
}

/// Add an entry to a scope's memory.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryAdd {
    /// The entry: a learning; an error as `error → solution`; a pattern as `name:
    /// description`; a preference.
    pub content: String,
    /// Its section. Left out, it is routed as the memory server of the design does: errors if
    /// the content speaks of an error, patterns of a pattern, else learnings (preferences in
    /// the global scope).
    pub section: Option<SectionArg>,
    /// 1 to 5 (default 3): how long it is kept, 1 a day, 2 a week, 3 a month, 4 90 days, 5
    /// for good.
    #[schemars(range(min = 1, max = 5))]
    pub importance: Option<u8>,
    /// `current` (default: the server's namespace), `global`, `project:PATH` (or a project
    /// id), or `agent:NAME`.
    pub scope: Option<String>,
}

/// What `memory_add` did.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MemoryAdded {
    /// The entry's id.
    #[schemars(with = "String")]
    pub id: RecordId,
    /// The section it went to.
    pub section: String,
    /// The namespace of its scope.
    pub namespace: String,
    /// `written` (new), `existing` (the same entry was there) or `superseded` (a pattern of
    /// that name said something else and was replaced).
    pub outcome: String,
    /// The entry it replaced, when it superseded one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub supersedes: Option<RecordId>,
}

impl Operation for MemoryAdd {
    const NAME: &'static str = "memory_add";
    const TITLE: &'static str = "Add to scoped memory";
    const DESCRIPTION: &'static str = "Add an entry to the project's (or the global) memory: a learning, an error and its solution, a pattern, a preference. Entries expire by importance (1 a day ... 4 90 days, 5 never). Use it for what this project's agents should know next time; the `memory_context` block shows them.";
    const READ_ONLY: bool = false;
    type Output = MemoryAdded;

    fn run(self, session: &Session) -> Result<MemoryAdded> {
        let scope = scope_of(session, self.scope.as_deref())?;
        let section = self.section.map(Section::from).unwrap_or_else(|| route(&scope, &self.content));
        let importance = self.importance.unwrap_or(3);
        let outcome = session.db().memory().add_entry(&scope, section, &self.content, importance)?;
        let (how, supersedes) = match outcome {
            crate::Outcome::Existing { .. } => ("existing", None),
            crate::Outcome::Superseded { old, .. } => ("superseded", Some(old)),
            _ => ("written", None),
        };
        Ok(MemoryAdded {
            id: outcome.id(),
            section: section_name(section),
            namespace: scope.namespace(),
            outcome: how.into(),
            supersedes,
        })
    }
}

/// Show a scope's memory.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryShow {
    /// Only this section (default: all).
    pub section: Option<SectionArg>,
    /// `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
    pub scope: Option<String>,
}

/// One section's entries.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SectionEntries {
    /// The section.
    pub section: String,
    /// Its current entries, newest first.
    pub entries: Vec<SectionEntry>,
}

/// An entry of a section.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SectionEntry {
    /// The entry as its section writes it (`error → solution`, `name: description`).
    pub line: String,
    /// The record.
    pub record: RecordOut,
}

/// A scope's memory.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MemoryShown {
    /// The namespace of the scope.
    pub namespace: String,
    /// The project brief, if any.
    pub brief: Option<String>,
    /// The sections asked for.
    pub sections: Vec<SectionEntries>,
}

impl Operation for MemoryShow {
    const NAME: &'static str = "memory_show";
    const TITLE: &'static str = "Show scoped memory";
    const DESCRIPTION: &'static str =
        "The current entries of the project's (or the global) memory, by section, with the project brief.";
    const READ_ONLY: bool = true;
    type Output = MemoryShown;

    fn run(self, session: &Session) -> Result<MemoryShown> {
        let scope = scope_of(session, self.scope.as_deref())?;
        let memory = session.db().memory();
        let now = session.db().now();
        let wanted: Vec<Section> = match self.section {
            Some(s) => vec![s.into()],
            None => Section::ALL.to_vec(),
        };
        let mut sections = Vec::with_capacity(wanted.len());
        for s in wanted {
            let entries = memory
                .entries(&scope, s)?
                .into_iter()
                .map(|r| SectionEntry { line: crate::scoped::entry_text(&r), record: RecordOut::new(r, now) })
                .collect();
            sections.push(SectionEntries { section: section_name(s), entries });
        }
        Ok(MemoryShown { namespace: scope.namespace(), brief: memory.brief(&scope)?, sections })
    }
}

/// A scope's memory as a block to read.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryContext {
    /// What you are about to do: entries that match it come first, and with a query only
    /// matching entries are shown.
    #[serde(default)]
    pub query: String,
    /// The most tokens the block may have (default 2000).
    #[schemars(range(min = 0, max = 200000))]
    pub budget_tokens: Option<usize>,
    /// `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
    pub scope: Option<String>,
}

/// A block of text.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Block {
    /// The text to read.
    pub context: String,
}

impl Operation for MemoryContext {
    const NAME: &'static str = "memory_context";
    const TITLE: &'static str = "Scoped memory block";
    const DESCRIPTION: &'static str = "The project's brief and memory entries (with the global preferences) as a `<mnemon-memory>` block within a token budget, the most relevant to the query first.";
    const READ_ONLY: bool = true;
    type Output = Block;

    fn run(self, session: &Session) -> Result<Block> {
        let scope = scope_of(session, self.scope.as_deref())?;
        let text = session.db().memory().context(&scope, &self.query, self.budget_tokens.unwrap_or(2000))?;
        Ok(Block { context: text })
    }
}

/// Store an episode: something that happened while working.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeStore {
    /// What happened.
    pub content: String,
    /// Its type: code_generation, error_fix, review_feedback, decision, research, ...
    #[serde(rename = "type")]
    pub episode_type: Option<String>,
    /// A short summary (default: the first 200 characters).
    pub summary: Option<String>,
    /// Files involved.
    #[serde(default)]
    pub files: Vec<String>,
    /// The task it belongs to (its episodes come first in its context).
    pub task: Option<String>,
    /// 1 to 5: how much it matters (an episode with an importance is kept for good).
    #[schemars(range(min = 1, max = 5))]
    pub importance: Option<u8>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// A new record's id.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Stored {
    /// Its id.
    #[schemars(with = "String")]
    pub id: RecordId,
}

impl Operation for EpisodeStore {
    const NAME: &'static str = "episode_store";
    const TITLE: &'static str = "Store an episode";
    const DESCRIPTION: &'static str = "Record an episode of work (what was done, what went wrong, feedback received) so that later work on similar tasks can find it with `episode_query`.";
    const READ_ONLY: bool = false;
    type Output = Stored;

    fn run(self, session: &Session) -> Result<Stored> {
        let ns = session.ns(self.namespace.as_deref())?;
        let e = Episode {
            episode_type: self.episode_type.unwrap_or_else(|| "note".into()).as_str().into(),
            content: self.content,
            summary: self.summary,
            files: self.files.iter().map(|f| crate::Text::from(f.as_str())).collect(),
            ..Default::default()
        };
        Ok(Stored { id: ns.episodes().store(e, self.task.as_deref(), self.importance)? })
    }
}

/// Find the episodes most like a query.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeQuery {
    /// What to look for.
    pub query: String,
    /// How many (default 5).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<usize>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// An episode found, with how often episodes queries returned it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct EpisodeHit {
    /// The episode.
    pub record: RecordOut,
    /// Times returned by a query, this one included.
    pub access_count: u64,
    /// When last returned.
    #[schemars(with = "Option<String>")]
    pub last_accessed_at: Option<crate::Timestamp>,
}

/// Episodes found.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Episodes {
    /// Best first.
    pub episodes: Vec<EpisodeHit>,
}

impl Operation for EpisodeQuery {
    const NAME: &'static str = "episode_query";
    const TITLE: &'static str = "Find episodes";
    const DESCRIPTION: &'static str = "The episodes most similar to a query (words and meaning), each with how often it has been returned: what happened the last times a similar task was done.";
    const READ_ONLY: bool = false;
    type Output = Episodes;

    fn run(self, session: &Session) -> Result<Episodes> {
        let ns = session.ns(self.namespace.as_deref())?;
        let eps = ns.episodes();
        let now = session.db().now();
        let mut out = Vec::new();
        for r in eps.query(&self.query, super::count(self.limit, 5, 100)?)? {
            let a = eps.access(r.id)?;
            out.push(EpisodeHit {
                record: RecordOut::new(r, now),
                access_count: a.count,
                last_accessed_at: a.last,
            });
        }
        Ok(Episodes { episodes: out })
    }
}

/// Learn role knowledge (an agent's own namespace).
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeLearn {
    /// Its category (e.g. testing, style, tooling).
    pub category: String,
    /// What was learned. Something much like a current entry of the category reinforces it
    /// instead.
    pub content: String,
    /// The namespace (default: the session's, e.g. `agent:NAME`).
    pub namespace: Option<String>,
}

/// Role knowledge learned.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Learned {
    /// The entry.
    #[schemars(with = "String")]
    pub id: RecordId,
    /// Whether a similar entry was reinforced instead of a new one written.
    pub reinforced: bool,
}

impl Operation for KnowledgeLearn {
    const NAME: &'static str = "knowledge_learn";
    const TITLE: &'static str = "Learn role knowledge";
    const DESCRIPTION: &'static str = "Keep a piece of role knowledge (how this agent should work: conventions, tools, pitfalls) under a category. Learning something already known reinforces it (confidence up) instead of repeating it.";
    const READ_ONLY: bool = false;
    type Output = Learned;

    fn run(self, session: &Session) -> Result<Learned> {
        let ns = session.ns(self.namespace.as_deref())?;
        let (id, reinforced) = ns.agent().learn(&self.category, &self.content)?;
        Ok(Learned { id, reinforced })
    }
}

/// Reinforce role knowledge that proved right.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeReinforce {
    /// The entry: a record id (a unique head or tail of at least 6 hex digits also works).
    pub id: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for KnowledgeReinforce {
    const NAME: &'static str = "knowledge_reinforce";
    const TITLE: &'static str = "Reinforce role knowledge";
    const DESCRIPTION: &'static str =
        "Raise the confidence of a piece of role knowledge that proved right (by 0.1, at most 1).";
    const READ_ONLY: bool = false;
    type Output = One;

    fn run(self, session: &Session) -> Result<One> {
        let ns = session.ns(self.namespace.as_deref())?;
        let id = ns.resolve_id(&self.id)?;
        let r = ns.agent().reinforce(id)?;
        Ok(One { record: RecordOut::new(r, session.db().now()) })
    }
}

/// List role knowledge.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeList {
    /// Only this category.
    pub category: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for KnowledgeList {
    const NAME: &'static str = "knowledge_list";
    const TITLE: &'static str = "List role knowledge";
    const DESCRIPTION: &'static str =
        "The current role knowledge, strongest (highest confidence) first, of one category or all.";
    const READ_ONLY: bool = true;
    type Output = Entries;

    fn run(self, session: &Session) -> Result<Entries> {
        let ns = session.ns(self.namespace.as_deref())?;
        let now = session.db().now();
        let rs = ns.agent().knowledge(self.category.as_deref())?;
        Ok(Entries { entries: rs.into_iter().map(|r| RecordOut::new(r, now)).collect() })
    }
}

/// Relate two components of a project.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectRelate {
    /// The component that relates (created as an entity if new).
    pub from: String,
    /// How: depends_on, calls, extends, implements, uses, contains, ... (depends_on,
    /// extends and contains may not form cycles).
    pub relation: String,
    /// The component related to.
    pub to: String,
    /// What the relationship is about.
    #[serde(default)]
    pub description: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ProjectRelate {
    const NAME: &'static str = "project_relate";
    const TITLE: &'static str = "Relate components";
    const DESCRIPTION: &'static str = "Record how two components of the project relate (StorageService depends_on Database). Ordered relations (depends_on, extends, contains) that would close a cycle are refused.";
    const READ_ONLY: bool = false;
    type Output = Stored;

    fn run(self, session: &Session) -> Result<Stored> {
        let ns = session.ns(self.namespace.as_deref())?;
        Ok(Stored { id: ns.project().relate(&self.from, &self.relation, &self.to, &self.description)? })
    }
}

/// A project's knowledge as a block to read.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectKnowledge {
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ProjectKnowledge {
    const NAME: &'static str = "project_knowledge";
    const TITLE: &'static str = "Project knowledge";
    const DESCRIPTION: &'static str = "What the project knows about itself: its patterns, gotchas (critical first) and component relationships, as a block to read before changing the code.";
    const READ_ONLY: bool = true;
    type Output = Block;

    fn run(self, session: &Session) -> Result<Block> {
        let ns = session.ns(self.namespace.as_deref())?;
        Ok(Block { context: ns.project().context()? })
    }
}
