//! Histories over simulated time: back-dated corrections, forgetting, compaction, ends believed again.

use mnemon_storage::body::Learning;
use mnemon_storage::*;
use std::sync::Arc;

use super::*;

/// A few thousand records over a simulated year, many back-dated, with small checkpoint gaps:
/// every listing at random past times matches a brute-force evaluation of the history.
/// A store on a manual clock at `t0`, with a small checkpoint gap so that histories split.
pub(super) fn open_with_clock(dir: &tempfile::TempDir, t0: Timestamp) -> (Store, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(t0));
    let store = Store::open(
        dir.path().join("c.redb"),
        StoreOptions { create: true, clock: clock.clone(), min_checkpoint_gap: 16, ..Default::default() },
    )
    .unwrap();
    (store, clock)
}

/// A small deterministic generator.
pub(super) fn lcg(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        seed >> 33
    }
}

/// Whether a listing valid at `v`, known at `k`, holds record `x`.
pub(super) fn listed(snap: &Snapshot, n: &Namespace, x: RecordId, v: Timestamp, k: Timestamp) -> bool {
    snap.list(n, &ListQuery::new().as_of(AsOf::valid_at(v).known_at(k))).unwrap().iter().any(|r| r.id == x)
}

/// Every revision of a namespace, grouped by record, in revision order.
/// The number of current rows of the store in `dir` (closed).
pub(super) fn store_current_rows(dir: &tempfile::TempDir) -> u64 {
    let store = Store::open(dir.path().join("c.redb"), StoreOptions::default()).unwrap();
    store.snapshot().unwrap().table_sizes().unwrap()["current"]
}

pub(super) fn revisions_by_record(snap: &Snapshot, n: &Namespace) -> Vec<Vec<Record>> {
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
pub(super) fn long_backdated_history_lists_like_brute_force() {
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
pub(super) fn forget_leaves_no_trace_in_any_index() {
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
pub(super) fn compaction_gives_free_pages_back_and_keeps_the_data() {
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
    // 7.5 MB -> 6.3 MB when written (format 15's segments, of 12-byte postings, leave less to
    // give back than format 14's 16.8 MB -> 8.5 MB).
    assert!(after < before * 9 / 10, "{before} -> {after} bytes");
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

pub(super) fn open_at(path: &std::path::Path) -> Store {
    Store::open(path, StoreOptions { create: true, ..Default::default() }).unwrap()
}

/// Rows a commit holds back until its end (current rows, their ends, texts, new records'
/// events) are seen by the commit's later jobs: revising, retiring and forgetting records
/// inserted earlier in the same commit leaves every index as if each job had its own commit.
#[test]
pub(super) fn later_jobs_of_a_commit_see_the_rows_it_holds_back() {
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
pub(super) fn an_end_believed_again_keeps_its_earlier_belief() {
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
