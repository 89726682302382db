//! Operations on records: remember, get, list, supersede, history, chain, forget.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Operation, RecordOut, Session, kind_schema, kinds, kinds_schema, time};
use crate::db::Intent;
use crate::error::{Result, invalid};
use crate::json::parse_input;
use crate::{AsOf, Kind, ListQuery, Outcome, RecordId};

/// Store one memory.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Remember {
    /// What sort of memory this is.
    #[schemars(schema_with = "kind_schema")]
    pub kind: String,
    /// The memory in plain words: its main text field (a decision's or task's title, an
    /// entity's name, a learning's text...). If `data` sets that field too, this becomes the
    /// description.
    pub text: Option<String>,
    /// Kind-specific fields, e.g. {"title": "Use redb", "rationale": "embedded, no server"} for a
    /// decision.
    pub data: Option<Map<String, Value>>,
    /// Labels to find it by.
    #[serde(default)]
    pub tags: Vec<String>,
    /// How much it matters, 1 (trivia) to 5 (critical); it ranks results. For learnings, error
    /// fixes, patterns and preferences it also sets how long they are kept from now: 1 a day,
    /// 2 a week, 3 a month, 4 90 days, 5 permanent. Leave it out for a permanent memory of
    /// ordinary weight.
    #[schemars(range(min = 1, max = 5))]
    pub importance: Option<u8>,
    /// When it became true (default: now). A time: RFC 3339 (2025-05-07T10:00:00Z) or a date
    /// (2025-05-07).
    pub valid_from: Option<String>,
    /// When it stops being true (default: open). A time: RFC 3339 or a date.
    pub valid_until: Option<String>,
    /// Free-form extra fields.
    pub metadata: Option<Value>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// What `remember` answers.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Remembered {
    /// The memory's id.
    #[schemars(with = "String")]
    pub id: RecordId,
    /// Its kind.
    pub kind: String,
    /// Whether a live memory of the same identity (an entity's name, a pattern's title in
    /// its scope...) already held it: its id is returned and nothing was written.
    pub existing: bool,
}

impl Operation for Remember {
    const NAME: &'static str = "remember";
    const TITLE: &'static str = "Remember";
    const DESCRIPTION: &'static str = "Store one memory: a decision, task, gotcha, pattern, learning, entity, preference, knowledge item, episode, brief or other kind. Use it whenever you learn something worth keeping beyond this conversation (why something was decided, a pitfall and its fix, the user's preferences, a task to do). Give the main text in `text` and kind-specific fields in `data` (decision: title, decision, rationale, alternatives; task: title, description, priority (critical, high, medium, low), due, assignee, dependencies (task ids); gotcha: title, problem, solution, severity; pattern: title, description, example). To change an existing memory later use `supersede`, not a second `remember`. Returns the new id.";
    const READ_ONLY: bool = false;
    type Output = Remembered;

    fn run(self, session: &Session) -> Result<Remembered> {
        let (ns, kind, record) = self.prepare(session)?;
        let outcome = ns.insert(record)?;
        let existing = matches!(outcome, Outcome::Existing { .. });
        Ok(Remembered { id: outcome.id(), kind: kind.name().to_string(), existing })
    }
}

impl Remember {
    fn prepare(self, session: &Session) -> Result<(crate::Ns, Kind, crate::NewRecord)> {
        let kind: Kind = self.kind.parse()?;
        let ns = session.ns(self.namespace.as_deref())?;
        let value = loose(kind, self.text, self.data, self.tags, self.importance, self.metadata)?;
        let mut rec = parse_input(value, Some(kind), ns.name()).map_err(body_error)?;
        rec.record.valid_from = time("valid_from", &self.valid_from)?.or(rec.record.valid_from);
        rec.record.valid_until = time("valid_until", &self.valid_until)?.or(rec.record.valid_until);
        Ok((ns, kind, rec.record))
    }

