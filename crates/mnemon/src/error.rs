//! Errors of the facade.

use std::path::PathBuf;

pub use mnemon_storage::{InputError, OpenError};

/// One bad line of an import file.
#[derive(Debug, Clone, PartialEq)]
pub struct LineError {
    /// The file (or `-` for standard input).
    pub source: String,
    /// The line number, from 1.
    pub line: u64,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.source, self.line, self.reason)
    }
}

/// Any mnemon error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// From the storage engine (includes caller mistakes, [`mnemon_storage::Error::Input`]).
    #[error(transparent)]
    Storage(#[from] mnemon_storage::Error),
    /// An import file with invalid lines; nothing was written.
    #[error("{} invalid line(s), nothing imported; first: {}", .errors.len(), .errors.first().map(ToString::to_string).unwrap_or_default())]
    InvalidImport {
        /// The bad lines.
        errors: Vec<LineError>,
    },
    /// An import stopped because a commit failed (the disk is full, the file may not grow,
    /// an I/O error). Each of its commits is durable: the lines before `line` are imported,
    /// and none after it was tried; the batch from `line` was not written, unless `cause` says
    /// that is unknown (see [`crate::transfer::import`]).
    #[error(
        "import of {file} stopped at line {line} (the {written} lines before it are imported, of {total}; no later line was tried): {cause}"
    )]
    ImportStopped {
        /// The file (or `-`).
        file: String,
        /// The first line not imported: the first of the batch whose commit failed.
        line: u64,
        /// Lines committed before it (with `partial`, the lines that failed alone count too).
        written: u64,
        /// Lines the import would have written.
        total: u64,
        /// Why the commit failed.
        #[source]
        cause: mnemon_storage::Error,
    },
    /// The directory for a new database could not be created (a file in the way, no
    /// permission, ...).
    #[error("cannot create directory {path}: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file could not be read or written.
    #[error("cannot access {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// From the vector index.
    #[error(transparent)]
    Index(#[from] mnemon_index::IndexError),
    /// Embedding a text failed.
    #[error(transparent)]
    Embed(#[from] mnemon_embed::EmbedError),
    /// The database was set up with another embedder.
    #[error(
        "{path} was written with embedder {recorded:?}, not {configured:?}: use the same embedder, or ask for a reindex (`mnemon reindex`, `DbBuilder::reembed`)"
    )]
    EmbedderMismatch {
        /// The database file.
        path: PathBuf,
        /// The embedder it records.
        recorded: String,
        /// The one configured now.
        configured: String,
    },
    /// An operation the record's state does not allow (completing a cancelled task, unblocking
    /// a task that is not blocked, a dependency cycle...).
    #[error("record {id}: {reason}")]
    Rule {
        /// The record.
        id: mnemon_storage::RecordId,
        /// Why not.
        reason: String,
    },
    /// No record's id ends in the given digits (see [`crate::Ns::resolve_id`]).
    #[error("no record in namespace {namespace:?} has an id starting or ending with {tail}")]
    NoSuchId {
        /// The namespace searched.
        namespace: String,
        /// The digits given.
        tail: String,
    },
    /// No current record of a kind has the name asked for (an entity's name).
    #[error("no {kind} named {name:?} in namespace {namespace}")]
    NoSuchName {
        /// The kind looked for.
        kind: String,
        /// The name.
        name: String,
        /// The namespace searched.
        namespace: String,
    },
    /// A read or write stopped inside a dependency with a panic, caught at the operation's
    /// boundary (see [`guard`]): on a read of a file this means a damaged page redb did not
    /// detect as such.
    #[error(
        "{what} failed inside the storage engine ({message}): the file may be damaged; run `mnemon check`, and restore it from an export or a backup if it is"
    )]
    Panicked {
        /// What was being done.
        what: String,
        /// The panic's message.
        message: String,
    },
    /// The record exists but was not valid, or not yet known, at the time asked about.
    #[error("record {id} is not visible then: {why}; ask as of another time (as_of, known_at) to see it")]
    NotValidThen {
        /// The record.
        id: mnemon_storage::RecordId,
        /// Why: not yet known then, or its status and valid interval then.
        why: String,
    },
    /// A namespace the session may not reach (see [`crate::ops::Session`]).
    #[error("namespace {namespace:?} is outside this session's scope ({scope})")]
    NotAllowed {
        /// The namespace asked for.
        namespace: String,
        /// What the session may reach.
        scope: String,
    },
    /// A record changed concurrently too often for a read-modify-write to succeed.
    #[error("record {id} kept changing concurrently; gave up after {attempts} attempts")]
    Contended {
        /// The record.
        id: mnemon_storage::RecordId,
        /// How often it was tried.
        attempts: u32,
    },
    /// A server (`mnemon serve`) answered an operation with an error: its stable code and its
    /// message, as a client of the server sees them.
    #[error("{message}")]
    Remote {
        /// The error's code, as the server gave it.
        code: Code,
        /// What the server said (or why it could not be reached).
        message: String,
    },
    /// The replicated log this database is a replica of (see [`crate::WriteLog`]) did not
    /// take a write, or this node did not apply it in time: it may still be applied later.
    #[error("replicated log: {message}")]
    Log {
        /// What failed.
        message: String,
    },
    /// A write of a batch was refused, so none of the batch was written.
    #[error("write {index} of the batch (counting from 0): {source}; nothing of the batch was written")]
    InBatch {
        /// Its place in the batch.
        index: usize,
        /// Why it was refused.
        source: Box<Error>,
    },
    /// An operation's answer could not be written as JSON.
    #[error("cannot write the answer of {what}: {message}")]
    Encode {
        /// The operation.
        what: String,
        /// Why.
        message: String,
    },
}

