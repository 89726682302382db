"""Per-call overhead of the Python package against the Rust API, side by side in one run.

Builds a file of N learnings (valid from 2024-01-01), then, alternating, times the same calls
in-process from Rust (`mnemon-bench calls`, the operation layer's `Session::call`) and from
Python (`mnemon.open`, the same operations through the extension): add, get as of a time,
list as of a time (10 records), search (10 hits). Both open the file with eventual durability
(an fsync per add would hide what a call costs). Prints medians per call and the ratio.

    python crates/python/bench/overhead.py --bench target/release/mnemon-bench [--records 10000] [--calls 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mnemon

WORDS = ["retries", "cache", "timeout", "backoff", "redb", "latency", "index", "commit"]
TOPICS = ["retries", "cache", "timeout", "backoff", "redb", "latency", "index", "commit", "queue", "disk"]


def build(path: Path, n: int) -> list:
    with mnemon.open(path, embedder="hash", durability="eventual") as db:
        ns = db.ns("bench")
        ids = []
        for start in range(0, n, 1000):
            writes = [
                {
                    "op": "add",
                    "kind": "learning",
                    "record": {
                        "text": f"fact {i} about {TOPICS[i % 10]} and {TOPICS[(i * 7) % 10]}",
                        "valid_from": "2024-01-01",
                    },
                }
                for i in range(start, min(n, start + 1000))
            ]
            ids += [r["id"] for r in ns.call("batch", writes=writes)["results"]]
        db.sync()
    return ids


def python_calls(path: Path, ids: list, n: int) -> dict:
    out = {}
    with mnemon.open(path, durability="eventual") as db:
        ns = db.ns("bench")
        writes = db.ns("bench-writes")  # as mnemon-bench calls: reads see the same records
        for call in ("add", "get_as_of", "list_as_of", "search"):
            times = []
            for i in range(n):
                t = time.perf_counter()
                if call == "add":
                    writes.add("learning", f"a new fact number {i} about retries", valid_from="2024-01-01")
                elif call == "get_as_of":
                    ns.get(ids[i % len(ids)], as_of="2025-01-01")
                elif call == "list_as_of":
                    list(ns.list("learning", as_of="2025-01-01", limit=10))
                else:
                    ns.search(WORDS[i % len(WORDS)], limit=10)
                times.append((time.perf_counter() - t) * 1e6)
            times.sort()
            out[call] = times[len(times) // 2]
    return out


def rust_calls(bench: str, path: Path, ids_file: Path, n: int) -> dict:
    done = subprocess.run(
        [bench, "--json", "calls", "--db", str(path), "--ns", "bench", "--ids", str(ids_file), "--n", str(n)],
        capture_output=True,
        text=True,
        check=True,
    )
    return {k: v["median_us"] for k, v in json.loads(done.stdout).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", required=True, help="the mnemon-bench binary (release)")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.redb"
        ids = build(path, args.records)
        ids_file = Path(tmp) / "ids.txt"
        ids_file.write_text("\n".join(ids))
        rust, py = [], []
        for _ in range(args.rounds):
            rust.append(rust_calls(args.bench, path, ids_file, args.calls))
            py.append(python_calls(path, ids, args.calls))
    rows = {}
    for call in ("add", "get_as_of", "list_as_of", "search"):
        r = statistics.median(x[call] for x in rust)
        p = statistics.median(x[call] for x in py)
        rows[call] = {
            "rust_us": round(r, 2),
            "python_us": round(p, 2),
            "ratio": round(p / r, 2),
            "extra_us": round(p - r, 2),
            "rust_rounds": [round(x[call], 2) for x in rust],
            "python_rounds": [round(x[call], 2) for x in py],
        }
    if args.json:
        print(json.dumps({"records": args.records, "calls": args.calls, "rounds": args.rounds, "results": rows}))
        return
    print(f"{args.records} records, {args.calls} calls each, median of {args.rounds} alternated rounds")
    print("| call | Rust µs | Python µs | ratio | extra µs | rounds (Rust; Python) |")
    print("|---|---|---|---|---|---|")
    for call, v in rows.items():
        print(
            f"| {call} | {v['rust_us']} | {v['python_us']} | {v['ratio']}x | {v['extra_us']} | "
            f"{v['rust_rounds']}; {v['python_rounds']} |"
        )


if __name__ == "__main__":
    sys.exit(main())
