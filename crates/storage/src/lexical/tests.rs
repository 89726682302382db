use std::collections::BTreeMap;

use redb::{ReadableTable, Table};

use super::block::*;
use super::codec::*;
use super::layout::*;
use super::search::scan_fresh;
use super::segments::*;
use super::writer::*;

/// Every term's postings through [`term_blocks`], as a search reads them.
fn lookup(table: &impl ReadableTable<SegmentKey, &'static [u8]>, term: &str) -> Vec<SegmentPosting> {
    let mut out = Vec::new();
    term_blocks(table, "n", 5, term, |_, _, guard| {
        let block = Block::parse(guard.value()).ok_or_else(|| malformed_segment("n", 5, term))?;
        if let Some(i) = block.find(term).ok_or_else(|| malformed_segment("n", 5, term))? {
            out.extend(block.postings(i).ok_or_else(|| malformed_segment("n", 5, term))?);
        }
        Ok(true)
    })
    .unwrap();
    out.sort_unstable();
    out
}

/// A block is refused when its terms, or a term's postings, are out of order, when it is cut
/// short, or when a piece's bounds are not its postings'.
#[test]
fn a_block_out_of_order_fails_its_check() {
    let encode = |entries: &[(&str, &[SegmentPosting])]| {
        let mut b = BlockBuf::default();
        for (term, list) in entries {
            b.push(term, list);
        }
        b.take()
    };
    let ok = encode(&[("a", &[(1, 0, 1, 1), (2, 0, 1, 1)]), ("b", &[(1, 0, 1, 1)])]);
    assert!(Block::parse(&ok).is_some_and(|b| b.check()));
    assert_eq!(Block::parse(&ok).and_then(|b| b.entries()).map(|e| e.len()), Some(2));
    for bad in [
        encode(&[("b", &[(1, 0, 1, 1)]), ("a", &[(1, 0, 1, 1)])]),
        encode(&[("a", &[(1, 0, 1, 1)]), ("a", &[(2, 0, 1, 1)])]),
        encode(&[("a", &[(2, 0, 1, 1), (1, 0, 1, 1)])]),
        encode(&[("a", &[(1, 1, 1, 1), (1, 0, 1, 1)])]),
        encode(&[("a", &[(1, 0, 1, 1), (1, 0, 1, 1)])]),
    ] {
        assert!(Block::parse(&bad).is_some_and(|b| !b.check() && b.entries().is_none()), "{bad:?}");
    }
    assert!(Block::parse(&ok[..ok.len() - 1]).is_none());
    // A piece's bounds that are not its postings' (`[2][2 entries][directory][terms "ab"]`,
    // then entry "a"'s greatest tf).
    let at = 1 + 4 + 2 * 12 + 2;
    assert_eq!(ok[at..at + 8], [1, 0, 0, 0, 1, 0, 0, 0]);
    for (offset, value) in [(0, 5), (4, 0)] {
        let mut bad = ok.clone();
        bad[at + offset] = value;
        assert!(Block::parse(&bad).is_some_and(|b| !b.check()), "{bad:?}");
    }
}

