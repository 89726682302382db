"""LangGraph checkpointers side by side in one run: mnemon's MnemonSaver and LangGraph's own
SqliteSaver (langgraph-checkpoint-sqlite, requirements.txt here), each on a fresh file, the
same 1,000 steps of one thread: put a checkpoint (durable), put the step's writes, read the
latest back (get_tuple). Prints the median and p99 of each call per saver and their ratio,
over --rounds rounds alternating the savers.

    python crates/python/bench/checkpoint.py [--steps 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

import mnemon
from mnemon.langgraph import MnemonSaver


def run(saver, steps: int) -> dict:
    times = {"put": [], "put_writes": [], "get_tuple": []}
    config = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    for step in range(steps):
        checkpoint = create_checkpoint(checkpoint, {"messages": [f"message {i}" for i in range(step % 20)]}, step)
        checkpoint["channel_values"] = {"messages": [f"message {i}" for i in range(step % 20)], "step": step}
        t = time.perf_counter()
        config = saver.put(config, checkpoint, {"source": "loop", "step": step}, {})
        times["put"].append(time.perf_counter() - t)
        t = time.perf_counter()
        saver.put_writes(config, [("messages", f"reply {step}"), ("step", step)], task_id=f"task-{step}")
        times["put_writes"].append(time.perf_counter() - t)
        t = time.perf_counter()
        got = saver.get_tuple({"configurable": {"thread_id": "bench"}})
        times["get_tuple"].append(time.perf_counter() - t)
        assert got is not None and got.checkpoint["id"] == checkpoint["id"]
    return times


def summary(samples: list) -> tuple:
    s = sorted(samples)
    return statistics.median(s) * 1e3, s[int(len(s) * 0.99) - 1] * 1e3


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    results: dict = {"mnemon": {}, "sqlite": {}}
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as d:
            db = mnemon.open(Path(d) / "m.redb", embedder="hash")
            for k, v in run(MnemonSaver(db), args.steps).items():
                results["mnemon"].setdefault(k, []).extend(v)
            db.close()
            conn = sqlite3.connect(str(Path(d) / "s.sqlite"), check_same_thread=False)
            for k, v in run(SqliteSaver(conn), args.steps).items():
                results["sqlite"].setdefault(k, []).extend(v)
            conn.close()
    print(f"{args.steps} steps x {args.rounds} rounds (ms: median / p99)")
    print(f"{'call':<12}{'mnemon':>18}{'SqliteSaver':>18}{'ratio (median)':>18}")
    for call in ("put", "put_writes", "get_tuple"):
        m, s = summary(results["mnemon"][call]), summary(results["sqlite"][call])
        print(f"{call:<12}{m[0]:>9.3f} / {m[1]:<7.3f}{s[0]:>9.3f} / {s[1]:<7.3f}{m[0] / s[0]:>14.2f}x")


if __name__ == "__main__":
    main()
