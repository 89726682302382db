//! A search's request and answer: the query, its mode, the plan the planner chose and the hits.

use mnemon_storage::{AsOf, ListQuery, Namespace, Record};

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

    pub(super) fn unfiltered_now(&self) -> bool {
        let f = &self.filter;
        f.as_of == AsOf::now()
            && f.kinds.is_empty()
            && f.tags.is_empty()
            && f.source.is_none()
            && f.task.is_none()
            && f.test.is_none()
    }
}

/// Which way a search ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
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
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
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
    pub(super) fn new(path: SearchPath) -> Plan {
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
