//! Hostile clients against a real server on loopback: floods of MCP sessions, bodies too
//! large or never sent, malformed requests. Each test bounds what the attack costs the server
//! (memory, other clients' latency) and prints its figures (`cargo test -p mnemon-server --test
//! hostile -- --nocapture`; docs/reliability.md quotes them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Server, client};
use mnemon_server::tokens::Scope;
use serde_json::{Value, json};

/// This process's resident memory, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// How long `/healthz` takes to answer, on a fresh connection.
fn health(s: &Server) -> Duration {
    let started = Instant::now();
    let r = client().get(s.url("/healthz")).send().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    started.elapsed()
}

fn initialize(s: &Server, token: &str) -> reqwest::blocking::Response {
    client()
        .post(s.url("/mcp?ns=project:a"))
        .header("Accept", "application/json, text/event-stream")
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}}}))
        .send()
        .unwrap()
}

/// A raw HTTP exchange: `request` written as is, the answer read until the server closes or
/// `wait` passes; the answer and how long it took.
fn raw(s: &Server, request: &[u8], wait: Duration) -> (String, Duration) {
    let started = Instant::now();
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(wait)).unwrap();
    c.write_all(request).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                // One answer is enough: headers and a body as long as it says.
                let text = String::from_utf8_lossy(&out);
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().to_string())
                        })
                        .and_then(|v| v.parse::<usize>().ok());
                    if len.is_some_and(|n| body.len() >= n) {
                        break;
                    }
                }
            }
        }
    }
    (String::from_utf8_lossy(&out).into_owned(), started.elapsed())
}

