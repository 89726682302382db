//! The redb tables, as typed constants. The namespace is the first key component of every
//! per-record table, so a range scan inside one namespace cannot reach another.
//!
//! Byte-level layouts are in `docs/file-format.md`; keep the two in step.

use redb::TableDefinition;

/// `name -> value`: magic, format version, clocks and counters (see `format.rs`). A handful
/// of small rows, so the counters every commit updates share one small page.
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("mnemon.meta");

/// `commit_seq -> [1][bincode (tx, [(namespace, id)])]`: the commit log, what each commit
/// changed. Appended to, so a commit writes its tail. (Format 2 kept it in `META` under
/// `log/<seq>`, where a bulk commit's large entry beside the counters cost every later commit
/// a large page.)
pub(crate) const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("mnemon.log");

/// A key of [`REVISIONS`]: `(namespace, id, recorded at, revision)`.
pub(crate) type RevKey = (&'static str, u128, i64, u32);

/// `(namespace, id, recorded_at, rev) -> revision`: every revision ever written (until forgotten).
/// Ordering by `recorded_at` inside a record makes "the revision current at K" one descent.
pub(crate) const REVISIONS: TableDefinition<(&str, u128, i64, u32), &[u8]> =
    TableDefinition::new("mnemon.revisions");

/// `[namespace][0][kind][id] -> current row` (bytes ordered as the tuple `(namespace, kind,
/// id)`, see [`current_key`]): records whose latest revision is still visible after the last
/// sweep. The fast path for "valid now, as known now".
pub(crate) const CURRENT: TableDefinition<&[u8], &[u8]> = TableDefinition::new("mnemon.live");

/// Formats 1 to 4 kept the current rows under tuple keys `(namespace, kind, id)`; the upgrade to
/// format 5 moves them to [`CURRENT`] (byte keys compare with `memcmp` and decode for free).
pub(crate) const CURRENT_V4: TableDefinition<(&str, u8, u128), &[u8]> =
    TableDefinition::new("mnemon.current");

/// The key of a current row: the namespace's bytes, `0` (a namespace holds no control
/// character), the kind's code, the id big-endian.
pub(crate) fn current_key(ns: &str, kind: u8, id: u128) -> smallvec::SmallVec<[u8; 64]> {
    let mut k = smallvec::SmallVec::with_capacity(ns.len() + 18);
    k.extend_from_slice(ns.as_bytes());
    k.push(0);
    k.push(kind);
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// How many rows a namespace holds (format 14): `(namespace, what) -> count`, where `what` is
/// a kind's code for its current rows in [`CURRENT`], or [`COUNTED_REVISIONS`] for its
/// stored revisions. A listing or export that reads a whole namespace compares what it read
/// with these, so that damage hiding rows from a read is an error, not a short answer.
pub(crate) const COUNTS: TableDefinition<(&str, u8), u64> = TableDefinition::new("mnemon.counts");
/// The `what` of [`COUNTS`] that counts a namespace's revisions.
pub(crate) const COUNTED_REVISIONS: u8 = u8::MAX;

/// The namespace and `(kind, id)` of a current row's key (`[namespace][0][kind][id]`).
pub(crate) fn split_current_key(k: &[u8]) -> Option<(&str, u8, u128)> {
    let ns_len = k.len().checked_sub(18)?;
    let ns = std::str::from_utf8(k.get(..ns_len)?).ok()?;
    let (kind, id) = parse_current_key(k, ns_len)?;
    Some((ns, kind, id))
}

/// The `(kind, id)` of a current row's key in a namespace of `ns_len` bytes.
pub(crate) fn parse_current_key(k: &[u8], ns_len: usize) -> Option<(u8, u128)> {
    let rest = k.get(ns_len + 1..)?;
    let (&kind, id) = rest.split_first()?;
    Some((kind, u128::from_be_bytes(id.try_into().ok()?)))
}

/// The first (inclusive) and last (inclusive) keys of namespace `ns`'s rows of `kind` in
/// [`CURRENT`].
pub(crate) fn current_kind_range(ns: &str, kind: u8) -> (Vec<u8>, Vec<u8>) {
    (current_key(ns, kind, 0).to_vec(), current_key(ns, kind, u128::MAX).to_vec())
}

/// Every key of namespace `ns` in a byte-keyed table: from the first (inclusive) to the last
/// (exclusive).
pub(crate) fn namespace_range(ns: &str) -> (Vec<u8>, Vec<u8>) {
    let mut lo = ns.as_bytes().to_vec();
    lo.push(0);
    let mut hi = ns.as_bytes().to_vec();
    hi.push(1);
    (lo, hi)
}

/// `[namespace][0][level][visible_until][id] -> [kind][CURRENT row]` (bytes ordered as the
/// tuple `(namespace, level, visible_until, id)`; see `ended::key`): the latest revision of
/// every record whose visibility ended by the last sweep, filed by the interval's length (level
/// `L` holds lengths up to `2^L` microseconds), so "valid at V, as known now" scans a short key
/// range per level instead of seeking each record's revision (see `ended.rs`).
pub(crate) const ENDED: TableDefinition<&[u8], &[u8]> = TableDefinition::new("mnemon.ended");

/// `(visible_until, namespace, kind, id) -> ()`: when `CURRENT` rows stop being visible, so each
/// commit can sweep the rows whose end has passed.
pub(crate) const CURRENT_ENDS: TableDefinition<(i64, &str, u8, u128), ()> =
    TableDefinition::new("mnemon.current_ends");

/// `(namespace, valid_time, id, edge) -> [kind, transaction-time spans]`: the valid-time event
/// log. Edge 1 is "becomes visible", 0 "stops being visible"; the spans say during which
/// transaction times the event was believed.
pub(crate) const EVENTS: TableDefinition<(&str, i64, u128, u8), &[u8]> =
    TableDefinition::new("mnemon.events");

/// `(namespace, valid_time) -> checkpoint row`: checkpoints of the live set on the valid-time
/// axis; each row also counts the events in the gap that follows it.
pub(crate) const CHECKPOINTS: TableDefinition<(&str, i64), &[u8]> =
    TableDefinition::new("mnemon.checkpoints");

/// `(namespace, checkpoint_time, id) -> [kind, transaction-time spans]`: the records visible at
/// a checkpoint, and during which transaction times that was believed.
pub(crate) const CHECKPOINT_ENTRIES: TableDefinition<(&str, i64, u128), &[u8]> =
    TableDefinition::new("mnemon.checkpoint_entries");

/// `(namespace, kind, normalised key) -> id`: the live record holding each identity key.
pub(crate) const IDENTITY: TableDefinition<(&str, u8, &str), u128> = TableDefinition::new("mnemon.identity");

/// `namespace -> first transaction time`: the registry of namespaces (written once each).
pub(crate) const NAMESPACES: TableDefinition<&str, &[u8]> = TableDefinition::new("mnemon.namespaces");

/// `(space, namespace, id, from_rev) -> [1][f32 LE ...]`: embedding vectors, unit length. A
/// vector serves revision `from_rev` of the record and every later one until the next row.
pub(crate) const VECTORS: TableDefinition<(&str, &str, u128, u32), &[u8]> =
    TableDefinition::new("mnemon.vectors");

/// `space -> [1][dimension u32 LE][created i64 LE]`: the vector spaces (one per embedding model).
pub(crate) const VECTOR_SPACES: TableDefinition<&str, &[u8]> = TableDefinition::new("mnemon.vector_spaces");

/// `key -> bytes`: small rows owned by the layers above storage (the vector index manifest,
/// the embedder record), written through the same commits as the records.
pub(crate) const AUX: TableDefinition<&str, &[u8]> = TableDefinition::new("mnemon.aux");

/// `key -> bytes`: the auxiliary rows under `auth/` (a server's access tokens, as hashes), in
/// a table of their own: no listing, export or statistic of the other rows reads them.
pub(crate) const AUTH: TableDefinition<&str, &[u8]> = TableDefinition::new("mnemon.auth");

/// Whether auxiliary row `key` (or the rows under prefix `key`) is kept in [`AUTH`].
pub(crate) fn is_auth_key(key: &str) -> bool {
    key.starts_with("auth/")
}

/// The table holding auxiliary row `key` (or the rows under prefix `key`).
pub(crate) fn aux_table(key: &str) -> TableDefinition<'static, &'static str, &'static [u8]> {
    if is_auth_key(key) { AUTH } else { AUX }
}

/// `(namespace, term, id, from_rev) -> [1][tf u32][doc length u32]`: the lexical index's
/// postings (see `lexical/`).
pub(crate) const POSTINGS: TableDefinition<(&str, &str, u128, u32), &[u8]> =
    TableDefinition::new("mnemon.postings");

/// `(namespace, segment, first term, part) -> block`: the postings of merged texts not yet in
/// `POSTINGS`, one segment per merge, each in blocks of about 32 KiB holding many terms'
/// postings; a segment's number holds its level above bit 56, and a level's
/// [`crate::lexical::SEGMENT_FANOUT`] segments are merged into one of the next level (format
/// 10; see `lexical/`).
pub(crate) const SEGMENTS: TableDefinition<(&str, u64, &str, u32), &[u8]> =
    TableDefinition::new("mnemon.segment_blocks");

/// `(namespace, segment, part) -> [1]([id u128][from_rev u32])*`: the keys of a segment's
/// texts in order, 800 per part; a block's postings name a text by its place in this list
/// (format 15; see `lexical/numbers.rs`).
pub(crate) const SEGMENT_TEXTS: TableDefinition<(&str, u64, u32), &[u8]> =
    TableDefinition::new("mnemon.segment_texts");

/// Format 9's segments: `(namespace, segment, term, part) -> [1]([id u128][from_rev
/// u32][tf u32][doc length u32])*`, one row per term of a segment (in parts of at most 512
/// postings). Read from a format-9 file opened read-only; the upgrade to format 10 moves them
/// into [`SEGMENTS`]' blocks and drops the table.
pub(crate) const SEGMENTS_V9: TableDefinition<(&str, u64, &str, u32), &[u8]> =
    TableDefinition::new("mnemon.segment_terms");

/// Format 8's segments, one row per posting: `(namespace, segment, term, id, from_rev) ->
/// [1][tf u32][doc length u32]`. Read from a format-8 file opened read-only; the upgrade to
/// format 10 moves them into [`SEGMENTS`]' blocks and drops the table.
pub(crate) const SEGMENTS_V8: TableDefinition<(&str, u64, &str, u128, u32), &[u8]> =
    TableDefinition::new("mnemon.segments");

/// `(namespace, id, from_rev) -> [1][0 u32][doc length u32]`: the revisions that start a new
/// text of a record, once the text is merged into `POSTINGS` (until then its row is in
/// `FRESH` only; see `lexical/`).
pub(crate) const TEXTS: TableDefinition<(&str, u128, u32), &[u8]> = TableDefinition::new("mnemon.texts");

/// `(namespace, id, from_rev) -> [1][doc length u32][terms u32]([tf u32][length u16][term])*`:
/// texts not yet merged into `POSTINGS` (see `lexical/`).
pub(crate) const FRESH: TableDefinition<(&str, u128, u32), &[u8]> = TableDefinition::new("mnemon.fresh");

/// `namespace -> [2][texts u64][total length u64][fresh texts u64]`: BM25's collection
/// statistics, and how many texts are fresh (format 2 wrote `[1][texts][total]`).
pub(crate) const LEXSTATS: TableDefinition<&str, &[u8]> = TableDefinition::new("mnemon.lexstats");

/// Table names, for error messages.
pub(crate) mod names {
    pub(crate) const REVISIONS: &str = "mnemon.revisions";
    pub(crate) const CURRENT: &str = "mnemon.live";
    pub(crate) const ENDED: &str = "mnemon.ended";
    pub(crate) const EVENTS: &str = "mnemon.events";
    pub(crate) const CHECKPOINTS: &str = "mnemon.checkpoints";
    pub(crate) const CHECKPOINT_ENTRIES: &str = "mnemon.checkpoint_entries";
    pub(crate) const NAMESPACES: &str = "mnemon.namespaces";
    pub(crate) const META: &str = "mnemon.meta";
    pub(crate) const LOG: &str = "mnemon.log";
    pub(crate) const VECTORS: &str = "mnemon.vectors";
    pub(crate) const VECTOR_SPACES: &str = "mnemon.vector_spaces";
}

/// A table of a write transaction opened on first use. Every table a commit opens costs it a
/// lookup in redb's table tree when opened and another when the commit finishes, even if it is
/// never written; a commit of plain inserts never touches vectors, identities, auxiliary rows,
/// posting lists (between merges) or checkpoint entries (between splits).
pub(crate) struct LazyTable<'txn, K: redb::Key + 'static, V: redb::Value + 'static> {
    txn: &'txn redb::WriteTransaction,
    def: TableDefinition<'static, K, V>,
    table: std::cell::OnceCell<redb::Table<'txn, K, V>>,
}

