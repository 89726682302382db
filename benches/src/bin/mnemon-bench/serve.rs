//! `mnemon-bench serve`: a farm of agents against `mnemon serve`, the way they meet it: a real
//! server process on a loopback port, N agent threads each with its own keep-alive HTTP
//! connection, a mix of durable writes, as-of listings, searches and reads over many
//! namespaces, for a bounded time. It prints throughput and p50/p95/p99 per operation and
//! every non-2xx answer by status, then checks that every acknowledged write is in the
//! server's export. The agents speak HTTP/1.1 through a small client of their own
//! ([`crate::http1`]), so that generating the load costs the shared cores little. Side by side in the same run, the writes alone through N `mnemon mcp`
//! stdio processes on one file (today's way for many agents).

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::mcp::percentiles;
use crate::report::{Out, table};

/// What one agent saw: per operation its latencies (ms), the statuses that were not 2xx, and
/// the ids of the writes acknowledged, by namespace.
#[derive(Default)]
struct Seen {
    latencies: BTreeMap<&'static str, Vec<f64>>,
    failures: BTreeMap<u16, u64>,
    written: Vec<(String, String)>,
}

/// The workload's operations, in the order of its mix: of every 10 calls, 6 durable writes,
/// 2 searches, 1 listing as of a past time, 1 read of a record written.
const MIX: [&str; 10] =
    ["write", "write", "search", "write", "list_as_of", "write", "search", "write", "get", "write"];

/// The workload's shape.
pub struct Load {
    /// Concurrent agents.
    pub agents: usize,
    /// Namespaces they spread over.
    pub namespaces: usize,
    /// How long to run.
    pub seconds: u64,
    /// Also run the same load through `mnemon mcp` stdio processes.
    pub stdio: bool,
    /// Serve with `--exclusive`.
    pub exclusive: bool,
    /// Kill the server with SIGKILL this long after the start, and start it again on the same
    /// address (the agents' calls meanwhile fail and are not acknowledged).
    pub kill_at: Option<Duration>,
    /// Also run the vector part against a Chroma server from this virtual environment.
    pub chroma: Option<std::path::PathBuf>,
    /// Writes per write call: above 1, each write call is one batch of this many
    /// (`POST /v1/ns/{ns}/batch`, one durable commit).
    pub batch: usize,
    /// Only writes (no searches, listings or reads).
    pub writes_only: bool,
}