/// Sessions are capped per token and in all (503 with Retry-After and a JSON-RPC error
/// beyond), a session costs little, closing one answers 204 and frees its place, and a health
/// probe stays fast through a flood of 2,000 `initialize` requests.
#[test]
fn mcp_session_floods_are_capped_and_cheap() {
    let s = Server::start(|o| {
        o.config.mcp_sessions_per_token = 400;
        o.config.mcp_sessions = 420;
    });
    let a = s.token(&["*"], Scope::Read);
    let b = s.token(&["*"], Scope::Read);
    // Warm up (the tool list is built once, by the first session).
    let first = initialize(&s, &a);
    let id = first.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_string();
    let _ = first.text();
    let before = rss();
    let mut worst = Duration::ZERO;
    let (mut opened, mut refused) = (1usize, 0usize);
    let started = Instant::now();
    for i in 0..2_000 {
        let r = initialize(&s, &a);
        match r.status().as_u16() {
            200 => opened += 1,
            503 => {
                assert_eq!(r.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("5"));
                assert!(r.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
                let body: Value = r.json().unwrap();
                assert_eq!(body["jsonrpc"], "2.0");
                assert!(
                    body["error"]["message"].as_str().unwrap().contains("--max-mcp-sessions-per-token"),
                    "{body}"
                );
                refused += 1;
                continue;
            }
            other => panic!("initialize answered {other}: {}", r.text().unwrap_or_default()),
        }
        let _ = r.text();
        if i % 100 == 0 {
            worst = worst.max(health(&s));
        }
    }
    let grown = rss().saturating_sub(before);
    eprintln!(
        "session flood: 2,000 initialize in {:.1} s, {opened} sessions opened, {refused} refused; memory +{:.1} MB ({:.0} KB a session); worst /healthz {:.1} ms",
        started.elapsed().as_secs_f64(),
        grown as f64 / 1e6,
        grown as f64 / 1e3 / opened as f64,
        worst.as_secs_f64() * 1e3
    );
    assert_eq!(opened, 400, "the per-token cap");
    assert_eq!(refused, 1_601);
    assert!(grown < 100 * opened as u64 * 1024, "a session costs {} bytes", grown / opened as u64);
    assert!(worst < Duration::from_secs(1), "{worst:?}");
    // Another token gets what is left of the server's cap, then 503 too.
    let mut b_opened = 0;
    for _ in 0..40 {
        let r = initialize(&s, &b);
        if r.status().as_u16() == 503 {
            assert!(r.text().unwrap().contains("--max-mcp-sessions"));
            break;
        }
        b_opened += 1;
    }
    assert_eq!(b_opened, 20);
    // Closing a session answers 204 and gives its place back.
    let closed = client()
        .delete(s.url("/mcp?ns=project:a"))
        .bearer_auth(&a)
        .header("Mcp-Session-Id", &id)
        .header("MCP-Protocol-Version", "2025-06-18")
        .send()
        .unwrap();
    assert_eq!(closed.status().as_u16(), 204);
    assert_eq!(initialize(&s, &a).status().as_u16(), 200);
}

/// A body declared larger than the limit is refused by its header at once, before a byte of it
/// arrives, on the REST routes (a problem document) and on `/mcp` (a JSON-RPC error); every
/// other error of the server is a problem document too, and a 401 says how to authenticate.
#[test]
fn oversized_bodies_and_malformed_requests_get_the_servers_errors_at_once() {
    let s = Server::start(|o| o.config.body_limit = 1 << 20);
    let token = s.token(&["*"], Scope::Write);
    let host = s.addr.to_string();
    for (path, kind) in [("/v1/ns/a/records", "application/problem+json"), ("/mcp?ns=a", "application/json")]
    {
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000000\r\n\r\n"
        );
        let (answer, took) = raw(&s, request.as_bytes(), Duration::from_secs(5));
        eprintln!("Content-Length 100000000 to {path}: answered in {:.1} ms", took.as_secs_f64() * 1e3);
        assert!(answer.starts_with("HTTP/1.1 413"), "{path}: {answer}");
        assert!(answer.to_ascii_lowercase().contains(&format!("content-type: {kind}")), "{path}: {answer}");
        assert!(took < Duration::from_secs(1), "{path}: {took:?}");
    }
    // A body over the limit that does not say so up front: refused as it arrives.
    let big = "x".repeat((1 << 20) + 10);
    let r = client()
        .post(s.url("/mcp?ns=a"))
        .bearer_auth(&token)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .body(reqwest::blocking::Body::new(std::io::Cursor::new(big.into_bytes())))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 413);
    let body: Value = r.json().unwrap();
    assert_eq!(body["error"]["code"], -32600, "{body}");
    // rmcp's plain-text refusals on /mcp become JSON-RPC errors.
    let r = client()
        .post(s.url("/mcp?ns=a"))
        .bearer_auth(&token)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "text/plain")
        .body("hello")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 415);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    let body: Value = r.json().unwrap();
    assert_eq!((body["jsonrpc"].as_str(), body["id"].is_null()), (Some("2.0"), true), "{body}");
    // A bad path encoding, elsewhere: a problem document.
    let (answer, _) = raw(
        &s,
        format!("GET /v1/ns/%ff/records HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n").as_bytes(),
        Duration::from_secs(5),
    );
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("content-type: application/problem+json"), "{answer}");
    // 401 on the REST routes and on /mcp: `WWW-Authenticate: Bearer`.
    for path in ["/v1/ns/a/records", "/mcp?ns=a"] {
        let r = client().get(s.url(path)).send().unwrap();
        assert_eq!(r.status().as_u16(), 401, "{path}");
        assert!(r.headers()["www-authenticate"].to_str().unwrap().starts_with("Bearer"), "{path}");
    }
}

