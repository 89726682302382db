//! File format identity and the meta table.
//!
//! A mnemon database is a redb file whose `mnemon.meta` table holds:
//!
//! | key              | value                                                         |
//! |------------------|---------------------------------------------------------------|
//! | `magic`          | the 8 bytes [`MAGIC`], raw                                    |
//! | `format_version` | `u32` little-endian, raw (readable by any future build)       |
//! | `created_by`     | `[1][bincode string]`: the mnemon version that created it     |
//! | `created_at`     | `[1][bincode i64]`: creation time, microseconds               |
//! | `last_tx`        | `[1][bincode i64]`: the latest transaction time of a revision |
//! | `commit_seq`     | `[1][bincode u64]`: the number of commits                     |
//! | `swept_through`  | `[1][bincode i64]`: `CURRENT` holds every row visible after it |
//!
//! ## Versions
//! - 1: the first format (mnemon 0.1).
//! - 2: adds the vector, vector-space, auxiliary and lexical tables.
//! - 3: adds `mnemon.fresh` (texts not yet merged into the posting lists) and a fresh count
//!   in `mnemon.lexstats`; a format-2 file is upgraded by creating the empty table.
//! - 4: vectors that are mostly zeros are stored sparsely (see `vector.rs`); older files are
//!   upgraded by writing the new version (their dense vectors stay readable as they are).
//! - 5: adds `mnemon.ended` (the latest revision of every record whose visibility has an end,
//!   filed by the length of its visible interval; see `ended.rs`); older files are upgraded by
//!   filling it from the revisions.
//! - 6: a text not yet merged into the posting lists has its row in `mnemon.fresh` only, no
//!   longer also one in `mnemon.texts` (see `lexical/`). A format-5 file is a valid format-6
//!   file (its extra rows agree with its fresh ones), so the upgrade only records the version;
//!   the version keeps builds that expect every text in `mnemon.texts` from misreading files
//!   written since.
//! - 7: `mnemon.ended` files each row by the end of its visible interval instead of its start
//!   (`(namespace, level, until, id)`), so a listing not far in the past reads little more than
//!   the rows it returns. Older files are upgraded by filling the table again; a format-5 or
//!   -6 file opened read-only is listed through the timeline instead.
//! - 8: adds `mnemon.segments`, the postings of merged texts gathered in segments before they
//!   move into the posting lists (see `lexical/`); older files get it empty.
//! - 9: a segment holds its postings in one row per term (`mnemon.segment_terms`) instead of
//!   one row per posting: a merge writes and a move reads a quarter of the rows or fewer. A
//!   format-8 file is upgraded by moving its segments' postings there and dropping
//!   `mnemon.segments`; opened read-only, its segments are read where they are.
//! - 10: segments hold blocks of many terms (`mnemon.segment_blocks`, about 16 KiB each)
//!   instead of one row per term, and are tiered by level: a segment's number holds its level,
//!   and a level's segments are merged into one of the next level instead of moving into the
//!   posting lists. A format-8 or -9 file is upgraded by writing its segments' postings as
//!   blocks (level 0, same numbers) and dropping the old table; opened read-only, its
//!   segments are read where they are.
//! - 11: the lexical index holds stemmed terms (UAX #29 words, bigrams of scripts written
//!   without spaces, NLTK's English stopwords left out, Snowball English stems; see
//!   mnemon-text's `analyzer`) instead of unstemmed words. Older files are upgraded by dropping the
//!   lexical index and indexing every revision's text again; opened read-only, their queries
//!   are analysed the old way.
//! - 12: a segment block stores, for every 64 postings of a term, their greatest term
//!   frequency and least text length (block version 2), which bound their BM25 weights: a
//!   search bounds a term without reading its postings. A format-11 file is upgraded by
//!   writing its blocks again with their bounds (since format 15, numbered at once); opened
//!   read-only, its blocks are read as they are.
//! - 13: stored revisions and current rows (of `mnemon.revisions`, `mnemon.live` and
//!   `mnemon.ended`) end with a CRC-32 of their bytes (revision and row version 2), checked
//!   on every read: a damaged value is an error naming its table, never a wrong answer. A
//!   format-12 file is upgraded by sealing every such value (each revision decoded first);
//!   opened read-only, its unsealed values are read as they are.
//! - 14: `mnemon.counts` holds how many current rows of each kind, and how many revisions,
//!   each namespace has, kept by every commit; a listing of a whole namespace's current rows
//!   and an export of a whole namespace compare what they read with them, so that damage to
//!   redb's branch pages that hides rows from a read is an error, not a short answer. A
//!   format-13 file is upgraded by counting; opened read-only, it is read unchecked.
//! - 15: a segment's postings name their texts by number (block version 3: a 4-byte number,
//!   then tf and text length, in two columns, 12 bytes where a posting took 28), the numbers
//!   following the texts' keys, which each segment keeps in order in `mnemon.segment_texts`
//!   (see `lexical/numbers.rs`): a search compares 4-byte numbers and reads fewer blocks. A
//!   format-11 to -14 file is upgraded by numbering each segment's texts and writing its
//!   blocks again, numbered (and with the bounds of format 12); opened read-only, its keyed
//!   blocks are read as they are.
//! - 16: a commit log entry (`mnemon.log`, entry version 2) names what each change was: the
//!   record's kind, the operation (the revision's, a forgetting, a vector), the revision and
//!   its transaction time, which the change feed reads (`Snapshot::commits_after`). Older
//!   entries stay readable as they are (their changes name only the record), so the upgrade
//!   records the version; the version keeps older builds, which cannot read the new entries,
//!   from opening files written since. Since 16 a forgetting also moves the latest
//!   transaction time (`last_tx`), so that the log's times never go back.
//! - 17: the lexical index's large values (segment blocks, version 4; the parts of a
//!   segment's text numbers, version 2) and stored vectors (versions 3 and 4) end with a CRC-32
//!   of their bytes, checked when they are read: damage inside one of them (each spans several pages) is an error and a damage
//!   mark, not other postings and a different ranking. The upgrade seals every value of the
//!   versions before (each parsed first: damage is refused, not sealed in); a format-16 file
//!   opened read-only is read as it is.
//! - 18: the lexical index's small rows end with a CRC-32 of their bytes too: posting-list
//!   and text rows (version 2, `[2][tf u32][doc length u32][crc u32]`), fresh rows (version
//!   2) and a namespace's totals (version 3), checked when they are read, so that a changed
//!   byte inside one (under a page each, where format 17's seals cover values spanning pages)
//!   is an error and a damage mark, not a different ranking. A malformed posting row or
//!   namespace total, which reads used to skip or count as zeros, is an error too. The upgrade
//!   seals every row of the versions before (each decoded first); a format-17 file opened
//!   read-only is read as it is.
//!
//! A file with a newer version is refused with [`OpenError::NewerFormat`]; one older than
//! [`OLDEST_SUPPORTED_FORMAT_VERSION`] with [`OpenError::TooOld`]; anything between is upgraded
//! in place on open.

