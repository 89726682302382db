//! The operation layer: every operation an interface offers, as a request type, a response
//! type and one handler. The CLI, the MCP server, the HTTP server and the Python bindings are
//! adapters over it: they parse a request, [call](Session::call) it and render the response,
//! so a rule lives here or below, once. Requests and responses are serde types with JSON
//! Schemas (schemars), from which the MCP tools' schemas are derived; errors carry a stable
//! [`Code`](crate::Code).
//!
//! ```
//! use mnemon::Db;
//! use mnemon::ops::{Recall, Remember, Session};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let db = Db::create(dir.path().join("memory.redb"))?;
//! let session = Session::new(db, "project:demo")?;
//! let made = session.call(Remember {
//!     kind: "gotcha".into(),
//!     text: Some("redb needs the file to itself unless opened shared".into()),
//!     ..Default::default()
//! })?;
//! let found = session.call(Recall { query: "redb file shared".into(), ..Default::default() })?;
//! assert_eq!(found.hits[0].record.record.id, made.id);
//! // Other namespaces are out of reach unless the session allows them.
//! let elsewhere = Remember { namespace: Some("agent:bob".into()), kind: "learning".into(), ..Default::default() };
//! assert_eq!(session.call(elsewhere).unwrap_err().code(), mnemon::Code::Forbidden);
//! # Ok(())
//! # }
//! ```

mod agent;
mod batch;
mod catalog;
mod domain;
mod erase;
mod feed;
mod file;
mod index;
mod memory;
mod project;
mod records;
mod scoped;
mod search;
mod tasks;
mod vectors;
mod writes;

pub use agent::{
    AgentCompleted, AgentContext, AgentError, AgentPerformance, AgentPrefer, AgentPreferences, EpisodeAccess,
    EpisodeContext, EpisodePrune, KnowledgePrune, Preferences, Retired,
};
pub use batch::{Batch, BatchWrite, Batched, MAX_BATCH};
pub use catalog::{Catalog, Entry};
pub use domain::{
    ConversationAdd, ConversationEnd, ConversationRecent, ConversationShow, ConversationStart,
    DecisionActive, DecisionStatusSet, Ensured, EntityByType, EntityEnsure, EntityFind, EntityLink,
    EntityMention, EntityMerge, EntitySet, Link, Linked, Transcript,
};
pub use erase::{Erase, Erased};
pub use feed::{Changes, MAX_CHANGES, MAX_WAIT_MS};
pub use file::{DbStats, GraphExport, GraphImport, GraphLines, NamespaceNames, Namespaces, Prune};
pub use index::{IndexBuild, IndexStatus, Indexes, Reindex, Reindexed};
pub use memory::{
    Block, EpisodeHit, EpisodeQuery, EpisodeStore, Episodes, KnowledgeLearn, KnowledgeList,
    KnowledgeReinforce, Learned, MemoryAdd, MemoryAdded, MemoryContext, MemoryShow, MemoryShown,
    ProjectKnowledge, ProjectRelate, SectionArg, SectionEntries, SectionEntry, Stored,
};
pub use project::{
    Consolidate, Group, Groups, Learnings, PatternAdded, ProjectGotcha, ProjectGotchas, ProjectLearn,
    ProjectLearnings, ProjectPattern, ProjectPatterns, ProjectRelations, ProjectSearch, Stats, Tagged,
};
pub use records::{
    Chain, ChainOut, Forget, Forgotten, Get, GetMany, GotRecord, GotRecords, History, List, Records,
    Remember, Remembered, Revisions, Supersede, Superseded,
};
pub use scoped::{
    Cleared, GraphImported, Imported, MemoryBrief, MemoryClear, MemoryDelete, MemoryImport,
    MemoryImportGraph, MemoryProjects, MemoryPrune, Projects, Pruned,
};
pub use search::{BlockFormat, Context, ContextOut, Explain, Hit, Hits, Recall};
pub use tasks::{
    Graph, Readiness, TaskAction, TaskCanStart, TaskDepend, TaskDeps, TaskGraph, TaskList, TaskMove,
    TaskMoved,
};
pub use vectors::{Near, Nearest, VectorMode, VectorPut, VectorSearch};
pub use writes::{Add, Retire, Revise, WriteResult};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::{Db, Ns};

