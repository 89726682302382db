//! Operations on a project's knowledge: its patterns, gotchas, component relationships and
//! learnings log, searched together; and the namespace's overview (what carries a tag, counts
//! by kind and status) and upkeep (consolidation). Relating components and the knowledge
//! block, offered to models, are in [`super::memory`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Entries, Operation, RecordOut, Session, Stored};
use crate::body::Severity;
use crate::domain::{Consolidation, DomainStats};
use crate::error::{Result, invalid};
use crate::json::parse_input;
use crate::{Body, Kind, Record};

/// The body of kind `kind` a request gives as loose JSON (the kind's fields, envelope fields
/// beside them, as `add` takes them).
fn body_of(session: &Session, ns: Option<&str>, kind: Kind, fields: Map<String, Value>) -> Result<Body> {
    let ns = session.ns(ns)?;
    Ok(parse_input(Value::Object(fields), Some(kind), ns.name())?.record.body)
}

/// Add a pattern to a project.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectPattern {
    /// The pattern: `title`, `description`, `category`, `example`.
    pub pattern: Map<String, Value>,
    /// The agent that found it (written to the learnings log).
    pub agent: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// A pattern added, or the one already known.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PatternAdded {
    /// Its id.
    #[schemars(with = "String")]
    pub id: crate::RecordId,
    /// Whether a pattern with the same title or a similar description was there (its example
    /// filled in if it had none); nothing new was written.
    pub existing: bool,
}

impl Operation for ProjectPattern {
    const NAME: &'static str = "project_pattern";
    const TITLE: &'static str = "Add a pattern";
    const DESCRIPTION: &'static str = "Add a pattern to the project's knowledge, unless one with the same title or a similar description is there: then that one is answered (its example filled in if it had none). A new pattern is also written to the learnings log.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = PatternAdded;

    fn run(self, session: &Session) -> Result<PatternAdded> {
        let Body::Pattern(p) = body_of(session, self.namespace.as_deref(), Kind::Pattern, self.pattern)?
        else {
            return Err(invalid("the data is not a pattern"));
        };
        let ns = session.ns(self.namespace.as_deref())?;
        let (id, existing) = ns.project().add_pattern(p, self.agent.as_deref())?;
        Ok(PatternAdded { id, existing })
    }
}

/// A project's patterns.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectPatterns {
    /// Only this category.
    pub category: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ProjectPatterns {
    const NAME: &'static str = "project_patterns";
    const TITLE: &'static str = "Patterns";
    const DESCRIPTION: &'static str =
        "The project's current patterns (of one category, or all), oldest first.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Entries;

    fn run(self, session: &Session) -> Result<Entries> {
        let ns = session.ns(self.namespace.as_deref())?;
        Ok(Entries::now(session, ns.project().patterns(self.category.as_deref())?))
    }
}

/// Add a gotcha to a project.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectGotcha {
    /// The gotcha: `title`, `problem`, `solution`, `severity` (low, medium, high, critical).
    pub gotcha: Map<String, Value>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ProjectGotcha {
    const NAME: &'static str = "project_gotcha";
    const TITLE: &'static str = "Add a gotcha";
    const DESCRIPTION: &'static str = "Add a gotcha (a trap and its way out) to the project's knowledge.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Stored;

    fn run(self, session: &Session) -> Result<Stored> {
        let Body::Gotcha(g) = body_of(session, self.namespace.as_deref(), Kind::Gotcha, self.gotcha)? else {
            return Err(invalid("the data is not a gotcha"));
        };
        let ns = session.ns(self.namespace.as_deref())?;
        Ok(Stored { id: ns.project().add_gotcha(g)? })
    }
}

/// A project's gotchas.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectGotchas {
    /// Only this severity.
    pub severity: Option<Severity>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ProjectGotchas {
    const NAME: &'static str = "project_gotchas";
    const TITLE: &'static str = "Gotchas";
    const DESCRIPTION: &'static str =
        "The project's current gotchas (of one severity, or all), most severe first.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Entries;

    fn run(self, session: &Session) -> Result<Entries> {
        let ns = session.ns(self.namespace.as_deref())?;
        Ok(Entries::now(session, ns.project().gotchas(self.severity)?))
    }
}

