//! A node: the partitions it hosts, each a database file kept as a replica of its partition's
//! stream by an applier task, and whose writes go to that stream.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer::DeliverPolicy, consumer::pull::OrderedConfig, stream};
use futures_util::StreamExt;
use mnemon::{Db, DbBuilder};
use tokio::sync::watch;

use crate::apply::{Applied, Step, apply};
use crate::error::ClusterError;
use crate::log::{PartitionLog, Waiters};
use crate::partition::{partition_of, stream_name, subject};

/// How long after its last status a node still counts as live for redirects (microseconds).
const LIVE_FOR: i64 = 5_000_000;

/// How long a starting node waits for JetStream (a new cluster elects its leader first).
const STARTUP: Duration = Duration::from_secs(60);

/// How long a shutdown waits for each of the node's tasks and for the server to take its
/// goodbye, before going on without them (the server may be gone): the partitions' files are
/// synced whatever the server does.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(3);

/// How a partition's database is opened, given its path (the embedder, cache size ...): the
/// node then makes it a replica and creates it if needed.
pub type OpenDb = Arc<dyn Fn(&Path) -> DbBuilder + Send + Sync>;

/// A node's configuration.
#[derive(Clone)]
pub struct NodeConfig {
    /// The NATS servers, as URLs separated by commas (`nats://127.0.0.1:4222,...`).
    pub servers: String,
    /// This node's name, unique in the cluster.
    pub name: String,
    /// The folder of the partitions' files (`p000.mnemon`, ...).
    pub dir: PathBuf,
    /// How many partitions the cluster has (fixed for its life; see [`partition_of`]).
    pub partitions: u32,
    /// The partitions this node hosts.
    pub hosted: Vec<u32>,
    /// Replicas of each partition's stream (3 with three NATS servers; at most their number).
    pub replicas: usize,
    /// The prefix of the streams' names and subjects.
    pub prefix: String,
    /// How long a write may take, from its publish to its apply on this node.
    pub timeout: Duration,
    /// How often a partition's applied entries are made durable in its file (they are durable
    /// in the log at once).
    pub sync_every: Duration,
    /// How often each hosted partition's file is published as a snapshot (when it applied
    /// anything since the last one), after which the stream's entries it holds are purged
    /// once every live node has applied them; `None`: never (the streams keep everything).
    pub snapshot_every: Option<Duration>,
    /// How a partition's database is opened.
    pub open: OpenDb,
}

impl NodeConfig {
    /// A node named `name` hosting every one of the default number of partitions, with streams
    /// of one replica: the configuration of a single node (tests, a first step).
    pub fn new(servers: &str, name: &str, dir: impl Into<PathBuf>) -> Self {
        let partitions = crate::DEFAULT_PARTITIONS;
        NodeConfig {
            servers: servers.to_string(),
            name: name.to_string(),
            dir: dir.into(),
            partitions,
            hosted: (0..partitions).collect(),
            replicas: 1,
            prefix: "MNEMON".to_string(),
            timeout: Duration::from_secs(10),
            sync_every: Duration::from_millis(200),
            snapshot_every: Some(crate::snapshot::DEFAULT_EVERY),
            open: Arc::new(|p: &Path| Db::builder(p)),
        }
    }
}

impl std::fmt::Debug for NodeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeConfig")
            .field("name", &self.name)
            .field("dir", &self.dir)
            .field("partitions", &self.partitions)
            .field("hosted", &self.hosted)
            .finish_non_exhaustive()
    }
}

/// One hosted partition.
struct Hosted {
    db: Db,
    applied: watch::Receiver<Applied>,
}

/// What a node's tasks share besides the log: the cluster's buckets.
#[derive(Clone)]
struct Buckets {
    status: async_nats::jetstream::kv::Store,
    snapshots: async_nats::jetstream::object_store::ObjectStore,
}

/// A running node (see the crate documentation). Dropping it stops its appliers.
pub struct Node {
    config: NodeConfig,
    js: jetstream::Context,
    buckets: Buckets,
    /// Where this node serves (see [`Node::advertise`]).
    url: Arc<std::sync::RwLock<Option<String>>>,
    /// The other nodes that published their status lately (see [`Node::elsewhere`]).
    peers: Arc<std::sync::RwLock<Vec<crate::status::NodeStatus>>>,
    partitions: BTreeMap<u32, Hosted>,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").field("config", &self.config).finish_non_exhaustive()
    }
}

