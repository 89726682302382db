//! `mnemon serve` and `mnemon token` as a user runs them: the binary as a child process, a
//! real HTTP client, SIGTERM to stop it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{run_at, spawn_serve};
use serde_json::{Value, json};

#[test]
fn tokens_are_made_listed_and_revoked_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.redb");
    let made = run_at(
        dir.path(),
        &db,
        &["--json", "token", "create", "--name", "dev", "--allow-ns", "project:*", "--scope", "write"],
        None,
    )
    .json();
    let token = made["token"].as_str().unwrap();
    assert!(token.starts_with("mnemon_"), "{made}");
    let listed = run_at(dir.path(), &db, &["--json", "token", "list"], None).json_lines();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0]["name"].as_str(), listed[0]["in_force"].as_bool()), (Some("dev"), Some(true)));
    assert!(!listed[0].to_string().contains(&token[24..]), "the secret is listed");
    // Bad input: one line, exit 2.
    run_at(dir.path(), &db, &["token", "create", "--name", "x", "--allow-ns", "a", "--scope", "root"], None)
        .fails(2, "scope");
    run_at(dir.path(), &db, &["token", "create", "--name", "dev", "--allow-ns", "a"], None)
        .fails(2, "exists");
    run_at(
        dir.path(),
        &db,
        &["token", "create", "--name", "y", "--allow-ns", "a", "--expires", "soon"],
        None,
    )
    .fails(2, "--expires");
    let text = run_at(dir.path(), &db, &["token", "revoke", "dev"], None);
    assert!(text.ok().starts_with("revoked "), "{}", text.stdout);
    let listed = run_at(dir.path(), &db, &["--json", "token", "list"], None).json_lines();
    assert_eq!(listed[0]["in_force"], false);
    run_at(dir.path(), &db, &["token", "revoke", "nobody"], None).fails(1, "no token named");
}

#[test]
fn no_auth_is_refused_off_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.redb");
    run_at(dir.path(), &db, &["serve", "--no-auth", "--listen", "0.0.0.0:0"], None).fails(2, "loopback");
}

#[test]
fn serve_answers_with_tokens_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.redb");
    let token = run_at(
        dir.path(),
        &db,
        &["--json", "token", "create", "--name", "a", "--allow-ns", "agent:*", "--scope", "write"],
        None,
    )
    .json()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let (mut child, addr, mut stderr) = spawn_serve(dir.path(), &db, &[]);
    let c = reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
    let r = c
        .post(format!("http://{addr}/v1/ns/agent:dev-1/memories"))
        .bearer_auth(&token)
        .json(&json!({"kind": "learning", "text": "served"}))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let id = r.json::<Value>().unwrap()["id"].as_str().unwrap().to_string();
    let r = c.get(format!("http://{addr}/v1/ns/project:x/records")).bearer_auth(&token).send().unwrap();
    assert_eq!(r.status().as_u16(), 403);
    // Meanwhile the command line uses the same file.
    let got = run_at(dir.path(), &db, &["--ns", "agent:dev-1", "--json", "get", &id], None).json();
    assert_eq!(got["body"]["text"], "served", "{got}");
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert_eq!(status.code(), Some(0), "{rest}");
    assert!(rest.contains("stopped"), "{rest}");
}

/// A server whose standard error is closed (its parent stopped reading it) keeps serving and
/// still stops cleanly: its log lines are dropped, not a panic.
#[test]
fn serve_survives_a_closed_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.redb");
    let (mut child, addr, stderr) = spawn_serve(dir.path(), &db, &["--no-auth"]);
    drop(stderr); // closed: the server's later log lines have nowhere to go
    let c = reqwest::blocking::Client::new();
    // A failure the server logs, and a write.
    let r = c.get(format!("http://{addr}/v1/ns/a/records/0123456789abcdef")).send().unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let r = c
        .post(format!("http://{addr}/v1/ns/a/memories"))
        .json(&json!({"kind": "learning", "text": "x"}))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

/// `--exclusive` keeps the file to the server: commands cannot open it while it serves.
#[test]
fn exclusive_serving_keeps_the_file_to_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.redb");
    let (mut child, addr, _stderr) = spawn_serve(dir.path(), &db, &["--exclusive", "--no-auth"]);
    let r = reqwest::blocking::Client::new()
        .post(format!("http://{addr}/v1/ns/a/memories"))
        .json(&json!({"kind": "learning", "text": "x"}))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let list = run_at(dir.path(), &db, &["--ns", "a", "list"], None);
    assert_eq!(list.code, 1, "a command opened the file while it was served exclusively: {}", list.stdout);
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    // Once it stops, the file is everyone's again.
    assert_eq!(run_at(dir.path(), &db, &["--ns", "a", "--json", "list"], None).json_lines().len(), 1);
}

/// `--log-format json`: one JSON object per line; with MNEMON_LOG=debug a line per request,
/// naming its request id (the caller's `X-Request-Id`, or a new one, answered either way).
#[test]
fn serve_logs_json_lines_with_request_ids() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.redb");
    let (mut child, addr, mut stderr) = common::spawn_serve_env(
        dir.path(),
        &db,
        &["--no-auth", "--log-format", "json"],
        &[("MNEMON_LOG", "debug")],
    );
    let c = reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
    let r = c.get(format!("http://{addr}/v1/ns/a/records")).header("X-Request-Id", "req-42").send().unwrap();
    assert_eq!(r.headers()["x-request-id"], "req-42");
    let r =
        c.get(format!("http://{addr}/healthz")).header("X-Request-Id", "bad id with spaces").send().unwrap();
    let made = r.headers()["x-request-id"].to_str().unwrap().to_string();
    assert_eq!(made.len(), 16, "{made}");
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let lines: Vec<Value> =
        rest.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let answered = |id: &str| {
        lines
            .iter()
            .find(|l| l["span"]["request_id"] == id && l["message"] == "answered")
            .cloned()
            .unwrap_or_default()
    };
    let first = answered("req-42");
    assert_eq!(
        (first["status"].as_u64(), first["span"]["route"].as_str()),
        (Some(200), Some("/v1/ns/{ns}/records")),
        "{rest}"
    );
    assert!(first["ms"].as_f64().is_some() && first["level"] == "DEBUG", "{first}");
    assert_eq!(answered(&made)["span"]["route"], "/healthz", "{rest}");
    assert!(lines.iter().any(|l| l["message"] == "stopped"), "{rest}");
    // A filter that is not one: a usage error before anything is served.
    let bad = Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .args(["--db", db.to_str().unwrap(), "serve", "--no-auth", "--listen", "127.0.0.1:0"])
        .env("MNEMON_LOG", "=[")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
}
