//! Format 18 seals the lexical index's small rows (posting-list and text rows, fresh rows, a
//! namespace's totals): a format-17 file reads as it is, is sealed by a writer's open, and
//! answers alike; after it a changed bit in any of those rows is an error, not a ranking.

use mnemon_storage::*;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use super::*;

type Posting = (&'static str, &'static str, u128, u32);
type Text = (&'static str, u128, u32);
const POSTINGS: TableDefinition<Posting, &[u8]> = TableDefinition::new("mnemon.postings");
const TEXTS: TableDefinition<Text, &[u8]> = TableDefinition::new("mnemon.texts");
const FRESH: TableDefinition<Text, &[u8]> = TableDefinition::new("mnemon.fresh");
const STATS: TableDefinition<&str, &[u8]> = TableDefinition::new("mnemon.lexstats");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("mnemon.meta");

/// Rewrite every value of `def` with `f` (through redb: its own checksums stay right).
fn rewrite<K: redb::Key + 'static>(
    path: &std::path::Path,
    def: TableDefinition<K, &[u8]>,
    f: &dyn Fn(Vec<u8>) -> Vec<u8>,
) {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut t = txn.open_table(def).unwrap();
        let all: Vec<(Vec<u8>, Vec<u8>)> = t
            .iter()
            .unwrap()
            .map(|r| {
                let (k, v) = r.unwrap();
                (K::as_bytes(&k.value()).as_ref().to_vec(), v.value().to_vec())
            })
            .collect();
        for (k, v) in all {
            t.insert(K::from_bytes(&k), f(v).as_slice()).unwrap();
        }
    }
    txn.commit().unwrap();
}

/// The first byte and length of every value of `def`.
fn shapes<K: redb::Key + 'static>(
    path: &std::path::Path,
    def: TableDefinition<K, &[u8]>,
) -> Vec<(u8, usize)> {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let t = txn.open_table(def).unwrap();
    t.iter()
        .unwrap()
        .map(|r| {
            let v = r.unwrap().1;
            (v.value()[0], v.value().len())
        })
        .collect()
}

