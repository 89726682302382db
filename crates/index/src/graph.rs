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

/// An approximate nearest-neighbour index over unit vectors, identified by `u32` points.
/// Implementations must be safe to search from many threads at once.
pub trait VectorIndex: Send + Sync {
    /// Points inserted.
    fn len(&self) -> usize;
    /// Whether it has no points.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Add points (in parallel where the implementation can).
    fn insert(&mut self, points: &[(u32, &[f32])]);
    /// The `k` nearest points to `query` among those `keep` accepts (all when `None`),
    /// examining at least `ef` candidates. Best first.
    fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        keep: Option<&(dyn Fn(u32) -> bool + Sync)>,
    ) -> Vec<Scored>;
    /// Write the index into `dir` under a base name; returns the files written.
    fn save(&self, dir: &Path, basename: &str) -> Result<Vec<PathBuf>, IndexError>;
    /// A short name for reports.
    fn name(&self) -> &'static str;
    /// The parameters it was built with (recorded in the manifest).
    fn params(&self) -> HnswParams;
}
