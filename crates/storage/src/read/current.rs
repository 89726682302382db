//! The current-rows table, read newest id first across kinds.

use crate::error::Error;
use crate::id::RecordId;
use crate::tables::{self, names};
use redb::ReadableTable;

/// The current rows of some kinds of a namespace, newest id first across the kinds: one cursor
/// per kind runs backwards from the kind's last key, and several are merged by id (most
/// namespaces hold few kinds, so the empty kinds are dropped first and a listing of one kind
/// is a plain backward scan). Cursors rather than ranges: redb finds both ends of a range, a
/// cursor only its start, and a listing of every kind starts one per kind.
pub(super) struct CurrentRows<'t> {
    kinds: Vec<KindRows<'t>>,
}

/// One kind's current rows, read backwards: the row read next, and the cursor before it.
pub(super) struct KindRows<'t> {
    /// The kind's code.
    kind: u8,
    head: CurrentRow<'t>,
    cursor: redb::Cursor<'t, &'static [u8], &'static [u8]>,
    /// The kind's lowest key: a key below it belongs to another kind.
    lo: Vec<u8>,
}

/// A current row: the record's id and the stored row.
pub(super) type CurrentRow<'t> = (u128, redb::AccessGuard<'t, &'static [u8]>);
/// A current row with the kind of its key: `(id, kind, row)`.
pub(super) type KindedRow<'t> = (u128, u8, redb::AccessGuard<'t, &'static [u8]>);

/// The id of a current row's key: its last 16 bytes.
pub(super) fn current_key_id(key: &[u8]) -> Option<u128> {
    let start = key.len().checked_sub(16)?;
    key.get(start..).and_then(|b| b.try_into().ok()).map(u128::from_be_bytes)
}

pub(super) fn bad_current_key() -> Error {
    Error::Codec {
        table: names::CURRENT,
        source: crate::error::CodecError::Decode { what: "current key", reason: "truncated".to_string() },
    }
}

/// The row before `cursor`'s position, if it still has a key of at least `lo`.
pub(super) fn previous_row<'t>(
    cursor: &mut redb::Cursor<'t, &'static [u8], &'static [u8]>,
    lo: &[u8],
) -> Result<Option<CurrentRow<'t>>, Error> {
    match cursor.prev()? {
        Some((key, row)) if key.value() >= lo => {
            Ok(Some((current_key_id(key.value()).ok_or_else(bad_current_key)?, row)))
        }
        _ => Ok(None),
    }
}

impl<'t> CurrentRows<'t> {
    /// The rows of kinds `codes`, of ids below `before` if given.
    pub(super) fn open(
        t: &'t redb::ReadOnlyTable<&'static [u8], &'static [u8]>,
        ns: &str,
        codes: &[u8],
        before: Option<RecordId>,
    ) -> Result<Self, Error> {
        let mut kinds = Vec::with_capacity(codes.len());
        for &c in codes {
            let (lo, hi) = tables::current_kind_range(ns, c);
            let end = before.map(|b| tables::current_key(ns, c, b.as_u128()));
            let bound = match &end {
                Some(e) => std::ops::Bound::Excluded(e.as_slice()),
                None => std::ops::Bound::Included(hi.as_slice()),
            };
            let mut cursor = t.upper_bound(bound)?;
            if let Some(head) = previous_row(&mut cursor, &lo)? {
                kinds.push(KindRows { kind: c, head, cursor, lo });
            }
        }
        Ok(CurrentRows { kinds })
    }

    /// The next row, `(id, kind of its key, row)`.
    pub(super) fn next(&mut self) -> Result<Option<KindedRow<'t>>, Error> {
        // The kind whose next row has the highest id.
        let Some(i) = self.kinds.iter().enumerate().max_by_key(|(_, k)| k.head.0).map(|(i, _)| i) else {
            return Ok(None);
        };
        let Some(kind) = self.kinds.get_mut(i) else { return Ok(None) };
        let code = kind.kind;
        let (id, row) = match previous_row(&mut kind.cursor, &kind.lo)? {
            Some(row) => std::mem::replace(&mut kind.head, row),
            None => self.kinds.swap_remove(i).head,
        };
        Ok(Some((id, code, row)))
    }
}
