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

/// `(namespace, id, recorded_at, rev) -> revision`: every revision ever written (until forgotten).
/// Ordering by `recorded_at` inside a record makes "the revision current at K" one descent.
pub(crate) const REVISIONS: TableDefinition<(&str, u128, i64, u32), &[u8]> =
    TableDefinition::new("mnemon.revisions");

/// `(namespace, kind, id) -> latest revision`: records whose latest revision is still visible
/// after the last sweep. The fast path for "valid now, as known now".
pub(crate) const CURRENT: TableDefinition<(&str, u8, u128), &[u8]> = TableDefinition::new("mnemon.current");

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

/// `(namespace, term, id, from_rev) -> [1][tf u32][doc length u32]`: the lexical index's
/// postings (see `lexical.rs`).
pub(crate) const POSTINGS: TableDefinition<(&str, &str, u128, u32), &[u8]> =
    TableDefinition::new("mnemon.postings");

/// `(namespace, id, from_rev) -> [1][0 u32][doc length u32]`: the revisions that start a new
/// text of a record.
pub(crate) const TEXTS: TableDefinition<(&str, u128, u32), &[u8]> = TableDefinition::new("mnemon.texts");

/// `(namespace, id, from_rev) -> [1][doc length u32][terms u32]([tf u32][length u16][term])*`:
/// texts not yet merged into `POSTINGS` (see `lexical.rs`).
pub(crate) const FRESH: TableDefinition<(&str, u128, u32), &[u8]> = TableDefinition::new("mnemon.fresh");

/// `namespace -> [2][texts u64][total length u64][fresh texts u64]`: BM25's collection
/// statistics, and how many texts are fresh (format 2 wrote `[1][texts][total]`).
pub(crate) const LEXSTATS: TableDefinition<&str, &[u8]> = TableDefinition::new("mnemon.lexstats");

/// Table names, for error messages.
pub(crate) mod names {
    pub(crate) const REVISIONS: &str = "mnemon.revisions";
    pub(crate) const CURRENT: &str = "mnemon.current";
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
