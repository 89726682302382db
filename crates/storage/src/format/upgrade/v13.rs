//! Format 13: stored revisions and current rows end with a CRC-32 of their bytes and their
//! keys.

use redb::WriteTransaction;

use crate::error::Error;
use crate::tables;
use crate::time::Timestamp;

/// Values rewritten per read of a table while sealing: the rewrite cannot write into a table
/// it is reading, so it reads a batch, writes it, and reads on after its last key.
const SEAL_BATCH: usize = 4096;

/// A key of `mnemon.revisions`, owned.
type RevisionKey = (String, u128, i64, u32);

/// Seal every version-1 revision (decoded first: damage is refused, not sealed in), current
/// row and ended row (format 13).
pub(super) fn seal_values(txn: &WriteTransaction) -> Result<(), Error> {
    use redb::ReadableTable;
    use std::ops::Bound;
    let mut revisions = txn.open_table(tables::REVISIONS)?;
    let mut after: Option<RevisionKey> = None;
    loop {
        let mut batch: Vec<(RevisionKey, Vec<u8>)> = Vec::new();
        let mut last = None;
        {
            let start = match &after {
                Some((ns, id, rec, rev)) => Bound::Excluded((ns.as_str(), *id, *rec, *rev)),
                None => Bound::Unbounded,
            };
            for r in revisions.range::<(&str, u128, i64, u32)>((start, Bound::Unbounded))?.take(SEAL_BATCH) {
                let (k, v) = r?;
                let (ns, id, rec, rev) = k.value();
                last = Some((ns.to_string(), id, rec, rev));
                let key = crate::record::revision_key(
                    crate::id::RecordId::from_u128(id),
                    Timestamp::from_micros(rec),
                    rev,
                );
                let Some(sealed) = crate::record::sealed_revision(v.value(), ns, &key) else { continue };
                let namespace = crate::id::Namespace::new(ns).map_err(|e| Error::Inconsistent {
                    namespace: ns.to_string(),
                    detail: format!("stored revision under a bad namespace: {e}"),
                })?;
                crate::record::decode_revision(
                    &namespace,
                    crate::id::RecordId::from_u128(id),
                    rev,
                    Timestamp::from_micros(rec),
                    &sealed,
                )
                .map_err(|e| Error::Codec { table: tables::names::REVISIONS, source: e })?;
                batch.push(((ns.to_string(), id, rec, rev), sealed));
            }
        }
        for ((ns, id, rec, rev), sealed) in &batch {
            revisions.insert((ns.as_str(), *id, *rec, *rev), sealed.as_slice())?;
        }
        match last {
            Some(l) => after = Some(l),
            None => break,
        }
    }
    // The rows of every namespace (their checksums cover their records' ids and namespaces).
    let names: Vec<String> = {
        let t = txn.open_table(tables::NAMESPACES)?;
        t.iter()?.map(|r| r.map(|(k, _)| k.value().to_string())).collect::<Result<_, _>>()?
    };
    for ns in &names {
        seal_rows(txn, tables::CURRENT, ns, 0, |k| tables::parse_current_key(k, ns.len()).map(|(_, id)| id))?;
        // An ended row is the kind's code, then a current row.
        seal_rows(txn, tables::ENDED, ns, 1, |k| crate::ended::parse_key(k, ns.len()).map(|(_, _, id)| id))?;
    }
    Ok(())
}

/// Seal the version-1 current rows that the values of byte-keyed table `def` in namespace `ns`
/// hold after `skip` bytes, each of the record whose id `id_of` reads from its key.
fn seal_rows(
    txn: &WriteTransaction,
    def: redb::TableDefinition<&[u8], &[u8]>,
    ns: &str,
    skip: usize,
    id_of: impl Fn(&[u8]) -> Option<u128>,
) -> Result<(), Error> {
    use redb::ReadableTable;
    use std::ops::Bound;
    let mut table = txn.open_table(def)?;
    let (lo, hi) = tables::namespace_range(ns);
    let mut after: Option<Vec<u8>> = None;
    loop {
        let mut batch: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut last = None;
        {
            let start = match &after {
                Some(k) => Bound::Excluded(k.as_slice()),
                None => Bound::Included(lo.as_slice()),
            };
            for r in table.range::<&[u8]>((start, Bound::Excluded(hi.as_slice())))?.take(SEAL_BATCH) {
                let (k, v) = r?;
                last = Some(k.value().to_vec());
                let id = id_of(k.value()).ok_or_else(|| Error::Inconsistent {
                    namespace: ns.to_string(),
                    detail: format!("malformed key in {}", redb::TableHandle::name(&def)),
                })?;
                let (head, row) = v.value().split_at(skip.min(v.value().len()));
                if let Some(sealed) =
                    crate::record::sealed_current_row(row, ns, crate::id::RecordId::from_u128(id))
                {
                    batch.push((k.value().to_vec(), [head, sealed.as_slice()].concat()));
                }
            }
        }
        for (k, v) in &batch {
            table.insert(k.as_slice(), v.as_slice())?;
        }
        match last {
            Some(l) => after = Some(l),
            None => return Ok(()),
        }
    }
}
