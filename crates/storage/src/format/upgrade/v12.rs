//! Format 12: segment blocks store the bounds of every 64 postings (greatest term frequency,
//! least text length), so a search bounds a term without reading its postings.

use redb::WriteTransaction;

use crate::error::Error;

/// Write a format-11 file's segment blocks again with their bounds.
pub(super) fn bound_blocks(txn: &WriteTransaction) -> Result<(), Error> {
    crate::lexical::bound_blocks(txn)
}
