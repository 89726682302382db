//! mnemon's own HNSW graph: the same algorithm as hnsw_rs and hnswlib (Malkov and Yashunin),
//! laid out for the CPU.
//!
//! Measured beside hnsw_rs on 100k clustered 384-d vectors (docs/index.md), hnsw_rs was about
//! four times slower per query than hnswlib at the same recall. This implementation keeps what
//! a search touches compact: the vectors in one contiguous array in insertion order, each
//! node's links in a small vector behind its own lock (uncontended after the build), a
//! visited set reused per thread and cleared by bumping a generation, and the AVX2 dot
//! product of [`crate::kernel`]. Insertion runs in parallel over a batch (per-node locks, as
//! hnswlib does); the neighbour selection is the usual heuristic (keep a candidate only if it
//! is closer to the new node than to every neighbour kept so far).

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock};

use rayon::prelude::*;

use crate::error::IndexError;
use crate::exact::Scored;
use crate::graph::{Connectivity, HnswParams, NoRows, Rows, VectorIndex};
use crate::kernel::dot;
use crate::quant::{Quantiser, QueryCode};

/// The graph file's format: 2 holds the codes and their ranges instead of the `f32` vectors,
/// 3 also each code's cut (see [`Quantiser::encode`]).
const MAGIC: &[u8; 8] = b"MNHNSW03";
/// Format 1 (vectors as `f32`): refused, so the index rebuilds it from the database.
const MAGIC_1: &[u8; 8] = b"MNHNSW01";
/// Format 2 (codes without their cuts): refused, so the index rebuilds it.
const MAGIC_2: &[u8; 8] = b"MNHNSW02";
const MAX_LEVEL: usize = 16;
/// A search on codes ranks its finds again by the exact vectors until the next one's refined
/// estimate is this many of its standard deviations beyond the `k`-th exact distance
/// (chosen on the `clustered` and `topics` data sets, docs/index.md).
const SPREADS: f32 = 4.0;
/// A search on codes estimates again (see [`Quantiser::refine`]) at most this many times `k`
/// of its finds, the nearest by the walk's estimate.
const REFINE: usize = 16;

/// A distance and a node, ordered by distance (then node, for determinism).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Near(f32, u32);

impl Eq for Near {}

impl Ord for Near {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

impl PartialOrd for Near {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Marks of visited nodes, cleared in O(1) by moving to the next generation.
struct Visited {
    marks: Vec<u32>,
    generation: u32,
}

impl Visited {
    fn reset(&mut self, n: usize) {
        if self.marks.len() < n {
            self.marks.resize(n, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.marks.iter_mut().for_each(|m| *m = 0);
            self.generation = 1;
        }
    }

    /// Mark `i`; whether it was unmarked.
    #[inline]
    fn insert(&mut self, i: u32) -> bool {
        match self.marks.get_mut(i as usize) {
            Some(m) if *m != self.generation => {
                *m = self.generation;
                true
            }
            _ => false,
        }
    }
}

thread_local! {
    static VISITED: RefCell<Visited> = const { RefCell::new(Visited { marks: Vec::new(), generation: 0 }) };
}

struct Node {
    level: u8,
    links: Vec<RwLock<Vec<u32>>>,
}

/// [`VectorIndex`] implemented here (see the module documentation).
pub struct FlatHnsw {
    params: HnswParams,
    dim: usize,
    /// Vectors in insertion order: while inserting, and always in a graph that walks on
    /// them ([`FlatHnsw::walk_exact`]); otherwise empty, the exact vectors read from the
    /// caller's [`Rows`].
    data: Vec<f32>,
    /// Whether searches walk on the exact vectors (kept in `data`) instead of the codes.
    exact_walk: bool,
    /// Insertion order to the caller's point id.
    ids: Vec<u32>,
    nodes: Vec<Node>,
    /// Entry point and top level.
    entry: RwLock<Option<(u32, u8)>>,
    /// Level-0 links copied into one array once a batch is inserted: `stride` slots per node,
    /// a count then the links. Searches read it without locks; it is rebuilt after every
    /// insert (which takes `&mut self`, so no search runs meanwhile).
    frozen: Vec<u32>,
    stride: usize,
    /// Nodes the last insert's repair linked (see `repair`).
    repaired: usize,
    /// The codes a search walks on (see [`crate::quant`]), once a batch is inserted: one per
    /// node, [`Quantiser::stride`] bytes each, in insertion order.
    quant: Option<Quantiser>,
    codes: Vec<u8>,
    /// Per node, the norm of what its code's ranges cut off its vector (0 for most; see
    /// [`Quantiser::encode`]): how much further than the rounding its estimates may be off.
    cuts: Vec<f32>,
    /// A bit per node: whether its cut is above 0. A search reads it for every find it
    /// ranks, and reads `cuts` only where it is set: 100k nodes' bits stay in the nearest
    /// cache, where their cuts would be a cache miss per find.
    cut_bits: Vec<u64>,
}

/// How a walk measures the distance from its query to a node, and starts loading what that
/// will read.
trait Measure {
    fn dist(&self, i: u32) -> f32;
    fn prefetch(&self, i: u32);
}

/// Exact distances, on the `f32` vectors (building, and graphs without codes).
struct Exact<'a> {
    g: &'a FlatHnsw,
    q: &'a [f32],
}

impl Measure for Exact<'_> {
    #[inline]
    fn dist(&self, i: u32) -> f32 {
        self.g.dist(self.q, i)
    }

    #[inline]
    fn prefetch(&self, i: u32) {
        prefetch(self.g.vector(i));
    }
}

/// Estimated distances, on the codes (searching).
struct Coded<'a> {
    quant: &'a Quantiser,
    codes: &'a [u8],
    q: QueryCode,
}

