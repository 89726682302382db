//! `mnemon-bench feed`: how long a committed change takes to reach a reader of the change
//! feed, at a steady rate of durable writes (one memory each), on three paths:
//!
//! - in process: a writer thread adds through a `Db`; a reader follows `Db::watch` on the same
//!   handle;
//! - Server-Sent Events: writers post `remember` to a `mnemon serve` child; a reader follows
//!   `GET /v1/ns/{ns}/events` on it;
//! - MCP: a `mnemon mcp` child with `resources/subscribe` on the namespace's memory; another
//!   process (this one, through the shared file) writes; the server notifies once per burst.
//!
//! A change's latency is from the writer's acknowledgement (the durable commit returned) to the
//! reader's receipt, an event read before the acknowledgement came back counting as 0 (the
//! commit is announced before its writers are answered); and, as an upper bound, from the
//! start of the write call, its durable commit included. For MCP,
//! where a notification stands for every change since the last one, the latency of a
//! notification is from the acknowledgement of the first change it covers.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mnemon::Db;
use mnemon::body::Learning;
use mnemon::feed::ChangeFilter;
use serde_json::{Value, json};

use crate::report::{Out, table};

/// When each id's write was called and acknowledged, and when it was seen.
#[derive(Default)]
struct Times {
    called: HashMap<String, Instant>,
    acked: HashMap<String, Instant>,
    seen: HashMap<String, Instant>,
}

/// Latencies in milliseconds, sorted: from the acknowledgement (0 when the event came first)
/// and from the call.
fn latencies(t: &Times) -> (Vec<f64>, Vec<f64>) {
    let since = |from: &HashMap<String, Instant>| {
        let mut out: Vec<f64> = t
            .seen
            .iter()
            .filter_map(|(id, s)| from.get(id).map(|a| s.saturating_duration_since(*a).as_secs_f64() * 1e3))
            .collect();
        out.sort_by(f64::total_cmp);
        out
    };
    (since(&t.acked), since(&t.called))
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Write `n` memories at `rate` a second with `write` (returning the new id), pacing each on
/// its own slot; record each acknowledgement.
fn paced(
    n: usize,
    rate: u32,
    times: &Mutex<Times>,
    mut write: impl FnMut(usize) -> Result<String>,
) -> Result<()> {
    let start = Instant::now();
    let gap = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
    for i in 0..n {
        let slot = start + gap * u32::try_from(i).unwrap_or(u32::MAX);
        if let Some(wait) = slot.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let called = Instant::now();
        let id = write(i)?;
        let mut t = times.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        t.acked.insert(id.clone(), Instant::now());
        t.called.insert(id, called);
    }
    Ok(())
}

fn in_process(dir: &Path, rate: u32, n: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let db = Db::builder(dir.join(format!("inproc-{rate}.redb"))).create(true).open()?;
    let times = Arc::new(Mutex::new(Times::default()));
    let mut watch = db.ns("bench")?.watch(ChangeFilter::default())?;
    let reader = {
        let times = Arc::clone(&times);
        std::thread::spawn(move || -> Result<()> {
            for _ in 0..n {
                let c = watch.next_timeout(Duration::from_secs(30))?.context("no change within 30 s")?;
                times
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .seen
                    .insert(c.id.to_string(), Instant::now());
            }
            Ok(())
        })
    };
    let ns = db.ns("bench")?;
    paced(n, rate, &times, |i| {
        Ok(ns.add(Learning { text: format!("note {i}"), ..Default::default() })?.to_string())
    })?;
    reader.join().map_err(|_| anyhow::anyhow!("the reader panicked"))??;
    let t = times.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    Ok(latencies(&t))
}

fn sse(mnemon: &Path, dir: &Path, rate: u32, n: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let db = dir.join(format!("sse-{rate}.redb"));
    let mut child = Command::new(mnemon)
        .arg("--db")
        .arg(&db)
        .args(["--embedder", "hash", "serve", "--no-auth", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start mnemon serve")?;
    let mut stderr = BufReader::new(child.stderr.take().context("no stderr")?);
    let mut line = String::new();
    stderr.read_line(&mut line)?;
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let Some(addr) =
        line.split("http://").nth(1).and_then(|r| r.split_whitespace().next()).map(str::to_string)
    else {
        let _ = child.kill();
        bail!("mnemon serve did not start: {line}");
    };
    let times = Arc::new(Mutex::new(Times::default()));
    let mut stream = std::net::TcpStream::connect(&addr)?;
    write!(stream, "GET /v1/ns/bench/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n")?;
    let reader = {
        let times = Arc::clone(&times);
        std::thread::spawn(move || -> Result<()> {
            let mut lines = BufReader::new(stream);
            let mut got = 0;
            let mut line = String::new();
            while got < n {
                line.clear();
                if lines.read_line(&mut line)? == 0 {
                    bail!("the event stream ended");
                }
                // Chunked framing around the events: only the data lines matter.
                if let Some(data) = line.trim_end().strip_prefix("data: ") {
                    let v: Value = serde_json::from_str(data)?;
                    let id = v["id"].as_str().unwrap_or_default().to_string();
                    times
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .seen
                        .insert(id, Instant::now());
                    got += 1;
                }
            }
            Ok(())
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let mut conn = crate::http1::Conn::new(&addr);
    let written = paced(n, rate, &times, |i| {
        let body = json!({"kind": "learning", "text": format!("note {i}")}).to_string();
        let a = conn.call("POST", "/v1/ns/bench/memories", None, Some(body.as_bytes()))?;
        if a.status != 200 {
            bail!("remember answered {}", a.status);
        }
        let v: Value = serde_json::from_slice(&a.body)?;
        Ok(v["id"].as_str().unwrap_or_default().to_string())
    });
    let read = reader.join().map_err(|_| anyhow::anyhow!("the reader panicked"));
    let _ = child.kill();
    let _ = child.wait();
    written?;
    read??;
    let t = times.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    Ok(latencies(&t))
}

/// MCP: notifications per burst; each notification's latency is from the acknowledgement of
/// the first change after the previous notification.
fn mcp(mnemon: &Path, dir: &Path, rate: u32, n: usize) -> Result<(Vec<f64>, Vec<f64>, usize)> {
    let path = dir.join(format!("mcp-{rate}.redb"));
    let db = Db::builder(&path).create(true).shared(true).open()?;
    let mut child = Command::new(mnemon)
        .arg("--db")
        .arg(&path)
        .args(["--ns", "bench", "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start mnemon mcp")?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
    fn send(w: &mut impl Write, v: Value) -> Result<()> {
        Ok(writeln!(w, "{v}").and_then(|()| w.flush())?)
    }
    fn read(r: &mut impl BufRead) -> Result<Value> {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            bail!("mnemon mcp stopped");
        }
        Ok(serde_json::from_str(&line)?)
    }
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}),
    )?;
    read(&mut stdout)?;
    send(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "mnemon://memory/bench"}}),
    )?;
    let answer = read(&mut stdout)?;
    if answer.get("error").is_some() {
        bail!("resources/subscribe: {answer}");
    }
    let notes: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let reader = {
        let notes = Arc::clone(&notes);
        std::thread::spawn(move || {
            let mut line = String::new();
            while stdout.read_line(&mut line).unwrap_or(0) > 0 {
                if line.contains("notifications/resources/updated") {
                    notes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(Instant::now());
                }
                line.clear();
            }
        })
    };
    let times = Mutex::new(Times::default());
    let order: Mutex<Vec<Instant>> = Mutex::default();
    let calls: Mutex<Vec<Instant>> = Mutex::default();
    let ns = db.ns("bench")?;
    paced(n, rate, &times, |i| {
        calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(Instant::now());
        let id = ns.add(Learning { text: format!("note {i}"), ..Default::default() })?.to_string();
        order.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(Instant::now());
        Ok(id)
    })?;
    std::thread::sleep(Duration::from_millis(500));
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    let acks = order.into_inner().unwrap_or_default();
    let calls = calls.into_inner().unwrap_or_default();
    let notes = notes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    // Each notification covers the writes acknowledged since the one before it.
    let (mut from_ack, mut from_call) = (Vec::new(), Vec::new());
    let mut first = 0usize;
    for note in &notes {
        let covered = acks[first..].iter().take_while(|a| *a <= note).count();
        if covered > 0 {
            from_ack.push(note.saturating_duration_since(acks[first]).as_secs_f64() * 1e3);
            from_call.push(note.saturating_duration_since(calls[first]).as_secs_f64() * 1e3);
            first += covered;
        }
    }
    from_ack.sort_by(f64::total_cmp);
    from_call.sort_by(f64::total_cmp);
    Ok((from_ack, from_call, notes.len()))
}

