//! `mnemon-bench adds`: durable adds per second from several writer threads, each add's text
//! embedded by the database's embedder, with concurrent writers' texts embedded one call per
//! writer and batched (`DbBuilder::batch_embeddings`), side by side in one run: for each
//! thread count, a fresh file each way, alternated. Every text is new (no cache hits).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use mnemon::Db;
use mnemon::body::Learning;
use mnemon::embed::Embedder;
use serde_json::json;

use crate::report::{Out, table};

/// Adds/s from each of `threads` writer threads for `seconds`, embedded by `embedder`.
pub fn run(out: &mut Out, embedder: Arc<dyn Embedder>, threads: &[usize], seconds: f64) -> Result<()> {
    let mut rows = Vec::new();
    let mut report = Vec::new();
    for &n in threads {
        for batched in [false, true] {
            let dir = tempfile::tempdir()?;
            let db = Db::builder(dir.path().join("adds.redb"))
                .create(true)
                .embedder(Arc::clone(&embedder))
                .batch_embeddings(batched)
                .open()?;
            let ns = db.ns("bench")?;
            // The model's first call (its weights paged in) is not what a writer pays.
            ns.add(Learning { text: "a first note to warm the model".into(), ..Default::default() })?;
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
            let after = db.embed_stats();
            let (texts, calls) = (after.misses - before.misses, after.calls - before.calls);
            let rate = done as f64 / secs;
            let per_call = texts as f64 / calls.max(1) as f64;
            let way = if batched { "batched" } else { "one call per writer" };
            rows.push(vec![
                n.to_string(),
                way.to_string(),
                format!("{rate:.1}"),
                calls.to_string(),
                format!("{per_call:.1}"),
            ]);
            report.push(json!({"threads": n, "batched": batched, "adds_per_s": rate, "adds": done,
                "embed_calls": calls, "texts_per_call": per_call, "seconds": secs}));
        }
    }
    if out.json {
        out.json_line(&json!({"embedder": embedder.model_id(), "runs": report}))?;
    } else {
        out.line(format!("durable adds, embedder {}", embedder.model_id()))?;
        out.line(table(&["threads", "embedding", "adds/s", "embedder calls", "texts per call"], &rows))?;
    }
    Ok(())
}
