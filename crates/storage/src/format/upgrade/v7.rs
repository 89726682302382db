//! Format 7: `mnemon.ended` files each row by the end of its visible interval instead of its
//! start.

use redb::WriteTransaction;

use crate::error::Error;
use crate::tables;

/// Fill `mnemon.ended` again from the revisions (streamed, where re-keying in place would
/// hold every row).
pub(super) fn ended_by_end(txn: &WriteTransaction) -> Result<(), Error> {
    txn.delete_table(tables::ENDED)?;
    txn.open_table(tables::ENDED)?;
    crate::ended::fill(txn)
}
