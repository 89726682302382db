//! Errors of the storage engine.
//!
//! [`InputError`] is a caller mistake (bad id, bad time, malformed body): the command line maps
//! it to a usage error. Everything else in [`Error`] is a runtime error: a record that does not
//! exist or is in the wrong state, a file that cannot be opened, an I/O failure.

use std::path::PathBuf;

use crate::id::{IdError, Namespace, RecordId};
use crate::kind::{Kind, UnknownKind};
use crate::time::Timestamp;

pub use crate::time::TimeError;

/// A caller mistake: nothing was read or written because the input itself is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// A bad record id or namespace name.
    #[error(transparent)]
    Id(#[from] IdError),
    /// Not one of the kinds.
    #[error(transparent)]
    UnknownKind(#[from] UnknownKind),
    /// The body does not fit the kind.
    #[error("invalid {kind} body: {reason}")]
    BadBody {
        /// The kind.
        kind: Kind,
        /// The parser's complaint.
        reason: String,
    },
    /// A required field is empty.
    #[error("a {kind} needs a non-empty `{field}`")]
    MissingField {
        /// The kind.
        kind: Kind,
        /// The field.
        field: &'static str,
    },
    /// A bad time.
    #[error(transparent)]
    Time(#[from] TimeError),
    /// An empty or inverted valid interval.
    #[error("invalid valid-time interval: valid_until {until} must be after valid_from {from}")]
    BadInterval {
        /// Start.
        from: Timestamp,
        /// End.
        until: Timestamp,
    },
    /// Importance outside 1..=5.
    #[error("invalid importance {value}: expected 1 to 5")]
    BadImportance {
        /// What was given.
        value: i64,
    },
    /// Confidence outside 0..=1 or not finite.
    #[error("invalid confidence {value}: expected a number from 0 to 1")]
    BadConfidence {
        /// What was given.
        value: f64,
    },
    /// An empty tag or one with control characters.
    #[error("invalid tag {tag:?}: tags are non-empty and have no control characters")]
    BadTag {
        /// What was given.
        tag: String,
    },
    /// A merge of a record into itself.
    #[error("cannot merge record {id} into itself")]
    SelfMerge {
        /// The record.
        id: RecordId,
    },
    /// A revision or supersession that would change the kind of a record.
    #[error("kind mismatch: record {id} is a {expected}, not a {got}")]
    KindMismatch {
        /// The record.
        id: RecordId,
        /// Its kind.
        expected: Kind,
        /// The kind given.
        got: Kind,
    },
    /// A vector that cannot be stored (empty, NaN or infinite components, the zero vector).
    #[error("invalid vector: {reason}")]
    BadVector {
        /// Why it is refused.
        reason: String,
    },
    /// A vector whose dimension differs from its space's.
    #[error("dimension mismatch in vector space {space:?}: expected {expected}, got {got}")]
    DimensionMismatch {
        /// The vector space.
        space: String,
        /// Its dimension.
        expected: u32,
        /// The vector's.
        got: usize,
    },
    /// A vector-space name that is not allowed.
    #[error("invalid vector space name {name:?}: {reason}")]
    BadSpace {
        /// What was given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// An auxiliary key outside the reserved prefixes, or empty.
    #[error("invalid auxiliary key {key:?}: {reason}")]
    BadAuxKey {
        /// What was given.
        key: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A time that callers may not use (before year 0 or after 9999).
    #[error("time {time} is out of range (years 0000 to 9999)")]
    TimeOutOfRange {
        /// The time.
        time: Timestamp,
    },
    /// Anything else about the input.
    #[error("{0}")]
    Invalid(String),
}

/// Why a database file could not be opened. Nothing is written to a file that fails to open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The file does not exist (and creating it was not asked for).
    #[error("no mnemon database at {path} (create one with `mnemon init`)")]
    Missing {
        /// The path.
        path: PathBuf,
    },
    /// The file exists but is not a mnemon database.
    #[error("{path} is not a mnemon database: {reason}")]
    NotMnemon {
        /// The path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The file is a mnemon database, but damaged: cut short, or with pages redb finds
    /// inconsistent. Nothing is written to it.
    #[error("{path} is damaged: {reason}; restore it from a copy or an export (`mnemon export`)")]
    Damaged {
        /// The path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The file was written by a newer mnemon.
    #[error(
        "{path} has format version {found}, newer than this mnemon supports ({supported}): upgrade mnemon"
    )]
    NewerFormat {
        /// The path.
        path: PathBuf,
        /// The file's version.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The file is older than this build can read or upgrade.
    #[error("{path} has format version {found}, older than the oldest this mnemon can upgrade ({oldest})")]
    TooOld {
        /// The path.
        path: PathBuf,
        /// The file's version.
        found: u32,
        /// The oldest version this build upgrades.
        oldest: u32,
    },
    /// Another process holds the database.
    #[error(
        "{path} is in use by another process that opened it exclusively (or this one did, and another shares it)"
    )]
    InUse {
        /// The path.
        path: PathBuf,
    },
    /// An operation that needs the file to itself (compaction, the integrity check) found it
    /// open in another handle or process.
    #[error(
        "{path} is open elsewhere: {operation} needs the file to itself (close the other mnemon processes)"
    )]
    NeedsExclusive {
        /// The path.
        path: PathBuf,
        /// What needed it.
        operation: &'static str,
    },
    /// The file or its folder could not be accessed or created.
    #[error("cannot open {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// redb refused to open the file.
    #[error("cannot open {path}: {source}")]
    Database {
        /// The path.
        path: PathBuf,
        /// redb's error.
        source: Box<redb::Error>,
    },
}

