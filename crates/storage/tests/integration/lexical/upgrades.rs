//! Files of older lexical formats (5, 8, 9, 10, 11) read alike read-only and upgraded, and the helpers that build and check texts against a naive BM25.

use mnemon_storage::analyzer::Analyzer;
use mnemon_storage::*;
use std::sync::Arc;

use super::*;

/// Insert the texts as learnings in one commit, and note them in `indexed` and `live`.
pub(super) fn insert_texts(
    store: &Store,
    ns: &Namespace,
    texts: impl IntoIterator<Item = String>,
    indexed: &mut Vec<(RecordId, String)>,
    live: &mut Vec<(RecordId, String)>,
) {
    let mut ops = Vec::new();
    for text in texts {
        let rec = NewRecord::new(ns.clone(), learning(&text));
        indexed.push((rec.id, text.clone()));
        live.push((rec.id, text));
        ops.push(WriteOp::Insert(rec));
    }
    store.write(ops).unwrap();
}

/// Give live record `at` a new text, and note it in `indexed` and `live`.
pub(super) fn revise_text(
    store: &Store,
    ns: &Namespace,
    indexed: &mut Vec<(RecordId, String)>,
    live: &mut [(RecordId, String)],
    at: usize,
    text: String,
) {
    let (id, _) = live[at].clone();
    store
        .write(vec![WriteOp::Revise(Revise { body: Some(learning(&text)), ..Revise::new(ns.clone(), id) })])
        .unwrap();
    indexed.push((id, text.clone()));
    live[at].1 = text;
}

/// The format version a closed file records.
pub(crate) fn file_version(path: &std::path::Path) -> u32 {
    let db = redb::Database::open(path).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
    let v = redb::ReadableTable::get(&meta, "format_version").unwrap().unwrap();
    u32::from_le_bytes(v.value().try_into().unwrap())
}

/// Every query of `queries` against the naive BM25 of `indexed` and `live`, now.
pub(super) fn check_naive(
    snap: &Snapshot,
    ns: &Namespace,
    indexed: &[(RecordId, String)],
    live: &[(RecordId, String)],
    queries: &[&str],
    when: &str,
) {
    // A read-only handle on an older file analyses queries the old way.
    let analyzer = if when.contains("read-only") { Analyzer::Words } else { Analyzer::Stemmed };
    for q in queries {
        let want = naive_bm25(indexed, live, q, analyzer);
        let got = snap.lexical_search(ns, q, &ListQuery::new(), want.len() + 5).unwrap();
        assert_eq!(got.len(), want.len(), "{when}: {q}");
        for (g, (_, score)) in got.iter().zip(&want) {
            assert!((g.score - score).abs() < 1e-9, "{when}: {q}: {} vs {score}", g.score);
            assert!(want.iter().any(|(i, s)| *i == g.record.id && (s - score).abs() < 1e-9), "{when}: {q}");
        }
    }
}

