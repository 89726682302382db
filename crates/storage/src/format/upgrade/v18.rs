//! Format 18: the lexical index's small rows (posting-list rows and text rows, fresh rows, a
//! namespace's totals) end with a CRC-32 of their bytes, as its large values have since format
//! 17, so that a changed byte inside one is found when it is read.

use redb::WriteTransaction;

use super::reseal::reseal_table;
use crate::error::Error;
use crate::lexical::{RowTable, reseal_row};
use crate::tables;

/// Seal every row of `mnemon.postings`, `mnemon.texts`, `mnemon.fresh` and `mnemon.lexstats`
/// of the version before. A row that does not decode is refused (the upgrade fails, naming
/// its table): damage is not sealed in.
pub(super) fn seal_rows(txn: &WriteTransaction) -> Result<(), Error> {
    reseal_table(txn, tables::POSTINGS, |(ns, ..), v| sealed(RowTable::Posting, ns, "posting-list row", v))?;
    reseal_table(txn, tables::TEXTS, |(ns, ..), v| sealed(RowTable::Posting, ns, "text row", v))?;
    reseal_table(txn, tables::FRESH, |(ns, ..), v| sealed(RowTable::Fresh, ns, "fresh text row", v))?;
    reseal_table(txn, tables::LEXSTATS, |ns, v| sealed(RowTable::Stats, ns, "namespace's totals", v))
}

fn sealed(table: RowTable, ns: &str, what: &str, v: &[u8]) -> Result<Option<Vec<u8>>, Error> {
    reseal_row(table, v).map_err(|()| Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!(
            "a {what} of the lexical index does not decode: the file is damaged (restore it from a backup)"
        ),
    })
}
