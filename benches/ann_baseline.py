#!/usr/bin/env python3
"""Side-by-side baseline for `mnemon-bench ann`: hnswlib and faiss HNSW on the same TEXMEX
files, with the same M, ef_construction, k and ef values, single-threaded queries.

    pip install hnswlib==0.8.0 faiss-cpu==1.15.1 numpy   # once (benches/requirements.txt)
    python3 benches/ann_baseline.py --base B.fvecs --queries Q.fvecs --gt GT.ivecs

Vectors are normalised and compared by inner product (cosine), as mnemon does. Prints one
JSON line per library and ef, and a table.
"""
import argparse, json, os, time

import numpy as np


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    dim = raw[0]
    rows = raw.reshape(-1, dim + 1)
    return rows[:, 1:].copy().view(dtype)


def normalise(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def timed_queries(search_one, queries, gt, k):
    """Best of three passes (the machine is shared), as `mnemon-bench ann` does."""
    runs = [one_pass(search_one, queries, gt, k) for _ in range(3)]
    return max(runs, key=lambda r: r["qps"])


def one_pass(search_one, queries, gt, k):
    lat = []
    hits = 0
    t0 = time.perf_counter()
    for i, q in enumerate(queries):
        s = time.perf_counter()
        ids = search_one(q)
        lat.append(time.perf_counter() - s)
        hits += len(set(int(x) for x in ids[:k]) & set(int(x) for x in gt[i, :k]))
    total = time.perf_counter() - t0
    lat.sort()
    return {
        "recall": hits / (len(queries) * k),
        "qps": len(queries) / total,
        "p50_us": lat[len(lat) // 2] * 1e6,
        "p99_us": lat[min(len(lat) - 1, int(round((len(lat) - 1) * 0.99)))] * 1e6,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--gt", required=True)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--ef", default="16,32,64,128,256")
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--limit", type=int)
    a = ap.parse_args()
    base = normalise(read_vecs(a.base, np.float32))
    queries = normalise(read_vecs(a.queries, np.float32))
    gt = read_vecs(a.gt, np.int32)
    if a.limit:
        queries, gt = queries[: a.limit], gt[: a.limit]
    efs = [int(x) for x in a.ef.split(",")]
    n, dim = base.shape
    rows = []

    import hnswlib

    idx = hnswlib.Index(space="ip", dim=dim)
    idx.init_index(max_elements=n, ef_construction=a.ef_construction, M=a.m)
    t = time.perf_counter()
    idx.add_items(base, np.arange(n), num_threads=os.cpu_count())
    build = time.perf_counter() - t
    idx.set_num_threads(1)
    # Bytes per vector in memory: hnswlib saves its memory blocks as they are.
    mem = idx.index_file_size() / n if hasattr(idx, "index_file_size") else 0
    for ef in efs:
        idx.set_ef(max(ef, a.k))
        r = timed_queries(lambda q: idx.knn_query(q.reshape(1, -1), k=a.k)[0][0], queries, gt, a.k)
        rows.append({"lib": "hnswlib " + hnswlib.__version__ if hasattr(hnswlib, "__version__") else "hnswlib", "ef": ef, "build_secs": build, "bytes_per_vector": mem, **r})

    import faiss

    f = faiss.IndexHNSWFlat(dim, a.m, faiss.METRIC_INNER_PRODUCT)
    f.hnsw.efConstruction = a.ef_construction
    faiss.omp_set_num_threads(os.cpu_count())
    t = time.perf_counter()
    f.add(base)
    build = time.perf_counter() - t
    faiss.omp_set_num_threads(1)
    mem = faiss.serialize_index(f).nbytes / n
    for ef in efs:
        f.hnsw.efSearch = max(ef, a.k)
        r = timed_queries(lambda q: f.search(q.reshape(1, -1), a.k)[1][0], queries, gt, a.k)
        rows.append({"lib": "faiss " + faiss.__version__, "ef": ef, "build_secs": build, "bytes_per_vector": mem, **r})

    # What one call through the Python bindings costs on its own: a one-vector index, k=1.
    tiny = hnswlib.Index(space="ip", dim=dim)
    tiny.init_index(max_elements=1, ef_construction=10, M=4)
    tiny.add_items(base[:1], np.arange(1))
    tiny.set_num_threads(1)
    q = queries[0].reshape(1, -1)
    t = time.perf_counter()
    for _ in range(20000):
        tiny.knn_query(q, k=1)
    overhead = (time.perf_counter() - t) / 20000 * 1e6
    rows.append({"lib": "call overhead hnswlib", "ef": 0, "build_secs": 0, "recall": 0, "qps": 1e6 / overhead, "p50_us": overhead, "p99_us": overhead})
    tf = faiss.IndexHNSWFlat(dim, 4, faiss.METRIC_INNER_PRODUCT)
    tf.add(base[:1])
    t = time.perf_counter()
    for _ in range(20000):
        tf.search(q, 1)
    overhead = (time.perf_counter() - t) / 20000 * 1e6
    rows.append({"lib": "call overhead faiss", "ef": 0, "build_secs": 0, "recall": 0, "qps": 1e6 / overhead, "p50_us": overhead, "p99_us": overhead})

    for r in rows:
        print(json.dumps(r))
    print(f"{'library':<16} {'ef':>4} {'recall':>7} {'QPS':>7} {'p50 us':>8} {'p99 us':>8} {'build s':>8}")
    for r in rows:
        print(f"{r['lib']:<16} {r['ef']:>4} {r['recall']:>7.4f} {r['qps']:>7.0f} {r['p50_us']:>8.1f} {r['p99_us']:>8.1f} {r['build_secs']:>8.1f}")


if __name__ == "__main__":
    main()
