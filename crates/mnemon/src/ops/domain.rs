//! Operations on the working state of a project: decisions (their status), entities (found by
//! name, mentioned, given properties, linked, merged) and conversations (started, added to,
//! ended, read back). Tasks are in [`super::tasks`]; a decision is superseded with
//! [`super::Supersede`] naming its kind, and its history is its [`super::Chain`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Entries, One, Operation, Session, Stored};
use crate::body::{DecisionStatus, Entity, Role};
use crate::error::{Error, Result};

/// Set a decision's status.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionStatusSet {
    /// The decision: a record id (a unique head or tail of at least 6 hex digits also works).
    pub id: String,
    /// Proposed, accepted, rejected or deprecated (a decision becomes superseded by
    /// superseding it).
    pub status: DecisionStatus,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for DecisionStatusSet {
    const NAME: &'static str = "decision_status";
    const TITLE: &'static str = "Set a decision's status";
    const DESCRIPTION: &'static str = "Propose, accept, reject or deprecate a decision; the change is a new revision in its history. A superseded decision keeps its status: change its replacement.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = One;

    fn run(self, session: &Session) -> Result<One> {
        let ns = session.ns(self.namespace.as_deref())?;
        let r = ns.decisions().set_status(ns.resolve_id(&self.id)?, self.status)?;
        Ok(One::now(session, r))
    }
}

/// The decisions in force.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionActive {
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for DecisionActive {
    const NAME: &'static str = "decision_active";
    const TITLE: &'static str = "Decisions in force";
    const DESCRIPTION: &'static str = "The accepted decisions valid now, newest first.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Entries;

    fn run(self, session: &Session) -> Result<Entries> {
        let ns = session.ns(self.namespace.as_deref())?;
        Ok(Entries::now(session, ns.decisions().active()?))
    }
}

/// Link a task and the decision it implements.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// The task.
    pub task: String,
    /// The decision.
    pub decision: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// A task and a decision, linked.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Linked {
    /// The task now.
    pub task: One,
    /// The decision now.
    pub decision: One,
}

impl Operation for Link {
    const NAME: &'static str = "link";
    const TITLE: &'static str = "Link a task and a decision";
    const DESCRIPTION: &'static str =
        "Record that a task implements a decision, on both (one commit): each lists the other.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Linked;

    fn run(self, session: &Session) -> Result<Linked> {
        let ns = session.ns(self.namespace.as_deref())?;
        let (task, decision) = (ns.resolve_id(&self.task)?, ns.resolve_id(&self.decision)?);
        ns.decisions().link_task(decision, task)?;
        Ok(Linked { task: One::latest(session, &ns, task)?, decision: One::latest(session, &ns, decision)? })
    }
}

/// Find an entity by name.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityFind {
    /// Its name (case does not matter).
    pub name: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for EntityFind {
    const NAME: &'static str = "entity_find";
    const TITLE: &'static str = "Find an entity";
    const DESCRIPTION: &'static str = "The current entity with a name, whatever its case.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = One;

    fn run(self, session: &Session) -> Result<One> {
        let ns = session.ns(self.namespace.as_deref())?;
        match ns.entities().find_by_name(&self.name)? {
            Some(r) => Ok(One::now(session, r)),
            None => Err(Error::NoSuchName {
                kind: "entity".into(),
                name: self.name,
                namespace: ns.name().as_str().to_string(),
            }),
        }
    }
}

/// Find an entity by name, or create it.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityEnsure {
    /// Its name (its identity, whatever the case).
    pub name: String,
    /// Its type: person, technology, component, service, concept, other or any (default
    /// other).
    pub entity_type: Option<String>,
    /// What it is (fills in an existing entity's empty description).
    #[serde(default)]
    pub description: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// An entity found or made.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Ensured {
    /// Its id.
    #[schemars(with = "String")]
    pub id: crate::RecordId,
    /// Whether it was made now.
    pub created: bool,
}

