//! Entry points for the fuzz target `index_files` (`fuzz/`) and its regression tests: the
//! decoders of an index's files on arbitrary bytes. Not part of the API.

use crate::persist::{Manifest, parse_points};

/// A segment's manifest and its points file: whatever decodes must encode back to the same
/// manifest; a points file may be refused, never panic.
pub fn index_files(data: &[u8]) -> Result<(), String> {
    if let Ok(m) = Manifest::decode(data) {
        let back = Manifest::decode(&m.encode())?;
        if back != m {
            return Err(format!("manifest {m:?} came back as {back:?}"));
        }
    }
    for dim in [0, 3, 384] {
        let _ = parse_points(data, dim);
    }
    Ok(())
}