/// A stored value that could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// Encoding failed (only possible for values serde cannot express).
    #[error("cannot encode value: {0}")]
    Encode(String),
    /// Bytes that do not decode as the expected value.
    #[error("cannot decode {what}: {reason}")]
    Decode {
        /// What was being decoded.
        what: &'static str,
        /// Why it failed.
        reason: String,
    },
    /// A value whose checksum does not match its bytes: the file was damaged under it.
    #[error("the stored {what} fails its checksum: the file is damaged")]
    Checksum {
        /// What was being decoded.
        what: &'static str,
    },
    /// A value written by a newer or unknown codec version.
    #[error("cannot decode {what}: codec version {found}, expected {expected}")]
    Version {
        /// What was being decoded.
        what: &'static str,
        /// The version byte found.
        found: u8,
        /// The version this build writes and reads.
        expected: u8,
    },
}

/// Any storage error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A caller mistake.
    #[error(transparent)]
    Input(#[from] InputError),
    /// Opening failed.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// No such record in this namespace (it never existed there, or was forgotten).
    #[error("no record {id} in namespace {namespace:?}")]
    NotFound {
        /// The namespace.
        namespace: Namespace,
        /// The id.
        id: RecordId,
    },
    /// The id is already used in this namespace.
    #[error("record {id} already exists in namespace {namespace:?}")]
    DuplicateId {
        /// The namespace.
        namespace: Namespace,
        /// The id.
        id: RecordId,
    },
    /// The record was already superseded.
    #[error("record {id} was already superseded by {by}")]
    AlreadySuperseded {
        /// The record.
        id: RecordId,
        /// Its successor.
        by: RecordId,
    },
    /// The record stopped being valid at or before the requested time.
    #[error("record {id} is no longer valid at {at}: it ended at {ended}")]
    AlreadyEnded {
        /// The record.
        id: RecordId,
        /// The requested time.
        at: Timestamp,
        /// When it ended.
        ended: Timestamp,
    },
    /// The requested time is before the record became valid.
    #[error("record {id} only becomes valid at {valid_from}, after {at}")]
    BeforeValid {
        /// The record.
        id: RecordId,
        /// The requested time.
        at: Timestamp,
        /// When it becomes valid.
        valid_from: Timestamp,
    },
    /// A change of valid time that would break a supersession chain.
    #[error(
        "record {id} is part of a supersession chain: its valid time follows the chain and cannot be revised"
    )]
    ChainedValidTime {
        /// The record.
        id: RecordId,
    },
    /// Another live record already has this identity key.
    #[error("a live {kind} with key {key:?} already exists in namespace {namespace:?}: {existing}")]
    IdentityConflict {
        /// The namespace.
        namespace: Namespace,
        /// The kind.
        kind: Kind,
        /// The normalised key.
        key: String,
        /// The live record holding it.
        existing: RecordId,
    },
    /// Optimistic concurrency: the record changed since it was read.
    #[error("record {id} changed concurrently: expected revision {expected}, found {found}")]
    RevisionConflict {
        /// The record.
        id: RecordId,
        /// The revision the caller read.
        expected: u32,
        /// The latest revision.
        found: u32,
    },
    /// A write asked to be committed at a transaction time (a replicated log's entry, see
    /// `Store::write_at`) that does not come after the latest revision already recorded.
    #[error("cannot commit at {at}: the database has recorded revisions up to {last}")]
    TimeOrder {
        /// The transaction time asked for.
        at: Timestamp,
        /// The latest transaction time of a recorded revision.
        last: Timestamp,
    },
    /// A restored (imported) revision that does not continue the stored history.
    #[error("cannot restore revision {rev} of {id}: {reason}")]
    RestoreMismatch {
        /// The record.
        id: RecordId,
        /// The revision.
        rev: u32,
        /// Why.
        reason: String,
    },
    /// A stored value could not be decoded.
    #[error("corrupt value in table {table}: {source}")]
    Codec {
        /// The table.
        table: &'static str,
        /// The codec error.
        source: CodecError,
    },
    /// An index disagrees with the revisions it is derived from (a bug: please report it).
    #[error("index inconsistency in namespace {namespace:?}: {detail}")]
    Inconsistent {
        /// The namespace.
        namespace: String,
        /// What disagreed.
        detail: String,
    },
    /// redb failed.
    #[error("database error in {path}: {source}")]
    Database {
        /// The database file.
        path: PathBuf,
        /// redb's error.
        source: Box<redb::Error>,
    },
    /// A commit failed; no operation of the batch it carried was applied.
    #[error("commit to {path} failed, nothing from this batch was written: {reason}")]
    CommitFailed {
        /// The database file.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// A commit failed on an I/O error, and the database could not be reopened to see
    /// whether the commit reached the file first: the batch may or may not have been written.
    #[error(
        "commit to {path} failed, and whether this batch was written is unknown until the database opens again: {reason}"
    )]
    CommitUncertain {
        /// The database file.
        path: PathBuf,
        /// What failed, and why the database did not open again.
        reason: String,
    },
    /// The store closed its database after an I/O error and cannot go on (see
    /// `Store::write`): open it again.
    #[error("{path} was closed after an I/O error: {reason}")]
    Closed {
        /// The database file.
        path: PathBuf,
        /// Why it stays closed.
        reason: String,
    },
    /// A write to a store whose handle has read damage from the file (see
    /// [`Store::damage`](crate::Store::damage)).
    #[error(
        "writes to {path} are refused: it was found damaged ({reason}); restore it from an export or a backup, and run `mnemon check`, which clears the mark once the file checks clean"
    )]
    DamageFound {
        /// The database file.
        path: PathBuf,
        /// The first damage read.
        reason: String,
    },
    /// A copy of the database file ([`crate::Store::copy_to`]) could not be written, or no
    /// copy could be taken without a commit tearing it.
    #[error("cannot copy the database to {path}: {reason}")]
    Copy {
        /// The copy's path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A write to a store opened read-only.
    #[error("{path} is open for reading only")]
    ReadOnly {
        /// The database file.
        path: PathBuf,
    },
}

