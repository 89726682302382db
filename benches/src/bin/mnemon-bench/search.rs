//! `mnemon-bench search` and `mnemon-bench embed`: retrieval quality and latency on a reproducible synthetic corpus.
//!
//! Each record is an engineering memory: a component, a problem, a condition and a fix
//! ("The payment gateway times out under heavy load; fixed by adding jittered retries").
//! Each query asks for one record in other words: the same component, and the problem,
//! condition and fix each in a variant wording that shares some words or word pieces with
//! the record's and not others ("payment gateway timeouts when heavily loaded, jitter
//! retrying"). The record it was made from is the one relevant record.

use std::time::{Duration, Instant};

use std::sync::Arc;

use anyhow::Result;
use mnemon::body::Learning;
use mnemon::embed::Embedder;
use mnemon::index::synth::Rng;
use mnemon::{Db, NewRecord, TextMode, WriteOp};
use serde_json::json;

use crate::report::{Out, progress_bar, table};

const COMPONENTS_A: [&str; 10] =
    ["payment", "auth", "search", "cache", "queue", "index", "upload", "report", "email", "session"];
const COMPONENTS_B: [&str; 6] = ["service", "worker", "gateway", "client", "store", "scheduler"];
/// (as written in the record, as asked in the query)
const PROBLEMS: [(&str, &str); 20] = [
    ("times out", "timeouts"),
    ("retries forever", "endless retrying"),
    ("leaks memory", "memory leaking"),
    ("deadlocks", "deadlocking"),
    ("crashes on startup", "startup crash"),
    ("drops connections", "dropped connection"),
    ("returns stale data", "staleness of data"),
    ("corrupts records", "record corruption"),
    ("rejects valid tokens", "valid token rejected"),
    ("duplicates messages", "duplicated message"),
    ("loses writes", "lost write"),
    ("spikes cpu", "cpu spiking"),
    ("fills the disk", "disk filling"),
    ("blocks the event loop", "event loop blocked"),
    ("misorders events", "event misordering"),
    ("overflows its buffer", "buffer overflowing"),
    ("throttles requests", "request throttling"),
    ("skips migrations", "skipped migration"),
    ("mislabels metrics", "metric mislabeling"),
    ("hangs on shutdown", "shutdown hanging"),
];
const CONDITIONS: [(&str, &str); 15] = [
    ("under heavy load", "heavily loaded"),
    ("after a deploy", "deployment"),
    ("at midnight", "midnight"),
    ("during failover", "failing over"),
    ("with large payloads", "large payload"),
    ("when the network partitions", "network partition"),
    ("on cold start", "cold starts"),
    ("behind the proxy", "proxied"),
    ("with unicode input", "unicode inputs"),
    ("during backups", "backup running"),
    ("across time zones", "timezone"),
    ("with expired certificates", "certificate expiry"),
    ("when the cache is empty", "empty cache"),
    ("on retries", "retried"),
    ("in batch mode", "batching"),
];
const FIXES: [(&str, &str); 20] = [
    ("adding jittered retries", "jitter retrying"),
    ("bounding the queue", "bounded queues"),
    ("pooling connections", "connection pool"),
    ("raising the timeout", "higher timeouts"),
    ("streaming the payload", "payload streaming"),
    ("pinning the dependency", "pinned dependencies"),
    ("adding an index", "indexing"),
    ("sharding the table", "table shards"),
    ("caching the lookups", "lookup cache"),
    ("rotating the keys", "key rotation"),
    ("batching the writes", "write batches"),
    ("normalising the input", "input normalisation"),
    ("serialising the access", "serialized access"),
    ("debouncing the events", "event debounce"),
    ("compacting the log", "log compaction"),
    ("pre-warming the workers", "worker prewarm"),
    ("idempotency keys", "idempotent keys"),
    ("backpressure", "back pressure"),
    ("circuit breakers", "circuit breaking"),
    ("rate limiting", "rate limits"),
];

