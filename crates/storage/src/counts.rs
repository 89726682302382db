//! How many rows each namespace holds (format 14, `mnemon.counts`): kept by every commit, and
//! compared with what a read of a whole namespace finds, so that damage hiding rows from a
//! read (a flipped child pointer in a redb branch page, whose checksum redb checks only in its
//! integrity check) is an error, not a short answer.

use std::collections::{BTreeMap, HashMap};

use crate::tables::LazyTable;

use redb::{ReadableTable, WriteTransaction};

use crate::error::Error;
use crate::tables;

/// Every namespace's rows counted as stored: current rows by kind, and revisions (what
/// format 14's upgrade writes, and what the integrity check compares the counts with).
pub(crate) fn count(txn: &impl TablesReader) -> Result<BTreeMap<(String, u8), u64>, Error> {
    let mut out: BTreeMap<(String, u8), u64> = BTreeMap::new();
    txn.each_current_key(&mut |k| {
        match tables::split_current_key(k) {
            Some((ns, kind, _)) => *out.entry((ns.to_string(), kind)).or_insert(0) += 1,
            None => {
                return Err(Error::Inconsistent {
                    namespace: String::new(),
                    detail: "a malformed key in mnemon.live".into(),
                });
            }
        }
        Ok(())
    })?;
    txn.each_revision_namespace(&mut |ns| {
        *out.entry((ns.to_string(), tables::COUNTED_REVISIONS)).or_insert(0) += 1;
    })?;
    Ok(out)
}

/// The two tables [`count`] reads, from a write or a read transaction.
pub(crate) trait TablesReader {
    fn each_current_key(&self, f: &mut dyn FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error>;
    fn each_revision_namespace(&self, f: &mut dyn FnMut(&str)) -> Result<(), Error>;
}

fn each_current<T: ReadableTable<&'static [u8], &'static [u8]>>(
    t: &T,
    f: &mut dyn FnMut(&[u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    for r in t.range::<&[u8]>(..)? {
        f(r?.0.value())?;
    }
    Ok(())
}

fn each_revision<T: ReadableTable<tables::RevKey, &'static [u8]>>(
    t: &T,
    f: &mut dyn FnMut(&str),
) -> Result<(), Error> {
    for r in t.range::<tables::RevKey>(..)? {
        f(r?.0.value().0);
    }
    Ok(())
}

impl TablesReader for WriteTransaction {
    fn each_current_key(&self, f: &mut dyn FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error> {
        each_current(&self.open_table(tables::CURRENT)?, f)
    }
    fn each_revision_namespace(&self, f: &mut dyn FnMut(&str)) -> Result<(), Error> {
        each_revision(&self.open_table(tables::REVISIONS)?, f)
    }
}

impl TablesReader for redb::ReadTransaction {
    fn each_current_key(&self, f: &mut dyn FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error> {
        each_current(&self.open_table(tables::CURRENT)?, f)
    }
    fn each_revision_namespace(&self, f: &mut dyn FnMut(&str)) -> Result<(), Error> {
        each_revision(&self.open_table(tables::REVISIONS)?, f)
    }
}

/// `mnemon.counts` as a commit changes it: the changes summed as the commit goes, written at
/// its end, one row per namespace and kind touched.
pub(crate) struct Counts<'txn> {
    table: LazyTable<'txn, (&'static str, u8), u64>,
    changes: HashMap<(String, u8), i64>,
}

impl<'txn> Counts<'txn> {
    pub(crate) fn new(txn: &'txn WriteTransaction) -> Self {
        Counts { table: LazyTable::new(txn, tables::COUNTS), changes: HashMap::new() }
    }

    /// Add `by` to namespace `ns`'s count of `what` (a kind's code, or
    /// [`tables::COUNTED_REVISIONS`]).
    pub(crate) fn add(&mut self, ns: &str, what: u8, by: i64) {
        *self.changes.entry((ns.to_string(), what)).or_insert(0) += by;
    }

    /// Write the changes (a count that would fall below zero is an inconsistency: the file's
    /// counts and rows disagree).
    pub(crate) fn flush(&mut self) -> Result<(), Error> {
        if self.changes.values().all(|n| *n == 0) {
            self.changes.clear();
            return Ok(());
        }
        let table = self.table.get_mut()?;
        for ((ns, what), by) in self.changes.drain() {
            if by == 0 {
                continue;
            }
            let now = table.get((ns.as_str(), what))?.map_or(0, |v| v.value());
            let next =
                i64::try_from(now).ok().and_then(|n| n.checked_add(by)).and_then(|n| u64::try_from(n).ok());
            match next {
                Some(0) => {
                    table.remove((ns.as_str(), what))?;
                }
                Some(n) => {
                    table.insert((ns.as_str(), what), n)?;
                }
                None => {
                    return Err(Error::Inconsistent {
                        namespace: ns,
                        detail: format!(
                            "mnemon.counts holds {now} rows of {what}, and a commit removes {}",
                            -by
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// What a `what` of `mnemon.counts` counts, for messages.
pub(crate) fn what_name(what: u8) -> String {
    match what {
        tables::COUNTED_REVISIONS => "revisions".to_string(),
        kind => match crate::kind::Kind::from_code(kind) {
            Some(k) => format!("current {k} rows"),
            None => format!("current rows of kind {kind}"),
        },
    }
}

/// A namespace's counts of `whats`, summed (`None` in a file without counts: a format before
/// 14 opened read-only).
pub(crate) fn expected(txn: &redb::ReadTransaction, ns: &str, whats: &[u8]) -> Result<Option<u64>, Error> {
    let table = match txn.open_table(tables::COUNTS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut sum = 0u64;
    for what in whats {
        sum = sum.saturating_add(table.get((ns, *what))?.map_or(0, |v| v.value()));
    }
    Ok(Some(sum))
}

/// Every namespace's count of revisions (`None` in a file without counts).
pub(crate) fn revisions(txn: &redb::ReadTransaction) -> Result<Option<BTreeMap<String, u64>>, Error> {
    let table = match txn.open_table(tables::COUNTS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut out = BTreeMap::new();
    for r in table.range::<(&str, u8)>(..)? {
        let (k, v) = r?;
        let (ns, what) = k.value();
        if what == tables::COUNTED_REVISIONS {
            out.insert(ns.to_string(), v.value());
        }
    }
    Ok(Some(out))
}

/// The error of a read of a whole namespace that found `read` rows of `what` where the file
/// counts `counted`: rows hidden by damage (or, more rarely, counted twice).
pub(crate) fn mismatch(ns: &str, what: &str, read: u64, counted: u64) -> Error {
    Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!(
            "a read of {what} found {read} where mnemon.counts holds {counted}: the file is damaged (run `mnemon check`)"
        ),
    }
}
