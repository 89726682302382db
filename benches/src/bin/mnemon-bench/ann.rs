//! `mnemon-bench ann` and `mnemon-bench ann-data`: the vector graph against TEXMEX files.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mnemon::index::exact::{scan_all, scan_points};
use mnemon::index::kernel::dot;
use mnemon::index::synth::{self, Shape};
use mnemon::index::{Engine, FlatHnsw, FlatRows, HnswParams, NoRows, VectorIndex};
use rayon::prelude::*;
use serde_json::json;

use crate::fvecs::{encode_fvecs, encode_ivecs, read_fvecs, read_ivecs};
use crate::report::{Out, table, usage};

fn normalised(v: Vec<Vec<f32>>, what: &str) -> Result<Vec<f32>> {
    let mut flat = Vec::with_capacity(v.len() * v.first().map_or(0, Vec::len));
    for (i, x) in v.into_iter().enumerate() {
        let n = mnemon::normalise(&x).map_err(|e| usage(format!("{what} vector {i}: {e}")))?;
        flat.extend_from_slice(&n);
    }
    Ok(flat)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Read throughput of memory: stream a buffer bigger than the caches through the same
/// vectorised dot-product kernel, on one thread and on all.
fn memory_bandwidth() -> (f64, f64) {
    let buf = vec![1.0f32; (512 << 20) / 4];
    let ones = vec![1.0f32; 1 << 14];
    let gb = (buf.len() * 4) as f64 / 1e9;
    let (mut best1, mut bestn) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        let t = Instant::now();
        let s: f32 = buf.chunks(ones.len()).map(|c| dot(c, &ones)).sum();
        std::hint::black_box(s);
        best1 = best1.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let s: f32 = buf.par_chunks(ones.len()).map(|c| dot(c, &ones)).sum();
        std::hint::black_box(s);
        bestn = bestn.min(t.elapsed().as_secs_f64());
    }
    (gb / best1, gb / bestn)
}

/// A graph to measure: an engine of the index, or the mnemon graph walking on its exact
/// vectors instead of its codes (as it did before codes).
#[derive(Clone, Copy, Debug)]
pub enum Graph {
    Engine(Engine),
    MnemonExactWalk,
}

impl Graph {
    pub fn parse(s: &str) -> Option<Graph> {
        match s {
            "mnemon-exact-walk" => Some(Graph::MnemonExactWalk),
            _ => Engine::parse(s).map(Graph::Engine),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Graph::Engine(e) => e.name(),
            Graph::MnemonExactWalk => "mnemon-exact-walk",
        }
    }

    fn build(self, params: HnswParams, dim: usize, points: &[(u32, &[f32])]) -> Result<Box<dyn VectorIndex>> {
        Ok(match self {
            Graph::Engine(e) => e.build(params, dim, points)?,
            Graph::MnemonExactWalk => {
                let mut g = FlatHnsw::new(params, dim)?.walk_exact();
                g.insert(points, &NoRows);
                Box::new(g)
            }
        })
    }
}

