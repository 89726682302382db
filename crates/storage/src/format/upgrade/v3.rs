//! Format 3: the commit log moves out of the meta table into `mnemon.log`.

use redb::WriteTransaction;

use crate::error::Error;
use crate::{tables, write};

/// Move a format-1 or -2 file's commit log entries from the meta table to `mnemon.log`.
pub(super) fn move_commit_log(txn: &WriteTransaction) -> Result<(), Error> {
    let mut meta = txn.open_table(tables::META)?;
    let mut log = txn.open_table(tables::LOG)?;
    for (seq, bytes) in write::format2_log(&meta, 0)? {
        log.insert(seq, bytes.as_slice())?;
        meta.remove(write::format2_commit_key(seq).as_str())?;
    }
    Ok(())
}
