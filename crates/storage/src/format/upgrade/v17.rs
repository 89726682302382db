//! Format 17: the lexical index's large values (segment blocks, about 32 KiB each, and the
//! parts of a segment's text numbers, about 16 KiB) and stored vectors end with a CRC-32 of
//! their bytes, so that damage inside one is found when it is read.

use std::ops::Bound;

use redb::{ReadableTable, WriteTransaction};

use crate::error::Error;
use crate::tables;

/// Values rewritten per read of a table (see format 13's sealing).
const SEAL_BATCH: usize = 1024;

/// Seal every version-3 segment block and version-1 text-number part. A value that does not
/// decode is refused (the upgrade fails, naming it): damage is not sealed in.
pub(super) fn seal_index(txn: &WriteTransaction) -> Result<(), Error> {
    let mut blocks = txn.open_table(tables::SEGMENTS)?;
    let mut after: Option<(String, u64, String, u32)> = None;
    loop {
        let mut batch = Vec::new();
        let mut read = 0usize;
        {
            let start = match &after {
                Some((ns, seg, first, part)) => Bound::Excluded((ns.as_str(), *seg, first.as_str(), *part)),
                None => Bound::Unbounded,
            };
            for r in blocks.range::<(&str, u64, &str, u32)>((start, Bound::Unbounded))?.take(SEAL_BATCH) {
                let (k, v) = r?;
                read += 1;
                let (ns, seg, first, part) = k.value();
                let key = (ns.to_string(), seg, first.to_string(), part);
                after = Some(key.clone());
                if let Some(s) = sealed(
                    v.value(),
                    (crate::lexical::seal_block, crate::lexical::is_sealed_block),
                    ns,
                    "segment block",
                )? {
                    batch.push((key, s));
                }
            }
        }
        for ((ns, seg, first, part), s) in &batch {
            blocks.insert((ns.as_str(), *seg, first.as_str(), *part), s.as_slice())?;
        }
        if read < SEAL_BATCH {
            break;
        }
    }
    let mut parts = txn.open_table(tables::SEGMENT_TEXTS)?;
    let mut after: Option<(String, u64, u32)> = None;
    loop {
        let mut batch = Vec::new();
        let mut read = 0usize;
        {
            let start = match &after {
                Some((ns, seg, part)) => Bound::Excluded((ns.as_str(), *seg, *part)),
                None => Bound::Unbounded,
            };
            for r in parts.range::<(&str, u64, u32)>((start, Bound::Unbounded))?.take(SEAL_BATCH) {
                let (k, v) = r?;
                read += 1;
                let (ns, seg, part) = k.value();
                let key = (ns.to_string(), seg, part);
                after = Some(key.clone());
                if let Some(s) = sealed(
                    v.value(),
                    (crate::lexical::seal_part, crate::lexical::is_sealed_part),
                    ns,
                    "text-number part",
                )? {
                    batch.push((key, s));
                }
            }
        }
        for ((ns, seg, part), s) in &batch {
            parts.insert((ns.as_str(), *seg, *part), s.as_slice())?;
        }
        if read < SEAL_BATCH {
            break;
        }
    }
    seal_vectors(txn)
}

/// Seal every stored vector of version 1 or 2 (each decoded first).
fn seal_vectors(txn: &WriteTransaction) -> Result<(), Error> {
    let mut vectors = txn.open_table(tables::VECTORS)?;
    let mut after: Option<(String, String, u128, u32)> = None;
    loop {
        let mut batch = Vec::new();
        let mut read = 0usize;
        {
            let start = match &after {
                Some((space, ns, id, rev)) => Bound::Excluded((space.as_str(), ns.as_str(), *id, *rev)),
                None => Bound::Unbounded,
            };
            for r in vectors.range::<(&str, &str, u128, u32)>((start, Bound::Unbounded))?.take(SEAL_BATCH) {
                let (k, v) = r?;
                read += 1;
                let (space, ns, id, rev) = k.value();
                let key = (space.to_string(), ns.to_string(), id, rev);
                after = Some(key.clone());
                let sealed = crate::vector::seal_stored(v.value())
                    .map_err(|e| Error::Codec { table: tables::names::VECTORS, source: e })?;
                if let Some(s) = sealed {
                    batch.push((key, s));
                }
            }
        }
        for ((space, ns, id, rev), s) in &batch {
            vectors.insert((space.as_str(), ns.as_str(), *id, *rev), s.as_slice())?;
        }
        if read < SEAL_BATCH {
            return Ok(());
        }
    }
}

/// How a value is sealed, and how a sealed one is told.
type Sealing = (fn(&[u8]) -> Option<Vec<u8>>, fn(&[u8]) -> bool);

/// `bytes` sealed: `None` when it is sealed already; an error when it is neither sealed nor a
/// well-formed value of the version before.
fn sealed(bytes: &[u8], (seal, is_sealed): Sealing, ns: &str, what: &str) -> Result<Option<Vec<u8>>, Error> {
    if let Some(s) = seal(bytes) {
        return Ok(Some(s));
    }
    if is_sealed(bytes) {
        return Ok(None);
    }
    Err(Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!(
            "a {what} of the lexical index does not decode: the file is damaged (restore it from a backup)"
        ),
    })
}
