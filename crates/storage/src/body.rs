//! Typed record bodies, one struct per kind, and [`Body`], the one enum over them.
//!
//! The binary layout of each struct is the field list of its `bin_struct!` line (the compiler
//! checks that it names every field). That order is part of the file format: add fields only
//! at the end of a line, together with a new revision layout version (see `codec.rs`). Enum
//! variant codes in the `bin_enum!` lines never change.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::codec::{bin_enum, bin_struct};
use crate::error::InputError;
use crate::id::RecordId;
use crate::json::JsonText;
use crate::kind::Kind;
use crate::text::{Text, TextList};
use crate::time::Timestamp;

/// Status of a decision.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionStatus {
    /// Proposed, not yet accepted.
    Proposed,
    /// Accepted and in force.
    #[default]
    Accepted,
    /// Rejected.
    Rejected,
    /// Replaced by a later decision.
    Superseded,
    /// No longer recommended, not replaced.
    Deprecated,
}

/// A decision and why it was made.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Decision {
    /// Short title.
    #[serde(alias = "text")]
    pub title: String,
    /// What was decided.
    #[serde(alias = "decision")]
    pub description: String,
    /// Why.
    pub rationale: String,
    /// Background.
    pub context: String,
    /// Status.
    pub status: DecisionStatus,
    /// Options that were considered.
    pub alternatives: Vec<String>,
    /// Trade-offs and impacts.
    pub consequences: Vec<String>,
    /// Related decisions.
    pub related_decisions: Vec<RecordId>,
    /// Tasks spawned by this decision.
    pub related_tasks: Vec<RecordId>,
}

/// Status of a task.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not yet planned.
    #[default]
    Backlog,
    /// Planned.
    Planned,
    /// Being worked on.
    InProgress,
    /// Blocked (see `blocked_by`).
    Blocked,
    /// Done.
    Completed,
    /// Abandoned.
    Cancelled,
}

/// Priority of a task.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Must be done first.
    Critical,
    /// High.
    High,
    /// Medium.
    #[default]
    Medium,
    /// Low.
    Low,
}

/// One entry of a task's status history.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusChange {
    /// Previous status.
    pub from: TaskStatus,
    /// New status.
    pub to: TaskStatus,
    /// When.
    pub at: Timestamp,
    /// Why, if given.
    #[serde(default)]
    pub reason: Option<String>,
}

/// A task.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Task {
    /// Short title.
    #[serde(alias = "text")]
    pub title: String,
    /// Details.
    pub description: String,
    /// Status.
    pub status: TaskStatus,
    /// Priority.
    pub priority: Priority,
    /// Who does it.
    pub assignee: Option<Text>,
    /// When it is due.
    pub due: Option<Timestamp>,
    /// When it was completed.
    pub completed_at: Option<Timestamp>,
    /// Tasks that must complete first.
    pub dependencies: Vec<RecordId>,
    /// What blocks it.
    pub blocked_by: Option<String>,
    /// Decisions that spawned it.
    pub related_decisions: Vec<RecordId>,
    /// Every status change, oldest first.
    pub status_history: Vec<StatusChange>,
}

/// Where an entity was mentioned.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mention {
    /// The text around the mention.
    pub context: String,
    /// When.
    pub at: Timestamp,
    /// Where from (`conversation`, `manual`, ...).
    #[serde(default)]
    pub source: Text,
}

/// An entity: a person, technology, component, service, concept...
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Entity {
    /// Name (its identity, case-insensitively).
    #[serde(alias = "text")]
    pub name: String,
    /// Type (`person`, `technology`, `component`, `service`, `concept`, `other`, or any).
    #[serde(alias = "entityType")]
    pub entity_type: Text,
    /// Description.
    pub description: String,
    /// Free key-value properties (a JSON object).
    pub properties: JsonText,
    /// Where it was mentioned.
    pub mentions: Vec<Mention>,
    /// Related entities.
    pub related_entities: Vec<RecordId>,
}

impl Default for Entity {
    fn default() -> Self {
        Entity {
            name: String::new(),
            entity_type: Text::const_new("other"),
            description: String::new(),
            properties: JsonText::empty_object(),
            mentions: Vec::new(),
            related_entities: Vec::new(),
        }
    }
}

