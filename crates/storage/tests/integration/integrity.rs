//! Stored values are sealed by a checksum (format 13): a file of format 12 is sealed when a
//! writer opens it, and a changed byte inside a stored value is an error on every read path
//! and in the integrity check, never a wrong answer.

use mnemon_storage::*;
use redb::{ReadableDatabase, ReadableTable};

use super::lexical::file_version;

/// Every revision of every record of namespace `fixture` as of now, by listing valid then and
/// at two past times, with each record's history, as `Debug` text.
fn everything(snap: &Snapshot) -> Vec<String> {
    let ns = Namespace::new("fixture").unwrap();
    let mut out = Vec::new();
    for at in [None, Some("2024-03-01"), Some("2024-09-01")] {
        let mut q = ListQuery::new();
        if let Some(t) = at {
            q = q.as_of(AsOf::valid_at(Timestamp::parse(t).unwrap()));
        }
        for r in snap.list(&ns, &q).unwrap() {
            out.push(format!("{at:?} {r:?}"));
            for h in snap.history(&ns, r.id).unwrap() {
                out.push(format!("  {h:?}"));
            }
        }
    }
    out
}

/// The first byte of every value of a table of the file at `path` (after `skip` bytes).
fn versions<K: redb::Key + 'static>(path: &std::path::Path, table: &str, skip: usize) -> Vec<u8> {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let t = txn.open_table(redb::TableDefinition::<K, &[u8]>::new(table)).unwrap();
    t.iter().unwrap().map(|r| r.unwrap().1.value()[skip]).collect()
}

fn all_versions(path: &std::path::Path) -> [Vec<u8>; 3] {
    [
        versions::<(&str, u128, i64, u32)>(path, "mnemon.revisions", 0),
        versions::<&[u8]>(path, "mnemon.live", 0),
        versions::<&[u8]>(path, "mnemon.ended", 1),
    ]
}

/// A file written by the previous format (12, values unsealed; made by the `mnemon` of commit
/// 63fa504 with the hashing embedder: in namespace `fixture` a learning, a decision valid from
/// 2024-01-01 to 2024-06-01 and a learning revised to "The caches are flushed hourly now",
/// 300 learnings imported in one commit, the newest of them retired, then `compact`): read
/// alike read-only, sealed when a writer opens it, and read alike after.
#[test]
fn a_format_12_file_is_sealed_and_reads_alike() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f12.redb");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/format12.redb"), &path).unwrap();
    assert_eq!(file_version(&path), 12);
    let [revs, live, ended] = all_versions(&path);
    assert_eq!((revs.len(), live.len()), (305, 301));
    assert!(!ended.is_empty());
    assert!(revs.iter().chain(&live).chain(&ended).all(|&v| v == 1));
    let ro = Store::open(&path, StoreOptions { read_only: true, ..Default::default() }).unwrap();
    let snap = ro.snapshot().unwrap();
    let before = everything(&snap);
    assert!(before.len() > 600, "{}", before.len());
    assert!(before.iter().any(|l| l.contains("Use redb for storage")));
    assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
    drop((snap, ro));

    drop(Store::open(&path, StoreOptions::default()).unwrap());
    assert_eq!(file_version(&path), FORMAT_VERSION);
    let [revs, live, ended] = all_versions(&path);
    assert_eq!((revs.len(), live.len()), (305, 301));
    assert!(revs.iter().chain(&live).chain(&ended).all(|&v| v == 2));
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(everything(&snap), before);
    assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
}

