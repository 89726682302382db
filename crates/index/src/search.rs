//! Searching a segment: live or listed candidates, exactly or through the graph, as the planner decides.

use mnemon_storage::{AsOf, ListQuery, Namespace, Record, Snapshot};
use segment::{GONE, LIVE, Segment};
use std::collections::HashMap;

use super::*;

impl VectorIndexes {
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
            for h in g.map(|g| g.search(query, want, ef, Some(&keep), s)).unwrap_or_default() {
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
        let now = snap.records_at(AsOf::now())?;
        for h in &scored {
            if hits.len() == k {
                break;
            }
            match s.verify_now(&now, h.point)? {
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
                for h in g.map(|g| g.search(query, fetch, ef, None, s)).unwrap_or_default() {
                    if keep(h.point) {
                        top.push(h);
                    }
                }
                SearchPath::GraphOverfetch
            } else {
                let ef = base_ef.max(k);
                plan.ef = ef;
                for h in g.map(|g| g.search(query, k, ef, Some(&keep), s)).unwrap_or_default() {
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
}
