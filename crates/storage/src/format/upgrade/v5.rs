//! Format 5: current rows keyed by bytes, and `mnemon.ended` for the records whose
//! visibility has an end (`ended.rs`).

use redb::WriteTransaction;

use crate::error::Error;
use crate::tables;

/// Key the current rows by bytes and fill `mnemon.ended` from the revisions.
pub(super) fn current_rows_and_ended(txn: &WriteTransaction) -> Result<(), Error> {
    move_current_rows(txn)?;
    crate::ended::fill(txn)
}

/// Move format 4's tuple-keyed current rows to format 5's byte-keyed table, then drop the
/// old table.
fn move_current_rows(txn: &WriteTransaction) -> Result<(), Error> {
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