impl From<IdError> for Error {
    fn from(e: IdError) -> Self {
        Error::Input(e.into())
    }
}

impl From<UnknownKind> for Error {
    fn from(e: UnknownKind) -> Self {
        Error::Input(e.into())
    }
}

impl Error {
    /// Whether the caller's input was at fault (maps to a usage error on the command line).
    pub fn is_input(&self) -> bool {
        matches!(self, Error::Input(_))
    }

    /// Whether the file was found damaged: a stored value that does not decode, indexes that
    /// disagree with the records, a page redb found corrupted, a file that is not what it
    /// should be.
    pub fn is_damage(&self) -> bool {
        match self {
            Error::Codec { .. } | Error::Inconsistent { .. } | Error::DamageFound { .. } => true,
            Error::Open(OpenError::Damaged { .. } | OpenError::NotMnemon { .. }) => true,
            Error::Database { source, .. } => matches!(**source, redb::Error::Corrupted(_)),
            _ => false,
        }
    }

    /// The same failure for another job of a failed commit: its message, as a commit error.
    pub(crate) fn clone_reason(&self, p: &std::path::Path) -> Error {
        match self {
            Error::CommitUncertain { path, reason } => {
                Error::CommitUncertain { path: path.clone(), reason: reason.clone() }
            }
            Error::CommitFailed { path, reason } => {
                Error::CommitFailed { path: path.clone(), reason: reason.clone() }
            }
            Error::Closed { path, reason } => Error::Closed { path: path.clone(), reason: reason.clone() },
            Error::DamageFound { path, reason } => {
                Error::DamageFound { path: path.clone(), reason: reason.clone() }
            }
            other => Error::CommitFailed { path: p.to_path_buf(), reason: other.to_string() },
        }
    }

    /// Fill in the database path of an error raised where the path was not at hand.
    pub(crate) fn with_path(self, p: &std::path::Path) -> Error {
        match self {
            Error::Database { path, source } if path.as_os_str().is_empty() => {
                Error::Database { path: p.to_path_buf(), source }
            }
            other => other,
        }
    }
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::Database { path: PathBuf::new(), source: Box::new(e.into()) }
            }
        }
    )*};
}
from_redb!(
    redb::Error,
    redb::StorageError,
    redb::TableError,
    redb::TransactionError,
    redb::CommitError,
    redb::DatabaseError,
    redb::SetDurabilityError,
    redb::CompactionError
);

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