/// One operation: its request (this type), its response and its handler.
pub trait Operation: Serialize + DeserializeOwned + JsonSchema + Send + 'static {
    /// The name interfaces know it by (the MCP tool, the HTTP route).
    const NAME: &'static str;
    /// A short human title.
    const TITLE: &'static str;
    /// What it is for and when to use it, written for a model choosing a tool.
    const DESCRIPTION: &'static str;
    /// Whether it only reads.
    const READ_ONLY: bool;
    /// Whether it may erase what cannot be recovered.
    const DESTRUCTIVE: bool = false;
    /// Whether it is maintenance of the whole database (rebuilding indexes, pruning or
    /// importing across namespaces): a server lets only an admin token call it.
    const ADMIN: bool = false;
    /// Whether MCP offers it as a tool (the model-facing set; every interface that takes
    /// whole records offers the rest too).
    const MCP: bool = true;
    /// What it answers.
    type Output: Serialize + DeserializeOwned + JsonSchema + Send + 'static;

    /// Run it in `session`.
    fn run(self, session: &Session) -> Result<Self::Output>;
}

/// Something that takes every operation type in turn ([`each`]): how an adapter registers
/// them all (MCP tools, HTTP routes) from one list.
pub trait Visitor {
    /// Take operation `O`.
    fn visit<O: Operation>(&mut self);
}

/// Give `visitor` every operation, in the order interfaces list them.
pub fn each(visitor: &mut impl Visitor) {
    visitor.visit::<Remember>();
    visitor.visit::<Recall>();
    visitor.visit::<Context>();
    visitor.visit::<Get>();
    visitor.visit::<GetMany>();
    visitor.visit::<Erase>();
    visitor.visit::<List>();
    visitor.visit::<Supersede>();
    visitor.visit::<History>();
    visitor.visit::<Chain>();
    visitor.visit::<TaskMove>();
    visitor.visit::<Forget>();
    visitor.visit::<MemoryAdd>();
    visitor.visit::<MemoryShow>();
    visitor.visit::<MemoryContext>();
    visitor.visit::<EpisodeStore>();
    visitor.visit::<EpisodeQuery>();
    visitor.visit::<KnowledgeLearn>();
    visitor.visit::<KnowledgeReinforce>();
    visitor.visit::<KnowledgeList>();
    visitor.visit::<ProjectRelate>();
    visitor.visit::<ProjectKnowledge>();
    visitor.visit::<Add>();
    visitor.visit::<Revise>();
    visitor.visit::<Retire>();
    visitor.visit::<TaskDepend>();
    visitor.visit::<TaskCanStart>();
    visitor.visit::<TaskGraph>();
    visitor.visit::<TaskList>();
    visitor.visit::<Link>();
    visitor.visit::<DecisionStatusSet>();
    visitor.visit::<DecisionActive>();
    visitor.visit::<EntityFind>();
    visitor.visit::<EntityEnsure>();
    visitor.visit::<EntityMention>();
    visitor.visit::<EntitySet>();
    visitor.visit::<EntityLink>();
    visitor.visit::<EntityMerge>();
    visitor.visit::<EntityByType>();
    visitor.visit::<ConversationStart>();
    visitor.visit::<ConversationAdd>();
    visitor.visit::<ConversationEnd>();
    visitor.visit::<ConversationShow>();
    visitor.visit::<ConversationRecent>();
    visitor.visit::<AgentPrefer>();
    visitor.visit::<AgentPreferences>();
    visitor.visit::<AgentCompleted>();
    visitor.visit::<AgentError>();
    visitor.visit::<AgentPerformance>();
    visitor.visit::<AgentContext>();
    visitor.visit::<KnowledgePrune>();
    visitor.visit::<EpisodeContext>();
    visitor.visit::<EpisodeAccess>();
    visitor.visit::<EpisodePrune>();
    visitor.visit::<ProjectPattern>();
    visitor.visit::<ProjectPatterns>();
    visitor.visit::<ProjectGotcha>();
    visitor.visit::<ProjectGotchas>();
    visitor.visit::<ProjectRelations>();
    visitor.visit::<ProjectLearn>();
    visitor.visit::<ProjectLearnings>();
    visitor.visit::<ProjectSearch>();
    visitor.visit::<Tagged>();
    visitor.visit::<Stats>();
    visitor.visit::<Consolidate>();
    visitor.visit::<MemoryBrief>();
    visitor.visit::<MemoryProjects>();
    visitor.visit::<MemoryDelete>();
    visitor.visit::<MemoryPrune>();
    visitor.visit::<MemoryClear>();
    visitor.visit::<MemoryImport>();
    visitor.visit::<MemoryImportGraph>();
    visitor.visit::<Prune>();
    visitor.visit::<DbStats>();
    visitor.visit::<Namespaces>();
    visitor.visit::<Changes>();
    visitor.visit::<VectorPut>();
    visitor.visit::<VectorSearch>();
    visitor.visit::<Reindex>();
    visitor.visit::<IndexStatus>();
    visitor.visit::<IndexBuild>();
    visitor.visit::<GraphImport>();
    visitor.visit::<GraphExport>();
    visitor.visit::<Batch>();
}

