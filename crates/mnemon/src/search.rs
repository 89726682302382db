//! Hybrid search: BM25 over the lexical index and nearest vectors of the query's embedding,
//! fused by reciprocal rank, optionally weighted by importance, confidence and recency.

use mnemon_index::{Mode, Query};
use mnemon_storage::{AsOf, Kind, ListQuery, Namespace, Record, Timestamp};
use serde::Serialize;

use crate::db::Ns;
use crate::error::{Error, Result};

/// Which evidence a search uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TextMode {
    /// Lexical and vector, fused (the default).
    #[default]
    Hybrid,
    /// Nearest vectors only (the planner picks exact scan or graph).
    Vector,
    /// BM25 only.
    Lexical,
    /// Nearest vectors by the exact scan only (the oracle).
    Exact,
}

impl std::str::FromStr for TextMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "hybrid" => Ok(TextMode::Hybrid),
            "vector" => Ok(TextMode::Vector),
            "lexical" => Ok(TextMode::Lexical),
            "exact" => Ok(TextMode::Exact),
            other => Err(format!("unknown search mode {other:?} (hybrid, vector, lexical, exact)")),
        }
    }
}

/// Optional weighting of fused scores (0 turns a factor off).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Weights {
    /// How much importance (1-5; 3 when unset) moves a score: `1 + w (importance/5 - 0.5)`.
    pub importance: f64,
    /// How much confidence (0-1; 0.5 when unset) moves a score: `1 + w (confidence - 0.5)`.
    pub confidence: f64,
    /// Halve the recency bonus every this many days since the record became valid:
    /// `0.5 + 0.5 * 0.5^(age / half_life)`.
    pub recency_half_life_days: Option<f64>,
}

/// One result.
#[derive(Clone, Debug)]
pub struct SearchHit {
    /// The record, as of the search's time.
    pub record: Record,
    /// The fused (and weighted) score: higher is better.
    pub score: f64,
    /// Rank (from 1) and BM25 score in the lexical results, if there.
    pub lexical: Option<(usize, f64)>,
    /// Rank (from 1) and cosine similarity in the vector results, if there.
    pub vector: Option<(usize, f32)>,
}

/// The lexical side's share of a hybrid score when none is asked for, by embedder (the vector
/// space): 0.3 for the hashing embedder, whose vectors already carry the words and their
/// pieces, so that the vector side leads; 0.5 for a semantic model (MiniLM, a server's), which
/// knows meaning but not rare identifiers. Both were chosen on one seed of `mnemon bench
/// search` and checked on another (docs/search.md).
pub fn default_lexical_share(space: &str) -> f64 {
    if space.starts_with("mnemon-hash-") { 0.3 } else { 0.5 }
}

/// A text search being described; see [`Ns::search`].
#[derive(Clone, Debug)]
pub struct TextSearch<'a> {
    ns: &'a Ns,
    text: String,
    limit: usize,
    mode: TextMode,
    filter: ListQuery,
    weights: Option<Weights>,
    also: Vec<String>,
    lexical_share: Option<f64>,
}

impl<'a> TextSearch<'a> {
    pub(crate) fn new(ns: &'a Ns, text: &str) -> Self {
        TextSearch {
            ns,
            text: text.to_string(),
            limit: 10,
            mode: TextMode::Hybrid,
            filter: ListQuery::new(),
            weights: None,
            also: Vec::new(),
            lexical_share: None,
        }
    }