fn pick<T: Copy>(rng: &mut Rng, xs: &[T]) -> T {
    xs[usize::try_from(rng.next_u64() % xs.len() as u64).unwrap_or(0)]
}

struct Item {
    record: String,
    query: String,
}

const VERBS: [&str; 12] =
    ["flush", "load", "parse", "sync", "merge", "emit", "fetch", "build", "drain", "apply", "route", "scan"];
const NOUNS: [&str; 16] = [
    "Ledger", "Batch", "Token", "Cursor", "Shard", "Frame", "Bucket", "Lease", "Digest", "Hook", "Span",
    "Quota", "Slot", "Delta", "Epoch", "Chunk",
];
const NOISE: [&str; 8] = [
    "failing again in the service",
    "broken after the deploy",
    "error in production",
    "keeps failing",
    "fix for the worker",
    "problem with the store",
    "issue on the gateway",
    "fails under load",
];

fn corpus(n: usize, seed: u64) -> Vec<Item> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let (a, b) = (pick(&mut rng, &COMPONENTS_A), pick(&mut rng, &COMPONENTS_B));
            let (p, pq) = pick(&mut rng, &PROBLEMS);
            let (c, cq) = pick(&mut rng, &CONDITIONS);
            let (f, fq) = pick(&mut rng, &FIXES);
            let ident =
                format!("{}{}{}", pick(&mut rng, &VERBS), pick(&mut rng, &NOUNS), pick(&mut rng, &NOUNS));
            let by_ident = rng.next_u64().is_multiple_of(2);
            let query = if by_ident {
                format!("{ident} {}", pick(&mut rng, &NOISE))
            } else {
                format!("{a} {b} {pq} {cq} {fq}")
            };
            Item { record: format!("The {a} {b} {p} {c} in {ident}; fixed by {f}."), query }
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

#[allow(clippy::cast_precision_loss)]
pub fn run(
    out: &mut Out,
    embedder: Option<Arc<dyn Embedder>>,
    records: usize,
    queries: usize,
    seed: u64,
    shares: &[f64],
) -> Result<()> {
    let items = corpus(records, seed);
    let dir = tempfile::tempdir()?;
    let mut builder = Db::builder(dir.path().join("eval.redb")).create(true);
    if let Some(e) = embedder {
        builder = builder.embedder(e);
    }
    let db = builder.open()?;
    let ns = db.ns("eval")?;
    let t = Instant::now();
    // Records in large commits, then embedded in batches (as an import does).
    let mut ids = Vec::with_capacity(records);
    for chunk in items.chunks(1000) {
        let ops = chunk
            .iter()
            .map(|it| {
                let r = NewRecord::new(
                    ns.name().clone(),
                    Learning { text: it.record.clone(), ..Default::default() },
                );
                ids.push(r.id);
                WriteOp::Insert(r)
            })
            .collect();
        db.store().write(ops)?;
    }
    let bar = progress_bar(records as u64, "embedding", out.json);
    let stats = db.reindex(Some("eval"), 64, |done, _| bar.set_position(done as u64))?;
    bar.finish_and_clear();
    if stats.failures > 0 {
        anyhow::bail!("{} records could not be embedded", stats.failures);
    }
    let load = t.elapsed();
    // Queries for records spread over the corpus.
    let step = (records / queries.max(1)).max(1);
    let asked: Vec<usize> = (0..records).step_by(step).take(queries).collect();
    let mut rows = Vec::new();
    let mut docs = Vec::new();
    let mut runs: Vec<(TextMode, Option<f64>)> = vec![(TextMode::Lexical, None), (TextMode::Vector, None)];
    runs.push((TextMode::Hybrid, None));
    runs.extend(shares.iter().map(|s| (TextMode::Hybrid, Some(*s))));
    for (mode, share) in runs {
        let (mut at5, mut at10) = (0usize, 0usize);
        let mut lat = Vec::with_capacity(asked.len());
        for &i in &asked {
            let s = Instant::now();
            let mut search = ns.search(&items[i].query).limit(10).mode(mode);
            if let Some(x) = share {
                search = search.lexical_share(x);
            }
            let hits = search.run()?;
            lat.push(s.elapsed());
            if let Some(pos) = hits.iter().position(|h| h.record.id == ids[i]) {
                at10 += 1;
                if pos < 5 {
                    at5 += 1;
                }
            }
        }
        lat.sort();
        let n = asked.len().max(1) as f64;
        let mut name = format!("{mode:?}").to_lowercase();
        if let Some(x) = share {
            name = format!("{name} lexical {x}");
        }
        rows.push(vec![
            name.clone(),
            format!("{:.3}", at5 as f64 / n),
            format!("{:.3}", at10 as f64 / n),
            format!("{:.0}", percentile(&lat, 0.5)),
            format!("{:.0}", percentile(&lat, 0.99)),
        ]);
        docs.push(json!({"mode": name, "recall_at_5": at5 as f64 / n, "recall_at_10": at10 as f64 / n,
            "p50_us": percentile(&lat, 0.5), "p99_us": percentile(&lat, 0.99)}));
    }
    if out.json {
        out.json_line(
            &json!({"records": records, "queries": asked.len(), "embedder": db.embedder().model_id(),
            "load_secs": load.as_secs_f64(), "modes": docs}),
        )?;
        return Ok(());
    }
    out.line(format!(
        "{records} records loaded in {:.1} s ({}), {} queries, one relevant record each",
        load.as_secs_f64(),
        db.embedder().model_id(),
        asked.len()
    ))?;
    out.line(table(&["mode", "recall@5", "recall@10", "p50 µs", "p99 µs"], &rows))?;
    Ok(())
}

