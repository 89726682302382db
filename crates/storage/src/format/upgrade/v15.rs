//! Format 15: segment postings name their texts by 32-bit numbers, each segment keeping the
//! keys of its texts in order (`mnemon.segment_texts`), instead of carrying the keys.

use redb::WriteTransaction;

use crate::error::Error;

/// Number a format-11 to -14 file's segments: their texts' keys written as lists, their
/// blocks (with or without bounds) written again, numbered and with bounds.
pub(super) fn number_segments(txn: &WriteTransaction) -> Result<(), Error> {
    crate::lexical::number_blocks(txn)
}