#[allow(clippy::too_many_arguments, clippy::cast_precision_loss)]
pub fn ann(
    out: &mut Out,
    base: &Path,
    queries: &Path,
    gt: &Path,
    k: usize,
    efs: &[usize],
    params: HnswParams,
    limit: Option<usize>,
    engines: &[Graph],
) -> Result<()> {
    params.validate().map_err(|e| usage(e.to_string()))?;
    if k == 0 || efs.contains(&0) {
        bail!(usage("--k and every --ef must be positive"));
    }
    let (dim, base_v) = read_fvecs(base)?;
    let (qdim, query_v) = read_fvecs(queries)?;
    let (_, gt_v) = read_ivecs(gt)?;
    if dim != qdim {
        bail!(usage(format!("base vectors have dimension {dim}, queries {qdim}")));
    }
    if gt_v.len() < query_v.len() || gt_v.iter().any(|g| g.len() < k) {
        bail!(usage(format!(
            "the ground truth needs at least {k} neighbours for each of the {} queries",
            query_v.len()
        )));
    }
    let n = base_v.len();
    let nq = limit.unwrap_or(query_v.len()).min(query_v.len());
    let base_flat = normalised(base_v, "base")?;
    let query_flat = normalised(query_v, "query")?;
    let query = |i: usize| &query_flat[i * dim..(i + 1) * dim];

    // Build the way the database does: unit vectors, parallel insertion, slot = row number.
    let points: Vec<(u32, &[f32])> = base_flat
        .chunks_exact(dim)
        .enumerate()
        .map(|(i, v)| (u32::try_from(i).unwrap_or(u32::MAX), v))
        .collect();
    // The exact vectors, held once (as a database segment holds them) for the graphs that
    // keep only codes.
    let exact_rows = FlatRows { data: &base_flat, dim };
    let mut rows = Vec::new();
    let mut results = Vec::new();
    let mut builds = Vec::new();
    let mut crossover_graph = None;
    for &engine in engines {
        let t = Instant::now();
        let graph = engine.build(params, dim, &points)?;
        let build = t.elapsed();
        let dir = tempfile::tempdir().context("cannot make a temporary directory")?;
        let files = graph.save(dir.path(), "bench")?;
        let bytes: u64 = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
        let memory = graph.memory();
        let shape = graph.connectivity();
        builds.push(json!({"engine": engine.name(), "build_secs": build.as_secs_f64(), "index_bytes": bytes,
            "memory_bytes": memory, "memory_per_vector": memory as f64 / n.max(1) as f64,
            "connectivity": shape.map(|c| json!({"nodes": c.nodes, "reachable": c.reachable,
                "no_in_links": c.no_in_links, "in_degree_p1": c.in_degree_p1,
                "in_degree_median": c.in_degree_median, "in_degree_max": c.in_degree_max, "repaired": c.repaired}))}));
        builds_text(&mut rows, engine, build, bytes, n, memory);
        if let Some(c) = shape {
            rows.push(vec![format!(
                "{} level 0: {} of {} nodes reachable from the entry point, {} without incoming links ({} linked by the repair); incoming links p1 {}, median {}, max {}",
                engine.name(), c.reachable, c.nodes, c.no_in_links, c.repaired, c.in_degree_p1, c.in_degree_median, c.in_degree_max
            )]);
        }
        for &ef in efs {
            // Best of three passes: the machine is shared, and the fastest pass is the one
            // least disturbed by others.
            let (mut lat, mut hits, mut total) = (Vec::new(), 0usize, f64::MAX);
            for _ in 0..3 {
                let mut pass_lat = Vec::with_capacity(nq);
                let mut pass_hits = 0usize;
                let t = Instant::now();
                for (i, truth) in gt_v.iter().enumerate().take(nq) {
                    let s = Instant::now();
                    let found = graph.search(query(i), k, ef, None, &exact_rows);
                    pass_lat.push(s.elapsed());
                    let truth = &truth[..k];
                    pass_hits += found
                        .iter()
                        .filter(|f| truth.contains(&i32::try_from(f.point).unwrap_or(-1)))
                        .count();
                }
                let secs = t.elapsed().as_secs_f64();
                if secs < total {
                    (lat, hits, total) = (pass_lat, pass_hits, secs);
                }
            }
            lat.sort();
            let recall = hits as f64 / (nq * k) as f64;
            let qps = nq as f64 / total;
            let (p50, p99) = (percentile(&lat, 0.5), percentile(&lat, 0.99));
            rows.push(vec![
                engine.name().to_string(),
                ef.to_string(),
                format!("{recall:.4}"),
                format!("{qps:.0}"),
                format!("{:.1}", p50.as_secs_f64() * 1e6),
                format!("{:.1}", p99.as_secs_f64() * 1e6),
            ]);
            results.push(json!({"engine": engine.name(), "ef": ef, "recall": recall, "qps": qps, "p50_us": p50.as_secs_f64() * 1e6, "p99_us": p99.as_secs_f64() * 1e6}));
        }
        if crossover_graph.is_none() {
            crossover_graph = Some(graph);
        }
    }

    let cross = match crossover_graph {
        Some(g) => crossover(g.as_ref(), &base_flat, dim, &query_flat, k, nq.min(200)),
        None => Vec::new(),
    };

    // The exact scan: the oracle and the small-set path (all cores, as the database runs it).
    let exact_q = nq.min(200);
    let t = Instant::now();
    let mut exact_hits = 0;
    for (i, truth) in gt_v.iter().enumerate().take(exact_q) {
        let found = scan_all(&base_flat, dim, query(i), k, &|_| true);
        exact_hits +=
            found.iter().filter(|f| truth[..k].contains(&i32::try_from(f.point).unwrap_or(-1))).count();
    }
    let exact_secs = t.elapsed().as_secs_f64();
    let exact_qps = exact_q as f64 / exact_secs;
    let scanned_gbs = exact_qps * (n * dim * 4) as f64 / 1e9;
    let exact_recall = exact_hits as f64 / (exact_q * k) as f64;
    let (bw1, bwn) = memory_bandwidth();
    let threads = rayon::current_num_threads();

    if out.json {
        out.json_line(&json!({
            "base": n, "dim": dim, "queries": nq, "k": k, "m": params.m, "ef_construction": params.ef_construction,
            "builds": builds, "ef": results,
            "exact": {"qps": exact_qps, "recall": exact_recall, "scan_gb_per_s": scanned_gbs, "threads": threads},
            "memory_gb_per_s": {"one_thread": bw1, "all_threads": bwn},
            "filtered": cross.iter().map(|c| json!({
                "selectivity": c.selectivity, "candidates": c.candidates, "exact_us": c.exact_us,
                "graph_filtered_us": c.filtered_us, "graph_filtered_recall": c.filtered_recall,
                "overfetch_us": c.overfetch_us, "overfetch_recall": c.overfetch_recall,
            })).collect::<Vec<_>>(),
        }))?;
        return Ok(());
    }
    out.line(format!(
        "{n} base vectors of dimension {dim}, {nq} queries, k={k}, M={}, ef_construction={}",
        params.m, params.ef_construction
    ))?;
    let (build_rows, rows): (Vec<Vec<String>>, Vec<Vec<String>>) =
        rows.into_iter().partition(|r| r.len() == 1);
    for r in build_rows {
        out.line(&r[0])?;
    }
    out.line(table(&["engine", "ef", &format!("recall@{k}"), "QPS (1 thread)", "p50 µs", "p99 µs"], &rows))?;
    if !cross.is_empty() {
        let rows: Vec<Vec<String>> = cross
            .iter()
            .map(|c| {
                vec![
                    format!("{:.3}", c.selectivity),
                    c.candidates.to_string(),
                    format!("{:.0}", c.exact_us),
                    format!("{:.0}", c.filtered_us),
                    format!("{:.4}", c.filtered_recall),
                    format!("{:.0}", c.overfetch_us),
                    format!("{:.4}", c.overfetch_recall),
                ]
            })
            .collect();
        out.line(format!("filtered search, k={k}, ef 64 (the planner's crossover; first engine):"))?;
        out.line(table(
            &["selectivity", "candidates", "exact µs", "filtered µs", "recall", "over-fetch µs", "recall"],
            &rows,
        ))?;
    }
    out.line(format!(
        "exact scan: {exact_qps:.0} QPS on {threads} thread(s), recall {exact_recall:.4}, {scanned_gbs:.1} GB/s of vectors scanned; memory read bandwidth {bw1:.1} GB/s (1 thread), {bwn:.1} GB/s (all)"
    ))?;
    Ok(())
}

