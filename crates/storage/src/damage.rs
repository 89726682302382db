//! The damage a handle met: the first damage its reads (or its caller) reported, shared by
//! the handle, its clones and its snapshots, after which its writes are refused; and the
//! **damage mark** beside the file (`FILE.damaged`, holding the reason), so that every other
//! handle, in this process or another, refuses writes too until `mnemon check` finds the file
//! sound again and removes the mark.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The first damage a handle's reads met (shared with its snapshots), and where its file's
/// damage mark lies.
#[derive(Clone, Debug)]
pub(crate) struct Damage {
    first: Arc<Mutex<Option<String>>>,
    mark: PathBuf,
}

/// The damage mark of the database file at `db`: `FILE.damaged` beside it.
pub fn mark_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".damaged");
    db.with_file_name(name)
}

impl Damage {
    /// No damage met yet, for the file at `db`.
    pub(crate) fn new(db: &Path) -> Self {
        Damage { first: Arc::default(), mark: mark_path(db) }
    }

    /// Keep `reason` as the handle's damage unless it already holds one (the first is the
    /// cause), and mark the file unless it is marked already (its mark then keeps the first
    /// cause any handle met; best effort: a file on a read-only disk stays unmarked).
    pub(crate) fn note(&self, reason: &str) {
        let mut d = self.first.lock().unwrap_or_else(PoisonError::into_inner);
        if d.is_none() {
            *d = Some(reason.to_string());
            if !self.mark.exists() {
                let _ = write_mark(&self.mark, reason);
            }
        }
    }

    /// The damage this handle met, else the reason the file's mark gives, if any.
    pub(crate) fn reason(&self) -> Option<String> {
        let first = self.first.lock().unwrap_or_else(PoisonError::into_inner).clone();
        first.or_else(|| read_mark(&self.mark))
    }
}

/// Write the damage mark at `mark`: the reason, on one line.
pub(crate) fn write_mark(mark: &Path, reason: &str) -> std::io::Result<()> {
    let line: String = reason.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    std::fs::write(mark, format!("{line}\n"))
}

/// The reason a damage mark gives (`None` if there is no mark). A mark that cannot be read
/// still marks the file.
pub(crate) fn read_mark(mark: &Path) -> Option<String> {
    match std::fs::read_to_string(mark) {
        Ok(text) => Some(format!("marked in {}: {}", mark.display(), text.trim())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(format!("marked in {} (unreadable: {e})", mark.display())),
    }
}
