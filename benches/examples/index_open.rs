//! Open a database holding a published 100k-vector index and answer the first query: the
//! graph must be loaded from its files, not rebuilt. Prints the timings.
//!
//! `cargo run --release -p mnemon-bench --example index_open [N] [DIM]`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::Instant;

use mnemon::body::Learning;
use mnemon::index::synth::{Shape, clustered};
use mnemon::{Db, Durability, IndexOptions, NewRecord, WriteOp};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let dim: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(384);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("open.redb");
    let opts = || IndexOptions { auto_maintain: false, ..Db::default_index_options(&path) };
    let vectors = clustered(n, Shape::new(dim), 7);
    {
        let db = Db::builder(&path).create(true).index_options(opts()).open().unwrap();
        let ns = db.ns("bench").unwrap();
        let t = Instant::now();
        for chunk in vectors.chunks(1_000) {
            let jobs: Vec<Vec<WriteOp>> = chunk
                .iter()
                .map(|v| {
                    let rec = NewRecord::new(
                        ns.name().clone(),
                        Learning { text: "x".into(), ..Default::default() },
                    );
                    let id = rec.id;
                    vec![
                        WriteOp::Insert(rec),
                        WriteOp::PutVector {
                            namespace: ns.name().clone(),
                            id,
                            rev: None,
                            space: "synth".into(),
                            vector: v.clone(),
                        },
                    ]
                })
                .collect();
            for r in db.store().write_many(jobs, Durability::Eventual) {
                r.unwrap();
            }
        }
        db.sync().unwrap();
        println!("loaded {n} records with {dim}-d vectors in {:.1} s", t.elapsed().as_secs_f64());
        let t = Instant::now();
        let report = db.build_index("synth", "bench").unwrap();
        println!(
            "built and published the graph ({} points, generation {:?}) in {:.1} s",
            report.graph_points,
            report.generation,
            t.elapsed().as_secs_f64()
        );
    }
    let t = Instant::now();
    let db = Db::builder(&path).index_options(opts()).open().unwrap();
    let opened = t.elapsed();
    let ns = db.ns("bench").unwrap();
    let q = &clustered(1, Shape::new(dim), 8)[0];
    let t = Instant::now();
    let found = ns.vector_search("synth", q, 10).run().unwrap();
    let first = t.elapsed();
    let t = Instant::now();
    let again = ns.vector_search("synth", q, 10).run().unwrap();
    let second = t.elapsed();
    let status = db.index().status();
    println!(
        "reopened in {:.1} ms; first query {:.1} ms (loads the segment: verify checksums, read the graph and the vectors), second {:.2} ms",
        opened.as_secs_f64() * 1e3,
        first.as_secs_f64() * 1e3,
        second.as_secs_f64() * 1e3
    );
    println!(
        "first query path: {}, graph points {}, generation {}, load note {:?}",
        found.plan.path, status[0].graph_points, status[0].generation, status[0].load_note
    );
    assert_eq!(status[0].generation, 1, "the published graph was not used");
    assert!(status[0].load_note.is_none());
    assert_eq!(found.hits.len(), again.hits.len());
}
