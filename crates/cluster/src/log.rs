//! A partition's database writes to its stream: [`PartitionLog`], the [`WriteLog`] of the
//! database a node opens for each partition it hosts.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, context::PublishErrorKind, message::PublishMessage};
use mnemon::{Durability, Receipt, WriteLog, WriteOp};

/// The results waiting for this node's applier, by request id (the entry's `Nats-Msg-Id`).
pub(crate) type Waiters = Mutex<HashMap<String, SyncSender<mnemon::Result<Receipt>>>>;

/// Appends a database's jobs to its partition's stream, one entry per job, and waits for the
/// node's applier to apply each (see `apply.rs`).
pub(crate) struct PartitionLog {
    pub(crate) partition: u32,
    pub(crate) subject: String,
    pub(crate) js: jetstream::Context,
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) waiters: Arc<Waiters>,
    /// How long a write may take, from its first publish to its apply here.
    pub(crate) timeout: Duration,
    pub(crate) node: String,
}

impl std::fmt::Debug for PartitionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionLog")
            .field("partition", &self.partition)
            .field("subject", &self.subject)
            .finish()
    }
}

thread_local! {
    /// Per partition, the last entry this thread appended (see [`take_tokens`]).
    static TOKENS: std::cell::RefCell<std::collections::BTreeMap<u32, u64>> = const {
        std::cell::RefCell::new(std::collections::BTreeMap::new())
    };
}

/// The consistency tokens of the writes this thread appended since the last call: per
/// partition, the sequence number of its last entry. A read that waits until its node has
/// applied them ([`crate::Node::wait_applied`]) sees those writes, on any node.
pub fn take_tokens() -> std::collections::BTreeMap<u32, u64> {
    TOKENS.with(|t| std::mem::take(&mut *t.borrow_mut()))
}

/// Tokens as a request header carries them: `partition:sequence` pairs joined by commas
/// (`3:120,7:5`).
pub fn format_tokens(tokens: &std::collections::BTreeMap<u32, u64>) -> String {
    tokens.iter().map(|(p, s)| format!("{p}:{s}")).collect::<Vec<_>>().join(",")
}

/// Tokens from [`format_tokens`]'s form (`None` if malformed).
pub fn parse_tokens(s: &str) -> Option<std::collections::BTreeMap<u32, u64>> {
    s.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            let (p, seq) = t.split_once(':')?;
            Some((p.parse().ok()?, seq.parse().ok()?))
        })
        .collect()
}

fn log_error(message: impl Into<String>) -> mnemon::Error {
    mnemon::Error::Log { message: message.into() }
}

impl WriteLog for PartitionLog {
    fn append(&self, jobs: Vec<Vec<WriteOp>>, _durability: Durability) -> Vec<mnemon::Result<Receipt>> {
        let deadline = Instant::now() + self.timeout;
        let mut out: Vec<Option<mnemon::Result<Receipt>>> = Vec::with_capacity(jobs.len());
        // (index, request id, entry, where its result arrives)
        let mut entries: Vec<(usize, String, bytes::Bytes, Receiver<mnemon::Result<Receipt>>)> = Vec::new();
        for (i, job) in jobs.iter().enumerate() {
            match mnemon::encode_job(job) {
                Ok(bytes) => {
                    let id = format!("{}-{}", self.node, uuid::Uuid::now_v7());
                    let (tx, rx) = sync_channel(1);
                    self.lock().insert(id.clone(), tx);
                    entries.push((i, id, bytes::Bytes::from(bytes), rx));
                    out.push(None);
                }
                Err(e) => out.push(Some(Err(log_error(format!("cannot encode the write: {e}"))))),
            }
        }
        let published =
            self.publish(entries.iter().map(|(_, id, b, _)| (id.clone(), b.clone())).collect(), deadline);
        for ((i, id, _, rx), sequence) in entries.into_iter().zip(published) {
            let result = match sequence {
                Err(e) => Err(e),
                Ok(seq) => {
                    TOKENS.with(|t| {
                        let mut t = t.borrow_mut();
                        let e = t.entry(self.partition).or_insert(0);
                        *e = (*e).max(seq);
                    });
                    let left = deadline.saturating_duration_since(Instant::now());
                    rx.recv_timeout(left).unwrap_or_else(|_| {
                        Err(log_error(format!(
                            "entry {seq} of partition {} was taken by the log but not applied here within {:?}",
                            self.partition, self.timeout
                        )))
                    })
                }
            };
            self.lock().remove(&id);
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(result);
            }
        }
        out.into_iter().map(|r| r.unwrap_or_else(|| Err(log_error("no result")))).collect()
    }
}

impl PartitionLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SyncSender<mnemon::Result<Receipt>>>> {
        self.waiters.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Publish the entries in order (pipelined) and wait for JetStream's acknowledgements:
    /// each entry's sequence number. An entry whose publish fails is published again with the
    /// same message id until the deadline (the stream drops a duplicate id within its window,
    /// so an entry that reached it before its acknowledgement was lost is not appended twice).
    fn publish(&self, entries: Vec<(String, bytes::Bytes)>, deadline: Instant) -> Vec<mnemon::Result<u64>> {
        let n = entries.len();
        let (done, results) = std::sync::mpsc::channel();
        let (js, subject) = (self.js.clone(), self.subject.clone());
        self.runtime.spawn(async move {
            let mut out: Vec<Result<u64, String>> = Vec::with_capacity(entries.len());
            let mut acks = Vec::with_capacity(entries.len());
            for (id, bytes) in &entries {
                let message = PublishMessage::build().payload(bytes.clone()).message_id(id);
                acks.push(js.send_publish(subject.clone(), message).await);
            }
            for ((id, bytes), ack) in entries.iter().zip(acks) {
                // An entry larger than the servers' `max_payload` never goes in.
                let mut fatal = false;
                let mut ack = match ack {
                    Ok(future) => future.await.map_err(|e| e.to_string()),
                    Err(e) => {
                        fatal = e.kind() == PublishErrorKind::MaxPayloadExceeded;
                        Err(e.to_string())
                    }
                };
                // Again, one at a time, while there is time.
                while ack.is_err() && !fatal && Instant::now() + Duration::from_millis(100) < deadline {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let message = PublishMessage::build().payload(bytes.clone()).message_id(id);
                    ack = match js.send_publish(subject.clone(), message).await {
                        Ok(future) => future.await.map_err(|e| e.to_string()),
                        Err(e) => Err(e.to_string()),
                    };
                }
                out.push(ack.map(|a| a.sequence));
            }
            let _ = done.send(out);
        });
        let left = deadline.saturating_duration_since(Instant::now());
        match results.recv_timeout(left) {
            Ok(acks) => acks
                .into_iter()
                .map(|a| a.map_err(|e| log_error(format!("the log did not take the write: {e}"))))
                .collect(),
            Err(_) => (0..n)
                .map(|_| {
                    Err(log_error(format!("the log did not acknowledge the write within {:?}", self.timeout)))
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_read_as_written() {
        let t: std::collections::BTreeMap<u32, u64> = [(3, 120), (7, 5)].into_iter().collect();
        assert_eq!(format_tokens(&t), "3:120,7:5");
        assert_eq!(parse_tokens("3:120, 7:5"), Some(t));
        assert_eq!(parse_tokens(""), Some(Default::default()));
        for bad in ["3", "a:1", "1:b", "1:2:3", "-1:2"] {
            assert_eq!(parse_tokens(bad), None, "{bad}");
        }
    }
}
