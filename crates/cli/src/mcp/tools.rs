//! mnemon's own MCP tools, beside the reference knowledge-graph ones: remember, recall,
//! context, get, list, supersede, history, chain, task and forget. Each has typed parameters
//! (a serde struct that refuses unknown fields) and a JSON schema written for a model: what
//! the tool is for, when to use it, and what every field means.

use mnemon::context::{ContextRequest, Format};
use mnemon::json::{RecordView, parse_input};
use mnemon::search::TextMode;
use mnemon::{AsOf, Db, Kind, ListQuery, Ns, Record, RecordId, Timestamp};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// Why a call failed: the arguments (a protocol error) or the database (an error result).
pub enum ToolError {
    /// Missing, unknown or wrongly typed arguments.
    Args(String),
    /// The call was understood but refused or failed.
    Failed(String),
}

impl From<mnemon::Error> for ToolError {
    fn from(e: mnemon::Error) -> Self {
        ToolError::Failed(e.to_string())
    }
}

type Out = Result<Value, ToolError>;

fn failed(msg: impl Into<String>) -> ToolError {
    ToolError::Failed(msg.into())
}

const TIME: &str = "A time: RFC 3339 (2025-05-07T10:00:00Z) or a date (2025-05-07).";
const NS: &str = "The namespace (default: the server's, set with --ns).";

fn kinds_schema() -> Value {
    let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
    json!(names)
}

fn id_schema(what: &str) -> Value {
    json!({"type": "string", "description": format!("{what}: a record id as returned by remember, recall or list (a unique tail of at least 6 hex digits also works).")})
}

