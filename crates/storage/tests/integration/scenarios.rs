//! Scenario tests of the storage engine.

use std::sync::Arc;

use mnemon_storage::body::{Decision, Entity, Learning};
use mnemon_storage::*;
use redb::ReadableTable;

fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(dir.path().join("s.redb"), StoreOptions { create: true, ..Default::default() }).unwrap()
}

/// A store whose commits carry at most `max_jobs` jobs.
fn open_with_max_jobs(dir: &tempfile::TempDir, max_jobs: usize) -> Store {
    let options = StoreOptions { create: true, max_jobs_per_commit: max_jobs, ..Default::default() };
    Store::open(dir.path().join("s.redb"), options).unwrap()
}

fn ns(name: &str) -> Namespace {
    Namespace::new(name).unwrap()
}

fn entity(name: &str) -> Body {
    Entity { name: name.into(), ..Default::default() }.into()
}

#[test]
fn identity_conflicts_follow_the_declared_policy() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let n = ns("p");
    let first = NewRecord::new(n.clone(), entity("Redis"));
    let first_id = first.id;
    store.write(vec![WriteOp::Insert(first)]).unwrap();

    // Same normalised name: an error by default.
    let err = store.write(vec![WriteOp::Insert(NewRecord::new(n.clone(), entity("  redis ")))]).unwrap_err();
    assert!(matches!(err, Error::IdentityConflict { existing, .. } if existing == first_id), "{err}");

    // ReturnExisting writes nothing.
    let mut again = NewRecord::new(n.clone(), entity("REDIS"));
    again.on_conflict = OnConflict::ReturnExisting;
    let r = store.write(vec![WriteOp::Insert(again)]).unwrap();
    assert_eq!(r.outcomes, vec![Outcome::Existing { id: first_id }]);

    // Supersede replaces it and takes over the key.
    let mut newer = NewRecord::new(n.clone(), entity("Redis"));
    newer.on_conflict = OnConflict::Supersede;
    let newer_id = newer.id;
    let r = store.write(vec![WriteOp::Insert(newer)]).unwrap();
    assert_eq!(r.outcomes, vec![Outcome::Superseded { old: first_id, new: newer_id }]);
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.identity(&n, Kind::Entity, "redis").unwrap(), Some(newer_id));
    assert_eq!(snap.chain(&n, first_id).unwrap().len(), 2);

    // Another namespace is another world.
    store.write(vec![WriteOp::Insert(NewRecord::new(ns("q"), entity("Redis")))]).unwrap();
    // Retiring releases the key.
    store.write(vec![WriteOp::Retire { namespace: n.clone(), id: newer_id, at: None }]).unwrap();
    store.write(vec![WriteOp::Insert(NewRecord::new(n.clone(), entity("redis")))]).unwrap();
    assert!(store.snapshot().unwrap().verify().unwrap().is_empty());
}

#[test]
fn a_failing_job_writes_nothing_and_spares_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let n = ns("p");
    let good = |t: &str| {
        WriteOp::Insert(NewRecord::new(n.clone(), Learning { text: t.into(), ..Default::default() }))
    };
    let unknown = RecordId::new();
    let jobs = vec![
        vec![good("a1"), good("a2")],
        vec![good("b1"), WriteOp::Retire { namespace: n.clone(), id: unknown, at: None }],
        vec![good("c1")],
    ];
    let results = store.write_many(jobs, Durability::Immediate);
    assert!(results[0].is_ok());
    assert!(matches!(&results[1], Err(Error::NotFound { id, .. }) if *id == unknown));
    assert!(results[2].is_ok());
    let texts: Vec<String> = store
        .snapshot()
        .unwrap()
        .list(&n, &ListQuery::new())
        .unwrap()
        .iter()
        .map(|r| r.body.text())
        .collect();
    assert_eq!(texts.len(), 3);
    assert!(!texts.contains(&"b1".to_string()), "the failed job left b1 behind");
}

#[test]
fn operations_in_one_job_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let n = ns("p");
    let rec = NewRecord::new(n.clone(), Decision { title: "draft".into(), ..Default::default() });
    let id = rec.id;
    let mut fix = Revise::new(n.clone(), id);
    fix.body = Some(Decision { title: "final".into(), ..Default::default() }.into());
    let r = store.write(vec![WriteOp::Insert(rec), WriteOp::Revise(fix)]).unwrap();
    assert_eq!(r.outcomes, vec![Outcome::Written { id, rev: 0 }, Outcome::Written { id, rev: 1 }]);
    let h = store.snapshot().unwrap().history(&n, id).unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(h[0].recorded_at, h[1].recorded_at, "one commit, one transaction time");
    assert_eq!(h[1].body.title(), "final");
}

#[test]
fn optimistic_revision_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let n = ns("p");
    let rec = NewRecord::new(n.clone(), Learning { text: "x".into(), ..Default::default() });
    let id = rec.id;
    store.write(vec![WriteOp::Insert(rec)]).unwrap();
    let mut stale = Revise::new(n.clone(), id);
    stale.expected_rev = Some(0);
    store.write(vec![WriteOp::Revise(stale.clone())]).unwrap();
    let err = store.write(vec![WriteOp::Revise(stale)]).unwrap_err();
    assert!(matches!(err, Error::RevisionConflict { expected: 0, found: 1, .. }), "{err}");
}