/// `mnemon bench embed`: embeddings per second in batches of `batch`, and the latency of one
/// text, for each named embedder, on the same texts.
#[allow(clippy::cast_precision_loss)]
pub fn embed_speed(
    out: &mut Out,
    names: &[mnemon::embed::EmbedderSpec],
    texts: usize,
    batch: usize,
    write_texts: Option<&std::path::Path>,
) -> Result<()> {
    let items = corpus(texts.max(1), 7);
    let all: Vec<&str> = items.iter().map(|i| i.record.as_str()).collect();
    if let Some(path) = write_texts {
        let mut s = String::new();
        for t in &all {
            s.push_str(&json!({ "text": t }).to_string());
            s.push('\n');
        }
        std::fs::write(path, s)?;
    }
    let mut rows = Vec::new();
    for name in names {
        let e = name.build()?;
        e.embed(&all[..all.len().min(8)])?; // warm up
        let t = Instant::now();
        for chunk in all.chunks(batch.max(1)) {
            e.embed(chunk)?;
        }
        let secs = t.elapsed().as_secs_f64();
        let mut one: Vec<Duration> = all
            .iter()
            .take(200)
            .map(|text| {
                let s = Instant::now();
                e.embed(&[text]).map(|_| s.elapsed())
            })
            .collect::<std::result::Result<_, _>>()?;
        one.sort();
        let per_sec = all.len() as f64 / secs;
        if out.json {
            out.json_line(&json!({"embedder": e.model_id(), "texts": all.len(), "batch": batch,
                "secs": secs, "per_sec": per_sec, "single_p50_us": percentile(&one, 0.5),
                "single_p99_us": percentile(&one, 0.99)}))?;
        }
        rows.push(vec![
            e.model_id().to_string(),
            format!("{:.0}", per_sec),
            format!("{:.0}", percentile(&one, 0.5)),
            format!("{:.0}", percentile(&one, 0.99)),
        ]);
    }
    if !out.json {
        out.line(format!("{} texts of the search benchmark, batches of {batch}", all.len()))?;
        out.line(table(&["embedder", "embeddings/s", "one text p50 µs", "p99 µs"], &rows))?;
    }
    Ok(())
}