    /// The write, for a batch.
    pub(crate) fn intent(self, session: &Session) -> Result<(crate::Ns, Intent)> {
        self.prepare(session).map(|(ns, _, r)| (ns, Intent::Insert(r)))
    }
}

/// Read many memories at once.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetMany {
    /// The memories, 1 to 1,000 record ids (a unique head or tail of at least 6 hex digits
    /// also works).
    pub ids: Vec<String>,
    /// Valid time to read them at (default: now). RFC 3339 or a date.
    pub as_of: Option<String>,
    /// Read them as they were known at this time (default: now). RFC 3339 or a date.
    pub known_at: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// Records by id, in the order asked.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct GotRecords {
    /// One per id asked, in order: the record, or null when none is visible then (unknown,
    /// not yet known, or not valid at that time).
    pub records: Vec<Option<RecordOut>>,
}

impl Operation for GetMany {
    const NAME: &'static str = "get_many";
    const TITLE: &'static str = "Get many memories";
    const DESCRIPTION: &'static str = "Read many memories by id in one call, as they are now or as they were at a past time: one record (or null) per id, in order.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = GotRecords;

    fn run(self, session: &Session) -> Result<GotRecords> {
        super::count(Some(self.ids.len()), 1, MAX_GET_MANY)?;
        let ns = session.ns(self.namespace.as_deref())?;
        let as_of = AsOf { valid: time("as_of", &self.as_of)?, known: time("known_at", &self.known_at)? };
        let at = as_of.valid.unwrap_or_else(|| session.db().now());
        let mut records = Vec::with_capacity(self.ids.len());
        for id in &self.ids {
            let found = match ns.resolve_id(id) {
                Ok(id) => ns.get_as_of(id, as_of)?,
                Err(crate::Error::NoSuchId { .. }) => None,
                Err(e) => return Err(e),
            };
            records.push(found.map(|r| RecordOut::new(r, at)));
        }
        Ok(GotRecords { records })
    }
}

/// The most ids one `get_many` reads.
const MAX_GET_MANY: usize = 1_000;

/// Read one memory.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Get {
    /// The memory: a record id as returned by remember, recall or list (a unique head or tail
    /// of at least 6 hex digits also works).
    pub id: String,
    /// Valid time to read it at (default: now). RFC 3339 or a date.
    pub as_of: Option<String>,
    /// Read it as it was known at this time (default: now). RFC 3339 or a date.
    pub known_at: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// One record.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct GotRecord {
    /// The record.
    pub record: RecordOut,
}

impl Operation for Get {
    const NAME: &'static str = "get";
    const TITLE: &'static str = "Get a memory";
    const DESCRIPTION: &'static str = "Read one memory by id, as it is now or as it was at a past time.";
    const READ_ONLY: bool = true;
    type Output = GotRecord;

    fn run(self, session: &Session) -> Result<GotRecord> {
        let ns = session.ns(self.namespace.as_deref())?;
        let id = ns.resolve_id(&self.id)?;
        let as_of = AsOf { valid: time("as_of", &self.as_of)?, known: time("known_at", &self.known_at)? };
        let at = as_of.valid.unwrap_or_else(|| session.db().now());
        if let Some(r) = ns.get_as_of(id, as_of)? {
            return Ok(GotRecord { record: RecordOut::new(r, at) });
        }
        // Why not: unknown, not yet known at that time, or not valid at that valid time.
        let snap = ns.db().snapshot()?;
        let known = snap.revision_at(ns.name(), id, as_of.known.unwrap_or(crate::Timestamp::MAX))?;
        Err(match known {
            None if as_of.known.is_some() && ns.latest(id)?.is_some() => {
                crate::Error::NotValidThen { id, why: "it was not yet known then".into() }
            }
            None => not_found(&ns, id),
            Some(r) => {
                let until = r.valid_until.map_or_else(|| "open".to_string(), crate::Timestamp::to_human);
                let by = r.superseded_by.map(|n| format!(", superseded by {n}")).unwrap_or_default();
                let status = format!("{:?}", r.status_at(at)).to_lowercase();
                let why = format!(
                    "it is not valid at {} ({status}; valid {} -> {until}{by})",
                    at.to_human(),
                    r.valid_from.to_human()
                );
                crate::Error::NotValidThen { id, why }
            }
        })
    }
}

