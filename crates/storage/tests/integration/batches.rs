//! Numbered batches of records, for the tests that check what survives a fault: batch `k`
//! is `size` learnings tagged `b{k}`, so a listing tells which batches a file holds and
//! whether any is there in part.

use std::collections::BTreeMap;

use mnemon_storage::body::Learning;
use mnemon_storage::*;

/// Batch `k`: `size` learnings tagged `b{k}`, their texts saying `what`.
pub fn batch(ns: &Namespace, k: usize, size: usize, what: &str) -> Vec<WriteOp> {
    (0..size)
        .map(|i| {
            let mut r = NewRecord::new(
                ns.clone(),
                Learning { text: format!("batch {k} note {i}: {what}"), ..Default::default() },
            );
            r.envelope.tags = mnemon_storage::text_list![format!("b{k}")];
            WriteOp::Insert(r)
        })
        .collect()
}

/// The batches among `records`, by number, with how many of their records are there.
pub fn held(records: &[Record]) -> BTreeMap<usize, usize> {
    let mut counts = BTreeMap::new();
    for r in records {
        for t in &r.envelope.tags {
            if let Some(k) = t.to_string().strip_prefix('b').and_then(|k| k.parse().ok()) {
                *counts.entry(k).or_insert(0) += 1;
            }
        }
    }
    counts
}
