//! Deferred embeddings against a real file, with an embedder that can be held.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use mnemon_embed::{EmbedError, Embedder, HashEmbedder};
use mnemon_storage::body::Learning;
use mnemon_storage::{NewRecord, StoreOptions, WriteOp};

use super::*;
use crate::{Db, TextMode};

/// The hashing embedder's vectors, from a "model" (worth caching, so deferred by default)
/// that can be held closed, counts its calls and refuses the text "refuse".
struct Gated {
    inner: HashEmbedder,
    open: Mutex<bool>,
    turn: Condvar,
    calls: AtomicUsize,
    /// Calls begun (held or not).
    entered: AtomicUsize,
}

impl Gated {
    fn new(open: bool) -> Arc<Gated> {
        Arc::new(Gated {
            inner: HashEmbedder::default(),
            open: Mutex::new(open),
            turn: Condvar::new(),
            calls: AtomicUsize::new(0),
            entered: AtomicUsize::new(0),
        })
    }

    fn set(&self, open: bool) {
        *self.open.lock().unwrap() = open;
        self.turn.notify_all();
    }
}

impl Embedder for Gated {
    fn model_id(&self) -> &str {
        "gated-hash"
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.entered.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.turn.wait(open).unwrap();
        }
        drop(open);
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(index) = texts.iter().position(|t| *t == "refuse") {
            return Err(EmbedError::Empty { index });
        }
        self.inner.embed(texts)
    }
}

fn learning(text: &str) -> Learning {
    Learning { text: text.into(), ..Default::default() }
}

fn open(path: &std::path::Path, e: &Arc<Gated>) -> Db {
    let e: Arc<dyn Embedder> = e.clone();
    Db::builder(path).create(true).embedder(e).open().unwrap()
}

/// The vector stored for a record's latest revision.
fn stored(db: &Db, ns: &str, id: RecordId) -> Option<(u32, Vec<f32>)> {
    let snap = db.snapshot().unwrap();
    let n = Namespace::new(ns).unwrap();
    let rev = snap.latest(&n, id).unwrap().unwrap().rev;
    snap.vector_for("gated-hash", &n, id, rev).unwrap()
}

/// Whether `found` is the revision `rev` and the hashing embedder's vector of `text` (to the
/// rounding of a second normalisation).
fn is_vector_of(found: Option<(u32, Vec<f32>)>, rev: u32, text: &str) -> bool {
    let want = HashEmbedder::default().embed(&[text]).unwrap().remove(0);
    found
        .is_some_and(|(from, v)| from == rev && v.iter().zip(&want).map(|(a, b)| a * b).sum::<f32>() > 0.9999)
}

fn marks(db: &Db) -> usize {
    db.snapshot().unwrap().aux_prefix(PREFIX).unwrap().len()
}

/// A model's writes commit before their vectors, which follow; a search by meaning right after
/// a write finds it; nothing pending is left.
#[test]
fn a_write_commits_first_and_its_vector_follows() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Gated::new(false);
    let db = open(&dir.path().join("d.redb"), &gate);
    assert!(db.embed_backlog().deferred);
    let ns = db.ns("p").unwrap();
    // The model is held: the write returns anyway, durable and found by its words.
    let id = ns.add(learning("the deploy needs a bounded queue")).unwrap();
    assert_eq!(db.embed_backlog().pending, 1);
    assert_eq!(marks(&db), 1, "the pending record is marked in the file");
    let hits = ns.search("bounded queue").mode(TextMode::Lexical).run().unwrap();
    assert_eq!(hits[0].record.id, id);
    assert!(stored(&db, "p", id).is_none());
    // A search by meaning waits for it.
    let searcher = {
        let ns = ns.clone();
        std::thread::spawn(move || ns.search("bounded queue").mode(TextMode::Vector).run().unwrap())
    };
    std::thread::sleep(Duration::from_millis(100));
    assert!(!searcher.is_finished(), "the search waits for the vector");
    gate.set(true);
    let hits = searcher.join().unwrap();
    assert_eq!(hits.first().map(|h| h.record.id), Some(id));
    assert_eq!(db.wait_for_vectors(Duration::from_secs(10)), 0);
    assert!(is_vector_of(stored(&db, "p", id), 0, "the deploy needs a bounded queue"));
    let b = db.embed_backlog();
    assert_eq!((b.pending, b.attached, marks(&db)), (0, 1, 0));
    assert_eq!(db.embed_stats().misses, 2, "the text written, and the query");
    // The hashing embedder is not deferred (it embeds faster than a commit), nor when asked.
    let hash = Db::create(dir.path().join("h.redb")).unwrap();
    assert!(!hash.embed_backlog().deferred);
    let e: Arc<dyn Embedder> = gate.clone();
    let inline = Db::builder(dir.path().join("i.redb")).create(true).embedder(e).defer_embeddings(false);
    assert!(!inline.open().unwrap().embed_backlog().deferred);
}

