"""The web view's speed in headless chromium (Playwright, scripts/fetch-browser.sh) on a
namespace of N records: the namespace page's load (from the navigation's start to the end of
its load event: a bound on its first paint, which headless chromium here does not report), and
from moving the time slider to the past page's load.

    ~/.cache/mnemon/browser/bin/python benches/ui/timing.py target/release/mnemon [N] [ROUNDS]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from playwright.sync_api import sync_playwright

MNEMON = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 10
NS = "project:big"
KINDS = ["learning", "decision", "task", "gotcha", "pattern", "entity", "episode", "error_fix"]


def main():
    work = tempfile.mkdtemp()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMON_")}
    env["MNEMON_DB"] = os.path.join(work, "m.redb")
    subprocess.run([MNEMON, "--embedder", "hash", "init"], env=env, check=True, capture_output=True)
    lines = os.path.join(work, "records.jsonl")
    with open(lines, "w") as f:
        for i in range(N):
            kind = KINDS[i % len(KINDS)]
            year = 2020 + i * 6 // N
            f.write(json.dumps({"kind": kind, "text": f"{kind} number {i}: bounded queues, retries and backoff {i % 97}",
                                "valid_from": f"{year}-{1 + i % 12:02d}-01", "tags": [f"t{i % 13}"]}) + "\n")
    subprocess.run([MNEMON, "--ns", NS, "import", lines], env=env, check=True, capture_output=True)
    ui = subprocess.Popen([MNEMON, "ui"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    login = ui.stdout.readline().strip()
    base = login.split("/ui/")[0]
    # First contentful paint when the browser reports one (headless chromium may not), else
    # the end of the load event: either way from the navigation's start.
    paint = ("(performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint') || {}).startTime"
             " || (performance.getEntriesByType('navigation')[0] || {}).loadEventEnd || null")
    firsts, moves = [], []
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"])
            page = b.new_page(viewport={"width": 1280, "height": 900})
            page.goto(login)
            for _ in range(ROUNDS):
                page.goto(f"{base}/ui/ns/{NS}")
                firsts.append(page.evaluate(paint))
                # Move the slider to a random past valid time: from the event to the new page's paint.
                t0 = time.perf_counter()
                with page.expect_navigation():
                    page.eval_on_selector("#slider", "s => { s.value = String(Number(s.min) + Math.random() * (Number(s.max) - Number(s.min)) * 0.9); s.dispatchEvent(new Event('change')); }")
                while page.evaluate(paint) is None:
                    time.sleep(0.002)
                moves.append((time.perf_counter() - t0) * 1000)
            b.close()
    finally:
        ui.terminate()
        ui.wait()
    print(json.dumps({
        "records": N,
        "page_load_ms": {"median": statistics.median(firsts), "max": max(firsts), "all": [round(x) for x in firsts]},
        "slider_to_load_ms": {"median": statistics.median(moves), "max": max(moves), "all": [round(x) for x in moves]},
    }))


if __name__ == "__main__":
    main()
