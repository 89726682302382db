//! mnemon's vector index: an exact SIMD scan, an HNSW graph ([`FlatHnsw`]) behind the
//! [`VectorIndex`] trait, a planner choosing between them, and persistence beside the
//! database that is never the source of truth. With the `hnsw-rs` feature the graph of
//! hnsw_rs is there too, as [`Engine::HnswRs`], for comparison; `synth` adds the seeded data
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
//!         WriteOp::PutVector { namespace: ns.clone(), id, space: "toy-3".into(), vector: v.to_vec() },
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
mod segment;
#[cfg(any(test, feature = "synth"))]
pub mod synth;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use mnemon_storage::{AsOf, Durability, ListQuery, Namespace, Record, Snapshot, Store, WriteOp};

pub use error::IndexError;
pub use exact::{Scored, TopK};
pub use flat::FlatHnsw;
pub use graph::{HnswParams, VectorIndex};
#[cfg(feature = "hnsw-rs")]
pub use hnswrs::HnswIndex;
pub use persist::{Manifest, ManifestFile};

use segment::{GONE, LIVE, Segment};

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

/// How a search may run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// The planner decides.
    #[default]
    Auto,
    /// Always the exact scan.
    Exact,
    /// The graph whenever one exists (still falls back to exact when it finds fewer than k).
    Graph,
}

/// A vector search.
#[derive(Clone, Debug)]
pub struct Query<'a> {
    /// The vector space (embedding model id).
    pub space: &'a str,
    /// The namespace.
    pub namespace: &'a Namespace,
    /// The query vector (normalised here).
    pub vector: &'a [f32],
    /// How many results.
    pub k: usize,
    /// Which records, as of when: the storage's own filter (its `limit` is not used; `k` is).
    pub filter: ListQuery,
    /// Candidates examined in the graph (default: the options' `ef_search`).
    pub ef: Option<usize>,
    /// Exact, graph or planned.
    pub mode: Mode,
}

impl<'a> Query<'a> {
    /// The `k` nearest records to `vector` in a namespace, valid now.
    pub fn new(space: &'a str, namespace: &'a Namespace, vector: &'a [f32], k: usize) -> Self {
        Query { space, namespace, vector, k, filter: ListQuery::new(), ef: None, mode: Mode::Auto }
    }

    fn unfiltered_now(&self) -> bool {
        let f = &self.filter;
        f.as_of == AsOf::now()
            && f.kinds.is_empty()
            && f.tags.is_empty()
            && f.source.is_none()
            && f.task.is_none()
    }
}

/// Which way a search ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchPath {
    /// Nothing to search.
    Empty,
    /// The exact scan over every candidate.
    Exact,
    /// The graph (dead points filtered inside the search), plus the exact scan of points
    /// newer than the graph.
    Graph,
    /// The graph asked for more than k, then filtered.
    GraphOverfetch,
    /// The graph with the filter applied inside the search.
    GraphFiltered,
}

impl std::fmt::Display for SearchPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SearchPath::Empty => "empty",
            SearchPath::Exact => "exact",
            SearchPath::Graph => "graph",
            SearchPath::GraphOverfetch => "graph-overfetch",
            SearchPath::GraphFiltered => "graph-filtered",
        })
    }
}

/// What the planner decided and saw (for tests and `--explain`).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The path that produced the results (after any fallback).
    pub path: SearchPath,
    /// The path tried first when it fell back.
    pub first: Option<SearchPath>,
    /// Candidates (records with a vector that match the filter and time).
    pub candidates: usize,
    /// Points in the graph (0: no graph).
    pub graph_points: usize,
    /// Live points newer than the graph, scanned exactly.
    pub unindexed: usize,
    /// Share of the graph the filter keeps.
    pub selectivity: f64,
    /// ef used.
    pub ef: usize,
    /// Hits dropped because the snapshot no longer had them as they were.
    pub rejected: usize,
}

impl Plan {
    fn new(path: SearchPath) -> Plan {
        Plan {
            path,
            first: None,
            candidates: 0,
            graph_points: 0,
            unindexed: 0,
            selectivity: 0.0,
            ef: 0,
            rejected: 0,
        }
    }

    /// Whether the graph returned fewer than k and the exact scan answered instead.
    pub fn fell_back(&self) -> bool {
        self.first.is_some()
    }
}

