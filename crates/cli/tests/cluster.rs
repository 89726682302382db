//! `mnemon serve --cluster` as a user runs it: a real nats-server with JetStream, two nodes as
//! child processes, a real HTTP client, SIGKILL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{run_at, spawn_serve};
use mnemon_cluster::testing::Nats;
use serde_json::{Value, json};

const CONSISTENCY: &str = "mnemon-consistency";

/// A node's process, killed and reaped when dropped: a test that fails leaves no node running.
struct Reaped(std::process::Child);

impl std::ops::Deref for Reaped {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn node(dir: &std::path::Path, files: &std::path::Path, nats: &Nats, name: &str) -> (Reaped, String) {
    let url = nats.url();
    let args = ["--no-auth", "--cluster", url.as_str(), "--node", name, "--partition-count", "4"];
    let (child, addr, stderr) = spawn_serve(dir, files, &args);
    // Keep reading its log so that it never blocks on a full pipe.
    std::thread::spawn(move || {
        use std::io::BufRead;
        for _ in stderr.lines() {}
    });
    (Reaped(child), addr)
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
    // Each namespace read through b after its last write (a read after an earlier one may
    // rightly miss the later ones, which a has applied): the same records as through a.
    let mut last: std::collections::BTreeMap<&str, &String> = std::collections::BTreeMap::new();
    for (ns, token) in &tokens {
        last.insert(*ns, token);
    }
    for (ns, token) in last {
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
    // The same lines in every partition's file on both nodes, every write among them.
    let mut lines = 0;
    for p in 0..4 {
        let file = |d: &std::path::Path| d.join(format!("p{p:03}.mnemon"));
        let export =
            |d: &std::path::Path| run_at(dir.path(), &file(d), &["export", "--all"], None).ok().to_string();
        let (ea, eb) = (export(&fa), export(&fb));
        assert_eq!(ea, eb, "partition {p}");
        lines += ea.lines().count();
    }
    assert_eq!(lines, 4 + 20);
}

/// A node whose NATS server is gone still stops on SIGTERM, within its grace and a few
/// seconds, with its files synced.
#[test]
fn a_node_stops_when_its_server_is_gone() {
    let nats = Nats::start();
    let dir = tempfile::tempdir().unwrap();
    let fa = dir.path().join("a");
    let (mut a, addr_a) = node(dir.path(), &fa, &nats, "a");
    let (_, token) = write(&addr_a, "team", "before the server went away");
    assert_eq!(texts(&addr_a, "team", &token), vec!["before the server went away".to_string()]);
    drop(nats);
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    signal(&a, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = a.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = a.kill();
            panic!("the node did not stop within 30 s of SIGTERM with its server gone");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!("stopped in {:.1} s with its server gone: {status}", started.elapsed().as_secs_f64());
    assert!(status.code().is_some(), "{status}");
    // Its files hold the write.
    let lines: usize = (0..4)
        .map(|p| {
            let file = fa.join(format!("p{p:03}.mnemon"));
            run_at(dir.path(), &file, &["export", "--all"], None).ok().to_string().lines().count()
        })
        .sum();
    assert_eq!(lines, 1);
}

/// Signal `sig` (`-STOP`, `-CONT`, `-TERM`) to a child.
fn signal(child: &std::process::Child, sig: &str) {
    assert!(
        std::process::Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap().success()
    );
}

/// What the agents saw: acknowledged writes `(namespace, text, token)`, reads that missed an
/// acknowledged write, and how many requests failed (a node or a server away).
#[derive(Default)]
struct Seen {
    acknowledged: Vec<(String, String, String)>,
    missed: Vec<String>,
    failed: usize,
}

#[test]
fn three_nodes_on_three_servers_lose_no_acknowledged_write_through_kills_and_stops() {
    use std::sync::{Arc, Mutex, RwLock};
    let mut servers = Nats::cluster();
    let urls = Nats::urls(&servers);
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<std::path::PathBuf> = (0..3).map(|i| dir.path().join(format!("n{i}"))).collect();
    let start = |i: usize| {
        let args = [
            "--no-auth",
            "--cluster",
            urls.as_str(),
            "--node",
            ["a", "b", "c"][i],
            "--partition-count",
            "4",
            "--replicas",
            "3",
        ];
        let (child, addr, stderr) = spawn_serve(dir.path(), &files[i], &args);
        std::thread::spawn(move || {
            use std::io::BufRead;
            for _ in stderr.lines() {}
        });
        (Reaped(child), addr)
    };
    let mut nodes: Vec<(Reaped, String)> = (0..3).map(start).collect();
    let addrs: Arc<RwLock<Vec<String>>> = Arc::new(RwLock::new(nodes.iter().map(|n| n.1.clone()).collect()));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let agents: Vec<_> = (0..32)
        .map(|k| {
            let (addrs, seen, stop) = (addrs.clone(), seen.clone(), stop.clone());
            std::thread::spawn(move || {
                let c = reqwest::blocking::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
                let ns = format!("agent:{}", k % 8);
                let mut i = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    i += 1;
                    let all = addrs.read().unwrap().clone();
                    let (w, r) = (&all[(k + i) % 3], &all[(k + i + 1) % 3]);
                    let text = format!("agent {k} write {i}");
                    let sent = c
                        .post(format!("http://{w}/v1/ns/{ns}/memories"))
                        .json(&json!({"kind": "learning", "text": text}))
                        .send();
                    let token = match sent {
                        Ok(resp) if resp.status().is_success() => resp
                            .headers()
                            .get(CONSISTENCY)
                            .and_then(|t| t.to_str().ok())
                            .unwrap_or_default()
                            .to_string(),
                        other => {
                            if std::env::var_os("MNEMON_TEST_VERBOSE").is_some() {
                                match other {
                                    Ok(resp) => eprintln!(
                                        "write: {} {}",
                                        resp.status(),
                                        resp.text().unwrap_or_default()
                                    ),
                                    Err(e) => eprintln!("write: {e}"),
                                }
                            }
                            seen.lock().unwrap().failed += 1;
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        }
                    };
                    seen.lock().unwrap().acknowledged.push((ns.clone(), text.clone(), token.clone()));
                    // Read it back on another node with its token.
                    let read = c
                        .get(format!("http://{r}/v1/ns/{ns}/records?limit=1000"))
                        .header(CONSISTENCY, &token)
                        .send();
                    match read {
                        Ok(resp) if resp.status().is_success() => {
                            let v: Value = resp.json().unwrap();
                            let found =
                                v["records"].as_array().unwrap().iter().any(|x| x["text"] == text.as_str());
                            if !found {
                                seen.lock().unwrap().missed.push(format!("{text} on {r} with {token}"));
                            }
                        }
                        _ => seen.lock().unwrap().failed += 1,
                    }
                }
            })
        })
        .collect();
    let pause = |ms| std::thread::sleep(Duration::from_millis(ms));
    pause(1500);
    // A NATS server and a node die; another node stops (and lags).
    servers[0].kill();
    nodes[2].0.kill().unwrap();
    nodes[2].0.wait().unwrap();
    signal(&nodes[1].0, "-STOP");
    pause(1500);
    servers[0].restart();
    let (child, addr) = start(2);
    nodes[2] = (child, addr.clone());
    addrs.write().unwrap()[2] = addr;
    pause(1000);
    signal(&nodes[1].0, "-CONT");
    pause(2000);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for a in agents {
        a.join().unwrap();
    }
    let seen = seen.lock().unwrap();
    assert!(seen.missed.is_empty(), "reads with tokens missed acknowledged writes: {:?}", seen.missed);
    assert!(
        seen.acknowledged.len() > 100,
        "{} acknowledged, {} failed",
        seen.acknowledged.len(),
        seen.failed
    );
    // Every node applies every partition to its end.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let lines = run_at(
            dir.path(),
            &files[0],
            &["--json", "cluster", "status", "--cluster", urls.as_str(), "--partition-count", "4"],
            None,
        )
        .json_lines();
        let nodes_up: std::collections::BTreeSet<&str> =
            lines.iter().filter_map(|l| l["node"].as_str()).collect();
        if nodes_up.len() == 3 && lines.len() == 12 && lines.iter().all(|l| l["lag"] == 0) {
            break;
        }
        assert!(Instant::now() < deadline, "{lines:?}");
        pause(300);
    }
    for (child, _) in &mut nodes {
        signal(child, "-TERM");
        assert!(child.wait().unwrap().success());
    }
    // The same lines everywhere; every acknowledged write there once.
    let mut all_texts: Vec<String> = Vec::new();
    for p in 0..4 {
        let export = |d: &std::path::Path| {
            run_at(dir.path(), &d.join(format!("p{p:03}.mnemon")), &["--json", "export", "--all"], None)
                .ok()
                .to_string()
        };
        let first = export(&files[0]);
        for f in &files[1..] {
            assert!(export(f) == first, "partition {p} differs between nodes");
        }
        all_texts.extend(first.lines().filter_map(|l| {
            serde_json::from_str::<Value>(l).ok().and_then(|v| v["body"]["text"].as_str().map(str::to_string))
        }));
    }
    let wrong: Vec<(&String, &String, usize)> = seen
        .acknowledged
        .iter()
        .map(|(_, text, token)| (text, token, all_texts.iter().filter(|t| *t == text).count()))
        .filter(|x| x.2 != 1)
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} acknowledged writes not there once: {:?}",
        wrong.len(),
        seen.acknowledged.len(),
        &wrong[..wrong.len().min(10)]
    );
    eprintln!(
        "{} acknowledged writes, {} requests failed while servers and nodes were away",
        seen.acknowledged.len(),
        seen.failed
    );
}

