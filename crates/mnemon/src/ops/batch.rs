//! Many writes in one durable commit: all of them or none. The server's batch endpoint, and
//! any interface whose caller has several writes to make at once (an agent saving the
//! decisions and tasks of a step, an importer): one request, one fsync, one transaction time.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::records::{Forget, Remember, Supersede};
use super::writes::{Add, Retire, Revise, WriteResult};
use super::{Operation, Session, count};
use crate::error::Result;

/// The most writes one batch takes.
pub const MAX_BATCH: usize = 10_000;

/// One write of a batch: an operation's name in `op` and its request's fields beside it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum BatchWrite {
    /// `add`: a record by its fields.
    Add(Add),
    /// `remember`: a memory by kind and text.
    Remember(Remember),
    /// `revise`: a JSON merge patch over a record.
    Revise(Revise),
    /// `supersede`: a record replaced by a new one.
    Supersede(Supersede),
    /// `retire`: a record's validity ended (or its expiry set).
    Retire(Retire),
    /// `forget`: a record retired, or with `erase` every revision erased.
    Forget(Forget),
}

/// Commit many writes at once.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    /// The writes, in order (1 to 10,000). Each record may be written by one of them only.
    pub writes: Vec<BatchWrite>,
}

/// What a batch did: one result per write, in order.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Batched {
    /// Per write: the record written (for a supersession the new one), its revision, whether
    /// a live record of the same identity already held it, the record it superseded.
    pub results: Vec<WriteResult>,
    /// The commit's sequence number: every write of the batch is in it.
    pub commit: u64,
}

impl Operation for Batch {
    const NAME: &'static str = "batch";
    const TITLE: &'static str = "Commit many writes at once";
    const DESCRIPTION: &'static str = "Make several writes (add, remember, revise, supersede, retire, forget; each `{\"op\": NAME, ...its fields}`) in one durable commit: all of them or, if one is refused, none. One record may be written by one of them only.";
    const READ_ONLY: bool = false;
    const DESTRUCTIVE: bool = true;
    const MCP: bool = false;
    type Output = Batched;

    fn run(self, session: &Session) -> Result<Batched> {
        count(Some(self.writes.len()), 1, MAX_BATCH)?;
        let mut intents = Vec::with_capacity(self.writes.len());
        for (index, w) in self.writes.into_iter().enumerate() {
            let intent = match w {
                BatchWrite::Add(a) => a.intent(session),
                BatchWrite::Remember(r) => r.intent(session),
                BatchWrite::Revise(r) => r.intent(session),
                BatchWrite::Supersede(s) => s.intent(session),
                BatchWrite::Retire(r) => r.intent(session),
                BatchWrite::Forget(f) => f.intent(session),
            };
            intents.push(intent.map_err(|e| crate::Error::InBatch { index, source: Box::new(e) })?);
        }
        let (outcomes, commit) = session.db().write_intents(intents)?;
        Ok(Batched { results: outcomes.into_iter().map(WriteResult::from).collect(), commit })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{Code, Db};

    fn batch(session: &Session, writes: serde_json::Value) -> Result<Batched> {
        let b: Batch = serde_json::from_value(json!({ "writes": writes }))
            .map_err(|e| crate::error::invalid(e.to_string()))?;
        session.call(b)
    }

    #[test]
    fn a_batch_is_one_commit_all_or_none() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = Db::create(dir.path().join("b.redb"))?;
        let s = Session::new(db.clone(), "p")?;
        let first = s.call(Remember {
            kind: "decision".into(),
            text: Some("Use redb".into()),
            ..Default::default()
        })?;
        let gone = s.call(Remember {
            kind: "learning".into(),
            text: Some("temporary".into()),
            ..Default::default()
        })?;
        let before = db.snapshot()?.meta().commit_seq;
        let done = batch(
            &s,
            json!([
                {"op": "remember", "kind": "task", "text": "Write the server"},
                {"op": "add", "kind": "gotcha", "record": {"title": "fsync", "problem": "slow", "solution": "group commit"}},
                {"op": "supersede", "id": first.id.to_string(), "text": "Use redb 4"},
                {"op": "forget", "id": gone.id.to_string(), "erase": true},
                {"op": "remember", "kind": "entity", "text": "axum", "data": {"entity_type": "crate"}},
            ]),
        )?;
        assert_eq!(done.results.len(), 5);
        assert_eq!(done.commit, before + 1, "one commit");
        assert_eq!(done.results[2].supersedes, Some(first.id));
        let ns = db.ns("p")?;
        let task = ns.get(done.results[0].id)?.ok_or("task")?;
        let gotcha = ns.get(done.results[1].id)?.ok_or("gotcha")?;
        assert_eq!(task.recorded_at, gotcha.recorded_at, "one transaction time");
        assert!(ns.history(gone.id)?.is_empty(), "erased");
        // A live record holds that identity: refused, as a single `remember` is.
        let again = batch(
            &s,
            json!([{"op": "remember", "kind": "entity", "text": "axum", "data": {"entity_type": "crate"}}]),
        );
        assert_eq!(again.unwrap_err().code(), Code::Conflict);

        // One refused write: nothing of the batch is committed.
        let seq = db.snapshot()?.meta().commit_seq;
        let e = batch(
            &s,
            json!([
                {"op": "remember", "kind": "learning", "text": "kept only if all are"},
                {"op": "revise", "id": "0123456789abcdef", "patch": {"text": "x"}},
            ]),
        )
        .unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        assert_eq!(db.snapshot()?.meta().commit_seq, seq);
        // A record written twice, an empty batch, an unknown op, a namespace out of reach.
        let t = done.results[0].id.to_string();
        let twice = batch(&s, json!([{"op": "retire", "id": t}, {"op": "revise", "id": t, "patch": {}}]))
            .unwrap_err();
        assert!(twice.to_string().contains("twice"), "{twice}");
        assert_eq!(batch(&s, json!([])).unwrap_err().code(), Code::InvalidInput);
        assert_eq!(batch(&s, json!([{"op": "get", "id": t}])).unwrap_err().code(), Code::InvalidInput);
        let far =
            batch(&s, json!([{"op": "remember", "kind": "learning", "text": "x", "namespace": "other"}]));
        assert_eq!(far.unwrap_err().code(), Code::Forbidden);
        assert_eq!(db.snapshot()?.meta().commit_seq, seq);
        Ok(())
    }
}
