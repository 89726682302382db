//! mnemon's vector index: an exact SIMD scan, an HNSW graph ([`FlatHnsw`]) behind the
//! [`VectorIndex`] trait, a planner choosing between them, and persistence beside the
//! database that is never the source of truth. With the `hnsw-rs` feature the graph of
//! hnsw_rs is there too, as `Engine::HnswRs`, for comparison; `synth` adds the seeded data
//! generator the tests and benchmarks use.
//!
//! Vectors live in redb (see [`mnemon_storage::WriteOp::PutVector`]). [`VectorIndexes`] keeps,
//! per (vector space, namespace), every vector in one contiguous array, which of them serve a
//! record that is live now, and a graph over the live ones once there are enough of them.
//! A search is answered as of any (valid, known) time:
//!
//! - *now, unfiltered*: over the live slots, exactly when there are few, else through the
//!   graph with dead points filtered out, plus an exact scan of live points newer than the
//!   graph; every hit is checked against the snapshot;
//! - *filtered or in the past*: the candidates are the records the timeline lists for that
//!   time and filter; the planner scans them exactly when they are few, else searches the
//!   graph (over-fetching then filtering when the filter keeps much of the graph, filtering
//!   inside the search otherwise) and falls back to the exact scan when the graph finds fewer
//!   than `k`.
//!
//! ```
//! use mnemon_index::{IndexOptions, Query, VectorIndexes};
//! use mnemon_storage::{body::Learning, Namespace, NewRecord, Store, StoreOptions, WriteOp};
//!
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path().join("m.redb"), StoreOptions { create: true, ..Default::default() })?;
//! let ns = Namespace::new("demo")?;
//! for (text, v) in [("bounded queues", [1.0, 0.1, 0.0]), ("retry with jitter", [0.0, 1.0, 0.2])] {
//!     let rec = NewRecord::new(ns.clone(), Learning { text: text.into(), ..Default::default() });
//!     let id = rec.id;
//!     store.write(vec![
//!         WriteOp::Insert(rec),
//!         WriteOp::PutVector { namespace: ns.clone(), id, rev: None, space: "toy-3".into(), vector: v.to_vec() },
//!     ])?;
//! }
//! let index = VectorIndexes::new(store.clone(), IndexOptions::default());
//! let found = index.search(&store.snapshot()?, &Query::new("toy-3", &ns, &[0.9, 0.0, 0.0], 1))?;
//! assert_eq!(found.hits.len(), 1);
//! assert_eq!(found.plan.path.to_string(), "exact");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

mod error;
pub mod exact;
pub mod flat;
#[doc(hidden)]
pub mod fuzzing;
mod graph;
#[cfg(feature = "hnsw-rs")]
mod hnswrs;
pub mod kernel;
mod persist;
pub mod quant;
mod segment;
#[cfg(any(test, feature = "synth"))]
pub mod synth;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use mnemon_storage::{Namespace, Snapshot, Store};

pub use error::IndexError;
pub use exact::{Scored, TopK};
pub use flat::FlatHnsw;
pub use graph::{Connectivity, FlatRows, HnswParams, NoRows, Rows, VectorIndex};
#[cfg(feature = "hnsw-rs")]
pub use hnswrs::HnswIndex;
pub use persist::{Manifest, ManifestFile};

use segment::{GONE, Segment};

mod maintain;
mod query;
mod search;
pub use query::*;

/// Which graph implementation builds new indexes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// [`FlatHnsw`], this crate's own (the default: see docs/index.md for the comparison).
    #[default]
    Mnemon,
    /// `HnswIndex`, on hnsw_rs (the `hnsw-rs` feature), for comparison. A graph it saved is
    /// rebuilt by a build without it.
    #[cfg(feature = "hnsw-rs")]
    HnswRs,
}

impl Engine {
    /// Its name in manifests and reports.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Mnemon => "mnemon",
            #[cfg(feature = "hnsw-rs")]
            Engine::HnswRs => "hnsw_rs",
        }
    }

    /// Parse a name.
    pub fn parse(s: &str) -> Option<Engine> {
        match s {
            "mnemon" => Some(Engine::Mnemon),
            #[cfg(feature = "hnsw-rs")]
            "hnsw_rs" | "hnsw-rs" => Some(Engine::HnswRs),
            _ => None,
        }
    }

    /// Build a graph over `points` with this engine.
    pub fn build(
        self,
        params: HnswParams,
        dim: usize,
        points: &[(u32, &[f32])],
    ) -> Result<Box<dyn VectorIndex>, IndexError> {
        Ok(match self {
            Engine::Mnemon => Box::new(FlatHnsw::build(params, dim, points)?),
            #[cfg(feature = "hnsw-rs")]
            Engine::HnswRs => Box::new(HnswIndex::build(params, points)?),
        })
    }

    /// Load a graph saved by this engine.
    pub fn load(
        self,
        dir: &Path,
        basename: &str,
        params: HnswParams,
    ) -> Result<Box<dyn VectorIndex>, IndexError> {
        // mnemon's graph records its own parameters; hnsw_rs's needs them given.
        #[cfg(not(feature = "hnsw-rs"))]
        let _ = params;
        Ok(match self {
            Engine::Mnemon => Box::new(FlatHnsw::load(dir, basename)?),
            #[cfg(feature = "hnsw-rs")]
            Engine::HnswRs => Box::new(HnswIndex::load(dir, basename, params)?),
        })
    }
}

