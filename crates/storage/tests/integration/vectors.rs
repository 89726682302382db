//! Vectors stored beside the records: validation, revisions, forgetting, upgrade from format 1.

use mnemon_storage::body::Learning;
use mnemon_storage::*;
use redb::{ReadableDatabase, ReadableTable};

fn learning(text: &str) -> Body {
    Learning { text: text.into(), ..Default::default() }.into()
}

fn put(ns: &Namespace, id: RecordId, space: &str, v: Vec<f32>) -> WriteOp {
    WriteOp::PutVector { namespace: ns.clone(), id, rev: None, space: space.into(), vector: v }
}

/// A vector that names the revision it describes attaches only while that revision is the
/// latest: one embedded in the background for a text revised meanwhile is refused.
#[test]
fn a_vector_naming_its_revision_attaches_only_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open(dir.path().join("v.redb"), StoreOptions { create: true, ..Default::default() }).unwrap();
    let ns = Namespace::new("p").unwrap();
    let rec = NewRecord::new(ns.clone(), learning("first text"));
    let id = rec.id;
    store.write(vec![WriteOp::Insert(rec)]).unwrap();
    let at = |rev: u32, v: Vec<f32>| WriteOp::PutVector {
        namespace: ns.clone(),
        id,
        rev: Some(rev),
        space: "m".into(),
        vector: v,
    };
    // Revised before the vector of revision 0 arrives: it is refused, nothing written.
    let mut rv = Revise::new(ns.clone(), id);
    rv.body = Some(learning("second text"));
    store.write(vec![WriteOp::Revise(rv)]).unwrap();
    let seq = store.snapshot().unwrap().meta().commit_seq;
    let e = store.write(vec![at(0, vec![1.0, 0.0])]).unwrap_err();
    assert!(matches!(e, Error::RevisionConflict { expected: 0, found: 1, .. }), "{e}");
    assert!(store.write(vec![at(2, vec![1.0, 0.0])]).is_err(), "a revision not written yet");
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.meta().commit_seq, seq);
    assert!(snap.vector_for("m", &ns, id, 1).unwrap().is_none());
    // The latest revision's vector attaches to it.
    let r = store.write(vec![at(1, vec![0.0, 2.0])]).unwrap();
    assert_eq!(r.outcomes[0], Outcome::VectorStored { id, rev: 1 });
    let (from, v) = store.snapshot().unwrap().vector_for("m", &ns, id, 1).unwrap().unwrap();
    assert_eq!((from, v), (1, vec![0.0, 1.0]));
    assert!(store.snapshot().unwrap().vector_for("m", &ns, id, 0).unwrap().is_none());
    // In one job, the guard counts the job's earlier operations.
    let mut rv = Revise::new(ns.clone(), id);
    rv.body = Some(learning("third text"));
    let r = store.write(vec![WriteOp::Revise(rv), at(2, vec![1.0, 0.0])]).unwrap();
    assert_eq!(r.outcomes[1], Outcome::VectorStored { id, rev: 2 });
}