/// A directed, typed relation: `from` `relation_type` `to`.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Relation {
    /// Source (an entity or component name).
    pub from: String,
    /// Relation type in active voice (`depends_on`, `uses`, ...).
    #[serde(alias = "relationType", alias = "relationshipType")]
    pub relation_type: String,
    /// Target.
    pub to: String,
    /// Optional description.
    pub description: String,
}

/// A fact observed about an entity.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Observation {
    /// The entity's name.
    #[serde(alias = "entityName")]
    pub entity: String,
    /// The observation.
    #[serde(alias = "text")]
    pub content: String,
}

/// A code pattern.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Pattern {
    /// Title.
    #[serde(alias = "text", alias = "name")]
    pub title: String,
    /// Description.
    pub description: String,
    /// Category.
    pub category: Text,
    /// Example code.
    pub example: Option<String>,
}

/// Severity of a gotcha.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Low.
    Low,
    /// Medium.
    #[default]
    Medium,
    /// High: shown first in context blocks.
    High,
    /// Critical.
    Critical,
}

/// A pitfall: problem, solution, severity.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Gotcha {
    /// Title.
    #[serde(alias = "text")]
    pub title: String,
    /// The problem.
    pub problem: String,
    /// The solution.
    pub solution: String,
    /// Severity.
    pub severity: Severity,
}

/// Something learned.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Learning {
    /// The learning.
    #[serde(alias = "content")]
    pub text: String,
    /// Files it concerns.
    pub related_files: TextList,
}

/// An error and its fix.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ErrorFix {
    /// The error (message or pattern).
    #[serde(alias = "text", alias = "pattern")]
    pub error: String,
    /// How it was fixed, if known.
    #[serde(alias = "resolution")]
    pub solution: String,
    /// Where it happened.
    pub context: String,
}

/// An episode of agent work.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Episode {
    /// Type: `code_generation`, `error_fix`, `review_feedback`, `decision`, `research`, ...
    #[serde(alias = "type")]
    pub episode_type: Text,
    /// What happened.
    #[serde(alias = "text")]
    pub content: String,
    /// A short summary (the first 200 characters when not given).
    pub summary: Option<String>,
    /// Files involved.
    pub files: TextList,
    /// How often it was returned by a query.
    pub access_count: u64,
    /// When it was last returned by a query.
    pub last_accessed_at: Option<Timestamp>,
}

/// Role knowledge of an agent (its confidence is the record's `confidence`).
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Knowledge {
    /// Category.
    pub category: Text,
    /// The knowledge.
    #[serde(alias = "text")]
    pub content: String,
    /// When it was last used or reinforced.
    pub last_used: Option<Timestamp>,
}

/// A preference.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Preference {
    /// Key (its identity when not empty), e.g. `code_style.indent`.
    pub key: Text,
    /// Structured value.
    pub value: JsonText,
    /// The preference in words.
    #[serde(alias = "content")]
    pub text: String,
}

/// The project brief.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Brief {
    /// The brief.
    #[serde(alias = "content")]
    pub text: String,
}

/// A conversation session.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Conversation {
    /// Title.
    #[serde(alias = "text")]
    pub title: String,
    /// Summary, set when it ends.
    pub summary: Option<String>,
    /// When it ended.
    pub ended_at: Option<Timestamp>,
    /// Decisions recorded during it.
    pub extracted_decisions: Vec<RecordId>,
    /// Tasks recorded during it.
    pub extracted_tasks: Vec<RecordId>,
    /// Entities recorded during it.
    pub extracted_entities: Vec<RecordId>,
}

/// Who said a message.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user.
    #[default]
    User,
    /// The assistant.
    Assistant,
    /// The system.
    System,
    /// A tool.
    Tool,
}

impl Role {
    /// The role as its JSON form spells it (`user`, `assistant`, `system`, `tool`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Tool => "tool",
        }
    }
}

/// One message of a conversation.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Message {
    /// The conversation it belongs to.
    pub conversation: Option<RecordId>,
    /// Who said it.
    pub role: Role,
    /// What was said.
    #[serde(alias = "text")]
    pub content: String,
}

