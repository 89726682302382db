//! `mnemon serve --cluster` as a user runs it: a real nats-server with JetStream, two nodes as
//! child processes, a real HTTP client, SIGKILL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{run_at, spawn_serve};
use mnemon_cluster::testing::Nats;
use serde_json::{Value, json};

const CONSISTENCY: &str = "mnemon-consistency";

fn node(
    dir: &std::path::Path,
    files: &std::path::Path,
    nats: &Nats,
    name: &str,
) -> (std::process::Child, String) {
    let url = nats.url();
    let args = ["--no-auth", "--cluster", url.as_str(), "--node", name, "--partition-count", "4"];
    let (child, addr, stderr) = spawn_serve(dir, files, &args);
    // Keep reading its log so that it never blocks on a full pipe.
    std::thread::spawn(move || {
        use std::io::BufRead;
        for _ in stderr.lines() {}
    });
    (child, addr)
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder().timeout(Duration::from_secs(30)).build().unwrap()
}

/// Write a learning in `ns` through the node at `addr`: its id and consistency token.
fn write(addr: &str, ns: &str, text: &str) -> (String, String) {
    let r = client()
        .post(format!("http://{addr}/v1/ns/{ns}/memories"))
        .json(&json!({"kind": "learning", "text": text}))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let token = r
        .headers()
        .get(CONSISTENCY)
        .expect("a write answers a consistency token")
        .to_str()
        .unwrap()
        .to_string();
    (r.json::<Value>().unwrap()["id"].as_str().unwrap().to_string(), token)
}

/// The texts of `ns`'s records on the node at `addr`, after waiting for `token`.
fn texts(addr: &str, ns: &str, token: &str) -> Vec<String> {
    let r =
        client().get(format!("http://{addr}/v1/ns/{ns}/records")).header(CONSISTENCY, token).send().unwrap();
    assert_eq!(r.status().as_u16(), 200, "{}", r.text().unwrap_or_default());
    let v: Value = r.json().unwrap();
    let mut out: Vec<String> = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap_or_default().to_string())
        .collect();
    out.sort();
    out
}

#[test]
fn two_nodes_serve_one_log_and_a_killed_node_catches_up() {
    let nats = Nats::start();
    let dir = tempfile::tempdir().unwrap();
    let (fa, fb) = (dir.path().join("a"), dir.path().join("b"));
    let (mut a, addr_a) = node(dir.path(), &fa, &nats, "a");
    let (mut b, addr_b) = node(dir.path(), &fb, &nats, "b");
    let names = ["agent:dev-1", "project:x", "default", "team"];
    let mut last = String::new();
    for (i, ns) in names.iter().enumerate() {
        let on = if i % 2 == 0 { &addr_a } else { &addr_b };
        let (_, token) = write(on, ns, &format!("written through {on} into {ns}"));
        // Read your write on the other node.
        let other = if i % 2 == 0 { &addr_b } else { &addr_a };
        assert_eq!(texts(other, ns, &token), vec![format!("written through {on} into {ns}")]);
        last = token;
    }
    assert!(last.contains(':'), "{last}");
    // A malformed token is the client's mistake.
    let r = client()
        .get(format!("http://{addr_b}/v1/ns/team/records"))
        .header(CONSISTENCY, "soon")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // b dies; a writes on; b comes back from its files and catches up.
    b.kill().unwrap();
    b.wait().unwrap();
    let mut tokens = Vec::new();
    for i in 0..20 {
        tokens.push((names[i % 4], write(&addr_a, names[i % 4], &format!("while b was away {i}")).1));
    }
    let (mut b, addr_b) = node(dir.path(), &fb, &nats, "b");
    for (ns, token) in &tokens {
        assert_eq!(texts(&addr_b, ns, token), texts(&addr_a, ns, token));
    }
    // Both nodes report every partition applied to its end.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let url = nats.url();
        let lines = run_at(
            dir.path(),
            &fa,
            &["--json", "cluster", "status", "--cluster", url.as_str(), "--partition-count", "4"],
            None,
        )
        .json_lines();
        let nodes: std::collections::BTreeSet<&str> =
            lines.iter().filter_map(|l| l["node"].as_str()).collect();
        if nodes.len() == 2 && lines.iter().all(|l| l["lag"] == 0) && lines.len() == 8 {
            break;
        }
        assert!(Instant::now() < deadline, "{lines:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
    for child in [&mut a, &mut b] {
        let _ = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        assert!(child.wait().unwrap().success());
    }
    // The same lines in every partition's file on both nodes.
    for p in 0..4 {
        let file = |d: &std::path::Path| d.join(format!("p{p:03}.mnemon"));
        let export = |d: &std::path::Path| run_at(dir.path(), &file(d), &["export"], None).ok().to_string();
        assert_eq!(export(&fa), export(&fb), "partition {p}");
    }
}
