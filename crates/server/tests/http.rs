//! The REST API through a real server on a loopback port: every route, the token matrix, the
//! web-facing checks, limits, backpressure and a graceful shutdown that keeps every
//! acknowledged write.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{Server, answer, client, problem};
use mnemon_server::tokens::{self, NewToken, Scope};
use serde_json::{Value, json};

#[test]
fn every_resource_route_runs_its_operation() {
    let s = Server::start(|_| {});
    let t = s.token(&["project:*"], Scope::Write);
    let c = client();
    let ns = "/v1/ns/project:demo";
    let post =
        |path: &str, body: Value| answer(c.post(s.url(path)).bearer_auth(&t).json(&body).send().unwrap());
    let get = |path: &str| answer(c.get(s.url(path)).bearer_auth(&t).send().unwrap());

    // Add a record (whole fields) and remember a memory (kind and text).
    let (st, added) = post(
        &format!("{ns}/records"),
        json!({"kind": "decision", "record": {"title": "Use redb", "rationale": "embedded"}}),
    );
    assert_eq!(st, 200, "{added}");
    let id = added["id"].as_str().unwrap().to_string();
    let (st, remembered) =
        post(&format!("{ns}/memories"), json!({"kind": "learning", "text": "redb wants its file to itself"}));
    assert_eq!(st, 200, "{remembered}");
    let learning = remembered["id"].as_str().unwrap().to_string();

    // Get, list (typed query parameters), history.
    let (st, got) = get(&format!("{ns}/records/{id}"));
    assert_eq!((st, got["record"]["body"]["title"].as_str()), (200, Some("Use redb")), "{got}");
    let (st, listed) = get(&format!("{ns}/records?kinds=decision&kinds=learning&limit=1"));
    assert_eq!(st, 200, "{listed}");
    assert_eq!(listed["records"].as_array().unwrap().len(), 1);
    let cursor = listed["next_cursor"].as_str().unwrap();
    let (_, rest) = get(&format!("{ns}/records?kinds=decision&kinds=learning&limit=5&cursor={cursor}"));
    assert_eq!(rest["records"].as_array().unwrap().len(), 1, "{rest}");

    // Revise (PATCH), then the history holds both revisions.
    let r = c
        .patch(s.url(&format!("{ns}/records/{id}")))
        .bearer_auth(&t)
        .json(&json!({"patch": {"rationale": "embedded, one file"}}))
        .send()
        .unwrap();
    let (st, revised) = answer(r);
    assert_eq!((st, revised["rev"].as_u64()), (200, Some(1)), "{revised}");
    let (_, history) = get(&format!("{ns}/records/{id}/history"));
    assert_eq!(history["revisions"].as_array().unwrap().len(), 2, "{history}");

    // As of a time before the record: not visible then.
    let (st, before) = get(&format!("{ns}/records/{id}?as_of=2001-01-01"));
    assert_eq!(problem(&before, 404), "not_found");
    assert_eq!(st, 404);

    // Supersede, then the chain runs through both.
    let (st, sup) = post(&format!("{ns}/records/{id}/supersede"), json!({"text": "Use redb 4"}));
    assert_eq!(st, 200, "{sup}");
    let (_, chain) = get(&format!("{ns}/records/{id}/chain"));
    assert_eq!(chain["chain"].as_array().unwrap().len(), 2, "{chain}");

    // Search by GET and POST, context, stats.
    let (st, hits) = get(&format!("{ns}/search?query=redb+file&limit=3&mode=lexical"));
    assert_eq!(st, 200, "{hits}");
    assert_eq!(hits["hits"][0]["id"].as_str(), Some(learning.as_str()), "{hits}");
    let (st, hits2) =
        post(&format!("{ns}/search"), json!({"query": "redb file", "limit": 3, "mode": "lexical"}));
    assert_eq!((st, &hits2["hits"][0]["id"]), (200, &hits["hits"][0]["id"]));
    let (st, ctx) = get(&format!("{ns}/context?query=redb"));
    assert_eq!(st, 200, "{ctx}");
    let (st, stats) = get(&format!("{ns}/stats"));
    assert_eq!(st, 200, "{stats}");

    // Retire, then forget (erasing).
    let (st, retired) = post(&format!("{ns}/records/{learning}/retire"), json!({}));
    assert_eq!(st, 200, "{retired}");
    let (st, forgotten) = answer(
        c.delete(s.url(&format!("{ns}/records/{learning}?erase=true"))).bearer_auth(&t).send().unwrap(),
    );
    assert_eq!(st, 200, "{forgotten}");
    let (st, gone) = get(&format!("{ns}/records/{learning}"));
    assert_eq!((st, problem(&gone, 404)), (404, "not_found".to_string()));

    // Any operation by name, in the path's namespace or the header's.
    let (st, tasks) = post(&format!("{ns}/ops/task_list"), json!({}));
    assert_eq!(st, 200, "{tasks}");
    let r = c
        .post(s.url("/v1/ops/stats"))
        .bearer_auth(&t)
        .header("Mnemon-Namespace", "project:demo")
        .send()
        .unwrap();
    assert_eq!(answer(r).0, 200);
    let r = c.post(s.url("/v1/ops/stats?ns=project:demo")).bearer_auth(&t).send().unwrap();
    assert_eq!(answer(r).0, 200);
    let (st, unknown) = post(&format!("{ns}/ops/no_such_op"), json!({}));
    assert_eq!((st, problem(&unknown, 404)), (404, "no_route".to_string()));
    // The list of operations, with the scope each needs.
    let (st, ops) = answer(c.get(s.url("/v1/operations")).send().unwrap());
    assert_eq!(st, 200);
    let reindex =
        ops["operations"].as_array().unwrap().iter().find(|o| o["name"] == "reindex").unwrap().clone();
    assert_eq!(reindex["scope"], "admin");
    // Prometheus metrics: requests by route template (no namespace or id), the queue.
    let text = c.get(s.url("/metrics")).send().unwrap().text().unwrap();
    assert!(
        text.contains(
            "mnemon_http_requests_total{method=\"GET\",route=\"/v1/ns/{ns}/records/{id}\",status=\"200\"}"
        ),
        "{text}"
    );
    assert!(text.contains("route=\"/v1/ns/{ns}/records/{id}\",status=\"404\"} 2"), "{text}");
    assert!(text.contains("mnemon_http_request_seconds_count{route=\"/v1/ns/{ns}/memories\"} 1"), "{text}");
    assert!(!text.contains("project:demo") && text.contains("mnemon_operations_capacity 256"), "{text}");
    // The OpenAPI document, without a token.
    let (st, doc) = answer(c.get(s.url("/openapi.json")).send().unwrap());
    assert_eq!((st, doc["openapi"].as_str()), (200, Some("3.1.0")));
    assert!(doc["paths"]["/v1/ns/{ns}/records/{id}"]["get"].is_object());
}