#[test]
fn a_request_for_a_partition_hosted_elsewhere_is_redirected_there() {
    let nats = Nats::start();
    let dir = tempfile::tempdir().unwrap();
    let url = nats.url();
    let start = |name: &str, parts: &str| {
        let files = dir.path().join(name);
        let args = [
            "--no-auth",
            "--cluster",
            url.as_str(),
            "--node",
            name,
            "--partition-count",
            "4",
            "--partitions",
            parts,
        ];
        let (child, addr, stderr) = spawn_serve(dir.path(), &files, &args);
        std::thread::spawn(move || {
            use std::io::BufRead;
            for _ in stderr.lines() {}
        });
        (Reaped(child), addr)
    };
    let (mut a, addr_a) = start("a", "0-1");
    let (mut b, addr_b) = start("b", "2,3");
    let ns =
        (0..100).map(|i| format!("project:{i}")).find(|n| mnemon_cluster::partition_of(n, 4) >= 2).unwrap();
    let plain = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    // Once b's status is published, a sends b's namespaces to b.
    let deadline = Instant::now() + Duration::from_secs(20);
    let location = loop {
        let r = plain
            .post(format!("http://{addr_a}/v1/ns/{ns}/memories?x=1"))
            .json(&json!({"kind": "learning", "text": "t"}))
            .send()
            .unwrap();
        if r.status().as_u16() == 307 {
            break r.headers()["location"].to_str().unwrap().to_string();
        }
        assert_eq!(r.status().as_u16(), 503, "before b is known: {}", r.text().unwrap_or_default());
        assert!(Instant::now() < deadline, "no redirect");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(location, format!("http://{addr_b}/v1/ns/{ns}/memories?x=1"));
    // A client that follows redirects writes and reads through either node.
    let (_, token) = write(&addr_a, &ns, "through a, stored by b");
    assert_eq!(texts(&addr_a, &ns, &token), vec!["through a, stored by b".to_string()]);
    for child in [&mut a, &mut b] {
        let _ = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        assert!(child.wait().unwrap().success());
    }
}