#[test]
fn concurrent_durable_writers_share_commits() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let n = ns("p");
    let threads = 16;
    let per_thread = 40;
    // One record every thread keeps revising, opening and closing its validity: commits that
    // take in late jobs change it at more than one transaction time.
    let shared = NewRecord::new(n.clone(), Learning { text: "shared".into(), ..Default::default() });
    let shared_id = shared.id;
    store.write(vec![WriteOp::Insert(shared)]).unwrap();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let store = store.clone();
            let n = n.clone();
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                for i in 0..per_thread {
                    let mut revise = Revise::new(n.clone(), shared_id);
                    revise.body =
                        Some(Learning { text: format!("shared {t}-{i}"), ..Default::default() }.into());
                    revise.valid_until = Some((i % 2 == 0).then(|| SystemClock.now().plus_micros(1_000_000)));
                    store.write(vec![WriteOp::Revise(revise)]).unwrap();
                    let rec = NewRecord::new(
                        n.clone(),
                        Learning { text: format!("{t}-{i}"), ..Default::default() },
                    );
                    let id = rec.id;
                    let before = SystemClock.now();
                    let receipt = store.write(vec![WriteOp::Insert(rec)]).unwrap();
                    // Jobs that join a commit while it is being built are recorded when they
                    // join: never before the call was made.
                    assert!(receipt.tx >= before, "recorded at {} before the call at {before}", receipt.tx);
                    seen.push((id, before, receipt.tx));
                }
                seen
            })
        })
        .collect();
    let mut seen = Vec::new();
    for h in handles {
        seen.extend(h.join().unwrap());
    }
    let snap = store.snapshot().unwrap();
    let total = threads * per_thread;
    assert_eq!(snap.list(&n, &ListQuery::new()).unwrap().len(), total + 1);
    let commits = snap.meta().commit_seq as usize;
    assert!(commits < 2 * total, "{commits} commits for {} writes: no group commit happened", 2 * total);
    // The timeline agrees with the revisions, at every transaction time.
    assert!(snap.verify().unwrap().is_empty(), "{:?}", snap.verify());
    let history = snap.history(&n, shared_id).unwrap();
    assert_eq!(history.len(), total + 1);
    assert!(history.windows(2).all(|w| w[0].recorded_at <= w[1].recorded_at));
    for (id, before, tx) in seen {
        let r = snap.get(&n, id, AsOf::now()).unwrap().unwrap();
        assert_eq!(r.recorded_at, tx);
        // What was known just before the call: not this record.
        let earlier = AsOf::now().known_at(before.plus_micros(-1));
        assert!(snap.get(&n, id, earlier).unwrap().is_none(), "{id} known before it was written");
    }
}

/// The callers of a commit are woken as a tree (each woken caller wakes two more): with many
/// writers, single jobs and `write_many` calls of several jobs, and commits of at most 5 jobs
/// (so callers span commits and get the turn handed over), every caller wakes up with all its
/// results. A caller left asleep would hang: a watchdog fails the test instead.
#[test]
fn every_caller_of_a_commit_is_woken() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with_max_jobs(&dir, 5);
    let n = ns("p");
    let (threads, calls) = (48, 12);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    {
        let (store, n) = (store.clone(), n.clone());
        std::thread::spawn(move || {
            std::thread::scope(|s| {
                for t in 0..threads {
                    let (store, n) = (store.clone(), n.clone());
                    s.spawn(move || {
                        for c in 0..calls {
                            let jobs = 1 + (t + c) % 3;
                            let records: Vec<NewRecord> = (0..jobs)
                                .map(|j| {
                                    let body =
                                        Learning { text: format!("{t}-{c}-{j}"), ..Default::default() };
                                    NewRecord::new(n.clone(), body)
                                })
                                .collect();
                            let ids: Vec<RecordId> = records.iter().map(|r| r.id).collect();
                            let batch = records.into_iter().map(|r| vec![WriteOp::Insert(r)]).collect();
                            let results = store.write_many(batch, Durability::Immediate);
                            // Each caller wakes with its own jobs' results, in order.
                            let got: Vec<Vec<Outcome>> =
                                results.into_iter().map(|r| r.unwrap().outcomes).collect();
                            let want: Vec<Vec<Outcome>> =
                                ids.iter().map(|&id| vec![Outcome::Written { id, rev: 0 }]).collect();
                            assert_eq!(got, want);
                        }
                    });
                }
            });
            let _ = done_tx.send(());
        });
    }
    match done_rx.recv_timeout(std::time::Duration::from_secs(300)) {
        Ok(()) => {}
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("a caller was never woken: the writers did not finish in 300 s")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("a writer failed (see above)"),
    }
    let written: usize = (0..threads).flat_map(|t| (0..calls).map(move |c| 1 + (t + c) % 3)).sum();
    assert_eq!(store.snapshot().unwrap().list(&n, &ListQuery::new()).unwrap().len(), written);
}

/// Callers whose jobs do not fit in one commit (at most 3 jobs here) get the turn handed over
/// and commit the rest themselves; every caller gets its own results, in order, including a
/// failing job among good ones.
#[test]
fn a_full_queue_hands_the_turn_to_waiting_callers() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with_max_jobs(&dir, 3);
    let n = ns("p");
    let threads = 6;
    let jobs_per_call = 7;
    let calls = 4;
    std::thread::scope(|s| {
        for t in 0..threads {
            let store = store.clone();
            let n = n.clone();
            s.spawn(move || {
                for c in 0..calls {
                    let mut jobs: Vec<Vec<WriteOp>> = Vec::new();
                    let mut ids = Vec::new();
                    for j in 0..jobs_per_call {
                        let rec = NewRecord::new(
                            n.clone(),
                            Learning { text: format!("{t}-{c}-{j}"), ..Default::default() },
                        );
                        ids.push(rec.id);
                        jobs.push(vec![WriteOp::Insert(rec)]);
                    }
                    // Job 3 of every call retires a record that does not exist.
                    jobs[3] = vec![WriteOp::Retire { namespace: n.clone(), id: RecordId::new(), at: None }];
                    let results = store.write_many(jobs, Durability::Immediate);
                    assert_eq!(results.len(), jobs_per_call);
                    let mut seqs = Vec::new();
                    for (j, r) in results.into_iter().enumerate() {
                        if j == 3 {
                            assert!(matches!(r, Err(Error::NotFound { .. })), "{r:?}");
                            continue;
                        }
                        let r = r.unwrap();
                        assert_eq!(r.outcomes, vec![Outcome::Written { id: ids[j], rev: 0 }]);
                        seqs.push(r.commit_seq);
                    }
                    assert!(seqs.windows(2).all(|w| w[0] <= w[1]), "jobs committed out of order: {seqs:?}");
                }
            });
        }
    });
    let snap = store.snapshot().unwrap();
    let written = threads * calls * (jobs_per_call - 1);
    assert_eq!(snap.list(&n, &ListQuery::new()).unwrap().len(), written);
    let commits = snap.meta().commit_seq as usize;
    assert!(commits >= threads * calls * jobs_per_call / 3, "{commits} commits: more than 3 jobs in one");
    // No jobs: nothing to wait for, nothing committed.
    assert!(store.write_many(Vec::new(), Durability::Immediate).is_empty());
    assert_eq!(store.snapshot().unwrap().meta().commit_seq as usize, commits);
}