use std::path::Path;

use redb::{ReadableTable, Table};

use crate::analyzer::Analyzer;
use crate::codec::{self};
use crate::error::{CodecError, Error, OpenError};
use crate::tables::names;
use crate::time::Timestamp;

pub(crate) mod upgrade;

/// The magic value stored under `magic`.
pub const MAGIC: [u8; 8] = *b"mnemon\x00\x01";
/// The versions of the file format, by what each one changed (the list above says how).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u32)]
pub enum FormatVersion {
    /// The first format.
    First = 1,
    /// The vector, vector-space, auxiliary and lexical tables.
    VectorTables = 2,
    /// `mnemon.fresh`, and the commit log in its own table.
    FreshTexts = 3,
    /// Sparse vectors.
    SparseVectors = 4,
    /// `mnemon.ended`, and current rows keyed by bytes.
    EndedTable = 5,
    /// Fresh texts in `mnemon.fresh` only.
    FreshOnly = 6,
    /// `mnemon.ended` keyed by the end of each interval.
    EndedByEnd = 7,
    /// Lexical segments.
    Segments = 8,
    /// A segment's postings in one row per term.
    SegmentTerms = 9,
    /// Segments of blocks, tiered by level.
    SegmentBlocks = 10,
    /// Stemmed terms.
    Stemmed = 11,
    /// Segment blocks bounding their pieces' BM25 weights.
    BoundedBlocks = 12,
    /// Revisions and current rows sealed by a checksum.
    SealedValues = 13,
    /// Rows counted per namespace.
    Counted = 14,
    /// Segment postings naming their texts by number.
    NumberedTexts = 15,
    /// Commit log entries naming what each change was.
    ChangeLog = 16,
    /// The lexical index's segment blocks and text-number parts, and vectors, sealed by a
    /// checksum.
    SealedIndex = 17,
    /// The lexical index's small rows (postings, texts, fresh texts, totals) sealed by a
    /// checksum.
    SealedRows = 18,
}