/// A project's component relationships.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectRelations {
    /// Only those from or to this component.
    pub component: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ProjectRelations {
    const NAME: &'static str = "project_relations";
    const TITLE: &'static str = "Relationships";
    const DESCRIPTION: &'static str =
        "The project's current component relationships (touching one component, or all).";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Entries;

    fn run(self, session: &Session) -> Result<Entries> {
        let ns = session.ns(self.namespace.as_deref())?;
        Ok(Entries::now(session, ns.project().relationships(self.component.as_deref())?))
    }
}

/// Append to a project's learnings log.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectLearn {
    /// What was learned.
    pub text: String,
    /// The agent that learned it (default unknown).
    pub agent: Option<String>,
    /// Its type (for example bugfix, convention, performance).
    #[serde(rename = "type")]
    pub learning_type: Option<String>,
    /// The files it concerns.
    #[serde(default)]
    pub files: Vec<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ProjectLearn {
    const NAME: &'static str = "project_learn";
    const TITLE: &'static str = "Log a learning";
    const DESCRIPTION: &'static str = "Append a learning to the project's log, with the agent that learned it, its type and the files it concerns; it is kept permanently.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Stored;

    fn run(self, session: &Session) -> Result<Stored> {
        let ns = session.ns(self.namespace.as_deref())?;
        let mut meta = json!({});
        if let Some(t) = self.learning_type {
            meta["type"] = json!(t);
        }
        if !self.files.is_empty() {
            meta["related_files"] = json!(self.files);
        }
        let agent = self.agent.as_deref().unwrap_or("unknown");
        Ok(Stored { id: ns.project().record_learning(agent, &self.text, &meta)? })
    }
}

/// A project's latest learnings.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectLearnings {
    /// How many (default 10).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// The learnings log.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Learnings {
    /// The learnings, oldest first.
    pub entries: Vec<RecordOut>,
    /// The same as the readable markdown log (`## date`, `### [agent] time`, the text).
    pub markdown: String,
}

impl Operation for ProjectLearnings {
    const NAME: &'static str = "project_learnings";
    const TITLE: &'static str = "Learnings log";
    const DESCRIPTION: &'static str =
        "The project's latest learnings, oldest first, as records and as the markdown log.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Learnings;

    fn run(self, session: &Session) -> Result<Learnings> {
        let ns = session.ns(self.namespace.as_deref())?;
        let limit = super::count(self.limit, 10, 1000)?;
        let project = ns.project();
        let entries = Entries::now(session, project.learnings(limit)?).entries;
        Ok(Learnings { entries, markdown: project.learnings_markdown(limit)? })
    }
}

/// Records of one kind.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Group {
    /// The kind.
    #[schemars(with = "String")]
    pub kind: Kind,
    /// Its records.
    pub records: Vec<RecordOut>,
}

/// Records by kind.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Groups {
    /// One group per kind that has any, in the kinds' order.
    pub groups: Vec<Group>,
}

impl Groups {
    fn now(session: &Session, groups: std::collections::BTreeMap<Kind, Vec<Record>>) -> Groups {
        let at = session.db().now();
        let groups = groups
            .into_iter()
            .map(|(kind, rs)| Group {
                kind,
                records: rs.into_iter().map(|r| RecordOut::new(r, at)).collect(),
            })
            .collect();
        Groups { groups }
    }
}

/// Search a project's knowledge.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectSearch {
    /// What to look for.
    pub query: String,
    /// How many in all (default 10).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ProjectSearch {
    const NAME: &'static str = "project_search";
    const TITLE: &'static str = "Search project knowledge";
    const DESCRIPTION: &'static str = "Search the project's patterns, decisions, gotchas, relationships and learnings together (words and meaning), grouped by kind, best first.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Groups;

    fn run(self, session: &Session) -> Result<Groups> {
        let ns = session.ns(self.namespace.as_deref())?;
        let found = ns.project().search_all(&self.query, super::count(self.limit, 10, 1000)?)?;
        Ok(Groups::now(session, found))
    }
}

/// What carries a tag.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tagged {
    /// The tag.
    pub tag: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for Tagged {
    const NAME: &'static str = "tagged";
    const TITLE: &'static str = "Tagged records";
    const DESCRIPTION: &'static str = "The current records carrying a tag, grouped by kind.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Groups;

    fn run(self, session: &Session) -> Result<Groups> {
        let ns = session.ns(self.namespace.as_deref())?;
        Ok(Groups::now(session, ns.by_tag(&self.tag)?))
    }
}