impl Operation for EntityEnsure {
    const NAME: &'static str = "entity_ensure";
    const TITLE: &'static str = "Ensure an entity";
    const DESCRIPTION: &'static str = "The entity with a name if there is one (filling in its description and type if they are unset), else a new one: how to refer to a person, component or technology without making duplicates.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Ensured;

    fn run(self, session: &Session) -> Result<Ensured> {
        let ns = session.ns(self.namespace.as_deref())?;
        let mut e = Entity { name: self.name, description: self.description, ..Default::default() };
        if let Some(t) = self.entity_type {
            e.entity_type = t.as_str().into();
        }
        let (id, created) = ns.entities().find_or_create(e)?;
        Ok(Ensured { id, created })
    }
}

/// Record where an entity was mentioned.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityMention {
    /// The entity.
    pub id: String,
    /// What was said about it.
    pub context: String,
    /// Where (a conversation, a file, a document).
    pub source: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for EntityMention {
    const NAME: &'static str = "entity_mention";
    const TITLE: &'static str = "Mention an entity";
    const DESCRIPTION: &'static str = "Record a mention of an entity: what was said and where.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = One;

    fn run(self, session: &Session) -> Result<One> {
        let ns = session.ns(self.namespace.as_deref())?;
        let r = ns.entities().mention(ns.resolve_id(&self.id)?, &self.context, &self.source)?;
        Ok(One::now(session, r))
    }
}

/// Set one property of an entity.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntitySet {
    /// The entity.
    pub id: String,
    /// The property.
    pub key: String,
    /// Its value, any JSON (`null` removes it).
    pub value: Value,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for EntitySet {
    const NAME: &'static str = "entity_set";
    const TITLE: &'static str = "Set an entity's property";
    const DESCRIPTION: &'static str = "Set one free property of an entity to a JSON value (null removes it).";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = One;

    fn run(self, session: &Session) -> Result<One> {
        let ns = session.ns(self.namespace.as_deref())?;
        let r = ns.entities().set_property(ns.resolve_id(&self.id)?, &self.key, self.value)?;
        Ok(One::now(session, r))
    }
}

/// Relate two entities.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityLink {
    /// One entity.
    pub a: String,
    /// The other.
    pub b: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for EntityLink {
    const NAME: &'static str = "entity_link";
    const TITLE: &'static str = "Relate two entities";
    const DESCRIPTION: &'static str = "Record that two entities are related, on both (one commit).";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = One;

    fn run(self, session: &Session) -> Result<One> {
        let ns = session.ns(self.namespace.as_deref())?;
        let (a, b) = (ns.resolve_id(&self.a)?, ns.resolve_id(&self.b)?);
        ns.entities().link(a, b)?;
        One::latest(session, &ns, a)
    }
}

/// Merge one entity into another.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityMerge {
    /// The entity that stays.
    pub keep: String,
    /// The entity merged into it (it ends).
    pub absorb: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for EntityMerge {
    const NAME: &'static str = "entity_merge";
    const TITLE: &'static str = "Merge two entities";
    const DESCRIPTION: &'static str = "Merge entity `absorb` into entity `keep` (the same thing under two names), in one commit: `keep` gains its mentions, the properties it lacks, its relations (re-pointed) and tags; `absorb` ends, superseded by `keep` (its history stays), and its name stays an alias of `keep`.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = One;

    fn run(self, session: &Session) -> Result<One> {
        let ns = session.ns(self.namespace.as_deref())?;
        let (keep, absorb) = (ns.resolve_id(&self.keep)?, ns.resolve_id(&self.absorb)?);
        Ok(One::now(session, ns.entities().merge(keep, absorb)?))
    }
}