impl<'txn, K: redb::Key + 'static, V: redb::Value + 'static> LazyTable<'txn, K, V> {
    pub(crate) fn new(txn: &'txn redb::WriteTransaction, def: TableDefinition<'static, K, V>) -> Self {
        LazyTable { txn, def, table: std::cell::OnceCell::new() }
    }

    /// The table, for reading.
    pub(crate) fn get(&self) -> Result<&redb::Table<'txn, K, V>, redb::TableError> {
        if let Some(t) = self.table.get() {
            return Ok(t);
        }
        let t = self.txn.open_table(self.def)?;
        Ok(self.table.get_or_init(|| t))
    }

    /// The table, for writing.
    pub(crate) fn get_mut(&mut self) -> Result<&mut redb::Table<'txn, K, V>, redb::TableError> {
        if self.table.get().is_none() {
            let t = self.txn.open_table(self.def)?;
            // Empty a moment ago, and `&mut self` excludes any other caller: `set` succeeds.
            let _ = self.table.set(t);
        }
        // Set just above when it was empty.
        self.table.get_mut().ok_or_else(|| redb::TableError::TableDoesNotExist(self.def.to_string()))
    }
}

/// Below this many rows, [`insert_sorted`] inserts them one by one. redb splices a cursor's
/// run by rebuilding the leaf, which costs more than a few in-place inserts: callgrind, `profile
/// many N` (commits of N one-record jobs), with the deferred tables' runs of N rows: a cursor
/// for runs of 4 cost 12 % more instructions than plain inserts, for 8 about the same, for 16
/// 9 % less (and 21 % less with the lexical merge's long runs). But a spliced run that
/// overflows the last leaf splits it in halves, so tables appended to by such runs keep their
/// leaves half full (`examples/table_stats.rs` after `profile many 16`: 41 % to 67 % full,
/// where one-by-one appends fill them to 81 % to 92 %), and every commit writes about one page
/// more to the file and to the fsync. Group commits of a few dozen records therefore insert
/// one by one (4.5 % more CPU for a commit of 16, the same wall time); the long runs of bulk
/// commits and merges still go through a cursor.
pub(crate) const FEW_ROWS: usize = 64;

