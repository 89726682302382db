//! Where the cluster stands: each node publishes its partitions' places in their logs to a
//! JetStream key-value bucket (every second; an entry older than a minute is dropped, so a
//! dead node leaves the list), and [`cluster_status`] reads them beside the streams' ends.

use std::collections::BTreeMap;
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use crate::error::ClusterError;
use crate::partition::stream_name;

/// How often a node publishes its status.
pub(crate) const EVERY: Duration = Duration::from_secs(1);

/// A node's status as it publishes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    /// The node.
    pub node: String,
    /// Per hosted partition, the last entry applied.
    pub applied: BTreeMap<u32, u64>,
    /// When it published this, microseconds since the epoch (its clock).
    pub at: i64,
    /// Where it serves its partitions (`http://host:port`), if it said.
    #[serde(default)]
    pub url: Option<String>,
}

/// One line of [`cluster_status`]: a partition as one node holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionLine {
    /// The partition.
    pub partition: u32,
    /// The node holding it (`None`: no live node holds it).
    pub node: Option<String>,
    /// The last entry that node applied.
    pub applied: u64,
    /// The last entry of the partition's stream.
    pub last: u64,
    /// Entries the node has yet to apply.
    pub lag: u64,
}

/// The bucket of the nodes' statuses.
pub(crate) fn bucket_name(prefix: &str) -> String {
    format!("{prefix}_NODES")
}

/// The status bucket, made if missing.
pub(crate) async fn bucket(
    js: &jetstream::Context,
    prefix: &str,
    replicas: usize,
) -> Result<kv::Store, ClusterError> {
    if let Ok(b) = js.get_key_value(bucket_name(prefix)).await {
        return Ok(b);
    }
    js.create_key_value(kv::Config {
        bucket: bucket_name(prefix),
        history: 1,
        max_age: Duration::from_secs(60),
        num_replicas: replicas.max(1),
        ..Default::default()
    })
    .await
    .map_err(ClusterError::nats)
}

/// The statuses of the live nodes (those that published within the last minute), by name.
pub(crate) async fn live(bucket: &kv::Store) -> Result<Vec<NodeStatus>, ClusterError> {
    let mut nodes: Vec<NodeStatus> = Vec::new();
    let mut keys = bucket.keys().await.map_err(ClusterError::nats)?;
    while let Some(k) = keys.next().await {
        let k = k.map_err(ClusterError::nats)?;
        if let Some(v) = bucket.get(&k).await.map_err(ClusterError::nats)?
            && let Ok(s) = serde_json::from_slice::<NodeStatus>(&v)
        {
            nodes.push(s);
        }
    }
    nodes.sort_by(|a, b| a.node.cmp(&b.node));
    Ok(nodes)
}

/// Every partition of a cluster of `partitions` (streams named under `prefix`), as each live
/// node holds it: its place, the stream's end, the lag. Read from the NATS servers at
/// `servers` (URLs separated by commas).
pub async fn cluster_status(
    servers: &str,
    prefix: &str,
    partitions: u32,
) -> Result<Vec<PartitionLine>, ClusterError> {
    let client = crate::connect(servers).await?;
    let js = jetstream::new(client);
    let nodes = match js.get_key_value(bucket_name(prefix)).await {
        Ok(b) => live(&b).await?,
        Err(_) => Vec::new(),
    };
    let mut out = Vec::new();
    for p in 0..partitions {
        let last = match js.get_stream(stream_name(prefix, p)).await {
            Ok(mut s) => s.info().await.map_err(ClusterError::nats)?.state.last_sequence,
            Err(_) => 0,
        };
        let holders: Vec<&NodeStatus> = nodes.iter().filter(|n| n.applied.contains_key(&p)).collect();
        if holders.is_empty() {
            out.push(PartitionLine { partition: p, node: None, applied: 0, last, lag: last });
        }
        for n in holders {
            let applied = n.applied.get(&p).copied().unwrap_or(0);
            out.push(PartitionLine {
                partition: p,
                node: Some(n.node.clone()),
                applied,
                last,
                lag: last.saturating_sub(applied),
            });
        }
    }
    Ok(out)
}