/// Task completion metrics of an agent.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Metrics {
    /// The task.
    #[serde(alias = "task_id")]
    pub task: Text,
    /// Iterations it took.
    pub iterations: u32,
    /// Whether the quality gate passed.
    pub quality_gate_passed: bool,
    /// Duration in milliseconds, if measured.
    pub duration_ms: Option<u64>,
    /// Errors met on the way.
    pub errors: Vec<String>,
}

/// Lower-case, trim and collapse white space: the normal form of identity keys.
pub fn normalise_key(text: &str) -> String {
    text.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>().join(" ")
}

fn required(kind: Kind, field: &'static str, value: &str) -> Result<(), InputError> {
    if value.trim().is_empty() { Err(InputError::MissingField { kind, field }) } else { Ok(()) }
}

/// A typed body: the struct of one kind.
pub trait KindBody: Into<Body> + Sized {
    /// Its kind.
    const KIND: Kind;
    /// The struct, if the body is of this kind.
    fn from_body(body: Body) -> Option<Self>;
    /// A reference to the struct, if the body is of this kind.
    fn from_body_ref(body: &Body) -> Option<&Self>;
}

macro_rules! bodies {
    ($( $variant:ident ),* $(,)?) => {
        /// The typed body of a record: one variant per [`Kind`].
        #[derive(Clone, PartialEq, Debug)]
        #[non_exhaustive]
        pub enum Body {
            $(
                #[doc = concat!("A `", stringify!($variant), "` body.")]
                $variant($variant),
            )*
        }

        impl Body {
            /// The kind of this body.
            pub fn kind(&self) -> Kind {
                match self {
                    $( Body::$variant(_) => Kind::$variant, )*
                }
            }

            /// Parse and [validate](Body::validate) a body of `kind` from JSON (unknown fields
            /// are an error).
            pub fn from_json(kind: Kind, value: serde_json::Value) -> Result<Body, InputError> {
                let body = Body::parse_json(kind, value)?;
                body.validate()?;
                Ok(body)
            }

            /// Parse a body of `kind` from JSON (unknown fields are an error) without checking
            /// the fields the kind requires: for a body on its way to a write, which the store
            /// validates.
            pub fn parse_json(kind: Kind, value: serde_json::Value) -> Result<Body, InputError> {
                let bad = |e: serde_json::Error| InputError::BadBody { kind, reason: e.to_string() };
                Ok(match kind {
                    $( Kind::$variant => Body::$variant(serde_json::from_value(value).map_err(bad)?), )*
                })
            }

            /// The body as a JSON object.
            pub fn to_json(&self) -> serde_json::Value {
                let v = match self {
                    $( Body::$variant(b) => serde_json::to_value(b), )*
                };
                // Serialising these plain structs to a Value cannot fail (string keys only).
                v.unwrap_or(serde_json::Value::Null)
            }

            /// The default body of a kind (all fields empty).
            pub fn empty(kind: Kind) -> Body {
                match kind {
                    $( Kind::$variant => Body::$variant($variant::default()), )*
                }
            }

            pub(crate) fn encode_into(&self, w: &mut crate::codec::Writer) {
                match self {
                    $( Body::$variant(b) => crate::codec::Bin::put(b, w), )*
                }
            }

            pub(crate) fn decode(kind: Kind, r: &mut crate::codec::Reader<'_>) -> crate::codec::Got<Body> {
                Ok(match kind {
                    $( Kind::$variant => Body::$variant(crate::codec::Bin::get(r)?), )*
                })
            }
        }

        $(
            impl From<$variant> for Body {
                fn from(b: $variant) -> Body {
                    Body::$variant(b)
                }
            }

            impl KindBody for $variant {
                const KIND: Kind = Kind::$variant;

                fn from_body(body: Body) -> Option<Self> {
                    match body {
                        Body::$variant(b) => Some(b),
                        _ => None,
                    }
                }

                fn from_body_ref(body: &Body) -> Option<&Self> {
                    match body {
                        Body::$variant(b) => Some(b),
                        _ => None,
                    }
                }
            }
        )*
    };
}

bodies!(
    Decision,
    Task,
    Entity,
    Relation,
    Observation,
    Pattern,
    Gotcha,
    Learning,
    ErrorFix,
    Episode,
    Knowledge,
    Preference,
    Brief,
    Conversation,
    Message,
    Metrics,
);