/// A hosted partition's state, as `mnemon cluster status` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionStatus {
    /// The partition.
    pub partition: u32,
    /// The last entry this node applied.
    pub applied: u64,
    /// The last entry of its stream.
    pub last: u64,
}

impl Node {
    /// Connect to NATS, make sure every partition's stream exists, open the hosted
    /// partitions' files and start applying their logs. Runs its tasks on the current Tokio
    /// runtime (multi-threaded); the databases' writes block, so call them from blocking
    /// threads (`spawn_blocking`), as `mnemon serve` runs every operation.
    pub async fn start(config: NodeConfig) -> Result<Node, ClusterError> {
        if config.partitions == 0 || config.hosted.iter().any(|&p| p >= config.partitions) {
            return Err(ClusterError::Config(format!(
                "hosted partitions {:?} are not all below the cluster's {}",
                config.hosted, config.partitions
            )));
        }
        let client = crate::connect(&config.servers).await?;
        let js = jetstream::new(client);
        // A JetStream cluster whose servers just started elects its leader first: wait for it.
        let deadline = tokio::time::Instant::now() + STARTUP;
        for p in 0..config.partitions {
            let cfg = stream::Config {
                name: stream_name(&config.prefix, p),
                subjects: vec![subject(&config.prefix, p)],
                storage: stream::StorageType::File,
                num_replicas: config.replicas.max(1),
                duplicate_window: Duration::from_secs(120),
                ..Default::default()
            };
            loop {
                match js.get_or_create_stream(cfg.clone()).await {
                    Ok(_) => break,
                    Err(e) if tokio::time::Instant::now() >= deadline => return Err(ClusterError::nats(e)),
                    Err(e) => {
                        tracing::debug!(partition = p, error = %e, "JetStream not ready");
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                }
            }
        }
        std::fs::create_dir_all(&config.dir)
            .map_err(|e| ClusterError::Config(format!("cannot create {}: {e}", config.dir.display())))?;
        let (stop, _) = watch::channel(false);
        let buckets = Buckets {
            status: crate::status::bucket(&js, &config.prefix, config.replicas).await?,
            snapshots: crate::snapshot::bucket(&js, &config.prefix, config.replicas).await?,
        };
        let mut node = Node {
            config,
            js,
            buckets,
            url: Arc::default(),
            peers: Arc::default(),
            partitions: BTreeMap::new(),
            stop,
            tasks: Vec::new(),
        };
        for p in node.config.hosted.clone() {
            node.host(p).await?;
        }
        let publisher = StatusPublisher {
            bucket: node.buckets.status.clone(),
            node: node.config.name.clone(),
            applied: node.partitions.iter().map(|(&p, h)| (p, h.applied.clone())).collect(),
            stop: node.stop.subscribe(),
            url: Arc::clone(&node.url),
            peers: Arc::clone(&node.peers),
        };
        node.tasks.push(tokio::spawn(publisher.run()));
        Ok(node)
    }

    /// Open partition `p`'s file as a replica and start its applier: from the latest snapshot
    /// when there is no file, or when the file is older than the stream's first entry.
    async fn host(&mut self, p: u32) -> Result<(), ClusterError> {
        let path = self.config.dir.join(format!("p{p:03}.mnemon"));
        let mut stream =
            self.js.get_stream(stream_name(&self.config.prefix, p)).await.map_err(ClusterError::nats)?;
        let first = stream.info().await.map_err(ClusterError::nats)?.state.first_sequence;
        let behind = if path.exists() {
            let builder = (self.config.open)(&path);
            let applied = tokio::task::spawn_blocking(move || -> Result<Applied, ClusterError> {
                Applied::read(&builder.open()?)
            })
            .await
            .map_err(|e| ClusterError::Config(e.to_string()))??;
            applied.seq + 1 < first
        } else {
            true
        };
        if behind {
            match crate::snapshot::fetch(&self.buckets.snapshots, p, &path).await? {
                Some(at) => tracing::info!(partition = p, entry = at, "started from the latest snapshot"),
                None if first > 1 => return Err(ClusterError::Gap { partition: p, applied: 0 }),
                None => {}
            }
        }
        let waiters: Arc<Waiters> = Arc::default();
        let log = PartitionLog {
            partition: p,
            subject: subject(&self.config.prefix, p),
            js: self.js.clone(),
            runtime: tokio::runtime::Handle::current(),
            waiters: Arc::clone(&waiters),
            timeout: self.config.timeout,
            node: self.config.name.clone(),
        };
        let builder = (self.config.open)(&path).create(true).write_log(Arc::new(log));
        let db = tokio::task::spawn_blocking(move || builder.open())
            .await
            .map_err(|e| ClusterError::Config(e.to_string()))??;
        let start = Applied::read(&db)?;
        let (applied_tx, applied) = watch::channel(start);
        let applier = Applier {
            partition: p,
            db: db.clone(),
            js: self.js.clone(),
            stream: stream_name(&self.config.prefix, p),
            subject: subject(&self.config.prefix, p),
            waiters,
            applied: applied_tx,
            stop: self.stop.subscribe(),
            sync_every: self.config.sync_every,
            snapshots: self.config.snapshot_every.map(|every| Snapshots {
                every,
                buckets: self.buckets.clone(),
                prefix: self.config.prefix.clone(),
                last: start.seq,
                trimmed: Arc::new(std::sync::atomic::AtomicU64::new(start.seq)),
                node: self.config.name.clone(),
            }),
        };
        self.tasks.push(tokio::spawn(applier.run()));
        self.partitions.insert(p, Hosted { db, applied });
        Ok(())
    }

    /// The node's configuration.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// The partition of namespace `ns`.
    pub fn partition_of(&self, ns: &str) -> u32 {
        partition_of(ns, self.config.partitions)
    }

    /// The database of partition `p`, if this node hosts it.
    pub fn db(&self, p: u32) -> Option<&Db> {
        self.partitions.get(&p).map(|h| &h.db)
    }

    /// The database holding namespace `ns`, if this node hosts its partition.
    pub fn db_for(&self, ns: &str) -> Option<&Db> {
        self.db(self.partition_of(ns))
    }

    /// The node's databases as one handle that routes each namespace to its partition's
    /// ([`mnemon::Db::partitioned`]): what `mnemon serve --cluster` serves. A namespace of a
    /// partition this node does not host is an error of code `unavailable` naming the
    /// partition.
    pub fn handle(&self) -> Result<Db, ClusterError> {
        let hosting = Hosting {
            count: self.config.partitions,
            node: self.config.name.clone(),
            dbs: self.partitions.iter().map(|(&p, h)| (p, h.db.clone())).collect(),
        };
        Ok(Db::partitioned(Arc::new(hosting))?)
    }

    /// Say where this node serves its partitions (`http://host:port`): published with its
    /// status, so that other nodes redirect requests for its partitions here.
    pub fn advertise(&self, url: &str) {
        *self.url.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(url.to_string());
    }

    /// Where namespace `ns` is served if this node does not host its partition: the URL of the
    /// live node hosting it that has applied the most of it (`None`: hosted here, or no live
    /// node hosting it has said where it serves). Nodes are live while their status is
    /// refreshed (every second; one not refreshed for 5 seconds is passed over).
    pub fn elsewhere(&self, ns: &str) -> Option<String> {
        let p = self.partition_of(ns);
        if self.partitions.contains_key(&p) {
            return None;
        }
        let peers = self.peers.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        peers
            .iter()
            .filter(|n| n.node != self.config.name && n.url.is_some())
            .filter_map(|n| n.applied.get(&p).map(|a| (*a, n)))
            .max_by_key(|(a, _)| *a)
            .and_then(|(_, n)| n.url.clone())
    }

    /// The partitions this node hosts.
    pub fn hosted(&self) -> impl Iterator<Item = u32> + '_ {
        self.partitions.keys().copied()
    }

