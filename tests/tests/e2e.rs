//! End-to-end tests across crates: the facade under concurrent readers and writers.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mnemon::body::{Decision, Learning, Task};
use mnemon::{AsOf, Db, ListQuery, Timestamp};

#[test]
fn concurrent_readers_see_consistent_snapshots_while_writers_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("c.redb")).unwrap();
    let writers = 6;
    let per_writer = 60;
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let db = db.clone();
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut checks = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let snap = db.snapshot().unwrap();
                    let ns = mnemon::Namespace::new("shared").unwrap();
                    let a = snap.list(&ns, &ListQuery::new()).unwrap();
                    let b = snap.list(&ns, &ListQuery::new()).unwrap();
                    // A snapshot does not move while writers commit.
                    assert_eq!(a.len(), b.len());
                    // Every write is a pair (a task and its learning, one job): never half of one.
                    let tasks = a.iter().filter(|r| r.kind() == mnemon::Kind::Task).count();
                    assert_eq!(tasks * 2, a.len(), "a reader saw half a job");
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                let ns = db.ns("shared").unwrap();
                for i in 0..per_writer {
                    let task =
                        ns.record(Task { title: format!("task {w}-{i}"), ..Default::default() }).build();
                    let learning = ns
                        .record(Learning { text: format!("learned {w}-{i}"), ..Default::default() })
                        .task(format!("{w}-{i}"))
                        .build();
                    ns.insert_all(vec![task, learning]).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    let all = db.ns("shared").unwrap().list(&ListQuery::new()).unwrap();
    assert_eq!(all.len(), writers * per_writer * 2, "lost writes");
    assert!(db.snapshot().unwrap().verify().unwrap().is_empty());
}

#[test]
fn typed_api_and_time_travel_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.redb");
    let (old, new) = {
        let db = Db::create(&path).unwrap();
        let ns = db.ns("project:x").unwrap();
        let old = ns
            .record(Decision { title: "Use JSON files".into(), ..Default::default() })
            .valid_from(Timestamp::parse("2024-01-01").unwrap())
            .insert()
            .unwrap();
        let new = ns
            .supersede_with(
                old,
                ns.record(Decision { title: "Use redb".into(), ..Default::default() })
                    .valid_from(Timestamp::parse("2024-06-01").unwrap())
                    .build(),
            )
            .unwrap();
        (old, new)
    };
    let db = Db::open(&path).unwrap();
    let ns = db.ns("project:x").unwrap();
    let march = ns.list_of::<Decision>(Timestamp::parse("2024-03-01").unwrap()).unwrap();
    assert_eq!(march.len(), 1);
    assert_eq!(march[0].id, old);
    assert_eq!(march[0].body_as::<Decision>().unwrap().title, "Use JSON files");
    let now = ns.list_of::<Decision>(AsOf::now()).unwrap();
    assert_eq!(now[0].id, new);
    assert_eq!(ns.chain(old).unwrap().iter().map(|r| r.id).collect::<Vec<_>>(), vec![old, new]);
    // Another namespace sees nothing of this one.
    assert!(db.ns("project:y").unwrap().list(&ListQuery::new()).unwrap().is_empty());
    assert!(db.ns("project:y").unwrap().get(old).unwrap().is_none());
}

