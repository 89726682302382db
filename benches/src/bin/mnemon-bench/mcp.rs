//! `mnemon-bench mcp`: the latency of each knowledge-graph tool call, measured the way a
//! client sees it: a real `mnemon mcp` child process, JSON-RPC over its stdin and stdout,
//! the clock read around each request and its response. Optionally the same workload against
//! another server command (the reference `@modelcontextprotocol/server-memory`, fetched by
//! scripts/fetch-reference-memory-server.sh), side by side in the same run.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::report::{Out, table};

/// A server under test, and a synchronous JSON-RPC client on its stdio.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Client {
    fn spawn(mut cmd: Command) -> Result<Client> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start the server")?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut c = Client { child, stdin, stdout, next: 1 };
        c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mnemon-bench", "version": "0"}}),
        )?;
        c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(c)
    }

    fn send(&mut self, v: &Value) -> Result<()> {
        let w = self.stdin.as_mut().context("stdin closed")?;
        // One line, one write, as MCP clients send them (formatting straight into the pipe
        // would cost a system call per fragment, on both sides).
        let mut line = v.to_string();
        line.push('\n');
        w.write_all(line.as_bytes())?;
        w.flush()?;
        Ok(())
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("the server closed its output");
            }
            let v: Value =
                serde_json::from_str(&line).context("the server wrote something that is not JSON")?;
            if v["id"] == id {
                if v.get("error").is_some() || v["result"]["isError"] == true {
                    bail!("{method} failed: {v}");
                }
                return Ok(v);
            }
        }
    }

    fn call(&mut self, tool: &str, args: Value) -> Result<f64> {
        let t = Instant::now();
        self.request("tools/call", json!({"name": tool, "arguments": args}))?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    }

    fn close(mut self) -> Result<()> {
        drop(self.stdin.take());
        self.child.wait()?;
        Ok(())
    }
}

fn entity(i: usize) -> Value {
    let obs: Vec<String> = (0..5)
        .map(|j| {
            format!("observation {j} of entity {i}: marker-{i}-{j} about topic{} and more words", i % 50)
        })
        .collect();
    json!({"name": format!("entity-{i}"), "entityType": format!("type{}", i % 10), "observations": obs})
}

/// A deterministic sequence (xorshift), so both servers get the same calls.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// p50, p95 and p99, in milliseconds.
type Pcts = (f64, f64, f64);

