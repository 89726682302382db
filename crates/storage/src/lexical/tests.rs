use std::collections::BTreeMap;

use redb::{ReadableTable, Table};

use super::block::*;
use super::codec::*;
use super::layout::*;
use super::posting::{Keyed, Posting, put_keyed};
use super::search::scan_fresh;
use super::segments::*;
use super::writer::*;

/// Every term's postings through [`term_blocks`], as a search reads them.
fn lookup(table: &impl ReadableTable<SegmentKey, &'static [u8]>, term: &str) -> Vec<Posting> {
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
    let encode = |entries: &[(&str, &[Posting])]| {
        let mut b = BlockBuf::default();
        for (term, list) in entries {
            b.push(term, list);
        }
        b.take()
    };
    let ok = encode(&[("a", &[(1, 1, 1), (2, 1, 1)]), ("b", &[(1, 1, 1)])]);
    assert!(Block::parse(&ok).is_some_and(|b| b.check() && b.numbered()));
    assert_eq!(Block::parse(&ok).and_then(|b| b.entries()).map(|e| e.len()), Some(2));
    assert!(Block::parse(&ok).is_some_and(|b| b.keyed_entries().is_none() && b.keyed(0).is_none()));
    for bad in [
        encode(&[("b", &[(1, 1, 1)]), ("a", &[(1, 1, 1)])]),
        encode(&[("a", &[(1, 1, 1)]), ("a", &[(2, 1, 1)])]),
        encode(&[("a", &[(2, 1, 1), (1, 1, 1)])]),
        encode(&[("a", &[(1, 1, 1), (1, 1, 1)])]),
    ] {
        assert!(Block::parse(&bad).is_some_and(|b| !b.check() && b.entries().is_none()), "{bad:?}");
    }
    assert!(Block::parse(&ok[..ok.len() - 1]).is_none());
    // A piece's bounds that are not its postings' (`[3][2 entries][directory][terms "ab"]`,
    // then entry "a"'s greatest tf).
    let at = 1 + 4 + 2 * 12 + 2;
    assert_eq!(ok[at..at + 8], [1, 0, 0, 0, 1, 0, 0, 0]);
    for (offset, value) in [(0, 5), (4, 0)] {
        let mut bad = ok.clone();
        bad[at + offset] = value;
        // The checksum finds the change; sealed again, the bounds check does.
        assert!(Block::parse(&bad).is_none(), "{bad:?}");
        bad.truncate(bad.len() - 4);
        super::codec::seal(&mut bad);
        assert!(Block::parse(&bad).is_some_and(|b| !b.check()), "{bad:?}");
    }
}

/// Every single-bit change of a sealed block, and of a sealed text-number part, makes it
/// unreadable (format 17): damage is an error, never other postings.
#[test]
fn damage_to_a_sealed_block_or_part_is_found() {
    let mut b = BlockBuf::default();
    b.push("alpha", &[(1, 2, 3), (4, 5, 6)]);
    b.push("beta", &[(7, 8, 9)]);
    let block = b.take();
    assert!(Block::parse(&block).is_some_and(|b| b.check()));
    for byte in 0..block.len() {
        for bit in 0..8 {
            let mut bad = block.clone();
            bad[byte] ^= 1 << bit;
            assert!(Block::parse(&bad).is_none_or(|b| !b.numbered()), "byte {byte} bit {bit}");
        }
    }
    // A block of format 16 (version 3, unsealed) is still read, and seals.
    let mut old = block[..block.len() - 4].to_vec();
    old[0] = 3;
    assert!(Block::parse(&old).is_some_and(|b| b.check() && b.numbered()));
    assert_eq!(super::block::seal_block(&old), Some(block.clone()));
    assert_eq!(super::block::seal_block(&block), None);
}