impl Error {
    /// Whether the caller was at fault (a usage error on the command line, exit code 2):
    /// the request was malformed or reached beyond what the caller may (see [`Code`]).
    pub fn is_input(&self) -> bool {
        self.code().exit_code() == 2
    }
}

/// The stable machine code of an error: what every interface reports (the CLI's exit code,
/// MCP's error results, the HTTP server's status and problem documents), whatever the message
/// says. Codes are never renamed; new ones may be added.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Code {
    /// The request was malformed: an unknown kind, a bad time, a missing field, a bad id.
    InvalidInput,
    /// No such record (or no record with those digits).
    NotFound,
    /// A namespace outside the session's scope, or a write to a read-only handle.
    Forbidden,
    /// The record's state does not allow it: already superseded or ended, a live record
    /// with the same identity, a domain rule (a finished task, a dependency cycle), a
    /// concurrent change.
    Conflict,
    /// The file is damaged: a value that does not decode, indexes that disagree, a page
    /// redb found corrupted.
    Damaged,
    /// The file or a service could not be used: I/O errors, a failed commit, a full disk, an
    /// embedder that did not answer, a file in use or of another format.
    Unavailable,
}

impl Code {
    /// The code as written in JSON (`invalid_input`, `not_found`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidInput => "invalid_input",
            Code::NotFound => "not_found",
            Code::Forbidden => "forbidden",
            Code::Conflict => "conflict",
            Code::Damaged => "damaged",
            Code::Unavailable => "unavailable",
        }
    }

    /// The HTTP status of an error with this code.
    pub fn http_status(self) -> u16 {
        match self {
            Code::InvalidInput => 400,
            Code::NotFound => 404,
            Code::Forbidden => 403,
            Code::Conflict => 409,
            Code::Damaged => 500,
            Code::Unavailable => 503,
        }
    }

    /// The command line's exit code: 2 for a mistake in how it was called, 1 otherwise.
    pub fn exit_code(self) -> u8 {
        match self {
            Code::InvalidInput | Code::Forbidden => 2,
            _ => 1,
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The code of a storage error.
fn storage_code(e: &mnemon_storage::Error) -> Code {
    use mnemon_storage::Error as S;
    if e.is_damage() {
        return Code::Damaged;
    }
    match e {
        S::Input(_) => Code::InvalidInput,
        S::NotFound { .. } => Code::NotFound,
        S::ReadOnly { .. } => Code::Forbidden,
        S::DuplicateId { .. }
        | S::AlreadySuperseded { .. }
        | S::AlreadyEnded { .. }
        | S::BeforeValid { .. }
        | S::ChainedValidTime { .. }
        | S::IdentityConflict { .. }
        | S::RevisionConflict { .. }
        | S::RestoreMismatch { .. }
        | S::TimeOrder { .. } => Code::Conflict,
        _ => Code::Unavailable,
    }
}

impl Error {
    /// The error's stable code (see [`Code`]).
    pub fn code(&self) -> Code {
        match self {
            Error::Storage(e) => storage_code(e),
            Error::Index(mnemon_index::IndexError::Storage(e)) => storage_code(e),
            Error::Index(e) if e.is_input() => Code::InvalidInput,
            Error::InvalidImport { .. } | Error::EmbedderMismatch { .. } => Code::InvalidInput,
            Error::NoSuchId { .. } | Error::NoSuchName { .. } | Error::NotValidThen { .. } => Code::NotFound,
            Error::NotAllowed { .. } => Code::Forbidden,
            Error::Rule { .. } | Error::Contended { .. } => Code::Conflict,
            Error::Panicked { .. } => Code::Damaged,
            Error::Remote { code, .. } => *code,
            Error::InBatch { source, .. } => source.code(),
            Error::ImportStopped { cause, .. } if cause.is_damage() => Code::Damaged,
            Error::Index(_)
            | Error::ImportStopped { .. }
            | Error::CreateDir { .. }
            | Error::Io { .. }
            | Error::Log { .. }
            | Error::Encode { .. }
            | Error::Embed(_) => Code::Unavailable,
        }
    }
}

impl From<mnemon_storage::IdError> for Error {
    fn from(e: mnemon_storage::IdError) -> Self {
        Error::Storage(InputError::from(e).into())
    }
}

impl From<mnemon_storage::UnknownKind> for Error {
    fn from(e: mnemon_storage::UnknownKind) -> Self {
        Error::Storage(InputError::from(e).into())
    }
}

impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        Error::Storage(e.into())
    }
}

impl From<mnemon_storage::TimeError> for Error {
    fn from(e: mnemon_storage::TimeError) -> Self {
        Error::Storage(InputError::Time(e).into())
    }
}

impl From<OpenError> for Error {
    fn from(e: OpenError) -> Self {
        Error::Storage(e.into())
    }
}

/// Run `f`, turning a panic inside it (a dependency's `unreachable!` on a damaged page, an
/// overflow on input no check caught) into [`Error::Panicked`], so that a caller gets an error
/// and a server keeps serving. `what` names the work in the error.
pub fn guard<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            Err(Error::Panicked { what: what.to_string(), message: panic_message(payload.as_ref()) })
        }
    }
}

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An input error with a message.
pub(crate) fn invalid(msg: impl Into<String>) -> Error {
    Error::Storage(mnemon_storage::Error::Input(InputError::Invalid(msg.into())))
}