/// Change one letter of a stored text inside the file, in the revision and in its current row:
/// every read of the record fails with an error naming the table and the damage (a format-12
/// file returned the changed text with no error), the integrity check reports it, the other
/// records still read, and the handle that met the damage refuses writes.
#[test]
fn a_changed_letter_is_found_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.redb");
    let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
    let ns = Namespace::new("p").unwrap();
    let mut ops = Vec::new();
    for i in 0..50 {
        let body =
            Body::Learning(body::Learning { text: format!("note {i} about painting"), ..Default::default() });
        ops.push(WriteOp::Insert(NewRecord::new(ns.clone(), body)));
    }
    let secret = NewRecord::new(
        ns.clone(),
        Body::Learning(body::Learning { text: "the deploy key lives in vault".into(), ..Default::default() }),
    );
    let id = secret.id;
    ops.push(WriteOp::Insert(secret));
    store.write(ops).unwrap();
    drop(store);
    {
        // "vault" -> "vaulT" in every value that holds it, as a flipped bit on disk would.
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let mut changed = 0;
        let live = redb::TableDefinition::<&[u8], &[u8]>::new("mnemon.live");
        let rows: Vec<(Vec<u8>, Vec<u8>)> = {
            let t = txn.open_table(live).unwrap();
            t.iter()
                .unwrap()
                .map(|r| r.unwrap())
                .map(|(k, v)| (k.value().to_vec(), v.value().to_vec()))
                .collect()
        };
        for (k, mut v) in rows {
            if let Some(at) = v.windows(5).position(|w| w == b"vault") {
                v[at + 4] = b'T';
                txn.open_table(live).unwrap().insert(k.as_slice(), v.as_slice()).unwrap();
                changed += 1;
            }
        }
        let def = redb::TableDefinition::<(&str, u128, i64, u32), &[u8]>::new("mnemon.revisions");
        type Row = ((String, u128, i64, u32), Vec<u8>);
        let rows: Vec<Row> = {
            let t = txn.open_table(def).unwrap();
            t.iter()
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    let (a, b, c, d) = k.value();
                    ((a.to_string(), b, c, d), v.value().to_vec())
                })
                .collect()
        };
        for ((a, b, c, d), mut v) in rows {
            if let Some(at) = v.windows(5).position(|w| w == b"vault") {
                v[at + 4] = b'T';
                txn.open_table(def).unwrap().insert((a.as_str(), b, c, d), v.as_slice()).unwrap();
                changed += 1;
            }
        }
        txn.commit().unwrap();
        assert_eq!(changed, 2);
    }
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    let damaged = |e: Error| {
        let text = e.to_string();
        assert!(text.contains("fails its checksum") && text.contains("mnemon."), "{text}");
    };
    damaged(snap.get(&ns, id, AsOf::now()).unwrap_err());
    damaged(snap.history(&ns, id).unwrap_err());
    damaged(snap.latest(&ns, id).unwrap_err());
    damaged(snap.list(&ns, &ListQuery::new()).unwrap_err());
    damaged(snap.lexical_search(&ns, "vault", &ListQuery::new(), 5).unwrap_err());
    assert!(snap.verify().is_err() || !snap.verify().unwrap().is_empty());
    // The other records still read.
    let others = snap.lexical_search(&ns, "painting", &ListQuery::new(), 5).unwrap();
    assert_eq!(others.len(), 5);
    // The handle that met the damage writes no more, and marks the file: a handle opened
    // afresh (as another process would) refuses writes too, until the mark is cleared.
    let note = |s: &Store| {
        let body = Body::Learning(body::Learning { text: "written after".into(), ..Default::default() });
        s.write(vec![WriteOp::Insert(NewRecord::new(ns.clone(), body))])
    };
    let refused = note(&store).unwrap_err();
    assert!(
        matches!(&refused, Error::DamageFound { reason, .. } if reason.contains("fails its checksum")),
        "{refused}"
    );
    assert!(refused.to_string().contains("mnemon check"), "{refused}");
    assert!(store.damage().is_some() && store.clone().damage().is_some());
    let mark = Store::damage_mark(&path);
    assert!(std::fs::read_to_string(&mark).unwrap().contains("fails its checksum"));
    drop((snap, store));
    let again = Store::open(&path, StoreOptions::default()).unwrap();
    assert!(again.damage().is_some_and(|d| d.contains("fails its checksum") && d.contains(".damaged")));
    let refused = note(&again).unwrap_err();
    assert!(matches!(refused, Error::DamageFound { .. }), "{refused}");
    // Once restored (here: the mark cleared by hand, as `mnemon check` clears it when the file
    // checks clean), a fresh handle writes again; the mark was the only thing in the way.
    assert!(Store::clear_damage_mark(&path).unwrap());
    assert!(!Store::clear_damage_mark(&path).unwrap());
    assert_eq!(again.damage(), None);
    note(&again).unwrap();
}

