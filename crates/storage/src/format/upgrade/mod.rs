//! Upgrades of files of older formats, in place, in one transaction when a writer opens them:
//! one module per format that changed what is stored, each a step of [`STEPS`] (see
//! [`crate::format`] for what each version changed). Versions that only added tables (2, 8)
//! are upgraded by creating them; those whose old data stay readable as they are (4, 6) by
//! recording the new version; the segment layouts of 9 and 10 are replaced by format 11's
//! re-indexing, and the bounds of 12 come with the numbering of 15.

use redb::{Database, WriteTransaction};

use super::FormatVersion;
use crate::error::Error;
use crate::{format, tables};

mod reseal;
mod v11;
mod v13;
mod v14;
mod v15;
mod v17;
mod v18;
mod v3;
mod v5;
mod v7;

/// One step of an upgrade: a file of a version in `from..to` needs `run` (older files got what
/// it makes from an earlier step).
struct Step {
    from: FormatVersion,
    to: FormatVersion,
    run: fn(&WriteTransaction) -> Result<(), Error>,
}

/// Every step, oldest first: a file is upgraded by the steps whose range holds its version, in
/// this order, then the sealing of format 13 (the steps before it may write values of either
/// version), then the counting of format 14 (of the rows the others leave).
const STEPS: [Step; 9] = [
    Step { from: FormatVersion::First, to: FormatVersion::FreshTexts, run: v3::move_commit_log },
    Step { from: FormatVersion::First, to: FormatVersion::EndedTable, run: v5::current_rows_and_ended },
    Step { from: FormatVersion::EndedTable, to: FormatVersion::EndedByEnd, run: v7::ended_by_end },
    Step { from: FormatVersion::First, to: FormatVersion::Stemmed, run: v11::reindex },
    Step { from: FormatVersion::Stemmed, to: FormatVersion::NumberedTexts, run: v15::number_segments },
    Step { from: FormatVersion::First, to: FormatVersion::SealedIndex, run: v17::seal_index },
    Step { from: FormatVersion::First, to: FormatVersion::SealedRows, run: v18::seal_rows },
    Step { from: FormatVersion::First, to: FormatVersion::SealedValues, run: v13::seal_values },
    Step { from: FormatVersion::First, to: FormatVersion::Counted, run: v14::count_rows },
];

/// Upgrade a file of format `version` (or whatever another process sharing the file left it
/// at) to this build's, in one transaction: the tables added since are created, then the
/// steps that apply run, then the new version is recorded.
pub(crate) fn upgrade_tables(db: &Database, version: u32) -> Result<(), Error> {
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
    for step in STEPS.iter().filter(|s| (s.from.number()..s.to.number()).contains(&found)) {
        (step.run)(&txn)?;
    }
    {
        let mut meta = txn.open_table(tables::META)?;
        format::upgrade(&mut meta)?;
    }
    txn.commit()?;
    Ok(())
}
