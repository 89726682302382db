"""The asyncio API on both transports: concurrent tasks, async iteration, the event loop never
blocked."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import mnemon
from conftest import Server


async def _exercise(db: mnemon.AsyncDb) -> None:
    ns = db.ns("project:async")
    # 32 tasks at once, each adding and searching.
    async def worker(i: int) -> str:
        rid = await ns.add("learning", f"async note {i} about topic{i % 4}")
        hits = await ns.search(f"topic{i % 4}", limit=50)
        assert hits
        return rid

    ids = await asyncio.gather(*(worker(i) for i in range(32)))
    assert len(set(ids)) == 32
    got = await ns.get_many(ids)
    assert all(r is not None for r in got)
    more = await ns.add_many([f"bulk {i}" for i in range(600)], kind="learning")
    assert len(more) == 600
    seen = [r async for r in ns.list("learning", page_size=100)]
    assert len(seen) == 632
    first = await ns.get(ids[0])
    assert first.text.startswith("async note")
    # Groups are coroutines too.
    task = await ns.tasks.add("Ship the async API")
    assert (await ns.tasks.start(task))["task"]["status"] == "in_progress"
    ctx = await ns.context("topic1", budget=300)
    assert "topic1" in str(ctx)
    with pytest.raises(mnemon.NotFound):
        await ns.get("0123456789abcdef0123456789abcdef")


async def _ticks_while(coro: "asyncio.Future") -> int:
    """How often a 10 ms ticker ran while ``coro`` was awaited: the loop was free."""
    ticks = 0
    done = False

    async def ticker() -> None:
        nonlocal ticks
        while not done:
            await asyncio.sleep(0.01)
            ticks += 1

    t = asyncio.create_task(ticker())
    await coro
    done = True
    await t
    return ticks


def test_async_on_a_file(tmp_path: Path) -> None:
    async def main() -> None:
        async with await mnemon.aopen(tmp_path / "a.redb", embedder="hash") as db:
            await _exercise(db)
            # A long call (a watch waiting 0.5 s) leaves the loop free.
            ns = db.ns("project:async")
            assert await _ticks_while(ns.changes(None, wait=0.5)) >= 20
        assert db.closed

    asyncio.run(main())


def test_async_through_a_server(tmp_path: Path) -> None:
    s = Server(tmp_path)
    try:
        async def main() -> None:
            db = await mnemon.aconnect(s.url, token=s.token)
            await _exercise(db)
            ns = db.ns("project:async")
            watcher = ns.watch(timeout=5)

            async def writer() -> None:
                await asyncio.sleep(0.2)
                await ns.add("gotcha", {"title": "seen live"})

            w = asyncio.create_task(writer())
            async for change in watcher:
                assert change.kind == "gotcha"
                break
            await w
            await db.close()

        asyncio.run(main())
    finally:
        s.stop()


def test_the_event_loop_is_not_blocked_by_many_writes(tmp_path: Path) -> None:
    async def main() -> float:
        db = await mnemon.aopen(tmp_path / "b.redb", embedder="hash")
        ns = db.ns("p")
        start = time.monotonic()
        ticks = await _ticks_while(asyncio.gather(*(ns.add("learning", f"n{i}") for i in range(200))))
        await db.close()
        return ticks / max(time.monotonic() - start, 1e-3)

    # The ticker kept running (not starved to zero) while 200 durable writes ran.
    assert asyncio.run(main()) > 5