/// Formats 2 to 5 wrote a `texts` row for every text at once, fresh ones included; format 6
/// writes it when the text is merged. A format-5 file (its fresh texts with both rows) reads
/// the same, read-only and upgraded, and later revisions, forgets and merges keep it right.
#[test]
pub(super) fn a_format_5_file_reads_alike_and_upgrades() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f5.redb");
    let clock = Arc::new(ManualClock::new(Timestamp::parse("2026-01-01").unwrap()));
    let options = || StoreOptions { clock: clock.clone(), ..Default::default() };
    let store = Store::open(&path, StoreOptions { create: true, ..options() }).unwrap();
    let ns = Namespace::new("f5").unwrap();
    let words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"];
    let text = |i: usize| format!("{} {} note {i}", words[i % 8], words[(i / 8) % 8]);
    let mut indexed: Vec<(RecordId, String)> = Vec::new();
    let mut live: Vec<(RecordId, String)> = Vec::new();
    // Merged texts (a bulk batch), then fresh ones, one commit each.
    let limit = usize::try_from(FRESH_LIMIT).unwrap();
    let mut batch = Vec::new();
    for i in 0..limit + 4 {
        let rec = NewRecord::new(ns.clone(), learning(&text(i)));
        indexed.push((rec.id, text(i)));
        live.push((rec.id, text(i)));
        batch.push(WriteOp::Insert(rec));
    }
    store.write(batch).unwrap();
    for i in 1000..1020 {
        clock.advance(1_000);
        let rec = NewRecord::new(ns.clone(), learning(&text(i)));
        indexed.push((rec.id, text(i)));
        live.push((rec.id, text(i)));
        store.write(vec![WriteOp::Insert(rec)]).unwrap();
    }
    // A merged record and a fresh one get fresh second texts; the past still sees the first.
    clock.advance(1_000);
    let past = AsOf::valid_at(clock.now()).known_at(clock.now());
    for (k, i) in [2usize, limit + 10].into_iter().enumerate() {
        clock.advance(1_000);
        let new_text = format!("epsilon kappa {k}");
        let r = Revise { body: Some(learning(&new_text)), ..Revise::new(ns.clone(), live[i].0) };
        store.write(vec![WriteOp::Revise(r)]).unwrap();
        indexed.push((live[i].0, new_text.clone()));
        live[i].1 = new_text;
    }
    clock.advance(1_000);
    // Words that both analyses index alike (no stopwords, unchanged by stemming): the
    // read-only checks analyse queries the old way.
    let queries = ["alpha", "kappa", "beta note", "epsilon", "note 1003"];
    let snap = store.snapshot().unwrap();
    let fresh = snap.fresh_texts(&ns).unwrap();
    assert_eq!(fresh, 22);
    check_naive(&snap, &ns, &indexed, &live, &queries, "format 6");
    let past_query = ListQuery::new().as_of(past);
    let in_the_past = ids(&snap.lexical_search(&ns, "epsilon", &past_query, 10).unwrap());
    assert!(in_the_past.is_empty());
    let kappa_then = snap.lexical_search(&ns, "kappa", &past_query, 500).unwrap();
    let kappa_then: Vec<(RecordId, u64)> =
        kappa_then.iter().map(|h| (h.record.id, h.score.to_bits())).collect();
    let merged_rows = snap.table_sizes().unwrap()["merged texts"];
    assert_eq!(merged_rows, limit as u64 + 4, "fresh texts have no row in mnemon.texts");
    drop((snap, store));

    // Make it a format-5 file: a `texts` row beside every fresh row.
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let fresh_rows = txn
                .open_table(redb::TableDefinition::<(&str, u128, u32), &[u8]>::new("mnemon.fresh"))
                .unwrap();
            let mut texts = txn
                .open_table(redb::TableDefinition::<(&str, u128, u32), &[u8]>::new("mnemon.texts"))
                .unwrap();
            let mut n = 0;
            for r in redb::ReadableTable::iter(&fresh_rows).unwrap() {
                let (k, v) = r.unwrap();
                let (ns, id, rev) = k.value();
                let mut row = vec![1u8, 0, 0, 0, 0];
                row.extend_from_slice(&v.value()[1..5]);
                texts.insert((ns, id, rev), row.as_slice()).unwrap();
                n += 1;
            }
            assert_eq!(n, fresh);
            let mut meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
            meta.insert("format_version", 5u32.to_le_bytes().as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    assert_eq!(file_version(&path), 5);
    let ro = Store::open(&path, StoreOptions { read_only: true, ..options() }).unwrap();
    let snap = ro.snapshot().unwrap();
    check_naive(&snap, &ns, &indexed, &live, &queries, "format 5, read-only");
    let again = snap.lexical_search(&ns, "kappa", &past_query, 500).unwrap();
    assert_eq!(again.iter().map(|h| (h.record.id, h.score.to_bits())).collect::<Vec<_>>(), kappa_then);
    drop((snap, ro));

    // Upgraded: the same answers; then a fresh text with both rows forgotten, another
    // revised, and a merge.
    drop(Store::open(&path, options()).unwrap());
    assert_eq!(file_version(&path), FORMAT_VERSION);
    let store = Store::open(&path, options()).unwrap();
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "upgraded");
    let gone = live[limit + 11].0;
    store.write(vec![WriteOp::Forget { namespace: ns.clone(), id: gone }]).unwrap();
    indexed.retain(|(x, _)| *x != gone);
    live.retain(|(x, _)| *x != gone);
    let i = limit + 12;
    let r = Revise { body: Some(learning("epsilon alpha zeta")), ..Revise::new(ns.clone(), live[i].0) };
    store.write(vec![WriteOp::Revise(r)]).unwrap();
    indexed.push((live[i].0, "epsilon alpha zeta".into()));
    live[i].1 = "epsilon alpha zeta".into();
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "upgraded, written");
    store.write(vec![WriteOp::MergeTexts { namespace: ns.clone() }]).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.fresh_texts(&ns).unwrap(), 0);
    check_naive(&snap, &ns, &indexed, &live, &queries, "upgraded, merged");
    assert_eq!(snap.table_sizes().unwrap()["merged texts"], indexed.len() as u64);
}