/// Blocks split between terms and inside a term's postings (a term starting mid-block and
/// continuing over several blocks); every term is found, and so is none that is absent,
/// also after `forget` took a block's first entry out (its key is then below its first
/// term) or emptied a block.
#[test]
fn blocks_find_every_term_across_boundaries_and_after_forgets() {
    let dir = tempfile::tempdir().unwrap();
    let db = redb::Database::create(dir.path().join("b.redb")).unwrap();
    // Terms of 1 to 3,000 postings: "t0000" has 1, "t0007" 3,000 (about five blocks).
    let mut want: BTreeMap<String, Vec<SegmentPosting>> = BTreeMap::new();
    for t in 0..40u32 {
        let n = if t % 7 == 0 { 3000 } else { 1 + t * 13 };
        let list = (0..n).map(|i| (u128::from(i) * 3 + u128::from(t), i % 3, 1 + i % 4, 10)).collect();
        want.insert(format!("t{:04}", t * 7), list);
    }
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(crate::tables::SEGMENTS).unwrap();
        let mut w = BlockWriter::new("n", 5);
        for (term, list) in &want {
            w.push(&mut table, term, list).unwrap();
            if term == "t0035" {
                // A block boundary before a small term.
                w.flush(&mut table).unwrap();
            }
        }
        w.flush(&mut table).unwrap();
        // Another segment on each side, to be left alone.
        for seg in [4, 6] {
            let mut w = BlockWriter::new("n", seg);
            w.push(&mut table, "t0007", &[(1, 0, 1, 1)]).unwrap();
            w.flush(&mut table).unwrap();
        }
        let keys: Vec<(String, u32)> = table
            .range(("n", 5u64, "", 0u32)..("n", 6u64, "", 0u32))
            .unwrap()
            .map(|r| {
                let (k, _) = r.unwrap();
                (k.value().2.to_string(), k.value().3)
            })
            .collect();
        assert!(keys.len() > 10, "{keys:?}");
        assert!(keys.iter().any(|k| k.1 > 1), "a term over three blocks or more: {keys:?}");
        assert!(keys.iter().any(|k| k.1 == 0 && want[&k.0].len() > 1), "{keys:?}");
        let check = |table: &Table<'_, SegmentKey, &'static [u8]>, want: &BTreeMap<String, Vec<_>>| {
            for (term, list) in want {
                assert_eq!(&lookup(table, term), list, "{term}");
            }
            for absent in ["", "a", "t0001", "t0008", "t9", "u"] {
                assert!(lookup(table, absent).is_empty(), "{absent}");
            }
        };
        check(&table, &want);
        let mut lexical = LexicalWriter {
            postings: crate::tables::LazyTable::new(&txn, crate::tables::POSTINGS),
            segments: crate::tables::LazyTable::new(&txn, crate::tables::SEGMENTS),
            texts: crate::tables::LazyTable::new(&txn, crate::tables::TEXTS),
            fresh: txn.open_table(crate::tables::FRESH).unwrap(),
            stats: txn.open_table(crate::tables::LEXSTATS).unwrap(),
            pending: BTreeMap::new(),
            new_texts: BTreeMap::new(),
            written: 0,
            prepared: Vec::new(),
            merge_requested: Default::default(),
        };
        drop(table);
        // Every posting of a term that starts a block and ends in it: the block keeps its
        // key, now below its first term.
        let emptied = "t0042".to_string();
        assert!(keys.contains(&(emptied.clone(), 0)) && want[&emptied].len() < 100, "{keys:?}");
        for (id, rev, _, _) in want.insert(emptied.clone(), Vec::new()).unwrap() {
            lexical.forget_in_segment("n", 5, &emptied, id, rev).unwrap();
        }
        // Then a posting of every other block's first term.
        for (term, part) in keys.iter().filter(|k| k.0 != emptied) {
            let list = want.get_mut(term).unwrap();
            let at = if *part == 0 { 0 } else { list.len() / 2 };
            let (id, rev, _, _) = list.remove(at);
            lexical.forget_in_segment("n", 5, term, id, rev).unwrap();
        }
        check(lexical.segments.get().unwrap(), &want);
        let first = |t: &Table<'_, SegmentKey, &'static [u8]>| {
            let v = t.get(("n", 5u64, emptied.as_str(), 0u32)).unwrap().unwrap();
            Block::parse(v.value()).unwrap().term(0).unwrap().to_string()
        };
        assert!(first(lexical.segments.get().unwrap()) > emptied, "the key is below the first term");
        let other = lexical
            .segments
            .get()
            .unwrap()
            .range(("n", 4u64, "", 0u32)..("n", 5u64, "", 0u32))
            .unwrap()
            .count();
        assert_eq!(other, 1);
    }
    txn.commit().unwrap();
}

/// A search scans fresh rows in place: it finds exactly the terms the full decoding finds,
/// with their counts and the text's length, and a truncated or unknown row is an error, not
/// a silent miss.
#[test]
fn a_fresh_row_scanned_in_place_matches_its_decoding() {
    let (counts, len) = term_counts("the cache keeps café keys; cache misses go to redb, café again");
    let row = encode_fresh(counts.iter().map(|(t, tf)| (t.as_str(), *tf)), len);
    let (_, decoded) = decode_fresh(&row).unwrap();
    let mut query: Vec<String> =
        ["cache", "café", "redb", "absent", "cach"].iter().map(|s| s.to_string()).collect();
    query.sort();
    let mut found = Vec::new();
    scan_fresh(&row, &query, |i, tf, l| found.push((query[i].clone(), tf, l))).unwrap();
    found.sort();
    let mut want: Vec<(String, u32, u32)> = decoded
        .iter()
        .filter(|(t, _)| query.iter().any(|q| q == t))
        .map(|(t, tf)| (t.to_string(), *tf, len))
        .collect();
    want.sort();
    assert_eq!(found, want);
    assert_eq!(found.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(), ["cach", "café", "redb"]);
    assert_eq!(found[0].1, 2, "{found:?}");
    for cut in [1, 5, 9, row.len() - 1] {
        assert!(scan_fresh(&row[..cut], &query, |_, _, _| {}).is_none(), "cut at {cut}");
    }
    let mut other = row.clone();
    other[0] = FRESH_VERSION + 1;
    assert!(scan_fresh(&other, &query, |_, _, _| {}).is_none());
}