/// A database and the namespaces a caller works in: its own (where a request that names none
/// runs) and the patterns of others it may reach (none unless [allowed](Session::allow)). Every
/// request naming a namespace is checked here, for every interface.
#[derive(Clone)]
pub struct Session {
    db: Db,
    ns: String,
    allowed: Vec<String>,
}

impl Session {
    /// A session over `db` in namespace `ns` (checked), reaching no other.
    pub fn new(db: Db, ns: &str) -> Result<Session> {
        db.ns(ns)?;
        Ok(Session { db, ns: ns.to_string(), allowed: Vec::new() })
    }

    /// Also reach the namespaces matching `pattern`: a name, or a glob where `*` stands for
    /// any run of characters (`project:*`, `agent:dev-*`, `*` for all).
    pub fn allow(mut self, pattern: impl Into<String>) -> Session {
        self.allowed.push(pattern.into());
        self
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The session's own namespace.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// Run operation `op`. A panic inside it (a dependency's, on a damaged file) comes back as
    /// [`Error::Panicked`] (code `damaged`), so a server answers the call and keeps serving; as
    /// after any damage a read meets, the database's writes are refused from then on
    /// (`Store::damage`).
    pub fn call<O: Operation>(&self, op: O) -> Result<O::Output> {
        let out = crate::error::guard(O::NAME, || op.run(self));
        if let Err(e @ Error::Panicked { .. }) = &out {
            // Damage the storage did not see itself: its writes stop here too.
            self.db.store().note_damage(&e.to_string());
        }
        out
    }

    /// Whether the session may reach namespace `name`.
    pub fn reaches(&self, name: &str) -> bool {
        name == self.ns || self.allowed.iter().any(|p| glob(p, name))
    }

    /// The globs of what the session reaches: its own namespace and the patterns allowed.
    pub fn reach_patterns(&self) -> Vec<String> {
        std::iter::once(self.ns.clone()).chain(self.allowed.iter().cloned()).collect()
    }

    /// Refuse `what` unless the session reaches every namespace (it was allowed `*`): for an
    /// operation that writes where its input says.
    pub fn reach_all(&self, what: &str) -> Result<()> {
        if self.allowed.iter().any(|p| p == "*") {
            return Ok(());
        }
        Err(Error::NotAllowed { namespace: "*".into(), scope: format!("{what} needs every namespace") })
    }

    /// The namespace a request names (its own if none), if the session may reach it.
    pub fn ns(&self, requested: Option<&str>) -> Result<Ns> {
        let name = requested.unwrap_or(&self.ns);
        if !self.reaches(name) {
            let scope = if self.allowed.is_empty() {
                format!("{:?} only", self.ns)
            } else {
                format!("{:?} and {}", self.ns, self.allowed.join(", "))
            };
            return Err(Error::NotAllowed { namespace: name.to_string(), scope });
        }
        self.db.ns(name)
    }
}