/// The most results one search returns: a larger `k` is refused (a caller asking for
/// billions gets a clear error, not an allocation that aborts the process).
pub const MAX_K: usize = 10_000;

/// Tuning of the index and its planner.
#[derive(Clone, Debug)]
pub struct IndexOptions {
    /// The graph implementation for new builds.
    pub engine: Engine,
    /// Graph parameters.
    pub params: HnswParams,
    /// Build a graph for a segment once it has this many live vectors.
    pub graph_min: usize,
    /// The planner scans exactly when there are at most this many candidates (measured
    /// crossover, see docs/index.md).
    pub exact_max: usize,
    /// Over-fetch then filter when the filter keeps at least this share of the graph; filter
    /// inside the graph search below it.
    pub overfetch_min_selectivity: f64,
    /// Rebuild when this share of the graph's points is no longer live.
    pub rebuild_tombstones: f64,
    /// Add live points newer than the graph to it once there are this many.
    pub tail_max: usize,
    /// Where index files are published (`None`: in memory only).
    pub dir: Option<PathBuf>,
    /// Build, extend and publish graphs on a background thread when a search finds a segment
    /// that needs it.
    pub auto_maintain: bool,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            engine: Engine::default(),
            params: HnswParams::default(),
            graph_min: 5_000,
            exact_max: 5_000,
            overfetch_min_selectivity: 0.5,
            rebuild_tombstones: 0.2,
            tail_max: 2_000,
            dir: None,
            auto_maintain: false,
        }
    }
}

impl IndexOptions {
    /// The index directory beside a database file: `<file>.index`.
    pub fn dir_beside(db: &Path) -> PathBuf {
        let mut name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(".index");
        db.with_file_name(name)
    }
}

/// One segment's state (for `stats` and tests).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct SegmentStatus {
    /// The vector space.
    pub space: String,
    /// The namespace.
    pub namespace: String,
    /// Dimension.
    pub dimension: usize,
    /// Vectors held (all revisions, not forgotten).
    pub vectors: usize,
    /// Live now.
    pub live: usize,
    /// Points in the graph.
    pub graph_points: usize,
    /// Graph points no longer live.
    pub tombstones: usize,
    /// Live points not in the graph yet.
    pub unindexed: usize,
    /// The published generation (0: never published).
    pub generation: u64,
    /// The commit the segment reflects.
    pub covered_seq: u64,
    /// Why a persisted graph was not used, if it was not.
    pub load_note: Option<String>,
}

/// What a build or publish did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct BuildReport {
    /// The vector space.
    pub space: String,
    /// The namespace.
    pub namespace: String,
    /// Points in the new graph.
    pub graph_points: usize,
    /// The generation published (None: not published).
    pub generation: Option<u64>,
}

type SegKey = (String, String);

/// A verified published index: its manifest, points file and graph.
type Published = (Manifest, Vec<segment::Slot>, Vec<bool>, Box<dyn VectorIndex>);

/// The vector indexes of one database: one segment per (space, namespace), loaded on first
/// use. Cheap to share behind an `Arc`; searches run concurrently.
pub struct VectorIndexes {
    store: Store,
    opts: IndexOptions,
    segments: Mutex<HashMap<SegKey, Arc<RwLock<Segment>>>>,
    maintaining: Arc<AtomicBool>,
    /// Held while a segment is published: one publish at a time picks the next generation.
    publishing: Arc<Mutex<()>>,
}

impl std::fmt::Debug for VectorIndexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndexes").field("dir", &self.opts.dir).finish()
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

impl VectorIndexes {
    /// Indexes over `store`'s vectors. Nothing is loaded until a segment is first used.
    pub fn new(store: Store, opts: IndexOptions) -> VectorIndexes {
        VectorIndexes {
            store,
            opts,
            segments: Mutex::new(HashMap::new()),
            maintaining: Arc::new(AtomicBool::new(false)),
            publishing: Arc::new(Mutex::new(())),
        }
    }

    /// The options.
    pub fn options(&self) -> &IndexOptions {
        &self.opts
    }