/// Insert rows given in ascending key order (equal keys: the later row wins, as with repeated
/// [`redb::Table::insert`]). Consecutive rows that fall into one gap of the table, such as a
/// term's new postings after its old ones, go through one cursor, whose buffered inserts
/// redb splices into a leaf together; a row that does not fit the cursor's gap starts a new
/// descent. Rows out of order are still inserted correctly, only without the saving.
pub(crate) fn insert_sorted<'r, K: redb::Key + 'static, V: redb::Value + 'static>(
    table: &mut redb::Table<'_, K, V>,
    rows: impl ExactSizeIterator<Item = (K::SelfType<'r>, V::SelfType<'r>)>,
) -> Result<(), redb::StorageError> {
    if rows.len() < FEW_ROWS {
        // A commit of a few records: a cursor would cost more than it saves.
        for (key, value) in rows {
            table.insert(&key, &value)?;
        }
        return Ok(());
    }
    let mut rows = rows.peekable();
    while let Some((key, value)) = rows.next() {
        if rows.peek().is_none() {
            // A last row alone: a cursor would cost more than it saves.
            table.insert(&key, &value)?;
            break;
        }
        let mut c = table.lower_bound_mut(std::ops::Bound::Included(&key))?;
        match c.insert_before(&key, &value) {
            Ok(()) => {
                // The run continues while the next rows fit the same gap.
                while let Some((k, v)) = rows.peek() {
                    match c.insert_before(k, v) {
                        Ok(()) => {
                            rows.next();
                        }
                        Err(redb::CursorError::UnorderedKey) => break,
                        Err(e) => return Err(cursor_error(e)),
                    }
                }
                c.close()?;
            }
            // The key is already in the table (the gap is just before it): overwrite it.
            Err(redb::CursorError::UnorderedKey) => {
                c.close()?;
                table.insert(&key, &value)?;
            }
            Err(e) => return Err(cursor_error(e)),
        }
    }
    Ok(())
}

