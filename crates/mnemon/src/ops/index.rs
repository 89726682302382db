//! Operations on the derived indexes of the namespaces a session reaches: embedding the
//! records that have no vector, and the vector indexes' state and builds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Operation, Session};
use crate::EmbedStats;
use crate::error::Result;
use crate::index::{BuildReport, SegmentStatus};

/// Embed the records that have no vector for the database's embedder.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reindex {
    /// Only this namespace (default: the session's own, or every one when it reaches them
    /// all).
    pub namespace: Option<String>,
    /// Texts embedded per call, and written per commit (default 64).
    #[schemars(range(min = 1, max = 10000))]
    pub batch: Option<usize>,
}

/// What a reindex did.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Reindexed {
    /// The embedder's model.
    pub embedder: String,
    /// Texts found in the cache, embedded, or whose embedding failed.
    #[serde(flatten)]
    pub stats: EmbedStats,
}

impl Operation for Reindex {
    const NAME: &'static str = "reindex";
    const TITLE: &'static str = "Embed missing vectors";
    const DESCRIPTION: &'static str = "Embed every record that has no vector for the database's embedder (after a failure, or after switching embedders), in batches.";
    const READ_ONLY: bool = false;
    const ADMIN: bool = true;
    const MCP: bool = false;
    type Output = Reindexed;

    fn run(self, session: &Session) -> Result<Reindexed> {
        let only = match self.namespace {
            Some(n) => Some(session.ns(Some(&n))?.name().as_str().to_string()),
            None if session.reach_all("").is_ok() => None,
            None => Some(session.namespace().to_string()),
        };
        let batch = super::count(self.batch, 64, 10_000)?;
        let stats = session.db().reindex(only.as_deref(), batch, |_, _| {})?;
        Ok(Reindexed { embedder: session.db().embedder().model_id().to_string(), stats })
    }
}

/// The vector indexes' state.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexStatus {}

/// The state of every (space, namespace) index the session reaches.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Indexes {
    /// By space and namespace.
    pub segments: Vec<SegmentStatus>,
}

impl Operation for IndexStatus {
    const NAME: &'static str = "index_status";
    const TITLE: &'static str = "Vector index state";
    const DESCRIPTION: &'static str = "Every vector index (per space and namespace) the session reaches: its vectors, live ones, graph points, tombstones, vectors newer than the graph, published generation.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Indexes;

    fn run(self, session: &Session) -> Result<Indexes> {
        let mut segments = session.db().index_status()?;
        segments.retain(|s| session.reaches(&s.namespace));
        Ok(Indexes { segments })
    }
}

/// Build a vector index now.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexBuild {
    /// The vector space.
    pub space: String,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for IndexBuild {
    const NAME: &'static str = "index_build";
    const TITLE: &'static str = "Build a vector index";
    const DESCRIPTION: &'static str = "Build the graph of a space in a namespace now and publish it beside the database (it is otherwise built in the background when worth it).";
    const READ_ONLY: bool = false;
    const ADMIN: bool = true;
    const MCP: bool = false;
    type Output = BuildReport;

    fn run(self, session: &Session) -> Result<BuildReport> {
        let ns = session.ns(self.namespace.as_deref())?;
        session.db().build_index(&self.space, ns.name().as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;
    use crate::ops::VectorPut;

    #[test]
    fn derived_indexes_are_kept_within_reach() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let (_dir, db, all, ids) = crate::ops::testing::two_namespaces()?;
        for (ns, id) in ["p", "q"].into_iter().zip(ids) {
            let put = VectorPut {
                id: id.to_string(),
                space: "toy".into(),
                vector: vec![1.0, 0.5],
                namespace: Some(ns.into()),
            };
            all.call(put)?;
        }
        let own = Session::new(db, "p")?;
        let mine = own.call(IndexStatus {})?.segments;
        assert!(!mine.is_empty() && mine.iter().all(|s| s.namespace == "p"), "{mine:?}");
        assert!(all.call(IndexStatus {})?.segments.iter().any(|s| s.namespace == "q"));
        let built = own.call(IndexBuild { space: "toy".into(), namespace: None })?;
        assert_eq!((built.namespace.as_str(), built.graph_points), ("p", 1));
        let elsewhere = IndexBuild { space: "toy".into(), namespace: Some("q".into()) };
        assert_eq!(own.call(elsewhere).err().map(|e| e.code()), Some(Code::Forbidden));
        // Everything was embedded on write: nothing to do.
        let r = own.call(Reindex::default())?;
        assert_eq!((r.stats.misses, r.stats.failures), (0, 0));
        assert_eq!(r.embedder, "mnemon-hash-v1-384");
        Ok(())
    }
}
