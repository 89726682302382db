//! Storage benchmarks, each side by side with the SQLite baseline in the same run.
//!
//! `cargo bench -p mnemon-bench --bench storage` (set `MNEMON_BENCH_BIG=0` to skip the
//! 1M-revision history; `-- open_for_writing` runs only the cost of verifying a file opened
//! for writing).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, reason = "benchmark harness")]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use mnemon::{Db, Durability, RecordId, Timestamp, WriteOp};
use mnemon_bench::{
    Event, Sqlite, durable_writes, history, load_mnemon, mnemon_valid_at, namespace, small_record,
};

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn fresh_mnemon(dir: &tempfile::TempDir, name: &str) -> Db {
    Db::create(dir.path().join(name)).unwrap()
}

fn inserts(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_mnemon(&dir, "ins.redb");
    // The same, opened shared (redb's multi-writer mode: two-phase commits, file locks).
    let shared = Db::builder(dir.path().join("ins_shared.redb")).create(true).shared(true).open().unwrap();
    let sql = Sqlite::open(&dir.path().join("ins.sqlite"));
    let mut g = c.benchmark_group("insert_durable_single");
    g.sample_size(20).measurement_time(Duration::from_secs(4)).throughput(Throughput::Elements(1));
    g.bench_function("mnemon", |b| {
        b.iter(|| {
            let i = COUNTER.fetch_add(1, Ordering::Relaxed);
            db.store().write(vec![WriteOp::Insert(small_record(i))]).unwrap()
        })
    });
    g.bench_function("mnemon_shared", |b| {
        b.iter(|| {
            let i = COUNTER.fetch_add(1, Ordering::Relaxed);
            shared.store().write(vec![WriteOp::Insert(small_record(i))]).unwrap()
        })
    });
    // What a write-ahead log in front of the B-trees would cost a lone durable insert
    // (issue 56): the commit without a sync (redb keeps its pages in its write buffer), the
    // job appended to a log file and synced, and every 1,000 entries a durable commit after
    // which the log is cut. An estimate of the design, not the design.
    let log_db = fresh_mnemon(&dir, "ins_log.redb");
    let log_path = dir.path().join("ins_log.wal");
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).unwrap();
    let mut entries = 0u64;
    g.bench_function("mnemon_log_estimate", |b| {
        b.iter(|| {
            use std::io::Write;
            let i = COUNTER.fetch_add(1, Ordering::Relaxed);
            let ops = vec![WriteOp::Insert(small_record(i))];
            let bytes = mnemon_storage::encode_job(&ops).unwrap();
            let r = log_db.store().write_many(vec![ops], Durability::Eventual).pop().unwrap().unwrap();
            log.write_all(&(bytes.len() as u32).to_le_bytes()).unwrap();
            log.write_all(&bytes).unwrap();
            log.sync_data().unwrap();
            entries += 1;
            if entries.is_multiple_of(1000) {
                log_db.sync().unwrap();
                log.set_len(0).unwrap();
                log.sync_data().unwrap();
            }
            r
        })
    });
    // The same with the log's space written ahead (zeros, synced once), each entry written in
    // place: a sync then changes no file size or extent (as SQLite's WAL, reused).
    let pre_db = fresh_mnemon(&dir, "ins_pre.redb");
    let pre = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(dir.path().join("ins_pre.wal"))
        .unwrap();
    const PRE: u64 = 64 << 20;
    {
        use std::io::Write;
        let mut w = std::io::BufWriter::new(&pre);
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..(PRE >> 20) {
            w.write_all(&zeros).unwrap();
        }
        w.flush().unwrap();
        pre.sync_all().unwrap();
    }
    let mut at = 0u64;
    let mut pre_entries = 0u64;
    g.bench_function("mnemon_log_estimate_prewritten", |b| {
        b.iter(|| {
            use std::os::unix::fs::FileExt;
            let i = COUNTER.fetch_add(1, Ordering::Relaxed);
            let ops = vec![WriteOp::Insert(small_record(i))];
            let mut bytes = (0u32).to_le_bytes().to_vec();
            bytes.extend(mnemon_storage::encode_job(&ops).unwrap());
            let n = (bytes.len() - 4) as u32;
            bytes[..4].copy_from_slice(&n.to_le_bytes());
            let r = pre_db.store().write_many(vec![ops], Durability::Eventual).pop().unwrap().unwrap();
            if at + bytes.len() as u64 > PRE {
                at = 0;
            }
            pre.write_all_at(&bytes, at).unwrap();
            at += bytes.len() as u64;
            pre.sync_data().unwrap();
            pre_entries += 1;
            if pre_entries.is_multiple_of(1000) {
                pre_db.sync().unwrap();
                at = 0;
            }
            r
        })
    });
    // The commit without a sync alone.
    let ev_db = fresh_mnemon(&dir, "ins_ev.redb");
    g.bench_function("mnemon_eventual", |b| {
        b.iter(|| {
            let i = COUNTER.fetch_add(1, Ordering::Relaxed);
            ev_db.store().write_many(vec![vec![WriteOp::Insert(small_record(i))]], Durability::Eventual)
        })
    });
    g.bench_function("sqlite", |b| {
        b.iter(|| {
            let i = COUNTER.fetch_add(1, Ordering::Relaxed);
            let r = small_record(i);
            sql.insert_one(&record_of(r));
        })
    });
    // SQLite with an FTS5 index of the text: the counterpart of mnemon's lexical index.
    let fts = Sqlite::open(&dir.path().join("ins_fts.sqlite"));
    fts.enable_fts();
    g.bench_function("sqlite_fts5", |b| {
        b.iter(|| {
            let i = COUNTER.fetch_add(1, Ordering::Relaxed);
            fts.insert_one_fts(&record_of(small_record(i)));
        })
    });
    g.finish();

    let mut g = c.benchmark_group("insert_batched_1000");
    g.sample_size(10).measurement_time(Duration::from_secs(5)).throughput(Throughput::Elements(1000));
    g.bench_function("mnemon", |b| {
        b.iter(|| {
            let ops: Vec<WriteOp> = (0..1000)
                .map(|_| WriteOp::Insert(small_record(COUNTER.fetch_add(1, Ordering::Relaxed))))
                .collect();
            db.store().write(ops).unwrap()
        })
    });
    g.bench_function("mnemon_shared", |b| {
        b.iter(|| {
            let ops: Vec<WriteOp> = (0..1000)
                .map(|_| WriteOp::Insert(small_record(COUNTER.fetch_add(1, Ordering::Relaxed))))
                .collect();
            shared.store().write(ops).unwrap()
        })
    });
    g.bench_function("sqlite", |b| {
        b.iter(|| {
            sql.conn.execute_batch("BEGIN").unwrap();
            for _ in 0..1000 {
                sql.insert_one(&record_of(small_record(COUNTER.fetch_add(1, Ordering::Relaxed))));
            }
            sql.conn.execute_batch("COMMIT").unwrap();
        })
    });
    g.bench_function("sqlite_fts5", |b| {
        b.iter(|| {
            fts.conn.execute_batch("BEGIN").unwrap();
            for _ in 0..1000 {
                fts.insert_one_fts(&record_of(small_record(COUNTER.fetch_add(1, Ordering::Relaxed))));
            }
            fts.conn.execute_batch("COMMIT").unwrap();
        })
    });
    g.finish();
}