/// Whether namespace `name` matches `pattern`, where `*` stands for any run of characters
/// (the rule of [`Session::allow`], for adapters that check patterns of their own).
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    glob(pattern, name)
}

/// Whether `name` matches `pattern`, where `*` stands for any run of characters.
pub(crate) fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else { return false };
    let Some(mut rest) = name.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for p in middle {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A time: RFC 3339 or a date, as every request takes it.
pub(crate) fn time(field: &str, s: &Option<String>) -> Result<Option<crate::Timestamp>> {
    s.as_deref()
        .map(|s| crate::Timestamp::parse(s).map_err(|e| crate::error::invalid(format!("`{field}`: {e}"))))
        .transpose()
}

/// The schema of a kind's name: one of the kinds.
pub(crate) fn kind_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = crate::Kind::ALL.iter().map(|k| k.name()).collect();
    schemars::json_schema!({"type": "string", "enum": names, "description": "What sort of memory this is."})
}

/// The schema of an optional kind's name.
pub(crate) fn kind_option_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = crate::Kind::ALL.iter().map(|k| k.name()).collect();
    schemars::json_schema!({"type": ["string", "null"], "enum": names})
}

/// The schema of a list of kinds.
pub(crate) fn kinds_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = crate::Kind::ALL.iter().map(|k| k.name()).collect();
    schemars::json_schema!({"type": "array", "items": {"type": "string", "enum": names}, "description": "Only these kinds."})
}

/// A request's result count: `default` when not given, refused (not cut) when 0 or above
/// `max`, so a caller always gets what it asked for or an error saying why.
pub(crate) fn count(limit: Option<usize>, default: usize, max: usize) -> Result<usize> {
    match limit {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(crate::error::invalid(format!("a limit of {n} is outside 1 to {max}"))),
    }
}

/// Kinds by name.
pub(crate) fn kinds(names: &[String]) -> Result<Vec<crate::Kind>> {
    names.iter().map(|n| n.parse::<crate::Kind>().map_err(Error::from)).collect()
}

/// One record.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct One {
    /// The record.
    pub record: RecordOut,
}

impl One {
    /// `record` as it is now.
    pub(crate) fn now(session: &Session, record: crate::Record) -> One {
        One { record: RecordOut::new(record, session.db().now()) }
    }

    /// The newest revision of record `id` in `ns` (after a write that answers no record).
    pub(crate) fn latest(session: &Session, ns: &Ns, id: crate::RecordId) -> Result<One> {
        let r = ns.latest(id)?.ok_or_else(|| {
            Error::Storage(crate::StorageError::NotFound { namespace: ns.name().clone(), id })
        })?;
        Ok(One::now(session, r))
    }
}

/// Records.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Entries {
    /// In the operation's order.
    pub entries: Vec<RecordOut>,
}

impl Entries {
    /// `records` as they are now.
    pub(crate) fn now(session: &Session, records: Vec<crate::Record>) -> Entries {
        let at = session.db().now();
        Entries { entries: records.into_iter().map(|r| RecordOut::new(r, at)).collect() }
    }
}

/// A record as an operation answers it: the record itself (for adapters in Rust, the CLI's
/// tables), serialised as its JSON view at the asked valid time (its status then, the
/// envelope, the body) with its text.
#[derive(Clone, Debug)]
pub struct RecordOut {
    /// The record.
    pub record: crate::Record,
    /// The valid time its status is given at.
    pub at: crate::Timestamp,
}

impl RecordOut {
    /// `record`, viewed at `at`.
    pub fn new(record: crate::Record, at: crate::Timestamp) -> RecordOut {
        RecordOut { record, at }
    }
}

