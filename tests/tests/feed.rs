//! The change feed: every committed change once, in order, resumable, filtered.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::time::Duration;

use mnemon::body::{Decision, Learning};
use mnemon::feed::{Change, ChangeFilter, ChangeOp, Cursor};
use mnemon::{Db, Kind};

fn learning(text: &str) -> Learning {
    Learning { text: text.into(), ..Default::default() }
}

#[test]
fn every_operation_appears_once_in_order_and_resumes_from_any_change() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let ns = db.ns("p").unwrap();
    let start = db.changes_now().unwrap();
    let a = ns.add(learning("bounded queues")).unwrap();
    let old = ns.add(Decision { title: "Use SQLite".into(), ..Default::default() }).unwrap();
    let new = ns.supersede(old, Decision { title: "Use redb".into(), ..Default::default() }).unwrap();
    ns.retire(new, None).unwrap();
    ns.expire(a, None).unwrap();
    ns.forget(a).unwrap();
    db.ns("q").unwrap().add(learning("elsewhere")).unwrap();

    let all = db.changes(&ChangeFilter::default(), Some(start), 1000).unwrap();
    let seen: Vec<(mnemon::RecordId, ChangeOp)> = all.changes.iter().map(|c| (c.id, c.op)).collect();
    assert_eq!(
        seen[..7],
        [
            (a, ChangeOp::Insert),
            (old, ChangeOp::Insert),
            (old, ChangeOp::Superseded),
            (new, ChangeOp::Supersede),
            (new, ChangeOp::Retire),
            (a, ChangeOp::Expire),
            (a, ChangeOp::Forget),
        ]
    );
    assert_eq!(all.changes.len(), 8, "{:?}", all.changes);
    assert_eq!(all.changes[7].namespace, "q");
    assert_eq!(all.changes[0].kind, Some(Kind::Learning));
    assert_eq!(all.next, all.changes[7].cursor);
    // From each change's cursor, exactly the ones after it; and cursors read back from text.
    for (i, c) in all.changes.iter().enumerate() {
        let text = c.cursor.to_string();
        let parsed: Cursor = text.parse().unwrap();
        assert_eq!(parsed, c.cursor);
        let rest = db.changes(&ChangeFilter::default(), Some(parsed), 1000).unwrap();
        assert_eq!(rest.changes, all.changes[i + 1..], "after change {i} ({text})");
    }
    // In pages of one: the same changes.
    let mut cursor = Some(start);
    let mut paged: Vec<Change> = Vec::new();
    loop {
        let page = db.changes(&ChangeFilter::default(), cursor, 1).unwrap();
        if page.changes.is_empty() {
            break;
        }
        paged.extend(page.changes);
        cursor = Some(page.next);
    }
    assert_eq!(paged, all.changes);
    // Filters: a namespace, a kind.
    let q = db.changes(&ChangeFilter::namespace("q"), Some(start), 100).unwrap();
    assert_eq!(q.changes.len(), 1);
    let decisions = db.changes(&ChangeFilter::default().kinds([Kind::Decision]), Some(start), 100).unwrap();
    assert_eq!(decisions.changes.len(), 4);
    assert!("yesterday~1".parse::<Cursor>().is_err());
    let empty = Db::create(dir.path().join("empty.redb")).unwrap().changes_now().unwrap();
    assert_eq!(empty.to_string().parse::<Cursor>().unwrap(), empty);
}

#[test]
fn tags_filter_by_the_revision_and_a_forgetting_reaches_every_tag_reader() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let ns = db.ns("p").unwrap();
    let start = db.changes_now().unwrap();
    let tagged = ns.record(learning("tagged")).tag("infra").insert().unwrap();
    ns.add(learning("untagged")).unwrap();
    let infra = ChangeFilter::default().tags(["infra"]);
    let got = db.changes(&infra, Some(start), 100).unwrap();
    assert_eq!(got.changes.iter().map(|c| (c.id, c.op)).collect::<Vec<_>>(), [(tagged, ChangeOp::Insert)]);
    ns.forget(tagged).unwrap();
    // Once erased, the record's tags are gone: its earlier changes no longer match a tag, and
    // the forgetting (which carries nothing) reaches every tag reader.
    let got = db.changes(&infra, Some(start), 100).unwrap();
    assert_eq!(got.changes.iter().map(|c| (c.id, c.op)).collect::<Vec<_>>(), [(tagged, ChangeOp::Forget)]);
}

#[test]
fn a_watch_wakes_at_each_commit_of_other_threads() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let mut watch = db.ns("p").unwrap().watch(ChangeFilter::default()).unwrap();
    assert!(watch.next_timeout(Duration::from_millis(30)).unwrap().is_none(), "nothing yet");
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                let ns = db.ns("p").unwrap();
                let other = db.ns("elsewhere").unwrap();
                (0..50)
                    .map(|i| {
                        other.add(learning("not watched")).unwrap();
                        ns.add(learning(&format!("writer {w} record {i}"))).unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut got = Vec::new();
    while got.len() < 200 {
        let c = watch.next_timeout(Duration::from_secs(10)).unwrap().expect("a change within 10 s");
        assert_eq!(c.namespace, "p");
        got.push(c);
    }
    let mut written: Vec<_> = writers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    let mut ids: Vec<_> = got.iter().map(|c| c.id).collect();
    assert!(got.windows(2).all(|w| w[0].cursor < w[1].cursor), "in order");
    written.sort();
    ids.sort();
    assert_eq!(ids, written, "each once");
    assert!(watch.next_timeout(Duration::from_millis(50)).unwrap().is_none());
}

#[test]
fn a_shared_file_delivers_another_handles_commits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.redb");
    let open = || Db::builder(&path).create(true).shared(true).open().unwrap();
    let watcher = open();
    let writer = open();
    let mut watch = watcher.watch(ChangeFilter::default(), None).unwrap();
    let id = writer.ns("p").unwrap().add(learning("from another handle")).unwrap();
    let c = watch.next_timeout(Duration::from_secs(5)).unwrap().expect("seen by polling the file");
    assert_eq!((c.id, c.op), (id, ChangeOp::Insert));
}

#[test]
fn an_async_watch_is_woken_by_a_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let mut watch = db.watch(ChangeFilter::default(), None).unwrap();
    let ns = db.ns("p").unwrap();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        ns.add(learning("async")).unwrap()
    });
    let change = block_on(watch.next_async()).unwrap();
    assert_eq!(change.id, t.join().unwrap());
}

/// A minimal executor: poll on this thread, park until woken.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_secs(10));
    }
}