#[test]
fn format_17_files_get_sealed_rows_and_a_changed_bit_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.redb");
    let ns = Namespace::new("s").unwrap();
    {
        let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
        // Merged texts in the posting lists (a merge asked for), then fresh ones.
        let texts = |from: usize, n: usize| -> Vec<WriteOp> {
            (from..from + n)
                .map(|i| {
                    let text = format!("note {i} about topic{} and river{}", i % 10, i % 7);
                    WriteOp::Insert(NewRecord::new(ns.clone(), learning(&text)))
                })
                .collect()
        };
        store.write(texts(0, 300)).unwrap();
        store.write(vec![WriteOp::MergeTexts { namespace: ns.clone() }]).unwrap();
        store.write(texts(300, 20)).unwrap();
        let sizes = store.snapshot().unwrap().table_sizes().unwrap();
        assert!(sizes["postings"] > 0 && sizes["fresh texts"] > 0 && sizes["merged texts"] > 0, "{sizes:?}");
    }
    let queries = ["topic3", "river5 topic2", "note 17", "note 310"];
    let answers = |snap: &Snapshot| -> Vec<Result<Vec<(String, u64)>, String>> {
        queries
            .iter()
            .map(|q| {
                let hits = snap.lexical_search(&ns, q, &ListQuery::new(), 20).map_err(|e| e.to_string())?;
                Ok(hits.iter().map(|h| (h.record.body.text(), h.score.to_bits())).collect())
            })
            .collect()
    };
    let open =
        |read_only: bool| Store::open(&path, StoreOptions { read_only, ..Default::default() }).unwrap();
    let sealed = answers(&open(false).snapshot().unwrap());
    assert!(sealed.iter().all(|a| a.as_ref().is_ok_and(|a| !a.is_empty())), "{sealed:?}");
    assert!(shapes(&path, POSTINGS).iter().chain(&shapes(&path, TEXTS)).all(|&s| s == (2, 13)));
    assert!(shapes(&path, FRESH).iter().all(|&(v, _)| v == 2));
    assert_eq!(shapes(&path, STATS), [(3, 29)]);

    // Back to format 17: every row without its checksum, of the version before.
    let unseal = |v: u8| {
        move |mut b: Vec<u8>| {
            b.truncate(b.len() - 4);
            b[0] = v;
            b
        }
    };
    rewrite(&path, POSTINGS, &unseal(1));
    rewrite(&path, TEXTS, &unseal(1));
    rewrite(&path, FRESH, &unseal(1));
    rewrite(&path, STATS, &unseal(2));
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META).unwrap().insert("format_version", 17u32.to_le_bytes().as_slice()).unwrap();
        txn.commit().unwrap();
    }
    assert_eq!(answers(&open(true).snapshot().unwrap()), sealed, "format 17 read as it is");
    drop(open(false));
    assert_eq!(file_version(&path), FORMAT_VERSION);
    assert!(shapes(&path, POSTINGS).iter().chain(&shapes(&path, TEXTS)).all(|&s| s == (2, 13)));
    assert!(shapes(&path, FRESH).iter().all(|&(v, _)| v == 2));
    assert_eq!(shapes(&path, STATS), [(3, 29)]);
    let store = open(false);
    assert_eq!(answers(&store.snapshot().unwrap()), sealed, "sealed again, answered alike");
    assert_eq!(store.snapshot().unwrap().verify().unwrap(), Vec::<String>::new());
    drop(store);

    // One bit of the rows of each table changed in turn (through redb, whose own checks pass):
    // every search either answers as before or fails, and `check` finds the damage.
    let clean = std::fs::read(&path).unwrap();
    let flip_first = |def: &dyn Fn(&std::path::Path)| {
        std::fs::write(&path, &clean).unwrap();
        let _ = Store::clear_damage_mark(&path);
        def(&path);
        let snap = open(false).snapshot().unwrap();
        let got = answers(&snap);
        for (g, s) in got.iter().zip(&sealed) {
            if let Ok(g) = g {
                assert_eq!(Ok(g), s.as_ref(), "a different answer");
            }
        }
        assert!(snap.verify().map_or(true, |p| !p.is_empty()), "check found nothing");
        got.iter().filter(|g| g.is_err()).count()
    };
    // The postings of "topic3" (their tf), the text rows (a length), the fresh rows (a term's
    // count), the totals (the summed length).
    let failed = [
        flip_first(&|p| flip(p, POSTINGS, |(_, term, ..)| term == "topic3", 2)),
        flip_first(&|p| flip(p, TEXTS, |_| true, 6)),
        flip_first(&|p| flip(p, FRESH, |_| true, 10)),
        flip_first(&|p| flip(p, STATS, |_| true, 10)),
    ];
    // A text row's length is not what a search reads (a posting carries its text's length):
    // only `check` reads it.
    assert!(failed[0] > 0 && failed[2] > 0 && failed[3] > 0, "{failed:?}");
}

/// Flip a bit of byte `at` of every value of `def` whose key `pick` takes.
fn flip<K: redb::Key + 'static>(
    path: &std::path::Path,
    def: TableDefinition<K, &[u8]>,
    pick: impl Fn(K::SelfType<'_>) -> bool,
    at: usize,
) {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut t = txn.open_table(def).unwrap();
        let picked: Vec<(Vec<u8>, Vec<u8>)> = t
            .iter()
            .unwrap()
            .map(|r| r.unwrap())
            .filter(|(k, _)| pick(k.value()))
            .map(|(k, v)| (K::as_bytes(&k.value()).as_ref().to_vec(), v.value().to_vec()))
            .collect();
        assert!(!picked.is_empty());
        for (k, mut v) in picked {
            v[at] ^= 0x04;
            t.insert(K::from_bytes(&k), v.as_slice()).unwrap();
        }
    }
    txn.commit().unwrap();
}
