//! Format 11: the lexical index holds stemmed terms. Every older layout of the index (format
//! 1 had none; formats 2 to 10 held unstemmed words, in one of several segment layouts) is
//! dropped and the text of every stored revision indexed again.

use redb::WriteTransaction;

use crate::error::Error;
use crate::tables;
use crate::time::Timestamp;

/// Drop the lexical index and index every stored revision's text again.
pub(super) fn reindex(txn: &WriteTransaction) -> Result<(), Error> {
    use redb::ReadableTable;
    // Index the text of every stored revision again with this build's analysis (format 1
    // had no lexical index; formats 2 to 10 indexed unstemmed words): the old index and
    // its segments, of any layout, go first.
    drop_lexical_index(txn)?;
    let revisions = txn.open_table(tables::REVISIONS)?;
    let mut lexical = crate::lexical::LexicalWriter::open(txn)?;
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
    Ok(())
}

/// Drop every table of the lexical index, of any format's layout, and create the current ones
/// empty.
fn drop_lexical_index(txn: &WriteTransaction) -> Result<(), Error> {
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
    drop(txn, tables::SEGMENT_TEXTS)?;
    drop(txn, tables::SEGMENTS_V9)?;
    drop(txn, tables::SEGMENTS_V8)?;
    drop(txn, tables::TEXTS)?;
    drop(txn, tables::FRESH)?;
    drop(txn, tables::LEXSTATS)?;
    tables::create_all(txn)
}