#[test]
fn vectors_are_validated_normalised_and_follow_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open(dir.path().join("v.redb"), StoreOptions { create: true, ..Default::default() }).unwrap();
    let ns = Namespace::new("p").unwrap();
    let rec = NewRecord::new(ns.clone(), learning("use bounded queues"));
    let id = rec.id;
    // Insert and vector in one atomic job.
    let r = store.write(vec![WriteOp::Insert(rec), put(&ns, id, "m", vec![3.0, 4.0, 0.0])]).unwrap();
    assert_eq!(r.outcomes[1], Outcome::VectorStored { id, rev: 0 });
    let snap = store.snapshot().unwrap();
    let space = snap.vector_space("m").unwrap().unwrap();
    assert_eq!(space.dimension, 3);
    let (from, v) = snap.vector_for("m", &ns, id, 0).unwrap().unwrap();
    assert_eq!(from, 0);
    assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);

    // Bad vectors: each a clear input error, nothing written.
    for (bad, needle) in [
        (vec![1.0, 2.0], "dimension mismatch in vector space \"m\": expected 3, got 2"),
        (vec![0.0, 0.0, 0.0], "zero vector"),
        (vec![1.0, f32::NAN, 0.0], "NaN"),
        (vec![f32::INFINITY, 0.0, 0.0], "inf"),
    ] {
        let e = store.write(vec![put(&ns, id, "m", bad)]).unwrap_err();
        assert!(e.is_input() && e.to_string().contains(needle), "{e}");
    }
    let unknown = RecordId::new();
    assert!(matches!(
        store.write(vec![put(&ns, unknown, "m", vec![1.0, 0.0, 0.0])]),
        Err(Error::NotFound { .. })
    ));
    // A bad vector rejects its whole job: the revision beside it is not written either.
    let mut rv = Revise::new(ns.clone(), id);
    rv.body = Some(learning("never happens"));
    assert!(store.write(vec![WriteOp::Revise(rv), put(&ns, id, "m", vec![1.0])]).is_err());
    assert_eq!(store.snapshot().unwrap().latest(&ns, id).unwrap().unwrap().rev, 0);

    // A revision without a new vector keeps the old one; a new vector serves the new revision.
    let mut rv = Revise::new(ns.clone(), id);
    rv.body = Some(learning("use bounded queues everywhere"));
    store.write(vec![WriteOp::Revise(rv)]).unwrap();
    let mut rv = Revise::new(ns.clone(), id);
    rv.body = Some(learning("queues must be bounded"));
    store.write(vec![WriteOp::Revise(rv), put(&ns, id, "m", vec![0.0, 0.0, 2.0])]).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.vector_for("m", &ns, id, 1).unwrap().unwrap().0, 0);
    assert_eq!(snap.vector_for("m", &ns, id, 2).unwrap().unwrap(), (2, vec![0.0, 0.0, 1.0]));
    assert_eq!(snap.vectors_of("m", &ns, id).unwrap().len(), 2);
    let mut seen = 0;
    snap.for_each_vector("m", Some(&ns), |_, _, _, v| {
        assert_eq!(v.len(), 3);
        seen += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, 2);
    assert!(snap.verify().unwrap().is_empty());
    // Vector writes are in the commit log (the index catches up from it).
    assert!(snap.commits_after(0).unwrap().iter().all(|c| c.changed.iter().all(|(_, i)| *i == id)));

    // Forgetting the record erases its vectors.
    store.write(vec![WriteOp::Forget { namespace: ns.clone(), id }]).unwrap();
    let snap = store.snapshot().unwrap();
    assert!(snap.vectors_of("m", &ns, id).unwrap().is_empty());
    assert!(snap.verify().unwrap().is_empty());
}

#[test]
fn aux_rows_are_written_in_commits() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open(dir.path().join("a.redb"), StoreOptions { create: true, ..Default::default() }).unwrap();
    store.write(vec![WriteOp::PutAux { key: "index/x".into(), value: Some(vec![1, 2]) }]).unwrap();
    store.write(vec![WriteOp::PutAux { key: "index/y".into(), value: Some(vec![3]) }]).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.aux("index/x").unwrap(), Some(vec![1, 2]));
    assert_eq!(snap.aux_prefix("index/").unwrap().len(), 2);
    assert!(
        store.write(vec![WriteOp::PutAux { key: "records".into(), value: None }]).unwrap_err().is_input()
    );
    store.write(vec![WriteOp::PutAux { key: "index/x".into(), value: None }]).unwrap();
    assert_eq!(store.snapshot().unwrap().aux("index/x").unwrap(), None);
}

/// Move the commit log back into the meta table, where formats 1 and 2 kept it.
fn log_into_meta(txn: &redb::WriteTransaction) {
    let def = redb::TableDefinition::<u64, &[u8]>::new("mnemon.log");
    let rows: Vec<(u64, Vec<u8>)> = {
        let log = txn.open_table(def).unwrap();
        log.iter().unwrap().map(|r| r.unwrap()).map(|(k, v)| (k.value(), v.value().to_vec())).collect()
    };
    assert!(!rows.is_empty());
    assert!(txn.delete_table(def).unwrap());
    let mut meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
    for (seq, bytes) in rows {
        meta.insert(format!("log/{seq:020}").as_str(), bytes.as_slice()).unwrap();
    }
}

