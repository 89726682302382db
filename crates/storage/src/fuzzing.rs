//! Entry points for the fuzz targets (`fuzz/`, run with cargo-fuzz) and for their regression
//! tests: each runs decoders of stored values on arbitrary bytes and checks that what decodes
//! encodes back to the same. A decoder may refuse any input; it must never panic, loop or
//! allocate without bound, and what it accepts must survive a round trip. Not part of the API:
//! a mismatch is returned as an error for the target to report.

use crate::id::{Namespace, RecordId};
use crate::time::Timestamp;

/// A round trip that did not come back the same.
pub type Mismatch = String;

fn same<T: PartialEq + std::fmt::Debug>(what: &str, a: &T, b: &T) -> Result<(), Mismatch> {
    if a == b { Ok(()) } else { Err(format!("{what}: {a:?} came back as {b:?}")) }
}

/// A stored revision and a current row made of `data`. The bytes are decoded as stored (a
/// sealed value must fail its checksum unless it is one this build wrote), and as a version-1
/// revision (whose parser the checksum would otherwise shield from the fuzzer); a record that
/// decodes is encoded again, sealed and as a current row, and must decode to itself.
pub fn stored_record(data: &[u8]) -> Result<(), Mismatch> {
    let ns = Namespace::new("fuzz").map_err(|e| e.to_string())?;
    let id = RecordId::from_u128(7);
    let at = Timestamp::from_micros(1_000);
    let _ = crate::record::decode_revision(&ns, id, 3, at, data);
    let _ = crate::record::decode_current_row_at(&ns, id, data, Some(at), |r| r);
    let _ = crate::record::current_row_visible(data, ns.as_str(), id);
    let mut v1 = data.to_vec();
    if let Some(v) = v1.first_mut() {
        *v = crate::record::REVISION_UNSEALED;
    }
    let Ok(rec) = crate::record::decode_revision(&ns, id, 3, at, &v1) else { return Ok(()) };
    let sealed = crate::record::encode_revision(&rec).map_err(|e| e.to_string())?;
    let back = crate::record::decode_revision(&ns, id, 3, at, &sealed).map_err(|e| e.to_string())?;
    same("revision", &rec, &back)?;
    if let Some(row) = crate::record::encode_current_row(&rec).map_err(|e| e.to_string())? {
        let back =
            crate::record::decode_current_row_at(&ns, id, &row, None, |r| r).map_err(|e| e.to_string())?;
        same("current row", &Some(rec), &back)?;
    }
    Ok(())
}

/// A segment block: parsed, then every entry's term, postings, bounds and lookup read; a block
/// that parses and checks out is written again entry by entry and must be the same bytes
/// (version 2).
pub fn segment_block(data: &[u8]) -> Result<(), Mismatch> {
    crate::lexical::fuzz_block(data)
}

/// The lexical index's rows: a fresh row (decoded, scanned in place, and encoded again), a
/// posting-list row and a format-9 segment row.
pub fn lexical_rows(data: &[u8]) -> Result<(), Mismatch> {
    crate::lexical::fuzz_rows(data)
}

/// A stored vector and a vector space: what decodes is encoded again and must decode to the
/// same numbers (bit for bit).
pub fn vector_value(data: &[u8]) -> Result<(), Mismatch> {
    let mut v = Vec::new();
    if crate::vector::decode_into(data, &mut v).is_ok() {
        let mut back = Vec::new();
        crate::vector::decode_into(&crate::vector::encode(&v), &mut back).map_err(|e| e.to_string())?;
        let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        // The encoder keeps the zeros of a sparse vector as zeros: compare the values, -0.0
        // read as 0.0.
        let norm = |x: &[f32]| bits(&x.iter().map(|f| if *f == 0.0 { 0.0 } else { *f }).collect::<Vec<_>>());
        same("vector", &norm(&v), &norm(&back))?;
    }
    let _ = crate::vector::decode_space("fuzz", data);
    Ok(())
}

/// A commit log entry.
pub fn commit_entry(data: &[u8]) -> Result<(), Mismatch> {
    let _ = crate::write::decode_commit(data);
    Ok(())
}

/// A time as users write it: what parses is written as RFC 3339 and parses to the same time.
pub fn time_text(data: &[u8]) -> Result<(), Mismatch> {
    let Ok(text) = std::str::from_utf8(data) else { return Ok(()) };
    if let Ok(t) = Timestamp::parse(text) {
        let back = Timestamp::parse(&t.to_rfc3339())
            .map_err(|e| format!("{t:?} written as {}: {e}", t.to_rfc3339()))?;
        same("time", &t, &back)?;
    }
    Ok(())
}