    /// The last entry of partition `p` this node applied (`None` if it does not host it).
    pub fn applied(&self, p: u32) -> Option<Applied> {
        self.partitions.get(&p).map(|h| *h.applied.borrow())
    }

    /// Wait until this node has applied entry `seq` of partition `p` (a consistency token, see
    /// [`crate::take_tokens`]), at most `timeout`: whether it has.
    pub async fn wait_applied(&self, p: u32, seq: u64, timeout: Duration) -> bool {
        let Some(h) = self.partitions.get(&p) else { return false };
        let mut rx = h.applied.clone();
        tokio::time::timeout(timeout, rx.wait_for(|a| a.seq >= seq)).await.is_ok_and(|r| r.is_ok())
    }

    /// Each hosted partition's place in its log.
    pub async fn status(&self) -> Result<Vec<PartitionStatus>, ClusterError> {
        let mut out = Vec::new();
        for (&p, h) in &self.partitions {
            let mut s =
                self.js.get_stream(stream_name(&self.config.prefix, p)).await.map_err(ClusterError::nats)?;
            let last = s.info().await.map_err(ClusterError::nats)?.state.last_sequence;
            out.push(PartitionStatus { partition: p, applied: h.applied.borrow().seq, last });
        }
        Ok(out)
    }

    /// Stop the appliers, make every applied entry durable in the files, and leave the list
    /// of live nodes (so that the streams' entries this node had yet to apply may be purged
    /// once snapshots hold them). With the server gone, it waits a few seconds at most for
    /// it, then syncs the files and returns: a node always stops.
    pub async fn shutdown(mut self) -> Result<(), ClusterError> {
        let _ = self.stop.send(true);
        for t in std::mem::take(&mut self.tasks) {
            // A task waiting on a server that is gone is stopped, not waited for.
            let abort = t.abort_handle();
            if tokio::time::timeout(SHUTDOWN_WAIT, t).await.is_err() {
                abort.abort();
            }
        }
        let _ = tokio::time::timeout(SHUTDOWN_WAIT, self.buckets.status.delete(&self.config.name)).await;
        for h in self.partitions.values() {
            let db = h.db.clone();
            tokio::task::spawn_blocking(move || db.sync())
                .await
                .map_err(|e| ClusterError::Config(e.to_string()))??;
        }
        Ok(())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Applier {
    /// Copy the file between two entries and publish it (in a task of its own), if anything
    /// was applied since the last snapshot; then trim the stream (again, if a lagging node held
    /// the last trim back).
    fn snapshot(&mut self) -> Result<(), ClusterError> {
        use std::sync::atomic::Ordering;
        let applied = self.applied.borrow().seq;
        let p = self.partition;
        let Some(s) = self.snapshots.as_mut() else { return Ok(()) };
        let (buckets, prefix, js, me) =
            (s.buckets.clone(), s.prefix.clone(), self.js.clone(), s.node.clone());
        let trimmed = Arc::clone(&s.trimmed);
        if applied > s.last {
            let file = tokio::task::block_in_place(|| crate::snapshot::copy(&self.db, p))?;
            s.last = applied;
            tokio::spawn(async move {
                let done = async {
                    crate::snapshot::upload(&buckets.snapshots, p, applied, &file).await?;
                    crate::snapshot::trim(&js, &buckets.status, &prefix, (&me, p), applied).await
                };
                match done.await {
                    Ok(through) => {
                        trimmed.fetch_max(through, Ordering::Relaxed);
                    }
                    Err(e) => tracing::warn!(partition = p, error = %e, "snapshot not published"),
                }
            });
        } else if trimmed.load(Ordering::Relaxed) < s.last {
            let last = s.last;
            tokio::spawn(async move {
                match crate::snapshot::trim(&js, &buckets.status, &prefix, (&me, p), last).await {
                    Ok(through) => {
                        trimmed.fetch_max(through, Ordering::Relaxed);
                    }
                    Err(e) => tracing::warn!(partition = p, error = %e, "stream not trimmed"),
                }
            });
        }
        Ok(())
    }
}

/// The task publishing a node's status (see `status.rs`).
struct StatusPublisher {
    bucket: async_nats::jetstream::kv::Store,
    node: String,
    applied: Vec<(u32, watch::Receiver<Applied>)>,
    stop: watch::Receiver<bool>,
    url: Arc<std::sync::RwLock<Option<String>>>,
    peers: Arc<std::sync::RwLock<Vec<crate::status::NodeStatus>>>,
}

impl StatusPublisher {
    async fn run(mut self) {
        let mut tick = tokio::time::interval(crate::status::EVERY);
        loop {
            tokio::select! {
                _ = self.stop.changed() => return,
                _ = tick.tick() => {
                    let now = mnemon::Timestamp::now().as_micros();
                    let status = crate::status::NodeStatus {
                        node: self.node.clone(),
                        applied: self.applied.iter().map(|(p, a)| (*p, a.borrow().seq)).collect(),
                        at: now,
                        url: self.url.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone(),
                    };
                    if let Ok(bytes) = serde_json::to_vec(&status) {
                        // A status lost while NATS is away is published again next second.
                        let _ = self.bucket.put(&self.node, bytes.into()).await;
                    }
                    if let Ok(mut live) = crate::status::live(&self.bucket).await {
                        live.retain(|n| now - n.at < LIVE_FOR);
                        *self.peers.write().unwrap_or_else(std::sync::PoisonError::into_inner) = live;
                    }
                }
            }
        }
    }
}

/// The partitions a node hosts, as [`mnemon::Partitions`].
#[derive(Debug)]
struct Hosting {
    count: u32,
    node: String,
    dbs: BTreeMap<u32, Db>,
}

impl mnemon::Partitions for Hosting {
    fn db_for(&self, ns: &str) -> mnemon::Result<Db> {
        let p = partition_of(ns, self.count);
        self.dbs.get(&p).cloned().ok_or_else(|| mnemon::Error::Log {
            message: format!(
                "namespace {ns:?} is in partition {p}, which node {:?} does not host (it hosts {:?}): ask a node that does",
                self.node,
                self.dbs.keys().collect::<Vec<_>>()
            ),
        })
    }

    fn all(&self) -> Vec<Db> {
        self.dbs.values().cloned().collect()
    }
}

/// The task applying one partition's log.
struct Applier {
    partition: u32,
    db: Db,
    js: jetstream::Context,
    stream: String,
    subject: String,
    waiters: Arc<Waiters>,
    applied: watch::Sender<Applied>,
    stop: watch::Receiver<bool>,
    sync_every: Duration,
    snapshots: Option<Snapshots>,
}

/// An applier's snapshots (see `snapshot.rs`).
struct Snapshots {
    every: Duration,
    buckets: Buckets,
    prefix: String,
    /// The entry the last snapshot held (or the file, at start).
    last: u64,
    /// The entry through which the stream was trimmed after it (shared with the task that
    /// publishes the snapshot), below `last` while a live node lags.
    trimmed: Arc<std::sync::atomic::AtomicU64>,
    node: String,
}

impl Applier {
    /// Follow the log until stopped, starting again (after a pause that grows to 2 s) when the
    /// connection or the consumer fails.
    async fn run(mut self) {
        let mut pause = Duration::from_millis(50);
        loop {
            if *self.stop.borrow() {
                return;
            }
            match self.follow().await {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(partition = self.partition, error = %e, "applier restarts");
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = self.stop.changed() => return,
                    }
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// Apply entries from the one after the last applied, until stopped (`Ok`) or failed.
    async fn follow(&mut self) -> Result<(), ClusterError> {
        let start = *self.applied.borrow();
        let stream = self.js.get_stream(&self.stream).await.map_err(ClusterError::nats)?;
        let consumer = stream
            .create_consumer(OrderedConfig {
                filter_subject: self.subject.clone(),
                deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: start.seq + 1 },
                ..Default::default()
            })
            .await
            .map_err(ClusterError::nats)?;
        let mut messages = consumer.messages().await.map_err(ClusterError::nats)?;
        let mut sync = tokio::time::interval(self.sync_every);
        let mut synced = start.seq;
        let every = self.snapshots.as_ref().map_or(Duration::from_secs(3600), |s| s.every);
        let mut snap = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            tokio::select! {
                _ = self.stop.changed() => return Ok(()),
                _ = snap.tick(), if self.snapshots.is_some() => self.snapshot()?,
                _ = sync.tick() => {
                    let now = self.applied.borrow().seq;
                    if now > synced {
                        let db = self.db.clone();
                        tokio::task::block_in_place(|| db.sync())?;
                        synced = now;
                    }
                }
                m = messages.next() => {
                    let message = match m {
                        None => return Err(ClusterError::Nats("the consumer ended".into())),
                        Some(m) => m.map_err(ClusterError::nats)?,
                    };
                    let last = *self.applied.borrow();
                    let step = tokio::task::block_in_place(|| {
                        apply(&self.db, self.partition, last, &message, &self.waiters)
                    })?;
                    if let Step::Applied(a) = step {
                        self.applied.send_replace(a);
                    }
                }
            }
        }
    }
}
