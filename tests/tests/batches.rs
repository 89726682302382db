//! A batch of writes: one commit, one call of the embedder for all its new texts, a refused
//! write named by its place with nothing written; `get_many` reads many records in order.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::sync::{Arc, Mutex};

use mnemon::embed::{EmbedError, Embedder, HashEmbedder};
use mnemon::ops::{Batch, GetMany, List, Session};
use mnemon::{Code, Db};
use serde_json::json;

/// The hashing embedder, counting the texts of each call.
struct Counting {
    inner: HashEmbedder,
    calls: Mutex<Vec<usize>>,
}

impl Embedder for Counting {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.calls.lock().unwrap().push(texts.len());
        self.inner.embed(texts)
    }
    fn worth_caching(&self) -> bool {
        true
    }
}

fn session() -> (tempfile::TempDir, Session, Arc<Counting>) {
    session_deferring(false)
}

/// A session over a new file, its texts embedded on the write's path or (`defer`) after
/// their records commit (`DbBuilder::defer_embeddings`, a model's default).
fn session_deferring(defer: bool) -> (tempfile::TempDir, Session, Arc<Counting>) {
    let dir = tempfile::tempdir().unwrap();
    let counting = Arc::new(Counting { inner: HashEmbedder::default(), calls: Mutex::new(Vec::new()) });
    let db = Db::builder(dir.path().join("m.redb"))
        .create(true)
        .embedder(counting.clone())
        .defer_embeddings(defer)
        .open()
        .unwrap();
    (dir, Session::new(db, "p").unwrap(), counting)
}

fn batch(writes: serde_json::Value) -> Batch {
    serde_json::from_value(json!({ "writes": writes })).unwrap()
}

#[test]
fn a_batch_embeds_its_texts_in_one_call() {
    let (_dir, s, counting) = session();
    let writes: Vec<_> = (0..100)
        .map(|i| json!({"op": "add", "kind": "learning", "record": {"text": format!("note number {i}")}}))
        .collect();
    let done = s.call(batch(json!(writes))).unwrap();
    assert_eq!(done.results.len(), 100);
    assert_eq!(*counting.calls.lock().unwrap(), vec![100]);
    // Supersessions in a batch too.
    let old = done.results[0].id.to_string();
    s.call(batch(json!([{"op": "supersede", "id": old, "text": "note number 0, corrected"},
                        {"op": "add", "kind": "learning", "record": {"text": "one more"}}])))
        .unwrap();
    assert_eq!(counting.calls.lock().unwrap()[1..], [2]);
}

/// Deferred, a batch commits before its vectors, which follow in calls of up to 16 texts.
#[test]
fn a_deferred_batch_gets_its_vectors_in_a_few_calls() {
    let (_dir, s, counting) = session_deferring(true);
    let writes: Vec<_> = (0..100)
        .map(|i| json!({"op": "add", "kind": "learning", "record": {"text": format!("note number {i}")}}))
        .collect();
    assert_eq!(s.call(batch(json!(writes))).unwrap().results.len(), 100);
    assert_eq!(s.db().wait_for_vectors(std::time::Duration::from_secs(30)), 0);
    let calls = counting.calls.lock().unwrap().clone();
    assert_eq!(calls.iter().sum::<usize>(), 100, "{calls:?}");
    assert!(calls.len() <= 100usize.div_ceil(16) + 2 && calls.iter().all(|&n| n <= 16), "{calls:?}");
    assert_eq!(s.db().embed_backlog().attached, 100);
}

#[test]
fn a_refused_write_is_named_by_its_place_and_nothing_is_written() {
    let (_dir, s, _) = session();
    for (bad, what) in [
        (
            json!({"op": "add", "kind": "decision", "record": {"rationale": "no title"}}),
            "needs a non-empty `title`",
        ),
        (json!({"op": "add", "kind": "learning", "record": {"text": "x", "importance": 9}}), "importance"),
        (
            json!({"op": "add", "kind": "learning", "record": {"text": "x", "valid_from": "yesterday-ish"}}),
            "yesterday-ish",
        ),
        (json!({"op": "revise", "id": "0123456789abcdef", "patch": {}}), "0123456789abcdef"),
    ] {
        let writes = json!([
            {"op": "add", "kind": "learning", "record": {"text": "fine"}},
            {"op": "add", "kind": "learning", "record": {"text": "fine too"}},
            bad,
        ]);
        let e = s.call(batch(writes)).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("write 2 of the batch") && msg.contains(what), "{msg}");
        assert!(matches!(e.code(), Code::InvalidInput | Code::NotFound), "{msg}");
    }
    assert!(s.call(List::default()).unwrap().records.is_empty());
}

#[test]
fn get_many_reads_in_order_with_null_for_what_is_not_visible() {
    let (_dir, s, _) = session();
    let done = s
        .call(batch(json!([
            {"op": "add", "kind": "learning", "record": {"text": "old", "valid_from": "2024-01-01"}},
            {"op": "add", "kind": "learning", "record": {"text": "new", "valid_from": "2025-01-01"}},
        ])))
        .unwrap();
    let (a, b) = (done.results[0].id.to_string(), done.results[1].id.to_string());
    let unknown = "0123456789abcdef0123456789abcdef".to_string();
    let got = s
        .call(GetMany {
            ids: vec![b.clone(), unknown, a.clone()],
            as_of: Some("2024-06-01".into()),
            ..Default::default()
        })
        .unwrap();
    let texts: Vec<Option<String>> =
        got.records.iter().map(|r| r.as_ref().map(|r| r.record.body.text().to_string())).collect();
    assert_eq!(texts, vec![None, None, Some("old".into())]);
    let now = s.call(GetMany { ids: vec![a, b], ..Default::default() }).unwrap();
    assert!(now.records.iter().all(Option::is_some));
    let e = s.call(GetMany { ids: vec!["x".into(); 1001], ..Default::default() }).unwrap_err();
    assert_eq!(e.code(), Code::InvalidInput);
    assert!(s.call(GetMany::default()).is_err());
}