impl Coded<'_> {
    #[inline]
    fn code(&self, i: u32) -> &[u8] {
        let s = self.quant.stride();
        self.codes.get(i as usize * s..(i as usize + 1) * s).unwrap_or(&[])
    }
}

impl Measure for Coded<'_> {
    #[inline]
    fn dist(&self, i: u32) -> f32 {
        1.0 - self.quant.estimate(&self.q, self.code(i))
    }

    #[inline]
    fn prefetch(&self, i: u32) {
        prefetch_all(self.code(i));
    }
}

impl std::fmt::Debug for FlatHnsw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatHnsw").field("points", &self.ids.len()).field("params", &self.params).finish()
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

/// The level of a new node: geometric with ratio 1/m, from a hash of its point id (so a
/// build is reproducible).
fn draw_level(point: u32, m: usize) -> u8 {
    let mut x = u64::from(point).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    #[allow(clippy::cast_precision_loss)]
    let u = ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let ml = 1.0 / (m.max(2) as f64).ln();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let l = (-u.ln() * ml).floor() as usize;
    u8::try_from(l.min(MAX_LEVEL)).unwrap_or(0)
}

impl FlatHnsw {
    /// An empty graph for vectors of `dim` components.
    pub fn new(params: HnswParams, dim: usize) -> Result<Self, IndexError> {
        params.validate()?;
        if dim == 0 {
            return Err(IndexError::BadParams("dimension must be positive".into()));
        }
        Ok(FlatHnsw {
            params,
            dim,
            data: Vec::new(),
            exact_walk: false,
            ids: Vec::new(),
            nodes: Vec::new(),
            entry: RwLock::new(None),
            frozen: Vec::new(),
            stride: params.m * 2 + 1,
            repaired: 0,
            quant: None,
            codes: Vec::new(),
            cuts: Vec::new(),
            cut_bits: Vec::new(),
        })
    }

    /// Build a graph over `points` (in parallel).
    pub fn build(params: HnswParams, dim: usize, points: &[(u32, &[f32])]) -> Result<Self, IndexError> {
        let mut g = FlatHnsw::new(params, dim)?;
        g.insert(points, &NoRows);
        Ok(g)
    }

    /// The exact vectors of the nodes already in the graph, back in `data` for an insert:
    /// from `rows`, or (a point `rows` does not have) decoded from its code.
    fn restore(&mut self, rows: &dyn Rows) {
        // Level-0 links back behind their locks, where an insert reads and changes them.
        for (i, node) in self.nodes.iter().enumerate() {
            let frozen = self.frozen.get(i * self.stride..(i + 1) * self.stride);
            if let (Some(l), Some(row)) = (node.links.first(), frozen) {
                let n = row.first().map_or(0, |&n| n as usize);
                *write(l) = row.get(1..=n).unwrap_or(&[]).to_vec();
            }
        }
        self.frozen = Vec::new();
        if self.data.len() == self.ids.len() * self.dim {
            return;
        }
        let mut data = Vec::with_capacity(self.ids.len() * self.dim);
        for (i, &p) in self.ids.iter().enumerate() {
            match (rows.row(p), &self.quant) {
                (Some(v), _) if v.len() == self.dim => data.extend_from_slice(v),
                (_, Some(q)) => {
                    let s = q.stride();
                    data.extend(q.decode(self.codes.get(i * s..(i + 1) * s).unwrap_or(&[])));
                    data.resize((i + 1) * self.dim, 0.0);
                }
                _ => data.resize((i + 1) * self.dim, 0.0),
            }
        }
        self.data = data;
    }

    /// A graph that keeps its own `f32` copy of every vector and walks on it, as the
    /// versions before codes did (for comparison: it holds five times the bytes per vector).
    pub fn walk_exact(mut self) -> Self {
        self.exact_walk = true;
        self
    }

    /// Copy the level-0 links into the lock-free array.
    fn freeze(&mut self) {
        let stride = self.params.m * 2 + 1;
        let mut frozen = vec![0u32; self.nodes.len() * stride];
        for (i, node) in self.nodes.iter().enumerate() {
            if let Some(l) = node.links.first() {
                let l = read(l);
                let row = &mut frozen[i * stride..(i + 1) * stride];
                let n = l.len().min(stride - 1);
                row[0] = u32::try_from(n).unwrap_or(0);
                row[1..=n].copy_from_slice(&l[..n]);
            }
        }
        // The array is now the only copy of the level-0 links: `restore` puts them back for
        // the next insert.
        for node in &self.nodes {
            if let Some(l) = node.links.first() {
                *write(l) = Vec::new();
            }
        }
        self.frozen = frozen;
        self.stride = stride;
    }

    /// Level-0 links of a node from the frozen array, when it covers the node.
    #[inline]
    fn frozen_links(&self, i: u32) -> Option<&[u32]> {
        let row = self.frozen.get(i as usize * self.stride..(i as usize + 1) * self.stride)?;
        let n = *row.first()? as usize;
        row.get(1..=n)
    }

    fn max_links(&self, level: usize) -> usize {
        if level == 0 { self.params.m * 2 } else { self.params.m }
    }

    #[inline]
    fn vector(&self, i: u32) -> &[f32] {
        let s = i as usize * self.dim;
        self.data.get(s..s + self.dim).unwrap_or(&[])
    }

    #[inline]
    fn dist(&self, q: &[f32], i: u32) -> f32 {
        1.0 - dot(q, self.vector(i))
    }

