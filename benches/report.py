#!/usr/bin/env python3
"""Turn a criterion run of `cargo bench -p mnemon-bench --bench storage` into
docs/benchmarks.svg (a plot) and a markdown table of medians and ratios on stdout.

Standard library only. Usage: python3 benches/report.py [target/criterion] [docs/benchmarks.svg]
"""
import json
import math
import os
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "target/criterion"
SVG = sys.argv[2] if len(sys.argv) > 2 else "docs/benchmarks.svg"

# (label, criterion path of mnemon, criterion path of sqlite, elements per iteration)
ROWS = [
    ("valid at now, 100k revisions", "valid_at_100k/mnemon/now", "valid_at_100k/sqlite/now", None),
    ("valid at now, 1M revisions", "valid_at_1000k/mnemon/now", "valid_at_1000k/sqlite/now", None),
    ("valid 100 minutes ago, 100k revisions", "valid_at_100k/mnemon/recent", "valid_at_100k/sqlite/recent", None),
    ("valid 100 minutes ago, 1M revisions", "valid_at_1000k/mnemon/recent", "valid_at_1000k/sqlite/recent", None),
    ("valid in the past, 100k revisions", "valid_at_100k/mnemon/past", "valid_at_100k/sqlite/past", None),
    ("valid in the past, 1M revisions", "valid_at_1000k/mnemon/past", "valid_at_1000k/sqlite/past", None),
    ("get latest revision, 1M revisions", "get_1000k/mnemon", "get_1000k/sqlite", None),
    ("durable single insert", "insert_durable_single/mnemon", "insert_durable_single/sqlite", 1),
    ("batched insert (1,000 per commit)", "insert_batched_1000/mnemon", "insert_batched_1000/sqlite", 1000),
    ("durable single insert, SQLite with FTS5", "insert_durable_single/mnemon", "insert_durable_single/sqlite_fts5", 1),
    ("batched insert, SQLite with FTS5", "insert_batched_1000/mnemon", "insert_batched_1000/sqlite_fts5", 1000),
    ("durable writes, 1 thread", "group_commit_durable/mnemon/1", "group_commit_durable/sqlite/1", 200),
    ("durable writes, 4 threads", "group_commit_durable/mnemon/4", "group_commit_durable/sqlite/4", 800),
    ("durable writes, 16 threads", "group_commit_durable/mnemon/16", "group_commit_durable/sqlite/16", 3200),
    ("durable writes, 64 threads", "group_commit_durable/mnemon/64", "group_commit_durable/sqlite/64", 6400),
]


def median_ns(path):
    f = os.path.join(ROOT, path, "new", "estimates.json")
    try:
        with open(f) as fh:
            return json.load(fh)["median"]["point_estimate"]
    except (OSError, KeyError, ValueError):
        return None


def fmt_time(ns):
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns:.0f} ns"


def main():
    rows = []
    for label, m, s, per in ROWS:
        a, b = median_ns(m), median_ns(s)
        if a is None or b is None:
            continue
        rows.append((label, a, b, per))
    if not rows:
        sys.exit(f"no criterion results under {ROOT}")
    print("| benchmark | mnemon | SQLite | mnemon faster by |")
    print("|---|---|---|---|")
    for label, a, b, per in rows:
        if per:
            ra, rb = per / (a / 1e9), per / (b / 1e9)
            print(f"| {label} | {ra:,.0f}/s | {rb:,.0f}/s | {ra / rb:.2f}x |")
        else:
            print(f"| {label} | {fmt_time(a)} | {fmt_time(b)} | {b / a:.2f}x |")
    write_svg(rows)


def write_svg(rows):
    # Horizontal bars of "mnemon faster by" (log scale), one per benchmark.
    w, bar_h, gap, left, top = 900, 22, 10, 300, 40
    h = top + len(rows) * (bar_h + gap) + 40
    lo, hi = 0.1, 100.0
    span = math.log10(hi) - math.log10(lo)
    x = lambda r: left + (math.log10(max(lo, min(hi, r))) - math.log10(lo)) / span * (w - left - 60)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="14">mnemon vs SQLite: how many times faster (log scale; right of 1x = mnemon faster)</text>']
    for t in [0.1, 0.3, 1, 3, 10, 30, 100]:
        out.append(f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" y2="{h - 30}" stroke="#ddd"/>')
        out.append(f'<text x="{x(t):.1f}" y="{h - 14}" text-anchor="middle">{t:g}x</text>')
    out.append(f'<line x1="{x(1):.1f}" y1="{top - 6}" x2="{x(1):.1f}" y2="{h - 30}" stroke="#333"/>')
    out.append(f'<line x1="{x(10):.1f}" y1="{top - 6}" x2="{x(10):.1f}" y2="{h - 30}" stroke="#c33" stroke-dasharray="4 3"/>')
    for i, (label, a, b, per) in enumerate(rows):
        ratio = (b / a)
        y = top + i * (bar_h + gap)
        x0, x1 = x(1), x(ratio)
        color = "#2a7" if ratio >= 1 else "#d84"
        out.append(f'<text x="{left - 8}" y="{y + bar_h * 0.7:.1f}" text-anchor="end">{label}</text>')
        out.append(f'<rect x="{min(x0, x1):.1f}" y="{y}" width="{abs(x1 - x0):.1f}" height="{bar_h}" fill="{color}"/>')
        out.append(f'<text x="{max(x0, x1) + 4:.1f}" y="{y + bar_h * 0.7:.1f}">{ratio:.2f}x</text>')
    out.append("</svg>")
    os.makedirs(os.path.dirname(SVG) or ".", exist_ok=True)
    with open(SVG, "w") as fh:
        fh.write("\n".join(out))


if __name__ == "__main__":
    main()