/// The postings of a segment block (version 4, format 17, docs/file-format.md: version 3's
/// layout, then a CRC-32 of the bytes before it, checked here), by term, as
/// 28-byte keyed postings `(id, from_rev, tf, doc length)` (the layout of formats 9 to 14):
/// `[3][entries u32]`, per entry the ends of its term, its postings and its bounds, the
/// terms, the bounds (8 bytes per 64 postings: the greatest tf, the least length; checked
/// here), every posting's text number (4 bytes), then every posting's tf and length (8
/// bytes); `texts` is the segment's list of text keys (see [`segment_texts`]).
pub(super) fn decode_block(b: &[u8], texts: &[(u128, u32)]) -> Vec<(String, Vec<[u8; 28]>)> {
    assert_eq!(b[0], 4, "block version");
    let (b, crc) = b.split_at(b.len() - 4);
    assert_eq!(crc32fast::hash(b).to_le_bytes(), crc, "block checksum");
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as usize;
    let n = u32_at(1);
    let end = |e: usize, field: usize| u32_at(5 + 12 * e + 4 * field);
    let terms = 5 + 12 * n;
    let bounds = terms + if n == 0 { 0 } else { end(n - 1, 0) };
    let numbers = bounds + 8 * if n == 0 { 0 } else { end(n - 1, 2) };
    let total = if n == 0 { 0 } else { end(n - 1, 1) };
    let counts = numbers + 4 * total;
    let (mut t0, mut p0, mut b0) = (0, 0, 0);
    let mut out = Vec::new();
    for e in 0..n {
        let (t1, p1, b1) = (end(e, 0), end(e, 1), end(e, 2));
        let term = std::str::from_utf8(&b[terms + t0..terms + t1]).unwrap().to_string();
        let list: Vec<[u8; 28]> = (p0..p1)
            .map(|p| {
                let (id, rev) = texts[u32_at(numbers + 4 * p)];
                let mut posting = [0u8; 28];
                posting[..16].copy_from_slice(&id.to_le_bytes());
                posting[16..20].copy_from_slice(&rev.to_le_bytes());
                posting[20..].copy_from_slice(&b[counts + 8 * p..counts + 8 * (p + 1)]);
                posting
            })
            .collect();
        assert_eq!(b1 - b0, list.len().div_ceil(64), "pieces of {term}");
        for (j, piece) in list.chunks(64).enumerate() {
            let field =
                |p: &[u8; 28], at: usize| u32::from_le_bytes(p[at..at + 4].try_into().unwrap()) as usize;
            let tf = piece.iter().map(|p| field(p, 20)).max().unwrap();
            let len = piece.iter().map(|p| field(p, 24)).min().unwrap();
            assert_eq!(
                (u32_at(bounds + 8 * (b0 + j)), u32_at(bounds + 8 * (b0 + j) + 4)),
                (tf, len),
                "{term}"
            );
        }
        out.push((term, list));
        (t0, p0, b0) = (t1, p1, b1);
    }
    assert_eq!(b.len(), counts + 8 * total, "block length");
    out
}

