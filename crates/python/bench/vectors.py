"""Add and query the same vectors from Python: mnemon in-process, Chroma's in-process
PersistentClient, and the design documents' approach (embeddings as JSON text in SQLite,
Python's sqlite3, cosine similarity over every row), side by side in one run.

Each system gets the same clustered unit vectors (384 dimensions, as all-MiniLM-L6-v2's), added
in batches of 1,000 with a short text each, then the same held-out queries (10 nearest). It
reports add throughput (mnemon's includes building its graph index), query latency p50/p99,
recall@10 against the exact answer, and the size on disk. Run it in an environment with both
`mnemon` and `chromadb` (scripts/fetch-chroma.sh's, with the mnemon wheel installed):

    python crates/python/bench/vectors.py [--sizes 10000,100000] [--queries 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np

import mnemon

DIM = 384
BATCH = 1000


def data(n: int, queries: int, seed: int = 7):
    """`n` base vectors and `queries` held-out ones: points around 100 centres, normalised."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(100, DIM)).astype(np.float32)

    def draw(m: int) -> np.ndarray:
        picks = rng.integers(0, len(centres), size=m)
        x = centres[picks] + 0.6 * rng.normal(size=(m, DIM)).astype(np.float32)
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    return draw(n), draw(queries)


def truth(base: np.ndarray, queries: np.ndarray, k: int = 10) -> List[set]:
    scores = queries @ base.T
    return [set(np.argpartition(-row, k)[:k].tolist()) for row in scores]


def disk(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def timed_queries(run: Callable[[np.ndarray], List[int]], queries: np.ndarray, gt: List[set]) -> Dict[str, float]:
    times, found = [], 0
    for q, want in zip(queries, gt):
        t = time.perf_counter()
        got = run(q)
        times.append((time.perf_counter() - t) * 1e3)
        found += len(set(got[:10]) & want)
    times.sort()
    return {
        "query_p50_ms": times[len(times) // 2],
        "query_p99_ms": times[min(len(times) - 1, int(len(times) * 0.99))],
        "recall_at_10": found / (10 * len(gt)),
    }


def bench_mnemon(dir: Path, base: np.ndarray, queries: np.ndarray, gt: List[set]) -> Dict[str, float]:
    path = dir / "mnemon.redb"
    db = mnemon.open(path, embedder="hash", durability="eventual")
    ns = db.ns("bench")
    index_of: Dict[str, int] = {}
    t = time.perf_counter()
    for start in range(0, len(base), BATCH):
        stop = min(len(base), start + BATCH)
        writes = [{"op": "add", "kind": "learning", "record": {"text": f"document {i}"}} for i in range(start, stop)]
        ids = [r["id"] for r in ns.call("batch", writes=writes)["results"]]
        for i, rid in zip(range(start, stop), ids):
            ns.vectors.put(rid, "bench", base[i].tolist())
            index_of[rid] = i
    db.sync()
    if len(base) >= 5000:
        ns.call("index_build", space="bench")
    added = time.perf_counter() - t

    def run(q: np.ndarray) -> List[int]:
        hits = ns.vectors.search("bench", q.tolist(), k=10)["hits"]
        return [index_of[(h.record if isinstance(h, mnemon.Hit) else h["record"]).id] for h in hits]

    out = {"add_per_s": len(base) / added, **timed_queries(run, queries, gt)}
    db.close()
    index = Path(str(path) + ".index")
    out["disk_mb"] = (disk(path) + (disk(index) if index.exists() else 0)) / 1e6
    return out


def bench_chroma(dir: Path, base: np.ndarray, queries: np.ndarray, gt: List[set]) -> Dict[str, float]:
    import chromadb

    client = chromadb.PersistentClient(path=str(dir / "chroma"))
    col = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
    t = time.perf_counter()
    for start in range(0, len(base), BATCH):
        stop = min(len(base), start + BATCH)
        col.add(
            ids=[str(i) for i in range(start, stop)],
            embeddings=base[start:stop],
            documents=[f"document {i}" for i in range(start, stop)],
        )
    added = time.perf_counter() - t

    def run(q: np.ndarray) -> List[int]:
        return [int(i) for i in col.query(query_embeddings=[q], n_results=10)["ids"][0]]

    out = {"add_per_s": len(base) / added, **timed_queries(run, queries, gt)}
    out["disk_mb"] = disk(dir / "chroma") / 1e6
    return out


def bench_sqlite(dir: Path, base: np.ndarray, queries: np.ndarray, gt: List[set], max_queries: int) -> Dict[str, float]:
    path = dir / "episodes.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE episodes (id TEXT PRIMARY KEY, content TEXT NOT NULL, embedding TEXT)")
    t = time.perf_counter()
    for start in range(0, len(base), BATCH):
        stop = min(len(base), start + BATCH)
        rows = [(str(i), f"document {i}", json.dumps(base[i].tolist())) for i in range(start, stop)]
        con.executemany("INSERT INTO episodes VALUES (?, ?, ?)", rows)
        con.commit()
    added = time.perf_counter() - t

    def run(q: np.ndarray) -> List[int]:
        # The design's query: every row's embedding parsed from JSON, cosine similarity (here
        # with numpy, kinder than a loop), the best 10.
        ids, scored = [], []
        for rid, emb in con.execute("SELECT id, embedding FROM episodes WHERE embedding IS NOT NULL"):
            v = np.asarray(json.loads(emb), dtype=np.float32)
            ids.append(int(rid))
            scored.append(float(v @ q) / (float(np.linalg.norm(v)) * float(np.linalg.norm(q))))
        order = np.argsort(-np.asarray(scored))[:10]
        return [ids[i] for i in order]

    n = min(max_queries, len(queries))
    out = {"add_per_s": len(base) / added, **timed_queries(run, queries[:n], gt[:n]), "queries": n}
    con.close()
    out["disk_mb"] = disk(path) / 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sqlite-queries", type=int, default=20, help="SQLite scans every row per query")
    parser.add_argument("--systems", default="mnemon,chroma,sqlite")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    systems = args.systems.split(",")
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        base, queries = data(n, args.queries)
        gt = truth(base, queries)
        for system in systems:
            with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
                print(f"{system} at {n}...", file=sys.stderr, flush=True)
                if system == "mnemon":
                    r = bench_mnemon(Path(tmp), base, queries, gt)
                elif system == "chroma":
                    r = bench_chroma(Path(tmp), base, queries, gt)
                else:
                    r = bench_sqlite(Path(tmp), base, queries, gt, args.sqlite_queries)
            results.append({"system": system, "vectors": n, **{k: round(v, 3) for k, v in r.items()}})
    if args.json:
        print(json.dumps(results))
        return
    print("| vectors | system | adds/s | query p50 ms | query p99 ms | recall@10 | disk MB |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['vectors']:,} | {r['system']} | {r['add_per_s']:,.0f} | {r['query_p50_ms']:.2f} | "
            f"{r['query_p99_ms']:.2f} | {r['recall_at_10']:.3f} | {r['disk_mb']:.1f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