#[test]
fn eventual_writes_survive_a_clean_close() {
    let dir = tempfile::tempdir().unwrap();
    let n = ns("p");
    {
        let store = open(&dir);
        for i in 0..10 {
            let rec = NewRecord::new(n.clone(), Learning { text: format!("{i}"), ..Default::default() });
            store.write_with(vec![WriteOp::Insert(rec)], Durability::Eventual).unwrap();
        }
    }
    let store = open(&dir);
    assert_eq!(store.snapshot().unwrap().list(&n, &ListQuery::new()).unwrap().len(), 10);
}

#[test]
fn restore_requires_an_ordered_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let n = ns("p");
    let rec = NewRecord::new(n.clone(), Learning { text: "x".into(), ..Default::default() });
    let id = rec.id;
    store.write(vec![WriteOp::Insert(rec)]).unwrap();
    store.write(vec![WriteOp::Retire { namespace: n.clone(), id, at: None }]).unwrap();
    let history = store.snapshot().unwrap().history(&n, id).unwrap();

    let dir2 = tempfile::tempdir().unwrap();
    let other = open(&dir2);
    let err = other.write(vec![WriteOp::Restore(Box::new(history[1].clone()))]).unwrap_err();
    assert!(matches!(err, Error::RestoreMismatch { rev: 1, .. }), "{err}");
    other.write(vec![WriteOp::Restore(Box::new(history[0].clone()))]).unwrap();
    other.write(vec![WriteOp::Restore(Box::new(history[1].clone()))]).unwrap();
    let mut tampered = history[1].clone();
    tampered.body = Learning { text: "changed".into(), ..Default::default() }.into();
    let err = other.write(vec![WriteOp::Restore(Box::new(tampered))]).unwrap_err();
    assert!(matches!(err, Error::RestoreMismatch { .. }), "{err}");
    let restored = other.snapshot().unwrap().history(&n, id).unwrap();
    assert_eq!(
        restored.iter().map(|r| (r.rev, r.recorded_at)).collect::<Vec<_>>(),
        history.iter().map(|r| (r.rev, r.recorded_at)).collect::<Vec<_>>()
    );
    // Later commits still get later transaction times than anything restored.
    let r = other.write(vec![WriteOp::Insert(NewRecord::new(n.clone(), entity("e")))]).unwrap();
    assert!(r.tx > history[1].recorded_at);
}

/// A few thousand records over a simulated year, many back-dated, with small checkpoint gaps:
/// every listing at random past times matches a brute-force evaluation of the history.
/// A store on a manual clock at `t0`, with a small checkpoint gap so that histories split.
fn open_with_clock(dir: &tempfile::TempDir, t0: Timestamp) -> (Store, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(t0));
    let store = Store::open(
        dir.path().join("c.redb"),
        StoreOptions { create: true, clock: clock.clone(), min_checkpoint_gap: 16, ..Default::default() },
    )
    .unwrap();
    (store, clock)
}

/// A small deterministic generator.
fn lcg(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        seed >> 33
    }
}

/// Whether a listing valid at `v`, known at `k`, holds record `x`.
fn listed(snap: &Snapshot, n: &Namespace, x: RecordId, v: Timestamp, k: Timestamp) -> bool {
    snap.list(n, &ListQuery::new().as_of(AsOf::valid_at(v).known_at(k))).unwrap().iter().any(|r| r.id == x)
}

/// Every revision of a namespace, grouped by record, in revision order.
/// The number of current rows of the store in `dir` (closed).
fn store_current_rows(dir: &tempfile::TempDir) -> u64 {
    let store = Store::open(dir.path().join("c.redb"), StoreOptions::default()).unwrap();
    store.snapshot().unwrap().table_sizes().unwrap()["current"]
}

fn revisions_by_record(snap: &Snapshot, n: &Namespace) -> Vec<Vec<Record>> {
    let mut all: Vec<Vec<Record>> = Vec::new();
    snap.for_each_revision(Some(n), |r| {
        match all.last_mut() {
            Some(v) if v[0].id == r.id => v.push(r),
            _ => all.push(vec![r]),
        }
        Ok(())
    })
    .unwrap();
    all
}

#[test]
fn long_backdated_history_lists_like_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Timestamp::parse("2024-01-01").unwrap();
    let (store, clock) = open_with_clock(&dir, t0);
    let n = ns("h");
    let day = 86_400_000_000i64;
    let mut next = lcg(7);
    let mut live: Vec<RecordId> = Vec::new();
    for step in 0..3000 {
        clock.advance(day / 8);
        let now = clock.now();
        let r = next() % 10;
        if r < 5 || live.len() < 20 {
            let back = (next() % 60) as i64 * day / 4;
            let mut rec =
                NewRecord::new(n.clone(), Learning { text: format!("s{step}"), ..Default::default() });
            rec.valid_from = Some(now.plus_micros(-back));
            live.push(rec.id);
            store.write(vec![WriteOp::Insert(rec)]).unwrap();
        } else if r < 8 {
            let id = live.swap_remove((next() as usize) % live.len());
            let at = now.plus_micros(-((next() % 4) as i64) * day / 8);
            let _ = store.write(vec![WriteOp::Retire { namespace: n.clone(), id, at: Some(at) }]);
        } else {
            let id = live[(next() as usize) % live.len()];
            let mut rev = Revise::new(n.clone(), id);
            rev.body = Some(Learning { text: format!("rev{step}"), ..Default::default() }.into());
            store.write(vec![WriteOp::Revise(rev)]).unwrap();
        }
    }
    let snap = store.snapshot().unwrap();
    let sizes = snap.table_sizes().unwrap();
    // Gaps hold about max(16, live) to 2x that many events: a few thousand events over a live
    // set of hundreds means a handful of checkpoints.
    assert!(sizes["checkpoints"] >= 3, "the timeline never split its gaps: {sizes:?}");
    let all = revisions_by_record(&snap, &n);
    let end = clock.now();
    for i in 0..40 {
        let v = Timestamp::from_micros(
            t0.as_micros() + (end.as_micros() - t0.as_micros()) * i / 40 + (next() % 1000) as i64,
        );
        let k = if i % 3 == 0 {
            Timestamp::from_micros(t0.as_micros() + (v.as_micros() - t0.as_micros()) * 2)
        } else {
            Timestamp::MAX
        };
        let kk = k.as_micros().min(i64::MAX - 1);
        let mut want: Vec<(RecordId, u32)> = all
            .iter()
            .filter_map(|revs| revs.iter().rev().find(|r| r.recorded_at.as_micros() <= kk))
            .filter(|r| r.is_visible_at(v))
            .map(|r| (r.id, r.rev))
            .collect();
        want.sort();
        let (got, path) =
            snap.list_explain(&n, &ListQuery::new().as_of(AsOf { valid: Some(v), known: Some(k) })).unwrap();
        let mut got: Vec<(RecordId, u32)> = got.iter().map(|r| (r.id, r.rev)).collect();
        got.sort();
        assert_eq!(got, want, "valid {v} known {k} via {path:?}");
    }
    assert!(snap.verify().unwrap().is_empty());
}