pub(crate) fn percentiles(mut v: Vec<f64>) -> Pcts {
    v.sort_by(f64::total_cmp);
    let at = |p: f64| v.get(((v.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN);
    (at(0.50), at(0.95), at(0.99))
}

/// Load `n` entities (5 observations each) and `n` relations, then time each tool, pausing
/// `think` before each timed call (not timed).
fn measure(mut c: Client, n: usize, samples: usize, think: Duration) -> Result<Vec<(String, Pcts)>> {
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        c.call("create_entities", json!({"entities": chunk.iter().map(|i| entity(*i)).collect::<Vec<_>>()}))?;
    }
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        let rels: Vec<Value> = chunk
            .iter()
            .map(|i| json!({"from": format!("entity-{i}"), "to": format!("entity-{}", (i + 1) % n), "relationType": "links_to"}))
            .collect();
        c.call("create_relations", json!({ "relations": rels }))?;
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::new();
    let mut time =
        |name: &str, count: usize, f: &mut dyn FnMut(&mut Client, usize, &mut Rng) -> Result<f64>| {
            let mut v = Vec::with_capacity(count);
            for k in 0..count {
                if !think.is_zero() {
                    std::thread::sleep(think);
                }
                v.push(f(&mut c, k, &mut rng)?);
            }
            out.push((name.to_string(), percentiles(v)));
            Ok::<(), anyhow::Error>(())
        };
    time("search_nodes", samples, &mut |c, _, r| {
        c.call("search_nodes", json!({"query": format!("MARKER-{}-3", r.below(n))}))
    })?;
    time("open_nodes", samples, &mut |c, _, r| {
        c.call(
            "open_nodes",
            json!({"names": [format!("entity-{}", r.below(n)), format!("entity-{}", r.below(n))]}),
        )
    })?;
    time("add_observations", samples, &mut |c, k, _| {
        c.call(
            "add_observations",
            json!({"observations": [{"entityName": format!("entity-{}", k % n), "contents": [format!("new fact {k}")]}]}),
        )
    })?;
    time("delete_observations", samples, &mut |c, k, _| {
        c.call(
            "delete_observations",
            json!({"deletions": [{"entityName": format!("entity-{}", k % n), "observations": [format!("new fact {k}")]}]}),
        )
    })?;
    time("create_entities", samples, &mut |c, k, _| {
        c.call("create_entities", json!({"entities": [entity(n + k)]}))
    })?;
    time("create_relations", samples, &mut |c, k, r| {
        c.call(
            "create_relations",
            json!({"relations": [{"from": format!("entity-{}", r.below(n)), "to": format!("entity-{}", r.below(n)), "relationType": format!("rel{k}")}]}),
        )
    })?;
    time("read_graph", (samples / 10).max(5), &mut |c, _, _| c.call("read_graph", json!({})))?;
    c.close()?;
    Ok(out)
}

/// The `mnemon` built beside this executable (the same target directory), if it is there.
pub(crate) fn beside_this() -> Option<std::path::PathBuf> {
    let me = std::env::current_exe().ok()?;
    let dir = me.parent()?;
    // Test executables live one level down, in `deps/`.
    [dir, dir.parent()?].into_iter().map(|d| d.join("mnemon")).find(|p| p.is_file())
}

/// Run the benchmark: for each size, mnemon (and the reference command, if given).
pub fn run(
    out: &mut Out,
    mnemon: Option<&std::path::Path>,
    sizes: &[usize],
    samples: usize,
    think: Duration,
    reference: Option<&str>,
) -> Result<()> {
    let exe = match mnemon {
        Some(p) => p.to_path_buf(),
        None => beside_this().context(
            "no mnemon executable beside mnemon-bench: build it (cargo build --release -p mnemon-cli) or give --mnemon PATH",
        )?,
    };
    let mut rows = Vec::new();
    for &n in sizes {
        let dir = tempfile::tempdir()?;
        let mut cmd = Command::new(&exe);
        cmd.env_remove("MEMORY_FILE_PATH").arg("--db").arg(dir.path().join("bench.redb")).args([
            "--ns",
            "kg",
            "--embedder",
            "hash",
            "mcp",
        ]);
        let ours = measure(Client::spawn(cmd)?, n, samples, think)?;
        let theirs = match reference {
            Some(command) => {
                let mut cmd = Command::new("sh");
                cmd.args(["-c", command]).env("MEMORY_FILE_PATH", dir.path().join("memory.jsonl"));
                Some(measure(Client::spawn(cmd)?, n, samples, think)?)
            }
            None => None,
        };
        for (i, (tool, (p50, p95, p99))) in ours.into_iter().enumerate() {
            let r = theirs.as_ref().and_then(|t| t.get(i)).map(|(_, p)| *p);
            rows.push((n, tool, (p50, p95, p99), r));
        }
    }
    if out.json {
        for (n, tool, (p50, p95, p99), r) in &rows {
            let mut doc = json!({"entities": n, "tool": tool, "p50_ms": p50, "p95_ms": p95, "p99_ms": p99});
            if let Some((a, b, c)) = r {
                doc["reference"] = json!({"p50_ms": a, "p95_ms": b, "p99_ms": c});
            }
            out.json_line(&doc)?;
        }
        return Ok(());
    }
    let ms = |x: f64| format!("{x:.3}");
    let mut headers = vec!["ENTITIES", "TOOL", "P50 MS", "P95 MS", "P99 MS"];
    if reference.is_some() {
        headers.extend(["REF P50", "REF P95", "REF P99", "P50 RATIO"]);
    }
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(n, tool, (a, b, c), r)| {
            let mut row = vec![n.to_string(), tool.clone(), ms(*a), ms(*b), ms(*c)];
            if let Some((x, y, z)) = r {
                row.extend([ms(*x), ms(*y), ms(*z), format!("{:.1}x", x / a)]);
            }
            row
        })
        .collect();
    out.line(table(&headers, &table_rows))?;
    out.line(format!(
        "{samples} calls per tool and size ({} for read_graph), each timed from request to response over stdio; \
         every write is a durable commit{}.",
        (samples / 10).max(5),
        if think.is_zero() { String::new() } else { format!("; {} ms of think time before each call", think.as_millis()) }
    ))?;
    Ok(())
}