/// A job's texts are encoded by its caller ([`prepare`]) exactly as the committer would
/// encode them, for at most `limit` texts, and the committer uses such a row only for the
/// record with its id and exactly its text: a record whose text turned out otherwise is
/// tokenized in the commit.
#[test]
fn a_prepared_row_is_used_only_for_its_record_and_its_text() {
    use crate::body::Learning;
    use crate::record::{Envelope, Op, Record};
    use crate::write::{NewRecord, WriteOp};
    let ns = crate::id::Namespace::new("n").unwrap();
    let learning =
        |t: &str| -> crate::body::Body { Learning { text: t.into(), ..Default::default() }.into() };
    let a = NewRecord::new(ns.clone(), learning("Alpha beta, beta!"));
    let b = NewRecord::new(ns.clone(), learning("gamma"));
    let ops = vec![
        WriteOp::Insert(a.clone()),
        WriteOp::Retire { namespace: ns.clone(), id: a.id, at: None },
        WriteOp::Supersede { old: a.id, new: b.clone() },
    ];
    assert_eq!(prepare(crate::write::new_texts(&ops), 1).len(), 1);
    assert!(prepare(crate::write::new_texts(&ops), 0).is_empty());
    let prepared = prepare(crate::write::new_texts(&ops), 64);
    assert_eq!(prepared.iter().map(|p| p.id).collect::<Vec<_>>(), [a.id.as_u128(), b.id.as_u128()]);
    for (p, text) in prepared.iter().zip(["Alpha beta, beta!", "gamma"]) {
        let (terms, len) = term_list(text);
        assert_eq!(p.row, encode_fresh(terms.iter().map(|(t, tf)| (t.as_ref(), *tf)), len));
        assert_eq!(p.len, len);
    }
    let record = |n: &NewRecord, text: &str| Record {
        namespace: ns.clone(),
        id: n.id,
        rev: 1,
        recorded_at: crate::time::Timestamp::from_micros(10),
        replaced_at: None,
        op: Op::Insert,
        valid_from: crate::time::Timestamp::from_micros(10),
        valid_until: None,
        expires_at: None,
        supersedes: None,
        superseded_by: None,
        envelope: Envelope::default(),
        body: learning(text),
    };
    let dir = tempfile::tempdir().unwrap();
    let db = redb::Database::create(dir.path().join("p.redb")).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut w = LexicalWriter::open(&txn).unwrap();
        w.prepared = prepared;
        // `a`'s id with another text: its prepared row is not used, nor taken.
        w.write(None, &record(&a, "delta delta")).unwrap();
        assert_eq!(w.prepared.len(), 2);
        // `b` with its text: its row is taken.
        w.write(None, &record(&b, "gamma")).unwrap();
        assert_eq!(w.prepared.iter().map(|p| p.id).collect::<Vec<_>>(), [a.id.as_u128()]);
        let row = |id: crate::id::RecordId| {
            w.fresh.get(("n", id.as_u128(), 1u32)).unwrap().unwrap().value().to_vec()
        };
        let terms = |row: &[u8]| {
            let (len, terms) = decode_fresh(row).unwrap();
            (len, terms.into_iter().map(|(t, tf)| (t.to_string(), tf)).collect::<Vec<_>>())
        };
        assert_eq!(terms(&row(a.id)), (2, vec![("delta".to_string(), 2)]));
        assert_eq!(terms(&row(b.id)), (1, vec![("gamma".to_string(), 1)]));
    }
    txn.abort().unwrap();
}

/// A full block fits one 16 KiB page with its key, even with the longest namespace and
/// terms: a block of 16 KiB took a 32 KiB page, half of it empty (`fragmented_bytes`).
#[test]
fn a_full_block_and_its_key_fit_one_page() {
    use redb::ReadableTableMetadata;
    let dir = tempfile::tempdir().unwrap();
    let db = redb::Database::create(dir.path().join("f.redb")).unwrap();
    let ns = "n".repeat(crate::id::MAX_NAMESPACE_LEN);
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(crate::tables::SEGMENTS).unwrap();
        let mut w = BlockWriter::new(&ns, 1);
        for t in 0..40u32 {
            let term = format!("{t:064}");
            let list: Vec<SegmentPosting> = (0..300u32).map(|i| (u128::from(i), 0, 1, 10)).collect();
            w.push(&mut table, &term, &list).unwrap();
        }
        w.flush(&mut table).unwrap();
        let stats = table.stats().unwrap();
        assert!(table.len().unwrap() >= 20, "{}", table.len().unwrap());
        assert!(
            stats.fragmented_bytes() * 8 < stats.stored_bytes(),
            "stored {} fragmented {} in {} leaves",
            stats.stored_bytes(),
            stats.fragmented_bytes(),
            stats.leaf_pages()
        );
    }
    txn.abort().unwrap();
}
