//! `mnemon-bench adds`: durable adds per second from several writer threads, each add's text
//! embedded by the database's embedder three ways, side by side in one run (for each thread
//! count, a fresh file each way, alternated): on the write's path one call per writer, on
//! the write's path batched (`DbBuilder::batch_embeddings`), and deferred
//! (`DbBuilder::defer_embeddings`: the record committed first, its vector attached in the
//! background). For the deferred way, `adds/s` counts acknowledged writes in the window and
//! `with vectors/s` the same writes over the window plus the time their last vectors took to
//! attach. Before each, 31 lone adds on the quiet database (the backlog emptied before each)
//! give the median time of the call. Every text is new (no cache hits).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use mnemon::Db;
use mnemon::body::Learning;
use mnemon::embed::Embedder;
use serde_json::json;

use crate::report::{Out, table};

/// Lone adds timed per way (their median reported).
const LONE: usize = 31;

/// Adds/s from each of `threads` writer threads for `seconds`, embedded by `embedder`.
pub fn run(out: &mut Out, embedder: Arc<dyn Embedder>, threads: &[usize], seconds: f64) -> Result<()> {
    let mut rows = Vec::new();
    let mut report = Vec::new();
    for &n in threads {
        for way in ["one call per writer", "batched", "deferred"] {
            let dir = tempfile::tempdir()?;
            let db = Db::builder(dir.path().join("adds.redb"))
                .create(true)
                .embedder(Arc::clone(&embedder))
                .batch_embeddings(way == "batched")
                .defer_embeddings(way == "deferred")
                .open()?;
            let ns = db.ns("bench")?;
            // The model's first call (its weights paged in) is not what a writer pays.
            ns.add(Learning { text: "a first note to warm the model".into(), ..Default::default() })?;
            db.wait_for_vectors(Duration::from_secs(60));
            // A lone add on a quiet database: the call's time, the backlog empty before each.
            let mut lone: Vec<f64> = Vec::with_capacity(LONE);
            for i in 0..LONE {
                let text = format!("a lone note {i} about the cache eviction of shard {}", i * 13);
                let t = Instant::now();
                ns.add(Learning { text, ..Default::default() })?;
                lone.push(t.elapsed().as_secs_f64() * 1e3);
                db.wait_for_vectors(Duration::from_secs(60));
            }
            lone.sort_by(f64::total_cmp);
            let lone_ms = lone[lone.len() / 2];
            let before = db.embed_stats();
            let (stop, adds) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
            let started = Instant::now();
            let workers: Vec<_> = (0..n)
                .map(|t| {
                    let (ns, stop, adds) = (ns.clone(), Arc::clone(&stop), Arc::clone(&adds));
                    std::thread::spawn(move || -> mnemon::Result<()> {
                        let mut i = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            let text = format!(
                                "writer {t} note {i}: the retry budget of service {} is {} ms after incident {}",
                                i % 97,
                                (i * 37) % 1000,
                                i * 7 + t as u64
                            );
                            ns.add(Learning { text, ..Default::default() })?;
                            adds.fetch_add(1, Ordering::Relaxed);
                            i += 1;
                        }
                        Ok(())
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_secs_f64(seconds));
            stop.store(true, Ordering::Relaxed);
            for w in workers {
                w.join().map_err(|_| anyhow::anyhow!("a writer thread panicked"))??;
            }
            let secs = started.elapsed().as_secs_f64();
            let done = adds.load(Ordering::Relaxed);
            let left = db.wait_for_vectors(Duration::from_secs(600));
            anyhow::ensure!(left == 0, "{left} vectors still pending after 600 s");
            let all = started.elapsed().as_secs_f64();
            let after = db.embed_stats();
            let (texts, calls) = (after.misses - before.misses, after.calls - before.calls);
            let (rate, complete) = (done as f64 / secs, done as f64 / all);
            let per_call = texts as f64 / calls.max(1) as f64;
            rows.push(vec![
                n.to_string(),
                way.to_string(),
                format!("{lone_ms:.2}"),
                format!("{rate:.1}"),
                format!("{complete:.1}"),
                calls.to_string(),
                format!("{per_call:.1}"),
            ]);
            report.push(json!({"threads": n, "way": way, "lone_add_ms_median": lone_ms, "adds_per_s": rate, "with_vectors_per_s": complete,
                "adds": done, "embed_calls": calls, "texts_per_call": per_call, "seconds": secs,
                "seconds_to_last_vector": all}));
        }
    }
    if out.json {
        out.json_line(&json!({"embedder": embedder.model_id(), "runs": report}))?;
    } else {
        out.line(format!("durable adds, embedder {}", embedder.model_id()))?;
        out.line(table(
            &[
                "threads",
                "embedding",
                "lone add, ms (median)",
                "adds/s",
                "with vectors/s",
                "embedder calls",
                "texts per call",
            ],
            &rows,
        ))?;
    }
    Ok(())
}