/// The entities of a type.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityByType {
    /// The type (person, technology, component, service, concept, other or any).
    pub entity_type: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for EntityByType {
    const NAME: &'static str = "entity_by_type";
    const TITLE: &'static str = "Entities of a type";
    const DESCRIPTION: &'static str = "The current entities of one type, by name.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Entries;

    fn run(self, session: &Session) -> Result<Entries> {
        let ns = session.ns(self.namespace.as_deref())?;
        Ok(Entries::now(session, ns.entities().by_type(&self.entity_type)?))
    }
}

/// Start a conversation.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationStart {
    /// What it is about.
    pub title: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ConversationStart {
    const NAME: &'static str = "conversation_start";
    const TITLE: &'static str = "Start a conversation";
    const DESCRIPTION: &'static str = "Start a conversation; add its messages with conversation_add.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Stored;

    fn run(self, session: &Session) -> Result<Stored> {
        let ns = session.ns(self.namespace.as_deref())?;
        Ok(Stored { id: ns.conversations().start(&self.title)? })
    }
}

/// Add a message to a conversation.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationAdd {
    /// The conversation.
    pub id: String,
    /// Who said it: user, assistant, system or tool.
    pub role: Role,
    /// What was said.
    pub content: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ConversationAdd {
    const NAME: &'static str = "conversation_add";
    const TITLE: &'static str = "Add a message";
    const DESCRIPTION: &'static str =
        "Add a message to a conversation that has not ended; it is searchable at once.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Stored;

    fn run(self, session: &Session) -> Result<Stored> {
        let ns = session.ns(self.namespace.as_deref())?;
        let conversation = ns.resolve_id(&self.id)?;
        Ok(Stored { id: ns.conversations().add(conversation, self.role, &self.content)? })
    }
}

/// End a conversation.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationEnd {
    /// The conversation.
    pub id: String,
    /// What came of it.
    pub summary: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ConversationEnd {
    const NAME: &'static str = "conversation_end";
    const TITLE: &'static str = "End a conversation";
    const DESCRIPTION: &'static str = "End a conversation, optionally with a summary of what came of it.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = One;

    fn run(self, session: &Session) -> Result<One> {
        let ns = session.ns(self.namespace.as_deref())?;
        let r = ns.conversations().end(ns.resolve_id(&self.id)?, self.summary.as_deref())?;
        Ok(One::now(session, r))
    }
}

/// Read a conversation back.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationShow {
    /// The conversation.
    pub id: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// A conversation and its messages.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Transcript {
    /// The conversation.
    pub conversation: One,
    /// Its messages, in order.
    pub messages: Entries,
}

impl Operation for ConversationShow {
    const NAME: &'static str = "conversation_show";
    const TITLE: &'static str = "Read a conversation";
    const DESCRIPTION: &'static str = "A conversation and its messages, in order.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Transcript;

    fn run(self, session: &Session) -> Result<Transcript> {
        let ns = session.ns(self.namespace.as_deref())?;
        let id = ns.resolve_id(&self.id)?;
        let c = ns.get(id)?.ok_or_else(|| {
            Error::Storage(crate::StorageError::NotFound { namespace: ns.name().clone(), id })
        })?;
        let messages = ns.conversations().messages(id)?;
        Ok(Transcript { conversation: One::now(session, c), messages: Entries::now(session, messages) })
    }
}

