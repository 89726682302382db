//! mnemon beyond one machine: nodes that are deterministic replicas of a replicated log on
//! NATS JetStream, the design XTDB 2 uses with Kafka.
//!
//! Namespaces map to a fixed number of **partitions** ([`partition_of`]); each partition is
//! one JetStream stream (file storage, replicated by JetStream's Raft on as many servers as
//! configured) and, on each node hosting it, one mnemon database file. A write reaching a
//! node is planned there as on a single file (ids drawn, texts embedded, domain rules
//! checked, the revision it read noted as the expected one), appended to its partition's
//! stream as one entry ([`mnemon::encode_job`]), and answered once JetStream has acknowledged
//! it (a quorum of the stream's servers) and this node has applied it. Every node hosting the
//! partition applies the same entries in the same order at the same transaction times
//! (`apply.rs`), so their files hold the same history and export the same lines.
//!
//! See docs/cluster.md for the guarantees, the failure modes and how to run it.

mod apply;
mod error;
mod log;
mod node;
pub mod partition;
mod snapshot;
mod status;
#[doc(hidden)]
pub mod testing;

pub use apply::Applied;
pub use error::ClusterError;
pub use log::{format_tokens, parse_tokens, take_tokens};
pub use node::{Node, NodeConfig, OpenDb, PartitionStatus};
pub use partition::{DEFAULT_PARTITIONS, partition_of};
pub use snapshot::DEFAULT_EVERY as DEFAULT_SNAPSHOT_EVERY;
pub use status::{NodeStatus, PartitionLine, cluster_status};

/// A client of the NATS servers at `servers` (URLs separated by commas): it connects to one
/// and moves to another when that one goes away.
pub(crate) async fn connect(servers: &str) -> Result<async_nats::Client, ClusterError> {
    let addrs = servers
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<async_nats::ServerAddr>()
                .map_err(|e| ClusterError::Config(format!("NATS server {s:?}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if addrs.is_empty() {
        return Err(ClusterError::Config("no NATS server given".into()));
    }
    async_nats::ConnectOptions::new().max_reconnects(None).connect(addrs).await.map_err(ClusterError::nats)
}