/// List memories valid at a time.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct List {
    /// Only these kinds.
    #[serde(default)]
    #[schemars(schema_with = "kinds_schema")]
    pub kinds: Vec<String>,
    /// Valid time (default: now). RFC 3339 or a date.
    pub as_of: Option<String>,
    /// Transaction time: what was known then (default: now). RFC 3339 or a date.
    pub known_at: Option<String>,
    /// Only memories carrying all these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only memories recorded by this agent.
    pub agent: Option<String>,
    /// Only memories of this task.
    pub task: Option<String>,
    /// At most this many, the newest (default 50).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// Continue a listing: the `next_cursor` of the page before (pass the same filters and
    /// times, `known_at` included, for pages of one consistent listing).
    pub cursor: Option<String>,
    /// Only records passing this filter, over metadata and envelope fields, as Chroma's
    /// `where` and mem0's `filters` write it: `{"user_id": "42", "importance": {"$gte": 3},
    /// "$or": [{"tags": "pii"}, {"metadata.score": {"$gt": 0.5}}]}`. Operators: $eq, $ne,
    /// $in, $nin, $gt, $gte, $lt, $lte (numbers, times), $exists, $and, $or, $not.
    #[serde(rename = "where", default)]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub where_: Option<Value>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// Records, as of the asked time.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Records {
    /// The records, newest first.
    pub records: Vec<RecordOut>,
    /// Present when more records follow: pass it as `cursor` for the next page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Which index answered (for `--explain`; not part of the serialized answer).
    #[serde(skip)]
    #[schemars(skip)]
    pub path: Option<crate::ListPath>,
}

impl Operation for List {
    const NAME: &'static str = "list";
    const TITLE: &'static str = "List memories as of a time";
    const DESCRIPTION: &'static str = "List the memories valid at a time (default: now), newest first: \"what was true on 2025-03-01\", \"which decisions were active then\". With known_at, list what the database knew at that time (before later corrections).";
    const READ_ONLY: bool = true;
    type Output = Records;

    fn run(self, session: &Session) -> Result<Records> {
        let ns = session.ns(self.namespace.as_deref())?;
        let limit = super::count(self.limit, 50, 1000)?;
        let before = self
            .cursor
            .as_deref()
            .map(|c| {
                RecordId::parse(c)
                    .map_err(|e| invalid(format!("`cursor`: {e} (pass a listing's next_cursor)")))
            })
            .transpose()?;
        let q = ListQuery {
            kinds: kinds(&self.kinds)?,
            tags: self.tags,
            source: self.agent,
            task: self.task,
            as_of: AsOf { valid: time("as_of", &self.as_of)?, known: time("known_at", &self.known_at)? },
            // One more than asked: whether another page follows.
            limit: Some(limit + 1),
            before,
            test: crate::filter::Where::test(self.where_.as_ref())?,
        };
        let at = q.as_of.valid.unwrap_or_else(|| session.db().now());
        let (mut found, path) = ns.list_explain(&q)?;
        let next_cursor = if found.len() > limit {
            found.truncate(limit);
            found.last().map(|r| r.id.to_string())
        } else {
            None
        };
        let records = found.into_iter().map(|r| RecordOut::new(r, at)).collect();
        Ok(Records { records, next_cursor, path: Some(path) })
    }
}