#[test]
fn forget_leaves_no_trace_in_any_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let n = ns("p");
    let rec = NewRecord::new(n.clone(), entity("Secret Person"));
    let id = rec.id;
    store.write(vec![WriteOp::Insert(rec)]).unwrap();
    store.write(vec![WriteOp::Retire { namespace: n.clone(), id, at: None }]).unwrap();
    let before = store.snapshot().unwrap().table_sizes().unwrap();
    store.write(vec![WriteOp::Forget { namespace: n.clone(), id }]).unwrap();
    let snap = store.snapshot().unwrap();
    assert!(snap.history(&n, id).unwrap().is_empty());
    assert_eq!(snap.identity(&n, Kind::Entity, "secret person").unwrap(), None);
    let after = snap.table_sizes().unwrap();
    assert_eq!(after["revisions"], before["revisions"] - 2);
    assert!(after["events"] < before["events"]);
    assert!(snap.verify().unwrap().is_empty());
    let err = store.write(vec![WriteOp::Forget { namespace: n, id }]).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }));
}

/// A file whose large commits left free pages behind shrinks when compacted, and keeps every
/// record, its history, the lexical index and its integrity. Compaction refuses a file open in
/// another handle, one that is not a mnemon database, and a missing one.
#[test]
fn compaction_gives_free_pages_back_and_keeps_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.redb");
    let n = ns("p");
    let mut ids = Vec::new();
    {
        let store = open_at(&path);
        // Bulk commits, then a merge that moves their postings: the replaced pages stay in the
        // file.
        for round in 0..6 {
            let mut ops = Vec::new();
            for i in 0..1500 {
                let rec = NewRecord::new(
                    n.clone(),
                    Learning {
                        text: format!("round {round} note {i} about cache {}", i % 97),
                        ..Default::default()
                    },
                );
                ids.push(rec.id);
                ops.push(WriteOp::Insert(rec));
            }
            store.write_with(ops, Durability::Eventual).unwrap();
        }
        // Each bulk commit merged its texts into a segment; an explicit merge moves the
        // segments into the posting lists and frees their pages.
        store.write(vec![WriteOp::MergeTexts { namespace: n.clone() }]).unwrap();
        assert_eq!(store.snapshot().unwrap().table_sizes().unwrap()["segment postings"], 0);
        store.sync().unwrap();
        let r = Store::compact(&path).unwrap_err();
        assert!(matches!(r, Error::Open(OpenError::NeedsExclusive { operation: "compaction", .. })), "{r}");
        assert!(r.to_string().contains("c.redb") && r.to_string().contains("to itself"), "{r}");
    }
    let listed = |store: &Store| store.snapshot().unwrap().list(&n, &ListQuery::new()).unwrap().len();
    let hits = |store: &Store| {
        store.snapshot().unwrap().lexical_search(&n, "cache 42", &ListQuery::new(), 5).unwrap().len()
    };
    let (before_hits, before_list) = {
        let s = open_at(&path);
        (hits(&s), listed(&s))
    };
    let (before, after) = Store::compact(&path).unwrap();
    // 16.8 MB -> 8.5 MB when written.
    assert!(after < before * 3 / 4, "{before} -> {after} bytes");
    assert_eq!(after, std::fs::metadata(&path).unwrap().len());
    assert!(Store::check_integrity(&path).unwrap());
    let store = open_at(&path);
    assert_eq!((hits(&store), listed(&store)), (before_hits, before_list));
    assert_eq!(before_list, ids.len());
    assert!(store.snapshot().unwrap().verify().unwrap().is_empty());
    drop(store);

    let other = dir.path().join("not.redb");
    std::fs::write(&other, b"hello").unwrap();
    assert!(matches!(Store::compact(&other), Err(Error::Open(OpenError::NotMnemon { .. }))));
    assert!(matches!(
        Store::compact(dir.path().join("none.redb")),
        Err(Error::Open(OpenError::Missing { .. }))
    ));
}

fn open_at(path: &std::path::Path) -> Store {
    Store::open(path, StoreOptions { create: true, ..Default::default() }).unwrap()
}