#[test]
fn vectors_through_the_facade_build_in_the_background_and_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.redb");
    let opts = |read_only: bool| mnemon::IndexOptions {
        dir: Some(mnemon::IndexOptions::dir_beside(&path)),
        auto_maintain: !read_only,
        graph_min: 300,
        exact_max: 100,
        params: mnemon::index::HnswParams { m: 12, ef_construction: 64, ef_search: 48 },
        ..Default::default()
    };
    let db = Db::builder(&path).create(true).index_options(opts(false)).open().unwrap();
    let ns = db.ns("agent").unwrap();
    let vector = |i: usize| -> Vec<f32> {
        (0..8u64)
            .map(|d| {
                let h = (i as u64 * 8 + d + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                (h >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect()
    };
    let mut ids = Vec::new();
    for i in 0..400 {
        let id = ns
            .record(Learning { text: format!("lesson {i}"), ..Default::default() })
            .vector("toy-8", vector(i))
            .insert()
            .unwrap();
        ids.push(id);
    }
    // Dimension mismatch is an input error and writes nothing.
    let err =
        ns.record(Learning { text: "bad".into(), ..Default::default() }).vector("toy-8", vec![1.0]).insert();
    assert!(err.unwrap_err().is_input());
    assert_eq!(ns.list(&ListQuery::new()).unwrap().len(), 400);

    // The first search finds 400 live vectors (> graph_min) and starts a background build.
    let found = ns.vector_search("toy-8", &vector(5), 1).run().unwrap();
    assert_eq!(found.hits[0].record.id, ids[5], "a stored vector finds its own record");
    assert!(found.hits[0].score > 0.9999);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let status = db.index_status().unwrap();
        if status.first().is_some_and(|s| s.generation > 0 && !db.index().is_maintaining()) {
            assert_eq!(status[0].graph_points, 400);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the background build never published: {status:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let found = ns.vector_search("toy-8", &vector(5), 10).run().unwrap();
    assert_eq!(found.plan.path, mnemon::SearchPath::Graph, "{:?}", found.plan);
    assert!(found.hits.iter().any(|h| h.record.id == ids[5]));
    drop((ns, db));

    // A read-only reopen loads the published graph instead of building one.
    let ro = Db::builder(&path).read_only(true).index_options(opts(true)).open().unwrap();
    let status = ro.index_status().unwrap();
    assert_eq!((status[0].graph_points, status[0].load_note.clone()), (400, None));
    let found = ro.ns("agent").unwrap().vector_search("toy-8", &vector(5), 3).run().unwrap();
    assert_eq!(found.plan.path, mnemon::SearchPath::Graph);
}

#[test]
fn records_are_embedded_on_write_failures_are_backfilled_and_the_embedder_is_remembered() {
    use mnemon::embed::{HashEmbedder, HttpConfig, HttpEmbedder};
    use mnemon::{Error, TextMode};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.redb");
    // An HTTP embedder whose server is down: every embedding fails (a real refused connection).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let down = HttpEmbedder::new(HttpConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        dimension: Some(384),
        max_retries: 0,
        ..HttpConfig::default()
    })
    .unwrap();
    // On the write's path, as this test is about (a model's default defers: embedding/deferred).
    let db = Db::builder(&path).create(true).embedder(Arc::new(down)).defer_embeddings(false).open().unwrap();
    let ns = db.ns("p").unwrap();
    let a = ns.add(Learning { text: "Retry with exponential backoff".into(), ..Default::default() }).unwrap();
    assert_eq!(db.embed_stats().failures, 1, "the record is stored, without a vector");
    assert!(ns.get(a).unwrap().is_some());
    // Search still covers it lexically; vector search has nothing.
    let hits = ns.search("backoff").run().unwrap();
    assert_eq!(hits[0].record.id, a);
    assert!(ns.search("backoff").mode(TextMode::Vector).run().is_err());
    drop((ns, db));

    // Another embedder is refused unless a reindex is asked for.
    let err = Db::builder(&path).embedder(Arc::new(HashEmbedder::default())).open().unwrap_err();
    assert!(matches!(err, Error::EmbedderMismatch { .. }) && err.to_string().contains("reindex"), "{err}");
    // The hash embedder, as an embedder worth caching (as a model would be), counting its calls.
    struct Cached(HashEmbedder, std::sync::atomic::AtomicUsize);
    impl mnemon::embed::Embedder for Cached {
        fn model_id(&self) -> &str {
            self.0.model_id()
        }
        fn dimension(&self) -> usize {
            self.0.dimension()
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, mnemon::embed::EmbedError> {
            self.1.fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
            self.0.embed(texts)
        }
    }
    let cached = Arc::new(Cached(HashEmbedder::default(), 0.into()));
    let db =
        Db::builder(&path).embedder(cached.clone()).reembed(true).defer_embeddings(false).open().unwrap();
    let backfilled = db.reindex(None, 16, |_, _| {}).unwrap();
    assert_eq!(backfilled.misses, 1);
    let ns = db.ns("p").unwrap();
    let b =
        ns.add(Learning { text: "Bounded queues keep memory flat".into(), ..Default::default() }).unwrap();
    let calls = cached.1.load(std::sync::atomic::Ordering::SeqCst);
    // The same text again comes from the cache.
    let c =
        ns.add(Learning { text: "Bounded queues keep memory flat".into(), ..Default::default() }).unwrap();
    assert!(db.embed_stats().hits >= 1);
    assert_eq!(cached.1.load(std::sync::atomic::Ordering::SeqCst), calls, "no second embedding");
    let vec_hits = ns.search("exponential backoff retry").mode(TextMode::Vector).run().unwrap();
    assert_eq!(vec_hits[0].record.id, a);
    // Revising the text re-embeds it in the same commit.
    ns.revise_json(b, &serde_json::json!({"text": "Use exponential backoff on 429"})).unwrap();
    let fused = ns.search("exponential backoff").limit(2).run().unwrap();
    let ids: Vec<_> = fused.iter().map(|h| h.record.id).collect();
    assert!(ids.contains(&a) && ids.contains(&b), "{ids:?}");
    assert!(!ids.contains(&c));
    assert!(fused.iter().all(|h| h.lexical.is_some() && h.vector.is_some()));
    // The lexical share moves the fused order between its two sides' orders.
    let query = "bounded exponential backoff queues";
    let order = |hits: Vec<mnemon::SearchHit>| hits.into_iter().map(|h| h.record.id).collect::<Vec<_>>();
    let lexical = order(ns.search(query).mode(TextMode::Lexical).run().unwrap());
    let vector = order(ns.search(query).mode(TextMode::Vector).run().unwrap());
    let all_lexical = order(ns.search(query).lexical_share(1.0).run().unwrap());
    let all_vector = order(ns.search(query).lexical_share(0.0).run().unwrap());
    assert_eq!(all_lexical[..lexical.len()], lexical[..]);
    assert_eq!(all_vector[..vector.len()], vector[..]);
    assert_eq!(mnemon::default_lexical_share("mnemon-hash-v1-384"), 0.8);
    drop((ns, db));
    // Reopened without naming an embedder: the recorded one (hash) is used. Hashing is
    // cheaper than a lookup, so it writes no cache rows and reads none.
    let db = Db::open(&path).unwrap();
    assert_eq!(db.embedder().model_id(), "mnemon-hash-v1-384");
    let aux =
        |db: &Db| db.snapshot().unwrap().table_sizes().unwrap()["aux (index manifests, embedding cache)"];
    let before = aux(&db);
    let ns = db.ns("p").unwrap();
    for _ in 0..2 {
        ns.add(Learning { text: "Hashing needs no cache".into(), ..Default::default() }).unwrap();
    }
    assert_eq!((db.embed_stats().hits, db.embed_stats().misses), (0, 2));
    assert_eq!(aux(&db), before);
}