/// The tool list, as MCP `Tool` objects.
pub fn definitions() -> Vec<Value> {
    let kinds = kinds_schema();
    let read_only = json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false});
    let writes = json!({"readOnlyHint": false, "destructiveHint": false, "openWorldHint": false});
    vec![
        json!({
            "name": "remember",
            "title": "Remember",
            "description": "Store one memory: a decision, task, gotcha, pattern, learning, entity, preference, knowledge item, episode, brief or other kind. Use it whenever you learn something worth keeping beyond this conversation (why something was decided, a pitfall and its fix, the user's preferences, a task to do). Give the main text in `text` and kind-specific fields in `data` (decision: title, decision, rationale, alternatives; task: title, description, priority (critical, high, medium, low), due, assignee, dependencies (task ids); gotcha: title, problem, solution, severity; pattern: title, description, example). To change an existing memory later use `supersede`, not a second `remember`. Returns the new id.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": kinds, "description": "What sort of memory this is."},
                    "text": {"type": "string", "description": "The memory in plain words: its main text field (a decision's or task's title, an entity's name, a learning's text...). If `data` sets that field too, this becomes the description."},
                    "data": {"type": "object", "description": "Kind-specific fields, e.g. {\"title\": \"Use redb\", \"rationale\": \"embedded, no server\"} for a decision."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Labels to find it by."},
                    "importance": {"type": "integer", "minimum": 1, "maximum": 5, "description": "How much it matters, 1 (trivia) to 5 (critical); it ranks results. For learnings, error fixes, patterns and preferences it also sets how long they are kept from now: 1 a day, 2 a week, 3 a month, 4 90 days, 5 permanent. Leave it out for a permanent memory of ordinary weight."},
                    "valid_from": {"type": "string", "description": format!("When it became true (default: now). {TIME}")},
                    "valid_until": {"type": "string", "description": format!("When it stops being true (default: open). {TIME}")},
                    "metadata": {"type": "object", "description": "Free-form extra fields."},
                    "namespace": {"type": "string", "description": NS}
                },
                "required": ["kind"]
            },
            "annotations": writes
        }),
        json!({
            "name": "recall",
            "title": "Recall",
            "description": "Search the memories by meaning and by words (hybrid: BM25 and vector similarity fused) and return the best matches with their ids, kinds and scores. Use it before starting work to find earlier decisions, gotchas and patterns about the topic, and whenever the user refers to something from the past. Narrow with kinds and tags; ask about the past with as_of.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in words."},
                    "kinds": {"type": "array", "items": {"type": "string", "enum": kinds}, "description": "Only these kinds."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Only memories carrying all these tags."},
                    "agent": {"type": "string", "description": "Only memories recorded by this agent (their source)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many (default 10)."},
                    "mode": {"type": "string", "enum": ["hybrid", "lexical", "vector"], "description": "hybrid (default), lexical (exact words, identifiers) or vector (meaning)."},
                    "min_score": {"type": "number", "description": "Only matches scoring at least this (0 to 1; 0 returns the nearest memories even if unrelated). By default only memories that share words with the query or are close in meaning come back; an empty result means nothing relevant is remembered."},
                    "as_of": {"type": "string", "description": format!("Search what was valid at this time (default: now). {TIME}")},
                    "known_at": {"type": "string", "description": format!("...as it was known at this time (default: now). {TIME}")},
                    "namespace": {"type": "string", "description": NS}
                },
                "required": ["query"]
            },
            "annotations": read_only
        }),
        json!({
            "name": "context",
            "title": "Context block",
            "description": "Build a ready-to-read briefing within a token budget: critical gotchas, the project brief, active decisions, open tasks, the memories most relevant to the query, and the agent's preferences and role knowledge. Call it at the start of a task with a one-line description of the task; paste nothing else from memory.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What you are about to do."},
                    "task": {"type": "string", "description": "The task being worked on (its memories come first)."},
                    "agent": {"type": "string", "description": "Your agent name (adds its preferences and role knowledge)."},
                    "budget_tokens": {"type": "integer", "minimum": 0, "maximum": 200000, "description": "The most tokens the block may have (default 2000; counted with o200k_base)."},
                    "format": {"type": "string", "enum": ["markdown", "xml"], "description": "markdown (default) or xml."},
                    "namespace": {"type": "string", "description": NS}
                }
            },
            "annotations": read_only
        }),
        json!({
            "name": "get",
            "title": "Get a memory",
            "description": "Read one memory by id, as it is now or as it was at a past time.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "id": id_schema("The memory"),
                    "as_of": {"type": "string", "description": format!("Valid time to read it at (default: now). {TIME}")},
                    "known_at": {"type": "string", "description": format!("Read it as it was known at this time (default: now). {TIME}")},
                    "namespace": {"type": "string", "description": NS}
                },
                "required": ["id"]
            },
            "annotations": read_only
        }),
        json!({
            "name": "list",
            "title": "List memories as of a time",
            "description": "List the memories valid at a time (default: now), newest first: \"what was true on 2025-03-01\", \"which decisions were active then\". With known_at, list what the database knew at that time (before later corrections).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "kinds": {"type": "array", "items": {"type": "string", "enum": kinds}, "description": "Only these kinds."},
                    "as_of": {"type": "string", "description": format!("Valid time (default: now). {TIME}")},
                    "known_at": {"type": "string", "description": format!("Transaction time: what was known then (default: now). {TIME}")},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Only memories carrying all these tags."},
                    "agent": {"type": "string", "description": "Only memories recorded by this agent."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "At most this many, the newest (default 50)."},
                    "namespace": {"type": "string", "description": NS}
                }
            },
            "annotations": read_only
        }),
        json!({
            "name": "supersede",
            "title": "Supersede a memory",
            "description": "Replace a memory with a new version (a changed decision, a corrected fact). The old one stays in the history, marked as superseded, and the two are chained; use `chain` to see how it evolved. Give the complete new content: fields you leave out are not copied from the old one.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "id": id_schema("The memory to replace"),
                    "text": {"type": "string", "description": "The new main text."},
                    "data": {"type": "object", "description": "The new kind-specific fields."},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "importance": {"type": "integer", "minimum": 1, "maximum": 5, "description": "As for remember: 1-4 also limit how long it is kept (a day to 90 days), 5 is critical and permanent."},
                    "at": {"type": "string", "description": format!("When the change took effect (default: now). {TIME}")},
                    "namespace": {"type": "string", "description": NS}
                },
                "required": ["id"]
            },
            "annotations": writes
        }),
        json!({
            "name": "history",
            "title": "History of a memory",
            "description": "Every revision of one memory, oldest first, each with its valid time interval (when it was true) and its transaction time interval (when the database believed it).",
            "inputSchema": {
                "type": "object",
                "properties": {"id": id_schema("The memory"), "namespace": {"type": "string", "description": NS}},
                "required": ["id"]
            },
            "annotations": read_only
        }),
        json!({
            "name": "chain",
            "title": "Supersession chain",
            "description": "The chain of memories that replaced one another, from the first to the latest, starting from any of them: how a decision came to be what it is.",
            "inputSchema": {
                "type": "object",
                "properties": {"id": id_schema("Any memory of the chain"), "namespace": {"type": "string", "description": NS}},
                "required": ["id"]
            },
            "annotations": read_only
        }),
        json!({
            "name": "task",
            "title": "Move a task",
            "description": "Change a task's status: start (in progress), complete, block (give the reason), unblock (back to the status before the block), cancel (optionally with a reason) or plan. Completed and cancelled tasks are final. Every change is kept in the task's history.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "id": id_schema("The task"),
                    "action": {"type": "string", "enum": ["start", "complete", "block", "unblock", "cancel", "plan"]},
                    "reason": {"type": "string", "description": "What blocks it (block), or why it is cancelled (cancel)."},
                    "namespace": {"type": "string", "description": NS}
                },
                "required": ["id", "action"]
            },
            "annotations": writes
        }),
        json!({
            "name": "forget",
            "title": "Forget a memory",
            "description": "Stop a memory from being valid from now on (it stays in the history, so time travel still sees it). With erase: true, delete every revision permanently instead: only for things that must not be kept at all (secrets, personal data).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "id": id_schema("The memory"),
                    "erase": {"type": "boolean", "description": "Erase every revision permanently (default false: retire)."},
                    "namespace": {"type": "string", "description": NS}
                },
                "required": ["id"]
            },
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false}
        }),
    ]
}

