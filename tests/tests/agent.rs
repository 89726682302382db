//! Agent knowledge and episodes through the facade, on a real database file.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::sync::Arc;

use mnemon::body::{Episode, Metrics};
use mnemon::{Body, Clock, Db, ManualClock, Timestamp};
use serde_json::json;

const DAY: i64 = 86_400_000_000;

fn open(path: &std::path::Path, clock: Arc<ManualClock>) -> Db {
    Db::builder(path).create(true).clock(clock).open().unwrap()
}

#[test]
fn role_knowledge_preferences_performance_and_context() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::parse("2024-05-01").unwrap()));
    let db = open(&dir.path().join("m.redb"), clock.clone());
    let ns = db.ns("agent:dev-1").unwrap();
    let agent = ns.agent();
    let (a, r) = agent.learn("testing", "Run the unit tests before every commit").unwrap();
    assert!(!r);
    assert_eq!(ns.get(a).unwrap().unwrap().envelope.confidence, Some(0.5));
    // Similar content in the same category reinforces; another category does not.
    let (same, r) = agent.learn("testing", "run the unit tests before every single commit").unwrap();
    assert!(r && same == a);
    let (other, r) = agent.learn("git", "Run the unit tests before every commit").unwrap();
    assert!(!r && other != a);
    for _ in 0..10 {
        agent.reinforce(a).unwrap();
    }
    assert_eq!(ns.get(a).unwrap().unwrap().envelope.confidence, Some(1.0), "capped at 1");
    let (weak, _) = agent.learn("style", "Prefer early returns").unwrap();
    let ids: Vec<_> = agent.knowledge(None).unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(ids[0], a, "strongest first");
    assert_eq!(agent.knowledge(Some("style")).unwrap()[0].id, weak);

    agent.set_preferences(&json!({"code_style": {"indent": 4}, "verbosity": "terse"})).unwrap();
    agent.set_preferences(&json!({"verbosity": "normal"})).unwrap();
    let prefs = agent
        .preferences(&json!({"code_style": {"indent": 2, "quotes": "double"}, "language": "en"}))
        .unwrap();
    assert_eq!(
        prefs,
        json!({"code_style": {"indent": 4, "quotes": "double"}, "language": "en", "verbosity": "normal"})
    );
    agent.set_preferences(&json!({"verbosity": null})).unwrap();
    assert!(agent.preferences(&json!({})).unwrap().get("verbosity").is_none());
    assert!(agent.set_preferences(&json!([1])).is_err());

    agent
        .record_task(Metrics {
            task: "t1".into(),
            iterations: 2,
            quality_gate_passed: true,
            ..Default::default()
        })
        .unwrap();
    agent
        .record_task(Metrics {
            task: "t2".into(),
            iterations: 4,
            quality_gate_passed: false,
            duration_ms: Some(1000),
            ..Default::default()
        })
        .unwrap();
    let e1 = agent.record_error("borrow checker: E0502", None).unwrap();
    let e2 = agent.record_error("Borrow checker:  E0502", Some("clone the key first")).unwrap();
    assert_eq!(e1, e2, "the same pattern counts again");
    agent.record_error("flaky network test", None).unwrap();
    let p = agent.performance().unwrap();
    assert_eq!(p.tasks_completed, 2);
    assert!((p.average_iterations - 3.0).abs() < 1e-9 && (p.quality_gate_pass_rate - 0.5).abs() < 1e-9);
    assert_eq!(
        p.common_errors[0],
        ("borrow checker: E0502".to_string(), "clone the key first".to_string(), 2)
    );

    let ctx = agent.context().unwrap();
    assert!(ctx.contains("- [testing] Run the unit tests before every commit"), "{ctx}");
    assert!(!ctx.contains("Prefer early returns"), "confidence 0.5 < 0.6 stays out: {ctx}");
    assert!(ctx.contains("Quality gate pass rate: 50%") && ctx.contains("→ clone the key first"), "{ctx}");

    // Pruning retires knowledge unused since the cut-off.
    clock.advance(10 * DAY);
    agent.reinforce(weak).unwrap();
    let cut = Timestamp::from_micros(clock.now().as_micros() - DAY);
    assert_eq!(agent.prune_stale(cut).unwrap(), 2);
    assert_eq!(agent.knowledge(None).unwrap().len(), 1);
}

