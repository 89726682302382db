//! Rewriting a table's values in place, a batch at a time: what the sealing upgrades (formats
//! 17 and 18) share.

use std::ops::Bound;

use redb::{Key, ReadableTable, TableDefinition, WriteTransaction};

use crate::error::Error;

/// Values read per batch: each batch's rewritten values are inserted before the next is read.
const BATCH: usize = 1024;

/// Rewrite every value of table `def` that `reseal` changes: it is given each key and value,
/// and answers the new value (`Some`), `None` to leave it, or an error that ends the upgrade.
/// The table is read in key order a batch at a time, resuming after the last key read (kept
/// as its bytes), so that no more than a batch of values is held.
pub(super) fn reseal_table<K: Key + 'static>(
    txn: &WriteTransaction,
    def: TableDefinition<K, &'static [u8]>,
    mut reseal: impl FnMut(K::SelfType<'_>, &[u8]) -> Result<Option<Vec<u8>>, Error>,
) -> Result<(), Error> {
    let mut table = txn.open_table(def)?;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let mut batch: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut last: Option<Vec<u8>> = None;
        let mut read = 0usize;
        {
            let start = match &after {
                Some(k) => Bound::Excluded(K::from_bytes(k)),
                None => Bound::Unbounded,
            };
            for r in table.range::<K::SelfType<'_>>((start, Bound::Unbounded))?.take(BATCH) {
                let (k, v) = r?;
                read += 1;
                let key = K::as_bytes(&k.value()).as_ref().to_vec();
                if let Some(new) = reseal(k.value(), v.value())? {
                    batch.push((key.clone(), new));
                }
                last = Some(key);
            }
        }
        for (k, v) in &batch {
            table.insert(K::from_bytes(k), v.as_slice())?;
        }
        if read < BATCH {
            return Ok(());
        }
        after = last;
    }
}