/// Run the workload: `agents` threads over `namespaces` namespaces for `seconds`.
pub fn run(out: &mut Out, mnemon: &Path, load: &Load) -> Result<()> {
    let Load { agents, namespaces, seconds, stdio, exclusive, kill_at, ref chroma, batch, writes_only } =
        *load;
    let mix: &[&str] = if writes_only { &["write"] } else { &MIX };
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("served.redb");
    let token = create_token(mnemon, &db)?;
    let (server, addr) = start_server(mnemon, &db, agents, exclusive, "127.0.0.1:0")?;
    let cpu_before = (cpu_seconds(&server.id().to_string()), cpu_seconds("self"));
    let server = std::sync::Mutex::new(server);
    let url = format!("http://{addr}");
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let mut restarted: Option<Result<Duration>> = None;
    let seen: Vec<Seen> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..agents)
            .map(|a| {
                scope.spawn({
                    let (url, token) = (url.clone(), token.clone());
                    move || agent(a, &url, &token, (namespaces, mix, batch), deadline)
                })
            })
            .collect();
        if let Some(at) = kill_at {
            std::thread::sleep((started + at).saturating_duration_since(Instant::now()));
            restarted = Some(kill_and_restart(&server, mnemon, &db, agents, exclusive, &addr));
        }
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let mut server = server.into_inner().map_err(|_| anyhow::anyhow!("the server's handle was poisoned"))?;
    let restarted = restarted.transpose()?;
    let elapsed = started.elapsed().as_secs_f64();
    // The processor time the server (unless it was restarted) and the agents took during the run.
    let cpu = match (cpu_before, cpu_seconds(&server.id().to_string()), cpu_seconds("self")) {
        ((Some(s0), Some(c0)), Some(s1), Some(c1)) if kill_at.is_none() => Some((s1 - s0, c1 - c0)),
        _ => None,
    };
    // Every acknowledged write is in the export.
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(600)).build()?;
    let mut exported = HashSet::new();
    for n in 0..namespaces {
        let text = client
            .get(format!("{url}/v1/ns/{}/export", ns_name(n)))
            .bearer_auth(&token)
            .send()?
            .error_for_status()?
            .text()?;
        for line in text.lines() {
            let v: Value = serde_json::from_str(line)?;
            exported.insert(v["id"].as_str().unwrap_or_default().to_string());
        }
    }
    let commits =
        client.get(format!("{url}/metrics")).bearer_auth(&token).send()?.error_for_status()?.text()?;
    let metric = |name: &str| {
        commits.lines().find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok()).unwrap_or(0.0)
    };
    // The group commits since the server (re)started: how many, write calls and time each.
    let (commits, jobs, commit_s) = (
        metric("mnemon_commit_jobs_count "),
        metric("mnemon_commit_jobs_sum "),
        metric("mnemon_commit_seconds_sum{durable=\"true\"} "),
    );
    let per_commit = (commits > 0.0).then(|| (jobs / commits, commit_s * 1e3 / commits));
    let _ = Command::new("kill").args(["-TERM", &server.id().to_string()]).status();
    let stopped = server.wait()?;
    let acknowledged: Vec<(String, String)> = seen.iter().flat_map(|s| s.written.iter().cloned()).collect();
    let lost = acknowledged.iter().filter(|(_, id)| !exported.contains(id)).count();

    let mut latencies: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut failures: BTreeMap<u16, u64> = BTreeMap::new();
    for s in seen {
        for (op, l) in s.latencies {
            latencies.entry(op).or_default().extend(l);
        }
        for (st, n) in s.failures {
            *failures.entry(st).or_default() += n;
        }
    }
    let total: usize = latencies.values().map(Vec::len).sum();
    let rows: Vec<Vec<String>> = latencies
        .iter()
        .map(|(op, l)| {
            let (p50, p95, p99) = percentiles(l.clone());
            vec![
                op.to_string(),
                l.len().to_string(),
                format!("{:.0}", l.len() as f64 / elapsed),
                format!("{p50:.2}"),
                format!("{p95:.2}"),
                format!("{p99:.2}"),
            ]
        })
        .collect();
    let writes_per_s = acknowledged.len() as f64 / elapsed;
    // Processor time per call, in microseconds: the server's and the agents'.
    let cpu_us = cpu.map(|(s, c)| (s * 1e6 / total.max(1) as f64, c * 1e6 / total.max(1) as f64));
    let stdio_rates =
        if stdio { Some(stdio_load(mnemon, dir.path(), (agents, namespaces, mix), seconds)?) } else { None };
    let stdio_rate = stdio_rates.map(|r| r.0);
    let chroma = chroma.as_deref().map(|venv| crate::chroma::run(venv, agents, seconds)).transpose()?;
    if out.json {
        out.json_line(&json!({
            "agents": agents, "namespaces": namespaces, "batch": batch, "seconds": elapsed, "calls": total,
            "acknowledged_writes": acknowledged.len(), "writes_per_s": writes_per_s, "lost": lost,
            "failures": failures, "server_exit": stopped.code(), "stdio_writes_per_s": stdio_rate, "stdio_calls_per_s": stdio_rates.map(|r| r.1),
            "writes_only": writes_only, "commits": commits, "jobs_per_commit": per_commit.map(|c| c.0), "commit_ms": per_commit.map(|c| c.1), "server_cpu_us_per_call": cpu_us.map(|c| c.0), "agents_cpu_us_per_call": cpu_us.map(|c| c.1),
            "killed_at_s": kill_at.map(|k| k.as_secs_f64()), "restart_ms": restarted.map(|r| r.as_secs_f64() * 1e3),
            "chroma": chroma.as_ref().map(|c| json!({"adds_per_s": c.adds_per_s, "add_p50_ms": c.add_ms.0, "add_p99_ms": c.add_ms.1,
                "query_p50_ms": c.query_ms.0, "query_p99_ms": c.query_ms.1, "failures": c.failures, "lost": c.lost})),
            "operations": latencies.iter().map(|(op, l)| { let (a, b, c) = percentiles(l.clone()); json!({"op": op, "calls": l.len(), "p50_ms": a, "p95_ms": b, "p99_ms": c}) }).collect::<Vec<_>>(),
        }))?;
    } else {
        out.line(format!(
            "mnemon serve: {agents} agents, {namespaces} namespaces, {batch} write(s) per write call, {elapsed:.1} s, {total} calls ({:.0}/s)",
            total as f64 / elapsed
        ))?;
        out.line(table(&["operation", "calls", "per s", "p50 ms", "p95 ms", "p99 ms"], &rows))?;
        if let (Some((server_us, agents_us)), Some((server_s, _))) = (cpu_us, cpu) {
            out.line(format!(
                "processor time per call: server {server_us:.0} µs, agents {agents_us:.0} µs (the server used {:.2} of the machine's {} cores)",
                server_s / elapsed,
                std::thread::available_parallelism().map_or(1, usize::from)
            ))?;
        }
        out.line(format!("acknowledged durable writes: {} ({writes_per_s:.0}/s); lost: {lost}; non-2xx: {failures:?}; server exit: {:?}", acknowledged.len(), stopped.code()))?;
        if let Some((jobs, ms)) = per_commit {
            out.line(format!(
                "group commits: {commits:.0} ({jobs:.1} write calls each, {ms:.2} ms each to write its pages and fsync them; {:.0} % of the run in those)",
                commits * ms / 10.0 / elapsed
            ))?;
        }
        if let (Some(k), Some(r)) = (kill_at, restarted) {
            out.line(format!(
                "killed with SIGKILL at {:.1} s and serving again {:.0} ms later; every acknowledged write was checked in the export after the restart",
                k.as_secs_f64(),
                r.as_secs_f64() * 1e3
            ))?;
        }
        if let Some(c) = &chroma {
            out.line(format!(
                "Chroma server, {agents} agents adding one 384-d embedding with its document and querying 10 nearest (6 to 2): {:.0} adds/s ({:.2}x mnemon's writes), add p50/p99 {:.2}/{:.2} ms, query p50/p99 {:.2}/{:.2} ms, {} failed, {} lost",
                c.adds_per_s, c.adds_per_s / writes_per_s, c.add_ms.0, c.add_ms.1, c.query_ms.0, c.query_ms.1, c.failures, c.lost
            ))?;
        }
        if let Some((w, c)) = stdio_rates {
            out.line(format!(
                "the same load through {agents} `mnemon mcp` stdio processes on one file: {w:.0} durable writes/s (the server took {:.1}x), {c:.0} calls/s",
                writes_per_s / w
            ))?;
        }
    }
    if lost > 0 {
        bail!("{lost} acknowledged writes are not in the export");
    }
    Ok(())
}