    /// Greedy descent on one level.
    fn greedy(&self, m: &impl Measure, mut cur: u32, level: usize) -> u32 {
        let mut d = m.dist(cur);
        loop {
            let mut moved = false;
            let mut next = cur;
            if let Some(l) = self.nodes.get(cur as usize).and_then(|n| n.links.get(level)) {
                let links = read(l);
                // Start loading every neighbour before scoring the first: the loads overlap.
                for &n in links.iter() {
                    m.prefetch(n);
                }
                for &n in links.iter() {
                    let dn = m.dist(n);
                    if dn < d {
                        d = dn;
                        next = n;
                        moved = true;
                    }
                }
            }
            cur = next;
            if !moved {
                return cur;
            }
        }
    }

    /// The `ef` nearest nodes found from `start` on one level, nearest first. With `keep`,
    /// only accepted nodes enter the results (all nodes are still walked).
    fn search_level(
        &self,
        m: &impl Measure,
        start: u32,
        ef: usize,
        level: usize,
        keep: Option<&(dyn Fn(u32) -> bool + Sync)>,
        spare: usize,
    ) -> Vec<Near> {
        VISITED.with(|v| {
            let mut visited = v.borrow_mut();
            visited.reset(self.nodes.len());
            let accept = |i: u32| keep.is_none_or(|f| self.ids.get(i as usize).is_some_and(|p| f(*p)));
            let mut candidates: BinaryHeap<std::cmp::Reverse<Near>> = BinaryHeap::with_capacity(ef * 2);
            let mut results: BinaryHeap<Near> = BinaryHeap::with_capacity(ef + 1);
            // With `spare`, the best `ef + spare` accepted nodes scored, whether or not they
            // stayed among the `ef` that steer the walk: on estimated distances, a node just
            // past the `ef`-th may be nearer than one inside, and ranking those again by the
            // exact vectors recovers it.
            let mut kept: BinaryHeap<Near> =
                BinaryHeap::with_capacity(if spare > 0 { ef + spare + 1 } else { 0 });
            let mut keep_spare = |near: Near| {
                if spare > 0 && kept.peek().is_none_or(|w| kept.len() < ef + spare || near < *w) {
                    kept.push(near);
                    if kept.len() > ef + spare {
                        kept.pop();
                    }
                }
            };
            let d0 = m.dist(start);
            visited.insert(start);
            candidates.push(std::cmp::Reverse(Near(d0, start)));
            if accept(start) {
                results.push(Near(d0, start));
                keep_spare(Near(d0, start));
            }
            let mut buf: Vec<u32> = Vec::with_capacity(self.max_links(level));
            let mut fresh: Vec<u32> = Vec::with_capacity(self.max_links(level));
            while let Some(std::cmp::Reverse(Near(d, c))) = candidates.pop() {
                if results.len() >= ef && results.peek().is_some_and(|w| d > w.0) {
                    break;
                }
                // The next candidate's links will be read soon: start loading them.
                if let Some(std::cmp::Reverse(next)) = candidates.peek()
                    && let Some(row) = self.frozen.get(next.1 as usize * self.stride..)
                {
                    prefetch_u32(row);
                }
                buf.clear();
                let links: &[u32] = match (level, self.frozen_links(c)) {
                    (0, Some(f)) => f,
                    _ => {
                        if let Some(l) = self.nodes.get(c as usize).and_then(|n| n.links.get(level)) {
                            buf.extend_from_slice(&read(l));
                        }
                        &buf
                    }
                };
                // Mark the unvisited neighbours and start loading their vectors, then score
                // them: the loads overlap instead of stalling one after another.
                fresh.clear();
                for &n in links {
                    if visited.insert(n) {
                        m.prefetch(n);
                        fresh.push(n);
                    }
                }
                for &n in &fresh {
                    let dn = m.dist(n);
                    let worst = results.peek().map_or(f32::INFINITY, |w| w.0);
                    let accepted = accept(n);
                    if accepted {
                        keep_spare(Near(dn, n));
                    }
                    if results.len() < ef || dn < worst {
                        candidates.push(std::cmp::Reverse(Near(dn, n)));
                        if accepted {
                            results.push(Near(dn, n));
                            if results.len() > ef {
                                results.pop();
                            }
                        }
                    }
                }
            }
            let mut out = if spare > 0 { kept.into_vec() } else { results.into_vec() };
            out.sort_unstable();
            out
        })
    }

    /// Descend from the entry point to level 0 and gather the `ef` nearest there.
    fn walk(
        &self,
        m: &impl Measure,
        ep: u32,
        top: u8,
        ef: usize,
        keep: Option<&(dyn Fn(u32) -> bool + Sync)>,
        spare: usize,
    ) -> Vec<Near> {
        let mut cur = ep;
        for l in (1..=top as usize).rev() {
            cur = self.greedy(m, cur, l);
        }
        self.search_level(m, cur, ef, 0, keep, spare)
    }

    /// Give every node without one its code, fitting the ranges on the vectors of the first
    /// batch.
    fn encode(&mut self) {
        let quant = self.quant.get_or_insert_with(|| Quantiser::fit(&self.data, self.dim));
        let have = self.codes.len() / quant.stride();
        for row in self.data.chunks_exact(self.dim).skip(have) {
            self.cuts.push(quant.encode(row, &mut self.codes));
        }
        self.codes.shrink_to_fit();
        self.cuts.shrink_to_fit();
        self.mark_cuts();
    }

    /// Set `cut_bits` from `cuts`.
    fn mark_cuts(&mut self) {
        self.cut_bits = vec![0; self.cuts.len().div_ceil(64)];
        for (i, _) in self.cuts.iter().enumerate().filter(|(_, c)| **c > 0.0) {
            if let Some(w) = self.cut_bits.get_mut(i / 64) {
                *w |= 1 << (i % 64);
            }
        }
    }