/// A result: the record as of the query's time and its cosine similarity.
#[derive(Clone, Debug)]
pub struct Hit {
    /// The record.
    pub record: Record,
    /// Cosine similarity to the query, -1 to 1.
    pub score: f32,
}

/// The results of a search and how they were found.
#[derive(Clone, Debug)]
pub struct Found {
    /// Best first.
    pub hits: Vec<Hit>,
    /// The plan.
    pub plan: Plan,
}

/// One segment's state (for `stats` and tests).
#[derive(Clone, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug, PartialEq, Eq)]
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
                seg.graph = Some(g);
                seg.generation = m.generation;
                seg.dirty = false;
            }
            Err(reason) => seg.load_note = Some(format!("published index not used, rebuilding: {reason}")),
        }
    }

    /// The dot product of `query` (a unit vector of the space's dimension) with the vector
    /// serving each of `records` (`(id, revision)`) in the space and namespace, read from the
    /// segment in memory: `None` where the segment holds no vector for it (the caller may
    /// look in the store). Hybrid search weighs its lexical candidates with it, where a read
    /// of each stored vector costs a B-tree lookup.
    pub fn dots(
        &self,
        snap: &Snapshot,
        space: &str,
        ns: &Namespace,
        query: &[f32],
        records: &[(mnemon_storage::RecordId, u32)],
    ) -> Result<Vec<Option<f32>>, IndexError> {
        let Some(seg) = self.segment(snap, space, ns)? else { return Ok(vec![None; records.len()]) };
        let s = read(&seg);
        Ok(records
            .iter()
            .map(|&(id, rev)| {
                let slot = s.serving(id, rev)?;
                let row = s.row(slot);
                (s.has_vector(slot) && row.len() == query.len()).then(|| kernel::dot(query, row))
            })
            .collect())
    }

    /// Search. See the crate documentation for the plan.
    pub fn search(&self, snap: &Snapshot, q: &Query<'_>) -> Result<Found, IndexError> {
        if q.k > MAX_K {
            return Err(IndexError::BadQuery(format!(
                "k {} is above the most a search returns ({MAX_K})",
                q.k
            )));
        }
        let Some(space) = snap.vector_space(q.space)? else {
            return Ok(Found { hits: Vec::new(), plan: Plan::new(SearchPath::Empty) });
        };
        if q.vector.len() != space.dimension as usize {
            return Err(IndexError::BadQuery(format!(
                "dimension {} does not match vector space {:?} ({})",
                q.vector.len(),
                q.space,
                space.dimension
            )));
        }
        let query = mnemon_storage::normalise(q.vector).map_err(|e| IndexError::BadQuery(e.to_string()))?;
        let Some(seg) = self.segment(snap, q.space, q.namespace)? else {
            return Ok(Found { hits: Vec::new(), plan: Plan::new(SearchPath::Empty) });
        };
        let found = {
            let s = read(&seg);
            if q.unfiltered_now() {
                match self.search_live(snap, &s, &query, q)? {
                    Some(found) => found,
                    None => self.search_listed(snap, &s, &query, q, Some(SearchPath::Graph))?,
                }
            } else {
                self.search_listed(snap, &s, &query, q, None)?
            }
        };
        if self.opts.auto_maintain && self.needs_maintenance(&read(&seg)) {
            self.maintain_in_background();
        }
        Ok(found)
    }

    fn use_graph(&self, s: &Segment, q: &Query<'_>, candidates: usize) -> bool {
        s.graph.is_some()
            && match q.mode {
                Mode::Exact => false,
                Mode::Graph => true,
                Mode::Auto => candidates > self.opts.exact_max,
            }
    }

    /// Now, unfiltered: over the live slots. `None` when verification rejected so many hits
    /// that fewer than k are left (the caller then lists the candidates).
    fn search_live(
        &self,
        snap: &Snapshot,
        s: &Segment,
        query: &[f32],
        q: &Query<'_>,
    ) -> Result<Option<Found>, IndexError> {
        let k = q.k;
        // Room for hits the snapshot rejects (ended since the last commit, future-dated).
        let want = k + k / 2 + 4;
        let mut plan = Plan::new(SearchPath::Exact);
        plan.candidates = s.live;
        let scored = if self.use_graph(s, q, s.live) {
            let g = s.graph.as_ref().map(|g| g.as_ref());
            let ef = q.ef.unwrap_or(self.opts.params.ef_search).max(want);
            let keep = |p: u32| s.state.get(p as usize) == Some(&LIVE);
            let mut top = TopK::new(want);
            for h in g.map(|g| g.search(query, want, ef, Some(&keep))).unwrap_or_default() {
                top.push(h);
            }
            let tail = s.tail();
            for h in exact::scan_points(&s.data, s.dim, query, want, &tail) {
                top.push(h);
            }
            plan.path = SearchPath::Graph;
            plan.graph_points = s.graph_points;
            plan.unindexed = tail.len();
            plan.ef = ef;
            plan.selectivity = if s.graph_points == 0 { 0.0 } else { s.live as f64 / s.graph_points as f64 };
            top.into_sorted()
        } else {
            exact::scan_all(&s.data, s.dim, query, want, &|p| s.state.get(p as usize) == Some(&LIVE))
        };
        let mut hits = Vec::with_capacity(k.min(scored.len()));
        for h in &scored {
            if hits.len() == k {
                break;
            }
            match s.verify_now(snap, h.point)? {
                Some(record) => hits.push(Hit { record, score: h.score }),
                None => plan.rejected += 1,
            }
        }
        if hits.len() < k.min(s.live) && plan.rejected > 0 {
            return Ok(None);
        }
        Ok(Some(Found { hits, plan }))
    }

    /// Filtered or past: the candidates are the records listed for the filter and time.
    fn search_listed(
        &self,
        snap: &Snapshot,
        s: &Segment,
        query: &[f32],
        q: &Query<'_>,
        first: Option<SearchPath>,
    ) -> Result<Found, IndexError> {
        let k = q.k;
        let lq = ListQuery { limit: None, ..q.filter.clone() };
        let records = snap.list(q.namespace, &lq)?;
        let mut by_slot: HashMap<u32, Record> = HashMap::with_capacity(records.len());
        let mut extra: Vec<Hit> = Vec::new();
        for rec in records {
            match s.serving(rec.id, rec.rev) {
                Some(slot) if s.state.get(slot as usize) != Some(&GONE) => {
                    by_slot.insert(slot, rec);
                }
                _ => {
                    // Not in memory (the segment is ahead of this snapshot): read it.
                    if let Some((_, v)) = snap.vector_for(q.space, q.namespace, rec.id, rec.rev)? {
                        extra.push(Hit { score: kernel::dot(query, &v), record: rec });
                    }
                }
            }
        }
        let mut cands: Vec<u32> = by_slot.keys().copied().collect();
        cands.sort_unstable();
        let n = cands.len() + extra.len();
        let mut plan = Plan::new(SearchPath::Exact);
        plan.first = first;
        plan.candidates = n;
        let exact = |cands: &[u32]| exact::scan_points(&s.data, s.dim, query, k, cands);
        let scored: Vec<Scored> = if self.use_graph(s, q, n) && !cands.is_empty() {
            let g = s.graph.as_ref().map(|g| g.as_ref());
            let mut member = vec![false; s.slots.len()];
            let (mut in_graph, mut tail) = (0usize, Vec::new());
            for &c in &cands {
                member[c as usize] = true;
                if s.in_graph[c as usize] {
                    in_graph += 1;
                } else {
                    tail.push(c);
                }
            }
            let sel = if s.graph_points == 0 { 0.0 } else { in_graph as f64 / s.graph_points as f64 };
            let base_ef = q.ef.unwrap_or(self.opts.params.ef_search);
            let keep = |p: u32| member.get(p as usize).copied().unwrap_or(false);
            let mut top = TopK::new(k);
            let path = if sel >= self.opts.overfetch_min_selectivity {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let fetch = ((k as f64 / sel.max(1e-9)) * 1.2).ceil().min(s.graph_points as f64) as usize + k;
                let ef = base_ef.max(fetch);
                plan.ef = ef;
                for h in g.map(|g| g.search(query, fetch, ef, None)).unwrap_or_default() {
                    if keep(h.point) {
                        top.push(h);
                    }
                }
                SearchPath::GraphOverfetch
            } else {
                let ef = base_ef.max(k);
                plan.ef = ef;
                for h in g.map(|g| g.search(query, k, ef, Some(&keep))).unwrap_or_default() {
                    top.push(h);
                }
                SearchPath::GraphFiltered
            };
            for h in exact(&tail) {
                top.push(h);
            }
            plan.graph_points = s.graph_points;
            plan.unindexed = tail.len();
            plan.selectivity = sel;
            let found = top.into_sorted();
            if found.len() < k.min(cands.len()) {
                plan.first = Some(path);
                plan.path = SearchPath::Exact;
                exact(&cands)
            } else {
                plan.path = path;
                found
            }
        } else {
            exact(&cands)
        };
        let mut hits: Vec<Hit> = scored
            .into_iter()
            .filter_map(|h| by_slot.remove(&h.point).map(|record| Hit { record, score: h.score }))
            .collect();
        if !extra.is_empty() {
            hits.extend(extra);
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            hits.truncate(k);
        }
        if n == 0 {
            plan.path = SearchPath::Empty;
        }
        Ok(Found { hits, plan })
    }

    /// Whether the segment needs a (new) graph: big enough without one, or too many dead or
    /// forgotten points in it.
    fn needs_rebuild(&self, s: &Segment) -> bool {
        match &s.graph {
            None => s.live >= self.opts.graph_min,
            Some(_) => {
                s.tombstones() as f64 > self.opts.rebuild_tombstones * s.graph_points as f64
                    || (0..s.slots.len()).any(|i| s.in_graph[i] && s.state[i] == GONE)
            }
        }
    }

    /// Whether the graph has too many live points outside it.
    fn needs_extend(&self, s: &Segment) -> bool {
        s.graph.is_some() && s.tail().len() > self.opts.tail_max
    }

    fn needs_maintenance(&self, s: &Segment) -> bool {
        self.needs_rebuild(s)
            || self.needs_extend(s)
            || (s.graph.is_some() && s.dirty && self.opts.dir.is_some())
    }

    /// Run [`Self::maintain`] on a background thread unless one is running. The thread holds
    /// a handle on the store until it finishes: the file stays open that long.
    pub fn maintain_in_background(&self) {
        if self.maintaining.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = VectorIndexes {
            store: self.store.clone(),
            opts: self.opts.clone(),
            segments: Mutex::new(self.segments.lock().unwrap_or_else(PoisonError::into_inner).clone()),
            maintaining: Arc::clone(&self.maintaining),
        };
        let spawned = std::thread::Builder::new().name("mnemon-index".into()).spawn(move || {
            // Failures leave the segment searchable exactly; the next search tries again.
            let _ = me.maintain();
            // Release the store before saying so: a caller that waits for the flag and then
            // reopens the file must not find it still in use.
            let flag = Arc::clone(&me.maintaining);
            drop(me);
            flag.store(false, Ordering::Release);
        });
        if spawned.is_err() {
            self.maintaining.store(false, Ordering::Release);
        }
    }

    /// Whether a background maintenance is running.
    pub fn is_maintaining(&self) -> bool {
        self.maintaining.load(Ordering::Acquire)
    }

    /// Bring every loaded segment's graph up to date: build it once a segment is big enough,
    /// rebuild it when too many of its points are dead (or any was forgotten), add newer
    /// points when there are many, and publish it when it changed.
    pub fn maintain(&self) -> Result<Vec<BuildReport>, IndexError> {
        let segs: Vec<Arc<RwLock<Segment>>> =
            self.segments.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        let mut out = Vec::new();
        for seg in segs {
            let (needs, rebuild, extend) = {
                let s = read(&seg);
                (self.needs_maintenance(&s), self.needs_rebuild(&s), self.needs_extend(&s))
            };
            if !needs {
                continue;
            }
            if rebuild {
                self.rebuild(&seg)?;
            } else if extend {
                let mut s = write(&seg);
                let tail = s.tail();
                let rows: Vec<(u32, Vec<f32>)> = tail.iter().map(|&p| (p, s.row(p).to_vec())).collect();
                let refs: Vec<(u32, &[f32])> = rows.iter().map(|(p, v)| (*p, v.as_slice())).collect();
                if let Some(g) = s.graph.as_mut() {
                    g.insert(&refs);
                }
                for p in tail {
                    s.in_graph[p as usize] = true;
                }
                s.graph_points = s.in_graph.iter().filter(|g| **g).count();
                s.dirty = true;
            }
            let generation = self.publish(&seg)?;
            let s = read(&seg);
            out.push(BuildReport {
                space: s.space.clone(),
                namespace: s.ns.as_str().to_string(),
                graph_points: s.graph_points,
                generation,
            });
        }
        Ok(out)
    }

    /// Build (or rebuild) the graph of one segment now, and publish it.
    pub fn build(&self, space: &str, ns: &Namespace) -> Result<BuildReport, IndexError> {
        let snap = self.store.snapshot()?;
        let seg = self.segment(&snap, space, ns)?.ok_or_else(|| {
            IndexError::BadQuery(format!("no vectors in space {space:?} (it was never written to)"))
        })?;
        self.rebuild(&seg)?;
        let generation = self.publish(&seg)?;
        let s = read(&seg);
        Ok(BuildReport {
            space: space.into(),
            namespace: ns.as_str().into(),
            graph_points: s.graph_points,
            generation,
        })
    }

    /// Build a new graph over the live points without holding the lock, then swap it in.
    fn rebuild(&self, seg: &RwLock<Segment>) -> Result<(), IndexError> {
        let (points, data, dim) = {
            let s = read(seg);
            let points: Vec<u32> = (0..s.slots.len())
                .filter(|&i| s.state[i] == LIVE)
                .filter_map(|i| u32::try_from(i).ok())
                .collect();
            let mut data = Vec::with_capacity(points.len() * s.dim);
            for &p in &points {
                data.extend_from_slice(s.row(p));
            }
            (points, data, s.dim)
        };
        let refs: Vec<(u32, &[f32])> =
            points.iter().zip(data.chunks_exact(dim.max(1))).map(|(p, v)| (*p, v)).collect();
        let graph = self.opts.engine.build(self.opts.params, dim, &refs)?;
        let mut s = write(seg);
        s.in_graph.iter_mut().for_each(|g| *g = false);
        for &p in &points {
            if let Some(g) = s.in_graph.get_mut(p as usize) {
                *g = true;
            }
        }
        s.graph_points = points.len();
        s.graph = Some(graph);
        s.dirty = true;
        Ok(())
    }

    /// Publish a segment's graph (see the `persist` module for the protocol). Returns the
    /// generation, or `None` without an index directory or graph.
    fn publish(&self, seg: &RwLock<Segment>) -> Result<Option<u64>, IndexError> {
        let Some(dir) = &self.opts.dir else { return Ok(None) };
        let mut s = write(seg);
        let Some(graph) = s.graph.as_ref() else { return Ok(None) };
        std::fs::create_dir_all(dir).map_err(|e| IndexError::Io { path: dir.clone(), source: e })?;
        let key = persist::manifest_key(&s.space, &s.ns);
        let stem = persist::segment_stem(&s.space, &s.ns);
        let published = self.store.snapshot()?.aux(&key)?.and_then(|b| Manifest::decode(&b).ok());
        let generation = s.generation.max(published.as_ref().map_or(0, |m| m.generation)) + 1;
        let basename = format!("{stem}.g{generation}");
        // Leftovers of a crashed publish under this name would make hnsw_rs pick another.
        let keep: Vec<String> =
            published.iter().flat_map(|m| m.files.iter().map(|f| f.name.clone())).collect();
        persist::remove_unreferenced(dir, &stem, &keep);
        let mut files = graph.save(dir, &basename)?;
        let points = dir.join(format!("{basename}.points"));
        persist::write_points(&points, s.dim, &s.slots, &s.in_graph)?;
        files.push(points);
        let mut listed = Vec::new();
        for f in &files {
            persist::sync_file(f)?;
            let (len, blake3) = persist::checksum(f)?;
            let name = f.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            listed.push(ManifestFile { name, len, blake3 });
        }
        persist::sync_dir(dir)?;
        let params = graph.params();
        let manifest = Manifest {
            version: 1,
            generation,
            basename,
            engine: graph.name().to_string(),
            space: s.space.clone(),
            namespace: s.ns.as_str().to_string(),
            dimension: u32::try_from(s.dim).unwrap_or(u32::MAX),
            m: params.m,
            ef_construction: params.ef_construction,
            slots: s.slots.len() as u64,
            graph_points: s.graph_points as u64,
            covered_seq: s.covered_seq,
            files: listed,
        };
        self.store.write_with(
            vec![WriteOp::PutAux { key, value: Some(manifest.encode()) }],
            Durability::Immediate,
        )?;
        let names: Vec<String> = manifest.files.iter().map(|f| f.name.clone()).collect();
        persist::remove_unreferenced(dir, &stem, &names);
        s.generation = generation;
        s.dirty = false;
        Ok(Some(generation))
    }

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