struct Cross {
    selectivity: f64,
    candidates: usize,
    exact_us: f64,
    filtered_us: f64,
    filtered_recall: f64,
    overfetch_us: f64,
    overfetch_recall: f64,
}

/// Time the exact scan of a candidate subset against the graph with the subset as a filter
/// (inside the search, and by over-fetching then filtering), at several selectivities.
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn crossover(
    g: &dyn VectorIndex,
    base: &[f32],
    dim: usize,
    queries: &[f32],
    k: usize,
    nq: usize,
) -> Vec<Cross> {
    let n = base.len() / dim;
    let rows = FlatRows { data: base, dim };
    let mut out = Vec::new();
    for sel in [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5] {
        // A fixed pseudo-random subset.
        let member: Vec<bool> = (0..n as u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as f64 / (1u64 << 24) as f64 <= sel)
            .collect();
        let cands: Vec<u32> = (0..n).filter(|&i| member[i]).filter_map(|i| u32::try_from(i).ok()).collect();
        if cands.len() < k {
            continue;
        }
        let keep = |p: u32| member.get(p as usize).copied().unwrap_or(false);
        let real_sel = cands.len() as f64 / n as f64;
        let fetch = ((k as f64 / real_sel) * 1.2).ceil() as usize + k;
        let (mut te, mut tf, mut to) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let (mut hf, mut ho) = (0usize, 0usize);
        for i in 0..nq {
            let q = &queries[i * dim..(i + 1) * dim];
            let t = Instant::now();
            let truth: Vec<u32> = scan_points(base, dim, q, k, &cands).iter().map(|s| s.point).collect();
            te += t.elapsed();
            let t = Instant::now();
            let f = g.search(q, k, 64, Some(&keep), &rows);
            tf += t.elapsed();
            hf += f.iter().filter(|s| truth.contains(&s.point)).count();
            let t = Instant::now();
            let o: Vec<u32> = g
                .search(q, fetch, fetch.max(64), None, &rows)
                .into_iter()
                .filter(|s| keep(s.point))
                .take(k)
                .map(|s| s.point)
                .collect();
            to += t.elapsed();
            ho += o.iter().filter(|p| truth.contains(p)).count();
        }
        let us = |d: Duration| d.as_secs_f64() * 1e6 / nq as f64;
        out.push(Cross {
            selectivity: real_sel,
            candidates: cands.len(),
            exact_us: us(te),
            filtered_us: us(tf),
            filtered_recall: hf as f64 / (nq * k) as f64,
            overfetch_us: us(to),
            overfetch_recall: ho as f64 / (nq * k) as f64,
        });
    }
    out
}