/// Rows a commit holds back until its end (current rows, their ends, texts, new records'
/// events) are seen by the commit's later jobs: revising, retiring and forgetting records
/// inserted earlier in the same commit leaves every index as if each job had its own commit.
#[test]
fn later_jobs_of_a_commit_see_the_rows_it_holds_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let store = open(&dir);
    let n = ns("p");
    let t0 = store.snapshot().unwrap().now();
    let day = |d: u32| t0.plus_days(d);
    let learning = |t: &str| -> Body { Learning { text: t.into(), ..Default::default() }.into() };
    let with = |text: &str, from: u32, until: Option<u32>| {
        let mut r = NewRecord::new(n.clone(), learning(text));
        r.valid_from = Some(day(from));
        r.valid_until = until.map(day);
        r
    };
    let (a, b, c, d) = (
        with("alpha river", 1, None),
        with("beta mountain", 2, Some(9)),
        with("gamma lake", 1, None),
        with("delta", 3, None),
    );
    let (ia, ib, ic, id) = (a.id, b.id, c.id, d.id);
    let mut close_a = Revise::new(n.clone(), ia);
    close_a.valid_until = Some(Some(day(5)));
    let mut retext_d = Revise::new(n.clone(), id);
    retext_d.body = Some(learning("delta canyon"));
    let jobs = vec![
        vec![WriteOp::Insert(a), WriteOp::Insert(b), WriteOp::Insert(c)],
        vec![WriteOp::Revise(close_a), WriteOp::Retire { namespace: n.clone(), id: ib, at: Some(day(4)) }],
        vec![WriteOp::Forget { namespace: n.clone(), id: ic }, WriteOp::Insert(d)],
        vec![WriteOp::Revise(retext_d)],
    ];
    let before = store.snapshot().unwrap().meta().commit_seq;
    for r in store.write_many(jobs, Durability::Immediate) {
        r.unwrap();
    }
    assert_eq!(store.snapshot().unwrap().meta().commit_seq, before + 1, "one commit");

    let check = |store: &Store| {
        let snap = store.snapshot().unwrap();
        assert!(snap.verify().unwrap().is_empty(), "{:?}", snap.verify().unwrap());
        let at = |d: u32| -> Vec<RecordId> {
            let mut ids: Vec<RecordId> = snap
                .list(&n, &ListQuery::new().as_of(AsOf::valid_at(day(d))))
                .unwrap()
                .iter()
                .map(|r| r.id)
                .collect();
            ids.sort();
            ids
        };
        let sorted = |mut v: Vec<RecordId>| {
            v.sort();
            v
        };
        assert_eq!(at(1), vec![ia]);
        assert_eq!(at(2), sorted(vec![ia, ib]));
        assert_eq!(at(3), sorted(vec![ia, ib, id]));
        assert_eq!(at(4), sorted(vec![ia, id]));
        assert_eq!(at(6), vec![id]);
        assert!(snap.history(&n, ic).unwrap().is_empty());
        let now = store.snapshot().unwrap().now();
        let search = |q: &str| -> Vec<RecordId> {
            snap.lexical_search(&n, q, &ListQuery::new().as_of(AsOf::valid_at(now.max(day(6)))), 10)
                .unwrap()
                .into_iter()
                .map(|h| h.record.id)
                .collect()
        };
        assert_eq!(search("canyon"), vec![id]);
        assert!(search("gamma").is_empty());
    };
    check(&store);
    drop(store);
    check(&open_at(&path));
}

/// An end moved away and back: the timeline keeps both periods during which the first end was
/// believed, so time travel on the transaction axis sees each belief in its own period.
#[test]
fn an_end_believed_again_keeps_its_earlier_belief() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let n = ns("p");
    let t0 = store.snapshot().unwrap().now();
    let day = |d: u32| t0.plus_days(d);
    let mut rec = NewRecord::new(n.clone(), Learning { text: "x".into(), ..Default::default() });
    rec.valid_from = Some(day(1));
    rec.valid_until = Some(day(9));
    let x = rec.id;
    let tx1 = store.write(vec![WriteOp::Insert(rec)]).unwrap().tx;
    let until = |d: u32| {
        let mut r = Revise::new(n.clone(), x);
        r.valid_until = Some(Some(day(d)));
        WriteOp::Revise(r)
    };
    let tx2 = store.write(vec![until(4)]).unwrap().tx;
    let tx3 = store.write(vec![until(9)]).unwrap().tx;
    let snap = store.snapshot().unwrap();
    let visible = |v: u32, k: Timestamp| listed(&snap, &n, x, day(v), k);
    for (k, until) in [(tx1, 9), (tx2.plus_micros(-1), 9), (tx2, 4), (tx3.plus_micros(-1), 4), (tx3, 9)] {
        for v in [2, 6, 10] {
            assert_eq!(visible(v, k), v < until, "valid at day {v}, known at {k}");
        }
    }
    assert!(snap.verify().unwrap().is_empty());
}