    /// At most this many results (default 10).
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = n;
        self
    }

    /// Hybrid (default), vector, lexical or exact.
    pub fn mode(mut self, m: TextMode) -> Self {
        self.mode = m;
        self
    }

    /// Only these kinds.
    pub fn kinds(mut self, kinds: impl IntoIterator<Item = Kind>) -> Self {
        self.filter.kinds = kinds.into_iter().collect();
        self
    }

    /// Only records carrying this tag (repeat for all of several).
    pub fn tag(mut self, t: impl Into<String>) -> Self {
        self.filter.tags.push(t.into());
        self
    }

    /// Only records from this agent.
    pub fn source(mut self, s: impl Into<String>) -> Self {
        self.filter.source = Some(s.into());
        self
    }

    /// Only records of this task.
    pub fn task(mut self, t: impl Into<String>) -> Self {
        self.filter.task = Some(t.into());
        self
    }

    /// As valid at, and known at, this time (default now).
    pub fn as_of(mut self, a: impl Into<AsOf>) -> Self {
        self.filter.as_of = a.into();
        self
    }

    /// Search this namespace too (repeat for several); results from all are fused together.
    pub fn also_in(mut self, ns: impl Into<String>) -> Self {
        self.also.push(ns.into());
        self
    }

    /// The lexical side's share of a hybrid score, in [0, 1] (the vector side has the rest).
    /// The default depends on the embedder: see [`default_lexical_share`].
    pub fn lexical_share(mut self, share: f64) -> Self {
        self.lexical_share = Some(share.clamp(0.0, 1.0));
        self
    }

    /// Weigh the fused scores.
    pub fn weigh(mut self, w: Weights) -> Self {
        self.weights = Some(w);
        self
    }

    /// Run it.
    pub fn run(self) -> Result<Vec<SearchHit>> {
        let db = self.ns.db();
        let snap = db.snapshot()?;
        let fetch = (self.limit * 3).max(30);
        let mut hits: Vec<SearchHit> = Vec::new();
        fn slot(hits: &mut Vec<SearchHit>, rec: Record) -> usize {
            match hits.iter().position(|h| h.record.id == rec.id && h.record.namespace == rec.namespace) {
                Some(i) => i,
                None => {
                    hits.push(SearchHit { record: rec, score: 0.0, lexical: None, vector: None });
                    hits.len() - 1
                }
            }
        }
        let mut namespaces = vec![self.ns.name().clone()];
        for n in &self.also {
            let n = Namespace::new(n.as_str())?;
            if !namespaces.contains(&n) {
                namespaces.push(n);
            }
        }
        if matches!(self.mode, TextMode::Hybrid | TextMode::Lexical) {
            for ns in &namespaces {
                for (rank, h) in
                    snap.lexical_search(ns, &self.text, &self.filter, fetch)?.into_iter().enumerate()
                {
                    let score = h.score;
                    let i = slot(&mut hits, h.record);
                    hits[i].lexical = Some((rank + 1, score));
                }
            }
        }
        let vector = if matches!(self.mode, TextMode::Hybrid | TextMode::Vector | TextMode::Exact) {
            match db.query_vector(&snap, &self.text) {
                Ok(v) => Some(v),
                // Hybrid search still answers lexically when the query cannot be embedded.
                Err(_) if self.mode == TextMode::Hybrid => None,
                Err(e) => return Err(Error::Embed(e)),
            }
        } else {
            None
        };
        if let Some(v) = vector {
            for ns in &namespaces {
                {
                    let mut q = Query::new(db.space(), ns, &v, fetch);
                    q.as_of = self.filter.as_of;
                    q.kinds.clone_from(&self.filter.kinds);
                    q.tags.clone_from(&self.filter.tags);
                    q.source.clone_from(&self.filter.source);
                    q.task.clone_from(&self.filter.task);
                    q.mode = if self.mode == TextMode::Exact { Mode::Exact } else { Mode::Auto };
                    let found = db.index().search(&snap, &q)?;
                    for (rank, h) in found.hits.into_iter().enumerate() {
                        let score = h.score;
                        let i = slot(&mut hits, h.record);
                        hits[i].vector = Some((rank + 1, score));
                    }
                }
            }
        }
        let now = snap.now();
        let share = self.lexical_share.unwrap_or_else(|| default_lexical_share(db.space()));
        // Score fusion: each side's scores scaled to [0, 1] by its best (cosine from the
        // lowest cosine fetched, so that the last vector hit counts for nothing), then mixed.
        let lex_max =
            hits.iter().filter_map(|h| h.lexical.map(|l| l.1)).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
        let vecs: Vec<f64> = hits.iter().filter_map(|h| h.vector.map(|v| f64::from(v.1))).collect();
        let vec_max = vecs.iter().copied().fold(f64::MIN, f64::max);
        let vec_floor = vecs.iter().copied().fold(f64::MAX, f64::min).min(vec_max - 1e-9);
        for h in &mut hits {
            h.score = match self.mode {
                TextMode::Lexical => h.lexical.map_or(0.0, |l| l.1),
                TextMode::Vector | TextMode::Exact => h.vector.map_or(0.0, |v| f64::from(v.1)),
                TextMode::Hybrid => {
                    let lex = h.lexical.map_or(0.0, |(_, s)| s / lex_max);
                    let vec = h
                        .vector
                        .map_or(0.0, |(_, s)| (f64::from(s) - vec_floor).max(0.0) / (vec_max - vec_floor));
                    share * lex + (1.0 - share) * vec
                }
            };
            if let Some(w) = &self.weights {
                h.score *= weight(w, &h.record, now);
            }
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.record.id.cmp(&b.record.id)));
        hits.truncate(self.limit);
        Ok(hits)
    }
}

pub(crate) fn weight(w: &Weights, r: &Record, now: Timestamp) -> f64 {
    let importance = f64::from(r.envelope.importance.unwrap_or(3)) / 5.0;
    let confidence = f64::from(r.envelope.confidence.unwrap_or(0.5));
    let mut f = (1.0 + w.importance * (importance - 0.5)) * (1.0 + w.confidence * (confidence - 0.5));
    if let Some(h) = w.recency_half_life_days.filter(|h| *h > 0.0) {
        #[allow(clippy::cast_precision_loss)]
        let age_days = (now.as_micros() - r.valid_from.as_micros()).max(0) as f64 / 86_400e6;
        f *= 0.5 + 0.5 * 0.5f64.powf(age_days / h);
    }
    f.max(0.0)
}
