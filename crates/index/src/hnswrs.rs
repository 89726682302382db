//! [`VectorIndex`] on hnsw_rs (the `hnsw-rs` feature): the graph mnemon's own
//! [`crate::FlatHnsw`] is measured against (docs/index.md).
//!
//! hnsw_rs traps handled here:
//! - it exits the process when `max_nb_connection > 256`: [`HnswParams::validate`] refuses
//!   such parameters first;
//! - its own dot distance asserts `dot <= 1.000002` and panics on rounding: the graph uses
//!   [`UnitDot`], which clamps;
//! - a graph reloaded from disk borrows its loader ([`hnsw_rs::hnswio::HnswIo`]): the loaded
//!   graph and its loader live together in one self-referential cell ([`self_cell`]), owned,
//!   nothing leaked;
//! - it has no delete: the caller filters dead points at search time and rebuilds.

use std::path::{Path, PathBuf};

use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;
use hnsw_rs::prelude::{FilterT, Hnsw};

use crate::error::IndexError;
use crate::exact::Scored;
use crate::graph::{HnswParams, Rows, VectorIndex};
use crate::kernel::dot;

/// The distance hnsw_rs uses on unit vectors: `1 - dot`, clamped at 0 (rounding can push a
/// dot product of a vector with itself a little above 1; the distance must never go negative,
/// and must never panic, unlike hnsw_rs' own `DistDot` which asserts on it).
#[derive(Default, Clone, Copy, Debug)]
struct UnitDot;

impl hnsw_rs::prelude::Distance<f32> for UnitDot {
    #[inline]
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).max(0.0)
    }
}

type Graph<'a> = Hnsw<'a, f32, UnitDot>;

self_cell::self_cell!(
    /// A graph reloaded from disk together with the loader it borrows from.
    struct LoadedGraph {
        owner: HnswIo,
        #[not_covariant]
        dependent: Graph,
    }
);

enum Inner {
    Built(Box<Graph<'static>>),
    Loaded(Box<LoadedGraph>),
}

/// [`VectorIndex`] on hnsw_rs.
pub struct HnswIndex {
    inner: Inner,
    params: HnswParams,
}

impl std::fmt::Debug for HnswIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HnswIndex").field("points", &self.len()).field("params", &self.params).finish()
    }
}

/// Levels of the graph (hnsw_rs caps it at 16).
const MAX_LAYER: usize = 16;

struct Keep<'a>(&'a (dyn Fn(u32) -> bool + Sync));

impl FilterT for Keep<'_> {
    fn hnsw_filter(&self, id: &usize) -> bool {
        u32::try_from(*id).is_ok_and(|p| (self.0)(p))
    }
}

impl HnswIndex {
    /// An empty graph expecting about `capacity` points.
    pub fn new(params: HnswParams, capacity: usize) -> Result<Self, IndexError> {
        params.validate()?;
        let g: Graph<'static> =
            Hnsw::new(params.m, capacity.max(1), MAX_LAYER, params.ef_construction, UnitDot);
        Ok(HnswIndex { inner: Inner::Built(Box::new(g)), params })
    }

    /// Build a graph over `points` in parallel.
    pub fn build(params: HnswParams, points: &[(u32, &[f32])]) -> Result<Self, IndexError> {
        let mut g = HnswIndex::new(params, points.len())?;
        g.insert(points, &crate::graph::NoRows);
        Ok(g)
    }

    /// Reload a graph saved by [`VectorIndex::save`]. The caller has verified the files'
    /// checksums: hnsw_rs asserts on malformed input.
    pub fn load(dir: &Path, basename: &str, params: HnswParams) -> Result<Self, IndexError> {
        params.validate()?;
        let io = HnswIo::new(dir, basename);
        let cell = LoadedGraph::try_new(io, |io| io.load_hnsw_with_dist::<f32, UnitDot>(UnitDot))
            .map_err(|e| IndexError::Load { path: dir.join(basename), reason: e.to_string() })?;
        Ok(HnswIndex { inner: Inner::Loaded(Box::new(cell)), params })
    }

    fn with<R>(&self, f: impl for<'a> FnOnce(&Graph<'a>) -> R) -> R {
        match &self.inner {
            Inner::Built(g) => f(g),
            Inner::Loaded(c) => c.with_dependent(|_, g| f(g)),
        }
    }
}

impl VectorIndex for HnswIndex {
    fn len(&self) -> usize {
        self.with(|g| g.get_nb_point())
    }

    fn insert(&mut self, points: &[(u32, &[f32])], _: &dyn Rows) {
        let batch: Vec<(&[f32], usize)> = points.iter().map(|(p, v)| (*v, *p as usize)).collect();
        match &mut self.inner {
            Inner::Built(g) => g.parallel_insert_slice(&batch),
            Inner::Loaded(c) => c.with_dependent_mut(|_, g| g.parallel_insert_slice(&batch)),
        }
    }

    fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        keep: Option<&(dyn Fn(u32) -> bool + Sync)>,
        _: &dyn Rows,
    ) -> Vec<Scored> {
        if k == 0 {
            return Vec::new();
        }
        let ef = ef.max(k);
        let found = self.with(|g| match keep {
            None => g.search(query, k, ef),
            Some(f) => g.search_filter(query, k, ef, Some(&Keep(f))),
        });
        found
            .into_iter()
            .filter_map(|n| u32::try_from(n.d_id).ok().map(|p| Scored { point: p, score: 1.0 - n.distance }))
            .collect()
    }

    fn save(&self, dir: &Path, basename: &str) -> Result<Vec<PathBuf>, IndexError> {
        let name = self
            .with(|g| g.file_dump(dir, basename))
            .map_err(|e| IndexError::Save { path: dir.join(basename), reason: e.to_string() })?;
        if name != basename {
            return Err(IndexError::Save {
                path: dir.join(basename),
                reason: format!("hnsw_rs wrote base name {name:?} instead"),
            });
        }
        Ok(vec![dir.join(format!("{name}.hnsw.graph")), dir.join(format!("{name}.hnsw.data"))])
    }

    fn name(&self) -> &'static str {
        "hnsw_rs"
    }

    fn memory(&self) -> usize {
        // hnsw_rs keeps each vector (in a `Vec<f32>` per point) and up to 2M links of 8
        // bytes per point at level 0: an estimate from its layout.
        self.with(|g| {
            let n = g.get_nb_point();
            let dim = g.get_point_indexation().get_data_dimension();
            n * (dim * 4 + self.params.m * 2 * 8 + 64)
        })
    }

    fn params(&self) -> HnswParams {
        self.params
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_that_would_exit_the_process_are_refused() {
        let p = HnswParams { m: 257, ..Default::default() };
        assert!(HnswIndex::new(p, 10).unwrap_err().to_string().contains("m must be 2 to 256"));
        assert!(HnswIndex::new(HnswParams { ef_construction: 0, ..Default::default() }, 10).is_err());
    }

    #[test]
    fn unit_distance_never_goes_negative() {
        use hnsw_rs::prelude::Distance;
        let v = vec![1.0f32 / 384f32.sqrt(); 384];
        let d = UnitDot.eval(&v, &v);
        assert!((0.0..1e-5).contains(&d));
    }
}
