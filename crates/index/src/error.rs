//! Errors of the vector index.

use std::path::PathBuf;

/// What can go wrong in the vector index.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The database failed (or refused the input: dimension, NaN, ...).
    #[error(transparent)]
    Storage(#[from] mnemon_storage::Error),
    /// Parameters the graph cannot take.
    #[error("invalid index parameters: {0}")]
    BadParams(String),
    /// A query vector that cannot be searched with.
    #[error("invalid query vector: {0}")]
    BadQuery(String),
    /// Writing index files failed.
    #[error("cannot save the vector index to {path}: {reason}")]
    Save {
        /// The file or base name.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Reading index files failed (the index is then rebuilt, never trusted).
    #[error("cannot load the vector index from {path}: {reason}")]
    Load {
        /// The file or base name.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl IndexError {
    /// Whether the caller's input was at fault.
    pub fn is_input(&self) -> bool {
        match self {
            IndexError::Storage(e) => e.is_input(),
            IndexError::BadParams(_) | IndexError::BadQuery(_) => true,
            _ => false,
        }
    }
}
