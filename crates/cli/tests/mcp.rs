//! `mnemon mcp` as real child processes: mnemon's own tools in a working session, several
//! servers and CLI calls writing one file at once, and SIGKILL right after acknowledged
//! writes. (The reference tools' contract is checked in cli.rs; the official Python SDK
//! drives the server in tests/mcp_sdk.rs.)
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// A `mnemon mcp` child process and a minimal JSON-RPC client on its stdio.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(db: &Path, ns: &str) -> Server {
        Server::start_with(db, ns, &[])
    }

    /// A server with more arguments to `mcp` (`--allow-ns`).
    fn start_with(db: &Path, ns: &str, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mnemon"))
            .env_remove("MNEMON_DB")
            .env_remove("MEMORY_FILE_PATH")
            .args(["--db", db.to_str().unwrap(), "--ns", ns, "mcp"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Server { child, stdin, stdout, next: 1 };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "mnemon", "{init}");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, v: &Value) {
        let w = self.stdin.as_mut().unwrap();
        writeln!(w, "{v}").unwrap();
        w.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "server closed stdout");
            let v: Value = serde_json::from_str(&line).expect("stdout carries only JSON-RPC");
            if v["id"] == id {
                return v;
            }
        }
    }

    /// A tool call's result (`isError` false), structured.
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert_eq!(r["result"]["isError"], false, "{tool} {args}: {r}");
        r["result"]["structuredContent"].clone()
    }

    /// A tool call that fails: its error text.
    fn call_err(&mut self, tool: &str, args: Value) -> String {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert_eq!(r["result"]["isError"], true, "{tool} {args} should fail: {r}");
        r["result"]["content"][0]["text"].as_str().unwrap().to_string()
    }

    /// Close stdin and wait for a clean exit.
    fn close(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

/// Every line gets what JSON-RPC 2.0 asks: a request with a readable id exactly one reply with
/// that id; a line that is not JSON a parse error (-32700), and one that is not a message an
/// invalid-request error (-32600), both with `id: null`; a notification nothing. The server
/// keeps serving through them and exits cleanly.
#[test]
fn every_line_gets_its_json_rpc_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(&db_in(&dir), "p");
    let lines = [
        "{not json",
        "\u{1b}]0;title\u{7}",
        "{}",
        "[1,2]",
        "[]",
        "42",
        r#"{"jsonrpc":"2.0","id":101}"#,
        r#"{"jsonrpc":"1.0","id":102,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":103,"method":"no/such/method"}"#,
        r#"{"jsonrpc":"2.0","id":104,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#,
        "",
        r#"{"jsonrpc":"2.0","id":"last","method":"ping"}"#,
    ];
    let w = s.stdin.as_mut().unwrap();
    for l in lines {
        writeln!(w, "{l}").unwrap();
    }
    w.flush().unwrap();
    drop(s.stdin.take());
    let replies: Vec<Value> = s
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(&l.unwrap()).expect("stdout carries only JSON-RPC"))
        .collect();
    assert!(s.child.wait().unwrap().success());
    let with_id = |id: Value| replies.iter().filter(|r| r["id"] == id).cloned().collect::<Vec<_>>();
    let codes = |rs: Vec<Value>| rs.iter().map(|r| r["error"]["code"].as_i64()).collect::<Vec<_>>();
    // Seven lines with no readable id, each answered once with `id: null`.
    let anonymous = with_id(Value::Null);
    assert!(anonymous.iter().all(|r| r.as_object().unwrap().contains_key("id")));
    let mut got = codes(anonymous);
    got.sort();
    assert_eq!(got, [-32700, -32700, -32600, -32600, -32600, -32600, -32600].map(Some), "{replies:?}");
    assert_eq!(codes(with_id(json!(101))), [Some(-32600)]);
    assert_eq!(codes(with_id(json!(102))), [Some(-32600)]);
    assert_eq!(codes(with_id(json!(103))), [Some(-32601)]);
    let listed = with_id(json!(104));
    assert_eq!(listed.len(), 1);
    assert!(listed[0]["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()));
    assert_eq!(with_id(json!("last")).len(), 1);
    assert_eq!(replies.len(), 12, "one reply per line that asks for one: {replies:?}");
}

/// The malformed lines of every class JSON-RPC and MCP framing can meet, each with the reply
/// it must get: `(line, the reply's id, its error code)`; `None` for a line that gets no
/// reply (a notification). `i` makes the ids unique.
fn malformed(i: u64) -> Vec<(String, Option<Value>, i64)> {
    let deep = format!("{}{}", "[".repeat(130), "]".repeat(130));
    vec![
        ("{not json".into(), Some(Value::Null), -32700),
        ("[1,2]".into(), Some(Value::Null), -32600),
        ("5".into(), Some(Value::Null), -32600),
        (format!(r#"{{"jsonrpc":"1.0","id":{i},"method":"ping"}}"#), Some(json!(i)), -32600),
        (format!(r#"{{"jsonrpc":"2.0","id":{{"x":{i}}},"method":"ping"}}"#), Some(Value::Null), -32600),
        (
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list","params":"x"}}"#),
            Some(json!(i)),
            -32602,
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list","params":[1,2]}}"#),
            Some(json!(i)),
            -32602,
        ),
        (format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list","params":5}}"#), Some(json!(i)), -32602),
        (format!(r#"{{"jsonrpc":"2.0","id":{i}.5,"method":"ping"}}"#), Some(json!(i as f64 + 0.5)), -32600),
        (
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#.into(),
            Some(json!(18446744073709551616.0_f64)),
            -32600,
        ),
        (format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call"}}"#), Some(json!(i)), -32602),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"recall","arguments":{{"query":{deep}}}}}}}"#
            ),
            Some(json!(i)),
            -32600,
        ),
        (format!(r#"{{"jsonrpc":"2.0","id":{i}}}"#), Some(json!(i)), -32600),
        (r#"{"jsonrpc":"2.0","method":"notifications/x","params":"x"}"#.into(), None, 0),
    ]
}

/// 10,000 lines, a quarter of them malformed in every way [`malformed`] knows, the rest
/// requests: every line with a readable id gets exactly one reply with that id (an error of
/// the right code for the malformed), every unreadable one a reply with `id: null`, and a
/// notification none; the server keeps serving and exits cleanly.
#[test]
fn a_mixed_stream_of_ten_thousand_lines_gets_one_reply_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(&db_in(&dir), "p");
    let mut expected: Vec<(Option<Value>, i64)> = Vec::new();
    let mut text = String::new();
    for n in 0..10_000u64 {
        let id = 1_000 + n;
        if n % 4 == 0 {
            let all = malformed(id);
            let (line, reply, code) = all[(n as usize / 4) % all.len()].clone();
            text.push_str(&line);
            expected.push((reply, code));
        } else if n % 50 == 1 {
            text.push_str(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": "x"}}}).to_string());
            expected.push((Some(json!(id)), 0));
        } else {
            text.push_str(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string());
            expected.push((Some(json!(id)), 0));
        }
        text.push('\n');
    }
    let mut w = s.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        w.write_all(text.as_bytes()).unwrap();
        w.flush().unwrap();
    });
    let replies: Vec<Value> = s
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(&l.unwrap()).expect("stdout carries only JSON-RPC"))
        .collect();
    writer.join().unwrap();
    assert!(s.child.wait().unwrap().success());
    assert!(
        replies.iter().all(|r| r.as_object().is_some_and(|o| o.contains_key("id"))),
        "a reply without an id"
    );
    let want = expected.iter().filter(|(r, _)| r.is_some()).count();
    assert_eq!(replies.len(), want, "one reply per line that asks for one");
    // Each reply where it belongs: unique ids once, with the right code.
    let mut by_id: std::collections::HashMap<String, Vec<&Value>> = std::collections::HashMap::new();
    for r in &replies {
        by_id.entry(r["id"].to_string()).or_default().push(r);
    }
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (reply, code) in &expected {
        let Some(id) = reply else { continue };
        let key = id.to_string();
        *counts.entry(key.clone()).or_default() += 1;
        if id.is_u64() {
            let got = &by_id[&key];
            assert_eq!(got.len(), 1, "{key}: {got:?}");
            match code {
                0 => assert!(got[0].get("result").is_some(), "{key}: {}", got[0]),
                c => assert_eq!(got[0]["error"]["code"], *c, "{key}: {}", got[0]),
            }
        }
    }
    for (key, n) in counts {
        assert_eq!(by_id.get(&key).map_or(0, Vec::len), n, "replies with id {key}");
    }
}

fn mnemon(db: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .env_remove("MNEMON_DB")
        // No local model: `init` picks the hashing embedder on any machine.
        .env("MNEMON_MINILM_DIR", "/nonexistent/mnemon-model")
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn db_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("m.redb")
}

/// A server works in its namespace: a tool's `namespace` argument naming another is refused
/// (nothing read, nothing written) unless it matches an `--allow-ns` glob, for namespaces
/// that are prefixes of each other, unicode, long, or hold separators and dots.
#[test]
fn tools_stay_in_the_servers_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let long = format!("agent:{}", "x".repeat(150));
    let others =
        ["agent:bo", "agent:bobby", "agent:alice", "agent:böb", "project:..", "agent:bob/..", long.as_str()];
    // Each other namespace holds a secret, written by a server that may reach them all.
    let mut all = Server::start_with(&db, "agent:bob", &["--allow-ns", "*"]);
    let mut secrets = Vec::new();
    for ns in others {
        let r = all.call(
            "remember",
            json!({"kind": "learning", "text": format!("secret of {ns}"), "namespace": ns}),
        );
        secrets.push((ns, r["id"].as_str().unwrap().to_string()));
    }
    all.close();

    let mut bob = Server::start(&db, "agent:bob");
    bob.call("remember", json!({"kind": "learning", "text": "secret of bob"}));
    for (ns, id) in &secrets {
        for (tool, args) in [
            ("recall", json!({"query": "secret", "namespace": ns})),
            ("list", json!({"namespace": ns})),
            ("get", json!({"id": id, "namespace": ns})),
            ("history", json!({"id": id, "namespace": ns})),
            ("forget", json!({"id": id, "erase": true, "namespace": ns})),
            ("remember", json!({"kind": "learning", "text": "planted", "namespace": ns})),
        ] {
            let err = bob.call_err(tool, args);
            assert!(err.contains("outside this session's scope"), "{tool} in {ns}: {err}");
        }
        // Its own namespace does not hold the others' records either.
        assert!(bob.call_err("get", json!({"id": id})).contains("no record"), "{ns}");
    }
    let mine = bob.call("recall", json!({"query": "secret"}));
    assert_eq!(mine["hits"].as_array().unwrap().len(), 1, "{mine}");
    bob.close();

    // A glob reaches what it matches, and only that.
    let mut some = Server::start_with(&db, "agent:bob", &["--allow-ns", "agent:bo*"]);
    for (ns, id) in &secrets {
        let reachable = ns.starts_with("agent:bo");
        let r = some.request("tools/call", json!({"name": "get", "arguments": {"id": id, "namespace": ns}}));
        assert_eq!(r["result"]["isError"], !reachable, "{ns}: {r}");
        if reachable {
            assert_eq!(r["result"]["structuredContent"]["record"]["text"], format!("secret of {ns}"));
        }
    }
    some.close();
    // Nothing was erased or planted.
    let mut check = Server::start_with(&db, "agent:bob", &["--allow-ns", "*"]);
    for (ns, _) in &secrets {
        let listed = check.call("list", json!({"namespace": ns}));
        let texts: Vec<&str> =
            listed["records"].as_array().unwrap().iter().map(|r| r["text"].as_str().unwrap()).collect();
        assert_eq!(texts, [format!("secret of {ns}")], "{ns}");
    }
    check.close();
}

#[test]
fn own_tools_in_a_working_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(&db_in(&dir), "proj");
    let d = s.call(
        "remember",
        json!({"kind": "decision", "data": {"title": "Storage engine", "decision": "SQLite", "rationale": "well known"},
               "tags": ["storage"], "importance": 5, "valid_from": "2025-01-01"}),
    );
    let first = d["id"].as_str().unwrap().to_string();
    let g = s.call("remember", json!({"kind": "gotcha", "data": {"title": "fsync cost", "problem": "every durable commit fsyncs", "solution": "group commit", "severity": "critical"}}));
    assert!(g["id"].is_string());
    let hits = s.call("recall", json!({"query": "which storage engine", "kinds": ["decision"]}));
    assert_eq!(hits["hits"][0]["id"], first.as_str(), "{hits}");
    // The decision changes: supersede, then the chain, history and time travel tell the story.
    let sup = s.call(
        "supersede",
        json!({"id": first, "data": {"title": "Storage engine", "decision": "redb", "rationale": "embedded, pure Rust"}, "at": "2025-03-01"}),
    );
    let second = sup["new"].as_str().unwrap().to_string();
    let chain = s.call("chain", json!({"id": &first[first.len() - 8..]}));
    let ids: Vec<&str> =
        chain["chain"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [first.as_str(), second.as_str()]);
    let hist = s.call("history", json!({"id": first}));
    assert!(hist["revisions"].as_array().unwrap().len() >= 2, "{hist}");
    let then = s.call("list", json!({"kinds": ["decision"], "as_of": "2025-02-01"}));
    assert_eq!(then["records"].as_array().unwrap().len(), 1);
    assert_eq!(then["records"][0]["body"]["description"], "SQLite");
    let now = s.call("list", json!({"kinds": ["decision"]}));
    assert_eq!(now["records"][0]["body"]["description"], "redb");
    let old = s.call("get", json!({"id": first, "as_of": "2025-02-01"}));
    assert_eq!(old["record"]["status"], "active", "{old}");
    // Tasks move through their states; a final state is final.
    let t = s
        .call("remember", json!({"kind": "task", "text": "Port the importer", "data": {"priority": "high"}}));
    let tid = t["id"].as_str().unwrap().to_string();
    assert_eq!(s.call("task", json!({"id": tid, "action": "start"}))["task"]["status"], "in_progress");
    assert_eq!(
        s.call("task", json!({"id": tid, "action": "block", "reason": "waiting on review"}))["task"]["status"],
        "blocked"
    );
    assert_eq!(s.call("task", json!({"id": tid, "action": "unblock"}))["task"]["status"], "in_progress");
    assert_eq!(s.call("task", json!({"id": tid, "action": "complete"}))["task"]["status"], "completed");
    let refused = s.call_err("task", json!({"id": tid, "action": "start"}));
    assert!(refused.contains("completed"), "{refused}");
    // The context block: the critical gotcha and the active decision, within budget.
    let ctx = s.call("context", json!({"query": "storage work", "budget_tokens": 300}));
    let text = ctx["context"].as_str().unwrap();
    assert!(text.contains("fsync cost") && text.contains("redb"), "{text}");
    assert!(ctx["tokens"].as_u64().unwrap() <= 300);
    // forget retires (time travel keeps it); erase removes every revision.
    s.call("forget", json!({"id": second}));
    assert!(s.call("list", json!({"kinds": ["decision"]}))["records"].as_array().unwrap().is_empty());
    assert_eq!(
        s.call("get", json!({"id": second, "as_of": "2025-04-01"}))["record"]["body"]["description"],
        "redb"
    );
    let erased = s.call("forget", json!({"id": tid, "erase": true}));
    assert!(erased["erased_revisions"].as_u64().unwrap() >= 5, "{erased}");
    assert!(s.call_err("history", json!({"id": tid})).contains("no record"));
    // Bad arguments are errors the model can read; the server lives on.
    assert!(s.call_err("remember", json!({"text": "no kind"})).contains("kind"));
    // `text` beside `data`'s main field: the same words once, other words as the description
    // of a kind that has one, else a clear error.
    let both = s.call("remember", json!({"kind": "decision", "text": "Use pnpm because of disk use", "data": {"title": "Package manager"}}));
    let got = s.call("get", json!({"id": both["id"]}));
    assert_eq!(got["record"]["body"]["title"], "Package manager", "{got}");
    assert_eq!(got["record"]["body"]["description"], "Use pnpm because of disk use", "{got}");
    s.call(
        "remember",
        json!({"kind": "decision", "text": "Package manager", "data": {"title": "Package manager"}}),
    );
    let twice = s
        .call_err("remember", json!({"kind": "gotcha", "text": "a", "data": {"title": "b", "problem": "p"}}));
    assert!(twice.contains("give it once"), "{twice}");
    assert!(s.call_err("remember", json!({"kind": "wish", "text": "x"})).contains("wish"));
    let task = s.call("remember", json!({"kind": "task", "text": "a", "data": {"title": "b"}}));
    let task = s.call("get", json!({"id": task["id"]}));
    assert_eq!(
        (task["record"]["body"]["title"].clone(), task["record"]["body"]["description"].clone()),
        (json!("b"), json!("a"))
    );
    assert!(s.call_err("recall", json!({"query": "x", "as_of": "yesterday-ish"})).contains("as_of"));
    assert!(s.call_err("get", json!({"id": "not-an-id"})).contains("invalid record id"));
    assert!(s.call_err("list", json!({"bogus": 1})).contains("unknown field"));
    // Counts outside their range are refused, not cut.
    assert!(s.call_err("recall", json!({"query": "x", "limit": 20000})).contains("outside 1 to 10000"));
    assert!(s.call_err("recall", json!({"query": "x", "limit": 0})).contains("outside 1 to"));
    assert!(s.call_err("list", json!({"limit": 0})).contains("outside 1 to 1000"));
    let left = s.call("recall", json!({"query": "importer", "mode": "lexical"}));
    assert_eq!(left["hits"].as_array().unwrap().len(), 0, "{left}");
    s.close();
}

/// Three MCP servers and a stream of CLI calls write the same file at once: every write
/// lands, nobody sees "database already open", and each server sees the others' writes.
#[test]
fn many_processes_share_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    const SERVERS: usize = 3;
    const CALLS: usize = 20;
    const CLI: usize = 15;
    let mut handles = Vec::new();
    for p in 0..SERVERS {
        let db = db.clone();
        handles.push(std::thread::spawn(move || {
            let mut s = Server::start(&db, "kg");
            for i in 0..CALLS {
                let name = format!("p{p}-e{i}");
                let made = s.call(
                    "create_entities",
                    json!({"entities": [{"name": name, "entityType": "thing", "observations": [format!("made by {p}")]}]}),
                );
                assert_eq!(made["entities"].as_array().unwrap().len(), 1);
                s.call("add_observations", json!({"observations": [{"entityName": name, "contents": ["second"]}]}));
                s.call("create_relations", json!({"relations": [{"from": name, "to": "hub", "relationType": "links"}]}));
                if i % 5 == 0 {
                    s.call("remember", json!({"kind": "learning", "text": format!("server {p} learned {i}")}));
                }
            }
            s.close();
        }));
    }
    let cli = {
        let db = db.clone();
        std::thread::spawn(move || {
            // Racing the servers to create the file: exactly one creation wins, atomically.
            let (code, _, err) = mnemon(&db, &["init"]);
            assert_eq!(code, 0, "{err}");
            for i in 0..CLI {
                let (code, _, err) = mnemon(
                    &db,
                    &["--ns", "kg", "add", "learning", "--data", &format!("{{\"text\":\"cli {i}\"}}")],
                );
                assert_eq!(code, 0, "{err}");
                let (code, _, err) = mnemon(&db, &["--ns", "kg", "list", "entity", "--limit", "3"]);
                assert_eq!(code, 0, "{err}");
            }
        })
    };
    for h in handles {
        h.join().unwrap();
    }
    cli.join().unwrap();
    // A new server sees everything, from every process.
    let mut s = Server::start(&db, "kg");
    let g = s.call("read_graph", json!({}));
    assert_eq!(g["entities"].as_array().unwrap().len(), SERVERS * CALLS);
    assert_eq!(g["relations"].as_array().unwrap().len(), SERVERS * CALLS);
    assert!(
        g["entities"].as_array().unwrap().iter().all(|e| e["observations"].as_array().unwrap().len() == 2)
    );
    let learnings = s.call("list", json!({"kinds": ["learning"], "limit": 1000}));
    assert_eq!(learnings["records"].as_array().unwrap().len(), CLI + SERVERS * CALLS.div_ceil(5));
    // While this server runs, a CLI write is seen by its next call (its in-memory graph
    // follows other processes' commits).
    let (code, _, err) =
        mnemon(&db, &["--ns", "kg", "add", "entity", "--data", r#"{"name":"FromCli","entity_type":"tool"}"#]);
    assert_eq!(code, 0, "{err}");
    let found = s.call("search_nodes", json!({"query": "fromcli"}));
    assert_eq!(found["entities"][0]["name"], "FromCli");
    s.close();
    let (code, out, err) = mnemon(&db, &["check"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// SIGKILL right after acknowledged writes: all of them are there after a restart.
#[test]
fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    for round in 0..3 {
        let mut s = Server::start(&db, "kg");
        for i in 0..10 {
            s.call(
                "create_entities",
                json!({"entities": [{"name": format!("r{round}-{i}"), "entityType": "t", "observations": ["o"]}]}),
            );
        }
        s.call("remember", json!({"kind": "learning", "text": format!("round {round}")}));
        s.child.kill().unwrap(); // SIGKILL
        s.child.wait().unwrap();
        let mut again = Server::start(&db, "kg");
        let g = again.call("read_graph", json!({}));
        assert_eq!(g["entities"].as_array().unwrap().len(), 10 * (round + 1));
        let l = again.call("recall", json!({"query": format!("round {round}"), "kinds": ["learning"]}));
        assert!(!l["hits"].as_array().unwrap().is_empty());
        again.close();
    }
    let (code, out, err) = mnemon(&db, &["check"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// After a quiet moment the server merges the fresh texts its writes left (so that the write
/// reaching the merge limit does not pay for it); what the tools return is unchanged.
#[test]
fn an_idle_server_merges_fresh_texts() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let mut s = Server::start(&db, "idle");
    let entities: Vec<Value> = (0..8)
        .map(|i| {
            json!({"name": format!("service-{i}"), "entityType": "service",
                   "observations": (0..5).map(|j| format!("observation {j} of service {i}")).collect::<Vec<_>>()})
        })
        .collect();
    s.call("create_entities", json!({"entities": entities}));
    let fresh = || {
        let db = mnemon::Db::builder(&db).shared(true).open().unwrap();
        db.snapshot().unwrap().fresh_texts(&mnemon::Namespace::new("idle").unwrap()).unwrap()
    };
    let before = s.call("search_nodes", json!({"query": "observation 3 of service 5"}));
    assert!(fresh() >= 32, "the writes left fresh texts");
    let mut merged = false;
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if fresh() == 0 {
            merged = true;
            break;
        }
    }
    assert!(merged, "no merge after 5 s without calls");
    assert_eq!(s.call("search_nodes", json!({"query": "observation 3 of service 5"})), before);
    // Compaction needs the file to itself: refused, in one line, while the server runs.
    let (code, _, err) = mnemon(&db, &["compact"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.trim().lines().count() == 1 && err.contains("needs the file to itself"), "{err}");
    s.close();
    assert_eq!(mnemon(&db, &["compact"]).0, 0);
}

/// A file another process upgraded to a newer format while the server had it open: the
/// server's next write is refused in one line (a newer format keeps indexes this build does
/// not maintain), nothing is written, and reads still answer (format 5 added such an index,
/// `mnemon.ended`; format-4 builds lack this check, so processes sharing a file are upgraded
/// together).
#[test]
fn a_file_upgraded_by_another_process_refuses_this_servers_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let mut s = Server::start(&db, "up");
    s.call(
        "create_entities",
        json!({"entities": [{"name": "before", "entityType": "t", "observations": []}]}),
    );
    {
        let mut builder = redb::Builder::new();
        builder.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
        let other = builder.open(&db).unwrap();
        let w = other.begin_write().unwrap();
        {
            let mut t = w.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
            t.insert("format_version", 99u32.to_le_bytes().as_slice()).unwrap();
        }
        w.commit().unwrap();
    }
    let err = s.call_err(
        "create_entities",
        json!({"entities": [{"name": "after", "entityType": "t", "observations": []}]}),
    );
    assert!(err.contains("newer than this mnemon supports"), "{err}");
    let graph = s.call("read_graph", json!({}));
    assert!(graph.to_string().contains("before") && !graph.to_string().contains("after"), "{graph}");
    // At the end the server cannot write what it keeps (access counts) either: it says so in
    // one line and exits with 1, not a panic.
    drop(s.stdin.take());
    assert_eq!(s.child.wait().unwrap().code(), Some(1));
}

/// A reply larger than the server's cap (`--max-reply-bytes`) is an error result saying how
/// to ask for less, not an unbounded message; a smaller page of the same listing answers, and
/// the server goes on serving.
#[test]
fn replies_over_the_cap_are_refused_with_a_way_to_ask_for_less() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start_with(&db_in(&dir), "p", &["--max-reply-bytes", "100000"]);
    let text = "a long note about caps ".repeat(300);
    for _ in 0..6 {
        s.call("remember", json!({"kind": "learning", "text": text}));
    }
    let refused = s.call_err("list", json!({"limit": 6}));
    assert!(refused.contains("over this server's cap of 100000") && refused.contains("cursor"), "{refused}");
    let page = s.call("list", json!({"limit": 2}));
    assert_eq!(page["records"].as_array().unwrap().len(), 2);
    assert!(page["next_cursor"].is_string(), "{page}");
    s.close();
}

/// The change feed across processes: four `mnemon mcp` servers write 1,000 memories while a
/// `mnemon watch` subscriber is killed and started again from the last change it printed,
/// several times: every change is seen exactly once, in order.
#[test]
fn a_subscriber_killed_and_resumed_sees_every_change_of_every_process_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let (code, _, err) = mnemon(&db, &["init"]);
    assert_eq!(code, 0, "{err}");
    const WRITERS: usize = 4;
    const EACH: usize = 250;
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut s = Server::start(&db, "farm");
                let ids: Vec<String> = (0..EACH)
                    .map(|i| {
                        let r = s.call(
                            "remember",
                            json!({"kind": "learning", "text": format!("writer {w} note {i}")}),
                        );
                        r["id"].as_str().unwrap().to_string()
                    })
                    .collect();
                s.close();
                ids
            })
        })
        .collect();
    let mut seen: Vec<Value> = Vec::new();
    let mut since = "2000-01-01".to_string();
    let mut sessions = 0;
    while seen.len() < WRITERS * EACH {
        sessions += 1;
        let mut child = Command::new(env!("CARGO_BIN_EXE_mnemon"))
            .args(["--db", db.to_str().unwrap(), "--ns", "farm", "--json", "watch", "--since", &since])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        // Read a part, then kill it without warning (the lines it printed after are lost to
        // us: the next subscriber starts after the last one read).
        let take = (137 * sessions % 300 + 40).min(WRITERS * EACH - seen.len());
        for _ in 0..take {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "watch stopped");
            let change: Value = serde_json::from_str(&line).unwrap();
            since = change["cursor"].as_str().unwrap().to_string();
            seen.push(change);
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }
    assert!(sessions >= 4, "resumed several times ({sessions} sessions)");
    let mut written: Vec<String> = writers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    let mut got: Vec<String> = seen.iter().map(|c| c["id"].as_str().unwrap().to_string()).collect();
    assert!(seen.iter().all(|c| c["op"] == "insert" && c["namespace"] == "farm" && c["kind"] == "learning"));
    // In order: transaction times never go back.
    let times: Vec<&str> = seen.iter().map(|c| c["tx"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in transaction-time order");
    got.sort();
    written.sort();
    let before = got.len();
    got.dedup();
    assert_eq!(got.len(), before, "no change twice");
    assert_eq!(got, written, "every change once");
    // Nothing more after the last one.
    let (code, out, err) =
        mnemon(&db, &["--ns", "farm", "--json", "watch", "--since", &since, "--idle", "0.5"]);
    assert_eq!((code, out.trim()), (0, ""), "{err}");
}
