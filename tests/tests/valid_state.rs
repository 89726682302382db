//! A record's state as of a valid time is its state then: a decision superseded on 1 March
//! was still accepted on 1 February, whatever is known now.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use mnemon::Db;
use mnemon::ops::{Get, List, Session, Supersede};
use serde_json::{Value, json};

#[test]
fn a_decision_superseded_later_shows_its_earlier_status_before_the_supersession() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let s = Session::new(db, "p").unwrap();
    let add = json!({"kind": "decision", "record": {"title": "Use SQLite", "status": "accepted", "valid_from": "2024-01-10"}});
    let added = s.call(serde_json::from_value::<mnemon::ops::Add>(add).unwrap()).unwrap();
    let old = added.id.to_string();
    let data = json!({"title": "Use redb"}).as_object().unwrap().clone();
    s.call(Supersede {
        id: old.clone(),
        data: Some(data),
        at: Some("2024-03-01".into()),
        ..Default::default()
    })
    .unwrap();
    let status_in = |list: Value| -> Vec<(String, String, String)> {
        list["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["body"]["title"].as_str().unwrap().to_string(),
                    r["body"]["status"].as_str().unwrap().to_string(),
                    r["status"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let feb = s.call(List { as_of: Some("2024-02-01".into()), ..Default::default() }).unwrap();
    assert_eq!(
        status_in(serde_json::to_value(&feb).unwrap()),
        [("Use SQLite".to_string(), "accepted".to_string(), "active".to_string())]
    );
    let got = s
        .call(Get { id: old.clone(), as_of: Some("2024-02-01".into()), known_at: None, namespace: None })
        .unwrap();
    let got = serde_json::to_value(&got).unwrap();
    assert_eq!(got["record"]["body"]["status"], "accepted", "{got}");
    // From 1 March on, the successor; the old one's last revision says superseded.
    let march = s.call(List { as_of: Some("2024-03-02".into()), ..Default::default() }).unwrap();
    let march = status_in(serde_json::to_value(&march).unwrap());
    assert_eq!(march.len(), 1);
    assert_eq!(march[0].0, "Use redb");
    let history = s.call(mnemon::ops::History { id: old, namespace: None }).unwrap();
    let last = serde_json::to_value(history.revisions.last().unwrap()).unwrap();
    assert_eq!(last["body"]["status"], "superseded");
}
