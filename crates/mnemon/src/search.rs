//! Hybrid search: BM25 over the lexical index and nearest vectors of the query's embedding,
//! each side's score made comparable across queries (a share of the query's greatest BM25
//! score; a calibrated cosine), mixed, optionally weighted by importance, confidence and
//! recency. Only records that match come back (see [`TextSearch::min_score`]).

use std::collections::HashMap;

use mnemon_index::{Mode, Query};
use mnemon_storage::{AsOf, Kind, ListQuery, Namespace, Record, RecordId, Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::db::Ns;
use crate::error::{Error, Result};

impl Ns {
    /// Search the namespace's records by text: hybrid (lexical and vector, fused) by default;
    /// refine, then [`TextSearch::run`].
    pub fn search(&self, text: &str) -> TextSearch<'_> {
        TextSearch::new(self, text)
    }
}

/// Which evidence a search uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TextMode {
    /// Words and meaning, fused (the default).
    #[default]
    Hybrid,
    /// Meaning only: the nearest vectors (the planner picks exact scan or graph).
    Vector,
    /// Words only (BM25): exact terms, identifiers.
    Lexical,
    /// Meaning only, by the exact scan of every vector (the oracle).
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
    /// Rank (from 1), BM25 score and relevance (the BM25 score as a share of the query's
    /// greatest possible one) in the lexical results, if there.
    pub lexical: Option<(usize, f64, f64)>,
    /// Rank (from 1) and cosine similarity in the vector results, if there.
    pub vector: Option<(usize, f32)>,
    /// The cosine similarity of the record's vector with the query's, where known: for every
    /// vector result, and in hybrid search for lexical results too.
    pub similarity: Option<f32>,
}

/// The lexical side's share of a hybrid score when none is asked for, by embedder (the vector
/// space): 0.8 for the hashing embedder, whose cosines on real text barely tell the answer
/// from another conversation's turns, so that it only adds near copies; 0.7 for a semantic
/// model (MiniLM, a server's). Both chosen on the LoCoMo development split (docs/search.md).
pub fn default_lexical_share(space: &str) -> f64 {
    if space.starts_with("mnemon-hash-") { 0.8 } else { 0.7 }
}

/// How an embedder's cosines count in a search: `(cosine - floor) / (strong - floor)`,
/// clamped to [0, 1], is a vector result's relevance (at `strong` and above as relevant as a
/// text holding all the query's words); a result that matches none of the query's words is
/// returned only if its cosine reaches `alone`. Chosen on the LoCoMo development split, where
/// the cosine of the best turn of another conversation is below `alone` for 97.5 % of the
/// questions with MiniLM and for all of them with the hashing embedder (docs/search.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// The cosine of a text unrelated to the query (relevance 0).
    pub floor: f32,
    /// The cosine of a strong match (relevance 1).
    pub strong: f32,
    /// The least cosine of a result that matches none of the query's words.
    pub alone: f32,
}

impl Calibration {
    /// The calibration of a vector space (an embedder's model id). Semantic models other
    /// than MiniLM get MiniLM's; their cosines may run on another scale.
    pub fn of(space: &str) -> Calibration {
        if space.starts_with("mnemon-hash-") {
            // Word and trigram overlap: only near copies reach 0.4.
            Calibration { floor: 0.4, strong: 0.8, alone: 0.5 }
        } else {
            Calibration { floor: 0.3, strong: 0.8, alone: 0.5 }
        }
    }

    /// The relevance of a cosine.
    pub fn relevance(&self, cosine: f32) -> f64 {
        f64::from(((cosine - self.floor) / (self.strong - self.floor)).clamp(0.0, 1.0))
    }
}