/// The latest conversations.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationRecent {
    /// How many (default 10).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for ConversationRecent {
    const NAME: &'static str = "conversation_recent";
    const TITLE: &'static str = "Latest conversations";
    const DESCRIPTION: &'static str = "The latest conversations, newest first.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Entries;

    fn run(self, session: &Session) -> Result<Entries> {
        let ns = session.ns(self.namespace.as_deref())?;
        let limit = super::count(self.limit, 10, 1000)?;
        Ok(Entries::now(session, ns.conversations().recent(limit)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;
    use crate::ops::{Remember, Supersede, TaskDepend, TaskGraph, TaskList};

    fn session() -> std::result::Result<(tempfile::TempDir, Session), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let s = Session::new(crate::Db::create(dir.path().join("m.redb"))?, "p")?;
        Ok((dir, s))
    }

    #[test]
    fn the_working_state_runs_through_operations() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let (_dir, s) = session()?;
        let remember = |kind: &str, text: &str| Remember {
            kind: kind.into(),
            text: Some(text.into()),
            ..Default::default()
        };
        let d = s.call(remember("decision", "Use redb"))?.id.to_string();
        let t1 = s.call(remember("task", "Write the importer"))?.id.to_string();
        let t2 = s.call(remember("task", "Ship the importer"))?.id.to_string();

        // Decisions: status, and a supersession that must stay a decision.
        let r =
            s.call(DecisionStatusSet { id: d.clone(), status: DecisionStatus::Proposed, namespace: None })?;
        assert_eq!(r.record.record.body.to_json()["status"], "proposed");
        assert!(s.call(DecisionActive::default())?.entries.is_empty());
        let wrong = Supersede {
            id: t1.clone(),
            kind: Some("decision".into()),
            text: Some("x".into()),
            ..Default::default()
        };
        assert_eq!(s.call(wrong).err().map(|e| e.code()), Some(Code::InvalidInput));

        // Tasks: a dependency, its cycle refused, the graph, links both ways.
        s.call(TaskDepend { id: t2.clone(), on: t1.clone(), namespace: None })?;
        let cycle = s.call(TaskDepend { id: t1.clone(), on: t2.clone(), namespace: None });
        assert_eq!(cycle.err().map(|e| e.code()), Some(Code::Conflict));
        let g = s.call(TaskGraph::default())?;
        let waits: Vec<_> =
            g.tasks.iter().filter(|t| !t.dependencies.is_empty()).map(|t| t.id.to_string()).collect();
        assert_eq!(waits, vec![t2.clone()]);
        let ready = s.call(crate::ops::TaskCanStart { id: t2.clone(), namespace: None })?;
        assert!(!ready.ready && ready.waiting_on.iter().any(|w| w.to_string() == t1));
        let l = s.call(Link { task: t1.clone(), decision: d.clone(), namespace: None })?;
        assert_eq!(l.task.record.record.body.to_json()["related_decisions"][0], d.as_str());
        assert_eq!(l.decision.record.record.body.to_json()["related_tasks"][0], t1.as_str());
        assert_eq!(s.call(TaskList::default())?.entries.len(), 2);

        // Entities: one per name, found whatever the case, merged.
        let a = s.call(EntityEnsure { name: "Redb".into(), ..Default::default() })?;
        let again = s.call(EntityEnsure { name: "redb".into(), ..Default::default() })?;
        assert!(a.created && !again.created && a.id == again.id);
        let b = s.call(EntityEnsure { name: "redb-rs".into(), ..Default::default() })?;
        s.call(EntityMerge { keep: a.id.to_string(), absorb: b.id.to_string(), namespace: None })?;
        assert_eq!(s.call(EntityFind { name: "REDB-RS".into(), namespace: None })?.record.record.id, a.id);
        let missing = s.call(EntityFind { name: "sqlite".into(), namespace: None }).err();
        assert_eq!(missing.as_ref().map(|e| e.code()), Some(Code::NotFound));
        assert_eq!(
            missing.map(|e| e.to_string()).as_deref(),
            Some("no entity named \"sqlite\" in namespace p")
        );

        // Conversations: read back in order.
        let c = s.call(ConversationStart { title: "design".into(), namespace: None })?.id.to_string();
        for (role, text) in [(Role::User, "which store?"), (Role::Assistant, "redb")] {
            s.call(ConversationAdd { id: c.clone(), role, content: text.into(), namespace: None })?;
        }
        let t = s.call(ConversationShow { id: c, namespace: None })?;
        let said: Vec<String> = t.messages.entries.iter().map(|m| m.record.body.text()).collect();
        assert_eq!(said, vec!["which store?", "redb"]);
        assert_eq!(s.call(ConversationRecent::default())?.entries.len(), 1);
        Ok(())
    }
}