#[test]
fn a_batch_commits_many_writes_in_one_durable_transaction() {
    let s = Server::start(|_| {});
    let t = s.token(&["p"], Scope::Write);
    let c = client();
    let writes: Vec<Value> = (0..50)
        .map(|i| json!({"op": "remember", "kind": "learning", "text": format!("batched {i}")}))
        .collect();
    let (st, done) = answer(
        c.post(s.url("/v1/ns/p/batch")).bearer_auth(&t).json(&json!({"writes": writes})).send().unwrap(),
    );
    assert_eq!(st, 200, "{done}");
    assert_eq!(done["results"].as_array().unwrap().len(), 50);
    let (_, listed) = answer(c.get(s.url("/v1/ns/p/records?limit=100")).bearer_auth(&t).send().unwrap());
    assert_eq!(listed["records"].as_array().unwrap().len(), 50);
    let times: std::collections::HashSet<&str> =
        listed["records"].as_array().unwrap().iter().map(|r| r["recorded_at"].as_str().unwrap()).collect();
    assert_eq!(times.len(), 1, "one transaction time");
    // One bad write: 4xx, nothing written.
    let bad = json!({"writes": [{"op": "remember", "kind": "learning", "text": "x"}, {"op": "remember", "kind": "nope"}]});
    let (st, body) = answer(c.post(s.url("/v1/ns/p/batch")).bearer_auth(&t).json(&bad).send().unwrap());
    assert_eq!((st, problem(&body, 400)), (400, "invalid_input".to_string()));
    let (_, listed) = answer(c.get(s.url("/v1/ns/p/records?limit=100")).bearer_auth(&t).send().unwrap());
    assert_eq!(listed["records"].as_array().unwrap().len(), 50);
    // A read token may not batch.
    let read = s.token(&["p"], Scope::Read);
    let (st, _) = answer(
        c.post(s.url("/v1/ns/p/batch")).bearer_auth(&read).json(&json!({"writes": []})).send().unwrap(),
    );
    assert_eq!(st, 403);
}