    /// What the ranges cut off node `i`'s vector (see [`Quantiser::encode`]).
    #[inline]
    fn cut(&self, i: u32) -> f32 {
        let i = i as usize;
        match self.cut_bits.get(i / 64) {
            Some(w) if w & (1 << (i % 64)) == 0 => 0.0,
            _ => self.cuts.get(i).copied().unwrap_or(f32::INFINITY),
        }
    }

    /// The neighbour-selection heuristic: walk candidates nearest first and keep one only if
    /// it is nearer to the base than to every one kept so far.
    fn select(&self, candidates: &[Near], m: usize) -> Vec<u32> {
        let mut kept: Vec<Near> = Vec::with_capacity(m);
        for &c in candidates {
            if kept.len() >= m {
                break;
            }
            let v = self.vector(c.1);
            if kept.iter().all(|k| 1.0 - dot(v, self.vector(k.1)) > c.0) {
                kept.push(c);
            }
        }
        kept.into_iter().map(|n| n.1).collect()
    }

    /// The level-0 links of every node (behind their locks while inserting, else frozen).
    fn level0(&self) -> Vec<Vec<u32>> {
        (0..self.nodes.len())
            .map(|i| match self.frozen_links(u32::try_from(i).unwrap_or(u32::MAX)) {
                Some(f) => f.to_vec(),
                None => self.nodes[i].links.first().map(|l| read(l).clone()).unwrap_or_default(),
            })
            .collect()
    }

    /// Give every node at level 0 an incoming link, and make every node reachable from the
    /// entry point. The selection heuristic prunes a node's links to keep them diverse, and a
    /// node can lose its last incoming link that way (more so in dense clusters): a walk then
    /// never reaches it, whatever its ef. Such a node is linked from its nearest neighbour
    /// that has room, else replaces that neighbour's farthest link (whose own target keeps
    /// others).
    fn repair(&mut self) {
        self.repaired = 0;
        let Some((ep, _)) = *read(&self.entry) else { return };
        let max = self.max_links(0);
        for _round in 0..8 {
            let links = self.level0();
            let mut indeg = in_degrees(&links);
            let reached = reachable(&links, ep);
            let orphans: Vec<u32> = (0..links.len())
                .filter(|&i| i != ep as usize && (indeg[i] == 0 || !reached[i]))
                .filter_map(|i| u32::try_from(i).ok())
                .collect();
            if orphans.is_empty() {
                return;
            }
            self.repaired += orphans.len();
            for x in orphans {
                // Its own links, nearest first: the nodes a walk near it comes through.
                let v = self.vector(x);
                let mut near: Vec<Near> =
                    links[x as usize].iter().map(|&y| Near(1.0 - dot(v, self.vector(y)), y)).collect();
                near.sort_unstable();
                let Some(lock) = near
                    .iter()
                    .filter(|n| reached.get(n.1 as usize).copied().unwrap_or(false))
                    .chain(near.iter())
                    .find_map(|n| {
                        self.nodes.get(n.1 as usize).and_then(|node| node.links.first()).map(|l| (n.1, l))
                    })
                else {
                    continue;
                };
                let (y, lock) = lock;
                let mut l = write(lock);
                if l.contains(&x) {
                    continue;
                }
                if l.len() < max {
                    l.push(x);
                } else {
                    // Replace y's farthest link whose target keeps another incoming link.
                    let base = self.vector(y);
                    if let Some((far, _)) = l
                        .iter()
                        .enumerate()
                        .filter(|(_, z)| indeg.get(**z as usize).is_some_and(|d| *d > 1))
                        .map(|(j, &z)| (j, 1.0 - dot(base, self.vector(z))))
                        .max_by(|a, b| a.1.total_cmp(&b.1))
                    {
                        if let Some(d) = l.get(far).and_then(|z| indeg.get_mut(*z as usize)) {
                            *d -= 1;
                        }
                        l[far] = x;
                    }
                }
                if let Some(d) = indeg.get_mut(x as usize) {
                    *d += 1;
                }
            }
        }
    }

    /// What the level-0 graph looks like: nodes reachable from the entry point and the
    /// distribution of incoming links.
    pub fn shape(&self) -> Connectivity {
        let links = self.level0();
        let indeg = in_degrees(&links);
        let reached = match *read(&self.entry) {
            Some((ep, _)) => reachable(&links, ep).iter().filter(|r| **r).count(),
            None => 0,
        };
        let mut sorted = indeg.clone();
        sorted.sort_unstable();
        let at = |p: f64| {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
            let i = ((sorted.len().saturating_sub(1)) as f64 * p).round() as usize;
            sorted.get(i).copied().unwrap_or(0)
        };
        Connectivity {
            nodes: links.len(),
            reachable: reached,
            no_in_links: indeg.iter().filter(|d| **d == 0).count(),
            in_degree_p1: at(0.01),
            in_degree_median: at(0.5),
            in_degree_max: sorted.last().copied().unwrap_or(0),
            repaired: self.repaired,
        }
    }