impl Serialize for RecordOut {
    /// The `--json` view of the record ([`crate::json::RecordView`]: its fields in
    /// alphabetical order, as a JSON object's keys sort) and its `text` last, written field by
    /// field: no intermediate JSON tree, so that a server's answers and the Python package's
    /// records are made in one pass. The test `record_out_is_the_json_view` holds it to the
    /// view.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let r = &self.record;
        let e = crate::json::EnvelopeJson::from(&r.envelope);
        let mut m = s.serialize_map(Some(22))?;
        m.serialize_entry("body", &r.body.to_json())?;
        m.serialize_entry("confidence", &e.confidence.map(f64::from))?;
        m.serialize_entry("expires_at", &r.expires_at)?;
        m.serialize_entry("id", &r.id)?;
        m.serialize_entry("importance", &e.importance)?;
        m.serialize_entry("key", &e.key)?;
        m.serialize_entry("kind", &r.kind())?;
        m.serialize_entry("metadata", &e.metadata)?;
        m.serialize_entry("namespace", &r.namespace)?;
        m.serialize_entry("op", &r.op)?;
        m.serialize_entry("recorded_at", &r.recorded_at)?;
        m.serialize_entry("replaced_at", &r.replaced_at)?;
        m.serialize_entry("rev", &r.rev)?;
        m.serialize_entry("source", &e.source)?;
        m.serialize_entry("status", &r.status_at(self.at))?;
        m.serialize_entry("superseded_by", &r.superseded_by)?;
        m.serialize_entry("supersedes", &r.supersedes)?;
        m.serialize_entry("tags", &e.tags)?;
        m.serialize_entry("task", &e.task)?;
        m.serialize_entry("valid_from", &r.valid_from)?;
        m.serialize_entry("valid_until", &r.valid_until)?;
        m.serialize_entry("text", &r.body.text())?;
        m.end()
    }
}

/// A record read back from its JSON view (a client of a server): the record, and a valid time
/// at which it has the status the view gave (its start for active, its end for superseded or
/// retired, its expiry for expired, just before its start for not yet valid).
impl<'de> Deserialize<'de> for RecordOut {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<RecordOut, D::Error> {
        use serde::de::Error as _;
        let mut fields = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let status = fields.remove("status").ok_or_else(|| D::Error::missing_field("status"))?;
        let status: crate::Status = serde_json::from_value(status).map_err(D::Error::custom)?;
        fields.remove("text");
        let json: crate::json::RecordJson =
            serde_json::from_value(serde_json::Value::Object(fields)).map_err(D::Error::custom)?;
        let record = json.into_record().map_err(D::Error::custom)?;
        let at = match status {
            crate::Status::Pending => record.valid_from.plus_micros(-1),
            crate::Status::Superseded | crate::Status::Retired => {
                record.valid_until.unwrap_or(record.valid_from)
            }
            crate::Status::Expired => record.expires_at.unwrap_or(record.valid_from),
            _ => record.valid_from,
        };
        Ok(RecordOut { record, at })
    }
}

impl JsonSchema for RecordOut {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Record".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let kinds: Vec<&str> = crate::Kind::ALL.iter().map(|k| k.name()).collect();
        schemars::json_schema!({
            "type": "object",
            "description": "A record: its status at the asked time, its envelope (id, kind, namespace, revision, valid and transaction times, tags, importance, source...), its kind's fields under `body`, and its main text.",
            "properties": {
                "id": {"type": "string"},
                "kind": {"type": "string", "enum": kinds},
                "namespace": {"type": "string"},
                "status": {"type": "string", "description": "Validity at the asked time: active, superseded, retired, expired or not yet valid."},
                "rev": {"type": "integer"},
                "valid_from": {"type": "string"},
                "valid_until": {"type": ["string", "null"]},
                "recorded_at": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "body": {"type": "object"},
                "text": {"type": "string"}
            },
            "required": ["id", "kind", "namespace", "status", "body", "text"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{count, glob};

    #[test]
    fn counts_are_refused_outside_their_range_not_cut() {
        assert_eq!(count(None, 50, 1000).ok(), Some(50));
        assert_eq!(count(Some(1000), 50, 1000).ok(), Some(1000));
        for bad in [0, 1001, usize::MAX] {
            let e = count(Some(bad), 50, 1000).err().map(|e| (e.code(), e.to_string()));
            assert_eq!(
                e,
                Some((crate::Code::InvalidInput, format!("a limit of {bad} is outside 1 to 1000")))
            );
        }
    }

    #[test]
    fn globs_match_runs_of_anything() {
        for (p, n, want) in [
            ("a", "a", true),
            ("a", "ab", false),
            ("*", "", true),
            ("*", "anything", true),
            ("project:*", "project:x", true),
            ("project:*", "project:", true),
            ("project:*", "projects", false),
            ("agent:*-dev", "agent:bob-dev", true),
            ("agent:*-dev", "agent:bob-dev2", false),
            ("a*b*c", "abc", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "acb", false),
            ("ab*ba", "aba", false),
        ] {
            assert_eq!(glob(p, n), want, "{p} {n}");
        }
    }
}

/// What the operations' tests share.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Remember, Session};
    use crate::{Db, RecordId};

    /// What [`two_namespaces`] makes.
    pub(crate) type TwoNamespaces = (tempfile::TempDir, Db, Session, Vec<RecordId>);

    /// A database with a learning in each of namespaces `p` and `q`, and a session in `p`
    /// reaching every namespace: the directory (keep it), the database, the session and the
    /// learnings' ids.
    pub(crate) fn two_namespaces() -> Result<TwoNamespaces, Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = Db::create(dir.path().join("m.redb"))?;
        let all = Session::new(db.clone(), "p")?.allow("*");
        let mut ids = Vec::new();
        for ns in ["p", "q"] {
            let r = Remember {
                namespace: Some(ns.into()),
                kind: "learning".into(),
                text: Some(format!("note in {ns}")),
                ..Default::default()
            };
            ids.push(all.call(r)?.id);
        }
        Ok((dir, db, all, ids))
    }
}

#[cfg(test)]
mod each_tests {
    use super::{Operation, Visitor, each};