/// Replace a memory with a new version.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Supersede {
    /// The memory to replace: a record id (a unique head or tail of at least 6 hex digits
    /// also works).
    pub id: String,
    /// The new main text.
    pub text: Option<String>,
    /// The new kind-specific fields.
    pub data: Option<Map<String, Value>>,
    /// The new memory's labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// As for remember: 1-4 also limit how long it is kept (a day to 90 days), 5 is critical
    /// and permanent.
    #[schemars(range(min = 1, max = 5))]
    pub importance: Option<u8>,
    /// When the change took effect (default: now). RFC 3339 or a date.
    pub at: Option<String>,
    /// The kind the memory must be (refused if it is another).
    #[schemars(schema_with = "super::kind_option_schema")]
    pub kind: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// The two ends of a supersession.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Superseded {
    /// The memory replaced.
    #[schemars(with = "String")]
    pub old: RecordId,
    /// Its replacement.
    #[schemars(with = "String")]
    pub new: RecordId,
}

impl Operation for Supersede {
    const NAME: &'static str = "supersede";
    const TITLE: &'static str = "Supersede a memory";
    const DESCRIPTION: &'static str = "Replace a memory with a new version (a changed decision, a corrected fact). The old one stays in the history, marked as superseded, and the two are chained; use `chain` to see how it evolved. Give the complete new content: fields you leave out are not copied from the old one.";
    const READ_ONLY: bool = false;
    type Output = Superseded;

    fn run(self, session: &Session) -> Result<Superseded> {
        let (ns, old, rec) = self.prepare(session)?;
        let new = ns.supersede_with(old, rec)?;
        Ok(Superseded { old, new })
    }
}

impl Supersede {
    /// The write, for a batch.
    pub(crate) fn intent(self, session: &Session) -> Result<(crate::Ns, Intent)> {
        self.prepare(session).map(|(ns, old, new)| (ns, Intent::Supersede { old, new }))
    }

    fn prepare(self, session: &Session) -> Result<(crate::Ns, RecordId, crate::NewRecord)> {
        let ns = session.ns(self.namespace.as_deref())?;
        let old = ns.resolve_id(&self.id)?;
        let latest = ns.latest(old)?.ok_or_else(|| not_found(&ns, old))?;
        if let Some(k) = &self.kind {
            let want: Kind = k.parse()?;
            if want != latest.kind() {
                let e =
                    mnemon_storage::InputError::KindMismatch { id: old, expected: latest.kind(), got: want };
                return Err(e.into());
            }
        }
        let value = loose(latest.kind(), self.text, self.data, self.tags, self.importance, None)?;
        let mut rec = parse_input(value, Some(latest.kind()), ns.name()).map_err(body_error)?.record;
        if let Some(t) = time("at", &self.at)? {
            rec.valid_from = Some(t);
        }
        Ok((ns, old, rec))
    }
}

/// Every revision of one memory.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct History {
    /// The memory: a record id (a unique head or tail of at least 6 hex digits also works).
    pub id: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for History {
    const NAME: &'static str = "history";
    const TITLE: &'static str = "History of a memory";
    const DESCRIPTION: &'static str = "Every revision of one memory, oldest first, each with its valid time interval (when it was true) and its transaction time interval (when the database believed it).";
    const READ_ONLY: bool = true;
    type Output = Revisions;

    fn run(self, session: &Session) -> Result<Revisions> {
        let ns = session.ns(self.namespace.as_deref())?;
        let id = ns.resolve_id(&self.id)?;
        let now = session.db().now();
        let rs = ns.history(id)?;
        if rs.is_empty() {
            return Err(not_found(&ns, id));
        }
        Ok(Revisions { revisions: rs.into_iter().map(|r| RecordOut::new(r, now)).collect() })
    }
}

/// A memory's revisions.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Revisions {
    /// Oldest first.
    pub revisions: Vec<RecordOut>,
}

/// The supersession chain through one memory.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Chain {
    /// Any memory of the chain: a record id (a unique head or tail of at least 6 hex digits
    /// also works).
    pub id: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// A supersession chain.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChainOut {
    /// The memory the chain was asked through.
    #[schemars(with = "String")]
    pub asked: RecordId,
    /// From the first memory to the latest.
    pub chain: Vec<RecordOut>,
}