/// The record a `NewRecord` becomes (for the baseline, which has no writer to fill it in).
fn record_of(n: mnemon::NewRecord) -> mnemon::Record {
    let now = Timestamp::now();
    mnemon::Record {
        namespace: n.namespace,
        id: n.id,
        rev: 0,
        recorded_at: now,
        replaced_at: None,
        op: mnemon::Op::Insert,
        valid_from: n.valid_from.unwrap_or(now),
        valid_until: n.valid_until,
        expires_at: None,
        supersedes: None,
        superseded_by: None,
        envelope: n.envelope,
        body: n.body,
    }
}

/// Replace `to` by a copy of `from`, written out to disk. A copy leaves the whole file dirty in
/// the page cache: written out here, or the first durable commit's fsync (and the kernel's
/// writeback of the copy) would fall into the measurement. SQLite's write-ahead log of the
/// previous sample goes too.
fn fresh_copy(from: &std::path::Path, to: &std::path::Path) {
    for suffix in ["-wal", "-shm"] {
        let mut side = to.as_os_str().to_owned();
        side.push(suffix);
        let _ = std::fs::remove_file(side);
    }
    std::fs::copy(from, to).unwrap();
    std::fs::File::open(to).unwrap().sync_all().unwrap();
}

/// Records in the file every thread count of `group_commit` starts from.
const GC_START: u64 = 100_000;