    /// Every operation: its name, whether it reads only, and its request's schema.
    struct Names(Vec<(&'static str, bool, serde_json::Value)>);

    impl Visitor for Names {
        fn visit<O: Operation>(&mut self) {
            let schema = serde_json::to_value(schemars::schema_for!(O)).unwrap_or_default();
            self.0.push((O::NAME, O::READ_ONLY, schema));
        }
    }

    #[test]
    fn every_operation_has_its_own_name_and_takes_an_object() {
        let mut all = Names(Vec::new());
        each(&mut all);
        let mut names: Vec<&str> = all.0.iter().map(|(n, _, _)| *n).collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count, "an operation name is used twice");
        assert!(count >= 60, "{count} operations");
        for (name, _, schema) in &all.0 {
            assert!(name.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{name}");
            // An HTTP body or an MCP tool's arguments: always a JSON object.
            assert_eq!(schema["type"], "object", "{name}: {schema}");
        }
    }
}

#[cfg(test)]
mod list_tests {
    use super::{List, Remember, Session};
    use crate::{Code, Db};

    #[test]
    fn a_listing_pages_with_its_cursor() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let session = Session::new(Db::create(dir.path().join("m.redb"))?, "p")?;
        let mut made = Vec::new();
        for i in 0..7 {
            let kind = if i % 2 == 0 { "learning" } else { "gotcha" };
            let r = Remember { kind: kind.into(), text: Some(format!("note {i}")), ..Default::default() };
            made.push(session.call(r)?.id);
        }
        made.reverse();
        let mut seen = Vec::new();
        let mut cursor = None;
        let mut pages = 0;
        loop {
            let page = session.call(List { limit: Some(3), cursor, ..Default::default() })?;
            pages += 1;
            assert!(page.records.len() <= 3);
            seen.extend(page.records.iter().map(|r| r.record.id));
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        // 3 + 3 + 1: the last page says no more follow, and no page is empty.
        assert_eq!((seen, pages), (made.clone(), 3));
        // A full last page has no cursor either.
        let six = session.call(List { limit: Some(6), ..Default::default() })?;
        let rest = session.call(List { limit: Some(1), cursor: six.next_cursor, ..Default::default() })?;
        assert_eq!((rest.records.len(), rest.next_cursor), (1, None));
        // Filters hold across pages.
        let first =
            session.call(List { kinds: vec!["gotcha".into()], limit: Some(2), ..Default::default() })?;
        let second = session.call(List {
            kinds: vec!["gotcha".into()],
            cursor: first.next_cursor,
            ..Default::default()
        })?;
        assert_eq!(first.records.len() + second.records.len(), 3);
        let bad = session.call(List { cursor: Some("nope".into()), ..Default::default() });
        assert_eq!(bad.err().map(|e| e.code()), Some(Code::InvalidInput));
        Ok(())
    }
}

#[cfg(test)]
mod guard_tests {
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    use super::{Operation, Session};
    use crate::{Code, Db, Error};

    /// An operation that panics the way redb does on a damaged page.
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Explodes;

    impl Operation for Explodes {
        const NAME: &'static str = "explodes";
        const TITLE: &'static str = "Explodes";
        const DESCRIPTION: &'static str = "Panics.";
        const READ_ONLY: bool = true;
        type Output = ();

        #[allow(clippy::panic, reason = "the panic under test")]
        fn run(self, _: &Session) -> crate::Result<()> {
            panic!("internal error: entered unreachable code")
        }
    }

    #[test]
    fn a_panic_inside_an_operation_is_its_error() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let session = Session::new(Db::create(dir.path().join("m.redb"))?, "p")?;
        let e = session.call(Explodes).err().ok_or("the panic was not caught")?;
        assert!(
            matches!(&e, Error::Panicked { what, message } if what == "explodes" && message.contains("unreachable"))
        );
        assert_eq!(e.code(), Code::Damaged);
        assert!(e.to_string().contains("the file may be damaged"), "{e}");
        // The session still serves reads; its writes are refused, the damage named.
        let listed = session.call(super::List::default())?;
        assert!(listed.records.is_empty());
        assert!(session.db().store().damage().is_some_and(|d| d.contains("unreachable")));
        let write = super::Remember { kind: "learning".into(), text: Some("x".into()), ..Default::default() };
        assert_eq!(session.call(write).err().map(|e| e.code()), Some(Code::Damaged));
        Ok(())
    }
}

#[cfg(test)]
mod record_out_tests {
    use super::{Add, History, RecordOut, Session, Supersede};
    use crate::Db;