/// The processor time (user and system) a process has taken so far, in seconds: `pid` a
/// process id or `self`; `None` where `/proc` does not tell (not Linux).
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which is in parentheses and may hold spaces):
    // utime and stime are the 14th and 15th of the line, in clock ticks (USER_HZ, 100/s).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// The text of agent `a`'s memory `fact`, made at its `i`-th call, about a module.
fn memory_text(a: usize, fact: &str, module: usize, i: usize) -> String {
    format!("agent {a} learned fact {fact} about topic{} and module{module}", i % 37)
}

/// The search an agent makes at its `i`-th call (words of the memories' texts).
fn search_query(i: usize) -> String {
    format!("topic{} module{}", i % 37, i % 11)
}

fn ns_name(n: usize) -> String {
    format!("project:bench-{n}")
}

fn create_token(mnemon: &Path, db: &Path) -> Result<String> {
    let out = Command::new(mnemon)
        .args(["--db"])
        .arg(db)
        .args(["--json", "token", "create", "--name", "bench", "--allow-ns", "*", "--scope", "write"])
        .output()
        .context("cannot run mnemon")?;
    if !out.status.success() {
        bail!("mnemon token create: {}", String::from_utf8_lossy(&out.stderr));
    }
    let v: Value = serde_json::from_slice(&out.stdout)?;
    Ok(v["token"].as_str().context("no token")?.to_string())
}