/// A record revised while its first text is being embedded gets the vector of its new text,
/// on its new revision: the old text's vector is refused by its guard.
#[test]
fn a_record_revised_meanwhile_gets_its_new_texts_vector() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Gated::new(false);
    let db = open(&dir.path().join("d.redb"), &gate);
    let ns = db.ns("p").unwrap();
    let id = ns.add(learning("first words")).unwrap();
    // A worker has taken it and waits in the embedder; the revise commits meanwhile.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while gate.entered.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    ns.revise_json(id, &serde_json::json!({"text": "second words entirely"})).unwrap();
    gate.set(true);
    assert_eq!(db.wait_for_vectors(Duration::from_secs(10)), 0);
    // The old text, whose vector its guard refuses, then the new one (once or twice: the
    // revise queued the record again, and another worker may take it at once).
    assert!(gate.calls.load(Ordering::SeqCst) >= 2);
    assert!(
        is_vector_of(stored(&db, "p", id), 1, "second words entirely"),
        "the new text's vector, serving the revision whose text it embeds"
    );
    assert_eq!(marks(&db), 0);
    // Forgotten while pending: nothing attached, no error, the mark gone.
    gate.set(false);
    let gone = ns.add(learning("soon forgotten")).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    ns.forget(gone).unwrap();
    gate.set(true);
    assert_eq!(db.wait_for_vectors(Duration::from_secs(10)), 0);
    assert_eq!(marks(&db), 0);
    // A text the model refuses: the record stays, without a vector, counted as a failure.
    let refused = ns.add(learning("refuse")).unwrap();
    assert_eq!(db.wait_for_vectors(Duration::from_secs(10)), 0);
    assert!(ns.get(refused).unwrap().is_some());
    assert!(stored(&db, "p", refused).is_none());
    assert_eq!((db.embed_stats().failures, marks(&db)), (1, 0));
}

/// What a crash leaves (records committed with their marks, the queue lost) is embedded when
/// the file is next opened for writing; a read-only handle leaves it; closing the last handle
/// drains the queue.
#[test]
fn pending_records_survive_a_crash_and_a_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.redb");
    let gate = Gated::new(true);
    drop(open(&path, &gate));
    // The state a killed writer leaves: three records committed with their marks.
    let ns = Namespace::new("p").unwrap();
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let mut ids = Vec::new();
    for text in ["alpha bravo", "charlie delta", "echo foxtrot"] {
        let rec = NewRecord::new(ns.clone(), learning(text));
        ids.push(rec.id);
        store.write(vec![mark(&ns, rec.id), WriteOp::Insert(rec)]).unwrap();
    }
    drop(store);
    let e: Arc<dyn Embedder> = gate.clone();
    let ro = Db::builder(&path).read_only(true).embedder(e).open().unwrap();
    assert!(!ro.embed_backlog().deferred);
    assert_eq!(marks(&ro), 3);
    drop(ro);
    let db = open(&path, &gate);
    assert_eq!(db.wait_for_vectors(Duration::from_secs(10)), 0);
    for (id, text) in ids.iter().zip(["alpha bravo", "charlie delta", "echo foxtrot"]) {
        assert!(is_vector_of(stored(&db, "p", *id), 0, text), "{text}");
    }
    assert_eq!(marks(&db), 0);
    // Closing drains: every record written has its vector when the handle is gone.
    let ns = db.ns("p").unwrap();
    let late: Vec<RecordId> =
        (0..20).map(|i| ns.add(learning(&format!("late record {i}"))).unwrap()).collect();
    drop(ns);
    drop(db);
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    let n = Namespace::new("p").unwrap();
    for id in late {
        assert!(snap.vector_for("gated-hash", &n, id, 0).unwrap().is_some());
    }
    assert!(snap.aux_prefix(PREFIX).unwrap().is_empty());
}

/// Writers wait for room when the backlog is full, and go on as the model catches up.
#[test]
fn a_full_backlog_holds_writers_back() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Gated::new(false);
    let e: Arc<dyn Embedder> = gate.clone();
    let db = Db::builder(dir.path().join("d.redb")).create(true).embedder(e).embed_backlog(4).open().unwrap();
    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (ns, written) = (db.ns("p").unwrap(), Arc::clone(&written));
        std::thread::spawn(move || {
            for i in 0..200 {
                ns.add(learning(&format!("record number {i}"))).unwrap();
                written.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    // The workers hold one batch each; the queue holds 4 more; the writer waits.
    let held = written.load(Ordering::SeqCst);
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    assert!(held <= 4 + 1 + workers * BATCH, "{held} writes went through a full backlog");
    assert!(!writer.is_finished());
    assert_eq!(db.embed_backlog().limit, 4);
    gate.set(true);
    writer.join().unwrap();
    assert_eq!(db.wait_for_vectors(Duration::from_secs(30)), 0);
    assert_eq!((db.embed_backlog().attached, marks(&db)), (200, 0));
    assert!(gate.calls.load(Ordering::SeqCst) < 200, "batched: {} calls", gate.calls.load(Ordering::SeqCst));
}

#[test]
fn a_mark_names_its_record() {
    let ns = Namespace::new("project:a/b c").unwrap();
    let id = RecordId::new();
    let key = mark_key(&ns, id);
    assert!(key.starts_with("embed/p/"));
    assert_eq!(parse_mark(&key), Some((ns.clone(), id)));
    assert_eq!(marked(&[mark(&ns, id)]).collect::<Vec<_>>(), vec![(ns, id)]);
    assert_eq!(parse_mark("embed/p/zz/x"), None);
    assert_eq!(parse_mark("embed/c/00"), None);
}