/// A segment's list of text keys, from `mnemon.segment_texts` (`(namespace, segment, part)
/// -> [2]([id u128][from_rev u32])*[crc u32]`, 800 per part, format 17): a posting's number is
/// its text's place in it.
pub(super) fn segment_texts(txn: &redb::WriteTransaction, ns: &str, seg: u64) -> Vec<(u128, u32)> {
    let table = txn
        .open_table(redb::TableDefinition::<(&str, u64, u32), &[u8]>::new("mnemon.segment_texts"))
        .unwrap();
    let mut out = Vec::new();
    for r in redb::ReadableTable::range(&table, (ns, seg, 0u32)..(ns, seg + 1, 0u32)).unwrap() {
        let (k, v) = r.unwrap();
        assert_eq!(k.value().2 as usize * 800, out.len(), "parts of 800");
        let (v, crc) = v.value().split_at(v.value().len() - 4);
        assert_eq!(crc32fast::hash(v).to_le_bytes(), crc, "part checksum");
        assert_eq!((v[0], (v.len() - 1) % 20), (2, 0));
        out.extend(v[1..].chunks(20).map(|e| {
            (
                u128::from_le_bytes(e[..16].try_into().unwrap()),
                u32::from_le_bytes(e[16..].try_into().unwrap()),
            )
        }));
    }
    assert!(out.windows(2).all(|w| w[0] < w[1]), "in key order");
    out
}

