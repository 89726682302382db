//! Erasure of a namespace (or some of its records): nothing of them is seen again at any valid
//! or transaction time, by listing, reading, history, search (words and vectors) or export;
//! other namespaces are untouched; an audit record says it happened without naming what.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use mnemon::ops::{Add, Erase, Get, History, List, Recall, Session, Supersede};
use mnemon::{Code, Db, TextMode};
use serde_json::json;

fn add(s: &Session, ns: &str, kind: &str, record: serde_json::Value) -> String {
    let a: Add = serde_json::from_value(json!({"kind": kind, "record": record, "namespace": ns})).unwrap();
    s.call(a).unwrap().id.to_string()
}

fn list(s: &Session, ns: &str, as_of: Option<&str>, known_at: Option<&str>) -> usize {
    s.call(List {
        namespace: Some(ns.into()),
        as_of: as_of.map(Into::into),
        known_at: known_at.map(Into::into),
        ..Default::default()
    })
    .unwrap()
    .records
    .len()
}

fn found(s: &Session, ns: &str, q: &str, mode: TextMode) -> usize {
    s.call(Recall { query: q.into(), namespace: Some(ns.into()), mode: Some(mode), ..Default::default() })
        .unwrap()
        .hits
        .len()
}

#[test]
fn erasing_a_namespace_leaves_nothing_to_see_at_any_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let s = Session::new(db.clone(), "admin").unwrap().allow("*");
    let user = "user:alice@example.com";
    let old = add(&s, user, "decision", json!({"title": "Alice prefers tea", "valid_from": "2024-01-01"}));
    s.call(Supersede {
        id: old.clone(),
        namespace: Some(user.into()),
        data: Some(json!({"title": "Alice prefers green tea"}).as_object().unwrap().clone()),
        ..Default::default()
    })
    .unwrap();
    let note = add(&s, user, "learning", json!({"text": "Alice lives in Lyon", "tags": ["pii"]}));
    add(&s, user, "learning", json!({"text": "Alice's order history", "tags": ["pii", "orders"]}));
    let kept = add(&s, "team", "learning", json!({"text": "tea is served at four"}));
    let before = chrono_now(&s);
    assert_eq!(list(&s, user, None, None), 3);

    // Nothing without the confirmation.
    let e = s
        .call(Erase { namespace: user.into(), confirm: "user:alice".into(), ..Default::default() })
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidInput);
    assert!(e.to_string().contains("nothing was erased"), "{e}");
    assert_eq!(list(&s, user, None, None), 3);

    // Only some: the learnings tagged both pii and orders.
    let some = s
        .call(Erase {
            namespace: user.into(),
            confirm: user.into(),
            kinds: vec!["learning".into()],
            tags: vec!["pii".into(), "orders".into()],
            ..Default::default()
        })
        .unwrap();
    assert_eq!((some.records, some.revisions), (1, 1));
    assert_eq!(list(&s, user, None, None), 2);

    // Those passing a filter: Alice's note of the day, by its metadata.
    let lyon = add(&s, user, "learning", json!({"text": "Alice flew to Lyon", "metadata": {"trip": true}}));
    let filtered: Erase =
        serde_json::from_value(json!({"namespace": user, "confirm": user, "where": {"trip": true}})).unwrap();
    assert_eq!(s.call(filtered).unwrap().records, 1);
    assert!(s.call(Get { id: lyon, namespace: Some(user.into()), ..Default::default() }).is_err());
    // Everything.
    let all = s.call(Erase { namespace: user.into(), confirm: user.into(), ..Default::default() }).unwrap();
    // The superseded decision has two revisions (as written, then marked superseded).
    assert_eq!((all.records, all.revisions), (3, 4), "{all:?}");
    for (as_of, known_at) in [
        (None, None),
        (Some("2024-06-01"), None),
        (None, Some(before.as_str())),
        (Some("2024-06-01"), Some(before.as_str())),
    ] {
        assert_eq!(list(&s, user, as_of, known_at), 0, "{as_of:?} {known_at:?}");
    }
    for id in [&old, &note] {
        let e =
            s.call(Get { id: id.clone(), namespace: Some(user.into()), ..Default::default() }).unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        assert!(s.call(History { id: id.clone(), namespace: Some(user.into()) }).is_err());
    }
    for mode in [TextMode::Lexical, TextMode::Vector, TextMode::Exact, TextMode::Hybrid] {
        assert_eq!(found(&s, user, "Alice tea Lyon", mode), 0, "{mode:?}");
    }
    let mut out = Vec::new();
    mnemon::transfer::export(&db, Some(&mnemon::Namespace::new(user).unwrap()), &mut out).unwrap();
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
    // The other namespace is as it was.
    assert_eq!(found(&s, "team", "tea", TextMode::Hybrid), 1);
    assert!(s.call(Get { id: kept, namespace: Some("team".into()), ..Default::default() }).is_ok());

    // The audit trail: two erasures, counts and hashes, never the names.
    let audit = s
        .call(List { namespace: Some(mnemon::erase::AUDIT_NAMESPACE.into()), ..Default::default() })
        .unwrap();
    assert_eq!(audit.records.len(), 3);
    let text = serde_json::to_string(
        &audit.records.iter().map(|r| r.record.envelope.metadata.as_str().to_string()).collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(!text.contains("alice") && !text.contains("orders"), "{text}");
    assert!(text.contains(&blake3::hash(user.as_bytes()).to_hex().to_string()), "{text}");
    let e = s
        .call(Erase {
            namespace: mnemon::erase::AUDIT_NAMESPACE.into(),
            confirm: mnemon::erase::AUDIT_NAMESPACE.into(),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidInput);
}

#[test]
fn a_session_erases_only_what_it_reaches() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let mine = Session::new(db.clone(), "project:a").unwrap();
    add(&mine, "project:a", "learning", json!({"text": "x"}));
    let e = mine
        .call(Erase { namespace: "project:b".into(), confirm: "project:b".into(), ..Default::default() })
        .unwrap_err();
    assert_eq!(e.code(), Code::Forbidden);
    let done = mine
        .call(Erase { namespace: "project:a".into(), confirm: "project:a".into(), ..Default::default() })
        .unwrap();
    assert_eq!(done.records, 1);
    let none = mine
        .call(Erase { namespace: "project:a".into(), confirm: "project:a".into(), ..Default::default() })
        .unwrap();
    assert_eq!((none.records, none.audit), (0, None));
}

/// The database's clock now, as RFC 3339.
fn chrono_now(s: &Session) -> String {
    s.db().now().to_rfc3339()
}
