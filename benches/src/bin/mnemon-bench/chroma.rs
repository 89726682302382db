//! The side-by-side part of `mnemon-bench serve --chroma VENV`: what a Python user would run
//! instead of `mnemon serve` for the vector part of the load. A real Chroma server (`chroma
//! run` from the chromadb package that scripts/fetch-chroma.sh installs) on a loopback port,
//! the same number of agent threads on keep-alive connections, each adding one document with
//! its 384-dimension embedding (given: Chroma's own embedder would fetch a model) and querying
//! the 10 nearest, in the proportion of the mnemon load (6 adds to 2 queries), for the same
//! time; then the collection's count checked against the adds acknowledged.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::mcp::percentiles;

/// Of every 8 calls: 6 adds, 2 queries (the mnemon load's writes to searches).
const MIX: [bool; 8] = [true, true, false, true, true, true, false, true];

/// Dimensions of the embeddings (those of mnemon's embedders).
const DIM: usize = 384;

/// What the Chroma run measured.
pub struct Figures {
    /// Adds acknowledged per second.
    pub adds_per_s: f64,
    /// Add latency p50 / p99, ms.
    pub add_ms: (f64, f64),
    /// Query latency p50 / p99, ms.
    pub query_ms: (f64, f64),
    /// Calls that failed.
    pub failures: u64,
    /// Acknowledged adds missing from the collection's count.
    pub lost: i64,
}

/// Run the Chroma part with `agents` threads for `seconds`.
pub fn run(venv: &Path, agents: usize, seconds: u64) -> Result<Figures> {
    let dir = tempfile::tempdir()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let exe = venv.join("bin").join("chroma");
    let mut server = Server(
        Command::new(&exe)
            .args(["run", "--host", "127.0.0.1", "--port", &port.to_string(), "--path"])
            .arg(dir.path())
            .env("ANONYMIZED_TELEMETRY", "False")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| {
                format!("cannot start {} (install it with scripts/fetch-chroma.sh)", exe.display())
            })?,
    );
    let base = format!("http://127.0.0.1:{port}/api/v2");
    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build()?;
    let up = Instant::now();
    while http.get(format!("{base}/heartbeat")).send().is_err() {
        if up.elapsed() > Duration::from_secs(60) {
            bail!("chroma run did not answer within 60 s");
        }
        if let Some(status) = server.0.try_wait()? {
            bail!("chroma run exited: {status}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let collections = format!("{base}/tenants/default_tenant/databases/default_database/collections");
    let made: Value = http
        .post(&collections)
        .json(&json!({"name": "bench", "configuration": {"hnsw": {"space": "cosine"}}}))
        .send()?
        .error_for_status()?
        .json()?;
    let url = format!("{collections}/{}", made["id"].as_str().context("no collection id")?);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let seen: Vec<(Vec<f64>, Vec<f64>, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..agents)
            .map(|a| {
                scope.spawn({
                    let url = url.clone();
                    move || agent(a, &url, deadline)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let (mut adds, mut queries, mut failures) = (Vec::new(), Vec::new(), 0);
    for (a, q, f) in seen {
        adds.extend(a);
        queries.extend(q);
        failures += f;
    }
    let count: i64 = http.get(format!("{url}/count")).send()?.error_for_status()?.json()?;
    let (a50, _, a99) = percentiles(adds.clone());
    let (q50, _, q99) = percentiles(queries);
    Ok(Figures {
        adds_per_s: adds.len() as f64 / elapsed,
        add_ms: (a50, a99),
        query_ms: (q50, q99),
        failures,
        lost: i64::try_from(adds.len()).unwrap_or(i64::MAX) - count,
    })
}

/// One agent: adds and queries until the deadline. Its add and query latencies (ms) and the
/// calls that failed.
fn agent(a: usize, url: &str, deadline: Instant) -> (Vec<f64>, Vec<f64>, u64) {
    let (mut adds, mut queries, mut failures) = (Vec::new(), Vec::new(), 0);
    // The same small HTTP/1.1 client as mnemon's agents (`crate::http1`).
    let (addr, prefix) = crate::http1::split_url(url);
    let mut http = crate::http1::Conn::new(addr);
    let mut i = 0usize;
    while Instant::now() < deadline {
        let add = MIX[i % MIX.len()];
        i += 1;
        let v = vector((a as u64) << 32 | i as u64);
        let t = Instant::now();
        let (path, body) = if add {
            (
                format!("{prefix}/add"),
                json!({
                    "ids": [format!("{a}-{i}")],
                    "embeddings": [v],
                    "documents": [format!("agent {a} learned fact {i} about topic{} and module{}", i % 37, i % 11)],
                }),
            )
        } else {
            (
                format!("{prefix}/query"),
                json!({"query_embeddings": [v], "n_results": 10, "include": ["documents", "distances"]}),
            )
        };
        match http.call("POST", &path, None, Some(body.to_string().as_bytes())) {
            Ok(r) if (200..300).contains(&r.status) => {
                let ms = t.elapsed().as_secs_f64() * 1e3;
                if add { adds.push(ms) } else { queries.push(ms) }
            }
            _ => failures += 1,
        }
    }
    (adds, queries, failures)
}

/// A unit vector drawn from `seed` (xorshift).
fn vector(seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v: Vec<f32> = (0..DIM)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let norm = v.iter().map(|f| f * f).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
    v.iter_mut().for_each(|f| *f /= norm);
    v
}

/// The Chroma server, stopped when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
    }
}
