"""The change feed from Python: ns.watch() and ns.awatch(), in-process and through a server."""

from __future__ import annotations

import asyncio
import threading
import time

import mnemon


def test_watch_sees_each_write_once_in_order_and_resumes(db: mnemon.Db, ns: mnemon.Namespace) -> None:
    got: list = []
    ready = threading.Event()

    def follow() -> None:
        it = ns.watch("learning", timeout=10)
        ready.set()
        for change in it:
            got.append(change)
            if len(got) == 30:
                return

    t = threading.Thread(target=follow)
    t.start()
    ready.wait()
    time.sleep(0.2)  # the watch has fixed "now"
    written = [ns.add("learning", text=f"note {i}") for i in range(30)]
    ns.add("decision", {"title": "not a learning"})
    db.ns("elsewhere").add("learning", text="another namespace")
    t.join(timeout=30)
    assert [c.id for c in got] == written
    assert all(c.op == "insert" and c.kind == "learning" and c.namespace == ns.name for c in got)
    assert all(a.cursor < b.cursor or a.tx < b.tx for a, b in zip(got, got[1:]))
    # Resume after the tenth: exactly the rest, then a revision and a forgetting.
    ns.revise(written[0], {"text": "note 0, corrected"})
    ns.forget(written[1], erase=True)
    rest = list(ns.watch(since=got[9].cursor, timeout=0.5))
    assert [c.id for c in rest[:20]] == written[10:]
    assert [(c.op, c.kind) for c in rest[20:]] == [("insert", "decision"), ("revise", "learning"), ("forget", "learning")]
    changes, nxt = ns.changes(got[-1].cursor, kinds="decision")
    assert [c.op for c in changes] == ["insert"]
    assert ns.changes(nxt, kinds="decision")[0] == []


def test_awatch_does_not_block_the_event_loop(ns: mnemon.Namespace) -> None:
    async def main() -> list:
        seen: list = []
        ticks = 0

        async def follow() -> None:
            async for change in ns.awatch(timeout=10):
                seen.append(change)
                if len(seen) == 5:
                    return

        async def tick() -> None:
            nonlocal ticks
            while len(seen) < 5:
                ticks += 1
                await asyncio.sleep(0.01)

        async def write() -> None:
            await asyncio.sleep(0.3)
            for i in range(5):
                await asyncio.to_thread(ns.add, "learning", text=f"async {i}")

        await asyncio.wait_for(asyncio.gather(follow(), tick(), write()), timeout=30)
        assert ticks > 10, "the loop kept running while the watch waited"
        return seen

    seen = asyncio.run(main())
    assert [c.op for c in seen] == ["insert"] * 5
