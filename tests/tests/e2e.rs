//! End-to-end tests across crates: the facade under concurrent readers and writers.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mnemon::body::{Decision, Learning, Task};
use mnemon::{AsOf, Db, ListQuery, Timestamp};

#[test]
fn concurrent_readers_see_consistent_snapshots_while_writers_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("c.redb")).unwrap();
    let writers = 6;
    let per_writer = 60;
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let db = db.clone();
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut checks = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let snap = db.snapshot().unwrap();
                    let ns = mnemon::Namespace::new("shared").unwrap();
                    let a = snap.list(&ns, &ListQuery::new()).unwrap();
                    let b = snap.list(&ns, &ListQuery::new()).unwrap();
                    // A snapshot does not move while writers commit.
                    assert_eq!(a.len(), b.len());
                    // Every write is a pair (a task and its learning, one job): never half of one.
                    let tasks = a.iter().filter(|r| r.kind() == mnemon::Kind::Task).count();
                    assert_eq!(tasks * 2, a.len(), "a reader saw half a job");
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                let ns = db.ns("shared").unwrap();
                for i in 0..per_writer {
                    let task =
                        ns.record(Task { title: format!("task {w}-{i}"), ..Default::default() }).build();
                    let learning = ns
                        .record(Learning { text: format!("learned {w}-{i}"), ..Default::default() })
                        .task(format!("{w}-{i}"))
                        .build();
                    db.write(vec![mnemon::WriteOp::Insert(task), mnemon::WriteOp::Insert(learning)]).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    let all = db.ns("shared").unwrap().list(&ListQuery::new()).unwrap();
    assert_eq!(all.len(), writers * per_writer * 2, "lost writes");
    assert!(db.snapshot().unwrap().verify().unwrap().is_empty());
}

#[test]
fn typed_api_and_time_travel_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.redb");
    let (old, new) = {
        let db = Db::create(&path).unwrap();
        let ns = db.ns("project:x").unwrap();
        let old = ns
            .record(Decision { title: "Use JSON files".into(), ..Default::default() })
            .valid_from(Timestamp::parse("2024-01-01").unwrap())
            .insert()
            .unwrap();
        let new = ns
            .supersede_with(
                old,
                ns.record(Decision { title: "Use redb".into(), ..Default::default() })
                    .valid_from(Timestamp::parse("2024-06-01").unwrap())
                    .build(),
            )
            .unwrap();
        (old, new)
    };
    let db = Db::open(&path).unwrap();
    let ns = db.ns("project:x").unwrap();
    let march = ns.list_of::<Decision>(Timestamp::parse("2024-03-01").unwrap()).unwrap();
    assert_eq!(march.len(), 1);
    assert_eq!(march[0].id, old);
    assert_eq!(march[0].body_as::<Decision>().unwrap().title, "Use JSON files");
    let now = ns.list_of::<Decision>(AsOf::now()).unwrap();
    assert_eq!(now[0].id, new);
    assert_eq!(ns.chain(old).unwrap().iter().map(|r| r.id).collect::<Vec<_>>(), vec![old, new]);
    // Another namespace sees nothing of this one.
    assert!(db.ns("project:y").unwrap().list(&ListQuery::new()).unwrap().is_empty());
    assert!(db.ns("project:y").unwrap().get(old).unwrap().is_none());
}
