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
