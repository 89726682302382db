//! Drive one workload for a profiler: `profile (now|recent|past|known|insert|batch|many|gc|ratio|jobs|expire|fresh|lexical) [n]`.
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
        "fresh" => {
            // Lexical search latency as the fresh set fills: 20,000 records in bulk commits,
            // then one-record commits until the namespace holds FRESH_LIMIT / 2 - 1 and then
            // FRESH_LIMIT - 1 fresh texts; at each, 2,000 searches of two or three terms
            // (MNEMON_BENCH_WORDS=30 for the texts of docs/benchmarks.md, "Where a commit of 16
            // writes its pages").
            let db = mnemon::Db::create(dir.path().join("s.redb")).unwrap();
            let limit = mnemon_storage::FRESH_LIMIT;
            let ns = mnemon_bench::namespace();
            let mut n = 0u64;
            for c in 0..20u64 {
                let ops = (0..1_000).map(|i| WriteOp::Insert(small_record(c * 1_000 + i))).collect();
                db.store().write_with(ops, mnemon::Durability::Eventual).unwrap();
                n += 1_000;
            }
            for target in [limit / 2 - 1, limit - 1] {
                while db.snapshot().unwrap().fresh_texts(&ns).unwrap() != target {
                    db.store()
                        .write_with(vec![WriteOp::Insert(small_record(n))], mnemon::Durability::Eventual)
                        .unwrap();
                    n += 1;
                }
                let snap = db.snapshot().unwrap();
                let q = mnemon::ListQuery::new();
                let queries = ["w3 w40 w700", "w1 w2", "w12 w345 w2000", "w5 w77"];
                for _ in 0..50 {
                    snap.lexical_search(&ns, queries[0], &q, 10).unwrap();
                }
                let mut each = Vec::with_capacity(2_000);
                for i in 0..2_000 {
                    let t = Instant::now();
                    snap.lexical_search(&ns, queries[i % 4], &q, 10).unwrap();
                    each.push(t.elapsed().as_secs_f64() * 1e6);
                }
                each.sort_by(f64::total_cmp);
                println!(
                    "{target} fresh texts: p50 {:.0} us, mean {:.0} us",
                    each[each.len() / 2],
                    each.iter().sum::<f64>() / each.len() as f64
                );
            }
        }
        "lexical" => {
            // The workload of `cargo bench --bench lexical`: `size` texts of 30 words loaded in
            // commits of 10,000, then 20,000 lexical top-10 searches of three words.
            let db = mnemon::Db::create(dir.path().join("s.redb")).unwrap();
            let ns = db.ns("bench").unwrap();
            let texts: Vec<String> = (0..size as u64).map(|i| mnemon_bench::realistic_text(i, 30)).collect();
            for chunk in texts.chunks(10_000) {
                let ops = chunk
                    .iter()
                    .map(|t| {
                        WriteOp::Insert(mnemon::NewRecord::new(
                            ns.name().clone(),
                            mnemon::body::Learning { text: t.clone(), ..Default::default() },
                        ))
                    })
                    .collect();
                db.store().write(ops).unwrap();
            }
            let queries: Vec<String> =
                (0..200).map(|q| mnemon_bench::realistic_text(10_000_000 + q, 3)).collect();
            let start = Instant::now();
            let rounds = 20_000;
            for i in 0..rounds {
                let hits =
                    ns.search(&queries[i % 200]).mode(mnemon::TextMode::Lexical).limit(10).run().unwrap();
                assert_eq!(hits.len(), 10);
            }
            println!("lexical: {:.3} ms per search", start.elapsed().as_secs_f64() * 1e3 / rounds as f64);
        }
        "jobs" => {
            // Per-job cost inside a commit: 20,000 one-record jobs submitted at once.
            let db = mnemon::Db::create(dir.path().join("j.redb")).unwrap();
            for round in 0..3u64 {
                let jobs: Vec<Vec<WriteOp>> =
                    (0..20_000).map(|i| vec![WriteOp::Insert(small_record(round * 100_000 + i))]).collect();
                let before = db.snapshot().unwrap().meta().commit_seq;
                let t = Instant::now();
                let n = db.store().write_many(jobs, mnemon::Durability::Immediate).len();
                let el = t.elapsed();
                let commits = db.snapshot().unwrap().meta().commit_seq - before;
                println!("{:.1} µs per job ({n} jobs, {commits} commits)", el.as_secs_f64() * 1e6 / n as f64);
            }
        }
        "many" => {
            // One thread, write_many of N one-record jobs per call: a commit of N jobs with no
            // hand-off between threads (N from the second argument, 16 by default).
            let per: u64 = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(16);
            let db = mnemon::Db::create(dir.path().join("m.redb")).unwrap();
            // MNEMON_PROFILE_EVENTUAL=1: commits without fsync, to time the CPU's part alone.
            let durability = if std::env::var_os("MNEMON_PROFILE_EVENTUAL").is_some() {
                mnemon::Durability::Eventual
            } else {
                mnemon::Durability::Immediate
            };
            prefill(&db);
            let calls: u64 =
                std::env::var("MNEMON_PROFILE_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000);
            let t = Instant::now();
            let mut each: Vec<f64> = Vec::with_capacity(calls as usize);
            for c in 0..calls {
                let jobs: Vec<Vec<WriteOp>> =
                    (0..per).map(|i| vec![WriteOp::Insert(small_record(c * per + i))]).collect();
                let one = Instant::now();
                db.store().write_many(jobs, durability);
                each.push(one.elapsed().as_secs_f64() * 1e6);
            }
            let el = t.elapsed();
            println!("{per} jobs per commit: {:.0} us per commit", el.as_secs_f64() * 1e6 / calls as f64);
            // The commits by duration: the median one, and the time of the slowest (the
            // commits that merge the fresh texts, or move the segments) against the rest.
            each.sort_by(f64::total_cmp);
            let total: f64 = each.iter().sum();
            let share = |from: f64| {
                let n = (each.len() as f64 * from) as usize;
                each[each.len() - n..].iter().sum::<f64>() / total * 100.0
            };
            println!(
                "  median {:.0} us, p90 {:.0} us; the slowest 1/16 of the commits take {:.1} % of the time, the slowest 1/256 {:.1} %",
                each[each.len() / 2],
                each[each.len() * 9 / 10],
                share(1.0 / 16.0),
                share(1.0 / 256.0)
            );
            if let Some(keep) = std::env::var_os("MNEMON_PROFILE_KEEP") {
                // Keep the file for a look at its tables (`examples/table_stats.rs`).
                drop(db);
                std::fs::copy(dir.path().join("m.redb"), keep).unwrap();
            }
        }
        "gc" => {
            let window: u64 = std::env::var("WINDOW_US").ok().and_then(|v| v.parse().ok()).unwrap_or(250);
            let open = |create: bool| {
                mnemon::Db::builder(dir.path().join("g.redb"))
                    .create(create)
                    .group_commit_window(std::time::Duration::from_micros(window))
                    .open()
                    .unwrap()
            };
            let db = open(true);
            prefill(&db);
            // MNEMON_PROFILE_REOPEN=1: close the file after the prefill and open it again, as
            // the criterion bench opens its copy (redb's cache starts cold).
            let db = if std::env::var_os("MNEMON_PROFILE_REOPEN").is_some() {
                drop(db);
                open(false)
            } else {
                db
            };
            for threads in std::env::args().nth(2).map_or(vec![1usize, 4, 16], |t| vec![t.parse().unwrap()]) {
                let per = std::env::var("MNEMON_PROFILE_CALLS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(if threads == 16 { 600 } else { 200u64 });
                let before = db.snapshot().unwrap().meta().commit_seq;
                let usage = Usage::now();
                // MNEMON_PROFILE_ROUNDS=R: R rounds of fresh threads, as a criterion sample's
                // iterations start them.
                let shared_counter = std::env::var_os("MNEMON_PROFILE_SHARED_COUNTER").is_some();
                let rounds: u64 =
                    std::env::var("MNEMON_PROFILE_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
                let t = Instant::now();
                // MNEMON_PROFILE_TICK=1: print the writes of every half second (does the
                // rate hold over a long run?).
                let done = std::sync::atomic::AtomicBool::new(false);
                let written = std::sync::atomic::AtomicU64::new(0);
                let (done, written) = (&done, &written);
                std::thread::scope(|s| {
                    if std::env::var_os("MNEMON_PROFILE_TICK").is_some() {
                        s.spawn(move || {
                            let mut last = 0;
                            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                                std::thread::sleep(std::time::Duration::from_millis(500));
                                let now = written.load(std::sync::atomic::Ordering::Relaxed);
                                println!("  {:.0} writes/s", (now - last) as f64 * 2.0);
                                last = now;
                            }
                        });
                    }
                    for round in 0..rounds {
                        std::thread::scope(|s| {
                            for th in 0..threads {
                                let db = db.clone();
                                s.spawn(move || {
                                    for i in 0..per {
                                        // MNEMON_PROFILE_SHARED_COUNTER=1: numbered from one
                                        // counter shared by the threads, as the criterion bench
                                        // numbers its records (whose number is a term of its text).
                                        let n = if shared_counter {
                                            COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                                        } else {
                                            round * 100_000_000 + th as u64 * 1_000_000 + i
                                        };
                                        db.store().write(vec![WriteOp::Insert(small_record(n))]).unwrap();
                                        written.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                    }
                                });
                            }
                        });
                    }
                    done.store(true, std::sync::atomic::Ordering::Relaxed);
                });
                let el = t.elapsed();
                let commits = db.snapshot().unwrap().meta().commit_seq - before;
                let writes = threads as u64 * per * rounds;
                let used = Usage::now().since(&usage);
                println!(
                    "{threads:2} threads: {:.0} writes/s, {:.1} writes per commit, per write: {:.1} µs CPU \
                     ({:.1} user), {:.2} voluntary and {:.2} involuntary context switches",
                    writes as f64 / el.as_secs_f64(),
                    writes as f64 / commits as f64,
                    used.cpu_us / writes as f64,
                    used.user_us / writes as f64,
                    used.voluntary as f64 / writes as f64,
                    used.involuntary as f64 / writes as f64,
                );
            }
        }
        "ratio" => {
            // One writer and N writers (the second argument, 16 by default) in turn, for
            // MNEMON_PROFILE_ROUNDS rounds (10), each thread writing MNEMON_PROFILE_CALLS durable
            // records a round (400), on one file (prefilled with MNEMON_PROFILE_PREFILL records,
            // then reopened): the two rates over the same minutes and the same file sizes, so that
            // their ratio is not one hour's fsync against another's. Prints every round and the
            // ratio of the totals.
            let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(16);
            let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
            let (rounds, per) = (env("MNEMON_PROFILE_ROUNDS", 10), env("MNEMON_PROFILE_CALLS", 400));
            let path = dir.path().join("r.redb");
            prefill(&mnemon::Db::create(&path).unwrap());
            let db = mnemon::Db::open(&path).unwrap();
            let mut totals = [(0u64, 0f64); 2];
            for round in 0..rounds {
                let mut rates = [0f64; 2];
                for (slot, threads) in [(0usize, 1usize), (1, n)] {
                    let t = Instant::now();
                    mnemon_bench::durable_writes(&db, threads, per, &COUNTER);
                    let secs = t.elapsed().as_secs_f64();
                    let writes = threads as u64 * per;
                    totals[slot].0 += writes;
                    totals[slot].1 += secs;
                    rates[slot] = writes as f64 / secs;
                }
                println!(
                    "round {round}: 1 writer {:.0}/s, {n} writers {:.0}/s, {:.2}x",
                    rates[0],
                    rates[1],
                    rates[1] / rates[0]
                );
            }
            let (one, many) = (totals[0].0 as f64 / totals[0].1, totals[1].0 as f64 / totals[1].1);
            println!("all rounds: 1 writer {one:.0}/s, {n} writers {many:.0}/s, {:.2}x", many / one);
        }
        "expire" => {
            // Records that stop being valid LIFE milliseconds after they start (the second
            // argument, 200 by default), 16 per commit without fsync, for 8 seconds: once their
            // ends pass, they pass all the time, as with records that expire. Prints the time
            // per commit of every second.
            let life: i64 = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(200);
            let db = mnemon::Db::create(dir.path().join("e.redb")).unwrap();
            let (start, mut lap, mut n, mut commits) = (Instant::now(), Instant::now(), 0u64, 0u64);
            while start.elapsed() < std::time::Duration::from_secs(8) {
                let until =
                    mnemon::Timestamp::from_micros(mnemon::Timestamp::now().as_micros() + life * 1000);
                let ops: Vec<WriteOp> = (0..16)
                    .map(|_| {
                        n += 1;
                        let mut r = small_record(n);
                        r.valid_until = Some(until);
                        WriteOp::Insert(r)
                    })
                    .collect();
                db.store().write_with(ops, mnemon::Durability::Eventual).unwrap();
                commits += 1;
                if lap.elapsed() >= std::time::Duration::from_secs(1) {
                    println!(
                        "{:.0} s: {:.0} us per commit of 16 ({n} records)",
                        start.elapsed().as_secs_f64(),
                        lap.elapsed().as_secs_f64() * 1e6 / commits as f64
                    );
                    (lap, commits) = (Instant::now(), 0);
                }
            }
        }
        "insert" | "batch" => {
            let db = mnemon::Db::create(dir.path().join("p.redb")).unwrap();
            let t = Instant::now();
            let n = if mode == "insert" { 3_000 } else { 100 };
            for i in 0..n {
                if mode == "insert" {
                    db.store().write(vec![WriteOp::Insert(small_record(i))]).unwrap();
                } else {
                    let ops = (0..1000).map(|j| WriteOp::Insert(small_record(i * 1000 + j))).collect();
                    db.store().write(ops).unwrap();
                }
            }
            println!("{mode}: {:?} per commit", t.elapsed() / n as u32);
        }
        _ => {
            let events = history(size, 1_000, 7);
            let (db, _) = load_mnemon(&dir.path().join("h.redb"), &events, 2_000);
            let bytes = std::fs::metadata(dir.path().join("h.redb")).unwrap().len();
            let sizes = db.snapshot().unwrap().table_sizes().unwrap();
            println!(
                "file {:.0} MiB, tables {sizes:?}, {} bytes per Record, {} per Body",
                bytes as f64 / 1048576.0,
                std::mem::size_of::<mnemon::Record>(),
                std::mem::size_of::<mnemon::Body>()
            );
            let end = events.last().unwrap().time();
            // "recent": 100 events (simulated minutes) before the end, when most records live
            // then are still live now; "past": the middle of the history.
            let v = match mode {
                "now" => end + 1,
                "recent" => events[events.len() - 100].time(),
                _ => events[events.len() / 2].time(),
            };
            // "known": the middle of the history as it was known then (the timeline's path).
            let known = (mode == "known").then(|| {
                let snap = db.snapshot().unwrap();
                let id = match &events[events.len() / 2] {
                    mnemon_bench::Event::Insert { id, .. }
                    | mnemon_bench::Event::Revise { id, .. }
                    | mnemon_bench::Event::Retire { id, .. } => *id,
                };
                let revs = snap.history(&mnemon_bench::namespace(), id).unwrap();
                revs.first().unwrap().recorded_at
            });
            if let Some(ready) = std::env::var_os("MNEMON_PROFILE_READY") {
                std::fs::write(ready, b"").unwrap();
            }
            let reps: u32 = std::env::var("MNEMON_PROFILE_REPS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(if mode == "now" { 3_000 } else { 600 });
            let t = Instant::now();
            let mut n = 0;
            for _ in 0..reps {
                n += match known {
                    None => mnemon_valid_at(&db, v).len(),
                    Some(k) => db
                        .snapshot()
                        .unwrap()
                        .list(
                            &mnemon_bench::namespace(),
                            &mnemon::ListQuery::new()
                                .as_of(mnemon::AsOf::valid_at(mnemon::Timestamp::from_micros(v)).known_at(k)),
                        )
                        .unwrap()
                        .len(),
                };
            }
            println!("{mode}: {:?} per query ({} records)", t.elapsed() / reps, n / reps as usize);
            if let Some(keep) = std::env::var_os("MNEMON_PROFILE_KEEP") {
                drop(db);
                std::fs::copy(dir.path().join("h.redb"), keep).unwrap();
            }
        }
    }
}

/// The numbers of `MNEMON_PROFILE_SHARED_COUNTER`'s records.
static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// MNEMON_PROFILE_PREFILL=N: start from a file that already holds N records (put in by commits
/// of 1,000), so that commits of different sizes meet trees of one depth.
fn prefill(db: &mnemon::Db) {
    let n: u64 = std::env::var("MNEMON_PROFILE_PREFILL").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    if std::env::var_os("MNEMON_PROFILE_PREFILL_SINGLE").is_some() {
        // As the criterion benches grow their files: durable one-record commits, here from 16
        // threads (group commits), so that redb's free pages are as fragmented.
        std::thread::scope(|s| {
            for th in 0..16u64 {
                s.spawn(move || {
                    for i in 0..n / 16 {
                        db.store()
                            .write(vec![WriteOp::Insert(small_record(u64::MAX / 2 + th * 1_000_000 + i))])
                            .unwrap();
                    }
                });
            }
        });
    } else {
        for c in 0..n.div_ceil(1_000) {
            let ops =
                (0..1_000).map(|i| WriteOp::Insert(small_record(u64::MAX / 2 + c * 1_000 + i))).collect();
            db.store().write_with(ops, mnemon::Durability::Eventual).unwrap();
        }
    }
    db.sync().unwrap();
    if let Some(ready) = std::env::var_os("MNEMON_PROFILE_READY") {
        // For a profiler attached from here on (`perf record -p`), leaving the prefill out.
        std::fs::write(ready, b"").unwrap();
        // MNEMON_PROFILE_GO=FILE: then wait for FILE, so that a profiler switched on at the
        // marker (`callgrind_control -i on`) sees exactly the measured part.
        if let Some(go) = std::env::var_os("MNEMON_PROFILE_GO") {
            while !std::path::Path::new(&go).exists() {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    }
}

/// The process's CPU time and context switches, over all its threads (getrusage).
struct Usage {
    cpu_us: f64,
    user_us: f64,
    voluntary: i64,
    involuntary: i64,
}

impl Usage {
    #[allow(unsafe_code, reason = "one getrusage call")]
    fn now() -> Usage {
        let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes a whole `rusage` into the pointer it is given, which points
        // to one; RUSAGE_SELF is a valid `who`, so the call cannot fail.
        let u = unsafe {
            libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr());
            u.assume_init()
        };
        let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
        Usage {
            cpu_us: us(u.ru_utime) + us(u.ru_stime),
            user_us: us(u.ru_utime),
            voluntary: u.ru_nvcsw,
            involuntary: u.ru_nivcsw,
        }
    }

    fn since(&self, before: &Usage) -> Usage {
        Usage {
            cpu_us: self.cpu_us - before.cpu_us,
            user_us: self.user_us - before.user_us,
            voluntary: self.voluntary - before.voluntary,
            involuntary: self.involuntary - before.involuntary,
        }
    }
}