/// Files of formats 8 (one row per segment posting in `mnemon.segments`) and 9 (one row per
/// term and segment in `mnemon.segment_terms`): opened read-only they are searched and
/// verified where they are; opened for writing their segments become format 10's blocks, with
/// the same answers, and later merges go on from there.
#[test]
pub(super) fn format_8_and_9_files_read_alike_and_upgrade() {
    type Rows = (&'static str, u64, &'static str, u32);
    type Postings = (&'static str, u64, &'static str, u128, u32);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f10.redb");
    let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
    let ns = Namespace::new("f8").unwrap();
    let words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"];
    let text = |i: usize| format!("{} {} note {i}", words[i % 8], words[(i / 8) % 8]);
    let mut indexed: Vec<(RecordId, String)> = Vec::new();
    let mut live: Vec<(RecordId, String)> = Vec::new();
    let limit = usize::try_from(FRESH_LIMIT).unwrap();
    let mut i = 0;
    let write = |store: &Store, i: &mut usize, n: usize, indexed: &mut Vec<_>, live: &mut Vec<_>| {
        insert_texts(store, &ns, (*i..*i + n).map(text), indexed, live);
        *i += n;
    };
    // Three segments (the first one large: "note" in more than 512 texts, a format-9 row in
    // several parts), and fresh texts.
    write(&store, &mut i, 3 * limit, &mut indexed, &mut live);
    write(&store, &mut i, limit, &mut indexed, &mut live);
    write(&store, &mut i, limit, &mut indexed, &mut live);
    write(&store, &mut i, 7, &mut indexed, &mut live);
    revise_text(&store, &ns, &mut indexed, &mut live, 5, "epsilon kappa".into());
    let queries = ["alpha", "kappa", "beta note", "epsilon", "note 1003", "note 700"];
    let sizes = store.snapshot().unwrap().table_sizes().unwrap();
    let in_segments = sizes["segment postings"];
    assert!(in_segments > 0 && sizes["fresh texts"] == 8 && sizes["segments"] == 3, "{sizes:?}");
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "format 10");
    drop(store);

    let blocks = redb::TableDefinition::<Rows, &[u8]>::new("mnemon.segment_blocks");
    let rows = redb::TableDefinition::<Rows, &[u8]>::new("mnemon.segment_terms");
    let postings = redb::TableDefinition::<Postings, &[u8]>::new("mnemon.segments");
    let version = |path: &std::path::Path| {
        let db = redb::Database::open(path).unwrap();
        let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
        let meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
        let v = redb::ReadableTable::get(&meta, "format_version").unwrap().unwrap();
        let tables: Vec<String> =
            txn.list_tables().unwrap().map(|t| redb::TableHandle::name(&t).to_string()).collect();
        (u32::from_le_bytes(v.value().try_into().unwrap()), tables)
    };
    for format in [9u32, 8] {
        let (mut indexed, mut live, mut i) = (indexed.clone(), live.clone(), i);
        let old = dir.path().join(format!("f{format}.redb"));
        std::fs::copy(&path, &old).unwrap();
        {
            // Every segment's postings by term, from its blocks.
            let db = redb::Database::open(&old).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut by_term: std::collections::BTreeMap<(String, u64, String), Vec<[u8; 28]>> =
                    Default::default();
                for r in redb::ReadableTable::iter(&txn.open_table(blocks).unwrap()).unwrap() {
                    let (k, v) = r.unwrap();
                    let (n, seg, _, _) = k.value();
                    assert!(seg < 3, "level 0");
                    for (term, list) in decode_block(v.value(), &segment_texts(&txn, n, seg)) {
                        by_term.entry((n.to_string(), seg, term)).or_default().extend(list);
                    }
                }
                let mut parts = 0;
                let mut stored = 0;
                let mut to_rows = txn.open_table(rows).unwrap();
                let mut to_postings = txn.open_table(postings).unwrap();
                for ((n, seg, term), list) in &by_term {
                    stored += list.len() as u64;
                    if format == 9 {
                        for (part, chunk) in list.chunks(512).enumerate() {
                            parts += u32::from(part > 0);
                            let mut row = vec![1u8];
                            row.extend(chunk.iter().flatten());
                            to_rows
                                .insert((n.as_str(), *seg, term.as_str(), part as u32), row.as_slice())
                                .unwrap();
                        }
                    } else {
                        for p in list {
                            let id = u128::from_le_bytes(p[..16].try_into().unwrap());
                            let rev = u32::from_le_bytes(p[16..20].try_into().unwrap());
                            let mut value = vec![1u8];
                            value.extend_from_slice(&p[20..28]);
                            to_postings
                                .insert((n.as_str(), *seg, term.as_str(), id, rev), value.as_slice())
                                .unwrap();
                        }
                    }
                }
                assert_eq!(stored, in_segments);
                assert!(format == 8 || parts > 0, "a term with more than one part");
                let mut meta =
                    txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
                meta.insert("format_version", format.to_le_bytes().as_slice()).unwrap();
            }
            txn.delete_table(blocks).unwrap();
            txn.delete_table(redb::TableDefinition::<(&str, u64, u32), &[u8]>::new("mnemon.segment_texts"))
                .unwrap();
            if format == 9 {
                txn.delete_table(postings).unwrap();
            } else {
                txn.delete_table(rows).unwrap();
            }
            txn.commit().unwrap();
        }
        assert_eq!(version(&old).0, format);
        let what = |s: &str| format!("format {format}, {s}");
        let ro = Store::open(&old, StoreOptions { read_only: true, ..Default::default() }).unwrap();
        let snap = ro.snapshot().unwrap();
        check_naive(&snap, &ns, &indexed, &live, &queries, &what("read-only"));
        assert_eq!(snap.table_sizes().unwrap()["segment postings"], in_segments);
        assert_eq!(snap.table_sizes().unwrap()["segments"], 3);
        assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
        drop((snap, ro));

        // Upgraded: the index made again (as blocks), the old table gone, the answers the same.
        drop(Store::open(&old, StoreOptions::default()).unwrap());
        let (v, tables) = version(&old);
        assert_eq!(v, FORMAT_VERSION);
        assert!(
            tables.contains(&"mnemon.segment_blocks".to_string())
                && !tables.contains(&"mnemon.segment_terms".to_string())
                && !tables.contains(&"mnemon.segments".to_string()),
            "{tables:?}"
        );
        let store = Store::open(&old, StoreOptions::default()).unwrap();
        let snap = store.snapshot().unwrap();
        check_naive(&snap, &ns, &indexed, &live, &queries, &what("upgraded"));
        assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
        // The upgrade indexed every text again in one commit: one segment, of its size's level.
        assert_eq!(snap.table_sizes().unwrap()["segments"], 1);
        // Forget a text in the upgraded segment; merge more texts beside it.
        let gone = live[limit + 3].0;
        store.write(vec![WriteOp::Forget { namespace: ns.clone(), id: gone }]).unwrap();
        indexed.retain(|(x, _)| *x != gone);
        live.retain(|(x, _)| *x != gone);
        check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, &what("upgraded, forgotten"));
        for _ in 0..SEGMENT_FANOUT - 3 {
            write(&store, &mut i, limit, &mut indexed, &mut live);
        }
        let snap = store.snapshot().unwrap();
        check_naive(&snap, &ns, &indexed, &live, &queries, &what("upgraded, merged up"));
        assert_eq!(snap.table_sizes().unwrap()["segments"] as usize, 1 + SEGMENT_FANOUT - 3);
        assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
    }
}

