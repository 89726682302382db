//! A handle on one namespace (`Ns`) with the typed API, a new record being described (`RecordBuilder`), a vector search being described (`VectorSearch`).

use crate::error::{Error, Result};
use crate::json;
use mnemon_index::{Found, Mode, Query};
use mnemon_storage::{
    AsOf, Body, Envelope, Expiry, KindBody, ListQuery, Namespace, NewRecord, OnConflict, Outcome, Record,
    RecordId, Revise, Text, Timestamp, WriteOp,
};
use serde_json::Value;

use super::*;

/// A handle on one namespace of a database, with the typed API over the kinds.
#[derive(Clone, Debug)]
pub struct Ns {
    pub(super) db: Db,
    pub(super) ns: Namespace,
}

/// How often a read-modify-write is retried when the record changes underneath it.
pub(super) const UPDATE_ATTEMPTS: u32 = 16;

impl Ns {
    /// The namespace.
    pub fn name(&self) -> &Namespace {
        &self.ns
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Start a new record of any kind; finish with [`RecordBuilder::insert`].
    pub fn record(&self, body: impl Into<Body>) -> RecordBuilder {
        RecordBuilder { ns: self.clone(), record: NewRecord::new(self.ns.clone(), body), vector: None }
    }

    /// Insert a record with defaults; returns its id.
    pub fn add(&self, body: impl Into<Body>) -> Result<RecordId> {
        self.record(body).insert()
    }

    fn one(&self, op: WriteOp) -> Result<Outcome> {
        let receipt = self.db.write(vec![op])?;
        receipt
            .outcomes
            .into_iter()
            .next()
            .ok_or_else(|| crate::error::invalid("the writer returned no outcome"))
    }

    /// Insert a fully described record (embedding its text in the same commit). A task's
    /// dependencies must be tasks valid now and close no cycle (an [`Error::Rule`]).
    pub fn insert(&self, mut record: NewRecord) -> Result<Outcome> {
        record.namespace = self.ns.clone();
        self.check_rules(&record)?;
        // Find-or-create: when a live record holds the identity, return it without embedding
        // a text that will not be written (a race with another writer is retried below).
        // As the store will key it (an explicit key is normalised when the record is checked).
        let key = self.identity_key(&record);
        let find = record.on_conflict == OnConflict::ReturnExisting && key.is_some();
        for _ in 0..2 {
            if find
                && let Some(k) = &key
                && let Some(id) = self.db.snapshot()?.identity(&self.ns, record.body.kind(), k)?
            {
                return Ok(Outcome::Existing { id });
            }
            let embed = self.db.embed_ops(&self.ns, &[(record.id, record.body.text())])?;
            match self.first(vec![WriteOp::Insert(record.clone())], embed) {
                // Another writer created the holder between the check and the write: the
                // vector of the unwritten record was refused; look again.
                Err(Error::Storage(mnemon_storage::Error::NotFound { id, .. }))
                    if find && id == record.id => {}
                other => return other,
            }
        }
        Err(Error::Contended { id: record.id, attempts: 2 })
    }

    /// Insert several records in one commit, all or none, each checked as [`Ns::insert`]
    /// checks one (a task's dependencies are checked against the tasks valid before the
    /// commit) and its text embedded in the same commit. The outcomes, in order; a record of
    /// another namespace is written in this one.
    pub fn insert_all(&self, records: Vec<NewRecord>) -> Result<Vec<Outcome>> {
        let mut texts = Vec::with_capacity(records.len());
        let mut ops = Vec::with_capacity(records.len());
        for mut record in records {
            record.namespace = self.ns.clone();
            self.check_rules(&record)?;
            texts.push((record.id, record.body.text()));
            ops.push(WriteOp::Insert(record));
        }
        let n = ops.len();
        ops.extend(self.db.embed_ops(&self.ns, &texts)?);
        let mut outcomes = self.db.write(ops)?.outcomes;
        outcomes.truncate(n);
        Ok(outcomes)
    }

    /// Write `ops` then `embed` (vectors and cache rows) as one job; the first outcome.
    fn first(&self, mut ops: Vec<WriteOp>, embed: Vec<WriteOp>) -> Result<Outcome> {
        ops.extend(embed);
        let receipt = self.db.write(ops)?;
        receipt
            .outcomes
            .into_iter()
            .next()
            .ok_or_else(|| crate::error::invalid("the writer returned no outcome"))
    }

    /// The identity a new record is found by, as the store keys it (an explicit key is
    /// normalised when the record is checked), if it has one.
    pub(super) fn identity_key(&self, record: &NewRecord) -> Option<String> {
        record
            .envelope
            .key
            .as_ref()
            .map(|k| mnemon_storage::body::normalise_key(k))
            .filter(|k| !k.is_empty())
            .or_else(|| record.body.default_identity())
    }

    /// The domain rules a new record obeys (see `rules.rs`): its size, a task's dependencies.
    pub(super) fn check_rules(&self, record: &NewRecord) -> Result<()> {
        crate::rules::record_size(record, self.db.max_record_bytes)?;
        if let mnemon_storage::Body::Task(t) = &record.body
            && !t.dependencies.is_empty()
        {
            crate::rules::task_dependencies(record.id, &t.dependencies, &self.task_graph()?)?;
        }
        Ok(())
    }

    /// Every task valid now and the tasks it depends on.
    pub(crate) fn task_graph(&self) -> Result<std::collections::BTreeMap<RecordId, Vec<RecordId>>> {
        Ok(self
            .list_of::<mnemon_storage::body::Task>(AsOf::now())?
            .into_iter()
            .filter_map(|r| match r.body {
                mnemon_storage::Body::Task(t) => Some((r.id, t.dependencies)),
                _ => None,
            })
            .collect())
    }

    /// A record id given in full, or as a unique tail (what [`RecordId::short`] prints) or
    /// head of at least 6 hex digits, in this namespace. Anything else, or digits several ids
    /// start or end with, is an input error; digits no id has is [`Error::NoSuchId`].
    pub fn resolve_id(&self, s: &str) -> Result<RecordId> {
        if let Ok(id) = RecordId::parse(s) {
            return Ok(id);
        }
        check_id_form(s)?;
        let hex: String = s.chars().filter(|c| *c != '-').collect();
        // Its end (what tables show) or its start (what a full id begins with): an id matching
        // either way counts, so a short id means one record or is refused as ambiguous.
        let snap = self.db.snapshot()?;
        let mut found = snap.ids_with_suffix(&self.ns, &hex)?;
        found.extend(snap.ids_with_prefix(&self.ns, &hex)?);
        found.sort();
        found.dedup();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(Error::NoSuchId { namespace: self.ns.as_str().to_string(), tail: s.to_string() }),
            many => Err(crate::error::invalid(format!(
                "{} records have an id starting or ending with {s}: {}",
                many.len(),
                many.iter().take(5).map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// The record as valid now.
    pub fn get(&self, id: RecordId) -> Result<Option<Record>> {
        self.get_as_of(id, AsOf::now())
    }

    /// The record as valid at `as_of`.
    pub fn get_as_of(&self, id: RecordId, as_of: impl Into<AsOf>) -> Result<Option<Record>> {
        Ok(self.db.snapshot()?.get(&self.ns, id, as_of.into())?)
    }

    /// The latest revision, whatever its validity.
    pub fn latest(&self, id: RecordId) -> Result<Option<Record>> {
        Ok(self.db.snapshot()?.latest(&self.ns, id)?)
    }

    /// Records matching the query, newest first.
    pub fn list(&self, query: &ListQuery) -> Result<Vec<Record>> {
        Ok(self.db.snapshot()?.list(&self.ns, query)?)
    }

    /// [`Ns::list`], also saying which index answered.
    pub fn list_explain(&self, query: &ListQuery) -> Result<(Vec<Record>, crate::ListPath)> {
        Ok(self.db.snapshot()?.list_explain(&self.ns, query)?)
    }

    /// Records of one kind valid at `as_of`; read their bodies with [`Record::body_as`].
    pub fn list_of<T: KindBody>(&self, as_of: impl Into<AsOf>) -> Result<Vec<Record>> {
        self.list(&ListQuery::new().kinds([T::KIND]).as_of(as_of))
    }

    /// Read-modify-write: apply `f` to the latest revision and write the result as a new
    /// revision, retrying if another writer got there first.
    pub fn update(&self, id: RecordId, mut f: impl FnMut(&mut Record) -> Result<()>) -> Result<Outcome> {
        for _ in 0..UPDATE_ATTEMPTS {
            let (op, embed) = self.plan_update(id, &mut f)?;
            match self.first(vec![op], embed) {
                Err(Error::Storage(mnemon_storage::Error::RevisionConflict { .. })) => continue,
                other => return other,
            }
        }
        Err(Error::Contended { id, attempts: UPDATE_ATTEMPTS })
    }

    /// The revision `f` makes of the latest one (expecting it to stay the latest), and the
    /// operations embedding its text if that changed.
    fn plan_update(
        &self,
        id: RecordId,
        f: &mut impl FnMut(&mut Record) -> Result<()>,
    ) -> Result<(WriteOp, Vec<WriteOp>)> {
        let latest = self
            .db
            .snapshot()?
            .latest(&self.ns, id)?
            .ok_or_else(|| mnemon_storage::Error::NotFound { namespace: self.ns.clone(), id })?;
        let mut next = latest.clone();
        f(&mut next)?;
        let revise = Revise {
            namespace: self.ns.clone(),
            id,
            expected_rev: Some(latest.rev),
            body: Some(next.body),
            envelope: Some(next.envelope),
            valid_from: (next.valid_from != latest.valid_from).then_some(next.valid_from),
            valid_until: (next.valid_until != latest.valid_until).then_some(next.valid_until),
            expires_at: (next.expires_at != latest.expires_at).then_some(next.expires_at),
        };
        let text = revise.body.as_ref().map(Body::text).unwrap_or_default();
        let embed =
            if text != latest.body.text() { self.db.embed_ops(&self.ns, &[(id, text)])? } else { Vec::new() };
        Ok((WriteOp::Revise(revise), embed))
    }

    /// Revise with a JSON merge patch over the loose form of the record (body fields and
    /// `tags`, `importance`, `confidence`, `source`, `task`, `key`, `metadata`, `valid_from`,
    /// `valid_until`, `expires_at`).
    pub fn revise_json(&self, id: RecordId, patch: &Value) -> Result<Outcome> {
        if !patch.is_object() {
            return Err(crate::error::invalid("the revision must be a JSON object"));
        }
        self.update(id, self.patcher(patch))
    }

    /// [`Self::revise_json`] planned, not committed (once: no retry).
    pub(super) fn plan_revise_json(&self, id: RecordId, patch: &Value) -> Result<(WriteOp, Vec<WriteOp>)> {
        if !patch.is_object() {
            return Err(crate::error::invalid("the revision must be a JSON object"));
        }
        self.plan_update(id, &mut self.patcher(patch))
    }

    /// What a JSON merge patch does to a record.
    fn patcher<'a>(&'a self, patch: &'a Value) -> impl FnMut(&mut Record) -> Result<()> + 'a {
        move |rec: &mut Record| {
            let mut loose = json::loose_form(rec);
            json::merge_patch(&mut loose, &json::canonical_patch(rec.kind(), &rec.body.to_json(), patch));
            let parsed = json::parse_input(loose, Some(rec.kind()), &self.ns)?;
            let n = parsed.record;
            crate::rules::record_size(&n, self.db.max_record_bytes)?;
            rec.body = n.body;
            rec.envelope = n.envelope;
            if let Some(f) = n.valid_from {
                rec.valid_from = f;
            }
            rec.valid_until = n.valid_until;
            rec.expires_at = match n.expiry {
                Expiry::At(t) => Some(t),
                _ => None,
            };
            Ok(())
        }
    }

    /// Close the record's valid interval at `at` (default now).
    pub fn retire(&self, id: RecordId, at: Option<Timestamp>) -> Result<Outcome> {
        self.one(WriteOp::Retire { namespace: self.ns.clone(), id, at })
    }

    /// Set the record's expiry to `at` (default now).
    pub fn expire(&self, id: RecordId, at: Option<Timestamp>) -> Result<Outcome> {
        self.one(WriteOp::Expire { namespace: self.ns.clone(), id, at })
    }

    /// Replace `old` by a new record with `body`, from now; returns the new id.
    pub fn supersede(&self, old: RecordId, body: impl Into<Body>) -> Result<RecordId> {
        self.supersede_with(old, NewRecord::new(self.ns.clone(), body))
    }

    /// Replace `old` by `new` (from `new.valid_from`, default now); returns the new id.
    pub fn supersede_with(&self, old: RecordId, new: NewRecord) -> Result<RecordId> {
        let (op, embed) = self.plan_supersede(old, new)?;
        self.first(vec![op], embed).map(|o| o.id())
    }

    /// [`Self::supersede_with`] planned, not committed.
    pub(super) fn plan_supersede(&self, old: RecordId, new: NewRecord) -> Result<(WriteOp, Vec<WriteOp>)> {
        let new = self.checked_successor(old, new)?;
        let embed = self.db.embed_ops(&self.ns, &[(new.id, new.body.text())])?;
        Ok((WriteOp::Supersede { old, new }, embed))
    }

    /// `new` as the successor of `old`: in this namespace, the fields it carries over from
    /// `old` filled in, the domain's rules checked.
    pub(super) fn checked_successor(&self, old: RecordId, mut new: NewRecord) -> Result<NewRecord> {
        new.namespace = self.ns.clone();
        let prev = self
            .latest(old)?
            .ok_or_else(|| mnemon_storage::Error::NotFound { namespace: self.ns.clone(), id: old })?;
        crate::rules::carry_over(&prev, &mut new);
        self.check_rules(&new)?;
        Ok(new)
    }

    /// Erase every revision of the record; returns how many there were.
    pub fn forget(&self, id: RecordId) -> Result<u32> {
        match self.one(WriteOp::Forget { namespace: self.ns.clone(), id })? {
            Outcome::Forgotten { revisions, .. } => Ok(revisions),
            _ => Ok(0),
        }
    }

    /// Every revision of the record, oldest first.
    pub fn history(&self, id: RecordId) -> Result<Vec<Record>> {
        Ok(self.db.snapshot()?.history(&self.ns, id)?)
    }

    /// Attach an embedding vector to a record in vector space `space` (see
    /// [`WriteOp::PutVector`]): validated, normalised, serving its latest revision.
    pub fn put_vector(&self, id: RecordId, space: &str, vector: Vec<f32>) -> Result<Outcome> {
        let op = WriteOp::PutVector {
            namespace: self.ns.clone(),
            id,
            rev: None,
            space: space.to_string(),
            vector,
        };
        let r = self.db.write(vec![op])?;
        r.outcomes.into_iter().next().ok_or_else(|| {
            Error::Storage(mnemon_storage::Error::Inconsistent {
                namespace: self.ns.as_str().into(),
                detail: "a write returned no outcome".into(),
            })
        })
    }

    /// The records nearest to `vector` in space `space`; refine, then [`VectorSearch::run`].
    pub fn vector_search<'a>(&'a self, space: &'a str, vector: &'a [f32], k: usize) -> VectorSearch<'a> {
        VectorSearch { ns: self, query: Query::new(space, &self.ns, vector, k) }
    }

    /// The supersession chain through the record, oldest first.
    pub fn chain(&self, id: RecordId) -> Result<Vec<Record>> {
        Ok(self.db.snapshot()?.chain(&self.ns, id)?)
    }
}

/// A new record being described; see [`Ns::record`].
#[derive(Clone, Debug)]
pub struct RecordBuilder {
    ns: Ns,
    record: NewRecord,
    vector: Option<(String, Vec<f32>)>,
}

impl RecordBuilder {
    /// Add a tag.
    pub fn tag(mut self, tag: impl Into<Text>) -> Self {
        self.record.envelope.tags.push(tag.into());
        self
    }

    /// Set the importance (1..=5); it also sets the default expiry.
    pub fn importance(mut self, i: u8) -> Self {
        self.record.envelope.importance = Some(i);
        self
    }

    /// Set the confidence (0..=1).
    pub fn confidence(mut self, c: f32) -> Self {
        self.record.envelope.confidence = Some(c);
        self
    }

    /// Set the source agent.
    pub fn source(mut self, s: impl Into<Text>) -> Self {
        self.record.envelope.source = Some(s.into());
        self
    }

    /// Set the task.
    pub fn task(mut self, t: impl Into<Text>) -> Self {
        self.record.envelope.task = Some(t.into());
        self
    }

    /// Declare an identity key.
    pub fn key(mut self, k: impl Into<Text>) -> Self {
        self.record.envelope.key = Some(k.into());
        self
    }

    /// Attach free JSON metadata.
    pub fn metadata(mut self, m: Value) -> Self {
        self.record.envelope.metadata = m.into();
        self
    }

    /// Replace all shared fields.
    pub fn envelope(mut self, e: Envelope) -> Self {
        self.record.envelope = e;
        self
    }

    /// Valid from `t` (default: now).
    pub fn valid_from(mut self, t: Timestamp) -> Self {
        self.record.valid_from = Some(t);
        self
    }

    /// Valid until `t` (default: open).
    pub fn valid_until(mut self, t: Timestamp) -> Self {
        self.record.valid_until = Some(t);
        self
    }

    /// Expire at `t`.
    pub fn expires_at(mut self, t: Timestamp) -> Self {
        self.record.expiry = Expiry::At(t);
        self
    }

    /// Never expire, whatever the importance.
    pub fn permanent(mut self) -> Self {
        self.record.expiry = Expiry::Never;
        self
    }

    /// What to do when a live record already holds the identity key.
    pub fn on_conflict(mut self, c: OnConflict) -> Self {
        self.record.on_conflict = c;
        self
    }

    /// Use this id instead of a fresh one.
    pub fn id(mut self, id: RecordId) -> Self {
        self.record.id = id;
        self
    }

    /// The record as described so far.
    pub fn build(self) -> NewRecord {
        self.record
    }

    /// Store this embedding with the record, in the same commit.
    pub fn vector(mut self, space: impl Into<String>, vector: Vec<f32>) -> Self {
        self.vector = Some((space.into(), vector));
        self
    }

    /// Insert it; returns its id (or the existing record's, under [`OnConflict::ReturnExisting`]).
    pub fn insert(self) -> Result<RecordId> {
        let ns = self.ns.clone();
        match self.vector {
            None => ns.insert(self.record).map(|o| o.id()),
            Some((space, vector)) => {
                let id = self.record.id;
                let put = WriteOp::PutVector { namespace: ns.ns.clone(), id, rev: None, space, vector };
                let r = ns.db.write(vec![WriteOp::Insert(self.record), put])?;
                Ok(r.outcomes.first().map_or(id, Outcome::id))
            }
        }
    }
}

/// A vector search being described; see [`Ns::vector_search`].
#[derive(Clone, Debug)]
pub struct VectorSearch<'a> {
    ns: &'a Ns,
    query: Query<'a>,
}

impl VectorSearch<'_> {
    /// As valid at, and known at, this time (default: now).
    pub fn as_of(mut self, as_of: impl Into<AsOf>) -> Self {
        self.query.filter.as_of = as_of.into();
        self
    }

    /// Only these kinds.
    pub fn kinds(mut self, kinds: impl IntoIterator<Item = mnemon_storage::Kind>) -> Self {
        self.query.filter.kinds = kinds.into_iter().collect();
        self
    }

    /// Only records carrying this tag (repeat for all of several).
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.query.filter.tags.push(tag.into());
        self
    }