// The binary layouts (see `codec::Bin`): fields in this order. Append only, with a new
// revision layout version.
bin_enum!(DecisionStatus { Proposed = 0, Accepted = 1, Rejected = 2, Superseded = 3, Deprecated = 4 });
bin_enum!(TaskStatus { Backlog = 0, Planned = 1, InProgress = 2, Blocked = 3, Completed = 4, Cancelled = 5 });
bin_enum!(Priority { Critical = 0, High = 1, Medium = 2, Low = 3 });
bin_enum!(Severity { Low = 0, Medium = 1, High = 2, Critical = 3 });
bin_enum!(Role { User = 0, Assistant = 1, System = 2, Tool = 3 });
bin_struct!(StatusChange { from, to, at, reason });
bin_struct!(Mention { context, at, source });
bin_struct!(Decision {
    title,
    description,
    rationale,
    context,
    status,
    alternatives,
    consequences,
    related_decisions,
    related_tasks
});
bin_struct!(Task {
    title,
    description,
    status,
    priority,
    assignee,
    due,
    completed_at,
    dependencies,
    blocked_by,
    related_decisions,
    status_history
});
bin_struct!(Entity { name, entity_type, description, properties, mentions, related_entities });
bin_struct!(Relation { from, relation_type, to, description });
bin_struct!(Observation { entity, content });
bin_struct!(Pattern { title, description, category, example });
bin_struct!(Gotcha { title, problem, solution, severity });
bin_struct!(Learning { text, related_files });
bin_struct!(ErrorFix { error, solution, context });
bin_struct!(Episode { episode_type, content, summary, files, access_count, last_accessed_at });
bin_struct!(Knowledge { category, content, last_used });
bin_struct!(Preference { key, value, text });
bin_struct!(Brief { text });
bin_struct!(Conversation {
    title,
    summary,
    ended_at,
    extracted_decisions,
    extracted_tasks,
    extracted_entities
});
bin_struct!(Message { conversation, role, content });
bin_struct!(Metrics { task, iterations, quality_gate_passed, duration_ms, errors });

impl Body {
    /// Check the fields a kind cannot do without.
    pub fn validate(&self) -> Result<(), InputError> {
        let k = self.kind();
        match self {
            Body::Decision(b) => required(k, "title", &b.title),
            Body::Task(b) => required(k, "title", &b.title),
            Body::Entity(b) => required(k, "name", &b.name),
            Body::Relation(b) => {
                required(k, "from", &b.from)?;
                required(k, "relation_type", &b.relation_type)?;
                required(k, "to", &b.to)
            }
            Body::Observation(b) => {
                required(k, "entity", &b.entity)?;
                required(k, "content", &b.content)
            }
            Body::Pattern(b) => required(k, "title", &b.title),
            Body::Gotcha(b) => required(k, "title", &b.title),
            Body::Learning(b) => required(k, "text", &b.text),
            Body::ErrorFix(b) => required(k, "error", &b.error),
            Body::Episode(b) => required(k, "content", &b.content),
            Body::Knowledge(b) => required(k, "content", &b.content),
            Body::Preference(b) => {
                if b.key.trim().is_empty() && b.text.trim().is_empty() {
                    Err(InputError::MissingField { kind: k, field: "key or text" })
                } else {
                    Ok(())
                }
            }
            Body::Brief(b) => required(k, "text", &b.text),
            Body::Conversation(_) => Ok(()),
            Body::Message(b) => required(k, "content", &b.content),
            Body::Metrics(b) => required(k, "task", &b.task),
        }
    }

    /// A one-line summary for tables and context blocks.
    pub fn title(&self) -> String {
        match self {
            Body::Decision(b) => b.title.clone(),
            Body::Task(b) => b.title.clone(),
            Body::Entity(b) => format!("{} ({})", b.name, b.entity_type),
            Body::Relation(b) => format!("{} {} {}", b.from, b.relation_type, b.to),
            Body::Observation(b) => format!("{}: {}", b.entity, b.content),
            Body::Pattern(b) => b.title.clone(),
            Body::Gotcha(b) => b.title.clone(),
            Body::Learning(b) => b.text.clone(),
            Body::ErrorFix(b) => b.error.clone(),
            Body::Episode(b) => b.summary.clone().unwrap_or_else(|| b.content.clone()),
            Body::Knowledge(b) => b.content.clone(),
            Body::Preference(b) if !b.key.is_empty() => format!("{} = {}", b.key, b.value.as_str()),
            Body::Preference(b) => b.text.clone(),
            Body::Brief(b) => b.text.clone(),
            Body::Conversation(b) => {
                if b.title.is_empty() {
                    b.summary.clone().unwrap_or_default()
                } else {
                    b.title.clone()
                }
            }
            Body::Message(b) => format!("{}: {}", b.role.as_str(), b.content),
            Body::Metrics(b) => format!("{} ({} iterations)", b.task, b.iterations),
        }
    }