/// Listing a past moment as known now takes the open-ended records from the current table
/// and the others from `mnemon.ended`: mixed kinds, kind filters and limits agree with brute
/// force over the history, for moments where most, some or none of the live set is still
/// current; and so they do on a format-4 file, read-only (through the timeline) and upgraded.
#[test]
fn past_listings_known_now_agree_with_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Timestamp::parse("2024-01-01").unwrap();
    let (store, clock) = open_with_clock(&dir, t0);
    let n = ns("p");
    let hour = 3_600_000_000i64;
    let mut next = lcg(11);
    let body = |kind: u64, step: usize| -> Body {
        match kind {
            0 => Decision { title: format!("d{step}"), ..Default::default() }.into(),
            // Words both lexical analyses index alike (the file below is made a format-4
            // file, read-only analysed the old way): no stopwords, unchanged by stemming.
            1 => {
                Entity { name: format!("e{step}"), entity_type: "person".into(), ..Default::default() }.into()
            }
            _ => Learning { text: format!("l{step}"), ..Default::default() }.into(),
        }
    };
    let mut live: Vec<(RecordId, u64)> = Vec::new();
    for step in 0..1500 {
        clock.advance(hour);
        let r = next() % 10;
        if r < 4 || live.len() < 30 {
            let kind = next() % 3;
            let mut rec = NewRecord::new(n.clone(), body(kind, step));
            rec.valid_from = Some(clock.now().plus_micros(-((next() % 5) as i64) * hour));
            live.push((rec.id, kind));
            store.write(vec![WriteOp::Insert(rec)]).unwrap();
        } else if r < 7 {
            let (id, _) = live.swap_remove((next() as usize) % live.len());
            store.write(vec![WriteOp::Retire { namespace: n.clone(), id, at: None }]).unwrap();
        } else {
            let (id, kind) = live[(next() as usize) % live.len()];
            let mut rev = Revise::new(n.clone(), id);
            rev.body = Some(body(kind, step));
            if r == 9 {
                rev.valid_from = Some(clock.now().plus_micros(-((next() % 48) as i64) * hour));
            }
            store.write(vec![WriteOp::Revise(rev)]).unwrap();
        }
    }
    let snap = store.snapshot().unwrap();
    let all = revisions_by_record(&snap, &n);
    let end = clock.now();
    let check = |snap: &Snapshot, path_wanted: ListPath| {
        let queries = [
            ListQuery::new(),
            ListQuery::new().kinds([Kind::Decision, Kind::Learning]),
            ListQuery::new().kinds([Kind::Entity]),
            ListQuery::new().limit(25),
            ListQuery::new().kinds([Kind::Learning, Kind::Entity]).limit(7),
        ];
        // From a few hours back (most of the live set still current) to the start (none).
        for back in [1i64, 3, 10, 40, 200, 700, 1400] {
            let v = end.plus_micros(-back * hour - 7);
            for q in &queries {
                let mut want: Vec<(RecordId, u32)> = all
                    .iter()
                    .filter_map(|revs| revs.last())
                    .filter(|r| r.is_visible_at(v))
                    .filter(|r| q.kinds.is_empty() || q.kinds.contains(&r.kind()))
                    .map(|r| (r.id, r.rev))
                    .collect();
                // Newest id first, as listings return them.
                want.sort_by(|a, b| b.cmp(a));
                want.truncate(q.limit.unwrap_or(usize::MAX));
                let q = q.clone().as_of(AsOf::valid_at(v));
                let (got, path) = snap.list_explain(&n, &q).unwrap();
                assert_eq!(path, path_wanted);
                let got: Vec<(RecordId, u32)> = got.iter().map(|r| (r.id, r.rev)).collect();
                assert_eq!(got, want, "{back} hours back, {q:?}, {path:?}");
                // The same listing in pages of 4, each before the last id of the one before.
                let mut paged: Vec<(RecordId, u32)> = Vec::new();
                let mut page = q.clone();
                loop {
                    let left = q.limit.unwrap_or(usize::MAX) - paged.len();
                    if left == 0 {
                        break;
                    }
                    let (got, p) = snap.list_explain(&n, &page.clone().limit(left.min(4))).unwrap();
                    assert_eq!(p, path_wanted);
                    paged.extend(got.iter().map(|r| (r.id, r.rev)));
                    match got.last() {
                        Some(last) => page = page.before(last.id),
                        None => break,
                    }
                }
                assert_eq!(paged, want, "paged, {back} hours back, {q:?}");
            }
        }
        assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
    };
    check(&snap, ListPath::Ended);
    // The same as known one microsecond before the last commit, through the timeline, minus
    // the last commit's change: only checked to take the other path.
    let before =
        AsOf { valid: Some(end.plus_micros(-hour)), known: Some(snap.meta().last_tx.plus_micros(-1)) };
    assert_eq!(snap.list_explain(&n, &ListQuery::new().as_of(before)).unwrap().1, ListPath::Timeline);
    drop(snap);
    drop(store);

    // A format-4 file has no `mnemon.ended`: read-only, the listings take the timeline; opened
    // for writing, the upgrade fills the table from the revisions.
    let path = dir.path().join("c.redb");
    let all_current = store_current_rows(&dir);
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let ended = redb::TableDefinition::<&[u8], &[u8]>::new("mnemon.ended");
        assert!(txn.delete_table(ended).unwrap());
        // Format 4's current rows: tuple keys `(namespace, kind, id)` in `mnemon.current`.
        let live = redb::TableDefinition::<&[u8], &[u8]>::new("mnemon.live");
        let old = redb::TableDefinition::<(&str, u8, u128), &[u8]>::new("mnemon.current");
        {
            let rows: Vec<(Vec<u8>, Vec<u8>)> = txn
                .open_table(live)
                .unwrap()
                .iter()
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (k.value().to_vec(), v.value().to_vec())
                })
                .collect();
            assert!(!rows.is_empty());
            let mut t = txn.open_table(old).unwrap();
            for (k, v) in rows {
                // `p`, 0, kind, id (big-endian).
                assert_eq!(&k[..2], b"p\0");
                let id = u128::from_be_bytes(k[3..19].try_into().unwrap());
                t.insert(("p", k[2], id), v.as_slice()).unwrap();
            }
        }
        assert!(txn.delete_table(live).unwrap());
        {
            let mut meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
            meta.insert("format_version", 4u32.to_le_bytes().as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let options = || StoreOptions { clock: clock.clone(), ..Default::default() };
    let ro = Store::open(&path, StoreOptions { read_only: true, ..options() }).unwrap();
    check(&ro.snapshot().unwrap(), ListPath::Timeline);
    // "Now" also takes the timeline there, and agrees with the upgraded file below.
    let now_before = ro.snapshot().unwrap().list_explain(&n, &ListQuery::new()).unwrap();
    assert_eq!(now_before.1, ListPath::Timeline);
    assert_eq!(ro.snapshot().unwrap().table_sizes().unwrap()["current"], all_current);
    drop(ro);
    let upgraded = Store::open(&path, options()).unwrap();
    check(&upgraded.snapshot().unwrap(), ListPath::Ended);
    let now_after = upgraded.snapshot().unwrap().list_explain(&n, &ListQuery::new()).unwrap();
    assert_eq!(now_after.1, ListPath::Current);
    assert_eq!(now_after.0, now_before.0);
    assert_eq!(upgraded.snapshot().unwrap().table_sizes().unwrap()["current"], all_current);
    let ended_rows =
        all.iter().filter_map(|r| r.last()).filter(|r| r.visible().is_some_and(|v| !v.is_open())).count()
            as u64;
    assert_eq!(upgraded.snapshot().unwrap().table_sizes().unwrap()["ended"], ended_rows);
    drop(upgraded);

    // Formats 5 and 6 filed `mnemon.ended` by each interval's start: read-only, such a file is
    // listed through the timeline (its rows are not misread as filed by their end); opened
    // for writing, the upgrade files them again by their end.
    let format_6_rows = {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let ended = redb::TableDefinition::<&[u8], &[u8]>::new("mnemon.ended");
        let mut by_start: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        {
            let t = txn.open_table(ended).unwrap();
            for r in t.iter().unwrap() {
                let (k, v) = r.unwrap();
                // `p`, 0, level, until (8), id (16) -> kind, version, rev (4), recorded (8),
                // from (8), until (8), revision.
                let (k, v) = (k.value(), v.value());
                assert_eq!(k.len(), 2 + 1 + 8 + 16);
                let from = i64::from_le_bytes(v[14..22].try_into().unwrap());
                let until = i64::from_le_bytes(v[22..30].try_into().unwrap());
                assert_eq!(k[3..11], ((until as u64) ^ (1 << 63)).to_be_bytes(), "filed by its end");
                let mut old = k[..3].to_vec();
                old.extend_from_slice(&((from as u64) ^ (1 << 63)).to_be_bytes());
                old.extend_from_slice(&k[11..]);
                by_start.push((old, v.to_vec()));
            }
        }
        assert!(txn.delete_table(ended).unwrap());
        {
            let mut t = txn.open_table(ended).unwrap();
            for (k, v) in &by_start {
                t.insert(k.as_slice(), v.as_slice()).unwrap();
            }
            let mut meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
            meta.insert("format_version", 6u32.to_le_bytes().as_slice()).unwrap();
        }
        txn.commit().unwrap();
        by_start.len() as u64
    };
    assert_eq!(format_6_rows, ended_rows);
    let ro = Store::open(&path, StoreOptions { read_only: true, ..options() }).unwrap();
    check(&ro.snapshot().unwrap(), ListPath::Timeline);
    let now_6 = ro.snapshot().unwrap().list_explain(&n, &ListQuery::new()).unwrap();
    assert_eq!(now_6.1, ListPath::Current, "the current rows are the same in format 6");
    assert_eq!(now_6.0, now_before.0);
    drop(ro);
    let upgraded = Store::open(&path, options()).unwrap();
    check(&upgraded.snapshot().unwrap(), ListPath::Ended);
    assert_eq!(upgraded.snapshot().unwrap().table_sizes().unwrap()["ended"], ended_rows);
    assert_eq!(upgraded.snapshot().unwrap().list(&n, &ListQuery::new()).unwrap(), now_before.0);
    drop(upgraded);
    let db = redb::Database::open(&path).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
    let version = redb::ReadableTable::get(&meta, "format_version").unwrap().unwrap();
    assert_eq!(version.value(), mnemon_storage::FORMAT_VERSION.to_le_bytes().as_slice());
}

/// A record hidden by one revision and shown again by the next, from the same start: its
/// start edge was believed before, and the revision that shows it again keeps that belief
/// (a revision of a hidden record is no new record).
#[test]
fn a_record_shown_again_keeps_its_earlier_start() {
    let dir = tempfile::tempdir().unwrap();
    let t = Timestamp::parse("2024-06-01").unwrap();
    let (store, clock) = open_with_clock(&dir, t);
    let n = ns("p");
    let hour = 3_600_000_000i64;
    let day = 24 * hour;
    let mut rec = NewRecord::new(n.clone(), Learning { text: "x".into(), ..Default::default() });
    rec.valid_from = Some(t.plus_micros(-10 * day));
    let x = rec.id;
    let c1 = store.write(vec![WriteOp::Insert(rec)]).unwrap().tx;
    clock.advance(hour);
    let c2 = store.write(vec![WriteOp::Expire { namespace: n.clone(), id: x, at: None }]).unwrap().tx;
    clock.advance(hour);
    let mut later = Revise::new(n.clone(), x);
    later.valid_from = Some(t.plus_micros(5 * day));
    let c3 = store.write(vec![WriteOp::Revise(later)]).unwrap().tx;
    clock.advance(hour);
    let mut back = Revise::new(n.clone(), x);
    back.valid_from = Some(t.plus_micros(-10 * day));
    back.expires_at = Some(None);
    let c4 = store.write(vec![WriteOp::Revise(back)]).unwrap().tx;
    let snap = store.snapshot().unwrap();
    let v = t.plus_micros(-5 * day);
    let visible = |k: Timestamp| listed(&snap, &n, x, v, k);
    for (k, want) in [
        (c1, true),
        (c2, true),
        (c3.plus_micros(-1), true),
        (c3, false),
        (c4.plus_micros(-1), false),
        (c4, true),
    ] {
        assert_eq!(visible(k), want, "known at {k}");
    }
    assert!(snap.verify().unwrap().is_empty());
}

/// A record whose end lies ahead stays a current row (nothing in `mnemon.ended`) until a
/// commit after its end sweeps it; the sweep moves it to `mnemon.ended`, where the past as
/// known now still finds it, before and after a reopen.
#[test]
fn a_swept_record_moves_to_the_ended_table() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Timestamp::parse("2024-01-01").unwrap();
    let (store, clock) = open_with_clock(&dir, t0);
    let n = ns("p");
    let hour = 3_600_000_000i64;
    let mut rec = NewRecord::new(n.clone(), entity("ephemeral"));
    rec.valid_until = Some(t0.plus_micros(2 * hour));
    let id = rec.id;
    store.write(vec![WriteOp::Insert(rec)]).unwrap();
    let sizes = |s: &Store| s.snapshot().unwrap().table_sizes().unwrap();
    assert_eq!((sizes(&store)["current"], sizes(&store)["ended"]), (1, 0));
    let an_hour_in = AsOf::valid_at(t0.plus_micros(hour));
    clock.advance(3 * hour);
    // Not swept yet (the last commit was before its end): the current table answers.
    let (got, path) =
        store.snapshot().unwrap().list_explain(&n, &ListQuery::new().as_of(an_hour_in)).unwrap();
    assert_eq!((got.len(), path), (1, ListPath::Current));
    // Any commit after the end sweeps it.
    store.write(vec![WriteOp::Insert(NewRecord::new(n.clone(), entity("other")))]).unwrap();
    assert_eq!((sizes(&store)["current"], sizes(&store)["ended"]), (1, 1));
    let check = |s: &Store| {
        let snap = s.snapshot().unwrap();
        let (got, path) = snap.list_explain(&n, &ListQuery::new().as_of(an_hour_in)).unwrap();
        assert_eq!(path, ListPath::Ended);
        assert_eq!(got.iter().map(|r| r.id).collect::<Vec<_>>(), vec![id]);
        assert!(snap.list(&n, &ListQuery::new()).unwrap().iter().all(|r| r.id != id));
        assert!(snap.verify().unwrap().is_empty());
    };
    check(&store);
    drop(store);
    check(&Store::open(dir.path().join("c.redb"), StoreOptions { clock, ..Default::default() }).unwrap());
}

