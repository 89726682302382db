//! The commit log names what each change did (format 16): the change feed's source.

use mnemon_storage::body::{Decision, Learning};
use mnemon_storage::*;

fn learning(text: &str) -> Body {
    Learning { text: text.into(), ..Default::default() }.into()
}

#[test]
fn every_operation_is_logged_with_its_kind_revision_and_time_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open(dir.path().join("c.redb"), StoreOptions { create: true, ..Default::default() }).unwrap();
    let commits = store.commits().unwrap();
    let seen = commits.seq();
    let ns = Namespace::new("p").unwrap();
    let a = NewRecord::new(ns.clone(), learning("bounded queues"));
    let a_id = a.id;
    store.write(vec![WriteOp::Insert(a)]).unwrap();
    assert!(commits.seq() > seen, "the commit was announced");
    let mut rv = Revise::new(ns.clone(), a_id);
    rv.body = Some(learning("bounded queues everywhere"));
    store.write(vec![WriteOp::Revise(rv)]).unwrap();
    let d = NewRecord::new(ns.clone(), Decision { title: "Use SQLite".into(), ..Default::default() });
    let d_id = d.id;
    store.write(vec![WriteOp::Insert(d)]).unwrap();
    let d2 = NewRecord::new(ns.clone(), Decision { title: "Use redb".into(), ..Default::default() });
    let d2_id = d2.id;
    store.write(vec![WriteOp::Supersede { old: d_id, new: d2 }]).unwrap();
    store.write(vec![WriteOp::Retire { namespace: ns.clone(), id: d2_id, at: None }]).unwrap();
    store.write(vec![WriteOp::Expire { namespace: ns.clone(), id: a_id, at: None }]).unwrap();
    store.write(vec![WriteOp::Forget { namespace: ns.clone(), id: a_id }]).unwrap();
    let b = NewRecord::new(ns.clone(), learning("after the forgetting"));
    let b_id = b.id;
    store.write(vec![WriteOp::Insert(b)]).unwrap();

    let log = store.snapshot().unwrap().commits_after(0).unwrap();
    let got: Vec<(RecordId, Option<Kind>, ChangeOp, u32)> =
        log.iter().flat_map(|c| &c.changes).map(|c| (c.id, c.kind, c.op, c.rev)).collect();
    use ChangeOp::{Forgot, Wrote};
    assert_eq!(
        got,
        vec![
            (a_id, Some(Kind::Learning), Wrote(Op::Insert), 0),
            (a_id, Some(Kind::Learning), Wrote(Op::Revise), 1),
            (d_id, Some(Kind::Decision), Wrote(Op::Insert), 0),
            (d_id, Some(Kind::Decision), Wrote(Op::Superseded), 1),
            (d2_id, Some(Kind::Decision), Wrote(Op::Supersede), 0),
            (d2_id, Some(Kind::Decision), Wrote(Op::Retire), 1),
            (a_id, Some(Kind::Learning), Wrote(Op::Expire), 2),
            (a_id, Some(Kind::Learning), Forgot, 2),
            (b_id, Some(Kind::Learning), Wrote(Op::Insert), 0),
        ]
    );
    // Times never go back, and commits never share one: a forgetting moves the clock too.
    let times: Vec<Timestamp> = log.iter().flat_map(|c| &c.changes).map(|c| c.tx).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    let firsts: Vec<Timestamp> = log.iter().filter_map(|c| c.changes.first()).map(|c| c.tx).collect();
    assert!(firsts.windows(2).all(|w| w[0] < w[1]), "{firsts:?}");
    // A change's time is its revision's.
    let snap = store.snapshot().unwrap();
    let d2_rev = snap.latest(&ns, d2_id).unwrap().unwrap();
    let logged = log.iter().flat_map(|c| &c.changes).find(|c| c.id == d2_id && c.rev == 1).unwrap();
    assert_eq!(logged.tx, d2_rev.recorded_at);
}

#[test]
fn a_shared_file_announces_another_handles_commits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let opts = || StoreOptions { create: true, shared: true, ..Default::default() };
    let watcher = Store::open(&path, opts()).unwrap();
    let writer = Store::open(&path, opts()).unwrap();
    let commits = watcher.commits().unwrap();
    let seen = commits.seq();
    let ns = Namespace::new("p").unwrap();
    writer.write(vec![WriteOp::Insert(NewRecord::new(ns, learning("from elsewhere")))]).unwrap();
    let now = commits.wait_past(seen, std::time::Duration::from_secs(5));
    assert!(now > seen, "the other handle's commit was found by polling");
}
