//! The approximate index behind a small trait: what the index needs of a graph
//! ([`VectorIndex`]) and the parameters every graph is built with ([`HnswParams`]). The
//! graph in use is [`crate::FlatHnsw`]; with the `hnsw-rs` feature, `HnswIndex` on hnsw_rs is
//! there too, for comparison.

use std::path::{Path, PathBuf};

use crate::error::IndexError;
use crate::exact::Scored;

/// Build and search parameters of the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HnswParams {
    /// Links per node (M). 16 is the usual choice.
    pub m: usize,
    /// Candidates examined while building (ef_construction).
    pub ef_construction: usize,
    /// Default candidates examined while searching (ef); raised to at least k.
    pub ef_search: usize,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams { m: 16, ef_construction: 200, ef_search: 64 }
    }
}

impl HnswParams {
    /// Refuse parameters hnsw_rs cannot take (it would exit the process above 256 links).
    pub fn validate(&self) -> Result<(), IndexError> {
        if !(2..=256).contains(&self.m) {
            return Err(IndexError::BadParams(format!("m must be 2 to 256, got {}", self.m)));
        }
        if !(1..=100_000).contains(&self.ef_construction) {
            return Err(IndexError::BadParams(format!(
                "ef_construction must be 1 to 100000, got {}",
                self.ef_construction
            )));
        }
        if !(1..=100_000).contains(&self.ef_search) {
            return Err(IndexError::BadParams(format!("ef must be 1 to 100000, got {}", self.ef_search)));
        }
        Ok(())
    }
}

/// Where a graph reads the exact vector of a point: a graph that walks on compressed codes
/// ([`crate::FlatHnsw`]) keeps no `f32` copy of its own once built, and reads these to rank
/// what it found and to link new points to old ones. The database's segments hold every
/// vector once and serve them here.
pub trait Rows: Sync {
    /// The vector of `point` (`None` if there is none).
    fn row(&self, point: u32) -> Option<&[f32]>;
}

/// Rows of one flat array of `dim` components each: point `p` is row `p`.
#[derive(Clone, Copy, Debug)]
pub struct FlatRows<'a> {
    /// The components, row after row.
    pub data: &'a [f32],
    /// Components per row.
    pub dim: usize,
}

impl Rows for FlatRows<'_> {
    fn row(&self, point: u32) -> Option<&[f32]> {
        let s = (point as usize).checked_mul(self.dim)?;
        self.data.get(s..s.checked_add(self.dim)?)
    }
}

/// No rows: what a graph built from scratch needs (every point it links comes with its
/// vector).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRows;

impl Rows for NoRows {
    fn row(&self, _: u32) -> Option<&[f32]> {
        None
    }
}

/// The level-0 graph's shape (see [`VectorIndex::connectivity`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connectivity {
    /// Nodes.
    pub nodes: usize,
    /// Nodes a walk from the entry point can reach.
    pub reachable: usize,
    /// Nodes no link points to.
    pub no_in_links: usize,
    /// The 1st percentile of incoming links per node.
    pub in_degree_p1: u32,
    /// The median of incoming links per node.
    pub in_degree_median: u32,
    /// The most incoming links of a node.
    pub in_degree_max: u32,
    /// Nodes the last insert found unreachable or without incoming links, and linked.
    pub repaired: usize,
}

/// An approximate nearest-neighbour index over unit vectors, identified by `u32` points.
/// Implementations must be safe to search from many threads at once.
pub trait VectorIndex: Send + Sync {
    /// Points inserted.
    fn len(&self) -> usize;
    /// Whether it has no points.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Add points (in parallel where the implementation can); `rows` holds the vectors of
    /// the points already in the graph.
    fn insert(&mut self, points: &[(u32, &[f32])], rows: &dyn Rows);
    /// The `k` nearest points to `query` among those `keep` accepts (all when `None`),
    /// examining at least `ef` candidates, scored by the exact vectors of `rows`. Best first.
    fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        keep: Option<&(dyn Fn(u32) -> bool + Sync)>,
        rows: &dyn Rows,
    ) -> Vec<Scored>;
    /// Bytes it holds in memory (an estimate: its arrays, not the allocator's overhead).
    fn memory(&self) -> usize;
    /// The shape of its bottom level, where the implementation can tell.
    fn connectivity(&self) -> Option<Connectivity> {
        None
    }
    /// Write the index into `dir` under a base name; returns the files written.
    fn save(&self, dir: &Path, basename: &str) -> Result<Vec<PathBuf>, IndexError>;
    /// A short name for reports.
    fn name(&self) -> &'static str;
    /// The parameters it was built with (recorded in the manifest).
    fn params(&self) -> HnswParams;
}
