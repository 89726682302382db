#!/usr/bin/env python3
"""Plot recall@k against single-thread QPS for `mnemon-bench ann --json` output and the JSON
lines of benches/ann_baseline.py, as an SVG (standard library only).

    python3 benches/ann_plot.py MNEMON.json BASELINE.txt OUT.svg [SET NAME]
"""
import json
import math
import sys


def load(mnemon_path, baseline_path):
    series = {}
    with open(mnemon_path) as f:
        doc = json.loads(f.readline())
    for r in doc["ef"]:
        name = {"mnemon": "mnemon (codes)", "mnemon-exact-walk": "mnemon, f32 walk (before)"}.get(
            r["engine"], r["engine"] + " (through mnemon)")
        series.setdefault(name, []).append((r["recall"], r["qps"], r["ef"]))
    with open(baseline_path) as f:
        for line in f:
            if line.startswith("{"):
                r = json.loads(line)
                if r["ef"] == 0:
                    continue
                series.setdefault(r["lib"], []).append((r["recall"], r["qps"], r["ef"]))
    return doc, series


def main():
    doc, series = load(sys.argv[1], sys.argv[2])
    out = sys.argv[3]
    title = sys.argv[4] + ": " if len(sys.argv) > 4 else ""
    W, H, L, R, T, B = 720, 440, 70, 200, 40, 50
    pts = [p for s in series.values() for p in s]
    rmin = min(0.85, min(p[0] for p in pts))
    qmin = min(p[1] for p in pts) * 0.8
    qmax = max(p[1] for p in pts) * 1.2
    x = lambda r: L + (r - rmin) / (1.0 - rmin) * (W - L - R)
    y = lambda q: H - B - (math.log10(q) - math.log10(qmin)) / (math.log10(qmax) - math.log10(qmin)) * (H - T - B)
    colours = ["#c0392b", "#8e44ad", "#2980b9", "#27ae60", "#f39c12"]
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L}" y="22" font-size="14">{title}recall@{doc["k"]} vs single-thread QPS: {doc["base"]} vectors, {doc["dim"]}-d, M={doc["m"]}, ef_construction={doc["ef_construction"]}</text>']
    s.append(f'<line x1="{L}" y1="{H-B}" x2="{W-R}" y2="{H-B}" stroke="black"/><line x1="{L}" y1="{T}" x2="{L}" y2="{H-B}" stroke="black"/>')
    r = rmin
    while r <= 1.0001:
        s.append(f'<line x1="{x(r):.1f}" y1="{H-B}" x2="{x(r):.1f}" y2="{H-B+5}" stroke="black"/><text x="{x(r):.1f}" y="{H-B+18}" text-anchor="middle">{r:.2f}</text>')
        r += 0.05
    q = 10 ** math.floor(math.log10(qmin))
    while q <= qmax:
        for m in (1, 2, 5):
            v = q * m
            if qmin <= v <= qmax:
                s.append(f'<line x1="{L-5}" y1="{y(v):.1f}" x2="{W-R}" y2="{y(v):.1f}" stroke="#ddd"/><text x="{L-8}" y="{y(v)+4:.1f}" text-anchor="end">{v:g}</text>')
        q *= 10
    s.append(f'<line x1="{x(0.95):.1f}" y1="{T}" x2="{x(0.95):.1f}" y2="{H-B}" stroke="#999" stroke-dasharray="4,3"/>')
    s.append(f'<text x="{(L+W-R)/2}" y="{H-12}" text-anchor="middle">recall@{doc["k"]} (dashed: 0.95)</text>')
    s.append(f'<text x="16" y="{(T+H-B)/2}" transform="rotate(-90 16 {(T+H-B)/2})" text-anchor="middle">queries per second, one thread (log)</text>')
    for i, (name, ps) in enumerate(series.items()):
        c = colours[i % len(colours)]
        ps = sorted(ps, key=lambda p: p[2])
        s.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (c, " ".join(f"{x(p[0]):.1f},{y(p[1]):.1f}" for p in ps)))
        for p in ps:
            s.append(f'<circle cx="{x(p[0]):.1f}" cy="{y(p[1]):.1f}" r="3" fill="{c}"><title>{name} ef={p[2]}: recall {p[0]:.4f}, {p[1]:.0f} QPS</title></circle>')
        s.append(f'<rect x="{W-R+15}" y="{T+10+i*20}" width="12" height="12" fill="{c}"/><text x="{W-R+32}" y="{T+20+i*20}">{name}</text>')
    s.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(s))


if __name__ == "__main__":
    main()