/// A cursor's storage error as it is (the other variant, an unordered key, is handled where
/// it can occur).
fn cursor_error(e: redb::CursorError) -> redb::StorageError {
    match e {
        redb::CursorError::Storage(e) => e,
        other => redb::StorageError::Io(std::io::Error::other(other.to_string())),
    }
}

/// A table whose plain inserts, after the first [`FEW_ROWS`] of a transaction (which go in at
/// once), wait until the end of the commit (or the first other use of the table), then go in
/// key order through [`insert_sorted`]: the rows of a bulk commit's records mostly sit side by
/// side (ids and transaction times grow), so they cost one descent and one leaf rebuild per
/// run instead of one each. Everything else (reads, removals) goes through
/// [`Deferred::table`], which applies the waiting inserts first, so the transaction never sees
/// the table without them.
pub(crate) struct Deferred<'txn, K: redb::Key + 'static, V: redb::Value + 'static> {
    table: redb::Table<'txn, K, V>,
    /// Encoded `(key, value)` rows, in the order they were inserted.
    rows: Vec<(Vec<u8>, Vec<u8>)>,
    /// Inserts so far in this transaction.
    seen: usize,
}

impl<'txn, K: redb::Key + 'static, V: redb::Value + 'static> Deferred<'txn, K, V> {
    /// Waiting rows beyond which an insert applies them (a bulk commit's memory stays bounded).
    const LIMIT: usize = 4096;