impl FormatVersion {
    /// The version this build writes.
    pub const CURRENT: FormatVersion = FormatVersion::SealedRows;
    /// The oldest version this build opens (upgrading it when a writer opens it).
    pub const OLDEST: FormatVersion = FormatVersion::First;

    /// Its number, as the meta table stores it.
    pub const fn number(self) -> u32 {
        self as u32
    }
}

/// The analysis of the lexical index of a file of format `format`: [`Analyzer::Stemmed`] from
/// format 11 ([`FormatVersion::Stemmed`]), [`Analyzer::Words`] before.
pub fn analyzer_for(format: u32) -> Analyzer {
    if format >= FormatVersion::Stemmed.number() { Analyzer::Stemmed } else { Analyzer::Words }
}

/// The format version this build writes ([`FormatVersion::CURRENT`]).
pub const FORMAT_VERSION: u32 = FormatVersion::CURRENT.number();
/// The oldest format version this build can open, upgrading it ([`FormatVersion::OLDEST`]).
pub const OLDEST_SUPPORTED_FORMAT_VERSION: u32 = FormatVersion::OLDEST.number();
/// The first bytes of every redb file.
pub(crate) const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

const META_VALUE_VERSION: u8 = 1;

pub(crate) mod keys {
    pub(crate) const MAGIC: &str = "magic";
    pub(crate) const FORMAT_VERSION: &str = "format_version";
    pub(crate) const CREATED_BY: &str = "created_by";
    pub(crate) const CREATED_AT: &str = "created_at";
    pub(crate) const LAST_TX: &str = "last_tx";
    pub(crate) const COMMIT_SEQ: &str = "commit_seq";
    pub(crate) const SWEPT_THROUGH: &str = "swept_through";
}

/// The clocks and counters kept in the meta table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaState {
    /// The latest transaction time at which a revision was recorded (a commit that records
    /// none, such as an auxiliary row's, leaves it as it was).
    pub last_tx: Timestamp,
    /// The number of commits.
    pub commit_seq: u64,
    /// Every record visible after this valid time, as known now, has a `CURRENT` row.
    pub swept_through: Timestamp,
}

fn meta_err(e: CodecError) -> Error {
    Error::Codec { table: names::META, source: e }
}

pub(crate) fn put_scalar<T: serde::Serialize>(
    table: &mut Table<&str, &[u8]>,
    key: &str,
    value: &T,
) -> Result<(), Error> {
    let bytes = codec::encode_versioned(META_VALUE_VERSION, value).map_err(meta_err)?;
    table.insert(key, bytes.as_slice())?;
    Ok(())
}

pub(crate) fn get_scalar<T: serde::de::DeserializeOwned>(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &'static str,
) -> Result<Option<T>, Error> {
    match table.get(key)? {
        None => Ok(None),
        Some(v) => codec::decode_versioned(key, META_VALUE_VERSION, v.value()).map(Some).map_err(meta_err),
    }
}

