//! Scenario tests of the storage engine: jobs, conflicts, group commit, restores; histories
//! (`history.rs`) and listings (`listings.rs`) against brute force.

use mnemon_storage::body::{Decision, Entity, Learning};
use mnemon_storage::*;

mod history;
mod listings;
mod replicas;
use history::*;

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
