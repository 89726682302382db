//! The lexical index: BM25 ranking, identifiers, time travel, filters, forgetting.

use std::sync::Arc;

use mnemon_storage::body::{Decision, Learning};
use mnemon_storage::*;

fn learning(t: &str) -> Body {
    Learning { text: t.into(), ..Default::default() }.into()
}

fn ids(hits: &[LexicalHit]) -> Vec<RecordId> {
    hits.iter().map(|h| h.record.id).collect()
}

#[test]
fn bm25_identifiers_time_travel_filters_and_forget() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::parse("2026-01-01").unwrap()));
    let store = Store::open(
        dir.path().join("l.redb"),
        StoreOptions { create: true, clock: clock.clone(), ..Default::default() },
    )
    .unwrap();
    let ns = Namespace::new("lex").unwrap();
    let put = |body: Body, tags: &[&str]| -> RecordId {
        let mut n = NewRecord::new(ns.clone(), body);
        n.envelope.tags = tags.iter().map(|t| (*t).into()).collect();
        let id = n.id;
        store.write(vec![WriteOp::Insert(n)]).unwrap();
        id
    };
    let retry = put(learning("Retry with exponential backoff; backoff caps at 30 seconds"), &["net"]);
    let parse = put(learning("parseHTTPResponse fails on chunked bodies"), &[]);
    let queue = put(learning("Bounded queues prevent memory blowups"), &["net"]);
    let decision =
        put(Decision { title: "Use backoff in the client".into(), ..Default::default() }.into(), &[]);
    clock.advance(1_000_000);
    let q = ListQuery::new();
    let snap = store.snapshot().unwrap();

    // Ranking: the text that says "backoff" twice, in fewer words, first.
    let hits = snap.lexical_search(&ns, "backoff", &q, 10).unwrap();
    assert_eq!(ids(&hits), vec![retry, decision]);
    assert!(hits[0].score > hits[1].score && hits[1].score > 0.0);
    // Identifier parts and the whole identifier; case and punctuation do not matter.
    assert_eq!(ids(&snap.lexical_search(&ns, "response", &q, 10).unwrap()), vec![parse]);
    assert_eq!(ids(&snap.lexical_search(&ns, "PARSEHTTPRESPONSE!", &q, 10).unwrap()), vec![parse]);
    assert!(snap.lexical_search(&ns, "nothing-here", &q, 10).unwrap().is_empty());
    // Filters: kinds and tags.
    let only_decisions = ListQuery::new().kinds([Kind::Decision]);
    assert_eq!(ids(&snap.lexical_search(&ns, "backoff", &only_decisions, 10).unwrap()), vec![decision]);
    let net = ListQuery::new().tag("net");
    assert_eq!(ids(&snap.lexical_search(&ns, "backoff queues", &net, 10).unwrap()).len(), 2);
    // Another namespace sees nothing.
    let other = Namespace::new("other").unwrap();
    assert!(snap.lexical_search(&other, "backoff", &q, 10).unwrap().is_empty());

    // Revising the text: the new words match now, the old ones only in the past.
    let before = clock.now();
    clock.advance(1_000_000);
    let mut r = Revise::new(ns.clone(), queue);
    r.body = Some(learning("Bounded channels prevent overload"));
    store.write(vec![WriteOp::Revise(r)]).unwrap();
    // A revision that only changes tags keeps the text (and its postings).
    let mut r = Revise::new(ns.clone(), retry);
    let mut env = store.snapshot().unwrap().latest(&ns, retry).unwrap().unwrap().envelope;
    env.tags.push("http".into());
    r.envelope = Some(env);
    store.write(vec![WriteOp::Revise(r)]).unwrap();
    clock.advance(1_000_000);
    let snap = store.snapshot().unwrap();
    assert!(snap.lexical_search(&ns, "queues", &q, 10).unwrap().is_empty());
    assert_eq!(ids(&snap.lexical_search(&ns, "channels", &q, 10).unwrap()), vec![queue]);
    let past = ListQuery::new().as_of(AsOf::valid_at(before).known_at(before));
    assert_eq!(ids(&snap.lexical_search(&ns, "queues", &past, 10).unwrap()), vec![queue]);
    assert!(snap.lexical_search(&ns, "channels", &past, 10).unwrap().is_empty());
    assert_eq!(ids(&snap.lexical_search(&ns, "exponential", &q, 10).unwrap()), vec![retry]);

    // Retired records are not found now; forgotten ones never.
    store.write(vec![WriteOp::Retire { namespace: ns.clone(), id: decision, at: None }]).unwrap();
    store.write(vec![WriteOp::Forget { namespace: ns.clone(), id: parse }]).unwrap();
    clock.advance(1_000_000);
    let snap = store.snapshot().unwrap();
    assert_eq!(ids(&snap.lexical_search(&ns, "backoff", &q, 10).unwrap()), vec![retry]);
    assert_eq!(ids(&snap.lexical_search(&ns, "backoff", &past, 10).unwrap()), vec![retry, decision]);
    assert!(snap.lexical_search(&ns, "response", &past, 10).unwrap().is_empty());
    assert!(snap.verify().unwrap().is_empty());
}