/// How much a search weighs up a record whose valid time began in a period the query names.
/// Chosen on the LoCoMo development split, where 80 of 755 questions name a day, a month or a
/// year: their recall@10 with MiniLM was 0.575 without it, 0.688 at 1.5, 0.769 at 2 and 0.794
/// from 3 on (a plateau up to 101); hybrid recall@10 over all questions 0.674 -> 0.699
/// (docs/search.md).
pub const NAMED_TIME_BOOST: f64 = 3.0;

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
    min_score: Option<f64>,
    named_times: bool,
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
            min_score: None,
            named_times: true,
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

    /// Only the records `filter` keeps (kinds, tags, source, task), as of its time: the
    /// listing filter, whole (its `limit` is not used; [`Self::limit`] is).
    pub fn filter(mut self, filter: ListQuery) -> Self {
        self.filter = filter;
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

    /// Leave out results scoring below this (scores are in [0, 1] before weighting) instead
    /// of the default rule: a result must match some of the query's words, or have a cosine
    /// of at least [`Calibration::alone`]. 0 keeps every result fetched.
    pub fn min_score(mut self, score: f64) -> Self {
        self.min_score = Some(score);
        self
    }

    /// Whether a time the query names ("on 9 October, 2022", "in May 2023", "last week",
    /// counted back from the search's valid time; see [`crate::when`]) weighs up the records
    /// that began then (default on): their score is multiplied by [`NAMED_TIME_BOOST`].
    pub fn named_times(mut self, on: bool) -> Self {
        self.named_times = on;
        self
    }

    /// Weigh the fused scores.
    pub fn weigh(mut self, w: Weights) -> Self {
        self.weights = Some(w);
        self
    }

    /// Run it.
    pub fn run(self) -> Result<Vec<SearchHit>> {
        if self.limit > mnemon_index::MAX_K {
            return Err(crate::error::invalid(format!(
                "a limit of {} is above the most a search returns ({})",
                self.limit,
                mnemon_index::MAX_K
            )));
        }
        let db = self.ns.db();
        if self.mode != TextMode::Lexical {
            // What was written before the search is found by meaning too.
            let also: Vec<Namespace> =
                self.also.iter().filter_map(|n| Namespace::new(n.as_str()).ok()).collect();
            db.settle_vectors(&std::iter::once(self.ns.name()).chain(&also).collect::<Vec<_>>());
        }
        let snap = db.snapshot()?;
        // Hybrid fuses each side's candidates, so it reads deeper than it returns: a text a
        // little down one side's list may lead once both scores count. 60 a side is what the
        // LoCoMo figures were measured with (docs/search.md; 100 gave the same recall). A
        // single side returns its own order.
        let fetch = if self.mode == TextMode::Hybrid {
            self.limit.saturating_mul(3).clamp(60, mnemon_index::MAX_K)
        } else {
            self.limit
        };
        let mut hits: Vec<SearchHit> = Vec::new();
        // Where each record's hit is in `hits`, by namespace and id.
        let mut at: HashMap<(Namespace, RecordId), usize> = HashMap::new();
        let mut slot = |hits: &mut Vec<SearchHit>, rec: Record| -> usize {
            *at.entry((rec.namespace.clone(), rec.id)).or_insert_with(|| {
                hits.push(SearchHit {
                    record: rec,
                    score: 0.0,
                    lexical: None,
                    vector: None,
                    similarity: None,
                });
                hits.len() - 1
            })
        };
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
                    let (score, relevance) = (h.score, h.relevance);
                    let i = slot(&mut hits, h.record);
                    hits[i].lexical = Some((rank + 1, score, relevance));
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
            // The query was embedded by the space's own embedder: a stored space of another
            // dimension is the file's fault (damage), not the caller's.
            if let Some(space) = snap.vector_space(db.space())?
                && space.dimension as usize != v.len()
            {
                return Err(Error::Storage(mnemon_storage::Error::Inconsistent {
                    namespace: namespaces.first().map(|n| n.to_string()).unwrap_or_default(),
                    detail: format!(
                        "vector space {:?} is stored with dimension {}, but its embedder gives {}: the file is damaged (run `mnemon check`)",
                        db.space(),
                        space.dimension,
                        v.len()
                    ),
                }));
            }
            for ns in &namespaces {
                {
                    let mut q = Query::new(db.space(), ns, &v, fetch);
                    q.filter = self.filter.clone();
                    q.mode = if self.mode == TextMode::Exact { Mode::Exact } else { Mode::Auto };
                    let found = db.index().search(&snap, &q)?;
                    for (rank, h) in found.hits.into_iter().enumerate() {
                        let score = h.score;
                        let i = slot(&mut hits, h.record);
                        hits[i].vector = Some((rank + 1, score));
                        hits[i].similarity = Some(score);
                    }
                }
            }
            // A lexical result beyond the vector side's fetch still has a similarity to weigh:
            // its stored vector's cosine with the query (a dot product: both are unit vectors).
            if self.mode == TextMode::Hybrid {
                for ns in &namespaces {
                    let (wanting, records): (Vec<usize>, Vec<(RecordId, u32)>) = hits
                        .iter()
                        .enumerate()
                        .filter(|(_, h)| h.similarity.is_none() && h.record.namespace == *ns)
                        .map(|(i, h)| (i, (h.record.id, h.record.rev)))
                        .unzip();
                    let dots = db.index().dots(&snap, db.space(), ns, &v, &records)?;
                    // The segment in memory holds them; the store is read for any it lacks.
                    let missing: Vec<(RecordId, u32)> =
                        records.iter().zip(&dots).filter(|(_, d)| d.is_none()).map(|(r, _)| *r).collect();
                    let mut stored = snap.vectors_for(db.space(), ns, &missing)?.into_iter();
                    for (i, dot) in wanting.into_iter().zip(dots) {
                        hits[i].similarity = match dot {
                            Some(d) => Some(d),
                            None => stored.next().flatten().map(|(_, s)| mnemon_index::kernel::dot(&v, &s)),
                        };
                    }
                }
            }
        }
        let now = snap.now();
        let share = self.lexical_share.unwrap_or_else(|| default_lexical_share(db.space()));
        let cal = Calibration::of(db.space());
        // Nothing unrelated: by default a result must match some of the query's words, or
        // be near enough to it on its own (`Calibration::alone`).
        if self.min_score.is_none() {
            hits.retain(|h| h.lexical.is_some() || h.similarity.is_some_and(|c| c >= cal.alone));
        }
        let asked_at = self.filter.as_of.valid.unwrap_or(now);
        let period = if self.named_times { crate::when::named_period(&self.text, asked_at) } else { None };
        for h in &mut hits {
            let lex = h.lexical.map_or(0.0, |l| l.2);
            let vec = h.similarity.map_or(0.0, |c| cal.relevance(c));
            h.score = match self.mode {
                TextMode::Lexical => lex,
                TextMode::Vector | TextMode::Exact => vec,
                TextMode::Hybrid => share * lex + (1.0 - share) * vec,
            };
            if period.is_some_and(|p| p.contains(h.record.valid_from)) {
                h.score *= NAMED_TIME_BOOST;
            }
            if let Some(w) = &self.weights {
                h.score *= weight(w, &h.record, now);
            }
        }
        if let Some(m) = self.min_score {
            hits.retain(|h| h.score >= m);
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