    pub(crate) fn new(table: redb::Table<'txn, K, V>) -> Self {
        Deferred { table, rows: Vec::new(), seen: 0 }
    }

    /// Insert a row: at once while the transaction has inserted fewer than [`FEW_ROWS`]
    /// through this table, else when the waiting rows are applied. A later insert of an equal
    /// key wins.
    pub(crate) fn insert<'k, 'v>(
        &mut self,
        key: impl std::borrow::Borrow<K::SelfType<'k>>,
        value: impl std::borrow::Borrow<V::SelfType<'v>>,
    ) -> Result<(), redb::StorageError> {
        self.seen += 1;
        if self.seen <= FEW_ROWS {
            // Held back, so few rows would go in one by one all the same (`insert_sorted`),
            // only later: at the end of the commit, after its last job, where they delay the
            // fsync and every caller waiting for it. Now they go in while the commit's later
            // jobs are still on their way, and without being encoded, sorted and decoded.
            self.table.insert(key, value)?;
            return Ok(());
        }
        let k = K::as_bytes(key.borrow()).as_ref().to_vec();
        let v = V::as_bytes(value.borrow()).as_ref().to_vec();
        self.rows.push((k, v));
        if self.rows.len() >= Self::LIMIT {
            self.flush()?;
        }
        Ok(())
    }

    /// The table with every waiting insert applied.
    pub(crate) fn table(&mut self) -> Result<&mut redb::Table<'txn, K, V>, redb::StorageError> {
        self.flush()?;
        Ok(&mut self.table)
    }

    /// Apply the waiting inserts, in key order (stable: equal keys keep their order, so the
    /// last one wins).
    pub(crate) fn flush(&mut self) -> Result<(), redb::StorageError> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let mut rows = std::mem::take(&mut self.rows);
        rows.sort_by(|a, b| K::compare(&a.0, &b.0));
        insert_sorted(&mut self.table, rows.iter().map(|(k, v)| (K::from_bytes(k), V::from_bytes(v))))
    }
}

