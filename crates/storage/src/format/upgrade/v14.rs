//! Format 14: how many current rows of each kind, and revisions, each namespace holds.

use redb::WriteTransaction;

use crate::error::Error;
use crate::tables;

/// Count every namespace's current rows (by kind) and revisions into `mnemon.counts`.
pub(super) fn count_rows(txn: &WriteTransaction) -> Result<(), Error> {
    let counted = crate::counts::count(txn)?;
    let mut counts = txn.open_table(tables::COUNTS)?;
    counts.retain(|_, _| false)?;
    for ((ns, what), n) in &counted {
        counts.insert((ns.as_str(), *what), *n)?;
    }
    Ok(())
}