    /// The segment of (space, namespace), loaded (from the published files when they verify,
    /// else from redb) and caught up with `snap`. `None` when the space does not exist.
    fn segment(
        &self,
        snap: &Snapshot,
        space: &str,
        ns: &Namespace,
    ) -> Result<Option<Arc<RwLock<Segment>>>, IndexError> {
        let key = (space.to_string(), ns.as_str().to_string());
        let existing = self.segments.lock().unwrap_or_else(PoisonError::into_inner).get(&key).cloned();
        let seg = match existing {
            Some(s) => s,
            None => {
                let Some(sp) = snap.vector_space(space)? else { return Ok(None) };
                let mut seg = Segment::new(space, ns, sp.dimension as usize);
                self.load_published(snap, &mut seg);
                seg.load_from(snap)?;
                let arc = Arc::new(RwLock::new(seg));
                let mut map = self.segments.lock().unwrap_or_else(PoisonError::into_inner);
                map.entry(key).or_insert(arc).clone()
            }
        };
        self.catch_up(snap, &seg)?;
        Ok(Some(seg))
    }

    /// Apply the commits after the segment's to it.
    fn catch_up(&self, snap: &Snapshot, seg: &RwLock<Segment>) -> Result<(), IndexError> {
        let seq = snap.meta().commit_seq;
        if read(seg).covered_seq >= seq {
            return Ok(());
        }
        let mut s = write(seg);
        if s.covered_seq >= seq {
            return Ok(());
        }
        let now = snap.now();
        let commits = snap.commits_after(s.covered_seq)?;
        let mut ids = std::collections::HashSet::new();
        for c in &commits {
            for (n, id) in &c.changed {
                if n == &s.ns {
                    ids.insert(*id);
                }
            }
        }
        for id in ids {
            s.refresh(snap, id, now)?;
        }
        s.covered_seq = seq;
        Ok(())
    }

    /// Try the published graph of a segment; on any mismatch note why and go on without it.
    fn load_published(&self, snap: &Snapshot, seg: &mut Segment) {
        let Some(dir) = &self.opts.dir else { return };
        let key = persist::manifest_key(&seg.space, &seg.ns);
        let manifest = match snap.aux(&key) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return,
            Err(e) => {
                seg.load_note = Some(e.to_string());
                return;
            }
        };
        let attempt = || -> Result<Published, String> {
            let m = Manifest::decode(&manifest)?;
            if m.space != seg.space || m.namespace != seg.ns.as_str() {
                return Err("the manifest names another segment".into());
            }
            if m.dimension as usize != seg.dim {
                return Err(format!(
                    "dimension {} in the manifest, {} in the database",
                    m.dimension, seg.dim
                ));
            }
            persist::verify_files(dir, &m)?;
            let (slots, in_graph) =
                persist::read_points(&dir.join(format!("{}.points", m.basename)), seg.dim)?;
            if slots.len() as u64 != m.slots {
                return Err("the points file does not match the manifest".into());
            }
            let engine =
                Engine::parse(&m.engine).ok_or_else(|| format!("unknown graph engine {:?}", m.engine))?;
            let g = engine
                .load(dir, &m.basename, m.params(self.opts.params.ef_search))
                .map_err(|e| e.to_string())?;
            if g.len() as u64 != m.graph_points {
                return Err(format!(
                    "the graph has {} points, the manifest says {}",
                    g.len(),
                    m.graph_points
                ));
            }
            Ok((m, slots, in_graph, g))
        };
        match attempt() {
            Ok((m, slots, in_graph, g)) => {
                seg.seed(slots, in_graph);
                seg.graph = Some(Arc::from(g));
                seg.generation = m.generation;
                seg.dirty = false;
            }
            Err(reason) => seg.load_note = Some(format!("published index not used, rebuilding: {reason}")),
        }
    }
}

impl VectorIndexes {
    /// The loaded segments.
    pub fn status(&self) -> Vec<SegmentStatus> {
        let segs: Vec<Arc<RwLock<Segment>>> =
            self.segments.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        let mut out: Vec<SegmentStatus> = segs
            .iter()
            .map(|seg| {
                let s = read(seg);
                SegmentStatus {
                    space: s.space.clone(),
                    namespace: s.ns.as_str().to_string(),
                    dimension: s.dim,
                    vectors: s.state.iter().filter(|st| **st != GONE).count(),
                    live: s.live,
                    graph_points: s.graph_points,
                    tombstones: s.tombstones(),
                    unindexed: s.tail().len(),
                    generation: s.generation,
                    covered_seq: s.covered_seq,
                    load_note: s.load_note.clone(),
                }
            })
            .collect();
        out.sort_by(|a, b| (&a.space, &a.namespace).cmp(&(&b.space, &b.namespace)));
        out
    }

    /// Load (and catch up) the segment of (space, namespace) now, returning its status.
    pub fn open_segment(&self, space: &str, ns: &Namespace) -> Result<Option<SegmentStatus>, IndexError> {
        let snap = self.store.snapshot()?;
        if self.segment(&snap, space, ns)?.is_none() {
            return Ok(None);
        }
        Ok(self.status().into_iter().find(|s| s.space == space && s.namespace == ns.as_str()))
    }
}