/// Listings read the current rows and `mnemon.ended` with cursors that stop at the edges of a
/// namespace and of each kind: neighbouring namespaces (one a prefix of another) never leak
/// in, and records come newest id first across kinds, up to the limit, on both paths.
#[test]
fn listings_stop_at_namespace_and_kind_edges() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Timestamp::parse("2024-01-01").unwrap();
    let (store, clock) = open_with_clock(&dir, t0);
    let hour = 3_600_000_000i64;
    let names = ["a", "a b", "ab", "b"];
    let kinds = [Kind::Decision, Kind::Entity, Kind::Learning];
    let body = |kind: Kind, i: usize| -> Body {
        match kind {
            Kind::Decision => Decision { title: format!("d{i}"), ..Default::default() }.into(),
            Kind::Entity => entity(&format!("e{i}")),
            _ => Learning { text: format!("l{i}"), ..Default::default() }.into(),
        }
    };
    // Per namespace, in insertion order: (id, kind). "a" has no entities, so that its two
    // kinds have an empty kind between them.
    let mut written: Vec<Vec<(RecordId, Kind)>> = vec![Vec::new(); names.len()];
    for i in 0..30 {
        clock.advance(hour);
        let mut ops = Vec::new();
        for (j, name) in names.iter().enumerate() {
            let kind = kinds[(i + j) % 3];
            if *name == "a" && kind == Kind::Entity {
                continue;
            }
            let rec = NewRecord::new(ns(name), body(kind, i));
            written[j].push((rec.id, kind));
            ops.push(WriteOp::Insert(rec));
        }
        store.write(ops).unwrap();
    }
    clock.advance(hour);
    let before = clock.now();
    clock.advance(hour);
    // Retire every third record: their rows go to `mnemon.ended`.
    let mut ops = Vec::new();
    for (j, name) in names.iter().enumerate() {
        for (id, _) in written[j].iter().step_by(3) {
            ops.push(WriteOp::Retire { namespace: ns(name), id: *id, at: None });
        }
    }
    store.write(ops).unwrap();
    clock.advance(hour);
    let snap = store.snapshot().unwrap();
    let newest_first = |rows: Vec<(RecordId, Kind)>| {
        let mut ids: Vec<RecordId> = rows.into_iter().map(|(id, _)| id).collect();
        ids.sort_by(|a, b| b.cmp(a));
        ids
    };
    let listed = |n: &Namespace, q: &ListQuery| -> (Vec<RecordId>, ListPath) {
        let (records, path) = snap.list_explain(n, q).unwrap();
        (records.iter().map(|r| r.id).collect(), path)
    };
    for (j, name) in names.iter().enumerate() {
        let n = ns(name);
        let all = newest_first(written[j].clone());
        let live = newest_first(
            written[j].iter().enumerate().filter(|(i, _)| i % 3 != 0).map(|(_, r)| *r).collect(),
        );
        // Now: the current rows, every kind merged by id.
        let (got, path) = listed(&n, &ListQuery::new());
        assert_eq!(path, ListPath::Current);
        assert_eq!(got, live, "now in {name}");
        assert_eq!(listed(&n, &ListQuery::new().limit(5)).0, live[..5].to_vec(), "now, limit, in {name}");
        for kind in kinds {
            let want = newest_first(
                written[j]
                    .iter()
                    .enumerate()
                    .filter(|(i, r)| i % 3 != 0 && r.1 == kind)
                    .map(|(_, r)| *r)
                    .collect(),
            );
            assert_eq!(listed(&n, &ListQuery::new().kinds([kind])).0, want, "now, {kind:?}, in {name}");
        }
        // Before the retirements, as known now: `mnemon.ended` and the current rows.
        let past = ListQuery::new().as_of(AsOf::valid_at(before));
        let (got, path) = listed(&n, &past);
        assert_eq!(path, ListPath::Ended);
        assert_eq!(got, all, "before in {name}");
        assert_eq!(listed(&n, &past.clone().limit(7)).0, all[..7].to_vec(), "before, limit, in {name}");
        let want = newest_first(written[j].iter().filter(|r| r.1 == Kind::Learning).copied().collect());
        assert_eq!(listed(&n, &past.kinds([Kind::Learning])).0, want, "before, learnings, in {name}");
    }
}

