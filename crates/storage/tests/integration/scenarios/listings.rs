//! Listings of the past as known now, of swept records and at the edges of namespaces and kinds, against brute force.

use mnemon_storage::body::{Decision, Entity, Learning};
use mnemon_storage::*;
use redb::ReadableTable;

use super::*;

/// Listing a past moment as known now takes the open-ended records from the current table
/// and the others from `mnemon.ended`: mixed kinds, kind filters and limits agree with brute
/// force over the history, for moments where most, some or none of the live set is still
/// current; and so they do on a format-4 file, read-only (through the timeline) and upgraded.
#[test]
pub(super) fn past_listings_known_now_agree_with_brute_force() {
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
pub(super) fn a_record_shown_again_keeps_its_earlier_start() {
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
pub(super) fn a_swept_record_moves_to_the_ended_table() {
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
pub(super) fn listings_stop_at_namespace_and_kind_edges() {
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
pub(super) fn a_taken_id_is_refused_wherever_it_is() {
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
