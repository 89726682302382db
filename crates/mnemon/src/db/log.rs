//! A database that is a replica of a replicated log: its writes go to the log.
//!
//! Every write of the facade (records, vectors, the application rows under `app/` that
//! exports carry, a server's tokens under `auth/` through [`Db::put_aux`]) reaches the store
//! through [`Db::write`] or [`Db::write_jobs`] once its
//! domain rules were checked and its texts embedded. A database opened with a [`WriteLog`]
//! hands those jobs to the log instead of committing them, and answers when the log has
//! taken them and this node has applied them (the log's applier commits them with
//! [`mnemon_storage::Store::write_at`], at the log's times, on every node alike). The jobs
//! carry everything decided on the way (record ids, embeddings, expected revisions), so
//! applying them needs no clock and no randomness. Maintenance that changes no record (the
//! merge of texts, index manifests, the embedder row) stays local.

use mnemon_storage::{Durability, Receipt, WriteOp};

use super::Db;
use crate::embedding::marked;
use crate::error::Result;

/// Where a replica's writes go (see the module documentation): implemented by the cluster's
/// node (crate `mnemon-cluster`).
pub trait WriteLog: Send + Sync + std::fmt::Debug {
    /// Append `jobs` (each atomic) to the log, and wait until this node has applied them:
    /// each job's result as the store gave it, or why the log did not take it (code
    /// `unavailable`). `durability` is the caller's wish; the log's own durability (a quorum
    /// of its servers) applies.
    fn append(&self, jobs: Vec<Vec<WriteOp>>, durability: Durability) -> Vec<Result<Receipt>>;
}

impl Db {
    /// Commit operations atomically and durably, as they are: no domain rule checked, no text
    /// embedded. The facade's writes go through here once they have done both; users write
    /// through [`super::Ns`] (or the operation layer), and a bulk load that embeds afterwards
    /// ([`Db::reindex`]) through [`Db::store`]. On a replica, appended to its log.
    pub(crate) fn write(&self, ops: Vec<WriteOp>) -> Result<Receipt> {
        if self.is_partitioned() {
            return self.partition_of_ops(&ops)?.write(ops);
        }
        match &self.log {
            Some(log) => log.append(vec![ops], self.store.durability()).pop().unwrap_or_else(|| {
                Err(crate::error::Error::Storage(mnemon_storage::Error::CommitFailed {
                    path: self.path().to_path_buf(),
                    reason: "the log returned no result".into(),
                }))
            }),
            None => {
                let marks = if self.deferred.is_some() { marked(&ops).collect() } else { Vec::new() };
                let receipt = self.store.write(ops)?;
                self.queue_marked(marks);
                Ok(receipt)
            }
        }
    }

    /// Set (`Some`) or delete (`None`) an auxiliary row of a layer above the facade: a
    /// server's access tokens (`auth/…`) or an application's rows (`app/…`, which exports
    /// carry). Written through the database's write path, durably: on a replica, through its
    /// log, so that every node holding the database's first partition has it.
    pub fn put_aux(&self, key: &str, value: Option<Vec<u8>>) -> Result<()> {
        if !(key.starts_with("auth/") || key.starts_with("app/")) {
            return Err(crate::error::invalid(format!(
                "auxiliary key {key:?}: only auth/ and app/ rows are written this way"
            )));
        }
        self.write(vec![WriteOp::PutAux { key: key.to_string(), value }])?;
        Ok(())
    }