    /// `RecordOut` writes exactly the `--json` view ([`crate::json::RecordView`], keys sorted
    /// as a JSON object's) with `text` last, for records with every field set and unset.
    #[test]
    fn record_out_is_the_json_view() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = Db::create(dir.path().join("m.redb"))?;
        let s = Session::new(db, "p")?;
        let full = serde_json::json!({
            "title": "Use redb", "rationale": "embedded", "tags": ["storage", "db"], "importance": 4,
            "confidence": 0.8, "source": "dev-1", "task": "t-1", "key": "the-key",
            "metadata": {"pr": 7, "nested": {"z": 1, "a": [1, 2]}}, "valid_from": "2024-01-01",
            "valid_until": "2030-01-01", "expires_at": "2031-01-01"
        });
        let serde_json::Value::Object(record) = full else { return Err("not an object".into()) };
        let id = s.call(Add { kind: "decision".into(), record, namespace: None })?.id;
        s.call(Supersede { id: id.to_string(), text: Some("Use redb 4".into()), ..Default::default() })?;
        let bare = serde_json::json!({"text": "a plain learning"});
        let serde_json::Value::Object(bare) = bare else { return Err("not an object".into()) };
        let plain = s.call(Add { kind: "learning".into(), record: bare, namespace: None })?.id;
        let mut revisions = s.call(History { id: id.to_string(), namespace: None })?.revisions;
        revisions.extend(s.call(History { id: plain.to_string(), namespace: None })?.revisions);
        assert!(revisions.len() >= 3);
        for out in &revisions {
            for at in [out.at, crate::Timestamp::parse("2023-01-01")?, crate::Timestamp::parse("2035-01-01")?]
            {
                let view = RecordOut::new(out.record.clone(), at);
                let mut want = serde_json::to_value(crate::json::RecordView::new(&view.record, at))?;
                let text = view.record.body.text();
                let serde_json::Value::Object(fields) = &mut want else { return Err("not an object".into()) };
                let mut expected = serde_json::to_string(fields)?;
                expected.pop();
                expected.push_str(&format!(",\"text\":{}}}", serde_json::to_string(&text)?));
                assert_eq!(serde_json::to_string(&view)?, expected);
            }
        }
        Ok(())
    }
}
