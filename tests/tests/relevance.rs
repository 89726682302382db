//! Nothing irrelevant: a query that matches nothing gets nothing back, from plain search and
//! from every search built on it (project search, episodes, scoped memory, the context block),
//! while matching queries still find their records, with scores in [0, 1].
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use mnemon::body::{Episode, Learning, Pattern};
use mnemon::context::ContextRequest;
use mnemon::scoped::{Scope, Section};
use mnemon::{Db, TextMode};

fn db() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("r.redb")).unwrap();
    (dir, db)
}

#[test]
fn a_query_that_matches_nothing_gets_nothing() {
    let (_dir, db) = db();
    let ns = db.ns("project:demo").unwrap();
    let pnpm = ns.add(Learning { text: "Use pnpm, not npm".into(), ..Default::default() }).unwrap();
    ns.add(Learning { text: "Retry with exponential backoff on 429 responses".into(), ..Default::default() })
        .unwrap();
    ns.project()
        .add_pattern(
            Pattern {
                title: "Store slices".into(),
                description: "Zustand slices per feature".into(),
                ..Default::default()
            },
            None,
        )
        .unwrap();
    ns.episodes()
        .store(
            Episode {
                content: "Fixed the flaky upload test by pinning the clock".into(),
                ..Default::default()
            },
            None,
            None,
        )
        .unwrap();

    for q in ["zzzqqq", "kubernetes", "quantum chromodynamics"] {
        for mode in [TextMode::Hybrid, TextMode::Lexical, TextMode::Vector, TextMode::Exact] {
            let hits = ns.search(q).mode(mode).run().unwrap();
            assert!(
                hits.is_empty(),
                "{q} ({mode:?}): {:?}",
                hits.iter().map(|h| h.record.body.text()).collect::<Vec<_>>()
            );
        }
        assert!(ns.project().search_all(q, 10).unwrap().is_empty(), "{q}");
        assert!(ns.episodes().query(q, 5).unwrap().is_empty(), "{q}");
        let block = ns.context(&ContextRequest { query: q.into(), ..Default::default() }).unwrap();
        assert!(!block.text.contains("pnpm") && !block.text.contains("backoff"), "{q}: {}", block.text);
    }
    // Asked for, the nearest records still come back, scored 0.
    let nearest = ns.search("kubernetes").mode(TextMode::Vector).min_score(0.0).run().unwrap();
    assert!(!nearest.is_empty() && nearest.iter().all(|h| h.score == 0.0), "{nearest:?}");

    // What matches is found, the stemmed form too, with a score in (0, 1].
    let hits = ns.search("npm packages").run().unwrap();
    assert_eq!(hits[0].record.id, pnpm);
    assert!(hits.iter().all(|h| h.score > 0.0 && h.score <= 1.0), "{hits:?}");
    let retried = ns.search("retrying").mode(TextMode::Lexical).run().unwrap();
    assert_eq!(retried.len(), 1);
    assert!(retried[0].record.body.text().contains("Retry"));
    let episodes = ns.episodes().query("flaky uploads", 5).unwrap();
    assert_eq!(episodes.len(), 1);
}

#[test]
fn scoped_memory_context_leaves_out_unrelated_learnings() {
    let (_dir, db) = db();
    let memory = db.memory();
    let scope = Scope::project("/srv/app");
    memory.add(&scope, Section::Learnings, "Uses Zustand for state", 4).unwrap();
    memory.add(&scope, Section::Learnings, "The API client retries on 503", 3).unwrap();
    let unrelated = memory.context(&scope, "kubernetes", 2000).unwrap();
    assert!(!unrelated.contains("Zustand") && !unrelated.contains("retries"), "{unrelated}");
    let related = memory.context(&scope, "state management", 2000).unwrap();
    assert!(related.contains("Zustand") && !related.contains("retries"), "{related}");
    let all = memory.context(&scope, "", 2000).unwrap();
    assert!(all.contains("Zustand") && all.contains("retries"), "{all}");
}

#[test]
fn a_time_the_query_names_weighs_up_what_began_then() {
    let (_dir, db) = db();
    let ns = db.ns("team").unwrap();
    let text = "We decided to adopt redb for the memory store";
    let at = |t: &str| mnemon::Timestamp::parse(t).unwrap();
    let january = ns
        .record(Learning { text: text.into(), ..Default::default() })
        .valid_from(at("2023-01-10"))
        .insert()
        .unwrap();
    let may = ns
        .record(Learning { text: text.into(), ..Default::default() })
        .valid_from(at("2023-05-08"))
        .insert()
        .unwrap();
    let ids = |q: &str, named: bool| -> Vec<mnemon::RecordId> {
        ns.search(q).named_times(named).run().unwrap().iter().map(|h| h.record.id).collect()
    };
    // Equal texts tie, and ties go by id: the January record first.
    assert_eq!(ids("what did we decide about redb", true), [january, may]);
    assert_eq!(ids("what did we decide about redb in May 2023", true), [may, january]);
    assert_eq!(ids("what did we decide about redb on 8 May, 2023", true), [may, january]);
    assert_eq!(ids("what did we decide about redb in January 2023", true), [january, may]);
    assert_eq!(ids("what did we decide about redb in May 2023", false), [january, may]);
    // Relative times count back from the time the search is asked as of.
    let asked = |q: &str, t: &str| -> Vec<mnemon::RecordId> {
        ns.search(q).as_of(at(t)).run().unwrap().iter().map(|h| h.record.id).collect()
    };
    assert_eq!(asked("what did we decide about redb yesterday", "2023-05-09T12:00:00Z"), [may, january]);
    assert_eq!(asked("what did we decide about redb yesterday", "2023-01-11T12:00:00Z"), [january]);
    assert_eq!(asked("what did we decide about redb last week", "2023-05-17T12:00:00Z"), [may, january]);
    // A time alone matches nothing: the boost reorders results, it never adds one.
    assert!(ids("May 2023", true).is_empty());
}
