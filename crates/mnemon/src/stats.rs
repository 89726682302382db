//! Database statistics.

use std::collections::BTreeMap;

use mnemon_storage::{FORMAT_VERSION, Kind, Namespace, Timestamp};
use serde::{Deserialize, Serialize};

use crate::db::Db;
use crate::error::{Error, Result};

/// Statistics of one namespace.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NamespaceStats {
    /// The namespace.
    #[schemars(with = "String")]
    pub namespace: Namespace,
    /// Records (all revisions of a record count once; forgotten ones not at all).
    pub records: u64,
    /// Revisions stored.
    pub revisions: u64,
    /// Records valid now or later, as known now, per kind.
    #[schemars(with = "BTreeMap<String, u64>")]
    pub current: BTreeMap<Kind, u64>,
}

/// Statistics of a database.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stats {
    /// The file.
    pub path: String,
    /// Its size in bytes.
    pub file_bytes: u64,
    /// The format version.
    pub format_version: u32,
    /// Commits so far.
    pub commits: u64,
    /// The latest transaction time, if anything was written.
    #[schemars(with = "Option<String>")]
    pub last_commit: Option<Timestamp>,
    /// Per namespace.
    pub namespaces: Vec<NamespaceStats>,
    /// Row counts of the internal tables.
    pub tables: BTreeMap<String, u64>,
    /// The embedder (model id) records are embedded with.
    pub embedder: String,
    /// Vector spaces and their dimensions.
    pub vector_spaces: Vec<(String, u32)>,
    /// The records whose vectors are still being attached in the background (see
    /// [`crate::DbBuilder::defer_embeddings`]).
    #[serde(default)]
    pub vectors_pending: crate::Backlog,
}

/// Compute the statistics (of every partition together, for a partitioned handle: sizes,
/// commits and rows summed, namespaces and vector spaces gathered, the latest commit; the path
/// is the partitions' paths joined by `;`).
pub fn stats(db: &Db) -> Result<Stats> {
    if db.is_partitioned() {
        let backlog = db.embed_backlog();
        let mut parts = db.partitions().iter().map(stats).collect::<Result<Vec<_>>>()?.into_iter();
        let Some(mut all) = parts.next() else { return Err(crate::error::invalid("no partitions")) };
        for s in parts {
            all.path = format!("{};{}", all.path, s.path);
            all.file_bytes += s.file_bytes;
            all.commits += s.commits;
            all.last_commit = all.last_commit.max(s.last_commit);
            all.namespaces.extend(s.namespaces);
            for (t, n) in s.tables {
                *all.tables.entry(t).or_insert(0) += n;
            }
            all.vector_spaces.extend(s.vector_spaces);
        }
        all.namespaces.sort_by(|a, b| a.namespace.cmp(&b.namespace));
        all.vector_spaces.sort();
        all.vector_spaces.dedup();
        all.vectors_pending = backlog;
        return Ok(all);
    }
    let snap = db.snapshot()?;
    let meta = snap.meta();
    let mut namespaces = Vec::new();
    for ns in snap.namespaces()? {
        let c = snap.namespace_counters(&ns)?;
        let current = snap.current_counts(&ns)?;
        namespaces.push(NamespaceStats {
            namespace: ns,
            records: c.records,
            revisions: c.revisions,
            current,
        });
    }
    let file_bytes = std::fs::metadata(db.path())
        .map_err(|e| Error::Io { path: db.path().to_path_buf(), source: e })?
        .len();
    Ok(Stats {
        path: db.path().display().to_string(),
        file_bytes,
        format_version: FORMAT_VERSION,
        commits: meta.commit_seq,
        last_commit: (meta.commit_seq > 0).then_some(meta.last_tx),
        namespaces,
        tables: snap.table_sizes()?.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        embedder: db.embedder().model_id().to_string(),
        vector_spaces: snap.vector_spaces()?.into_iter().map(|v| (v.name, v.dimension)).collect(),
        vectors_pending: db.embed_backlog(),
    })
}