impl Operation for Chain {
    const NAME: &'static str = "chain";
    const TITLE: &'static str = "Supersession chain";
    const DESCRIPTION: &'static str = "The chain of memories that replaced one another, from the first to the latest, starting from any of them: how a decision came to be what it is.";
    const READ_ONLY: bool = true;
    type Output = ChainOut;

    fn run(self, session: &Session) -> Result<ChainOut> {
        let ns = session.ns(self.namespace.as_deref())?;
        let id = ns.resolve_id(&self.id)?;
        let now = session.db().now();
        let rs = ns.chain(id)?;
        if rs.is_empty() {
            return Err(not_found(&ns, id));
        }
        Ok(ChainOut { asked: id, chain: rs.into_iter().map(|r| RecordOut::new(r, now)).collect() })
    }
}

/// Retire a memory, or erase it.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Forget {
    /// The memory: a record id (a unique head or tail of at least 6 hex digits also works).
    pub id: String,
    /// Erase every revision permanently (default false: retire).
    #[serde(default)]
    pub erase: bool,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// What `forget` did.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Forgotten {
    /// The memory.
    #[schemars(with = "String")]
    pub id: RecordId,
    /// Whether it was retired (valid until now, kept in the history).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retired: Option<bool>,
    /// How many revisions were erased (with `erase`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub erased_revisions: Option<u32>,
}

impl Operation for Forget {
    const NAME: &'static str = "forget";
    const TITLE: &'static str = "Forget a memory";
    const DESCRIPTION: &'static str = "Stop a memory from being valid from now on (it stays in the history, so time travel still sees it). With erase: true, delete every revision permanently instead: only for things that must not be kept at all (secrets, personal data).";
    const READ_ONLY: bool = false;
    const DESTRUCTIVE: bool = true;
    type Output = Forgotten;

    fn run(self, session: &Session) -> Result<Forgotten> {
        let ns = session.ns(self.namespace.as_deref())?;
        let id = ns.resolve_id(&self.id)?;
        if self.erase {
            let n = ns.forget(id)?;
            Ok(Forgotten { id, retired: None, erased_revisions: Some(n) })
        } else {
            ns.retire(id, None)?;
            Ok(Forgotten { id, retired: Some(true), erased_revisions: None })
        }
    }
}

impl Forget {
    /// The write, for a batch: erase, or retire now.
    pub(crate) fn intent(self, session: &Session) -> Result<(crate::Ns, Intent)> {
        let ns = session.ns(self.namespace.as_deref())?;
        let id = ns.resolve_id(&self.id)?;
        Ok((ns, if self.erase { Intent::Erase { id } } else { Intent::Retire { id, at: None } }))
    }
}

/// No record `id` in the namespace.
fn not_found(ns: &crate::Ns, id: RecordId) -> crate::Error {
    crate::Error::Storage(crate::StorageError::NotFound { namespace: ns.name().clone(), id })
}

/// A body that does not parse, with a hint when the main text was given twice.
fn body_error(e: crate::Error) -> crate::Error {
    let m = e.to_string();
    if m.contains("duplicate field") {
        invalid(format!("{m}: `text` fills the kind's main field; give it once, in `text` or in `data`"))
    } else {
        e
    }
}

/// The fields that `text` stands for, by kind (each body's main text field).
const MAIN_FIELDS: [&str; 4] = ["title", "name", "content", "error"];

/// The loose record form `parse_input` reads: `data`'s fields, the main text, the envelope.
fn loose(
    kind: Kind,
    text: Option<String>,
    data: Option<Map<String, Value>>,
    tags: Vec<String>,
    importance: Option<u8>,
    metadata: Option<Value>,
) -> Result<Value> {
    let mut o = data.unwrap_or_default();
    for k in ["namespace", "kind", "id"] {
        if o.contains_key(k) {
            return Err(invalid(format!("`data` may not set `{k}`")));
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
                return Err(invalid(format!(
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
