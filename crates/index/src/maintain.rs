//! Keeping the graphs fresh: rebuilding, extending and publishing segments, in the background or on demand.

use mnemon_storage::{Durability, Namespace, WriteOp};
use segment::{GONE, LIVE, Segment};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::*;

impl VectorIndexes {
    /// Whether the segment needs a (new) graph: big enough without one, or too many dead or
    /// forgotten points in it.
    fn needs_rebuild(&self, s: &Segment) -> bool {
        match &s.graph {
            None => s.live >= self.opts.graph_min,
            Some(_) => {
                s.tombstones() as f64 > self.opts.rebuild_tombstones * s.graph_points as f64
                    || (0..s.slots.len()).any(|i| s.in_graph[i] && s.state[i] == GONE)
            }
        }
    }

    /// Whether the graph has too many live points outside it.
    fn needs_extend(&self, s: &Segment) -> bool {
        s.graph.is_some() && s.tail().len() > self.opts.tail_max
    }

    pub(super) fn needs_maintenance(&self, s: &Segment) -> bool {
        self.needs_rebuild(s)
            || self.needs_extend(s)
            || (s.graph.is_some() && s.dirty && self.opts.dir.is_some())
    }

    /// Run [`Self::maintain`] on a background thread unless one is running. The thread holds
    /// a handle on the store until it finishes: the file stays open that long.
    pub fn maintain_in_background(&self) {
        if self.maintaining.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = VectorIndexes {
            store: self.store.clone(),
            opts: self.opts.clone(),
            segments: Mutex::new(self.segments.lock().unwrap_or_else(PoisonError::into_inner).clone()),
            maintaining: Arc::clone(&self.maintaining),
            publishing: Arc::clone(&self.publishing),
        };
        let spawned = std::thread::Builder::new().name("mnemon-index".into()).spawn(move || {
            // The build runs on threads of its own, not rayon's global pool: searches split
            // their exact scans over that pool, and a build's many tasks queued there ahead of
            // them held searches for the whole build (0.3-0.7 s, `mnemon-bench serve --batch
            // 10`). On its own threads, half as many as cores, the build leaves the searches
            // and writes cores of their own.
            // Failures leave the segment searchable exactly; the next search tries again.
            let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
            let threads = (cores / 2).max(1);
            let _ = match rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("mnemon-index-{i}"))
                .build()
            {
                Ok(pool) => pool.install(|| me.maintain()),
                Err(_) => me.maintain(),
            };
            // Release the store before saying so: a caller that waits for the flag and then
            // reopens the file must not find it still in use.
            let flag = Arc::clone(&me.maintaining);
            drop(me);
            flag.store(false, Ordering::Release);
        });
        if spawned.is_err() {
            self.maintaining.store(false, Ordering::Release);
        }
    }

    /// Whether a background maintenance is running.
    pub fn is_maintaining(&self) -> bool {
        self.maintaining.load(Ordering::Acquire)
    }

    /// Bring every loaded segment's graph up to date: build it once a segment is big enough,
    /// rebuild it when too many of its points are dead (or any was forgotten), add newer
    /// points when there are many, and publish it when it changed.
    pub fn maintain(&self) -> Result<Vec<BuildReport>, IndexError> {
        let segs: Vec<Arc<RwLock<Segment>>> =
            self.segments.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        let mut out = Vec::new();
        for seg in segs {
            let (needs, rebuild, extend) = {
                let s = read(&seg);
                (self.needs_maintenance(&s), self.needs_rebuild(&s), self.needs_extend(&s))
            };
            if !needs {
                continue;
            }
            if rebuild {
                self.rebuild(&seg)?;
            } else if extend {
                extend_graph(&seg);
            }
            let generation = self.publish(&seg)?;
            let s = read(&seg);
            out.push(BuildReport {
                space: s.space.clone(),
                namespace: s.ns.as_str().to_string(),
                graph_points: s.graph_points,
                generation,
            });
        }
        Ok(out)
    }

    /// Build (or rebuild) the graph of one segment now, and publish it.
    pub fn build(&self, space: &str, ns: &Namespace) -> Result<BuildReport, IndexError> {
        let snap = self.store.snapshot()?;
        let seg = self.segment(&snap, space, ns)?.ok_or_else(|| {
            IndexError::BadQuery(format!("no vectors in space {space:?} (it was never written to)"))
        })?;
        self.rebuild(&seg)?;
        let generation = self.publish(&seg)?;
        let s = read(&seg);
        Ok(BuildReport {
            space: space.into(),
            namespace: ns.as_str().into(),
            graph_points: s.graph_points,
            generation,
        })
    }

    /// Build a new graph over the live points without holding the lock, then swap it in.
    fn rebuild(&self, seg: &RwLock<Segment>) -> Result<(), IndexError> {
        let (points, data, dim) = {
            let s = read(seg);
            let points: Vec<u32> = (0..s.slots.len())
                .filter(|&i| s.state[i] == LIVE)
                .filter_map(|i| u32::try_from(i).ok())
                .collect();
            let mut data = Vec::with_capacity(points.len() * s.dim);
            for &p in &points {
                data.extend_from_slice(s.row(p));
            }
            (points, data, s.dim)
        };
        let refs: Vec<(u32, &[f32])> =
            points.iter().zip(data.chunks_exact(dim.max(1))).map(|(p, v)| (*p, v)).collect();
        let graph = Arc::from(self.opts.engine.build(self.opts.params, dim, &refs)?);
        let mut s = write(seg);
        s.in_graph.iter_mut().for_each(|g| *g = false);
        for &p in &points {
            if let Some(g) = s.in_graph.get_mut(p as usize) {
                *g = true;
            }
        }
        s.graph_points = points.len();
        s.graph = Some(graph);
        s.dirty = true;
        Ok(())
    }

    /// Publish a segment's graph (see the `persist` module for the protocol). Returns the
    /// generation, or `None` without an index directory or graph. What is published is taken
    /// under a read lock (the graph is shared, its points copied); the files, their syncs and
    /// the manifest's durable commit happen without the segment's lock, so searches and their
    /// catch-up go on meanwhile.
    fn publish(&self, seg: &RwLock<Segment>) -> Result<Option<u64>, IndexError> {
        let Some(dir) = &self.opts.dir else { return Ok(None) };
        let _one_at_a_time = self.publishing.lock().unwrap_or_else(PoisonError::into_inner);
        let (graph, slots, in_graph, dim, space, ns, covered_seq, graph_points, generation) = {
            let s = read(seg);
            let Some(graph) = s.graph.clone() else { return Ok(None) };
            let (slots, in_graph) = (s.slots.clone(), s.in_graph.clone());
            (
                graph,
                slots,
                in_graph,
                s.dim,
                s.space.clone(),
                s.ns.clone(),
                s.covered_seq,
                s.graph_points,
                s.generation,
            )
        };
        std::fs::create_dir_all(dir).map_err(|e| IndexError::Io { path: dir.clone(), source: e })?;
        let key = persist::manifest_key(&space, &ns);
        let stem = persist::segment_stem(&space, &ns);
        let published = self.store.snapshot()?.aux(&key)?.and_then(|b| Manifest::decode(&b).ok());
        let generation = generation.max(published.as_ref().map_or(0, |m| m.generation)) + 1;
        let basename = format!("{stem}.g{generation}");
        // Leftovers of a crashed publish under this name would make hnsw_rs pick another.
        let keep: Vec<String> =
            published.iter().flat_map(|m| m.files.iter().map(|f| f.name.clone())).collect();
        persist::remove_unreferenced(dir, &stem, &keep);
        let mut files = graph.save(dir, &basename)?;
        let points = dir.join(format!("{basename}.points"));
        persist::write_points(&points, dim, &slots, &in_graph)?;
        files.push(points);
        let mut listed = Vec::new();
        for f in &files {
            persist::sync_file(f)?;
            let (len, blake3) = persist::checksum(f)?;
            let name = f.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            listed.push(ManifestFile { name, len, blake3 });
        }
        persist::sync_dir(dir)?;
        let params = graph.params();
        let manifest = Manifest {
            version: 1,
            generation,
            basename,
            engine: graph.name().to_string(),
            space,
            namespace: ns.as_str().to_string(),
            dimension: u32::try_from(dim).unwrap_or(u32::MAX),
            m: params.m,
            ef_construction: params.ef_construction,
            slots: slots.len() as u64,
            graph_points: graph_points as u64,
            covered_seq,
            files: listed,
        };
        self.store.write_with(
            vec![WriteOp::PutAux { key, value: Some(manifest.encode()) }],
            Durability::Immediate,
        )?;
        let names: Vec<String> = manifest.files.iter().map(|f| f.name.clone()).collect();
        persist::remove_unreferenced(dir, &stem, &names);
        let mut s = write(seg);
        s.generation = s.generation.max(generation);
        // Still the graph just published: nothing left to publish.
        if s.graph.as_ref().is_some_and(|g| Arc::ptr_eq(g, &graph)) && s.graph_points == graph_points {
            s.dirty = false;
        }
        Ok(Some(generation))
    }
}