#[test]
fn episodes_summary_query_access_context_and_pruning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.redb");
    let clock = Arc::new(ManualClock::new(Timestamp::parse("2024-05-01").unwrap()));
    let db = open(&path, clock.clone());
    let ns = db.ns("agent:dev-1").unwrap();
    let eps = ns.episodes();
    let long = "Fixed the flaky login test by waiting for the session cookie. ".repeat(10);
    let a = eps
        .store(
            Episode { episode_type: "error_fix".into(), content: long.clone(), ..Default::default() },
            Some("T-1"),
            None,
        )
        .unwrap();
    let Body::Episode(e) = ns.get(a).unwrap().unwrap().body else { panic!() };
    assert_eq!(e.summary.unwrap().chars().count(), 200);
    let b = eps
        .store(
            Episode {
                episode_type: "research".into(),
                content: "Compared redb and sled for the storage engine".into(),
                ..Default::default()
            },
            Some("T-2"),
            Some(5),
        )
        .unwrap();
    clock.advance(1_000);
    let c = eps
        .store(
            Episode {
                episode_type: "code_generation".into(),
                content: "Wrote the redb table layout and its codec".into(),
                ..Default::default()
            },
            None,
            None,
        )
        .unwrap();
    assert!(eps.store(Episode::default(), None, None).is_err());

    let hits = eps.query("redb storage engine", 2).unwrap();
    assert_eq!(hits[0].id, b);
    eps.query("redb storage engine", 2).unwrap();
    assert_eq!(eps.access(b).unwrap().count, 2);
    // Counting is buffered: nothing was written per query. It is written on flush or close.
    let before = db.store().snapshot().unwrap().meta().commit_seq;
    eps.query("login cookie", 1).unwrap();
    assert_eq!(db.store().snapshot().unwrap().meta().commit_seq, before, "a query writes nothing");
    let _ = eps;
    drop((ns, db));
    let db = open(&path, clock.clone());
    let ns = db.ns("agent:dev-1").unwrap();
    let eps = ns.episodes();
    assert_eq!(eps.access(b).unwrap().count, 2, "flushed when the database closed");
    assert_eq!(eps.access(a).unwrap().count, 1);
    assert_eq!(ns.history(b).unwrap().len(), 1, "access counts are not revisions");

    // The task's own episodes first, then the relevant others, within the budget.
    let ctx = eps.context("T-1", "redb table layout", 200).unwrap();
    assert_eq!(ctx.ids[0], a);
    assert!(ctx.ids.contains(&c), "{ctx:?}");
    assert!(ctx.tokens <= 200);
    let tiny = eps.context("T-1", "redb", 20).unwrap();
    assert!(tiny.tokens <= 20 && !tiny.ids.contains(&a), "the long summary does not fit: {tiny:?}");

    // By age: important episodes live longer. By count: the important and newest stay.
    clock.advance(40 * DAY);
    assert_eq!(eps.prune_by_age(30, 3).unwrap(), 2);
    assert!(ns.get(b).unwrap().is_some());
    eps.store(Episode { content: "x one".into(), ..Default::default() }, None, None).unwrap();
    clock.advance(1_000);
    let newest = eps.store(Episode { content: "x two".into(), ..Default::default() }, None, None).unwrap();
    assert_eq!(eps.prune_by_count(2).unwrap(), 1);
    assert!(ns.get(b).unwrap().is_some() && ns.get(newest).unwrap().is_some());
}

#[test]
fn prune_dry_run_retire_and_forget() {
    use mnemon::lifecycle::PruneOptions;
    use mnemon::scoped::{Scope, Section};
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::parse("2024-05-01").unwrap()));
    let db = open(&dir.path().join("m.redb"), clock.clone());
    let ns = db.ns("agent:dev-1").unwrap();
    let eps = ns.episodes();
    let old = eps.store(Episode { content: "old work".into(), ..Default::default() }, None, None).unwrap();
    let vip = eps
        .store(Episode { content: "important old work".into(), ..Default::default() }, None, Some(5))
        .unwrap();
    let note = db.memory().add(&Scope::Global, Section::Learnings, "ephemeral note", 1).unwrap();
    clock.advance(10 * DAY);
    for i in 0..4 {
        clock.advance(1_000);
        eps.store(Episode { content: format!("recent work {i}"), ..Default::default() }, None, None).unwrap();
    }
    let o = PruneOptions {
        dry_run: true,
        episode_max_age_days: Some(7),
        episode_cap: Some(3),
        ..Default::default()
    };
    let dry = db.prune(&o).unwrap();
    assert_eq!((dry.expired, dry.episodes_aged, dry.episodes_capped), (1, 1, 2), "{dry:?}");
    assert!(ns.get(old).unwrap().is_some(), "a dry run changes nothing");
    let done = db.prune(&PruneOptions { dry_run: false, ..o.clone() }).unwrap();
    assert_eq!((done.expired, done.episodes_aged, done.episodes_capped), (1, 1, 2));
    assert_eq!(ns.list_of::<Episode>(mnemon::AsOf::now()).unwrap().len(), 3);
    assert!(ns.get(vip).unwrap().is_some(), "importance 5 lives 3 x 7 days and ranks first under the cap");
    assert_eq!(ns.history(old).unwrap().len(), 2, "retired, not erased");
    assert!(db.ns("global").unwrap().latest(note).unwrap().unwrap().valid_until.is_some());
    // Nothing left to prune; with --forget the pruned are erased.
    assert_eq!(db.prune(&o).unwrap(), mnemon::lifecycle::PruneReport { dry_run: true, ..Default::default() });
    let gone = db.prune(&PruneOptions { forget: true, episode_cap: Some(1), ..Default::default() }).unwrap();
    assert_eq!(gone.episodes_capped, 2);
    assert_eq!(ns.list_of::<Episode>(mnemon::AsOf::now()).unwrap().len(), 1);
}