    /// Exact, graph, or planned (default).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.query.mode = mode;
        self
    }

    /// Candidates examined in the graph.
    pub fn ef(mut self, ef: usize) -> Self {
        self.query.ef = Some(ef);
        self
    }

    /// Run it.
    pub fn run(self) -> Result<Found> {
        let snap = self.ns.db.snapshot()?;
        Ok(self.ns.db.index.search(&snap, &self.query)?)
    }
}

#[cfg(test)]
mod tests {
    use mnemon_storage::body::{Learning, Task};

    use crate::{Code, Db};

    #[test]
    fn insert_all_is_checked_embedded_and_all_or_none() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = Db::create(dir.path().join("m.redb"))?;
        let ns = db.ns("p")?;
        let a = ns.record(Learning { text: "bounded queues".into(), ..Default::default() }).build();
        let b = ns.record(Learning { text: "retry with jitter".into(), ..Default::default() }).build();
        let ids = [a.id, b.id];
        let out = ns.insert_all(vec![a, b])?;
        assert_eq!(out.iter().map(|o| o.id()).collect::<Vec<_>>(), ids);
        // Embedded in the same commit: a vector search finds them at once.
        let found = ns.search("jitter").mode(crate::TextMode::Vector).run()?;
        assert_eq!(found.first().map(|h| h.record.id), Some(ids[1]));
        // A task depending on a record that is not a task is refused, and nothing is written.
        let ok = ns.record(Learning { text: "not written".into(), ..Default::default() }).build();
        let bad =
            ns.record(Task { title: "t".into(), dependencies: vec![ids[0]], ..Default::default() }).build();
        let e = ns.insert_all(vec![ok, bad]).err().map(|e| e.code());
        assert_eq!(e, Some(Code::Conflict));
        assert_eq!(ns.list(&crate::ListQuery::new())?.len(), 2);
        Ok(())
    }

    /// Validated once, by the store: a loose record is read without checking what its kind
    /// requires, and refused when written; an explicit key is found however it is spelled.
    #[test]
    fn records_are_checked_when_written_and_keys_found_as_stored() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = Db::create(dir.path().join("m.redb"))?;
        let ns = db.ns("p")?;
        let loose = crate::json::parse_input(
            serde_json::json!({"importance": 9}),
            Some(crate::Kind::Decision),
            ns.name(),
        )?;
        assert!(loose.record.check().is_err());
        assert_eq!(ns.insert(loose.record).err().map(|e| e.code()), Some(Code::InvalidInput));
        let keyed = |k: &str| {
            ns.record(Learning { text: "the deploy key is in vault".into(), ..Default::default() })
                .key(k)
                .on_conflict(mnemon_storage::OnConflict::ReturnExisting)
                .build()
        };
        let first = ns.insert(keyed("Deploy  Key"))?;
        let again = ns.insert(keyed("deploy key"))?;
        assert!(matches!(again, mnemon_storage::Outcome::Existing { id } if id == first.id()));
        Ok(())
    }
}
