//! The change feed over HTTP: Server-Sent Events resumed with `Last-Event-ID`, filters, the
//! token's reach, and the `changes` operation's long poll.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use common::{Server, answer, client, problem};
use mnemon::body::Learning;
use mnemon_server::tokens::Scope;
use serde_json::{Value, json};

/// An open event stream, read event by event.
struct Events {
    lines: BufReader<reqwest::blocking::Response>,
}

impl Events {
    fn open(s: &Server, token: &str, path: &str, last: Option<&str>) -> Events {
        let c = reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
        let mut req = c.get(s.url(path)).bearer_auth(token);
        if let Some(l) = last {
            req = req.header("Last-Event-ID", l);
        }
        let r = req.send().unwrap();
        assert_eq!(r.status().as_u16(), 200);
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        Events { lines: BufReader::new(r) }
    }

    /// The next event: `(name, id, data)` (comments, the keep-alives, skipped).
    fn next(&mut self) -> (String, String, Value) {
        let (mut name, mut id, mut data) = (String::new(), String::new(), String::new());
        loop {
            let mut line = String::new();
            assert!(self.lines.read_line(&mut line).unwrap() > 0, "the stream ended");
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !data.is_empty() {
                    return (name, id, serde_json::from_str(&data).unwrap());
                }
                continue;
            }
            if let Some(v) = line.strip_prefix("event:") {
                name = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
    }
}

fn add(s: &Server, ns: &str, text: &str, tag: Option<&str>) -> String {
    let ns = s.db.ns(ns).unwrap();
    let mut r = ns.record(Learning { text: text.into(), ..Default::default() });
    if let Some(t) = tag {
        r = r.tag(t);
    }
    r.insert().unwrap().to_string()
}

#[test]
fn a_stream_delivers_each_change_once_and_resumes_after_the_last_event() {
    let s = Server::start(|_| {});
    let t = s.token(&["project:a"], Scope::Read);
    let mut ev = Events::open(&s, &t, "/v1/ns/project:a/events", None);
    let first: Vec<String> = (0..3).map(|i| add(&s, "project:a", &format!("a {i}"), None)).collect();
    add(&s, "project:b", "not this namespace", None);
    let mut last = String::new();
    for id in &first {
        let (name, event_id, change) = ev.next();
        assert_eq!(name, "change");
        assert_eq!(change["id"], id.as_str(), "{change}");
        assert_eq!(
            (change["namespace"].as_str(), change["op"].as_str()),
            (Some("project:a"), Some("insert"))
        );
        assert_eq!(change["kind"], "learning");
        assert_eq!(change["cursor"], event_id.as_str());
        last = event_id;
    }
    drop(ev);
    // While disconnected, more changes; a reconnection with the last id gets exactly those.
    let more: Vec<String> = (0..2).map(|i| add(&s, "project:a", &format!("more {i}"), None)).collect();
    let mut ev = Events::open(&s, &t, "/v1/ns/project:a/events", Some(&last));
    for id in &more {
        assert_eq!(ev.next().2["id"], id.as_str());
    }
    let after = add(&s, "project:a", "live again", None);
    assert_eq!(ev.next().2["id"], after.as_str(), "nothing twice: the next event is the new one");
    // From a time in the past: everything, in order.
    let mut ev = Events::open(&s, &t, "/v1/ns/project:a/events?since=2000-01-01", None);
    for id in first.iter().chain(&more) {
        assert_eq!(ev.next().2["id"], id.as_str());
    }
}

#[test]
fn filters_and_the_tokens_reach_apply() {
    let s = Server::start(|_| {});
    let t = s.token(&["project:a"], Scope::Read);
    let c = client();
    // Another namespace: refused before any stream opens.
    let (st, body) = answer(c.get(s.url("/v1/ns/project:b/events")).bearer_auth(&t).send().unwrap());
    assert_eq!(problem(&body, 403), "forbidden");
    let (st2, _) = answer(c.get(s.url("/v1/ns/project:a/events")).send().unwrap());
    assert_eq!((st, st2), (403, 401));
    let (st, body) =
        answer(c.get(s.url("/v1/ns/project:a/events?since=yesterday")).bearer_auth(&t).send().unwrap());
    assert_eq!((st, problem(&body, 400)), (400, "invalid_input".to_string()));

    let mut ev = Events::open(&s, &t, "/v1/ns/project:a/events?tag=infra,ops&kind=learning", None);
    add(&s, "project:a", "untagged", None);
    let tagged = add(&s, "project:a", "tagged", Some("ops"));
    s.db.ns("project:a")
        .unwrap()
        .record(mnemon::body::Decision { title: "a decision".into(), ..Default::default() })
        .tag("ops")
        .insert()
        .unwrap();
    let again = add(&s, "project:a", "tagged again", Some("infra"));
    assert_eq!(ev.next().2["id"], tagged.as_str());
    assert_eq!(ev.next().2["id"], again.as_str());
}

#[test]
fn the_changes_operation_waits_for_a_first_change() {
    let s = Server::start(|_| {});
    let t = s.token(&["project:a"], Scope::Read);
    let c = client();
    let call = |body: Value| {
        answer(c.post(s.url("/v1/ns/project:a/ops/changes")).bearer_auth(&t).json(&body).send().unwrap())
    };
    let (st, now) = call(json!({}));
    assert_eq!((st, now["changes"].as_array().map(Vec::len)), (200, Some(0)), "{now}");
    let since = now["next"].as_str().unwrap().to_string();
    let db = s.db.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        db.ns("project:a").unwrap().add(Learning { text: "late".into(), ..Default::default() }).unwrap()
    });
    let started = Instant::now();
    let (st, page) = call(json!({"since": since, "wait_ms": 10_000}));
    let id = writer.join().unwrap();
    assert_eq!(st, 200, "{page}");
    assert!(started.elapsed() < Duration::from_secs(8), "woken by the commit, not the timeout");
    assert_eq!(page["changes"][0]["id"], id.to_string());
    let (_, rest) = call(json!({"since": page["next"], "wait_ms": 50}));
    assert_eq!(rest["changes"].as_array().map(Vec::len), Some(0), "{rest}");
    // Out of reach: refused.
    let (st, body) = call(json!({"namespaces": ["project:*"]}));
    assert_eq!((st, problem(&body, 403)), (403, "forbidden".to_string()));
}
