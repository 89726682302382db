//! Opening a path this process already holds: the new handle shares the open engine (as
//! Chroma's client cache does) instead of failing on the file's lock, so that re-running
//! `db = mnemon.open(path)` in a notebook works. The engine stays open while any handle on it
//! does; closing one handle leaves the others working.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use mnemon::Db;

/// How a file was opened: what a second open must match to share it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Options {
    pub read_only: bool,
    pub shared: bool,
    pub eventual: bool,
    /// The embedder asked for by name, if one was.
    pub embedder: Option<String>,
    /// Whether embeddings are deferred, if asked.
    pub defer: Option<bool>,
}

/// An engine open in this process, shared by the handles on it.
pub(crate) struct Opened {
    db: Db,
    options: Options,
    key: PathBuf,
}

impl std::ops::Deref for Opened {
    type Target = Db;
    fn deref(&self) -> &Db {
        &self.db
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        if let Ok(mut open) = registry().lock() {
            // Only this engine's entry: a later open of the same path may have replaced it.
            if open.get(&self.key).is_some_and(|w| w.strong_count() == 0) {
                open.remove(&self.key);
            }
        }
    }
}

fn registry() -> &'static Mutex<HashMap<PathBuf, Weak<Opened>>> {
    static OPEN: LazyLock<Mutex<HashMap<PathBuf, Weak<Opened>>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    &OPEN
}

/// The path as one file is always named: canonical, or (a file not made yet) its canonical
/// folder and its name.
pub(crate) fn key(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => {
            let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
            std::fs::canonicalize(dir).map(|d| d.join(name)).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// The engine open on `key`, if this process holds one: `Err` with the reason when it was
/// opened with other options.
pub(crate) fn find(key: &Path, options: &Options) -> Result<Option<Arc<Opened>>, String> {
    // The lock is let go before `found` can be dropped: the last handle's drop takes it.
    let found = {
        let open = registry().lock().map_err(|_| "a thread failed opening a file".to_string())?;
        open.get(key).and_then(Weak::upgrade)
    };
    let Some(found) = found else { return Ok(None) };
    let same = found.options.read_only == options.read_only
        && found.options.shared == options.shared
        && found.options.eventual == options.eventual
        && (options.embedder.is_none() || options.embedder == found.options.embedder)
        && options.defer.is_none_or(|d| d == found.db.embed_backlog().deferred);
    if !same {
        return Err(format!(
            "{} is already open in this process with other options ({}); close that handle first, \
             or open it with the same options",
            key.display(),
            describe(&found.options)
        ));
    }
    Ok(Some(found))
}

/// Keep `db`, just opened, for later opens of `key`.
pub(crate) fn register(key: PathBuf, db: Db, options: Options) -> Arc<Opened> {
    let opened = Arc::new(Opened { db, options, key: key.clone() });
    if let Ok(mut open) = registry().lock() {
        open.insert(key, Arc::downgrade(&opened));
    }
    opened
}

fn describe(o: &Options) -> String {
    format!(
        "read_only={}, shared={}, durability={}, embedder={}, defer_embeddings={}",
        o.read_only,
        o.shared,
        if o.eventual { "eventual" } else { "immediate" },
        o.embedder.as_deref().unwrap_or("as recorded"),
        o.defer.map_or("default", |d| if d { "True" } else { "False" })
    )
}
