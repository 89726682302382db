//! Operations on the vectors a caller stores itself (of its own model, in a space it names):
//! storing one for a record, and finding the records nearest to a vector as of any time.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Operation, RecordOut, Session, WriteResult, kinds, kinds_schema, time};
use crate::error::Result;
use crate::{AsOf, SearchMode};

/// Store a record's vector in a space.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VectorPut {
    /// The record: a record id (a unique head or tail of at least 6 hex digits also works).
    pub id: String,
    /// The vector space (the model that made the vector); its dimension is fixed by its first
    /// vector.
    pub space: String,
    /// The vector (not all zeros); stored normalised.
    pub vector: Vec<f32>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for VectorPut {
    const NAME: &'static str = "vector_put";
    const TITLE: &'static str = "Store a vector";
    const DESCRIPTION: &'static str = "Store a vector for a record in a named space (a model of your own): it is searched with vector_search, as of any time.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = WriteResult;

    fn run(self, session: &Session) -> Result<WriteResult> {
        let ns = session.ns(self.namespace.as_deref())?;
        let id = ns.resolve_id(&self.id)?;
        Ok(ns.put_vector(id, &self.space, self.vector)?.into())
    }
}

/// How a vector search may run.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VectorMode {
    /// The planner decides (default).
    #[default]
    Auto,
    /// The exact scan of every candidate.
    Exact,
    /// The graph whenever there is one.
    Graph,
}

/// The records nearest to a vector.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VectorSearch {
    /// The vector space.
    pub space: String,
    /// The query vector.
    pub vector: Vec<f32>,
    /// How many (default 10).
    #[schemars(range(min = 1, max = 10000))]
    pub k: Option<usize>,
    /// Only these kinds.
    #[serde(default)]
    #[schemars(schema_with = "kinds_schema")]
    pub kinds: Vec<String>,
    /// Only records carrying all these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Valid time (default: now). RFC 3339 or a date.
    pub as_of: Option<String>,
    /// Transaction time (default: now). RFC 3339 or a date.
    pub known_at: Option<String>,
    /// auto (default), exact or graph.
    pub mode: Option<VectorMode>,
    /// Candidates the graph examines (default: the index's).
    pub ef: Option<usize>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// A record near the query.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Near {
    /// The record.
    #[serde(flatten)]
    pub record: RecordOut,
    /// Its cosine similarity to the query.
    pub score: f32,
}

/// What a vector search found, and how.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Nearest {
    /// Best first.
    pub hits: Vec<Near>,
    /// The path that answered: exact, graph or filtered graph.
    pub path: String,
    /// Records with a vector that matched the filter and time.
    pub candidates: usize,
    /// The plan in full: how the planner chose the path, and what it saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::Plan>,
}

impl Operation for VectorSearch {
    const NAME: &'static str = "vector_search";
    const TITLE: &'static str = "Nearest vectors";
    const DESCRIPTION: &'static str = "The records whose vectors in a space are nearest to a query vector (cosine), valid and known at any time, narrowed by kinds and tags; the planner scans exactly or walks the graph.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Nearest;

    fn run(self, session: &Session) -> Result<Nearest> {
        let ns = session.ns(self.namespace.as_deref())?;
        let as_of = AsOf { valid: time("as_of", &self.as_of)?, known: time("known_at", &self.known_at)? };
        let k = super::count(self.k, 10, crate::index::MAX_K)?;
        let mode = match self.mode.unwrap_or_default() {
            VectorMode::Auto => SearchMode::Auto,
            VectorMode::Exact => SearchMode::Exact,
            VectorMode::Graph => SearchMode::Graph,
        };
        let mut s =
            ns.vector_search(&self.space, &self.vector, k).as_of(as_of).mode(mode).kinds(kinds(&self.kinds)?);
        for t in self.tags {
            s = s.tag(t);
        }
        if let Some(ef) = self.ef {
            s = s.ef(ef);
        }
        let found = s.run()?;
        let at = as_of.valid.unwrap_or_else(|| session.db().now());
        let hits = found
            .hits
            .into_iter()
            .map(|h| Near { score: h.score, record: RecordOut::new(h.record, at) })
            .collect();
        Ok(Nearest {
            hits,
            path: found.plan.path.to_string(),
            candidates: found.plan.candidates,
            plan: Some(found.plan),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Remember;
    use crate::{Code, Db};

    #[test]
    fn own_vectors_are_stored_and_found_within_reach() -> std::result::Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let s = Session::new(Db::create(dir.path().join("m.redb"))?, "p")?;
        let mut ids = Vec::new();
        for (text, v) in [("north", [1.0, 0.0, 0.0]), ("east", [0.0, 1.0, 0.0])] {
            let id = s
                .call(Remember { kind: "learning".into(), text: Some(text.into()), ..Default::default() })?
                .id;
            s.call(VectorPut {
                id: id.to_string(),
                space: "toy".into(),
                vector: v.to_vec(),
                namespace: None,
            })?;
            ids.push(id);
        }
        let q = |mode| VectorSearch {
            space: "toy".into(),
            vector: vec![0.9, 0.1, 0.0],
            k: Some(1),
            mode: Some(mode),
            ..Default::default()
        };
        for mode in [VectorMode::Auto, VectorMode::Exact, VectorMode::Graph] {
            let found = s.call(q(mode))?;
            assert_eq!(found.hits.iter().map(|h| h.record.record.id).collect::<Vec<_>>(), [ids[0]]);
        }
        let wrong = VectorPut {
            id: ids[0].to_string(),
            space: "toy".into(),
            vector: vec![1.0, 0.0],
            namespace: None,
        };
        assert_eq!(s.call(wrong).err().map(|e| e.code()), Some(Code::InvalidInput));
        let elsewhere = VectorSearch { namespace: Some("q".into()), ..q(VectorMode::Auto) };
        assert_eq!(s.call(elsewhere).err().map(|e| e.code()), Some(Code::Forbidden));
        Ok(())
    }
}
