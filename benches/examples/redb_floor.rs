//! How long does a bare durable redb commit take here? `redb_floor [tables] [shared]`
//! (`shared`: redb's multi-writer mode, as `DbBuilder::shared(true)` opens files).
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout, reason = "measurement driver")]

use std::time::Instant;

fn main() {
    let tables: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let dir = tempfile::tempdir().unwrap();
    let shared = std::env::args().nth(2).is_some_and(|s| s == "shared");
    let mut builder = redb::Builder::new();
    if shared {
        builder.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
    }
    let db = builder.create(dir.path().join("f.redb")).unwrap();
    let names: Vec<String> = (0..tables).map(|i| format!("t{i}")).collect();
    let n = 2000u64;
    let t = Instant::now();
    for i in 0..n {
        let w = db.begin_write().unwrap();
        for name in &names {
            let mut tb = w.open_table(redb::TableDefinition::<u64, &[u8]>::new(name)).unwrap();
            tb.insert(i, [7u8; 200].as_slice()).unwrap();
        }
        w.commit().unwrap();
    }
    let mode = if shared { "shared" } else { "exclusive" };
    println!("{tables} table(s), {mode}: {:?} per durable commit", t.elapsed() / n as u32);
}