/// Create every table that does not exist yet. Commits open some tables only when they
/// write to them, and readers take a missing table for an older format: a new or upgraded
/// file has all of them.
pub(crate) fn create_all(txn: &redb::WriteTransaction) -> Result<(), crate::error::Error> {
    txn.open_table(META)?;
    txn.open_table(LOG)?;
    txn.open_table(REVISIONS)?;
    txn.open_table(CURRENT)?;
    txn.open_table(CURRENT_ENDS)?;
    txn.open_table(ENDED)?;
    txn.open_table(EVENTS)?;
    txn.open_table(CHECKPOINTS)?;
    txn.open_table(CHECKPOINT_ENTRIES)?;
    txn.open_table(IDENTITY)?;
    txn.open_table(NAMESPACES)?;
    txn.open_table(VECTORS)?;
    txn.open_table(VECTOR_SPACES)?;
    txn.open_table(AUX)?;
    txn.open_table(POSTINGS)?;
    txn.open_table(SEGMENTS)?;
    txn.open_table(SEGMENT_TEXTS)?;
    txn.open_table(TEXTS)?;
    txn.open_table(LEXSTATS)?;
    txn.open_table(FRESH)?;
    txn.open_table(COUNTS)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use redb::{ReadableDatabase, ReadableTable, TableDefinition};

    use super::{Deferred, insert_sorted};

    const T: TableDefinition<(&str, u64), u64> = TableDefinition::new("t");

    fn contents(table: &impl ReadableTable<(&'static str, u64), u64>) -> BTreeMap<(String, u64), u64> {
        table
            .iter()
            .unwrap()
            .map(|r| {
                let (k, v) = r.unwrap();
                let (s, n) = k.value();
                ((s.to_string(), n), v.value())
            })
            .collect()
    }

    /// A table holding `before`, then `rows` put in sorted through `insert_sorted` (or in any
    /// order through `Deferred`), against a map that got the same rows one `insert` at a time;
    /// also after the commit, read back from the file.
    fn check(before: &[(u64, u64)], rows: &[(bool, u64, u64)], deferred: bool) {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("t.redb")).unwrap();
        let mut model = BTreeMap::new();
        let name = |b: bool| if b { "b" } else { "a" };
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(T).unwrap();
            for &(k, v) in before {
                t.insert(("a", k), v).unwrap();
                model.insert(("a".to_string(), k), v);
            }
            for &(b, k, v) in rows {
                model.insert((name(b).to_string(), k), v);
            }
            if deferred {
                let mut d = Deferred::new(t);
                for &(b, k, v) in rows {
                    d.insert((name(b), k), v).unwrap();
                }
                assert_eq!(contents(d.table().unwrap()), model);
            } else {
                let mut sorted: Vec<(bool, u64, u64)> = rows.to_vec();
                sorted.sort_by_key(|&(b, k, _)| (name(b), k));
                insert_sorted(&mut t, sorted.iter().map(|&(b, k, v)| ((name(b), k), v))).unwrap();
                assert_eq!(contents(&t), model);
            }
        }
        txn.commit().unwrap();
        let read = db.begin_read().unwrap();
        assert_eq!(contents(&read.open_table(T).unwrap()), model);
    }

    #[test]
    fn runs_gaps_overwrites_and_repeats() {
        let before: Vec<(u64, u64)> = (0..400).step_by(2).map(|k| (k, 1)).collect();
        let mut rows = Vec::new();
        // A run inside one gap's neighbourhood, then keys already there, then past the end,
        // then the same key twice (the later wins), then another table range.
        rows.extend((101..160).step_by(2).map(|k| (false, k, 2)));
        rows.extend([(false, 10, 3), (false, 12, 3), (false, 12, 4)]);
        rows.extend((1000..1300).map(|k| (false, k, 5)));
        rows.extend((0..50).map(|k| (true, k, 6)));
        check(&before, &rows, false);
        check(&before, &rows, true);
        check(&[], &rows, true);
    }

    /// `f` given a `Deferred` over table `T` of a new file, in a transaction then committed.
    fn with_deferred(f: impl FnOnce(&mut Deferred<'_, (&'static str, u64), u64>)) {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("t.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut d = Deferred::new(txn.open_table(T).unwrap());
            f(&mut d);
            d.flush().unwrap();
        }
        txn.commit().unwrap();
    }

    #[test]
    fn deferred_inserts_beyond_the_limit_and_before_a_removal() {
        with_deferred(|d| {
            let n = Deferred::<(&str, u64), u64>::LIMIT as u64 + 10;
            for k in (0..n).rev() {
                d.insert(("a", k), k).unwrap();
            }
            // Inserted a moment ago and still waiting: removed all the same.
            d.insert(("a", n + 5), 1).unwrap();
            assert_eq!(d.table().unwrap().remove(("a", n + 5)).unwrap().map(|v| v.value()), Some(1));
            d.insert(("a", 3), 30).unwrap();
            d.flush().unwrap();
            let all = contents(d.table().unwrap());
            assert_eq!(all.len() as u64, n);
            assert_eq!(all.get(&("a".to_string(), 3)), Some(&30));
            assert_eq!(all.get(&("a".to_string(), n - 1)), Some(&(n - 1)));
        });
    }

    #[test]
    fn deferred_rows_after_the_first_few_win_over_them() {
        with_deferred(|d| {
            let few = super::FEW_ROWS as u64;
            // The first rows go in at once; the same keys again wait, and win when applied.
            for k in 0..few {
                d.insert(("a", k), 1).unwrap();
            }
            assert_eq!(d.rows.len(), 0);
            for k in (0..few).rev() {
                d.insert(("a", k), 2).unwrap();
            }
            assert_eq!(d.rows.len() as u64, few);
            let all = contents(d.table().unwrap());
            assert_eq!(all.len() as u64, few);
            assert!(all.values().all(|&v| v == 2));
        });
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        #[test]
        fn sorted_inserts_match_plain_inserts(
            before in proptest::collection::vec((0u64..300, 0u64..5), 0..200),
            rows in proptest::collection::vec((any::<bool>(), 0u64..300, 0u64..5), 0..200),
            deferred in any::<bool>(),
        ) {
            check(&before, &rows, deferred);
        }
    }
}