fn group_commit(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    // Every sample of every thread count starts from a copy of the same file of `GC_START`
    // records (written in batches), on both engines, so that all of them are measured on files
    // of 100k to about 120k records. Before, they shared one growing file, so 16 writers were
    // measured on the 80k-230k records that the smaller runs and their own warm-up had
    // written, and one writer on 0-20k; then each thread count started from the copy but kept
    // it through its warm-up and samples, so 16 writers, eight times as fast, still ran on
    // 175k-350k records where one writer ran on 100k-130k. A larger file costs every commit
    // more (deeper trees dirty more pages; the timeline's checkpoints, which hold every live
    // record, grow with it), which is not what this benchmark compares.
    let template = dir.path().join("gc_start.redb");
    let sql_template = dir.path().join("gc_start.sqlite");
    {
        let db = Db::create(&template).unwrap();
        let sql = Sqlite::open(&sql_template);
        for chunk in 0..GC_START / 1_000 {
            let records: Vec<_> =
                (0..1_000).map(|i| small_record(u64::MAX / 2 + chunk * 1_000 + i)).collect();
            sql.conn.execute_batch("BEGIN").unwrap();
            for r in &records {
                sql.insert_one(&record_of(r.clone()));
            }
            sql.conn.execute_batch("COMMIT").unwrap();
            db.store()
                .write_with(records.into_iter().map(WriteOp::Insert).collect(), Durability::Eventual)
                .unwrap();
        }
        db.sync().unwrap();
        // Closing SQLite's last connection checkpoints its WAL into the file.
    }
    let mut g = c.benchmark_group("group_commit_durable");
    // Every sample starts from its own copy of the start file (see `fresh_copy`), so one
    // iteration count is measured on the same range of file sizes as another; flat sampling
    // gives every sample the same number of iterations, hence the same growth.
    g.sample_size(10).measurement_time(Duration::from_secs(6)).sampling_mode(SamplingMode::Flat);
    let path = dir.path().join("gc.redb");
    let sql_path = dir.path().join("gc.sqlite");
    // 64 writers: an agent farm's many agents writing at once (fewer writes each, so that a
    // sample of SQLite's side stays a few seconds).
    for threads in [1usize, 4, 16, 64] {
        let per_thread = if threads > 16 { 100usize } else { 200 };
        g.throughput(Throughput::Elements((threads * per_thread) as u64));
        g.bench_with_input(BenchmarkId::new("mnemon", threads), &threads, |b, &threads| {
            b.iter_custom(|iters| {
                fresh_copy(&template, &path);
                let db = Db::open(&path).unwrap();
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    durable_writes(&db, threads, per_thread as u64, &COUNTER);
                    total += start.elapsed();
                }
                total
            })
        });
        g.bench_with_input(BenchmarkId::new("sqlite", threads), &threads, |b, &threads| {
            b.iter_custom(|iters| {
                fresh_copy(&sql_template, &sql_path);
                let mut conns: Vec<Sqlite> = (0..threads).map(|_| Sqlite::open(&sql_path)).collect();
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    std::thread::scope(|s| {
                        for conn in conns.iter_mut() {
                            s.spawn(move || {
                                for _ in 0..per_thread {
                                    conn.insert_one(&record_of(small_record(
                                        COUNTER.fetch_add(1, Ordering::Relaxed),
                                    )));
                                }
                            });
                        }
                    });
                    total += start.elapsed();
                }
                total
            })
        });
    }
    for p in [&path, &sql_path] {
        let _ = std::fs::remove_file(p);
    }
    g.finish();
}

struct Loaded {
    _dir: tempfile::TempDir,
    db: Db,
    sql: Sqlite,
    events: Vec<Event>,
}

