//! `where`: the filter language over metadata and envelope, evaluated by the engine: a
//! filtered listing or search gives `limit` records when that many pass, at any time; a bad
//! filter is an error naming its part.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use mnemon::ops::{Batch, List, Recall, Session};
use mnemon::{Code, Db};
use serde_json::{Value, json};

fn setup() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let s = Session::new(Db::create(dir.path().join("m.redb")).unwrap(), "p").unwrap();
    // 500 notes; one in 50 belongs to user 42; scores and days vary.
    let writes: Vec<Value> = (0..500)
        .map(|i| {
            json!({"op": "add", "kind": "learning", "record": {
                "text": format!("a note about caching number {i}"),
                "importance": 1 + i % 5,
                "tags": if i % 7 == 0 { json!(["pii"]) } else { json!([]) },
                "valid_from": format!("2024-01-{:02}", 1 + i % 28),
                "metadata": {"user_id": if i % 50 == 0 { "42" } else { "7" }, "score": f64::from(i) / 500.0,
                             "labels": ["x", if i % 2 == 0 { "even" } else { "odd" }], "seen": format!("2024-02-{:02}", 1 + i % 28)}
            }})
        })
        .collect();
    s.call(serde_json::from_value::<Batch>(json!({"writes": writes})).unwrap()).unwrap();
    (dir, s)
}

fn list(s: &Session, w: Value, limit: usize) -> Vec<Value> {
    let l: List = serde_json::from_value(json!({"where": w, "limit": limit})).unwrap();
    let out = serde_json::to_value(s.call(l).unwrap()).unwrap();
    out["records"].as_array().unwrap().clone()
}

fn count_all(s: &Session, w: Value) -> usize {
    let mut n = 0;
    let mut cursor: Option<String> = None;
    loop {
        let l: List = serde_json::from_value(json!({"where": w, "limit": 7, "cursor": cursor})).unwrap();
        let out = s.call(l).unwrap();
        n += out.records.len();
        match out.next_cursor {
            Some(c) => cursor = Some(c),
            None => return n,
        }
    }
}

#[test]
fn a_filtered_listing_is_full_and_pages_through_every_match() {
    let (_d, s) = setup();
    assert_eq!(list(&s, json!({"user_id": "42"}), 5).len(), 5);
    assert_eq!(count_all(&s, json!({"user_id": "42"})), 10);
    assert_eq!(count_all(&s, json!({"metadata.user_id": {"$in": ["42", "nobody"]}})), 10);
    assert_eq!(count_all(&s, json!({"user_id": {"$ne": "42"}})), 490);
    assert_eq!(count_all(&s, json!({"importance": {"$gte": 4}, "tags": "pii"})), 28);
    assert_eq!(count_all(&s, json!({"$or": [{"user_id": "42"}, {"tags": "pii"}]})), 10 + 72 - 2);
    assert_eq!(count_all(&s, json!({"$not": {"user_id": "7"}})), 10);
    assert_eq!(count_all(&s, json!({"score": {"$gt": 0.5, "$lte": 0.6}})), 50);
    assert_eq!(count_all(&s, json!({"labels": "even"})), 250);
    assert_eq!(count_all(&s, json!({"labels": {"$nin": ["odd"]}})), 250);
    assert_eq!(count_all(&s, json!({"seen": {"$lt": "2024-02-02"}})), 18);
    assert_eq!(count_all(&s, json!({"valid_from": {"$gte": "2024-01-28"}})), 17);
    assert_eq!(count_all(&s, json!({"kind": "learning", "missing": {"$exists": false}})), 500);
    assert_eq!(
        count_all(&s, json!({"score": {"$exists": true}, "$and": [{"user_id": "42"}, {"importance": 1}]})),
        10
    );
    // As of a time before any note was valid: nothing.
    let l: List = serde_json::from_value(json!({"where": {"user_id": "42"}, "as_of": "2023-12-01"})).unwrap();
    assert!(s.call(l).unwrap().records.is_empty());
}

#[test]
fn a_filtered_search_returns_limit_hits_when_that_many_pass() {
    let (_d, s) = setup();
    let r: Recall =
        serde_json::from_value(json!({"query": "caching note", "limit": 10, "where": {"user_id": "42"}}))
            .unwrap();
    let hits = s.call(r).unwrap().hits;
    assert_eq!(hits.len(), 10);
    let r: Recall =
        serde_json::from_value(json!({"query": "caching note", "limit": 20, "where": {"user_id": "42"}}))
            .unwrap();
    assert_eq!(s.call(r).unwrap().hits.len(), 10);
    let r: Recall = serde_json::from_value(
        json!({"query": "a note about caching number", "mode": "vector", "limit": 3, "where": {"score": {"$gte": 0.99}}}),
    )
    .unwrap();
    assert_eq!(s.call(r).unwrap().hits.len(), 3);
}

#[test]
fn bad_filters_name_their_part() {
    let (_d, s) = setup();
    for (w, part) in [
        (json!(5), "`where` must be an object"),
        (json!({"$and": {}}), "`where.$and` must be a non-empty list"),
        (json!({"$or": [{"a": 1}, 3]}), "`where.$or[1]` must be an object"),
        (json!({"importance": {"$gt": "high"}}), "`where.importance.$gt` compares with a number or a time"),
        (json!({"user_id": {"$in": "42"}}), "`where.user_id.$in` takes a list"),
        (json!({"user_id": {"$regex": "4."}}), "`where.user_id.$regex`: unknown operator"),
        (json!({"$xor": []}), "`where.$xor`: unknown operator"),
        (json!({"metadata": 1}), "name a metadata field"),
        (json!({"a..b": 1}), "an empty part"),
        (json!({"x": {"$exists": "yes"}}), "`where.x.$exists` takes true or false"),
    ] {
        let l: List = serde_json::from_value(json!({"where": w})).unwrap();
        let e = s.call(l).unwrap_err();
        assert_eq!(e.code(), Code::InvalidInput);
        assert!(e.to_string().contains(part), "{e} / {part}");
    }
}