/// Blocks split between terms and inside a term's postings (a term starting mid-block and
/// continuing over several blocks); every term is found, and so is none that is absent,
/// also after `forget` took a block's first entry out (its key is then below its first
/// term) or emptied a block.
#[test]
fn blocks_find_every_term_across_boundaries_and_after_forgets() {
    let dir = tempfile::tempdir().unwrap();
    let db = redb::Database::create(dir.path().join("b.redb")).unwrap();
    // Terms of 1 to 3,000 postings: "t0000" has 1, "t0007" 3,000 (about two blocks).
    let mut want: BTreeMap<String, Vec<Posting>> = BTreeMap::new();
    for t in 0..40u32 {
        let n = if t % 7 == 0 { 3000 } else { 1 + t * 13 };
        let list = (0..n).map(|i| (i * 3 + t, 1 + i % 4, 10)).collect();
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
            w.push(&mut table, "t0007", &[(1, 1, 1)]).unwrap();
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
        assert!(keys.len() > 5, "{keys:?}");
        assert!(keys.iter().any(|k| k.1 > 0), "a term over two blocks or more: {keys:?}");
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
        let mut lexical = LexicalWriter::open(&txn).unwrap();
        drop(table);
        // Every posting of a term that starts a block and ends in it: the block keeps its
        // key, now below its first term.
        let emptied = keys.iter().find(|k| k.1 == 0 && want[&k.0].len() < 100 && k.0 != keys[0].0);
        let emptied = emptied.map(|k| k.0.clone()).unwrap();
        for (n, _, _) in want.insert(emptied.clone(), Vec::new()).unwrap() {
            lexical.forget_posting("n", 5, &emptied, n).unwrap();
        }
        // Then a posting of every other block's first term.
        for (term, part) in keys.iter().filter(|k| k.0 != emptied) {
            let list = want.get_mut(term).unwrap();
            let at = if *part == 0 { 0 } else { list.len() / 2 };
            let (n, _, _) = list.remove(at);
            lexical.forget_posting("n", 5, term, n).unwrap();
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

/// A keyed block of formats 10 to 14 (version 1 without bounds, 2 with them): `[version][entries]`,
/// the directory, the terms, the bounds (version 2), then 28-byte postings.
fn keyed_block(version: u8, entries: &[(&str, Vec<Keyed>)]) -> Vec<u8> {
    let (mut dir, mut terms, mut bounds, mut postings) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut n = 0u32;
    for (term, list) in entries {
        terms.extend_from_slice(term.as_bytes());
        list.iter().for_each(|p| put_keyed(&mut postings, *p));
        n += list.len() as u32;
        dir.extend_from_slice(&(terms.len() as u32).to_le_bytes());
        dir.extend_from_slice(&n.to_le_bytes());
        if version == 2 {
            super::posting::put_bounds(&mut bounds, list, |p| (p.2, p.3));
            dir.extend_from_slice(&((bounds.len() / 8) as u32).to_le_bytes());
        }
    }
    let mut out = vec![version];
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for part in [dir, terms, bounds, postings] {
        out.extend_from_slice(&part);
    }
    out
}

/// The upgrade to format 15 numbers keyed segments of both versions: each segment's texts
/// are listed in key order, and every block is written again under its key with the same
/// postings, numbered.
#[test]
fn keyed_segments_are_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let db = redb::Database::create(dir.path().join("k.redb")).unwrap();
    let a: Vec<Keyed> = vec![(7, 1, 2, 9), (u128::MAX, 0, 1, 4)];
    let b: Vec<Keyed> = vec![(3, 0, 1, 5), (7, 1, 3, 9)];
    let c: Vec<Keyed> = vec![(1, 2, 1, 1)];
    let blocks = [
        (("m", 3u64, "alpha", 0u32), keyed_block(1, &[("alpha", a.clone()), ("beta", b.clone())])),
        (("m", 3, "gamma", 0), keyed_block(2, &[("gamma", c.clone())])),
        (("n", 1, "beta", 0), keyed_block(2, &[("beta", b.clone())])),
    ];
    for (_, bytes) in &blocks {
        let block = Block::parse(bytes).unwrap();
        assert!(!block.numbered() && block.check() && block.chunk(0).is_none());
        assert_eq!(block.keyed(0).unwrap().len(), block.keyed_entries().unwrap()[0].1.len());
    }
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(crate::tables::SEGMENTS).unwrap();
        for (k, v) in &blocks {
            table.insert(*k, v.as_slice()).unwrap();
        }
    }
    super::number_blocks(&txn).unwrap();
    {
        let table = txn.open_table(crate::tables::SEGMENTS).unwrap();
        let numbers = txn.open_table(crate::tables::SEGMENT_TEXTS).unwrap();
        let texts = super::numbers::load(&numbers, "m", 3).unwrap();
        assert_eq!(texts, vec![(1, 2), (3, 0), (7, 1), (u128::MAX, 0)]);
        assert_eq!(super::numbers::load(&numbers, "n", 1).unwrap(), vec![(3, 0), (7, 1)]);
        let read = |k: (&str, u64, &str, u32), texts: &[(u128, u32)]| -> Vec<(String, Vec<Keyed>)> {
            let v = table.get(k).unwrap().unwrap();
            let block = Block::parse(v.value()).unwrap();
            assert!(block.numbered());
            let entries = block.entries().unwrap();
            entries
                .into_iter()
                .map(|(t, l)| {
                    let keyed = l
                        .into_iter()
                        .map(|(n, tf, len)| {
                            let (id, rev) = texts[n as usize];
                            (id, rev, tf, len)
                        })
                        .collect();
                    (t.to_string(), keyed)
                })
                .collect()
        };
        assert_eq!(read(("m", 3, "alpha", 0), &texts), vec![("alpha".into(), a), ("beta".into(), b.clone())]);
        assert_eq!(read(("m", 3, "gamma", 0), &texts), vec![("gamma".into(), c)]);
        let texts_n = super::numbers::load(&numbers, "n", 1).unwrap();
        assert_eq!(read(("n", 1, "beta", 0), &texts_n), vec![("beta".into(), b)]);
    }
    // Numbering again finds nothing keyed: every block and list stays as it is.
    let rows = |txn: &redb::WriteTransaction| -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let blocks = txn.open_table(crate::tables::SEGMENTS).unwrap();
        let numbers = txn.open_table(crate::tables::SEGMENT_TEXTS).unwrap();
        (
            blocks.iter().unwrap().map(|r| r.unwrap().1.value().to_vec()).collect(),
            numbers.iter().unwrap().map(|r| r.unwrap().1.value().to_vec()).collect(),
        )
    };
    let before = rows(&txn);
    super::number_blocks(&txn).unwrap();
    assert_eq!(rows(&txn), before);
    assert_eq!(before.0.len(), 3);
    txn.abort().unwrap();
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

/// Format 18's small rows are sealed: every single-bit change of a posting or text row, a
/// fresh row or a namespace's totals fails to decode (a search then errs, where it used to
/// read another count); rows of the versions before read as they are, and are sealed again
/// into the same values.
#[test]
fn a_changed_bit_of_a_small_row_is_found() {
    let (counts, len) = term_counts("the cache keeps café keys; cache misses go to redb");
    let fresh = encode_fresh(counts.iter().map(|(t, tf)| (t.as_str(), *tf)), len);
    let posting = encode_posting(3, 17).to_vec();
    let stats = encode_stats(LexStats { docs: 12, total: 340, fresh: 4 }).to_vec();
    let decodes = |table: RowTable, b: &[u8]| match table {
        RowTable::Posting => decode_posting(b).is_some(),
        RowTable::Fresh => decode_fresh(b).is_some() && FreshTerms::new(b).is_some(),
        RowTable::Stats => decode_stats(b).is_some(),
    };
    for (table, row) in [(RowTable::Posting, &posting), (RowTable::Fresh, &fresh), (RowTable::Stats, &stats)]
    {
        assert!(decodes(table, row));
        assert_eq!(reseal_row(table, row), Ok(None), "{table:?} sealed already");
        for bit in 0..row.len() * 8 {
            let mut bad = row.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(!decodes(table, &bad), "{table:?}: bit {bit} went unnoticed");
        }
        // The version before: no checksum.
        let mut old = row[..row.len() - 4].to_vec();
        old[0] -= 1;
        assert!(decodes(table, &old), "{table:?} of the version before");
        assert_eq!(reseal_row(table, &old), Ok(Some(row.clone())), "{table:?} sealed again");
    }
    assert_eq!(decode_fresh(&fresh), Some((len, counts.iter().map(|(t, tf)| (t.as_str(), *tf)).collect())));
    assert_eq!(decode_posting(&posting), Some((3, 17)));
    assert_eq!(decode_stats(&stats), Some(LexStats { docs: 12, total: 340, fresh: 4 }));
    assert_eq!(reseal_row(RowTable::Posting, b"\x01\x00"), Err(()));
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

/// A full block fits one 32 KiB page with its key, even with the longest namespace and
/// terms: a block of 32 KiB would take a 64 KiB page, half of it empty (`fragmented_bytes`).
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
            let list: Vec<Posting> = (0..2000u32).map(|i| (i, 1, 10)).collect();
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