/// A file written by the previous release (format 10, unstemmed terms; made by the `mnemon`
/// of commit 35373e9: three records in namespace `fixture`, one revised, then `compact`):
/// read-only it answers as that release did; opened for writing it is re-indexed with
/// stemmed terms, and its old and new texts answer as of their times.
#[test]
pub(super) fn a_format_10_file_is_reindexed_with_stemmed_terms() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f10.redb");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/format10.redb"), &path).unwrap();
    let ns = Namespace::new("fixture").unwrap();
    let texts = |snap: &Snapshot, q: &str| -> Vec<String> {
        snap.lexical_search(&ns, q, &ListQuery::new(), 10)
            .unwrap()
            .iter()
            .map(|h| h.record.body.text())
            .collect()
    };
    assert_eq!(file_version(&path), 10);
    let ro = Store::open(&path, StoreOptions { read_only: true, ..Default::default() }).unwrap();
    let snap = ro.snapshot().unwrap();
    assert_eq!(texts(&snap, "painting"), ["She was painting sunrises at the lake"]);
    assert!(texts(&snap, "paint").is_empty(), "format 10 did not stem");
    assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
    drop((snap, ro));

    drop(Store::open(&path, StoreOptions::default()).unwrap());
    assert_eq!(file_version(&path), FORMAT_VERSION);
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(texts(&snap, "paint"), ["She was painting sunrises at the lake"]);
    assert_eq!(texts(&snap, "sunrise painted"), ["She was painting sunrises at the lake"]);
    assert_eq!(texts(&snap, "adopting"), ["Adopted redb for storage\nembedded and fast"]);
    // The revised record: its new text now, its old text only as of before the revision.
    assert_eq!(texts(&snap, "flush"), ["The caches are flushed hourly now"]);
    assert!(texts(&snap, "often").is_empty());
    let revised = snap.lexical_search(&ns, "flush", &ListQuery::new(), 1).unwrap()[0].record.clone();
    let before = ListQuery::new()
        .as_of(AsOf::valid_at(revised.valid_from).known_at(revised.recorded_at.plus_micros(-1)));
    let then = snap.lexical_search(&ns, "often", &before, 10).unwrap();
    assert_eq!(
        then.iter().map(|h| h.record.body.text()).collect::<Vec<_>>(),
        ["The caches were flushing too often"]
    );
    assert!(snap.verify().unwrap().is_empty());
}

/// The first byte (the block version) of every segment block of the file at `path`.
pub(super) fn block_versions(path: &std::path::Path) -> Vec<u8> {
    let db = redb::Database::open(path).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let blocks = txn
        .open_table(redb::TableDefinition::<(&str, u64, &str, u32), &[u8]>::new("mnemon.segment_blocks"))
        .unwrap();
    redb::ReadableTable::iter(&blocks).unwrap().map(|r| r.unwrap().1.value()[0]).collect()
}