#[test]
fn a_format_1_file_is_read_and_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.redb");
    let old_ns = Namespace::new("p").unwrap();
    {
        let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
        let rec = NewRecord::new(old_ns.clone(), learning("written by format one"));
        store.write(vec![WriteOp::Insert(rec)]).unwrap();
    }
    // Make it look like format 1: no vector tables, version 1.
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let vectors = redb::TableDefinition::<(&str, &str, u128, u32), &[u8]>::new("mnemon.vectors");
        assert!(txn.delete_table(vectors).unwrap());
        for t in ["mnemon.vector_spaces", "mnemon.aux", "mnemon.lexstats"] {
            assert!(txn.delete_table(redb::TableDefinition::<&str, &[u8]>::new(t)).unwrap());
        }
        let postings = redb::TableDefinition::<(&str, &str, u128, u32), &[u8]>::new("mnemon.postings");
        assert!(txn.delete_table(postings).unwrap());
        let texts = redb::TableDefinition::<(&str, u128, u32), &[u8]>::new("mnemon.texts");
        assert!(txn.delete_table(texts).unwrap());
        let fresh = redb::TableDefinition::<(&str, u128, u32), &[u8]>::new("mnemon.fresh");
        assert!(txn.delete_table(fresh).unwrap());
        log_into_meta(&txn);
        {
            let mut meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
            meta.insert("format_version", 1u32.to_le_bytes().as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let ro = Store::open(&path, StoreOptions { read_only: true, ..Default::default() }).unwrap();
    assert!(ro.snapshot().unwrap().vector_spaces().unwrap().is_empty());
    assert!(
        ro.snapshot().unwrap().lexical_search(&old_ns, "format", &ListQuery::new(), 5).unwrap().is_empty()
    );
    drop(ro);
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    // The upgrade indexed the text written under format 1.
    let hits = store.snapshot().unwrap().lexical_search(&old_ns, "format", &ListQuery::new(), 5).unwrap();
    assert_eq!(hits.len(), 1);
    let ns = Namespace::new("p").unwrap();
    let rec = NewRecord::new(ns.clone(), learning("x"));
    let id = rec.id;
    store.write(vec![WriteOp::Insert(rec), put(&ns, id, "m", vec![1.0, 0.0])]).unwrap();
    drop(store);
    let db = redb::Database::open(&path).unwrap();
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
    assert_eq!(meta.get("format_version").unwrap().unwrap().value(), FORMAT_VERSION.to_le_bytes().as_slice());
}

#[test]
fn a_format_2_file_is_upgraded_and_its_index_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.redb");
    let ns = Namespace::new("p").unwrap();
    let limit = usize::try_from(FRESH_LIMIT).unwrap();
    {
        let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
        // One batch over the limit: every posting is merged, none fresh, as format 2 kept them.
        let ops = (0..limit + 1)
            .map(|i| WriteOp::Insert(NewRecord::new(ns.clone(), learning(&format!("older text {i}")))))
            .collect();
        store.write(ops).unwrap();
    }
    // Make it format 2: no fresh table, the older totals row, version 2.
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let fresh = redb::TableDefinition::<(&str, u128, u32), &[u8]>::new("mnemon.fresh");
        assert!(txn.delete_table(fresh).unwrap());
        log_into_meta(&txn);
        {
            let mut stats =
                txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.lexstats")).unwrap();
            let row = stats.get("p").unwrap().unwrap().value().to_vec();
            assert_eq!((row[0], row.len(), &row[17..25]), (3, 29, &[0u8; 8][..]));
            let mut old = vec![1u8];
            old.extend_from_slice(&row[1..17]);
            stats.insert("p", old.as_slice()).unwrap();
            let mut meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
            meta.insert("format_version", 2u32.to_le_bytes().as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let (before, log_before) = {
        let ro = Store::open(&path, StoreOptions { read_only: true, ..Default::default() }).unwrap();
        let snap = ro.snapshot().unwrap();
        let hits = snap.lexical_search(&ns, "older text 7", &ListQuery::new(), 3).unwrap();
        let log: Vec<(u64, usize)> =
            snap.commits_after(0).unwrap().iter().map(|c| (c.seq, c.changed.len())).collect();
        assert_eq!(snap.table_sizes().unwrap()["commit_log"], log.len() as u64);
        (hits.iter().map(|h| (h.record.id, h.score)).collect::<Vec<_>>(), log)
    };
    assert_eq!(before.len(), 3);
    assert_eq!(log_before.last(), Some(&(1, limit + 1)), "the read-only open reads the older log");
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let after: Vec<_> = store
        .snapshot()
        .unwrap()
        .lexical_search(&ns, "older text 7", &ListQuery::new(), 3)
        .unwrap()
        .iter()
        .map(|h| (h.record.id, h.score))
        .collect();
    assert_eq!(after, before, "the upgrade keeps the totals and the postings");
    let log_after: Vec<(u64, usize)> = store
        .snapshot()
        .unwrap()
        .commits_after(0)
        .unwrap()
        .iter()
        .map(|c| (c.seq, c.changed.len()))
        .collect();
    assert_eq!(log_after, log_before, "the upgrade moves the commit log");
    let rec = NewRecord::new(ns.clone(), learning("newer text"));
    let id = rec.id;
    store.write(vec![WriteOp::Insert(rec)]).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.table_sizes().unwrap()["fresh texts"], 1);
    assert_eq!(snap.lexical_search(&ns, "newer", &ListQuery::new(), 3).unwrap()[0].record.id, id);
    assert_eq!(snap.commits_after(1).unwrap().len(), 1);
    drop((snap, store));
    let db = redb::Database::open(&path).unwrap();
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
    assert_eq!(meta.get("format_version").unwrap().unwrap().value(), FORMAT_VERSION.to_le_bytes().as_slice());
}

/// A mostly-zero vector is stored sparsely (format 4), a dense one densely, and a dense row of
/// a mostly-zero vector (as format 3 wrote every vector) still reads back the same, beside the
/// sparse ones of the same space, in lookups and in a scan of the space.
#[test]
fn sparse_and_dense_vectors_share_a_space() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let ns = Namespace::new("p").unwrap();
    let dim = 384;
    let mut sparse = vec![0f32; dim];
    sparse[3] = 0.6;
    sparse[200] = -0.8;
    let dense: Vec<f32> = (0..dim).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
    let (a, b, c) = (
        NewRecord::new(ns.clone(), learning("a")),
        NewRecord::new(ns.clone(), learning("b")),
        NewRecord::new(ns.clone(), learning("c")),
    );
    let ids = [a.id, b.id, c.id];
    {
        let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
        store
            .write(vec![
                WriteOp::Insert(a),
                WriteOp::Insert(b),
                WriteOp::Insert(c),
                put(&ns, ids[0], "m", sparse.clone()),
                put(&ns, ids[1], "m", dense.clone()),
            ])
            .unwrap();
    }
    let vectors = redb::TableDefinition::<(&str, &str, u128, u32), &[u8]>::new("mnemon.vectors");
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(vectors).unwrap();
            let lens: Vec<(u128, u8, usize)> = t
                .iter()
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (k.value().2, v.value()[0], v.value().len())
                })
                .collect();
            // Sealed (format 17): versions 8 (sparse) and 7 (dense), a CRC-32 at the end.
            assert!(lens.contains(&(ids[0].as_u128(), 8, 9 + 2 * 6 + 4)), "{lens:?}");
            assert!(lens.contains(&(ids[1].as_u128(), 7, 1 + 4 * dim + 4)), "{lens:?}");
            // Record c gets the mostly-zero vector in the dense layout of format 3.
            let mut old = vec![1u8];
            for x in &sparse {
                old.extend_from_slice(&x.to_le_bytes());
            }
            t.insert(("m", "p", ids[2].as_u128(), 0u32), old.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    let unit_dense: Vec<f32> = dense.iter().map(|x| x / (dim as f32).sqrt()).collect();
    for (id, want) in [(ids[0], &sparse), (ids[1], &unit_dense), (ids[2], &sparse)] {
        let (_, got) = snap.vector_for("m", &ns, id, 0).unwrap().unwrap();
        assert_eq!(got.len(), dim);
        assert!(got.iter().zip(want.iter()).all(|(x, y)| (x - y).abs() < 1e-6), "{id}");
    }
    assert!(snap.verify().unwrap().is_empty(), "{:?}", snap.verify().unwrap());
}