/// Connections that trickle their headers cannot fill the server: over `--max-connections`, a
/// new connection takes the place of the oldest one between requests, so a health probe is
/// answered at once through a flood of slow clients; only when every connection is busy with
/// a request is a new one answered 503 (a problem document), at once.
#[test]
fn slow_header_floods_over_the_cap_do_not_keep_others_out() {
    let s = Server::start(|o| o.max_connections = 64);
    let host = s.addr.to_string();
    let mut slow = Vec::new();
    for _ in 0..150 {
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nX-Slow: ").as_bytes()).unwrap();
        slow.push(c);
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut worst = Duration::ZERO;
    for _ in 0..20 {
        worst = worst.max(health(&s));
        // The flood goes on.
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nX-Slow: ").as_bytes()).unwrap();
        slow.push(c);
    }
    eprintln!(
        "slow-header flood of {} connections over a cap of 64: worst /healthz {:.1} ms",
        slow.len(),
        worst.as_secs_f64() * 1e3
    );
    assert!(worst < Duration::from_secs(1), "{worst:?}");
    drop(slow);

    // Every place busy with a request (event streams stay open): a new connection gets 503.
    let token = s.token(&["*"], Scope::Read);
    let mut streams = Vec::new();
    for _ in 0..64 {
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.write_all(format!("GET /v1/ns/a/events HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n").as_bytes()).unwrap();
        let mut first = [0u8; 12];
        c.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");
        streams.push(c);
    }
    let (answer, took) =
        raw(&s, format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes(), Duration::from_secs(5));
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("application/problem+json") && answer.contains("retry-after: 1"), "{answer}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    drop(streams);
    std::thread::sleep(Duration::from_millis(300));
    assert!(health(&s) < Duration::from_secs(1));
}

/// `/mcp` judges each message as stdio's framing layer does: what rmcp would answer without
/// an id (or not at all: JSON nested 130 deep) gets a JSON-RPC error with the message's id.
#[test]
fn mcp_messages_over_http_get_an_answer_with_their_id() {
    let s = Server::start(|o| o.config.auth = false);
    let post = |body: String| {
        let r = client()
            .post(s.url("/mcp?ns=a"))
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .unwrap();
        let status = r.status().as_u16();
        (status, r.text().unwrap_or_default())
    };
    let deep = format!("{}{}", "[".repeat(130), "]".repeat(130));
    for (body, id, code) in [
        (r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":"x"}"#.to_string(), json!(7), -32602),
        (r#"{"jsonrpc":"2.0","id":8,"method":"tools/list","params":[1,2]}"#.to_string(), json!(8), -32602),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_string(), json!(1.5), -32600),
        (r#"{"jsonrpc":"2.0","id":9,"method":"tools/call"}"#.to_string(), json!(9), -32602),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{{"name":"recall","arguments":{{"q":{deep}}}}}}}"#
            ),
            json!(10),
            -32600,
        ),
        ("{not json".to_string(), Value::Null, -32700),
    ] {
        let (status, text) = post(body.clone());
        assert_eq!(status, 400, "{body}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!((&v["id"], &v["error"]["code"]), (&id, &json!(code)), "{body}: {v}");
    }
    let (status, _) = post(r#"{"jsonrpc":"2.0","method":"notifications/x","params":5}"#.to_string());
    assert_eq!(status, 202);
}

/// JSON nested far deeper than any request needs, in a body and in a query's filter: a
/// problem document naming the limit, and the server goes on.
#[test]
fn deep_json_is_refused_on_the_rest_routes() {
    let s = Server::start(|o| o.config.auth = false);
    let deep = format!(
        "{{\"kind\":\"learning\",\"text\":\"x\",\"metadata\":{{\"a\":{}{}}}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let r = client()
        .post(s.url("/v1/ns/a/records"))
        .header("Content-Type", "application/json")
        .body(deep)
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let body: Value = r.json().unwrap();
    assert!(body["detail"].as_str().unwrap().contains("recursion limit"), "{body}");
    let filter = format!("{}1{}", "{\"$not\":".repeat(3_000), "}".repeat(3_000));
    let r = client()
        .get(s.url("/v1/ns/a/records"))
        .query(&[("where", format!("{{\"a\":{filter}}}"))])
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("application/problem+json"));
    assert!(health(&s) < Duration::from_secs(1));
}