/// Counts of what is current in a namespace.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stats {
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for Stats {
    const NAME: &'static str = "stats";
    const TITLE: &'static str = "Namespace statistics";
    const DESCRIPTION: &'static str = "What is current in a namespace: records by kind and tag, decisions and tasks by status, tasks by priority and overdue, the average completion time, entities by type and the most mentioned.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = DomainStats;

    fn run(self, session: &Session) -> Result<DomainStats> {
        session.ns(self.namespace.as_deref())?.domain_stats()
    }
}

/// Retire what is over and done.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Consolidate {
    /// Only what ended more than this many days ago.
    pub older_than_days: u32,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for Consolidate {
    const NAME: &'static str = "consolidate";
    const TITLE: &'static str = "Consolidate";
    const DESCRIPTION: &'static str = "Retire cancelled tasks and decisions marked superseded that are older than some days, so current listings stay short (their history stays for time travel).";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Consolidation;

    fn run(self, session: &Session) -> Result<Consolidation> {
        session.ns(self.namespace.as_deref())?.consolidate(self.older_than_days)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;
    use crate::ops::{
        AgentCompleted, AgentError, AgentPerformance, AgentPrefer, AgentPreferences, EpisodePrune,
    };

    #[test]
    fn project_and_agent_memory_run_through_operations() -> std::result::Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let s = Session::new(crate::Db::create(dir.path().join("m.redb"))?, "project:demo")?;
        let obj = |v: Value| v.as_object().cloned().unwrap_or_default();

        // A pattern once; the same title again is the one already known.
        let p = obj(json!({"title": "Retry with jitter", "description": "back off", "category": "net"}));
        let first =
            s.call(ProjectPattern { pattern: p.clone(), agent: Some("dev".into()), namespace: None })?;
        let again = s.call(ProjectPattern { pattern: p, agent: None, namespace: None })?;
        assert!(!first.existing && again.existing && again.id == first.id);
        let g = obj(
            json!({"title": "redb lock", "problem": "second open fails", "solution": "shared mode", "severity": "critical"}),
        );
        s.call(ProjectGotcha { gotcha: g, namespace: None })?;
        let bad = s.call(ProjectGotcha { gotcha: obj(json!({"title": "x", "bogus": 1})), namespace: None });
        assert_eq!(bad.err().map(|e| e.code()), Some(Code::InvalidInput));
        assert_eq!(
            s.call(ProjectGotchas { severity: Some(Severity::Critical), namespace: None })?.entries.len(),
            1
        );
        assert_eq!(
            s.call(ProjectGotchas { severity: Some(Severity::Low), namespace: None })?.entries.len(),
            0
        );
        s.call(ProjectLearn {
            text: "pnpm, not npm".into(),
            files: vec!["package.json".into()],
            ..Default::default()
        })?;
        // The pattern wrote a learning too.
        let log = s.call(ProjectLearnings::default())?;
        assert_eq!(log.entries.len(), 2);
        assert!(log.markdown.contains("pnpm, not npm") && log.markdown.contains("package.json"));
        let found = s.call(ProjectSearch { query: "redb lock".into(), ..Default::default() })?;
        assert_eq!(found.groups.first().map(|g| g.kind), Some(Kind::Gotcha));

        // Tags and statistics over the namespace.
        let tagged = s.call(Tagged { tag: "none".into(), namespace: None })?;
        assert!(tagged.groups.is_empty());
        let stats = s.call(Stats::default())?;
        assert_eq!(stats.by_kind.get("gotcha"), Some(&1));

        // An agent's preferences, metrics and errors.
        s.call(AgentPrefer { preferences: obj(json!({"indent": 4})), namespace: None })?;
        let prefs =
            s.call(AgentPreferences { defaults: obj(json!({"indent": 2, "tabs": false})), namespace: None })?;
        assert_eq!(prefs.preferences, json!({"indent": 4, "tabs": false}));
        let done = AgentCompleted {
            task: "t1".into(),
            iterations: 3,
            quality_gate_passed: true,
            ..Default::default()
        };
        s.call(done)?;
        s.call(AgentError { pattern: "E0502".into(), resolution: Some("clone".into()), namespace: None })?;
        let perf = s.call(AgentPerformance::default())?;
        assert_eq!((perf.tasks_completed, perf.average_iterations, perf.common_errors.len()), (1, 3.0, 1));
        let neither = s.call(EpisodePrune::default());
        assert_eq!(neither.err().map(|e| e.code()), Some(Code::InvalidInput));
        Ok(())
    }
}