    /// Link node `i` into the graph.
    fn link(&self, i: u32) {
        let level = self.nodes.get(i as usize).map_or(0, |n| n.level as usize);
        let entry = *read(&self.entry);
        let Some((ep, top)) = entry else {
            let mut e = write(&self.entry);
            if e.is_none() {
                *e = Some((i, u8::try_from(level).unwrap_or(0)));
                return;
            }
            drop(e);
            return self.link(i);
        };
        let q = self.vector(i).to_vec();
        let m = Exact { g: self, q: &q };
        let mut cur = ep;
        let top = top as usize;
        for l in (level + 1..=top).rev() {
            cur = self.greedy(&m, cur, l);
        }
        for l in (0..=level.min(top)).rev() {
            let found = self.search_level(&m, cur, self.params.ef_construction, l, None, 0);
            let max = self.max_links(l);
            let chosen = self.select(&found, self.params.m.min(max));
            if let Some(links) = self.nodes.get(i as usize).and_then(|n| n.links.get(l)) {
                *write(links) = chosen.clone();
            }
            for &n in &chosen {
                let Some(lock) = self.nodes.get(n as usize).and_then(|x| x.links.get(l)) else { continue };
                let mut nl = write(lock);
                if nl.contains(&i) {
                    continue;
                }
                if nl.len() < max {
                    nl.push(i);
                } else {
                    let base = self.vector(n);
                    let mut cands: Vec<Near> = nl
                        .iter()
                        .chain(std::iter::once(&i))
                        .map(|&x| Near(1.0 - dot(base, self.vector(x)), x))
                        .collect();
                    cands.sort_unstable();
                    *nl = self.select(&cands, max);
                }
            }
            if let Some(best) = found.first() {
                cur = best.1;
            }
        }
        if level > top {
            let mut e = write(&self.entry);
            if e.is_none_or(|(_, t)| (t as usize) < level) {
                *e = Some((i, u8::try_from(level).unwrap_or(0)));
            }
        }
    }

    /// Read a graph written by [`VectorIndex::save`].
    pub fn load(dir: &Path, basename: &str) -> Result<Self, IndexError> {
        let path = dir.join(format!("{basename}.mnhnsw"));
        let bad = |reason: &str| IndexError::Load { path: path.clone(), reason: reason.to_string() };
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|e| IndexError::Io { path: path.clone(), source: e })?;
        let mut r = Reader { bytes: &bytes, at: 0 };
        match r.take(8).ok_or_else(|| bad("truncated"))? {
            m if m == MAGIC => {}
            m if m == MAGIC_1 => {
                return Err(bad("a graph of format 1 (f32 vectors), rebuilt in format 3 (codes)"));
            }
            m if m == MAGIC_2 => {
                return Err(bad("a graph of format 2 (codes without their cuts), rebuilt in format 3"));
            }
            _ => return Err(bad("not a mnemon graph file")),
        }
        let mut next = || r.u32().ok_or_else(|| bad("truncated"));
        let dim = next()? as usize;
        let m = next()? as usize;
        let ef_construction = next()? as usize;
        let n = next()? as usize;
        let ep = next()?;
        let top = next()?;
        if n > bytes.len() / 9 || dim == 0 || dim > 65_536 {
            return Err(bad("header out of range"));
        }
        let params = HnswParams { m, ef_construction, ef_search: 64 };
        let mut g = FlatHnsw::new(params, dim)?;
        let mut floats = |what: &str| -> Result<Vec<f32>, IndexError> {
            let b = r.take(dim * 4).ok_or_else(|| bad("truncated"))?;
            let v: Vec<f32> =
                b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            if v.iter().all(|x| x.is_finite()) { Ok(v) } else { Err(bad(&format!("{what} out of range"))) }
        };
        let lo = floats("ranges")?;
        let step = floats("steps")?;
        if step.iter().any(|&s| s <= 0.0) {
            return Err(bad("steps out of range"));
        }
        let quant = Quantiser::from_parts(dim, lo, step);
        g.ids.reserve(n);
        g.nodes.reserve(n);
        for _ in 0..n {
            let id = r.u32().ok_or_else(|| bad("truncated"))?;
            let level = r.take(1).ok_or_else(|| bad("truncated"))?[0];
            if level as usize > MAX_LEVEL {
                return Err(bad("level out of range"));
            }
            let mut links = Vec::with_capacity(level as usize + 1);
            for _ in 0..=level {
                let count = r.u32().ok_or_else(|| bad("truncated"))? as usize;
                if count > 2 * m {
                    return Err(bad("too many links"));
                }
                let mut l = Vec::with_capacity(count);
                for _ in 0..count {
                    let x = r.u32().ok_or_else(|| bad("truncated"))?;
                    if x as usize >= n {
                        return Err(bad("link out of range"));
                    }
                    l.push(x);
                }
                links.push(RwLock::new(l));
            }
            g.ids.push(id);
            g.nodes.push(Node { level, links });
        }
        g.codes = r.take(n.saturating_mul(quant.stride())).ok_or_else(|| bad("truncated"))?.to_vec();
        g.cuts = r
            .take(n.saturating_mul(4))
            .ok_or_else(|| bad("truncated"))?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if g.cuts.iter().any(|c| !(c.is_finite() && *c >= 0.0)) {
            return Err(bad("cuts out of range"));
        }
        g.mark_cuts();
        g.quant = Some(quant);
        if r.at != bytes.len() {
            return Err(bad("trailing bytes"));
        }
        g.freeze();
        if n > 0 {
            if ep as usize >= n || top as usize > MAX_LEVEL {
                return Err(bad("entry point out of range"));
            }
            *write(&g.entry) = Some((ep, u8::try_from(top).unwrap_or(0)));
        }
        Ok(g)
    }
}

/// How many of `links` point to each node.
fn in_degrees(links: &[Vec<u32>]) -> Vec<u32> {
    let mut indeg = vec![0u32; links.len()];
    for &x in links.iter().flatten() {
        if let Some(d) = indeg.get_mut(x as usize) {
            *d += 1;
        }
    }
    indeg
}