/// SIGKILL the server, then start it again on `addr`: how long until it listens again.
fn kill_and_restart(
    server: &std::sync::Mutex<Child>,
    mnemon: &Path,
    db: &Path,
    agents: usize,
    exclusive: bool,
    addr: &str,
) -> Result<Duration> {
    let mut child = server.lock().map_err(|_| anyhow::anyhow!("the server's handle was poisoned"))?;
    child.kill().context("cannot kill the server")?;
    child.wait()?;
    let t = Instant::now();
    // The port may be held for a moment after the kill: try again briefly.
    loop {
        match start_server(mnemon, db, agents, exclusive, addr) {
            Ok((new, _)) => {
                *child = new;
                return Ok(t.elapsed());
            }
            Err(e) if t.elapsed() > Duration::from_secs(30) => {
                return Err(e.context("cannot restart the server"));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn start_server(
    mnemon: &Path,
    db: &Path,
    agents: usize,
    exclusive: bool,
    listen: &str,
) -> Result<(Child, String)> {
    let mut child = Command::new(mnemon)
        .arg("--db")
        .arg(db)
        .args(["serve", "--listen", listen, "--queue", &(agents * 4).to_string()])
        .args(exclusive.then_some("--exclusive"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start mnemon serve")?;
    let mut line = String::new();
    let mut stderr = BufReader::new(child.stderr.take().context("no stderr")?);
    stderr.read_line(&mut line)?;
    // Drain the rest of the server's log, so that it never waits on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let Some(addr) = line.split("http://").nth(1).and_then(|r| r.split_whitespace().next()) else {
        let _ = child.kill();
        let _ = child.wait();
        bail!("mnemon serve did not start: {line}");
    };
    Ok((child, addr.to_string()))
}

/// One agent: calls in the mix's order until the deadline, on one keep-alive connection; each
/// write call writes `batch` memories.
fn agent(
    a: usize,
    url: &str,
    token: &str,
    (namespaces, mix, batch): (usize, &[&'static str], usize),
    deadline: Instant,
) -> Seen {
    let mut seen = Seen::default();
    let mut conn = crate::http1::Conn::new(crate::http1::split_url(url).0);
    let ns = ns_name(a % namespaces);
    let mut i = 0usize;
    let mut mine: Vec<String> = Vec::new();
    while Instant::now() < deadline {
        let op = mix[i % mix.len()];
        i += 1;
        let t = Instant::now();
        let (method, path, body) = match op {
            "write" if batch > 1 => {
                let writes: Vec<Value> = (0..batch)
                    .map(|b| json!({"op": "remember", "kind": "learning", "text": memory_text(a, &format!("{i}.{b}"), b % 11, i)}))
                    .collect();
                ("POST", format!("/v1/ns/{ns}/batch"), Some(json!({ "writes": writes })))
            }
            "write" => (
                "POST",
                format!("/v1/ns/{ns}/memories"),
                Some(json!({"kind": "learning", "text": memory_text(a, &i.to_string(), i % 11, i)})),
            ),
            "search" => (
                "GET",
                format!("/v1/ns/{ns}/search?query={}&limit=10", search_query(i).replace(' ', "+")),
                None,
            ),
            "list_as_of" => ("GET", format!("/v1/ns/{ns}/records?limit=20&as_of=2020-01-01"), None),
            _ => match mine.last() {
                Some(id) => ("GET", format!("/v1/ns/{ns}/records/{id}"), None),
                None => continue,
            },
        };
        let body = body.map(|b| b.to_string().into_bytes());
        match conn.call(method, &path, Some(token), body.as_deref()) {
            Ok(r) if (200..300).contains(&r.status) => {
                seen.latencies.entry(op).or_default().push(t.elapsed().as_secs_f64() * 1e3);
                if op == "write" {
                    let body: Value = serde_json::from_slice(&r.body).unwrap_or_default();
                    // One memory, or a batch's results.
                    let ids: Vec<&str> = match body["results"].as_array() {
                        Some(results) => results.iter().filter_map(|r| r["id"].as_str()).collect(),
                        None => body["id"].as_str().into_iter().collect(),
                    };
                    for id in ids {
                        mine.push(id.to_string());
                        seen.written.push((ns.clone(), id.to_string()));
                    }
                }
            }
            Ok(r) => *seen.failures.entry(r.status).or_default() += 1,
            Err(_) => *seen.failures.entry(0).or_default() += 1,
        }
    }
    seen
}

/// The same load through `agents` `mnemon mcp` processes on one file, each driven by its own
/// thread for `seconds`, calling the MCP tools in the mix's order (`remember`, `recall`,
/// `list` as of a past time, `get` of a memory it wrote): durable writes and calls per second.
fn stdio_load(
    mnemon: &Path,
    dir: &Path,
    (agents, namespaces, mix): (usize, usize, &[&'static str]),
    seconds: u64,
) -> Result<(f64, f64)> {
    let db = dir.join("stdio.redb");
    let mut procs = Vec::new();
    for a in 0..agents {
        let mut child = Command::new(mnemon)
            .arg("--db")
            .arg(&db)
            .args(["--ns", &ns_name(a % namespaces), "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut stdin = child.stdin.take().context("stdin")?;
        let mut stdout = BufReader::new(child.stdout.take().context("stdout")?);
        rpc(
            &mut stdin,
            &mut stdout,
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        )?;
        writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        procs.push((child, stdin, stdout));
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let (writes, calls) = std::thread::scope(|scope| {
        let handles: Vec<_> = procs
            .iter_mut()
            .enumerate()
            .map(|(a, (_, stdin, stdout))| {
                scope.spawn(move || {
                    let (mut writes, mut calls) = (0usize, 0usize);
                    let mut last: Option<String> = None;
                    for i in 0usize.. {
                        if Instant::now() >= deadline {
                            break;
                        }
                        let op = mix[i % mix.len()];
                        let (tool, arguments) = match (op, &last) {
                            ("write", _) => ("remember", json!({"kind": "learning", "text": memory_text(a, &i.to_string(), i % 11, i)})),
                            ("search", _) => ("recall", json!({"query": search_query(i), "limit": 10})),
                            ("list_as_of", _) => ("list", json!({"limit": 20, "as_of": "2020-01-01"})),
                            (_, Some(id)) => ("get", json!({"id": id})),
                            (_, None) => continue,
                        };
                        let args = json!({"name": tool, "arguments": arguments});
                        let Ok(answer) = rpc(stdin, stdout, i as u64 + 1, "tools/call", args) else { break };
                        calls += 1;
                        if op == "write" {
                            writes += 1;
                            last = answer["result"]["structuredContent"]["id"].as_str().map(str::to_string);
                        }
                    }
                    (writes, calls)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or((0, 0))).fold((0, 0), |t, c| (t.0 + c.0, t.1 + c.1))
    });
    let elapsed = started.elapsed().as_secs_f64();
    for (mut child, stdin, _) in procs {
        drop(stdin);
        let _ = child.wait();
    }
    Ok((writes as f64 / elapsed, calls as f64 / elapsed))
}

fn rpc(
    stdin: &mut impl Write,
    stdout: &mut impl BufRead,
    id: u64,
    method: &str,
    params: Value,
) -> Result<Value> {
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
    stdin.flush()?;
    loop {
        let mut line = String::new();
        if stdout.read_line(&mut line)? == 0 {
            bail!("the server closed its output");
        }
        let v: Value = serde_json::from_str(&line)?;
        if v["id"] == id {
            if v.get("error").is_some() || v["result"]["isError"] == true {
                bail!("{method} failed: {v}");
            }
            return Ok(v);
        }
    }
}
