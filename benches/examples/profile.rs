//! Drive one workload for a profiler: `profile (now|past|insert|batch) [revisions]`.
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout, reason = "profiling driver")]

use std::time::Instant;

use mnemon::WriteOp;
use mnemon_bench::{history, load_mnemon, mnemon_valid_at, small_record};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("now", String::as_str);
    let size: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    match mode {
        "insert" | "batch" => {
            let db = mnemon::Db::create(dir.path().join("p.redb")).unwrap();
            let t = Instant::now();
            let n = if mode == "insert" { 3_000 } else { 100 };
            for i in 0..n {
                if mode == "insert" {
                    db.write(vec![WriteOp::Insert(small_record(i))]).unwrap();
                } else {
                    let ops = (0..1000).map(|j| WriteOp::Insert(small_record(i * 1000 + j))).collect();
                    db.write(ops).unwrap();
                }
            }
            println!("{mode}: {:?} per commit", t.elapsed() / n as u32);
        }
        _ => {
            let events = history(size, 1_000, 7);
            let (db, _) = load_mnemon(&dir.path().join("h.redb"), &events, 2_000);
            let end = events.last().unwrap().time();
            let v = if mode == "now" { end + 1 } else { events[events.len() / 2].time() };
            let reps = if mode == "now" { 3_000 } else { 600 };
            let t = Instant::now();
            let mut n = 0;
            for _ in 0..reps {
                n += mnemon_valid_at(&db, v).len();
            }
            println!("{mode}: {:?} per query ({} records)", t.elapsed() / reps, n / reps as usize);
        }
    }
}
