//! `mnemon-bench calls`: the time of single operation-layer calls in-process (add, get as of,
//! list as of, search) on a given file, for a side-by-side comparison with the same calls made
//! from another language's bindings (crates/python/bench/overhead.py runs both in one run).
//! Adds go to the namespace `NS-writes`, so that the reads of every run see the same records.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use mnemon::Db;
use mnemon::ops::{Add, Get, List, Recall, Session};
use serde_json::{Map, Value, json};

use crate::report::{Out, table};

/// The calls measured, in order.
pub const CALLS: [&str; 4] = ["add", "get_as_of", "list_as_of", "search"];

/// What the same-named calls are made with: records of `ids` (one per line), `n` calls each.
pub fn run(out: &mut Out, db: &Path, ns: &str, ids: &Path, n: usize) -> Result<()> {
    let ids: Vec<String> = std::fs::read_to_string(ids)
        .with_context(|| format!("cannot read {}", ids.display()))?
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    anyhow::ensure!(!ids.is_empty(), "no ids to read");
    if n == 0 {
        return Err(crate::report::usage("--n must be at least 1"));
    }
    let handle = Db::builder(db).durability(mnemon::Durability::Eventual).open()?;
    // Adds go to a namespace of their own, so that every run reads the same records.
    let writes = format!("{ns}-writes");
    let session = Session::new(handle.clone(), ns)?.allow(writes.clone());
    let mut rows = Vec::new();
    let mut report = Map::new();
    for call in CALLS {
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            let started = Instant::now();
            match call {
                "add" => {
                    let mut record = Map::new();
                    record.insert("text".into(), json!(format!("a new fact number {i} about retries")));
                    record.insert("valid_from".into(), json!("2024-01-01"));
                    session.call(Add { kind: "learning".into(), record, namespace: Some(writes.clone()) })?;
                }
                "get_as_of" => {
                    let id = ids[i % ids.len()].clone();
                    session.call(Get { id, as_of: Some("2025-01-01".into()), ..Default::default() })?;
                }
                "list_as_of" => {
                    session.call(List {
                        kinds: vec!["learning".into()],
                        as_of: Some("2025-01-01".into()),
                        limit: Some(10),
                        ..Default::default()
                    })?;
                }
                _ => {
                    let query = WORDS[i % WORDS.len()].to_string();
                    session.call(Recall { query, limit: Some(10), ..Default::default() })?;
                }
            }
            times.push(started.elapsed().as_secs_f64() * 1e6);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        rows.push(vec![call.to_string(), format!("{median:.1}"), format!("{mean:.1}")]);
        report.insert(call.to_string(), json!({"median_us": median, "mean_us": mean, "calls": n}));
    }
    handle.sync()?;
    if out.json {
        out.json_line(&Value::Object(report))?;
    } else {
        out.line(table(&["call", "median µs", "mean µs"], &rows))?;
    }
    Ok(())
}

/// The search queries, in turn (the same list as crates/python/bench/overhead.py's).
pub const WORDS: [&str; 8] = ["retries", "cache", "timeout", "backoff", "redb", "latency", "index", "commit"];