/// The names of the tools in [`definitions`].
pub const NAMES: &[&str] =
    &["remember", "recall", "context", "get", "list", "supersede", "history", "chain", "task", "forget"];

fn args<T: DeserializeOwned>(tool: &str, v: Value) -> Result<T, ToolError> {
    serde_json::from_value(v).map_err(|e| ToolError::Args(format!("invalid arguments for tool {tool}: {e}")))
}

fn time(field: &str, s: &Option<String>) -> Result<Option<Timestamp>, ToolError> {
    s.as_deref()
        .map(|s| Timestamp::parse(s).map_err(|e| ToolError::Args(format!("`{field}`: {e}"))))
        .transpose()
}

fn kinds(names: &[String]) -> Result<Vec<Kind>, ToolError> {
    names.iter().map(|n| n.parse::<Kind>().map_err(|e| ToolError::Args(e.to_string()))).collect()
}

fn view(r: &Record, at: Timestamp) -> Value {
    let mut v = serde_json::to_value(RecordView::new(r, at)).unwrap_or(Value::Null);
    if let Value::Object(o) = &mut v {
        o.insert("text".into(), Value::String(r.body.text()));
    }
    v
}

fn resolve(ns: &Ns, s: &str) -> Result<RecordId, ToolError> {
    ns.resolve_id(s).map_err(|e| if e.is_input() { ToolError::Args(e.to_string()) } else { e.into() })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Remember {
    kind: String,
    text: Option<String>,
    data: Option<Map<String, Value>>,
    #[serde(default)]
    tags: Vec<String>,
    importance: Option<u8>,
    valid_from: Option<String>,
    valid_until: Option<String>,
    metadata: Option<Value>,
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Recall {
    query: String,
    #[serde(default)]
    kinds: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    agent: Option<String>,
    limit: Option<usize>,
    mode: Option<String>,
    as_of: Option<String>,
    known_at: Option<String>,
    namespace: Option<String>,
    min_score: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Context {
    #[serde(default)]
    query: String,
    task: Option<String>,
    agent: Option<String>,
    budget_tokens: Option<usize>,
    format: Option<String>,
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Get {
    id: String,
    as_of: Option<String>,
    known_at: Option<String>,
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct List {
    #[serde(default)]
    kinds: Vec<String>,
    as_of: Option<String>,
    known_at: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    agent: Option<String>,
    limit: Option<usize>,
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Supersede {
    id: String,
    text: Option<String>,
    data: Option<Map<String, Value>>,
    #[serde(default)]
    tags: Vec<String>,
    importance: Option<u8>,
    at: Option<String>,
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ById {
    id: String,
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskMove {
    id: String,
    action: String,
    reason: Option<String>,
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Forget {
    id: String,
    #[serde(default)]
    erase: bool,
    namespace: Option<String>,
}

/// Run tool `name` (one of [`NAMES`]) with arguments `a` in namespace `default_ns` unless the
/// arguments name another; the structured result.
pub fn call(db: &Db, default_ns: &str, name: &str, a: Value) -> Out {
    let ns = |n: &Option<String>| -> Result<Ns, ToolError> {
        db.ns(n.as_deref().unwrap_or(default_ns)).map_err(|e| ToolError::Args(e.to_string()))
    };
    match name {
        "remember" => {
            let p: Remember = args(name, a)?;
            let kind: Kind =
                p.kind.parse().map_err(|e: mnemon::InputError| ToolError::Args(e.to_string()))?;
            let ns = ns(&p.namespace)?;
            let value = loose(kind, p.text, p.data, p.tags, p.importance, p.metadata)?;
            let mut rec = parse_input(value, Some(kind), ns.name()).map_err(body_error)?;
            rec.record.valid_from = time("valid_from", &p.valid_from)?.or(rec.record.valid_from);
            rec.record.valid_until = time("valid_until", &p.valid_until)?.or(rec.record.valid_until);
            let o = if kind == Kind::Task { ns.tasks().insert(rec.record)? } else { ns.insert(rec.record)? };
            Ok(match o {
                mnemon::Outcome::Existing { id } => json!({"id": id, "kind": kind.name(), "existing": true}),
                other => json!({"id": other.id(), "kind": kind.name(), "existing": false}),
            })
        }
        "recall" => {
            let p: Recall = args(name, a)?;
            let ns = ns(&p.namespace)?;
            let mode = match p.mode.as_deref() {
                None | Some("hybrid") => TextMode::Hybrid,
                Some("lexical") => TextMode::Lexical,
                Some("vector") => TextMode::Vector,
                Some(m) => {
                    return Err(ToolError::Args(format!("unknown mode {m:?} (hybrid, lexical, vector)")));
                }
            };
            let as_of = AsOf { valid: time("as_of", &p.as_of)?, known: time("known_at", &p.known_at)? };
            let mut s = ns
                .search(&p.query)
                .limit(p.limit.unwrap_or(10).clamp(1, 100))
                .mode(mode)
                .kinds(kinds(&p.kinds)?);
            s = s.as_of(as_of);
            if let Some(m) = p.min_score {
                s = s.min_score(m);
            }
            for t in p.tags {
                s = s.tag(t);
            }
            if let Some(ag) = p.agent {
                s = s.source(ag);
            }
            let at = as_of.valid.unwrap_or_else(|| db.now());
            let hits: Vec<Value> = s
                .run()?
                .iter()
                .map(|h| {
                    let mut v = view(&h.record, at);
                    if let Value::Object(o) = &mut v {
                        o.insert("score".into(), json!(h.score));
                    }
                    v
                })
                .collect();
            Ok(json!({ "hits": hits }))
        }
        "context" => {
            let p: Context = args(name, a)?;
            let ns = ns(&p.namespace)?;
            let format = match p.format.as_deref() {
                None | Some("markdown") => Format::Markdown,
                Some("xml") => Format::Xml,
                Some(f) => return Err(ToolError::Args(format!("unknown format {f:?} (markdown, xml)"))),
            };
            let req = ContextRequest {
                query: p.query,
                task: p.task,
                agent: p.agent,
                budget: p.budget_tokens.unwrap_or(2000),
                format,
            };
            let b = ns.context(&req)?;
            Ok(json!({"context": b.text, "tokens": b.tokens, "ids": b.ids, "left_out": b.left_out}))
        }
        "get" => {
            let p: Get = args(name, a)?;
            let ns = ns(&p.namespace)?;
            let id = resolve(&ns, &p.id)?;
            let as_of = AsOf { valid: time("as_of", &p.as_of)?, known: time("known_at", &p.known_at)? };
            let at = as_of.valid.unwrap_or_else(|| db.now());
            match ns.get_as_of(id, as_of)? {
                Some(r) => Ok(json!({ "record": view(&r, at) })),
                None => match ns.latest(id)? {
                    Some(_) => {
                        Err(failed(format!("{id} exists but was not valid (or not yet known) at that time")))
                    }
                    None => Err(failed(format!("no record {id} in namespace {:?}", ns.name().as_str()))),
                },
            }
        }
        "list" => {
            let p: List = args(name, a)?;
            let ns = ns(&p.namespace)?;
            let q = ListQuery {
                kinds: kinds(&p.kinds)?,
                tags: p.tags,
                source: p.agent,
                task: None,
                as_of: AsOf { valid: time("as_of", &p.as_of)?, known: time("known_at", &p.known_at)? },
                limit: Some(p.limit.unwrap_or(50).clamp(1, 1000)),
            };
            let at = q.as_of.valid.unwrap_or_else(|| db.now());
            let records: Vec<Value> = ns.list(&q)?.iter().map(|r| view(r, at)).collect();
            Ok(json!({ "records": records }))
        }
        "supersede" => {
            let p: Supersede = args(name, a)?;
            let ns = ns(&p.namespace)?;
            let old = resolve(&ns, &p.id)?;
            let latest = ns.latest(old)?.ok_or_else(|| failed(format!("no record {old}")))?;
            let value = loose(latest.kind(), p.text, p.data, p.tags, p.importance, None)?;
            let mut rec = parse_input(value, Some(latest.kind()), ns.name()).map_err(body_error)?.record;
            if let Some(t) = time("at", &p.at)? {
                rec.valid_from = Some(t);
            }
            let new = ns.supersede_with(old, rec)?;
            Ok(json!({"old": old, "new": new}))
        }
        "history" | "chain" => {
            let p: ById = args(name, a)?;
            let ns = ns(&p.namespace)?;
            let id = resolve(&ns, &p.id)?;
            let now = db.now();
            let rs = if name == "history" { ns.history(id)? } else { ns.chain(id)? };
            if rs.is_empty() {
                return Err(failed(format!("no record {id} in namespace {:?}", ns.name().as_str())));
            }
            let key = if name == "history" { "revisions" } else { "chain" };
            Ok(json!({ key: rs.iter().map(|r| view(r, now)).collect::<Vec<_>>() }))
        }
        "task" => {
            let p: TaskMove = args(name, a)?;
            let ns = ns(&p.namespace)?;
            let id = resolve(&ns, &p.id)?;
            let t = ns.tasks();
            let task = match p.action.as_str() {
                "start" => t.start(id)?,
                "complete" => t.complete(id)?,
                "block" => t.block(id, p.reason.as_deref().unwrap_or("unspecified"))?,
                "unblock" => t.unblock(id)?,
                "cancel" => t.cancel(id, p.reason.as_deref())?,
                "plan" => t.plan(id)?,
                other => {
                    return Err(ToolError::Args(format!(
                        "unknown action {other:?} (start, complete, block, unblock, cancel, plan)"
                    )));
                }
            };
            Ok(json!({"id": id, "task": serde_json::to_value(&task).unwrap_or(Value::Null)}))
        }
        "forget" => {
            let p: Forget = args(name, a)?;
            let ns = ns(&p.namespace)?;
            let id = resolve(&ns, &p.id)?;
            if p.erase {
                let n = ns.forget(id)?;
                Ok(json!({"id": id, "erased_revisions": n}))
            } else {
                ns.retire(id, None)?;
                Ok(json!({"id": id, "retired": true}))
            }
        }
        other => Err(ToolError::Args(format!("Tool {other} not found"))),
    }
}

fn body_error(e: mnemon::Error) -> ToolError {
    let m = e.to_string();
    if m.contains("duplicate field") {
        ToolError::Args(format!(
            "{m}: `text` fills the kind's main field; give it once, in `text` or in `data`"
        ))
    } else {
        ToolError::Args(m)
    }
}

/// The loose record form `parse_input` reads: `data`'s fields, the main text, the envelope.
/// The fields that `text` stands for, by kind (each body's main text field).
const MAIN_FIELDS: [&str; 4] = ["title", "name", "content", "error"];

fn loose(
    kind: Kind,
    text: Option<String>,
    data: Option<Map<String, Value>>,
    tags: Vec<String>,
    importance: Option<u8>,
    metadata: Option<Value>,
) -> Result<Value, ToolError> {
    let mut o = data.unwrap_or_default();
    for k in ["namespace", "kind", "id"] {
        if o.contains_key(k) {
            return Err(ToolError::Args(format!("`data` may not set `{k}`")));
        }
    }
    if let Some(t) = text {
        // `text` is the main field unless `data` names it too: then the same words are
        // taken once, and other words become the description of a kind that has one.
        let has_description =
            matches!(kind, Kind::Decision | Kind::Task | Kind::Entity | Kind::Relation | Kind::Pattern);
        match MAIN_FIELDS.iter().find(|f| o.contains_key(**f)) {
            None => {
                o.insert("text".into(), Value::String(t));
            }
            Some(f) if o.get(*f).and_then(Value::as_str).is_some_and(|v| v.trim() == t.trim()) => {}
            Some(_) if has_description && !o.contains_key("description") => {
                o.insert("description".into(), Value::String(t));
            }
            Some(f) => {
                return Err(ToolError::Args(format!(
                    "`text` and `data.{f}` both give the main text of a {kind}: give it once"
                )));
            }
        }
    }
    if !tags.is_empty() {
        o.insert("tags".into(), json!(tags));
    }
    if let Some(i) = importance {
        o.insert("importance".into(), json!(i));
    }
    if let Some(m) = metadata {
        o.insert("metadata".into(), m);
    }
    Ok(Value::Object(o))
}
