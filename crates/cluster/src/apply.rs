//! Applying a partition's log to its database: each entry in order, at the log's time, once.
//!
//! An entry is one job ([`mnemon::encode_job`]) appended by whichever node received the write.
//! It is committed with [`mnemon::storage`]'s `Store::write_at` at its transaction time: the
//! time JetStream stored it (the same on every server of the stream), made strictly
//! increasing along the log (`max(stored, previous + 1 µs)`). The job carries, as its last
//! operation, the row `replica/applied` = (sequence, time), so the entry and the node's place
//! in the log commit together: after a crash the node resumes after the last entry its file
//! holds, and applies nothing twice. A job the store refuses (a conflict, a rule) is refused
//! on every node alike; the place is then committed alone. No clock is read and nothing
//! random is drawn on this path.

use std::sync::Arc;

use async_nats::jetstream::Message;
use mnemon::{Db, Durability, Receipt, Timestamp, WriteOp};

use crate::error::ClusterError;
use crate::log::Waiters;

/// The auxiliary row holding a partition file's place in its log.
pub(crate) const APPLIED_KEY: &str = "replica/applied";

/// A partition's place in its log: the last entry applied, and its transaction time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// The stream sequence number of the last entry applied (0: none).
    pub seq: u64,
    /// Its transaction time, in microseconds (the next entry's comes after it).
    pub tx: i64,
}

impl Applied {
    fn encode(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.tx.to_le_bytes());
        out
    }

    fn decode(b: &[u8]) -> Option<Self> {
        let seq = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
        let tx = i64::from_le_bytes(b.get(8..16)?.try_into().ok()?);
        Some(Applied { seq, tx })
    }

    /// The place recorded in `db` (none yet: the start of the log).
    pub(crate) fn read(db: &Db) -> Result<Self, ClusterError> {
        let row = db.snapshot()?.aux(APPLIED_KEY).map_err(mnemon::Error::from)?;
        match row {
            None => Ok(Applied::default()),
            Some(b) => Applied::decode(&b).ok_or_else(|| {
                ClusterError::Config(format!("{}: malformed {APPLIED_KEY} row", db.path().display()))
            }),
        }
    }
}

/// What applying one entry did.
pub(crate) enum Step {
    /// The entry was applied (or refused by the store, which is applying it too).
    Applied(Applied),
    /// Seen before (a recreated consumer delivers from where it asked).
    Seen,
}

/// Apply `message`, the entry after `last`, to `db`, and answer the write's waiter if this
/// node appended it. A failure of the commit itself (the disk) is an error, and the entry is
/// not counted applied.
pub(crate) fn apply(
    db: &Db,
    partition: u32,
    last: Applied,
    message: &Message,
    waiters: &Arc<Waiters>,
) -> Result<Step, ClusterError> {
    let info = message.info().map_err(ClusterError::nats)?;
    let seq = info.stream_sequence;
    if seq <= last.seq {
        return Ok(Step::Seen);
    }
    if seq != last.seq + 1 {
        return Err(ClusterError::Gap { partition, applied: last.seq });
    }
    let stored = i64::try_from(info.published.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX);
    let at = Applied { seq, tx: stored.max(last.tx.saturating_add(1)) };
    let marker = WriteOp::PutAux { key: APPLIED_KEY.into(), value: Some(at.encode()) };
    let id = message.headers.as_ref().and_then(|h| h.get("Nats-Msg-Id")).map(|v| v.as_str().to_string());
    let store = db.store();
    let tx = Timestamp::from_micros(at.tx);
    let result: Result<Receipt, mnemon::Error> = match mnemon::decode_job(&message.payload) {
        Ok(mut ops) => {
            ops.push(marker.clone());
            let r = store.write_at(vec![ops], tx, Durability::Eventual).pop();
            match r {
                Some(Ok(mut receipt)) => {
                    // The marker's outcome is not the writer's.
                    receipt.outcomes.pop();
                    Ok(receipt)
                }
                Some(Err(e)) if commit_failed(&e) => return Err(ClusterError::Db(e.into())),
                Some(Err(e)) => Err(e.into()),
                None => return Err(ClusterError::Config("the store returned no result".into())),
            }
        }
        Err(e) => Err(mnemon::Error::Log { message: format!("entry {seq} of partition {partition}: {e}") }),
    };
    if result.is_err() {
        // Refused (on every node alike): the place alone.
        match store.write_at(vec![vec![marker]], tx, Durability::Eventual).pop() {
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(ClusterError::Db(e.into())),
            None => return Err(ClusterError::Config("the store returned no result".into())),
        }
    }
    if let Some(id) = id {
        let waiter = waiters.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&id);
        if let Some(w) = waiter {
            let _ = w.try_send(result);
        }
    }
    Ok(Step::Applied(at))
}

/// Whether a store error is the commit's own (the entry was not applied), not the job's.
fn commit_failed(e: &mnemon::StorageError) -> bool {
    use mnemon::StorageError as S;
    matches!(
        e,
        S::CommitFailed { .. }
            | S::CommitUncertain { .. }
            | S::Closed { .. }
            | S::DamageFound { .. }
            | S::ReadOnly { .. }
            | S::Database { .. }
    )
}