/// Points added to a graph per hold of the segment's lock while it is extended.
const EXTEND_SLICE: usize = 64;

/// Add the live points newer than the graph (the tail, as it is now) to it, a slice at a time:
/// each slice holds the segment's lock only while its points go in, so a search (and its
/// catch-up, which needs the lock) waits for one slice, never for the whole tail. Points that
/// stopped being live meanwhile are left out; points that arrive meanwhile wait for the next
/// time. A graph being published (shared) is left alone until the next time.
fn extend_graph(seg: &RwLock<Segment>) {
    let tail = read(seg).tail();
    for slice in tail.chunks(EXTEND_SLICE) {
        {
            let mut s = write(seg);
            let rows: Vec<(u32, Vec<f32>)> = slice
                .iter()
                .filter(|&&p| {
                    s.state.get(p as usize) == Some(&LIVE) && s.in_graph.get(p as usize) == Some(&false)
                })
                .map(|&p| (p, s.row(p).to_vec()))
                .collect();
            let refs: Vec<(u32, &[f32])> = rows.iter().map(|(p, v)| (*p, v.as_slice())).collect();
            let Some(mut g) = s.graph.take() else { return };
            let Some(graph) = Arc::get_mut(&mut g) else {
                s.graph = Some(g);
                return;
            };
            // The graph reads its older points' vectors from the segment.
            graph.insert(&refs, &*s);
            s.graph = Some(g);
            for &(p, _) in &refs {
                if let Some(g) = s.in_graph.get_mut(p as usize) {
                    *g = true;
                }
            }
            s.graph_points += refs.len();
            s.dirty = true;
        }
        // Let the searches that waited for the lock have it before the next slice.
        std::thread::yield_now();
    }
}