fn load(revisions: usize) -> Loaded {
    let dir = tempfile::tempdir().unwrap();
    let events = history(revisions, 1_000, 7);
    let t = Instant::now();
    let (db, _clock) = load_mnemon(&dir.path().join("h.redb"), &events, 2_000);
    let m = t.elapsed();
    let t = Instant::now();
    let mut sql = Sqlite::open(&dir.path().join("h.sqlite"));
    sql.load(&events, 2_000);
    let s = t.elapsed();
    eprintln!(
        "loaded {revisions} revisions: mnemon {:.1}s ({:.0}/s), sqlite {:.1}s ({:.0}/s)",
        m.as_secs_f64(),
        revisions as f64 / m.as_secs_f64(),
        s.as_secs_f64(),
        revisions as f64 / s.as_secs_f64()
    );
    Loaded { _dir: dir, db, sql, events }
}

fn as_of(c: &mut Criterion) {
    let mut sizes = vec![100_000usize];
    if std::env::var("MNEMON_BENCH_BIG").map_or(true, |v| v != "0") {
        sizes.push(1_000_000);
    }
    for size in sizes {
        let l = load(size);
        let end = l.events.last().unwrap().time();
        let past = l.events[l.events.len() / 2].time();
        // 100 events (simulated minutes) back: most of the live set then is still live now.
        let recent = l.events[l.events.len() - 100].time();
        let mut g = c.benchmark_group(format!("valid_at_{}k", size / 1000));
        g.sample_size(30).measurement_time(Duration::from_secs(4));
        for (label, v) in [("now", end + 1), ("recent", recent), ("past", past)] {
            let n_mnemon = mnemon_valid_at(&l.db, v).len();
            let n_sql = l.sql.valid_at("bench", v).len();
            assert_eq!(n_mnemon, n_sql, "the engines disagree at {label}");
            eprintln!("valid_at_{}k/{label}: {n_mnemon} records", size / 1000);
            g.bench_with_input(BenchmarkId::new("mnemon", label), &v, |b, &v| {
                b.iter(|| black_box(mnemon_valid_at(&l.db, v)))
            });
            g.bench_with_input(BenchmarkId::new("sqlite", label), &v, |b, &v| {
                b.iter(|| black_box(l.sql.valid_at("bench", v)))
            });
        }
        g.finish();

        let ids: Vec<RecordId> = l
            .events
            .iter()
            .step_by(97)
            .map(|e| match e {
                Event::Insert { id, .. } | Event::Revise { id, .. } | Event::Retire { id, .. } => *id,
            })
            .collect();
        let mut g = c.benchmark_group(format!("get_{}k", size / 1000));
        g.sample_size(30).measurement_time(Duration::from_secs(3)).throughput(Throughput::Elements(1));
        let ns = namespace();
        let mut i = 0usize;
        g.bench_function("mnemon", |b| {
            b.iter(|| {
                i = (i + 1) % ids.len();
                black_box(l.db.snapshot().unwrap().latest(&ns, ids[i]).unwrap())
            })
        });
        let mut i = 0usize;
        g.bench_function("sqlite", |b| {
            b.iter(|| {
                i = (i + 1) % ids.len();
                black_box(l.sql.get("bench", ids[i]))
            })
        });
        g.finish();
    }
}

/// What a writable open's verification (`DbBuilder::verify_up_to`) costs: opening a file of
/// 100,000 revisions for writing, and closing it, verified and not.
fn open_for_writing(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("o.redb");
    drop(load_mnemon(&path, &history(100_000, 1_000, 7), 2_000));
    let mib = std::fs::metadata(&path).unwrap().len() as f64 / (1024.0 * 1024.0);
    eprintln!("open_for_writing: a file of {mib:.1} MiB");
    let mut g = c.benchmark_group("open_for_writing");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    for (label, limit) in [("unverified", 0), ("verified", u64::MAX)] {
        g.bench_function(label, |b| {
            b.iter(|| drop(black_box(Db::builder(&path).verify_up_to(limit).open().unwrap())))
        });
    }
    g.finish();
}

criterion_group!(benches, inserts, group_commit, as_of, open_for_writing);
criterion_main!(benches);