    /// Commit several jobs (each atomic on its own) with the given durability: each one's
    /// result. On a replica, appended to its log.
    pub(crate) fn write_jobs(&self, jobs: Vec<Vec<WriteOp>>, durability: Durability) -> Vec<Result<Receipt>> {
        if self.is_partitioned() {
            // Each job to its partition, the jobs of a partition together, the results in order.
            let mut out: Vec<Option<Result<Receipt>>> = (0..jobs.len()).map(|_| None).collect();
            let mut groups: Vec<(Db, Vec<usize>, Vec<Vec<WriteOp>>)> = Vec::new();
            for (i, job) in jobs.into_iter().enumerate() {
                match self.partition_of_ops(&job) {
                    Err(e) => out[i] = Some(Err(e)),
                    Ok(db) => match groups.iter_mut().find(|g| g.0.path() == db.path()) {
                        Some(g) => {
                            g.1.push(i);
                            g.2.push(job);
                        }
                        None => groups.push((db, vec![i], vec![job])),
                    },
                }
            }
            for (db, places, jobs) in groups {
                for (i, r) in places.into_iter().zip(db.write_jobs(jobs, durability)) {
                    out[i] = Some(r);
                }
            }
            return out
                .into_iter()
                .map(|r| r.unwrap_or_else(|| Err(crate::error::invalid("a job got no result"))))
                .collect();
        }
        match &self.log {
            Some(log) => log.append(jobs, durability),
            None => {
                let marks: Vec<Vec<_>> = match self.deferred {
                    Some(_) => jobs.iter().map(|job| marked(job).collect()).collect(),
                    None => Vec::new(),
                };
                let results: Vec<Result<Receipt>> = self
                    .store
                    .write_many(jobs, durability)
                    .into_iter()
                    .map(|r| r.map_err(Into::into))
                    .collect();
                let committed = marks.into_iter().zip(&results).filter(|(_, r)| r.is_ok());
                self.queue_marked(committed.flat_map(|(m, _)| m).collect());
                results
            }
        }
    }

    /// The partition's database that `ops` write to (the first partition's if they name no
    /// namespace): they must all lie in one, as one commit.
    fn partition_of_ops(&self, ops: &[WriteOp]) -> Result<Db> {
        let mut found: Option<Db> = None;
        for op in ops {
            let Some(ns) = namespace_of(op) else { continue };
            let db = self.db_for(ns)?;
            match &found {
                Some(f) if f.path() != db.path() => {
                    return Err(crate::error::invalid(format!(
                        "one commit cannot write to namespaces of different partitions ({ns:?} is in {}, an earlier one in {})",
                        db.path().display(),
                        f.path().display()
                    )));
                }
                Some(_) => {}
                None => found = Some(db),
            }
        }
        match found {
            Some(db) => Ok(db),
            None => {
                self.partitions().into_iter().next().ok_or_else(|| crate::error::invalid("no partitions"))
            }
        }
    }

    /// The log this database is a replica of, if any.
    pub(crate) fn write_log(&self) -> Option<std::sync::Arc<dyn WriteLog>> {
        self.log.clone()
    }

    /// Whether this database is a replica of a log ([`DbBuilder::write_log`](super::DbBuilder::write_log)).
    pub fn is_replica(&self) -> bool {
        self.log.is_some()
    }
}

/// The namespace an operation writes to (for an application row `app/<what>/<namespace>/<leaf>`,
/// the one it names; none for other auxiliary rows).
fn namespace_of(op: &WriteOp) -> Option<&str> {
    Some(match op {
        WriteOp::Insert(r) => r.namespace.as_str(),
        WriteOp::Supersede { new, .. } => new.namespace.as_str(),
        WriteOp::Revise(r) => r.namespace.as_str(),
        WriteOp::Restore(r) => r.namespace.as_str(),
        WriteOp::Retire { namespace, .. }
        | WriteOp::Expire { namespace, .. }
        | WriteOp::MergeInto { namespace, .. }
        | WriteOp::Forget { namespace, .. }
        | WriteOp::PutVector { namespace, .. }
        | WriteOp::MergeTexts { namespace } => namespace.as_str(),
        WriteOp::PutAux { key, .. } => {
            let rest = key.strip_prefix("app/")?;
            let (_, rest) = rest.split_once('/')?;
            rest.rsplit_once('/')?.0
        }
        _ => return None,
    })
}
