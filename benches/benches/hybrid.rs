//! Hybrid search against its parts, side by side on the same records and queries: lexical
//! and vector search at the depth hybrid reads (60 a side), and hybrid's top 10, which fuses
//! them, looks up the stored vectors of lexical candidates the vector side did not return,
//! and embeds the query once (the vector part embeds it too). Hybrid should cost no more
//! than its two parts together.
//!
//! 10,000 records of 30 Zipf-distributed words (`realistic_text`, `MNEMON_BENCH_HYBRID_N`
//! sets another number), the default hashing embedder; queries of three words.
//! `cargo bench -p mnemon-bench --bench hybrid`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use mnemon::body::Learning;
use mnemon::{Db, NewRecord, TextMode, WriteOp};
use mnemon_bench::realistic_text;

fn hybrid(c: &mut Criterion) {
    let n: u64 = std::env::var("MNEMON_BENCH_HYBRID_N").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let queries: Vec<String> = (0..200).map(|q| realistic_text(10_000_000 + q, 3)).collect();
    let dir = tempfile::tempdir().unwrap();
    let db = Db::builder(dir.path().join("hybrid.redb")).create(true).open().unwrap();
    let ns = db.ns("bench").unwrap();
    // Records in large commits, then embedded in batches (as an import does).
    let ids: Vec<u64> = (0..n).collect();
    for chunk in ids.chunks(5_000) {
        let ops = chunk
            .iter()
            .map(|&i| {
                let text = realistic_text(i, 30);
                WriteOp::Insert(NewRecord::new(ns.name().clone(), Learning { text, ..Default::default() }))
            })
            .collect();
        db.store().write(ops).unwrap();
    }
    db.reindex(Some("bench"), 64, |_, _| {}).unwrap();
    let mut g = c.benchmark_group(format!("search_{n}"));
    g.sample_size(30);
    for (name, mode, limit) in [
        ("lexical_60", TextMode::Lexical, 60),
        ("vector_60", TextMode::Vector, 60),
        ("hybrid_10", TextMode::Hybrid, 10),
    ] {
        let mut i = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                ns.search(&queries[i]).mode(mode).limit(limit).min_score(0.0).run().unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, hybrid);
criterion_main!(benches);
