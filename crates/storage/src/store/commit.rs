//! One group commit: each batch of jobs planned at its own transaction time, applied to every table, logged.

use crate::error::{Error, OpenError};
use crate::format::{self};
use crate::tables;
use crate::time::{Clock, Timestamp};
use crate::timeline::{GapHints, TimelineWriter};
use crate::write::{self, Change, Outcome, Planner, WriteTables};
use redb::Database;
use std::path::Path;

use super::*;

/// One group commit: the jobs `first`, then those `more` hands over (called with the number of
/// jobs taken so far, until it returns none). Each batch of jobs is planned at its own
/// transaction time, taken when the batch is, so no job is recorded before it was submitted.
/// An `Err` means nothing was committed; the caller commits the transaction returned.
pub(super) fn commit(
    db: &Database,
    clock: &dyn Clock,
    (min_gap, shared): (u64, Option<&Path>),
    hints: &mut GapHints,
    first: Vec<Work>,
    more: &mut dyn FnMut(usize) -> Vec<Work>,
) -> Result<Planned, Error> {
    let mut txn = db.begin_write()?;
    let mut meta_t = txn.open_table(tables::META)?;
    if let Some(path) = shared {
        // Another process may have upgraded the file since this one opened it: its indexes
        // (format 5's `mnemon.ended`, say) are then kept by writers this build does not know.
        let found = format::read_version(&meta_t)?;
        if found > format::FORMAT_VERSION {
            return Err(OpenError::NewerFormat {
                path: path.to_path_buf(),
                found,
                supported: format::FORMAT_VERSION,
            }
            .into());
        }
    }
    let shared = shared.is_some();
    let mut per_job: Vec<(Result<Vec<Outcome>, Error>, Timestamp)> = Vec::with_capacity(first.len());
    let mut changed: Vec<crate::write::LoggedChange> = Vec::new();
    let mut wrote = false;
    // A shared file has no non-durable commits (redb keeps them in one process's memory).
    let mut durable = shared;
    let mut wants_commit = false;
    let mut meta = format::read_state(&meta_t)?;
    // The latest transaction time of a revision recorded so far: a commit that records none
    // (an auxiliary row, a merge of texts) leaves it where it was, so that a replica's own
    // maintenance never moves the time its log's next entry must come after.
    let mut last_tx = meta.last_tx;
    // The time the jobs of the current batch are planned at (a job with its own time, `at`,
    // is planned at that).
    let mut tx = clock.now().max(last_tx.plus_micros(1));
    // The latest time a job of this commit was planned at.
    let mut commit_tx: Option<Timestamp> = None;
    {
        let mut tables = WriteTables {
            revisions: txn.open_table(tables::REVISIONS)?,
            current: tables::Deferred::new(txn.open_table(tables::CURRENT)?),
            current_ends: tables::Deferred::new(txn.open_table(tables::CURRENT_ENDS)?),
            ended: tables::LazyTable::new(&txn, tables::ENDED),
            identity: tables::LazyTable::new(&txn, tables::IDENTITY),
            namespaces: tables::LazyTable::new(&txn, tables::NAMESPACES),
            timeline: TimelineWriter::new(
                tables::Deferred::new(txn.open_table(tables::EVENTS)?),
                txn.open_table(tables::CHECKPOINTS)?,
                tables::LazyTable::new(&txn, tables::CHECKPOINT_ENTRIES),
                hints,
                min_gap,
            ),
            vectors: tables::LazyTable::new(&txn, tables::VECTORS),
            vector_spaces: tables::LazyTable::new(&txn, tables::VECTOR_SPACES),
            aux: tables::LazyTable::new(&txn, tables::AUX),
            auth: tables::LazyTable::new(&txn, tables::AUTH),
            lexical: crate::lexical::LexicalWriter::open(&txn)?,
            known_namespaces: std::collections::HashSet::new(),
            max_ids: Default::default(),
            counts: crate::counts::Counts::new(&txn),
            swept_through: meta.swept_through.as_micros(),
        };
        let mut batch = first;
        while !batch.is_empty() {
            for Work { ops, durability, prepared, at } in batch {
                tables.lexical.prepared = prepared;
                // A job at its own time must not record a revision at or before the latest
                // one (checked once it is planned: one that records none may come at any time).
                let late = at.filter(|&at| at <= last_tx).map(|at| Error::TimeOrder { at, last: last_tx });
                let job_tx = match at {
                    Some(at) => {
                        // The jobs after it in this batch come after it.
                        tx = tx.max(at.plus_micros(1));
                        at
                    }
                    None => tx,
                };
                commit_tx = commit_tx.max(Some(job_tx));
                durable |= durability == Durability::Immediate;
                wants_commit |= ops.is_empty() && durability == Durability::Immediate;
                let mut planner = Planner::new(&tables, job_tx, ops.len());
                let planned = ops.into_iter().try_for_each(|op| planner.plan(op));
                let (changes, outcomes) =
                    (std::mem::take(&mut planner.changes), std::mem::take(&mut planner.outcomes));
                drop(planner);
                let planned = match (planned, late) {
                    (Ok(()), Some(e))
                        if changes
                            .iter()
                            .any(|c| matches!(c, Change::Write { .. } | Change::Forget { .. })) =>
                    {
                        Err(e)
                    }
                    (planned, _) => planned,
                };
                match planned {
                    Err(e) => per_job.push((Err(e), job_tx)),
                    Ok(()) => {
                        wrote |= !changes.is_empty();
                        for change in changes {
                            // A forgetting moves the latest time too (format 16), so that
                            // the commit log's times never go back (the change feed's order).
                            match &change {
                                Change::Write { new, .. } => last_tx = last_tx.max(new.recorded_at),
                                Change::Forget { .. } => last_tx = last_tx.max(job_tx),
                                _ => {}
                            }
                            if let Some(c) = tables.apply(change, job_tx.as_micros())? {
                                changed.push(c);
                            }
                        }
                        per_job.push((Ok(outcomes), job_tx));
                    }
                }
            }
            batch = more(per_job.len());
            if !batch.is_empty() {
                tx = clock.now().max(last_tx.plus_micros(1)).max(tx);
            }
        }
        if !wrote && !wants_commit {
            drop((tables, meta_t));
            txn.abort()?;
            return Ok(Planned::Nothing(
                per_job
                    .into_iter()
                    .map(|(r, _)| {
                        r.map(|outcomes| Receipt { tx: meta.last_tx, commit_seq: meta.commit_seq, outcomes })
                    })
                    .collect(),
            ));
        }
        tables.finish(commit_tx.unwrap_or(tx).as_micros())?;
    }
    let tx = commit_tx.unwrap_or(tx).max(meta.swept_through);
    meta.commit_seq += 1;
    meta.last_tx = last_tx;
    meta.swept_through = tx;
    {
        format::write_state(&mut meta_t, &meta)?;
        drop(meta_t);
        let mut log = txn.open_table(tables::LOG)?;
        write::log_commit(&mut log, meta.commit_seq, tx.as_micros(), changed)?;
    }
    if !durable {
        txn.set_durability(redb::Durability::None)?;
    }
    let seq = meta.commit_seq;
    let results = per_job
        .into_iter()
        .map(|(r, tx)| r.map(|outcomes| Receipt { tx, commit_seq: seq, outcomes }))
        .collect();
    Ok(Planned::Commit { txn: Box::new(txn), seq, durable, results })
}

/// A group commit, planned and written into its transaction.
pub(super) enum Planned {
    /// Nothing to write (the transaction was aborted): the jobs' results.
    Nothing(Vec<Result<Receipt, Error>>),
    /// The transaction to commit, its `commit_seq`, whether it is durable (fsync'ed), and
    /// the jobs' results once it is committed.
    Commit { txn: Box<redb::WriteTransaction>, seq: u64, durable: bool, results: Vec<Result<Receipt, Error>> },
}