/// Format 17 seals stored vectors: a file of format 16 (vectors of versions 1 and 2, made here
/// by taking the checksums off) reads the same, and opened for writing has every vector sealed
/// (versions 7 and 8); a changed byte of a sealed vector is then an error, not another vector.
#[test]
fn format_16_vectors_are_sealed_and_damage_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.redb");
    let ns = Namespace::new("p").unwrap();
    let mut ids = Vec::new();
    {
        let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
        let mut ops = Vec::new();
        for i in 0..3u16 {
            let rec = NewRecord::new(ns.clone(), learning(&format!("text {i}")));
            ids.push(rec.id);
            ops.push(WriteOp::Insert(rec.clone()));
            let mut sparse = vec![0f32; 64];
            sparse[usize::from(i)] = 1.0;
            ops.push(put(&ns, rec.id, "sparse", sparse));
            ops.push(put(&ns, rec.id, "dense", vec![1.0 + f32::from(i), 2.0, 3.0]));
        }
        store.write(ops).unwrap();
    }
    let read = |path: &std::path::Path, read_only: bool| {
        let store = Store::open(path, StoreOptions { read_only, ..Default::default() }).unwrap();
        let snap = store.snapshot().unwrap();
        let mut out = Vec::new();
        for space in ["sparse", "dense"] {
            for id in &ids {
                out.push(snap.vector_for(space, &ns, *id, 0));
            }
        }
        out.into_iter().map(|r| r.map_err(|e| e.to_string())).collect::<Vec<_>>()
    };
    let vectors = redb::TableDefinition::<(&str, &str, u128, u32), &[u8]>::new("mnemon.vectors");
    let meta = redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta");
    let versions = |path: &std::path::Path| -> Vec<u8> {
        let db = redb::Database::open(path).unwrap();
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(vectors).unwrap();
        t.iter().unwrap().map(|r| r.unwrap().1.value()[0]).collect()
    };
    // Rewrite every vector with `f` (from its sealed bytes), and record format `format`.
    let rewrite = |path: &std::path::Path, format: Option<u32>, f: &dyn Fn(Vec<u8>) -> Vec<u8>| {
        let db = redb::Database::open(path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(vectors).unwrap();
            let all: Vec<_> = t
                .iter()
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    let (s, n, id, rev) = k.value();
                    ((s.to_string(), n.to_string(), id, rev), v.value().to_vec())
                })
                .collect();
            for ((s, n, id, rev), v) in all {
                t.insert((s.as_str(), n.as_str(), id, rev), f(v).as_slice()).unwrap();
            }
            if let Some(format) = format {
                txn.open_table(meta)
                    .unwrap()
                    .insert("format_version", format.to_le_bytes().as_slice())
                    .unwrap();
            }
        }
        txn.commit().unwrap();
    };
    let want = read(&path, true);
    assert!(want.iter().all(|v| matches!(v, Ok(Some(_)))));
    let mut sealed_versions = versions(&path);
    sealed_versions.sort_unstable();
    assert_eq!(sealed_versions, [7, 7, 7, 8, 8, 8]);
    // Back to format 16: the checksum off, the version of before.
    rewrite(&path, Some(16), &|mut v| {
        v.truncate(v.len() - 4);
        v[0] = if v[0] == 7 { 1 } else { 2 };
        v
    });
    assert_eq!(read(&path, true), want, "format 16 read as it is");
    drop(Store::open(&path, StoreOptions::default()).unwrap());
    let mut upgraded = versions(&path);
    upgraded.sort_unstable();
    assert_eq!(upgraded, [7, 7, 7, 8, 8, 8]);
    assert_eq!(read(&path, false), want);
    // A changed byte inside a sealed vector: an error naming the vectors, never another one.
    rewrite(&path, None, &|mut v| {
        let at = v.len() - 6;
        v[at] ^= 0x40;
        v
    });
    for got in read(&path, false) {
        let e = got.unwrap_err();
        assert!(e.contains("checksum"), "{e}");
    }
}
