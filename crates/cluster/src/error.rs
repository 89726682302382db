//! The cluster's errors.

/// What went wrong running a node.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// NATS or JetStream refused or failed a request (or could not be reached).
    #[error("NATS: {0}")]
    Nats(String),
    /// A partition's database failed.
    #[error(transparent)]
    Db(#[from] mnemon::Error),
    /// The node's configuration cannot work.
    #[error("cluster configuration: {0}")]
    Config(String),
    /// The log of a partition skips entries this node has not applied (its stream's retention
    /// dropped them): the node must start from a snapshot.
    #[error("partition {partition}: the log starts after entry {applied}, which this node applied last")]
    Gap {
        /// The partition.
        partition: u32,
        /// The last entry this node applied.
        applied: u64,
    },
}

impl ClusterError {
    pub(crate) fn nats(e: impl std::fmt::Display) -> Self {
        ClusterError::Nats(e.to_string())
    }
}