    /// All the text of the record, for lexical search and embedding.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = match self {
            Body::Decision(b) => vec![&b.title, &b.description, &b.rationale, &b.context],
            Body::Task(b) => vec![&b.title, &b.description],
            Body::Entity(b) => vec![&b.name, &b.entity_type, &b.description],
            Body::Relation(b) => vec![&b.from, &b.relation_type, &b.to, &b.description],
            Body::Observation(b) => vec![&b.entity, &b.content],
            Body::Pattern(b) => {
                let mut v = vec![b.title.as_str(), &b.description, &b.category];
                if let Some(e) = &b.example {
                    v.push(e);
                }
                v
            }
            Body::Gotcha(b) => vec![&b.title, &b.problem, &b.solution],
            Body::Learning(b) => vec![&b.text],
            Body::ErrorFix(b) => vec![&b.error, &b.solution, &b.context],
            Body::Episode(b) => vec![&b.content],
            Body::Knowledge(b) => vec![&b.category, &b.content],
            Body::Preference(b) => vec![&b.key, &b.text],
            Body::Brief(b) => vec![&b.text],
            Body::Conversation(b) => {
                let mut v = vec![b.title.as_str()];
                if let Some(s) = &b.summary {
                    v.push(s);
                }
                v
            }
            Body::Message(b) => vec![&b.content],
            Body::Metrics(b) => vec![&b.task],
        };
        parts.into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join("\n")
    }

    /// The identity key this kind declares, normalised, if any: the entity name, the relation
    /// triple, the preference key, the pattern title, or the single brief of a namespace.
    /// Records may also declare an explicit key in their envelope.
    pub fn default_identity(&self) -> Option<String> {
        let key = match self {
            Body::Entity(b) => normalise_key(&b.name),
            Body::Relation(b) => format!(
                "{}\u{1f}{}\u{1f}{}",
                normalise_key(&b.from),
                normalise_key(&b.relation_type),
                normalise_key(&b.to)
            ),
            Body::Preference(b) => normalise_key(&b.key),
            Body::Pattern(b) => normalise_key(&b.title),
            Body::Brief(_) => "brief".to_string(),
            _ => String::new(),
        };
        (!key.is_empty()).then_some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_aliases_and_defaults() -> Result<(), InputError> {
        let b =
            Body::from_json(Kind::Decision, serde_json::json!({"text": "Use redb", "decision": "redb 4"}))?;
        match &b {
            Body::Decision(d) => {
                assert_eq!(d.title, "Use redb");
                assert_eq!(d.description, "redb 4");
                assert_eq!(d.status, DecisionStatus::Accepted);
            }
            other => return Err(InputError::BadBody { kind: other.kind(), reason: "wrong".into() }),
        }
        Ok(())
    }

    #[test]
    fn unknown_fields_and_missing_required_fields_are_errors() {
        assert!(Body::from_json(Kind::Decision, serde_json::json!({"title": "x", "titel": "y"})).is_err());
        assert!(Body::from_json(Kind::Task, serde_json::json!({"description": "no title"})).is_err());
        assert!(Body::from_json(Kind::Task, serde_json::json!([1, 2])).is_err());
    }

    #[test]
    fn identity_keys_are_normalised() -> Result<(), InputError> {
        let a = Body::from_json(Kind::Entity, serde_json::json!({"name": "  Redis   Cache "}))?;
        assert_eq!(a.default_identity().as_deref(), Some("redis cache"));
        let d = Body::from_json(Kind::Decision, serde_json::json!({"title": "x"}))?;
        assert_eq!(d.default_identity(), None);
        Ok(())
    }
}