#[allow(clippy::cast_precision_loss)]
fn builds_text(
    rows: &mut Vec<Vec<String>>,
    engine: Graph,
    build: Duration,
    bytes: u64,
    n: usize,
    memory: usize,
) {
    rows.push(vec![format!(
        "{} build: {:.1} s ({:.0} vectors/s), index files: {:.1} MiB, in memory: {:.0} bytes per vector",
        engine.name(),
        build.as_secs_f64(),
        n as f64 / build.as_secs_f64(),
        bytes as f64 / (1u64 << 20) as f64,
        memory as f64 / n.max(1) as f64
    )]);
}

#[allow(clippy::too_many_arguments)]
pub fn ann_data(
    out: &mut Out,
    dir: &Path,
    n: usize,
    shape: Shape,
    nq: usize,
    kind: synth::QueryKind,
    gt_k: usize,
    seed: u64,
) -> Result<()> {
    let Shape { dim, clusters, .. } = shape;
    if n == 0 || dim == 0 || nq == 0 || gt_k == 0 || clusters == 0 {
        bail!(usage("--n, --dim, --queries, --clusters and --gt-k must be positive"));
    }
    if !(shape.noise.is_finite() && shape.spread.is_finite() && shape.anisotropy.is_finite()) {
        bail!(usage("--noise, --spread and --anisotropy must be numbers"));
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let base = synth::clustered(n, shape, seed);
    let queries = synth::queries(nq, shape, seed ^ 0xABCD_EF01, kind);
    let base_flat = normalised(base.clone(), "base")?;
    let gt: Vec<Vec<i32>> = queries
        .par_iter()
        .map(|q| {
            let q = mnemon::normalise(q).unwrap_or_default();
            scan_all(&base_flat, dim, &q, gt_k, &|_| true)
                .iter()
                .map(|s| i32::try_from(s.point).unwrap_or(-1))
                .collect()
        })
        .collect();
    for (name, bytes) in [
        ("base.fvecs", encode_fvecs(&base)),
        ("queries.fvecs", encode_fvecs(&queries)),
        ("gt.ivecs", encode_ivecs(&gt)),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, bytes).with_context(|| format!("cannot write {}", p.display()))?;
    }
    let msg = format!(
        "wrote {n} base and {nq} query vectors of dimension {dim} ({clusters} clusters, seed {seed}) and their exact cosine top-{gt_k} to {}",
        dir.display()
    );
    if out.json {
        out.json_line(&json!({"dir": dir, "base": n, "queries": nq, "dim": dim, "gt_k": gt_k}))?;
    } else {
        out.line(msg)?;
    }
    Ok(())
}