/// A new record's id must be free. Taken by the namespace's newest record or an older one,
/// by another job of the same commit, by an earlier operation of the same job, or asked for
/// as a supersession's successor, it is refused with nothing of the job written; once the
/// record is forgotten its id is free again. (A new id above every stored one is known to be
/// free without a lookup: the ids of a commit's earlier jobs count too.)
#[test]
fn a_taken_id_is_refused_wherever_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let ns = ns("ids");
    let mk = |text: &str| {
        NewRecord::new(ns.clone(), Body::from(Learning { text: text.into(), ..Default::default() }))
    };
    let duplicate = |r: Result<Receipt, Error>, want: RecordId| match r {
        Err(Error::DuplicateId { id, .. }) => assert_eq!(id, want),
        other => panic!("expected a duplicate id, got {other:?}"),
    };
    let (a, b) = (mk("first"), mk("second"));
    store.write(vec![WriteOp::Insert(a.clone())]).unwrap();
    store.write(vec![WriteOp::Insert(b.clone())]).unwrap();
    // The newest id, and an older one.
    duplicate(store.write(vec![WriteOp::Insert(b.clone())]), b.id);
    duplicate(store.write(vec![WriteOp::Insert(a.clone())]), a.id);
    // The same new id in two jobs of one commit: the second is refused.
    let c = mk("third");
    let mut results = store.write_many(
        vec![vec![WriteOp::Insert(c.clone())], vec![WriteOp::Insert(c.clone())]],
        Durability::Immediate,
    );
    duplicate(results.pop().unwrap(), c.id);
    let first = results.pop().unwrap().unwrap();
    assert_eq!(first.commit_seq, store.snapshot().unwrap().meta().commit_seq, "one commit");
    // Twice in one job: nothing of the job is written.
    let d = mk("fourth");
    duplicate(store.write(vec![WriteOp::Insert(d.clone()), WriteOp::Insert(d.clone())]), d.id);
    assert!(store.snapshot().unwrap().history(&ns, d.id).unwrap().is_empty());
    // A successor with a taken id.
    duplicate(store.write(vec![WriteOp::Supersede { old: a.id, new: b.clone() }]), b.id);
    // Forgotten, the id is free again.
    store.write(vec![WriteOp::Forget { namespace: ns.clone(), id: b.id }]).unwrap();
    store.write(vec![WriteOp::Insert(b.clone())]).unwrap();
    let snap = store.snapshot().unwrap();
    for (id, revisions) in [(a.id, 1), (b.id, 1), (c.id, 1), (d.id, 0)] {
        assert_eq!(snap.history(&ns, id).unwrap().len(), revisions);
    }
    assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
    // And after reopening (the greatest id is read from the file again).
    drop((snap, store));
    let store = Store::open(dir.path().join("s.redb"), StoreOptions::default()).unwrap();
    duplicate(store.write(vec![WriteOp::Insert(c.clone())]), c.id);
    let a_id = a.id;
    duplicate(store.write(vec![WriteOp::Insert(a)]), a_id);
}