/// Which nodes a walk over `links` from `from` reaches.
fn reachable(links: &[Vec<u32>], from: u32) -> Vec<bool> {
    let mut seen = vec![false; links.len()];
    let mut stack = vec![from];
    if let Some(s) = seen.get_mut(from as usize) {
        *s = true;
    }
    while let Some(x) = stack.pop() {
        for &y in links.get(x as usize).map_or(&[][..], Vec::as_slice) {
            if let Some(s) = seen.get_mut(y as usize)
                && !*s
            {
                *s = true;
                stack.push(y);
            }
        }
    }
    seen
}

/// Ask the CPU to start loading a vector we are about to read.
#[inline(always)]
fn prefetch(v: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of the x86-64 baseline, and a prefetch never faults, whatever
        // the address. Measured in docs/index.md: prefetching the neighbours' vectors before
        // scoring them raised single-thread QPS by about 30% on 100k 384-d vectors.
        #[allow(unsafe_code)]
        unsafe {
            let p = v.as_ptr().cast::<i8>();
            _mm_prefetch::<_MM_HINT_T0>(p);
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(128));
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(192));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

/// Ask the CPU to start loading every cache line of `v` (a code, or a vector about to be
/// ranked again).
#[inline(always)]
fn prefetch_all<T>(v: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = v.as_ptr().cast::<i8>();
        let len = std::mem::size_of_val(v);
        // A plain loop: `step_by` cost a sixth of this function's time in the profile.
        let mut at = 0;
        while at < len {
            // SAFETY: as in `prefetch`: SSE is baseline on x86-64 and prefetches never fault
            // (the address is inside `v` in any case).
            #[allow(unsafe_code)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(at));
            }
            at += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

/// Prefetch the start of a `u32` slice (a links row).
#[inline(always)]
fn prefetch_u32(v: &[u32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: as in `prefetch`: SSE is baseline on x86-64 and prefetches never fault.
        #[allow(unsafe_code)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(v.as_ptr().cast::<i8>());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes)
    }
}

impl VectorIndex for FlatHnsw {
    fn len(&self) -> usize {
        self.ids.len()
    }

    fn insert(&mut self, points: &[(u32, &[f32])], rows: &dyn Rows) {
        self.restore(rows);
        let first = self.ids.len();
        for (p, v) in points {
            if v.len() != self.dim {
                continue;
            }
            let level = draw_level(*p, self.params.m);
            self.ids.push(*p);
            self.data.extend_from_slice(v);
            let links =
                (0..=level).map(|l| RwLock::new(Vec::with_capacity(self.max_links(l as usize)))).collect();
            self.nodes.push(Node { level, links });
        }
        let new: Vec<u32> = (first..self.ids.len()).filter_map(|i| u32::try_from(i).ok()).collect();
        // The first node alone, so that the parallel ones find an entry point.
        if let Some((&head, rest)) = new.split_first() {
            self.link(head);
            let this = &*self;
            rest.par_iter().with_min_len(64).for_each(|&i| this.link(i));
        }
        self.repair();
        self.freeze();
        self.encode();
        if !self.exact_walk {
            self.data = Vec::new();
        }
    }

    fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        keep: Option<&(dyn Fn(u32) -> bool + Sync)>,
        rows: &dyn Rows,
    ) -> Vec<Scored> {
        let Some((ep, top)) = *read(&self.entry) else { return Vec::new() };
        if k == 0 || query.len() != self.dim {
            return Vec::new();
        }
        let ef = ef.max(k);
        // The finds, nearest first by a lower bound of their exact distance, each with its
        // estimated distance (on exact vectors: both are the exact distance).
        let found: Vec<(Near, f32)> = match &self.quant {
            Some(quant) if !self.exact_walk && self.codes.len() == self.ids.len() * quant.stride() => {
                let m = Coded { quant, codes: &self.codes, q: quant.query(query) };
                // Keep `k` more than `ef` (see `search_level`) and bound each find's exact
                // distance from below: its estimate made again with the exact query (see
                // `Quantiser::refine`), less `SPREADS` standard deviations of that estimate's
                // rounding error and what the ranges cut off its vector (one added after they
                // were fitted) times the query's norm. Only the first `REFINE * k` by the
                // walk's estimate: it misplaces finds by a few places, not more (ranking only
                // its first `4k` exactly lost nothing on any data set), and at a large `ef`
                // bounding every find would cost more than the rows it spares.
                let norm = dot(query, query).sqrt();
                let rounding = SPREADS * m.q.spread();
                let mut found: Vec<(Near, f32)> = self
                    .walk(&m, ep, top, ef, keep, k)
                    .into_iter()
                    .take(REFINE * k)
                    .map(|n| {
                        let cut = self.cut(n.1);
                        let estimate = 1.0 - quant.refine(&m.q, m.code(n.1));
                        (Near(estimate - rounding - norm * cut, n.1), estimate)
                    })
                    .collect();
                found.sort_unstable_by_key(|f| f.0);
                found
            }
            _ if self.data.len() == self.ids.len() * self.dim => self
                .walk(&Exact { g: self, q: query }, ep, top, ef, keep, 0)
                .into_iter()
                .map(|n| (n, n.0))
                .collect(),
            _ => return Vec::new(),
        };
        let row = |n: u32| -> Option<&[f32]> {
            if self.exact_walk {
                Some(self.vector(n))
            } else {
                self.ids.get(n as usize).and_then(|&p| rows.row(p))
            }
        };
        // Rank the finds by their exact vectors, in the order of their bounds, until the next
        // bound is beyond the `k`-th exact distance: those left are out of the best `k` but
        // for a chance of about 1 in 30,000 each (the refined estimate's rounding error is
        // near normal, and the bound allows `SPREADS` of its standard deviations). A row is
        // an exact product from memory, a chain of cache misses, so most finds are never
        // read: the bounds of the best few are close, the rest far.
        let mut best: Vec<Near> = Vec::with_capacity(k + 1);
        if let Some(first) = found.first().and_then(|(n, _)| row(n.1)) {
            prefetch_all(first);
        }
        for (i, &(n, estimate)) in found.iter().enumerate() {
            if best.len() >= k && best.last().is_some_and(|w| n.0 > w.0) {
                break;
            }
            // The next row is scattered in memory too: start loading it.
            if let Some(next) = found.get(i + 1).and_then(|(n, _)| row(n.1)) {
                prefetch_all(next);
            }
            let near = match row(n.1) {
                Some(v) if v.len() == self.dim => Near(1.0 - dot(query, v), n.1),
                _ => Near(estimate, n.1),
            };
            let at = best.partition_point(|b| *b < near);
            if at < k {
                best.insert(at, near);
                best.truncate(k);
            }
        }
        best.into_iter()
            .filter_map(|n| self.ids.get(n.1 as usize).map(|&p| Scored { point: p, score: 1.0 - n.0 }))
            .collect()
    }

    fn save(&self, dir: &Path, basename: &str) -> Result<Vec<PathBuf>, IndexError> {
        let path = dir.join(format!("{basename}.mnhnsw"));
        let io = |e: std::io::Error| IndexError::Io { path: path.clone(), source: e };
        let f = std::fs::File::create(&path).map_err(io)?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        let (ep, top) = read(&self.entry).unwrap_or((0, 0));
        let u = |x: usize| u32::try_from(x).unwrap_or(u32::MAX).to_le_bytes();
        w.write_all(MAGIC).map_err(io)?;
        for x in [
            u(self.dim),
            u(self.params.m),
            u(self.params.ef_construction),
            u(self.ids.len()),
            ep.to_le_bytes(),
            u32::from(top).to_le_bytes(),
        ] {
            w.write_all(&x).map_err(io)?;
        }
        let (lo, step) = match &self.quant {
            Some(q) => q.parts(),
            None => return Err(IndexError::Save { path, reason: "the graph has no codes".into() }),
        };
        for x in lo.iter().chain(step) {
            w.write_all(&x.to_le_bytes()).map_err(io)?;
        }
        for (i, (id, node)) in self.ids.iter().zip(&self.nodes).enumerate() {
            w.write_all(&id.to_le_bytes()).map_err(io)?;
            w.write_all(&[node.level]).map_err(io)?;
            for (level, l) in node.links.iter().enumerate() {
                let l = read(l);
                let l: &[u32] = match self.frozen_links(u32::try_from(i).unwrap_or(u32::MAX)) {
                    Some(f) if level == 0 => f,
                    _ => &l,
                };
                w.write_all(&u(l.len())).map_err(io)?;
                for x in l {
                    w.write_all(&x.to_le_bytes()).map_err(io)?;
                }
            }
        }
        w.write_all(&self.codes).map_err(io)?;
        for cut in &self.cuts {
            w.write_all(&cut.to_le_bytes()).map_err(io)?;
        }
        let f = w.into_inner().map_err(|e| IndexError::Io { path: path.clone(), source: e.into_error() })?;
        f.sync_all().map_err(io)?;
        Ok(vec![path])
    }

    fn name(&self) -> &'static str {
        "mnemon"
    }

    fn connectivity(&self) -> Option<Connectivity> {
        Some(self.shape())
    }

    fn memory(&self) -> usize {
        let upper: usize = self
            .nodes
            .iter()
            .map(|n| {
                std::mem::size_of::<Node>()
                    + n.links
                        .iter()
                        .map(|l| std::mem::size_of::<RwLock<Vec<u32>>>() + read(l).capacity() * 4)
                        .sum::<usize>()
            })
            .sum();
        self.data.capacity() * 4
            + self.codes.capacity()
            + self.cuts.capacity() * 4
            + self.cut_bits.capacity() * 8
            + self.frozen.capacity() * 4
            + self.ids.capacity() * 4
            + upper
    }

    fn params(&self) -> HnswParams {
        self.params
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::scan_all;
    use crate::graph::FlatRows;
    use crate::synth::{Shape, clustered};

    fn unit(v: Vec<Vec<f32>>) -> Vec<f32> {
        v.into_iter().flat_map(|x| mnemon_storage::normalise(&x).unwrap()).collect()
    }

    #[test]
    fn recall_and_round_trip() {
        let dim = 32;
        let data = unit(clustered(3_000, Shape { clusters: 20, latent: 6, ..Shape::new(dim) }, 1));
        let points: Vec<(u32, &[f32])> =
            data.chunks_exact(dim).enumerate().map(|(i, v)| (i as u32 * 3, v)).collect();
        let g =
            FlatHnsw::build(HnswParams { m: 12, ef_construction: 100, ef_search: 64 }, dim, &points).unwrap();
        // Point p is row p / 3.
        struct Thirds<'a>(FlatRows<'a>);
        impl Rows for Thirds<'_> {
            fn row(&self, p: u32) -> Option<&[f32]> {
                if p.is_multiple_of(3) { self.0.row(p / 3) } else { None }
            }
        }
        let rows = Thirds(FlatRows { data: &data, dim });
        assert_eq!(g.len(), 3_000);
        let queries = unit(clustered(50, Shape { clusters: 20, latent: 6, ..Shape::new(dim) }, 2));
        let mut hits = 0;
        for q in queries.chunks_exact(dim) {
            let truth: Vec<u32> =
                scan_all(&data, dim, q, 10, &|_| true).iter().map(|s| s.point * 3).collect();
            let got = g.search(q, 10, 64, None, &rows);
            hits += got.iter().filter(|s| truth.contains(&s.point)).count();
            // Filtered: only points divisible by 2 (ids are multiples of 3).
            let f = g.search(q, 5, 64, Some(&|p| p % 2 == 0), &rows);
            assert!(f.iter().all(|s| s.point % 2 == 0));
        }
        assert!(hits >= 490, "recall {hits}/500");
        let dir = tempfile::tempdir().unwrap();
        g.save(dir.path(), "t").unwrap();
        let h = FlatHnsw::load(dir.path(), "t").unwrap();
        let q = &queries[..dim];
        assert_eq!(g.search(q, 10, 64, None, &rows), h.search(q, 10, 64, None, &rows));
        // Damage is an error, never a panic.
        let p = dir.path().join("t.mnhnsw");
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        assert!(FlatHnsw::load(dir.path(), "t").is_err());
        // A graph of format 1 is refused with a reason (the index then rebuilds it).
        let mut old = bytes.clone();
        old[..8].copy_from_slice(MAGIC_1);
        std::fs::write(&p, &old).unwrap();
        let e = FlatHnsw::load(dir.path(), "t").unwrap_err().to_string();
        assert!(e.contains("format 1"), "{e}");
        old[..8].copy_from_slice(MAGIC_2);
        std::fs::write(&p, &old).unwrap();
        let e = FlatHnsw::load(dir.path(), "t").unwrap_err().to_string();
        assert!(e.contains("format 2"), "{e}");
    }

    /// The recall@10 of `g` over `queries` against the exact top 10 of `data`.
    fn recall(g: &FlatHnsw, data: &[f32], dim: usize, queries: &[f32], rows: &dyn Rows, ef: usize) -> f64 {
        let mut hits = 0;
        for q in queries.chunks_exact(dim) {
            let truth: Vec<u32> = scan_all(data, dim, q, 10, &|_| true).iter().map(|s| s.point).collect();
            hits += g.search(q, 10, ef, None, rows).iter().filter(|s| truth.contains(&s.point)).count();
        }
        hits as f64 / (queries.len() / dim * 10) as f64
    }

    #[test]
    fn a_graph_grows_on_codes_and_keeps_no_vectors() {
        let dim = 48;
        let shape = Shape { clusters: 30, latent: 8, ..Shape::new(dim) };
        let data = unit(clustered(4_000, shape, 5));
        let queries = unit(clustered(60, shape, 6));
        let rows = FlatRows { data: &data, dim };
        let points: Vec<(u32, &[f32])> =
            data.chunks_exact(dim).enumerate().map(|(i, v)| (i as u32, v)).collect();
        let params = HnswParams { m: 12, ef_construction: 100, ef_search: 64 };
        let (first, second) = points.split_at(2_500);
        let mut g = FlatHnsw::build(params, dim, first).unwrap();
        assert!(g.data.is_empty(), "the exact vectors are the caller's");
        assert_eq!(g.codes.len(), 2_500 * 64);
        // The second batch is linked to the first through the caller's rows.
        g.insert(second, &rows);
        assert!(g.data.is_empty());
        assert_eq!(g.len(), 4_000);
        let coded = recall(&g, &data, dim, &queries, &rows, 64);
        assert!(coded >= 0.97, "recall {coded}");
        // The same graph walking on exact vectors finds no more.
        let mut exact = FlatHnsw::new(params, dim).unwrap().walk_exact();
        exact.insert(first, &NoRows);
        exact.insert(second, &NoRows);
        let base = recall(&exact, &data, dim, &queries, &NoRows, 64);
        assert!(coded >= base - 0.02, "coded {coded}, exact {base}");
        // Every node is reachable from the entry point and has an incoming link.
        let c = g.shape();
        assert_eq!((c.nodes, c.reachable, c.no_in_links), (4_000, 4_000, 0), "{c:?}");
        assert!(c.in_degree_p1 >= 1 && c.in_degree_median >= 8, "{c:?}");
        // A code (48 bytes padded to 64) instead of each exact vector (192 bytes).
        assert!(
            exact.memory() >= g.memory() + 4_000 * (dim * 4 - 64),
            "{} against {}",
            g.memory(),
            exact.memory()
        );
        // The second batch was coded on the first one's ranges: some of it reaches beyond.
        assert_eq!(g.cuts.len(), 4_000);
        assert!(g.cuts[..2_500].iter().all(|&c| c == 0.0));
        assert!(g.cuts[2_500..].iter().any(|&c| c > 0.0));
        // Ranking by the exact vectors stops at the estimates' bounds (the cuts included),
        // and finds the same best 10 as ranking every find of the walk by its exact vector.
        let quant = g.quant.as_ref().unwrap();
        let (ep, top) = read(&g.entry).unwrap();
        for q in queries.chunks_exact(dim) {
            let m = Coded { quant, codes: &g.codes, q: quant.query(q) };
            let mut all: Vec<Near> = g
                .walk(&m, ep, top, 64, None, 10)
                .into_iter()
                .map(|n| Near(1.0 - dot(q, rows.row(n.1).unwrap()), n.1))
                .collect();
            all.sort_unstable();
            let want: Vec<u32> = all.iter().take(10).map(|n| n.1).collect();
            let got: Vec<u32> = g.search(q, 10, 64, None, &rows).iter().map(|s| s.point).collect();
            assert_eq!(got, want);
        }
        // Scores are exact cosines, not estimates.
        let q = &queries[..dim];
        for h in g.search(q, 5, 64, None, &rows) {
            let want = dot(q, rows.row(h.point).unwrap());
            assert_eq!(h.score, 1.0 - (1.0 - want));
        }
    }
}
