//! Upgrades of files of older formats, in place, in one transaction when a writer opens them
//! (see `format.rs` for what each version changed).

use redb::Database;

use crate::error::Error;
use crate::time::Timestamp;
use crate::{format, tables, write};

/// Upgrade a file of an older format in one transaction: format 1 lacks the vector tables (created
/// empty with the other missing tables), formats before 5 `mnemon.ended`, formats 5 and 6 file
/// its rows by their start, and every format before 11 has no lexical index or one of unstemmed
/// words, of any of several layouts: it is dropped and every revision's text indexed again;
/// format 11's segment blocks are written again with their bounds; values of a format before
/// 13 are sealed with their checksums.
pub(crate) fn upgrade_tables(db: &Database, version: u32) -> Result<(), Error> {
    use redb::ReadableTable;
    if version >= format::FORMAT_VERSION {
        return Ok(());
    }
    let txn = db.begin_write()?;
    // Another process sharing the file may have upgraded it meanwhile.
    let found = format::read_version(&txn.open_table(tables::META)?)?;
    if found >= format::FORMAT_VERSION {
        txn.abort()?;
        return Ok(());
    }
    tables::create_all(&txn)?;
    {
        // Format 3 moved the commit log out of the meta table.
        let mut meta = txn.open_table(tables::META)?;
        let mut log = txn.open_table(tables::LOG)?;
        for (seq, bytes) in write::format2_log(&meta, 0)? {
            log.insert(seq, bytes.as_slice())?;
            meta.remove(write::format2_commit_key(seq).as_str())?;
        }
    }
    if found < crate::analyzer::STEMMED_FORMAT {
        // Index the text of every stored revision again with this build's analysis (format 1
        // had no lexical index; formats 2 to 10 indexed unstemmed words): the old index and
        // its segments, of any layout, go first.
        drop_lexical_index(&txn)?;
        let revisions = txn.open_table(tables::REVISIONS)?;
        let mut lexical = crate::lexical::LexicalWriter::open(&txn)?;
        let mut prev: Option<crate::record::Record> = None;
        for r in revisions.iter()? {
            let (k, v) = r?;
            let (ns, id, rec, rev) = k.value();
            let namespace = crate::id::Namespace::new(ns).map_err(|e| Error::Inconsistent {
                namespace: ns.to_string(),
                detail: format!("stored revision under a bad namespace: {e}"),
            })?;
            let record = crate::record::decode_revision(
                &namespace,
                crate::id::RecordId::from_u128(id),
                rev,
                Timestamp::from_micros(rec),
                v.value(),
            )
            .map_err(|e| Error::Codec { table: tables::names::REVISIONS, source: e })?;
            let same = prev.as_ref().filter(|p| p.namespace == record.namespace && p.id == record.id);
            lexical.write(same, &record)?;
            prev = Some(record);
        }
        lexical.flush()?;
    } else if found < format::BOUNDED_BLOCKS {
        crate::lexical::bound_blocks(&txn)?;
    }
    if found < 5 {
        // Format 5 keys the current rows by bytes, and files the records whose visibility
        // has an end (`ended.rs`).
        move_current_rows(&txn)?;
        crate::ended::fill(&txn)?;
    } else if found < format::ENDED_BY_END {
        // Format 7 files those records by their end instead of their start: fill the table
        // again from the revisions (streamed, where re-keying in place would hold every row).
        txn.delete_table(tables::ENDED)?;
        txn.open_table(tables::ENDED)?;
        crate::ended::fill(&txn)?;
    }
    if found < format::SEALED_VALUES {
        // Format 13 seals revisions and current rows with a checksum (last: the steps above
        // may have written rows of either version).
        seal_values(&txn)?;
    }
    {
        let mut meta = txn.open_table(tables::META)?;
        format::upgrade(&mut meta)?;
    }
    txn.commit()?;
    Ok(())
}

/// Values rewritten per read of a table while sealing: the rewrite cannot write into a table
/// it is reading, so it reads a batch, writes it, and reads on after its last key.
const SEAL_BATCH: usize = 4096;

/// A key of `mnemon.revisions`, owned.
type RevisionKey = (String, u128, i64, u32);