#[test]
fn export_streams_and_import_restores() {
    let s = Server::start(|_| {});
    let t = s.token(&["a", "b"], Scope::Write);
    let c = client();
    for i in 0..300 {
        let body = json!({"kind": "learning", "text": format!("learning number {i} {}", "x".repeat(200))});
        assert_eq!(
            answer(c.post(s.url("/v1/ns/a/memories")).bearer_auth(&t).json(&body).send().unwrap()).0,
            200
        );
    }
    let r = c.get(s.url("/v1/ns/a/export")).bearer_auth(&t).send().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "application/jsonl");
    let lines = r.text().unwrap();
    assert_eq!(lines.lines().count(), 300);
    // Into namespace b: the lines name a, which the import takes to the path's namespace
    // only if they name none; rewrite them as loose lines.
    let loose: String = lines
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            format!("{}\n", json!({"kind": v["kind"], "text": v["body"]["text"]}))
        })
        .collect();
    let (st, report) = answer(c.post(s.url("/v1/ns/b/import")).bearer_auth(&t).body(loose).send().unwrap());
    assert_eq!((st, report["created"].as_u64()), (200, Some(300)), "{report}");
    let (_, listed) = answer(c.get(s.url("/v1/ns/b/records?limit=1000")).bearer_auth(&t).send().unwrap());
    assert_eq!(listed["records"].as_array().unwrap().len(), 300);
    // A bad line: nothing imported, one error naming it.
    let (st, bad) = answer(
        c.post(s.url("/v1/ns/b/import")).bearer_auth(&t).body("{\"kind\": \"nope\"}\n").send().unwrap(),
    );
    assert_eq!((st, problem(&bad, 400)), (400, "invalid_input".to_string()));
}

#[test]
fn tokens_are_checked_for_validity_namespace_and_scope() {
    let s = Server::start(|_| {});
    let c = client();
    let read = s.token(&["project:*"], Scope::Read);
    let write = s.token(&["project:*", "agent:dev-1", "odd name/with slash"], Scope::Write);
    let admin = s.token(&["*"], Scope::Admin);
    let status = |token: Option<&str>, method: &str, path: &str| -> (u16, Value) {
        let mut r = match method {
            "GET" => c.get(s.url(path)),
            _ if path.ends_with("/reindex") => c.post(s.url(path)).json(&json!({})),
            _ => c.post(s.url(path)).json(&json!({"kind": "learning", "text": "t"})),
        };
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        answer(r.send().unwrap())
    };
    let code = |(st, body): (u16, Value)| -> (u16, String) {
        let c = if st >= 400 { problem(&body, st) } else { String::new() };
        (st, c)
    };
    let unauthorized = (401, "unauthorized".to_string());
    let forbidden = (403, "forbidden".to_string());
    let ok = (200, String::new());
    // No token, a malformed one, a wrong secret, an unknown id.
    assert_eq!(code(status(None, "GET", "/v1/ns/project:a/records")), unauthorized);
    assert_eq!(code(status(Some("nonsense"), "GET", "/v1/ns/project:a/records")), unauthorized);
    let mut wrong = read.clone();
    let last = if wrong.ends_with('a') { 'b' } else { 'a' };
    wrong.pop();
    wrong.push(last);
    assert_eq!(code(status(Some(&wrong), "GET", "/v1/ns/project:a/records")), unauthorized);
    let r = c
        .get(s.url("/v1/ns/project:a/records"))
        .header("Authorization", format!("Basic {read}"))
        .send()
        .unwrap();
    assert_eq!(answer(r).0, 401);
    // Scope: read reads, cannot write; write writes, cannot administer; admin does all.
    assert_eq!(code(status(Some(&read), "GET", "/v1/ns/project:a/records")), ok);
    assert_eq!(code(status(Some(&read), "POST", "/v1/ns/project:a/memories")), forbidden);
    assert_eq!(code(status(Some(&write), "POST", "/v1/ns/project:a/memories")), ok);
    assert_eq!(code(status(Some(&write), "POST", "/v1/ns/project:a/ops/reindex")), forbidden);
    assert_eq!(code(status(Some(&admin), "POST", "/v1/ns/project:a/ops/reindex")), ok);
    // Namespaces: patterns and exact names, tricky ones included.
    assert_eq!(code(status(Some(&write), "POST", "/v1/ns/agent:dev-1/memories")), ok);
    assert_eq!(code(status(Some(&write), "POST", "/v1/ns/agent:dev-10/memories")), forbidden);
    assert_eq!(code(status(Some(&write), "POST", "/v1/ns/projectx:a/memories")), forbidden);
    let odd = status(Some(&write), "POST", "/v1/ns/odd%20name%2Fwith%20slash/memories");
    assert_eq!(odd.0, 200, "{}", odd.1);
    assert_eq!(code(status(Some(&write), "POST", "/v1/ns/odd%20name/memories")), forbidden);
    // A request naming another namespace in its body is held to the token too.
    let r = c
        .post(s.url("/v1/ns/project:a/memories"))
        .bearer_auth(&write)
        .json(&json!({"kind": "learning", "text": "t", "namespace": "agent:x"}))
        .send()
        .unwrap();
    assert_eq!(code(answer(r)), forbidden);
    // A token naming one namespace needs no other; one naming patterns must be told.
    let one = s.token(&["agent:solo"], Scope::Write);
    let r = c
        .post(s.url("/v1/ops/remember"))
        .bearer_auth(&one)
        .json(&json!({"kind": "learning", "text": "t"}))
        .send()
        .unwrap();
    assert_eq!(answer(r).0, 200);
    let r = c
        .post(s.url("/v1/ops/remember"))
        .bearer_auth(&write)
        .json(&json!({"kind": "learning", "text": "t"}))
        .send()
        .unwrap();
    assert_eq!(code(answer(r)), (400, "invalid_input".to_string()));
    // Revoked and expired tokens stop working at once.
    tokens::revoke(&s.db, "t0", s.db.now()).unwrap();
    assert_eq!(code(status(Some(&read), "GET", "/v1/ns/project:a/records")), unauthorized);
    let expired = NewToken {
        name: "old".into(),
        namespaces: vec!["*".into()],
        scope: Scope::Admin,
        expires: Some(mnemon::Timestamp::parse("2020-01-01").unwrap()),
    };
    let (expired, _) = tokens::create(&s.db, expired).unwrap();
    assert_eq!(code(status(Some(&expired), "GET", "/v1/ns/project:a/records")), unauthorized);
}