/// Run the three paths at each rate, `seconds` of writes each.
pub fn run(out: &mut Out, mnemon: &Path, rates: &[u32], seconds: u64) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let mut rows = Vec::new();
    let mut json_rows = Vec::new();
    for &rate in rates {
        let n = usize::try_from(u64::from(rate) * seconds).unwrap_or(usize::MAX).max(1);
        let (a, c) = in_process(dir.path(), rate, n)?;
        let (a2, c2) = sse(mnemon, dir.path(), rate, n)?;
        let (a3, c3, notes) = mcp(mnemon, dir.path(), rate, n)?;
        let paths =
            [("in process", a, c, n), ("SSE", a2, c2, n), ("MCP (another process writes)", a3, c3, notes)];
        for (path, ack, call, events) in paths {
            let p = |l: &[f64], q: f64| pct(l, q);
            rows.push(vec![
                path.to_string(),
                rate.to_string(),
                n.to_string(),
                events.to_string(),
                format!("{:.2}", p(&ack, 0.5)),
                format!("{:.2}", p(&ack, 0.99)),
                format!("{:.2}", p(&call, 0.5)),
                format!("{:.2}", p(&call, 0.99)),
                format!("{:.2}", call.last().copied().unwrap_or(f64::NAN)),
            ]);
            json_rows.push(json!({"path": path, "rate": rate, "writes": n, "events": events,
                "from_ack_p50_ms": p(&ack, 0.5), "from_ack_p99_ms": p(&ack, 0.99),
                "from_call_p50_ms": p(&call, 0.5), "from_call_p99_ms": p(&call, 0.99)}));
        }
    }
    if out.json {
        out.json_line(&json!({"feed": json_rows}))?;
    } else {
        out.line(table(
            &[
                "path",
                "writes/s",
                "writes",
                "events",
                "ack→event p50 ms",
                "p99",
                "call→event p50 ms",
                "p99",
                "max",
            ],
            &rows,
        ))?;
    }
    Ok(())
}
