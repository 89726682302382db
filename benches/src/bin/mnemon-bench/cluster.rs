//! `mnemon-bench cluster`: `mnemon serve --cluster` nodes as child processes on a JetStream
//! cluster of three nats-servers (streams of three replicas), all on loopback, and N agent
//! threads. For one node and for three: durable writes (each agent to one node, spread over
//! the nodes) with their throughput and latencies, then reads (searches) spread the same way.
//! With three nodes also: the catch-up of a node stopped while the others took writes
//! (entries applied per second once it is back), and the failover of a client whose node is
//! killed (from the SIGKILL to its next acknowledged write, through another node).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mnemon_cluster::testing::Nats;
use serde_json::{Value, json};

use crate::mcp::percentiles;
use crate::report::{Out, table};

/// The workload's shape.
pub struct Load {
    pub agents: usize,
    pub seconds: u64,
    pub partitions: u32,
}

/// A node: its process, its address, its files.
struct Node {
    child: Child,
    addr: String,
    files: PathBuf,
    name: String,
}

fn start(mnemon: &Path, files: &Path, name: &str, urls: &str, partitions: u32) -> Result<Node> {
    let mut child = Command::new(mnemon)
        .arg("--db")
        .arg(files)
        .args(["serve", "--no-auth", "--exclusive", "--listen", "127.0.0.1:0", "--queue", "1024"])
        .args([
            "--cluster",
            urls,
            "--node",
            name,
            "--replicas",
            "3",
            "--partition-count",
            &partitions.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start mnemon serve --cluster")?;
    let stderr = child.stderr.take().context("no stderr")?;
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let addr = loop {
        match lines.next() {
            Some(Ok(l)) if l.contains("listening on") => {
                break l
                    .split("http://")
                    .nth(1)
                    .and_then(|r| r.split_whitespace().next())
                    .unwrap_or_default()
                    .to_string();
            }
            Some(Ok(_)) => continue,
            _ => {
                let _ = child.kill();
                bail!("mnemon serve --cluster did not start");
            }
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Ok(Node { child, addr, files: files.to_path_buf(), name: name.to_string() })
}

fn stop(node: &mut Node) {
    let _ = Command::new("kill").args(["-TERM", &node.child.id().to_string()]).status();
    let _ = node.child.wait();
}

/// Agents calling `call(agent, i, client, addr)` on the nodes at `addrs` (agent k on node
/// k mod n) until `seconds` pass: per agent its latencies of successful calls, and failures.
fn drive(
    addrs: &[String],
    agents: usize,
    seconds: u64,
    call: impl Fn(usize, usize, &reqwest::blocking::Client, &str) -> bool + Sync,
) -> (Vec<f64>, usize, f64) {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let results: Vec<(Vec<f64>, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..agents)
            .map(|a| {
                let (addr, call) = (addrs[a % addrs.len()].clone(), &call);
                s.spawn(move || {
                    let mut lat = Vec::new();
                    let mut failed = 0;
                    let Ok(c) = reqwest::blocking::Client::builder().timeout(Duration::from_secs(30)).build()
                    else {
                        return (lat, 1);
                    };
                    let mut i = 0;
                    while Instant::now() < deadline {
                        i += 1;
                        let t = Instant::now();
                        if call(a, i, &c, &addr) {
                            lat.push(t.elapsed().as_secs_f64() * 1e3);
                        } else {
                            failed += 1;
                        }
                    }
                    (lat, failed)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let failed = results.iter().map(|r| r.1).sum();
    (results.into_iter().flat_map(|r| r.0).collect(), failed, elapsed)
}

fn write(a: usize, i: usize, c: &reqwest::blocking::Client, addr: &str) -> bool {
    let ns = format!("agent:{}", a % 32);
    c.post(format!("http://{addr}/v1/ns/{ns}/memories"))
        .json(&json!({"kind": "learning", "text": format!("agent {a} learned fact {i} about topic{} and module{}", i % 37, i % 11)}))
        .send()
        .is_ok_and(|r| r.status().is_success())
}

fn search(a: usize, i: usize, c: &reqwest::blocking::Client, addr: &str) -> bool {
    let ns = format!("agent:{}", a % 32);
    c.get(format!("http://{addr}/v1/ns/{ns}/search?query=topic{}+module{}&limit=10", i % 37, i % 11))
        .send()
        .is_ok_and(|r| r.status().is_success())
}

/// The greatest lag of `node` over every partition (`None` before it has published).
fn lag(mnemon: &Path, urls: &str, partitions: u32, node: &str) -> Result<Option<u64>> {
    let out = Command::new(mnemon)
        .args([
            "--json",
            "cluster",
            "status",
            "--cluster",
            urls,
            "--partition-count",
            &partitions.to_string(),
        ])
        .output()?;
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let mine: Vec<&Value> = lines.iter().filter(|l| l["node"] == node).collect();
    if mine.len() < partitions as usize {
        return Ok(None);
    }
    Ok(mine.iter().map(|l| l["lag"].as_u64().unwrap_or(u64::MAX)).max())
}

/// Run it.
pub fn run(out: &mut Out, mnemon: &Path, load: &Load) -> Result<()> {
    let Load { agents, seconds, partitions } = *load;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut report = Vec::new();
    for nodes in [1usize, 3] {
        let servers = Nats::cluster();
        let urls = Nats::urls(&servers);
        let dir = tempfile::tempdir()?;
        let mut running: Vec<Node> = (0..nodes)
            .map(|i| start(mnemon, &dir.path().join(format!("n{i}")), &format!("n{i}"), &urls, partitions))
            .collect::<Result<_>>()?;
        let addrs: Vec<String> = running.iter().map(|n| n.addr.clone()).collect();
        eprintln!("{nodes} node(s) up: writes for {seconds} s");
        let (w, wf, we) = drive(&addrs, agents, seconds, write);
        eprintln!("searches for {seconds} s");
        let (r, rf, re) = drive(&addrs, agents, seconds, search);
        let (wp, rp) = (percentiles(w.clone()), percentiles(r.clone()));
        rows.push(vec![
            nodes.to_string(),
            format!("{:.0}", w.len() as f64 / we),
            format!("{:.1}", wp.0),
            format!("{:.1}", wp.2),
            format!("{:.0}", r.len() as f64 / re),
            format!("{:.1}", rp.0),
            format!("{:.1}", rp.2),
            format!("{wf}/{rf}"),
        ]);
        let mut extra = json!({});
        if nodes == 3 {
            // Catch-up: the third node away while the others take writes for `seconds`.
            eprintln!("a node away: writes for {seconds} s");
            stop(&mut running[2]);
            let (w2, _, _) = drive(&addrs[..2], agents, seconds, write);
            eprintln!("the node back: catching up");
            let behind = w2.len();
            let (files, name) = (running[2].files.clone(), running[2].name.clone());
            let t = Instant::now();
            running[2] = start(mnemon, &files, &name, &urls, partitions)?;
            let deadline = Instant::now() + Duration::from_secs(300);
            while lag(mnemon, &urls, partitions, &name)? != Some(0) {
                if Instant::now() > deadline {
                    bail!("the restarted node did not catch up");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let catch_up = t.elapsed().as_secs_f64();
            eprintln!("failover");
            // Failover: a client's node dies; its next acknowledged write goes through another.
            let c = reqwest::blocking::Client::builder().timeout(Duration::from_secs(30)).build()?;
            let _ = running[0].child.kill();
            let _ = running[0].child.wait();
            let killed = Instant::now();
            let mut i = 0;
            let failover = loop {
                i += 1;
                let addr = &addrs[if i == 1 { 0 } else { 1 }];
                if write(0, i, &c, addr) {
                    break killed.elapsed().as_secs_f64() * 1e3;
                }
            };
            extra = json!({"catch_up_entries": behind, "catch_up_s": catch_up, "catch_up_per_s": behind as f64 / catch_up, "failover_ms": failover});
            rows.push(vec![format!(
                "3 nodes: a node away for {seconds} s ({behind} writes) caught up {catch_up:.1} s after its restart ({:.0} entries/s, start included); a client whose node was killed wrote through another {failover:.1} ms after the SIGKILL",
                behind as f64 / catch_up
            )]);
        }
        report.push(json!({"nodes": nodes, "writes_per_s": w.len() as f64 / we, "write_p50_ms": wp.0, "write_p99_ms": wp.2,
            "reads_per_s": r.len() as f64 / re, "read_p50_ms": rp.0, "read_p99_ms": rp.2, "failed_writes": wf, "failed_reads": rf, "more": extra}));
        for n in &mut running {
            stop(n);
        }
        drop(servers);
    }
    if out.json {
        out.json_line(
            &json!({"agents": agents, "seconds": seconds, "partitions": partitions, "runs": report}),
        )?;
    } else {
        out.line(format!(
            "mnemon serve --cluster: 3 nats-servers (streams of 3 replicas), {partitions} partitions, {agents} agents spread over the nodes, {seconds} s per phase, all on this machine"
        ))?;
        let (table_rows, notes): (Vec<Vec<String>>, Vec<Vec<String>>) =
            rows.into_iter().partition(|r| r.len() > 1);
        out.line(table(
            &[
                "nodes",
                "writes/s",
                "write p50 ms",
                "write p99 ms",
                "searches/s",
                "search p50 ms",
                "search p99 ms",
                "failed w/r",
            ],
            &table_rows,
        ))?;
        for n in notes {
            out.line(n.join(""))?;
        }
    }
    Ok(())
}