#[test]
fn web_facing_checks_refuse_foreign_hosts_origins_and_oversized_or_slow_bodies() {
    let s = Server::start(|o| {
        o.config.body_limit = 4096;
        o.config.body_timeout = Duration::from_millis(500);
    });
    let t = s.token(&["*"], Scope::Write);
    let c = client();
    // DNS rebinding: a Host this server does not answer for.
    let r =
        c.get(s.url("/v1/ns/a/records")).bearer_auth(&t).header("Host", "evil.example:80").send().unwrap();
    let (st, body) = answer(r);
    assert_eq!((st, problem(&body, 403)), (403, "host_not_allowed".to_string()));
    // localhost by name is fine.
    let r = c.get(format!("http://localhost:{}/healthz", s.addr.port())).send().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // A page of a foreign origin.
    let r = c
        .get(s.url("/v1/ns/a/records"))
        .bearer_auth(&t)
        .header("Origin", "https://evil.example")
        .send()
        .unwrap();
    let (st, body) = answer(r);
    assert_eq!((st, problem(&body, 403)), (403, "origin_not_allowed".to_string()));
    // No CORS headers are given.
    let r = c.get(s.url("/v1/ns/a/records")).bearer_auth(&t).send().unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    // A body over the limit.
    let big = json!({"kind": "learning", "text": "x".repeat(10_000)});
    let (st, body) = answer(c.post(s.url("/v1/ns/a/memories")).bearer_auth(&t).json(&big).send().unwrap());
    assert_eq!((st, problem(&body, 413)), (413, "too_large".to_string()));
    // A body that never finishes arriving: 408 after the timeout, and the server serves on.
    let mut slow = std::net::TcpStream::connect(s.addr).unwrap();
    write!(
        slow,
        "POST /v1/ns/a/memories HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {t}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"kind\"",
        s.addr
    )
    .unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = [0u8; 64];
    let n = slow.read(&mut head).unwrap();
    assert!(
        String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 408"),
        "{}",
        String::from_utf8_lossy(&head[..n])
    );
    // Headers that never finish: the connection is closed after the header deadline.
    let s2 = Server::start(|o| o.header_timeout = Duration::from_millis(300));
    let mut idle = std::net::TcpStream::connect(s2.addr).unwrap();
    write!(idle, "GET /healthz HTTP/1.1\r\nHost: {}\r\n", s2.addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut rest = Vec::new();
    let _ = idle.read_to_end(&mut rest); // ends (closed) rather than timing out
    assert!(!String::from_utf8_lossy(&rest).contains("200 OK"));
    // Unknown routes and methods are problem documents too.
    let (st, body) = answer(c.get(s.url("/v2/nothing")).send().unwrap());
    assert_eq!((st, problem(&body, 404)), (404, "no_route".to_string()));
    let (st, body) = answer(c.put(s.url("/v1/ns/a/records")).bearer_auth(&t).send().unwrap());
    assert_eq!((st, problem(&body, 405)), (405, "method_not_allowed".to_string()));
}

#[test]
fn a_full_queue_answers_503_with_retry_after_and_no_acknowledged_write_is_lost() {
    let s = Server::start(|o| o.config.queue = 1);
    let t = s.token(&["*"], Scope::Write);
    let url = s.url("/v1/ns/q/memories");
    let outcomes: Vec<(u16, Option<String>, Option<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|w| {
                let (url, t) = (url.clone(), t.clone());
                scope.spawn(move || {
                    let c = client();
                    (0..15)
                        .map(|i| {
                            let body = json!({"kind": "learning", "text": format!("writer {w} write {i}")});
                            let r = c.post(&url).bearer_auth(&t).json(&body).send().unwrap();
                            let retry =
                                r.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
                            let (st, body) = answer(r);
                            (st, retry, body["id"].as_str().map(str::to_string))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let busy = outcomes.iter().filter(|o| o.0 == 503).count();
    assert!(busy > 0, "16 writers on a queue of 1 were never turned away");
    assert!(
        outcomes.iter().all(|o| o.0 == 200 || (o.0 == 503 && o.1.as_deref() == Some("1"))),
        "{outcomes:?}"
    );
    let acknowledged: Vec<String> = outcomes.iter().filter_map(|o| o.2.clone()).collect();
    let db = s.db.clone();
    let mut s = s;
    assert!(s.stop());
    let ns = db.ns("q").unwrap();
    for id in &acknowledged {
        assert!(ns.get(id.parse().unwrap()).unwrap().is_some(), "acknowledged write {id} is missing");
    }
}

#[test]
fn graceful_shutdown_finishes_in_flight_writes_and_keeps_every_acknowledged_one() {
    let mut s = Server::start(|_| {});
    let t = s.token(&["*"], Scope::Write);
    let url = s.url("/v1/ns/g/memories");
    let path = s.path.clone();
    let stopping = &mut s;
    let acknowledged: Vec<String> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let (url, t) = (url.clone(), t.clone());
                scope.spawn(move || {
                    let c = client();
                    let mut ids = Vec::new();
                    for i in 0.. {
                        let body = json!({"kind": "learning", "text": format!("writer {w} write {i}")});
                        match c.post(&url).bearer_auth(&t).json(&body).send() {
                            Ok(r) if r.status().is_success() => {
                                ids.push(answer(r).1["id"].as_str().unwrap().to_string());
                            }
                            _ => break, // the server stopped
                        }
                    }
                    ids
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(800));
        assert!(stopping.stop(), "in-flight requests did not finish");
        writers.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(acknowledged.len() > 8, "only {} writes before the shutdown", acknowledged.len());
    let db = mnemon::Db::builder(&path).shared(true).open().unwrap();
    let ns = db.ns("g").unwrap();
    for id in &acknowledged {
        assert!(ns.get(id.parse().unwrap()).unwrap().is_some(), "acknowledged write {id} is missing");
    }
}

#[test]
fn server_failures_say_what_kind_not_the_internals() {
    let s = Server::start(|_| {});
    let t = s.token(&["*"], Scope::Write);
    s.db.store().note_damage("a secret internal detail at /some/path");
    let r = client()
        .post(s.url("/v1/ns/a/memories"))
        .bearer_auth(&t)
        .json(&json!({"kind": "learning", "text": "t"}))
        .send()
        .unwrap();
    let (st, body) = answer(r);
    assert_eq!(problem(&body, st), "damaged");
    assert_eq!(st, 500);
    assert!(!body.to_string().contains("secret") && !body.to_string().contains("/some/path"), "{body}");
    let r = client().get(s.url("/readyz")).send().unwrap();
    assert_eq!(r.status().as_u16(), 503);
}

#[test]
fn tls_serves_https_with_the_given_certificate_and_refuses_bad_ones() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let tls = mnemon_server::tls_config(&data.join("cert.pem"), &data.join("key.pem")).unwrap();
    let s = Server::start(|o| o.tls = Some(tls));
    let ca = reqwest::Certificate::from_pem(&std::fs::read(data.join("ca.pem")).unwrap()).unwrap();
    let https = reqwest::blocking::Client::builder().add_root_certificate(ca).build().unwrap();
    let url = format!("https://localhost:{}/healthz", s.addr.port());
    assert_eq!(https.get(&url).send().unwrap().status(), 200);
    // Not trusted without the authority; plain HTTP gets no answer.
    assert!(client().get(&url).send().is_err());
    assert!(client().get(s.url("/healthz")).send().is_err());
    // A client trusting the authority calls operations through it.
    let token = s.token(&["project:*"], Scope::Write);
    let ca = std::fs::read(data.join("ca.pem")).unwrap();
    let c = mnemon_client::Client::with_options(
        &format!("https://localhost:{}", s.addr.port()),
        Some(token),
        Some(&ca),
    )
    .unwrap();
    let made = c.session("project:a").call(mnemon::ops::Remember {
        kind: "gotcha".into(),
        text: Some("over TLS".into()),
        ..Default::default()
    });
    assert!(made.is_ok(), "{made:?}");
    // Files that cannot serve: one-line errors naming the file.
    let missing = mnemon_server::tls_config(&data.join("none.pem"), &data.join("key.pem")).unwrap_err();
    assert!(
        missing.to_string().starts_with("cannot read ") && missing.to_string().contains("none.pem"),
        "{missing}"
    );
    let swapped = mnemon_server::tls_config(&data.join("key.pem"), &data.join("cert.pem")).unwrap_err();
    assert!(swapped.to_string().contains("holds no certificate"), "{swapped}");
    let wrong_key = mnemon_server::tls_config(&data.join("ca.pem"), &data.join("key.pem")).unwrap_err();
    assert!(wrong_key.to_string().contains("cannot be used"), "{wrong_key}");
}

/// A tool call over MCP takes one of the server's operation slots, as REST calls do: with
/// none free it is refused as overloaded instead of running beyond the bound.
#[test]
fn mcp_tool_calls_share_the_operation_queue() {
    let s = Server::start(|o| {
        o.config.auth = false;
        o.config.queue = 1;
    });
    let c = client();
    let post = |session: Option<&str>, body: Value| {
        let mut r = c
            .post(s.url("/mcp?ns=project:a"))
            .header("Accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(id) = session {
            r = r.header("Mcp-Session-Id", id);
        }
        r.send().unwrap()
    };
    let init = post(
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
    );
    assert_eq!(init.status().as_u16(), 200);
    let session = init.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_string());
    let _ = init.text();
    let _ = post(session.as_deref(), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // 16 callers at once on a queue of one: some are turned away, the others write.
    let answers: Vec<Value> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|t| {
                let (post, session) = (&post, session.as_deref());
                scope.spawn(move || {
                    (0..8)
                        .map(|i| {
                            let body = json!({"jsonrpc": "2.0", "id": 10 + t * 8 + i, "method": "tools/call", "params": {"name": "remember", "arguments": {"kind": "gotcha", "text": format!("call {t} {i}")}}});
                            let text = post(session, body).text().unwrap();
                            text.lines()
                                .find_map(|l| l.strip_prefix("data: ").and_then(|d| serde_json::from_str(d).ok()))
                                .or_else(|| serde_json::from_str(&text).ok())
                                .unwrap_or_else(|| panic!("no answer in {text:?}"))
                        })
                        .collect::<Vec<Value>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let refused = answers.iter().filter(|a| a["result"]["isError"] == true).count();
    assert!(refused > 0, "16 callers on a queue of 1 were never turned away");
    assert!(
        answers
            .iter()
            .filter(|a| a["result"]["isError"] == true)
            .all(|a| a.to_string().contains("overloaded")),
        "{answers:?}"
    );
    // Every call that was not refused wrote its record.
    let written = answers.len() - refused;
    assert!(written > 0);
    let listed = mnemon::ops::Session::new(s.db.clone(), "project:a")
        .unwrap()
        .call(mnemon::ops::List { limit: Some(1000), ..Default::default() })
        .unwrap();
    assert_eq!(listed.records.len(), written);
}
