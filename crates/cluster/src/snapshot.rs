//! Snapshots: now and then a node copies each hosted partition's file (between two entries, so
//! the copy holds a known place in the log) and publishes it to JetStream's object store,
//! replacing the previous one. A node starting a partition without a file, or with one older
//! than its stream's first entry, starts from the latest snapshot and applies the log after it.
//! Once every live node has applied past a snapshot, the stream's entries it holds are purged:
//! the log's retention is bounded by the snapshots, never cut below what a live node needs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::jetstream::{self, object_store};
use mnemon::Db;

use crate::error::ClusterError;
use crate::partition::stream_name;

/// The bucket of a cluster's snapshots.
fn bucket_name(prefix: &str) -> String {
    format!("{prefix}_SNAPSHOTS")
}

/// A partition's snapshot in the bucket.
fn object_name(p: u32) -> String {
    format!("p{p:03}")
}

/// The metadata key holding the last entry a snapshot holds.
const APPLIED: &str = "applied";

/// Chunks of the uploaded file: below the servers' smallest usual `max_payload` (1 MiB).
const CHUNK: usize = 512 * 1024;

/// The snapshot bucket, made if missing.
pub(crate) async fn bucket(
    js: &jetstream::Context,
    prefix: &str,
    replicas: usize,
) -> Result<object_store::ObjectStore, ClusterError> {
    if let Ok(b) = js.get_object_store(bucket_name(prefix)).await {
        return Ok(b);
    }
    js.create_object_store(object_store::Config {
        bucket: bucket_name(prefix),
        num_replicas: replicas.max(1),
        ..Default::default()
    })
    .await
    .map_err(ClusterError::nats)
}

/// Copy `db` (partition `p`, whose applier calls this between two entries, at entry `applied`)
/// to a file beside it, to be [`upload`]ed.
pub(crate) fn copy(db: &Db, p: u32) -> Result<PathBuf, ClusterError> {
    let dest = db.path().with_file_name(format!(".p{p:03}.snapshot"));
    db.copy_to(&dest)?;
    Ok(dest)
}

/// Publish the copy at `file` as partition `p`'s snapshot at entry `applied`, then remove it.
pub(crate) async fn upload(
    bucket: &object_store::ObjectStore,
    p: u32,
    applied: u64,
    file: &Path,
) -> Result<(), ClusterError> {
    let mut f = tokio::fs::File::open(file)
        .await
        .map_err(|e| ClusterError::Config(format!("{}: {e}", file.display())))?;
    let meta = object_store::ObjectMetadata {
        name: object_name(p),
        description: Some(format!("mnemon partition {p} as of entry {applied}")),
        chunk_size: Some(CHUNK),
        metadata: HashMap::from([(APPLIED.to_string(), applied.to_string())]),
        headers: None,
    };
    let put = bucket.put(meta, &mut f).await.map_err(ClusterError::nats);
    let _ = tokio::fs::remove_file(file).await;
    put.map(|_| ())
}

/// The entry partition `p`'s latest snapshot holds (`None`: no snapshot).
pub(crate) async fn latest(bucket: &object_store::ObjectStore, p: u32) -> Result<Option<u64>, ClusterError> {
    match bucket.info(object_name(p)).await {
        Ok(info) => Ok(info.metadata.get(APPLIED).and_then(|s| s.parse().ok())),
        Err(e) if e.kind() == object_store::InfoErrorKind::NotFound => Ok(None),
        Err(e) => Err(ClusterError::nats(e)),
    }
}

/// Download partition `p`'s latest snapshot to `path` (replacing what is there, through a
/// file beside it): the entry it holds, or `None` if there is no snapshot.
pub(crate) async fn fetch(
    bucket: &object_store::ObjectStore,
    p: u32,
    path: &Path,
) -> Result<Option<u64>, ClusterError> {
    let Some(applied) = latest(bucket, p).await? else { return Ok(None) };
    let mut object = bucket.get(object_name(p)).await.map_err(ClusterError::nats)?;
    let part = path.with_extension("part");
    let io = |e: std::io::Error| ClusterError::Config(format!("{}: {e}", part.display()));
    let mut f = tokio::fs::File::create(&part).await.map_err(io)?;
    tokio::io::copy(&mut object, &mut f).await.map_err(io)?;
    f.sync_all().await.map_err(io)?;
    drop(f);
    tokio::fs::rename(&part, path).await.map_err(io)?;
    // The vector index files beside the old file belong to its history, not the snapshot's.
    let _ = tokio::fs::remove_dir_all(mnemon::IndexOptions::dir_beside(path)).await;
    Ok(Some(applied))
}

/// Purge partition `p`'s stream of the entries its snapshot at `applied` (taken by node `me`)
/// holds that every other live node (in the status bucket) has applied too: the entry through
/// which it purged.
pub(crate) async fn trim(
    js: &jetstream::Context,
    status: &jetstream::kv::Store,
    prefix: &str,
    (me, p): (&str, u32),
    applied: u64,
) -> Result<u64, ClusterError> {
    let live = crate::status::live(status).await?;
    let needed = live
        .iter()
        .filter(|n| n.node != me)
        .filter_map(|n| n.applied.get(&p))
        .copied()
        .min()
        .unwrap_or(applied);
    let through = applied.min(needed);
    if through == 0 {
        return Ok(0);
    }
    let stream = js.get_stream(stream_name(prefix, p)).await.map_err(ClusterError::nats)?;
    // Entries below `through + 1` go.
    stream.purge().sequence(through + 1).await.map_err(ClusterError::nats)?;
    Ok(through)
}

/// How often snapshots are taken unless configured otherwise.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(600);
