//! Erasure: every record of a namespace (or those of some kinds, with some tags) removed for
//! good, with every revision, vector and index entry, so that no reading, at any valid or
//! transaction time, sees them again; and an audit record that says it happened without
//! saying what was erased. What a data-deletion request needs, where retiring (the record
//! stays in the history, time travel still sees it) is not enough.
//!
//! ```
//! use mnemon::Db;
//! use mnemon::body::Learning;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let db = Db::create(dir.path().join("memory.redb"))?;
//! let ns = db.ns("user:42")?;
//! ns.add(Learning { text: "likes tea".into(), ..Default::default() })?;
//! let done = db.erase("user:42", &[], &[])?;
//! assert_eq!((done.records, done.revisions), (1, 1));
//! assert!(db.ns("user:42")?.history(done.erased[0])?.is_empty());
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;

use mnemon_storage::body::Learning;
use mnemon_storage::{Kind, Namespace, NewRecord, Outcome, RecordId, WriteOp};

use crate::Db;
use crate::error::Result;

/// The namespace the audit records of erasures go to.
pub const AUDIT_NAMESPACE: &str = "mnemon:erasures";
/// The tag of an audit record.
const AUDIT_TAG: &str = "erasure";
/// Records erased per commit: a large namespace goes in several (running it again after a
/// crash finishes the work).
const CHUNK: usize = 1_000;

/// What an erasure did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Erasure {
    /// The records erased.
    pub records: u64,
    /// Their revisions, all erased.
    pub revisions: u64,
    /// The ids erased.
    pub erased: Vec<RecordId>,
    /// The audit record (in [`AUDIT_NAMESPACE`]), if anything was erased.
    pub audit: Option<RecordId>,
}

impl Db {
    /// Erase, for good, every record of namespace `ns` of one of `kinds` (any kind if empty)
    /// whose latest revision carries every tag of `tags`: all their revisions, vectors and
    /// index entries. With no kinds and no tags, the namespace's application rows (episodes'
    /// access counts, merged entities' names) go too. Then an audit record goes to
    /// [`AUDIT_NAMESPACE`] with the counts, the kinds, and the BLAKE3 hashes of the namespace
    /// and the tags (not their names, which may be the personal data erased).
    pub fn erase(&self, ns: &str, kinds: &[Kind], tags: &[String]) -> Result<Erasure> {
        self.erase_where(ns, kinds, tags, None)
    }

    /// [`Db::erase`], keeping to the records whose latest revision also passes `filter` (the
    /// `where` language of [`crate::filter`]).
    pub fn erase_where(
        &self,
        ns: &str,
        kinds: &[Kind],
        tags: &[String],
        filter: Option<&crate::filter::Where>,
    ) -> Result<Erasure> {
        let name = Namespace::new(ns)?;
        if ns == AUDIT_NAMESPACE {
            return Err(crate::error::invalid("the erasures' audit trail is not erased"));
        }
        let snap = self.db_for(ns)?.snapshot()?;
        // Whether each record's latest revision passes the filters.
        let mut latest: HashMap<RecordId, (u32, bool)> = HashMap::new();
        snap.for_each_revision(Some(&name), |r| {
            let entry = latest.entry(r.id).or_insert((0, false));
            if r.rev >= entry.0 {
                let passes = (kinds.is_empty() || kinds.contains(&r.kind()))
                    && tags.iter().all(|t| r.envelope.tags.iter().any(|h| h.as_str() == t))
                    && filter.is_none_or(|w| w.matches(&r));
                *entry = (r.rev, passes);
            }
            Ok(())
        })?;
        let mut ids: Vec<RecordId> =
            latest.into_iter().filter(|(_, (_, passes))| *passes).map(|(id, _)| id).collect();
        ids.sort_unstable();
        let mut revisions = 0u64;
        for chunk in ids.chunks(CHUNK) {
            let ops = chunk.iter().map(|id| WriteOp::Forget { namespace: name.clone(), id: *id }).collect();
            for outcome in self.write(ops)?.outcomes {
                if let Outcome::Forgotten { revisions: n, .. } = outcome {
                    revisions += u64::from(n);
                }
            }
        }
        if kinds.is_empty() && tags.is_empty() && filter.is_none() {
            let rows: Vec<WriteOp> = snap
                .aux_prefix("app/")?
                .into_iter()
                .filter(|(key, _)| app_row_of(key, ns))
                .map(|(key, _)| WriteOp::PutAux { key, value: None })
                .collect();
            if !rows.is_empty() {
                self.write(rows)?;
            }
        }
        let audit = if ids.is_empty() {
            None
        } else {
            Some(self.audit(ns, kinds, tags, filter.is_some(), ids.len(), revisions)?)
        };
        Ok(Erasure { records: ids.len() as u64, revisions, erased: ids, audit })
    }

    fn audit(
        &self,
        ns: &str,
        kinds: &[Kind],
        tags: &[String],
        filtered: bool,
        records: usize,
        revisions: u64,
    ) -> Result<RecordId> {
        let hash = |s: &str| blake3::hash(s.as_bytes()).to_hex().to_string();
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        let mut what = match (kinds.is_empty(), tags.is_empty()) {
            (true, true) => "every record".to_string(),
            (false, true) => format!("the {} records", names.join(", ")),
            (true, false) => format!("the records with {} given tag(s)", tags.len()),
            (false, false) => format!("the {} records with {} given tag(s)", names.join(", "), tags.len()),
        };
        if filtered {
            what = format!("{what} passing a filter");
        }
        let text = format!("erasure: {what} of a namespace: {records} records, {revisions} revisions");
        let meta = serde_json::json!({
            "erasure": {
                "namespace_blake3": hash(ns),
                "kinds": kinds.iter().map(|k| k.name()).collect::<Vec<_>>(),
                "tags_blake3": tags.iter().map(|t| hash(t)).collect::<Vec<_>>(),
                "filtered": filtered,
                "records": records,
                "revisions": revisions,
            }
        });
        let audit_ns = self.ns(AUDIT_NAMESPACE)?;
        let mut rec = NewRecord::new(audit_ns.name().clone(), Learning { text, ..Default::default() });
        rec.envelope.tags = vec![AUDIT_TAG.into()].into();
        rec.envelope.metadata = meta.into();
        Ok(audit_ns.insert(rec)?.id())
    }
}

/// Whether auxiliary row `key` (`app/<what>/<namespace>/<leaf>`) belongs to namespace `ns`.
fn app_row_of(key: &str, ns: &str) -> bool {
    key.strip_prefix("app/")
        .and_then(|k| k.split_once('/'))
        .and_then(|(_, rest)| rest.strip_prefix(ns))
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|leaf| !leaf.is_empty() && !leaf.contains('/'))
}