/// Rows hidden from a read (what a flipped child pointer in a redb branch page does, which
/// redb's reads do not check) make a read of a whole namespace an error, by the namespace's
/// counts (format 14): here a current row and a revision are removed behind the store's back.
/// A read of part of a namespace (a page of a listing) cannot tell and answers.
#[test]
fn rows_hidden_from_a_whole_read_are_found_by_the_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.redb");
    let ns = Namespace::new("counted").unwrap();
    let ids: Vec<RecordId> = {
        let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
        let ops = (0..6)
            .map(|i| {
                let body = Body::Learning(body::Learning { text: format!("note {i}"), ..Default::default() });
                WriteOp::Insert(NewRecord::new(ns.clone(), body))
            })
            .collect();
        let receipt = store.write(ops).unwrap();
        let snap = store.snapshot().unwrap();
        assert_eq!(snap.list(&ns, &ListQuery::new()).unwrap().len(), 6);
        assert!(snap.verify().unwrap().is_empty());
        receipt.outcomes.iter().map(|o| o.id()).collect()
    };
    let whole = |store: &Store| store.snapshot().unwrap().list(&ns, &ListQuery::new());
    let export = |store: &Store| store.snapshot().unwrap().for_each_revision(Some(&ns), |_| Ok(()));
    // A current row goes behind the store's back.
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut live = txn.open_table(redb::TableDefinition::<&[u8], &[u8]>::new("mnemon.live")).unwrap();
            let key = live.iter().unwrap().next().unwrap().unwrap().0.value().to_vec();
            live.remove(key.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let e = whole(&store).unwrap_err();
    assert!(e.is_damage() && e.to_string().contains("found 5 where mnemon.counts holds 6"), "{e}");
    assert_eq!(store.snapshot().unwrap().list(&ns, &ListQuery::new().limit(2)).unwrap().len(), 2);
    export(&store).unwrap();
    let problems = store.snapshot().unwrap().verify().unwrap();
    assert!(
        problems.iter().any(|p| p.contains("mnemon.counts holds 6 current learning rows, the file 5")),
        "{problems:?}"
    );
    drop(store);
    std::fs::remove_file(Store::damage_mark(&path)).unwrap();
    // A revision goes too.
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def = redb::TableDefinition::<(&str, u128, i64, u32), &[u8]>::new("mnemon.revisions");
            let mut revs = txn.open_table(def).unwrap();
            let key = {
                let first = revs.iter().unwrap().next().unwrap().unwrap().0;
                let k = first.value();
                (k.0.to_string(), k.1, k.2, k.3)
            };
            revs.remove((key.0.as_str(), key.1, key.2, key.3)).unwrap();
        }
        txn.commit().unwrap();
    }
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let e = export(&store).unwrap_err();
    assert!(
        e.is_damage() && e.to_string().contains("its revisions found 5 where mnemon.counts holds 6"),
        "{e}"
    );
    assert!(ids.len() == 6);
}

/// A writable open verifies a file up to [`StoreOptions::verify_up_to`] bytes (item 8 of the
/// damage audit: an `add` on a damaged file no read had met went on, and gave the damaged pages
/// it copied fresh checksums): a letter changed on disk, where redb's own reads would not
/// notice it, makes the writable open note damage and refuse writes, and mark the file; the
/// records still read. A file above the limit is not verified.
#[test]
fn a_writer_verifies_the_file_before_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.redb");
    let ns = Namespace::new("p").unwrap();
    let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
    let ops = (0..300)
        .map(|i| {
            let text = format!("note {i} about painting the fence");
            WriteOp::Insert(NewRecord::new(
                ns.clone(),
                Body::Learning(body::Learning { text, ..Default::default() }),
            ))
        })
        .collect();
    store.write(ops).unwrap();
    drop(store);
    // "note 123 about" -> "note 124 about" wherever the file holds it, below redb.
    let mut bytes = std::fs::read(&path).unwrap();
    let mut changed = 0;
    while let Some(at) = bytes.windows(14).position(|w| w == b"note 123 about") {
        bytes[at + 7] = b'4';
        changed += 1;
    }
    assert!(changed >= 2, "{changed}");
    std::fs::write(&path, &bytes).unwrap();
    let len = bytes.len() as u64;
    let write = |s: &Store| {
        let body = Body::Learning(body::Learning { text: "written after".into(), ..Default::default() });
        s.write(vec![WriteOp::Insert(NewRecord::new(ns.clone(), body))])
    };

    let store = Store::open(&path, StoreOptions { verify_up_to: len, ..Default::default() }).unwrap();
    let reason = store.damage().unwrap();
    assert!(reason.contains("integrity check"), "{reason}");
    let refused = write(&store).unwrap_err();
    assert!(matches!(&refused, Error::DamageFound { .. }), "{refused}");
    assert!(std::fs::read_to_string(Store::damage_mark(&path)).unwrap().contains("integrity check"));
    let hits = store.snapshot().unwrap().lexical_search(&ns, "fence", &ListQuery::new(), 5).unwrap();
    assert_eq!(hits.len(), 5);
    drop(store);
    // No write reached the file (redb rewrites only its header's bookkeeping on close).
    let after = std::fs::read(&path).unwrap();
    assert_eq!(after.len(), bytes.len());
    assert!(after[4096..] == bytes[4096..], "only the header changed");

    // Above the limit nothing is verified (what `0` asks for): the write goes on.
    Store::clear_damage_mark(&path).unwrap();
    let store = Store::open(&path, StoreOptions { verify_up_to: len - 1, ..Default::default() }).unwrap();
    assert_eq!(store.damage(), None);
    write(&store).unwrap();
}