pub(crate) fn read_state(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<MetaState, Error> {
    Ok(MetaState {
        last_tx: Timestamp::from_micros(get_scalar::<i64>(table, keys::LAST_TX)?.unwrap_or(i64::MIN)),
        commit_seq: get_scalar::<u64>(table, keys::COMMIT_SEQ)?.unwrap_or(0),
        swept_through: Timestamp::from_micros(
            get_scalar::<i64>(table, keys::SWEPT_THROUGH)?.unwrap_or(i64::MIN),
        ),
    })
}

pub(crate) fn write_state(table: &mut Table<&str, &[u8]>, s: &MetaState) -> Result<(), Error> {
    put_scalar(table, keys::LAST_TX, &s.last_tx.as_micros())?;
    put_scalar(table, keys::COMMIT_SEQ, &s.commit_seq)?;
    put_scalar(table, keys::SWEPT_THROUGH, &s.swept_through.as_micros())
}

/// Write the identity of a new database.
pub(crate) fn init(table: &mut Table<&str, &[u8]>, now: Timestamp) -> Result<(), Error> {
    table.insert(keys::MAGIC, MAGIC.as_slice())?;
    table.insert(keys::FORMAT_VERSION, FORMAT_VERSION.to_le_bytes().as_slice())?;
    put_scalar(table, keys::CREATED_BY, &env!("CARGO_PKG_VERSION").to_string())?;
    put_scalar(table, keys::CREATED_AT, &now.as_micros())?;
    write_state(table, &MetaState { last_tx: Timestamp::MIN, commit_seq: 0, swept_through: Timestamp::MIN })
}

/// Bring a file of an older supported format up to [`FORMAT_VERSION`] (inside the caller's
/// write transaction): the caller creates the tables added since and builds what they hold,
/// and this records the new version.
pub(crate) fn upgrade(table: &mut Table<&str, &[u8]>) -> Result<(), Error> {
    table.insert(keys::FORMAT_VERSION, FORMAT_VERSION.to_le_bytes().as_slice())?;
    Ok(())
}

/// The format version recorded in the meta table (0 when missing).
pub(crate) fn read_version(table: &impl ReadableTable<&'static str, &'static [u8]>) -> Result<u32, Error> {
    Ok(match table.get(keys::FORMAT_VERSION)? {
        Some(v) => v.value().try_into().map(u32::from_le_bytes).unwrap_or(0),
        None => 0,
    })
}

/// Check that the meta table identifies a mnemon database this build can read.
pub(crate) fn check(
    path: &Path,
    table: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<u32, OpenError> {
    let not = |reason: &str| OpenError::NotMnemon { path: path.to_path_buf(), reason: reason.to_string() };
    let dberr =
        |e: redb::StorageError| OpenError::Database { path: path.to_path_buf(), source: Box::new(e.into()) };
    let magic =
        table.get(keys::MAGIC).map_err(dberr)?.ok_or_else(|| not("its metadata has no magic number"))?;
    if magic.value() != MAGIC.as_slice() {
        return Err(not("wrong magic number"));
    }
    let v = table.get(keys::FORMAT_VERSION).map_err(dberr)?.ok_or_else(|| not("no format version"))?;
    let bytes: [u8; 4] = v.value().try_into().map_err(|_| not("malformed format version"))?;
    let version = u32::from_le_bytes(bytes);
    if version > FORMAT_VERSION {
        return Err(OpenError::NewerFormat {
            path: path.to_path_buf(),
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    if version < OLDEST_SUPPORTED_FORMAT_VERSION {
        return Err(OpenError::TooOld {
            path: path.to_path_buf(),
            found: version,
            oldest: OLDEST_SUPPORTED_FORMAT_VERSION,
        });
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files from format 11 on hold stemmed terms; the files before, words (and are re-indexed
    /// when a writer opens them).
    #[test]
    fn the_analysis_follows_the_format() {
        assert_eq!(analyzer_for(10), Analyzer::Words);
        assert_eq!(analyzer_for(FormatVersion::Stemmed.number()), Analyzer::Stemmed);
        assert_eq!(analyzer_for(FORMAT_VERSION), Analyzer::Stemmed);
    }
}