/// Files written by earlier releases with keyed segment blocks: format 11 (blocks without
/// bounds; made by the `mnemon` of commit 5e3ff78: three records in namespace `fixture`, 300
/// more imported in one commit, which made a segment, one record revised, then `compact`)
/// and format 12 (blocks with bounds, version 2; see `integrity.rs` for how it was made):
/// read-only they are read as they are; opened for writing their segments are numbered
/// (blocks of version 3 and a list of text keys per segment), and every search answers as
/// before, to the last bit of every score; a text forgotten afterwards goes from the
/// numbered segment.
#[test]
pub(super) fn files_with_keyed_blocks_get_numbered_blocks() {
    for (format, version) in [(11u32, 1u8), (12, 2)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.redb");
        let fixture = format!("{}/tests/data/format{format}.redb", env!("CARGO_MANIFEST_DIR"));
        std::fs::copy(fixture, &path).unwrap();
        let ns = Namespace::new("fixture").unwrap();
        let queries = ["lake", "stone river", "painting", "note 17", "flush", "often", "tokens stone stone"];
        let answers = |snap: &Snapshot| -> Vec<Vec<(String, u64)>> {
            queries
                .iter()
                .map(|q| {
                    let hits = snap.lexical_search(&ns, q, &ListQuery::new(), 20).unwrap();
                    hits.iter().map(|h| (h.record.body.text(), h.score.to_bits())).collect()
                })
                .collect()
        };
        assert_eq!(file_version(&path), format);
        let versions = block_versions(&path);
        assert!(!versions.is_empty() && versions.iter().all(|&v| v == version), "{format}: {versions:?}");
        let ro = Store::open(&path, StoreOptions { read_only: true, ..Default::default() }).unwrap();
        let snap = ro.snapshot().unwrap();
        let before = answers(&snap);
        if format == 11 {
            assert_eq!(before[0].len(), 20);
            assert_eq!(before[2][0].0, "She was painting sunrises at the lake");
            assert!(before[5].is_empty());
        }
        assert_eq!(before[4][0].0, "The caches are flushed hourly now");
        assert!(before.iter().filter(|a| a.len() > 1).count() >= 2, "{format}: {before:?}");
        assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
        drop((snap, ro));

        drop(Store::open(&path, StoreOptions::default()).unwrap());
        assert_eq!(file_version(&path), FORMAT_VERSION);
        let versions = block_versions(&path);
        assert!(!versions.is_empty() && versions.iter().all(|&v| v == 4), "{format}: {versions:?}");
        let store = Store::open(&path, StoreOptions::default()).unwrap();
        let snap = store.snapshot().unwrap();
        assert_eq!(answers(&snap), before, "{format}");
        assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
        // Forget the best text of the query with the most hits (in the segment): it is gone,
        // the rest as before.
        let q = (0..queries.len()).max_by_key(|&i| before[i].len()).unwrap();
        let lakes = snap.lexical_search(&ns, queries[q], &ListQuery::new(), 1000).unwrap();
        let lake = lakes[0].record.id;
        drop(snap);
        store.write(vec![WriteOp::Forget { namespace: ns.clone(), id: lake }]).unwrap();
        let snap = store.snapshot().unwrap();
        let hits = snap.lexical_search(&ns, queries[q], &ListQuery::new(), 1000).unwrap();
        let ids = |hits: &[LexicalHit]| hits.iter().map(|h| h.record.id).collect::<Vec<_>>();
        assert_eq!(ids(&hits), ids(&lakes[1..]), "{format}");
        assert_eq!(snap.verify().unwrap(), Vec::<String>::new(), "{format}");
    }
}

