//! `mnemon-client` against a real server: operations answer the same typed values as a local
//! session (records keep their status at the asked time), errors keep their codes, exports
//! and imports go through, and a token is never shown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::Server;
use mnemon::Code;
use mnemon::ops::{Batch, BatchWrite, Get, History, List, Recall, Remember, Retire, Session, Supersede};
use mnemon_client::Client;
use mnemon_server::tokens::Scope;
use serde::Serialize;

/// The JSON of `value`.
fn json(value: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(value).unwrap()
}

#[test]
fn answers_read_back_as_the_types_a_local_session_gives() {
    let s = Server::start(|_| {});
    let token = s.token(&["project:*"], Scope::Write);
    let client = Client::new(&s.url(""), Some(token)).unwrap();
    let remote = client.session("project:a");
    let local = Session::new(s.db.clone(), "project:a").unwrap();

    let made = remote
        .call(Remember { kind: "decision".into(), text: Some("Use redb".into()), ..Default::default() })
        .unwrap();
    let id = made.id.to_string();
    let pending = remote
        .call(Remember {
            kind: "learning".into(),
            text: Some("later".into()),
            valid_from: Some("2999-01-01".into()),
            ..Default::default()
        })
        .unwrap();
    let superseded = remote
        .call(Supersede { id: id.clone(), text: Some("Use redb 4".into()), ..Default::default() })
        .unwrap();
    remote.call(Retire { id: superseded.new.to_string(), ..Default::default() }).unwrap();

    // Every answer, read back and written again, is the JSON the server's session gives:
    // records keep their status at the asked time (superseded, retired, not yet valid).
    let get = |id: &str, as_of: &str| Get { id: id.into(), as_of: Some(as_of.into()), ..Default::default() };
    let (later, then) = (pending.id.to_string(), "2999-06-01");
    let there = remote.call(get(&later, then)).unwrap();
    assert_eq!(json(&there), json(&local.call(get(&later, then)).unwrap()));
    assert_eq!(there.record.record.status_at(there.record.at), mnemon::Status::Active);
    for id in [&id, &superseded.new.to_string()] {
        let revisions = remote.call(History { id: id.clone(), namespace: None }).unwrap().revisions;
        let last = revisions.last().unwrap();
        assert_ne!(last.record.status_at(last.at), mnemon::Status::Active, "{}", json(last));
    }
    let history = remote.call(History { id: id.clone(), namespace: None }).unwrap();
    assert_eq!(json(&history), json(&local.call(History { id: id.clone(), namespace: None }).unwrap()));
    let list = List { as_of: Some("2999-06-01".into()), ..Default::default() };
    let listed = remote.call(List { ..list.clone() }).unwrap();
    assert_eq!(json(&listed), json(&local.call(list).unwrap()));
    let found = remote.call(Recall { query: "redb".into(), ..Default::default() }).unwrap();
    assert_eq!(
        json(&found),
        json(&local.call(Recall { query: "redb".into(), ..Default::default() }).unwrap())
    );

    // A batch: all or nothing, through the client too.
    let batch = Batch {
        writes: vec![
            BatchWrite::Remember(Remember {
                kind: "gotcha".into(),
                text: Some("one".into()),
                ..Default::default()
            }),
            BatchWrite::Retire(Retire { id: "0123456789ab".into(), ..Default::default() }),
        ],
    };
    assert_eq!(remote.call(batch).unwrap_err().code(), Code::NotFound);
    assert!(local.call(Recall { query: "one".into(), ..Default::default() }).unwrap().hits.is_empty());

    // Export and import: the same lines.
    let mut lines = Vec::new();
    client.export(Some("project:a"), &mut lines).unwrap();
    let mut direct = Vec::new();
    local.export(Some("project:a"), &mut direct).unwrap();
    assert_eq!(String::from_utf8(lines.clone()).unwrap(), String::from_utf8(direct).unwrap());
    // The same through a `Conn` either way: the same lines, counted as records.
    let (on_file, on_server) =
        (mnemon_client::Conn::Local(local.clone()), mnemon_client::Conn::Remote(remote.clone()));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let counted = (
        on_file.export(Some("project:a"), &mut a).unwrap(),
        on_server.export(Some("project:a"), &mut b).unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!(counted, (a.iter().filter(|&&c| c == b'\n').count() as u64, counted.0));
    assert!(counted.0 > 0 && on_file.db().is_some() && on_server.db().is_none());
    let again = client.import("project:a", lines, false).unwrap();
    assert_eq!((again.created, again.restored, again.failed.len()), (0, 0, 0));
    assert!(again.unchanged > 0);
    let partial =
        client.import("project:a", b"{\"kind\":\"gotcha\",\"text\":\"ok\"}\nnot json\n".to_vec(), true);
    let partial = partial.unwrap();
    assert_eq!((partial.created, partial.failed.len()), (1, 1));
    assert_eq!(partial.failed[0].line, 2, "{:?}", partial.failed);
}

#[test]
fn errors_keep_their_codes_and_never_show_the_token() {
    let s = Server::start(|_| {});
    let secret = s.token(&["project:a"], Scope::Read);
    let client = Client::new(&s.url(""), Some(secret.clone())).unwrap();
    let a = client.session("project:a");
    let missing = a.call(Get { id: "0123456789ab".into(), ..Default::default() }).unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
    let write = a.call(Remember { kind: "gotcha".into(), text: Some("x".into()), ..Default::default() });
    let write = write.unwrap_err();
    assert_eq!(write.code(), Code::Forbidden);
    assert!(write.to_string().contains("needs write"), "{write}");
    let elsewhere = client.session("project:b").call(List::default()).unwrap_err();
    assert_eq!(elsewhere.code(), Code::Forbidden);
    // Every namespace's export needs a token for every namespace.
    assert_eq!(client.export(None, &mut Vec::new()).unwrap_err().code(), Code::Forbidden);
    let bad = Client::new(&s.url(""), Some(format!("{secret}x"))).unwrap();
    let refused = bad.session("project:a").call(List::default()).unwrap_err();
    assert_eq!(refused.code(), Code::Forbidden);
    for e in [&missing, &write, &elsewhere, &refused] {
        assert!(!e.to_string().contains(&secret[8..]), "{e}");
    }
    assert!(!format!("{client:?}").contains(&secret[8..]));
    // An admin token for every namespace exports them all.
    let all = Client::new(&s.url(""), Some(s.token(&["*"], Scope::Admin))).unwrap();
    all.session("project:z")
        .call(Remember { kind: "gotcha".into(), text: Some("z".into()), ..Default::default() })
        .unwrap();
    let mut lines = Vec::new();
    all.export(None, &mut lines).unwrap();
    assert!(String::from_utf8(lines).unwrap().contains("project:z"));
}
