//! Format 17: the lexical index's large values (segment blocks, about 32 KiB each, and the
//! parts of a segment's text numbers, about 16 KiB) and stored vectors end with a CRC-32 of
//! their bytes, so that damage inside one is found when it is read.

use redb::WriteTransaction;

use super::reseal::reseal_table;
use crate::error::Error;
use crate::tables;

/// Seal every version-3 segment block and version-1 text-number part, and every stored vector
/// of version 1 or 2. A value that does not decode is refused (the upgrade fails, naming it):
/// damage is not sealed in.
pub(super) fn seal_index(txn: &WriteTransaction) -> Result<(), Error> {
    reseal_table(txn, tables::SEGMENTS, |(ns, ..), v| {
        sealed(v, (crate::lexical::seal_block, crate::lexical::is_sealed_block), ns, "segment block")
    })?;
    reseal_table(txn, tables::SEGMENT_TEXTS, |(ns, ..), v| {
        sealed(v, (crate::lexical::seal_part, crate::lexical::is_sealed_part), ns, "text-number part")
    })?;
    reseal_table(txn, tables::VECTORS, |_, v| {
        crate::vector::seal_stored(v).map_err(|e| Error::Codec { table: tables::names::VECTORS, source: e })
    })
}

/// How a value is sealed, and how a sealed one is told.
type Sealing = (fn(&[u8]) -> Option<Vec<u8>>, fn(&[u8]) -> bool);

/// `bytes` sealed: `None` when it is sealed already; an error when it is neither sealed nor a
/// well-formed value of the version before.
fn sealed(bytes: &[u8], (seal, is_sealed): Sealing, ns: &str, what: &str) -> Result<Option<Vec<u8>>, Error> {
    if let Some(s) = seal(bytes) {
        return Ok(Some(s));
    }
    if is_sealed(bytes) {
        return Ok(None);
    }
    Err(Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!(
            "a {what} of the lexical index does not decode: the file is damaged (restore it from a backup)"
        ),
    })
}
