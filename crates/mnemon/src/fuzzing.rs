//! Entry points for the fuzz targets (`fuzz/`, run with cargo-fuzz) and their regression
//! tests: the storage's decoders of stored values ([`mnemon_storage::fuzzing`]) and the
//! parsers of what users hand in. A parser may refuse any input; it must never panic, and what
//! it accepts must survive a round trip where it has a writer. Not part of the API.

pub use mnemon_index::fuzzing::index_files;
pub use mnemon_storage::fuzzing::*;

use crate::Namespace;

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// A line of a JSONL import (`mnemon import`).
pub fn import_line(data: &[u8]) -> Result<(), Mismatch> {
    let ns = Namespace::new("fuzz").map_err(|e| e.to_string())?;
    if let Some(line) = text(data) {
        let _ = crate::transfer::parse_line(line, &ns);
    }
    Ok(())
}

/// A record as JSON (`--data`, the loose input form), with no kind given and as each kind.
pub fn record_json(data: &[u8]) -> Result<(), Mismatch> {
    let ns = Namespace::new("fuzz").map_err(|e| e.to_string())?;
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else { return Ok(()) };
    let _ = crate::json::parse_input(value.clone(), None, &ns);
    for kind in crate::Kind::ALL {
        let _ = crate::json::parse_input(value.clone(), Some(*kind), &ns);
    }
    Ok(())
}

/// A scoped memory's markdown file (`memory import`): what parses, written again as `memory
/// show` writes it, parses to the same entries.
pub fn markdown(data: &[u8]) -> Result<(), Mismatch> {
    text(data).map_or(Ok(()), crate::scoped::markdown_round_trip)
}

/// A database in the system's temporary directory that the targets needing one share, one
/// per process, and a fresh namespace per input (so that inputs do not see each other).
fn scratch() -> Result<(crate::Db, String), Mismatch> {
    static DB: std::sync::OnceLock<Option<crate::Db>> = std::sync::OnceLock::new();
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let db = DB.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("mnemon-fuzz-{}.redb", std::process::id()));
        let _ = std::fs::remove_file(&path);
        crate::Db::create(&path).ok()
    });
    let db = db.clone().ok_or_else(|| "cannot create the scratch database".to_string())?;
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok((db, format!("fuzz:{n}")))
}

/// Write the parts of `data` (split at bytes 0xFF) into a fresh directory as `files`, in
/// order, and call `import` on it, in a fresh namespace: it may report errors, never panic,
/// and leaves the namespace's indexes consistent.
fn import_dir(
    data: &[u8],
    files: &[&str],
    import: impl Fn(&crate::Ns, &std::path::Path) -> crate::Result<crate::importers::ImportSummary>,
) -> Result<(), Mismatch> {
    let (db, ns) = scratch()?;
    let dir = std::env::temp_dir().join(format!("mnemon-fuzz-{}-{ns}", std::process::id()).replace(':', "-"));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    for (part, name) in data.split(|b| *b == 0xFF).zip(files) {
        std::fs::write(dir.join(name), part).map_err(|e| e.to_string())?;
    }
    let ns = db.ns(&ns).map_err(|e| e.to_string())?;
    let done = import(&ns, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e @ crate::Error::Panicked { .. }) = &done {
        return Err(format!("the import panicked: {e}"));
    }
    let problems = db.store().snapshot().map_err(|e| e.to_string())?.verify().map_err(|e| e.to_string())?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("the import left the indexes inconsistent: {problems:?}"))
    }
}

/// crewly's knowledge files (`mnemon import --format crewly`): the parts of the input (split at
/// bytes 0xFF) as its files, in the order the importer reads them.
pub fn crewly(data: &[u8]) -> Result<(), Mismatch> {
    let files = [
        "patterns.json",
        "decisions.json",
        "gotchas.json",
        "relationships.json",
        "role-knowledge.json",
        "preferences.json",
        "performance.json",
        "learnings.md",
    ];
    import_dir(data, &files, crate::importers::import_crewly_dir)
}

/// The project assistant's JSON files (`mnemon import --format assistant`): the parts of the
/// input (split at bytes 0xFF) as its four files.
pub fn assistant(data: &[u8]) -> Result<(), Mismatch> {
    let files = ["decisions.json", "tasks.json", "entities.json", "conversations.json"];
    import_dir(data, &files, crate::importers::import_assistant_dir)
}

/// The reference memory server's knowledge graph (`mnemon import --format mcp-jsonl`): what
/// imports exports again, and imports from that export to the same graph.
pub fn mcp_jsonl(data: &[u8]) -> Result<(), Mismatch> {
    let Some(text) = text(data) else { return Ok(()) };
    let (db, name) = scratch()?;
    let ns = db.ns(&name).map_err(|e| e.to_string())?;
    match crate::importers::import_mcp_jsonl(&ns, text, "fuzz") {
        Err(e @ crate::Error::Panicked { .. }) => return Err(format!("the import panicked: {e}")),
        Err(_) => return Ok(()),
        Ok(_) => {}
    }
    let exported = crate::importers::export_mcp_jsonl(&ns).map_err(|e| e.to_string())?;
    let again = db.ns(&format!("{name}:again")).map_err(|e| e.to_string())?;
    crate::importers::import_mcp_jsonl(&again, &exported, "fuzz").map_err(|e| e.to_string())?;
    let twice = crate::importers::export_mcp_jsonl(&again).map_err(|e| e.to_string())?;
    if twice == exported {
        Ok(())
    } else {
        Err(format!("export, import, export differ:\n{exported}\n--\n{twice}"))
    }
}

/// A tool call as MCP dispatches it: the first byte picks one of the operations MCP offers, the
/// rest is its arguments as JSON, run in a session of a fresh namespace. Any answer or error
/// will do but a panic (the session turns one into [`crate::Error::Panicked`]), and an
/// operation that only reads must not write.
pub fn operation_call(data: &[u8]) -> Result<(), Mismatch> {
    let catalog = crate::ops::Catalog::new();
    let calls: Vec<&crate::ops::Entry> = catalog.entries().iter().filter(|e| e.mcp).collect();
    let Some((pick, args)) = data.split_first() else { return Ok(()) };
    let Some(entry) = calls.get(usize::from(*pick) % calls.len().max(1)) else {
        return Ok(());
    };
    let (name, read_only) = (entry.name, entry.read_only);
    let Ok(args) = serde_json::from_slice::<serde_json::Value>(args) else { return Ok(()) };
    let (db, ns) = scratch()?;
    let session = crate::ops::Session::new(db.clone(), &ns).map_err(|e| e.to_string())?;
    let before = db.store().snapshot().map_err(|e| e.to_string())?.meta().commit_seq;
    if let Err(e @ crate::Error::Panicked { .. }) = entry.call(&session, args) {
        return Err(format!("{name} panicked: {e}"));
    }
    let after = db.store().snapshot().map_err(|e| e.to_string())?.meta().commit_seq;
    if read_only && after != before {
        return Err(format!("{name} only reads, but wrote"));
    }
    Ok(())
}