/// Format 17 seals the lexical index's large values: a file of format 16 (blocks of version 3,
/// text-number parts of version 1: made here from a new file by taking their checksums off)
/// is read as it is read-only; opened for writing, every block and part is sealed, and every
/// search answers as before, to the last bit. A damaged value of the old version is refused
/// by the upgrade (it is not sealed in), and after it damage inside a block is an error, not
/// another answer.
#[test]
fn format_16_files_get_sealed_blocks_and_damage_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.redb");
    let ns = Namespace::new("s").unwrap();
    {
        let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
        // Fresh texts enough for segments of several blocks, then one fresh text.
        let limit = usize::try_from(FRESH_LIMIT).unwrap();
        for batch in 0..4 {
            let ops: Vec<WriteOp> = (0..limit)
                .map(|i| {
                    let n = batch * limit + i;
                    let words: String = (0..40).map(|w| format!(" w{n}t{w}")).collect();
                    let text = format!("note {n} about topic{} and river{}{words}", n % 10, n % 7);
                    WriteOp::Insert(NewRecord::new(ns.clone(), learning(&text)))
                })
                .collect();
            store.write(ops).unwrap();
        }
        store.write(vec![WriteOp::Insert(NewRecord::new(ns.clone(), learning("topic3 fresh")))]).unwrap();
        let sizes = store.snapshot().unwrap().table_sizes().unwrap();
        assert!(sizes["segment postings"] > 0, "{sizes:?}");
    }
    let queries = ["topic3", "river5 topic2", "note 17", "fresh"];
    let answers = |snap: &Snapshot| -> Vec<Vec<(String, u64)>> {
        queries
            .iter()
            .map(|q| {
                let hits = snap.lexical_search(&ns, q, &ListQuery::new(), 20).unwrap();
                hits.iter().map(|h| (h.record.body.text(), h.score.to_bits())).collect()
            })
            .collect()
    };
    let blocks = redb::TableDefinition::<(&str, u64, &str, u32), &[u8]>::new("mnemon.segment_blocks");
    let parts = redb::TableDefinition::<(&str, u64, u32), &[u8]>::new("mnemon.segment_texts");
    let meta = redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta");
    // Back to format 16: values without their checksums, `damage` applied to the first block.
    let unseal = |to: &std::path::Path, damage: bool| {
        std::fs::copy(&path, to).unwrap();
        let db = redb::Database::open(to).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(blocks).unwrap();
            let all: Vec<_> = redb::ReadableTable::iter(&t)
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    let (n, s, f, p) = k.value();
                    ((n.to_string(), s, f.to_string(), p), v.value().to_vec())
                })
                .collect();
            assert!(
                all.len() > 1 && all.iter().all(|(_, v)| v[0] == 4),
                "{:?}",
                all.iter().map(|(_, v)| v[0]).collect::<Vec<_>>()
            );
            for (i, ((n, s, f, p), mut v)) in all.into_iter().enumerate() {
                v.truncate(v.len() - 4);
                v[0] = 3;
                if damage && i == 0 {
                    let last = v.len() - 1;
                    v[last] ^= 0x10;
                    v[5] ^= 0xff;
                }
                t.insert((n.as_str(), s, f.as_str(), p), v.as_slice()).unwrap();
            }
            let mut t = txn.open_table(parts).unwrap();
            let all: Vec<_> = redb::ReadableTable::iter(&t)
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    let (n, s, p) = k.value();
                    ((n.to_string(), s, p), v.value().to_vec())
                })
                .collect();
            for ((n, s, p), mut v) in all {
                assert_eq!(v[0], 2);
                v.truncate(v.len() - 4);
                v[0] = 1;
                t.insert((n.as_str(), s, p), v.as_slice()).unwrap();
            }
            txn.open_table(meta).unwrap().insert("format_version", 16u32.to_le_bytes().as_slice()).unwrap();
        }
        txn.commit().unwrap();
    };
    let sealed_answers = answers(&Store::open(&path, StoreOptions::default()).unwrap().snapshot().unwrap());
    assert!(sealed_answers.iter().all(|a| !a.is_empty()));
    let old = dir.path().join("old.redb");
    unseal(&old, false);
    assert_eq!(file_version(&old), 16);
    {
        let ro = Store::open(&old, StoreOptions { read_only: true, ..Default::default() }).unwrap();
        assert_eq!(answers(&ro.snapshot().unwrap()), sealed_answers, "format 16 read as it is");
    }
    drop(Store::open(&old, StoreOptions::default()).unwrap());
    assert_eq!(file_version(&old), FORMAT_VERSION);
    assert!(block_versions(&old).iter().all(|&v| v == 4));
    let store = Store::open(&old, StoreOptions::default()).unwrap();
    assert_eq!(answers(&store.snapshot().unwrap()), sealed_answers);
    assert_eq!(store.snapshot().unwrap().verify().unwrap(), Vec::<String>::new());
    drop(store);
    // A damaged block of format 16 is refused by the upgrade, and the file is left as it was.
    let bad = dir.path().join("bad.redb");
    unseal(&bad, true);
    let refused = Store::open(&bad, StoreOptions::default()).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(refused.contains("does not decode"), "{refused}");
    assert_eq!(file_version(&bad), 16);
    // After the upgrade, a changed byte inside a block: an error, not other postings.
    {
        let db = redb::Database::open(&old).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(blocks).unwrap();
            let (key, mut v) = {
                let first = redb::ReadableTable::iter(&t).unwrap().next().unwrap().unwrap();
                let (n, s, f, p) = first.0.value();
                ((n.to_string(), s, f.to_string(), p), first.1.value().to_vec())
            };
            let at = v.len() / 2;
            v[at] ^= 0x01;
            t.insert((key.0.as_str(), key.1, key.2.as_str(), key.3), v.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let store = Store::open(&old, StoreOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    let failed =
        queries.iter().filter(|q| snap.lexical_search(&ns, q, &ListQuery::new(), 20).is_err()).count();
    assert!(failed > 0, "a damaged block went unnoticed");
    for q in queries {
        if let Ok(hits) = snap.lexical_search(&ns, q, &ListQuery::new(), 20) {
            let got: Vec<(String, u64)> =
                hits.iter().map(|h| (h.record.body.text(), h.score.to_bits())).collect();
            let i = queries.iter().position(|x| *x == q).unwrap();
            assert_eq!(got, sealed_answers[i], "{q}: a different answer");
        }
    }
    assert!(snap.verify().unwrap().iter().any(|p| p.contains("malformed block")));
}