/// Seal every version-1 revision (decoded first: damage is refused, not sealed in), current
/// row and ended row (format 13).
fn seal_values(txn: &redb::WriteTransaction) -> Result<(), Error> {
    use redb::ReadableTable;
    use std::ops::Bound;
    let mut revisions = txn.open_table(tables::REVISIONS)?;
    let mut after: Option<RevisionKey> = None;
    loop {
        let mut batch: Vec<(RevisionKey, Vec<u8>)> = Vec::new();
        let mut last = None;
        {
            let start = match &after {
                Some((ns, id, rec, rev)) => Bound::Excluded((ns.as_str(), *id, *rec, *rev)),
                None => Bound::Unbounded,
            };
            for r in revisions.range::<(&str, u128, i64, u32)>((start, Bound::Unbounded))?.take(SEAL_BATCH) {
                let (k, v) = r?;
                let (ns, id, rec, rev) = k.value();
                last = Some((ns.to_string(), id, rec, rev));
                let key = crate::record::revision_key(
                    crate::id::RecordId::from_u128(id),
                    Timestamp::from_micros(rec),
                    rev,
                );
                let Some(sealed) = crate::record::sealed_revision(v.value(), ns, &key) else { continue };
                let namespace = crate::id::Namespace::new(ns).map_err(|e| Error::Inconsistent {
                    namespace: ns.to_string(),
                    detail: format!("stored revision under a bad namespace: {e}"),
                })?;
                crate::record::decode_revision(
                    &namespace,
                    crate::id::RecordId::from_u128(id),
                    rev,
                    Timestamp::from_micros(rec),
                    &sealed,
                )
                .map_err(|e| Error::Codec { table: tables::names::REVISIONS, source: e })?;
                batch.push(((ns.to_string(), id, rec, rev), sealed));
            }
        }
        for ((ns, id, rec, rev), sealed) in &batch {
            revisions.insert((ns.as_str(), *id, *rec, *rev), sealed.as_slice())?;
        }
        match last {
            Some(l) => after = Some(l),
            None => break,
        }
    }
    // The rows of every namespace (their checksums cover their records' ids and namespaces).
    let names: Vec<String> = {
        let t = txn.open_table(tables::NAMESPACES)?;
        t.iter()?.map(|r| r.map(|(k, _)| k.value().to_string())).collect::<Result<_, _>>()?
    };
    for ns in &names {
        seal_rows(txn, tables::CURRENT, ns, 0, |k| tables::parse_current_key(k, ns.len()).map(|(_, id)| id))?;
        // An ended row is the kind's code, then a current row.
        seal_rows(txn, tables::ENDED, ns, 1, |k| crate::ended::parse_key(k, ns.len()).map(|(_, _, id)| id))?;
    }
    Ok(())
}

/// Seal the version-1 current rows that the values of byte-keyed table `def` in namespace `ns`
/// hold after `skip` bytes, each of the record whose id `id_of` reads from its key.
fn seal_rows(
    txn: &redb::WriteTransaction,
    def: redb::TableDefinition<&[u8], &[u8]>,
    ns: &str,
    skip: usize,
    id_of: impl Fn(&[u8]) -> Option<u128>,
) -> Result<(), Error> {
    use redb::ReadableTable;
    use std::ops::Bound;
    let mut table = txn.open_table(def)?;
    let (lo, hi) = tables::namespace_range(ns);
    let mut after: Option<Vec<u8>> = None;
    loop {
        let mut batch: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut last = None;
        {
            let start = match &after {
                Some(k) => Bound::Excluded(k.as_slice()),
                None => Bound::Included(lo.as_slice()),
            };
            for r in table.range::<&[u8]>((start, Bound::Excluded(hi.as_slice())))?.take(SEAL_BATCH) {
                let (k, v) = r?;
                last = Some(k.value().to_vec());
                let id = id_of(k.value()).ok_or_else(|| Error::Inconsistent {
                    namespace: ns.to_string(),
                    detail: format!("malformed key in {}", redb::TableHandle::name(&def)),
                })?;
                let (head, row) = v.value().split_at(skip.min(v.value().len()));
                if let Some(sealed) =
                    crate::record::sealed_current_row(row, ns, crate::id::RecordId::from_u128(id))
                {
                    batch.push((k.value().to_vec(), [head, sealed.as_slice()].concat()));
                }
            }
        }
        for (k, v) in &batch {
            table.insert(k.as_slice(), v.as_slice())?;
        }
        match last {
            Some(l) => after = Some(l),
            None => return Ok(()),
        }
    }
}

/// Drop every table of the lexical index, of any format's layout, and create the current ones
/// empty.
fn drop_lexical_index(txn: &redb::WriteTransaction) -> Result<(), Error> {
    fn drop<K: redb::Key + 'static, V: redb::Value + 'static>(
        txn: &redb::WriteTransaction,
        def: redb::TableDefinition<'_, K, V>,
    ) -> Result<(), Error> {
        match txn.delete_table(def) {
            Ok(_) | Err(redb::TableError::TableDoesNotExist(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
    drop(txn, tables::POSTINGS)?;
    drop(txn, tables::SEGMENTS)?;
    drop(txn, tables::SEGMENTS_V9)?;
    drop(txn, tables::SEGMENTS_V8)?;
    drop(txn, tables::TEXTS)?;
    drop(txn, tables::FRESH)?;
    drop(txn, tables::LEXSTATS)?;
    tables::create_all(txn)
}

/// Move format 4's tuple-keyed current rows to format 5's byte-keyed table, then drop the
/// old table.
fn move_current_rows(txn: &redb::WriteTransaction) -> Result<(), Error> {
    use redb::ReadableTable;
    {
        let old = match txn.open_table(tables::CURRENT_V4) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let mut new = txn.open_table(tables::CURRENT)?;
        for r in old.iter()? {
            let (k, v) = r?;
            let (ns, kind, id) = k.value();
            new.insert(tables::current_key(ns, kind, id).as_slice(), v.value())?;
        }
    }
    txn.delete_table(tables::CURRENT_V4)?;
    Ok(())
}
