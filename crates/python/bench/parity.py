"""mnemon beside Chroma in one run, on what a Chroma user does daily from Python:

* add 10,000 records in batches of 1,000 (mnemon's ``ns.add_many``, Chroma's
  ``collection.add``), both embedding with the same Python function (384-d, words hashed:
  what a user's own embedder costs is the same for both);
* a filtered search: 200 queries, the 10 nearest among one user's records (one user in 20:
  ``where={"user_id": ...}``), both in-process;
* asyncio throughput against a server: 32 tasks (``mnemon.aconnect``) beside 1 task, each
  call a search (mnemon only: Chroma's AsyncHttpClient needs a Chroma server, compared in
  docs/server.md).

Run it in Chroma's environment (scripts/fetch-chroma.sh) with mnemon importable (the wheel, or
PYTHONPATH=crates/python/python after ``maturin develop --release --skip-install``):

    python crates/python/bench/parity.py --bin target/release/mnemon [--records 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import List

import chromadb

import mnemon

DIM = 384
#: mnemon's search mode: "exact" ranks every record by its vector, and min_score=0 keeps the
#: nearest however far, as Chroma's query does (by default mnemon returns only what is close).
MODE = os.environ.get("PARITY_MODE", "exact")
TOPICS = ["retries", "cache", "timeout", "backoff", "redb", "latency", "index", "commit", "queue", "disk"]


def embed(texts: List[str]) -> List[List[float]]:
    out = []
    for t in texts:
        v = [0.0] * DIM
        for w in t.lower().split():
            h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
            v[h % DIM] += 1.0 if (h >> 32) & 1 else -1.0
        n = sum(x * x for x in v) ** 0.5 or 1.0
        out.append([x / n for x in v])
    return out


def texts(n: int) -> List[str]:
    return [f"note {i} about {TOPICS[i % 10]} and {TOPICS[(i * 7) % 10]} for user u{i % 20}" for i in range(n)]


def adds(d: Path, n: int) -> dict:
    docs = texts(n)
    t = time.perf_counter()
    db = mnemon.open(d / "m.redb", embedder=embed, embedder_name="bench-words")
    ns = db.ns("bench")
    for s in range(0, n, 1000):
        ns.add_many([{"kind": "learning", "text": x, "metadata": {"user_id": f"u{(s + i) % 20}"}} for i, x in enumerate(docs[s : s + 1000])])
    m = time.perf_counter() - t
    client = chromadb.PersistentClient(path=str(d / "chroma"))
    col = client.create_collection("bench", embedding_function=None)
    t = time.perf_counter()
    for s in range(0, n, 1000):
        chunk = docs[s : s + 1000]
        col.add(ids=[str(s + i) for i in range(len(chunk))], documents=chunk, embeddings=embed(chunk),
                metadatas=[{"user_id": f"u{(s + i) % 20}"} for i in range(len(chunk))])
    c = time.perf_counter() - t
    return {"db": db, "ns": ns, "col": col, "mnemon_add_s": m, "chroma_add_s": c}


def searches(env: dict, queries: int) -> dict:
    qs = [f"{TOPICS[i % 10]} {TOPICS[(i * 3) % 10]}" for i in range(queries)]
    m_lat, c_lat, full = [], [], 0
    for i, q in enumerate(qs):
        user = f"u{i % 20}"
        t = time.perf_counter()
        hits = env["ns"].search(q, mode=MODE, limit=10, min_score=0.0, where={"user_id": user})
        m_lat.append(time.perf_counter() - t)
        full += len(hits) == 10
        t = time.perf_counter()
        env["col"].query(query_embeddings=embed([q]), n_results=10, where={"user_id": user})
        c_lat.append(time.perf_counter() - t)
    pct = lambda s, p: sorted(s)[int(len(s) * p) - 1] * 1e3  # noqa: E731
    return {"mnemon_p50_ms": statistics.median(m_lat) * 1e3, "mnemon_p99_ms": pct(m_lat, 0.99),
            "chroma_p50_ms": statistics.median(c_lat) * 1e3, "chroma_p99_ms": pct(c_lat, 0.99),
            "mnemon_full_answers": full, "queries": queries}


def async_throughput(binary: str, d: Path, calls: int) -> dict:
    db = d / "served.redb"
    run = lambda *a: subprocess.run([binary, "--db", str(db), *a], capture_output=True, text=True, check=True).stdout  # noqa: E731
    run("--embedder", "hash", "init")
    token = json.loads(run("--json", "token", "create", "--name", "b", "--allow-ns", "*", "--scope", "write"))["token"]
    log = d / "serve.log"
    proc = subprocess.Popen([binary, "--db", str(db), "serve", "--listen", "127.0.0.1:0"], stderr=log.open("wb"),
                            stdout=subprocess.DEVNULL)
    try:
        for _ in range(500):
            first = log.read_text().split("\n", 1)
            if len(first) == 2 and "://" in first[0]:
                break
            time.sleep(0.02)
        url = "http://" + first[0].split("://", 1)[1].split()[0]

        async def main(tasks: int) -> float:
            adb = await mnemon.aconnect(url, token=token)
            ns = adb.ns("bench")
            await ns.add_many([f"note {i} about {TOPICS[i % 10]}" for i in range(2000)], kind="learning")

            async def worker(k: int) -> None:
                for i in range(calls // tasks):
                    await ns.search(TOPICS[(k + i) % 10], limit=10)

            t = time.perf_counter()
            await asyncio.gather(*(worker(k) for k in range(tasks)))
            return calls / (time.perf_counter() - t)

        one = asyncio.run(main(1))
        many = asyncio.run(main(32))
        return {"calls_per_s_1_task": one, "calls_per_s_32_tasks": many}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=10_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--calls", type=int, default=2_000)
    p.add_argument("--bin", default=os.environ.get("MNEMON_BIN", "mnemon"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        env = adds(Path(d), args.records)
        out = {"records": args.records, "mnemon_add_s": env["mnemon_add_s"], "chroma_add_s": env["chroma_add_s"]}
        out.update(searches(env, args.queries))
        env["db"].close()
        out.update(async_throughput(args.bin, Path(d), args.calls))
    out["add_ratio_chroma_over_mnemon"] = out["chroma_add_s"] / out["mnemon_add_s"]
    out["search_ratio_chroma_over_mnemon_p50"] = out["chroma_p50_ms"] / out["mnemon_p50_ms"]
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}, indent=1))


if __name__ == "__main__":
    main()
