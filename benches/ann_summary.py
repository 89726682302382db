#!/usr/bin/env python3
"""Summarise benches/ann_all.sh: per data set and library, the best single-thread QPS at
recall@10 >= 0.95 and >= 0.99 over the ef grid, the ratio of mnemon's to the better of hnswlib
and faiss, the recall each reaches at a few ef values, and bytes per vector in memory.

    python3 benches/ann_summary.py DIR SET [SET ...]
"""
import json
import sys


def best_at(points, bar):
    ok = [q for r, q, _ in points if r >= bar]
    return max(ok) if ok else None


def main():
    d, sets = sys.argv[1], sys.argv[2:]
    print("| set | library | QPS @0.95 | QPS @0.99 | recall ef 16 / 32 / 64 | bytes/vector |")
    print("|---|---|---:|---:|---|---:|")
    ratios = []
    for s in sets:
        with open(f"{d}/{s}/mnemon.json") as f:
            doc = json.loads(f.readline())
        libs = {}
        mem = {}
        for b in doc["builds"]:
            mem[b["engine"]] = b.get("memory_per_vector", 0)
        for r in doc["ef"]:
            libs.setdefault(r["engine"], []).append((r["recall"], r["qps"], r["ef"]))
        with open(f"{d}/{s}/baseline.txt") as f:
            for line in f:
                if line.startswith("{"):
                    r = json.loads(line)
                    if r["ef"]:
                        libs.setdefault(r["lib"], []).append((r["recall"], r["qps"], r["ef"]))
                        mem[r["lib"]] = r.get("bytes_per_vector", 0)
        others = [n for n in libs if n.startswith("hnswlib") or n.startswith("faiss")]
        for name, pts in libs.items():
            at = {e: r for r, _, e in pts}
            recalls = " / ".join(f"{at[e]:.3f}" if e in at else "-" for e in (16, 32, 64))
            q95, q99 = best_at(pts, 0.95), best_at(pts, 0.99)
            fmt = lambda q: f"{q:,.0f}" if q else "not reached"
            extra = ""
            if name == "mnemon":
                # Mnemon holds the exact vectors once more, outside the graph (the segment).
                extra = f" (+{doc['dim'] * 4} exact)"
            print(f"| {s} | {name} | {fmt(q95)} | {fmt(q99)} | {recalls} | {mem.get(name, 0):,.0f}{extra} |")
        for bar in (0.95, 0.99):
            mine = best_at(libs.get("mnemon", []), bar)
            theirs = max([q for q in (best_at(libs[o], bar) for o in others) if q] or [0])
            if mine and theirs:
                ratios.append((s, bar, mine / theirs))
    print()
    for s, bar, r in ratios:
        print(f"{s}: mnemon / best of hnswlib and faiss at recall@10 >= {bar}: {r:.2f}x")


if __name__ == "__main__":
    main()
