"""The asyncio API: :func:`aopen` and :func:`aconnect` give an :class:`AsyncDb`, whose
namespaces have the methods of :class:`mnemon.Namespace` as coroutines. Each call runs on a
worker thread (the engine releases the GIL, so calls run in parallel) and the event loop never
waits on the engine, the disk or the server.

    import mnemon

    async def main():
        async with await mnemon.aopen("memory.redb") as db:
            ns = db.ns("project:demo")
            ids = await ns.add_many([{"kind": "learning", "text": "retry with backoff"}])
            hits = await ns.search("backoff")
            async for record in ns.list("learning"):
                ...

A call whose task is cancelled still finishes on its thread (a write is then committed or
refused as a whole); only the waiting stops.
"""

from __future__ import annotations

import os
from typing import Any, AsyncIterator, Optional, Union

from ._db import Db, Namespace, PathLike, connect, open as _open
from ._groups import (
    AsyncAgent,
    AsyncConversations,
    AsyncDecisions,
    AsyncEntities,
    AsyncEpisodes,
    AsyncKnowledge,
    AsyncMemory,
    AsyncProject,
    AsyncTasks,
    AsyncVectors,
)
from ._forward import AsyncDbMethods, AsyncNamespaceMethods
from ._pool import run as _run
from ._values import Change, Record, Time

__all__ = ["AsyncDb", "AsyncNamespace", "aopen", "aconnect"]

class AsyncNamespace(AsyncNamespaceMethods):
    """:class:`mnemon.Namespace` with coroutine methods: ``await ns.add(...)``, ``await
    ns.search(...)``; ``list`` and ``watch`` are async iterators; the domain groups
    (``ns.tasks``...) have coroutine methods too."""

    def __init__(self, ns: Namespace):
        self._sync = ns
        self.tasks = AsyncTasks(ns.tasks)
        self.decisions = AsyncDecisions(ns.decisions)
        self.entities = AsyncEntities(ns.entities)
        self.episodes = AsyncEpisodes(ns.episodes)
        self.memory = AsyncMemory(ns.memory)
        self.knowledge = AsyncKnowledge(ns.knowledge)
        self.conversations = AsyncConversations(ns.conversations)
        self.project = AsyncProject(ns.project)
        self.agent = AsyncAgent(ns.agent)
        self.vectors = AsyncVectors(ns.vectors)

    @property
    def name(self) -> str:
        """The namespace's name."""
        return self._sync.name

    @property
    def sync(self) -> Namespace:
        """The same namespace with blocking methods."""
        return self._sync

    async def list(self, *kinds: str, page_size: int = 500, **kwargs: Any) -> AsyncIterator[Record]:
        """:meth:`mnemon.Namespace.list` as an async iterator: each page is read on a worker
        thread, ``page_size`` records at a time."""
        pages = self._sync.list(*kinds, page_size=page_size, **kwargs)
        done = object()
        while True:
            chunk = await _run(_take, pages, page_size, done)
            for r in chunk:
                if r is done:
                    return
                yield r

    def watch(self, kinds: Any = (), *, tags: Any = (), since: Optional[Union[str, Time]] = None,
              timeout: Optional[float] = None) -> AsyncIterator[Change]:
        """:meth:`mnemon.Namespace.watch` as an async iterator (:meth:`mnemon.Namespace.awatch`)."""
        return self._sync.awatch(kinds, tags=tags, since=since, timeout=timeout)

    def __repr__(self) -> str:
        return f"mnemon.AsyncNamespace({self.name!r})"


def _take(it: Any, n: int, done: object) -> list:
    """Up to ``n`` items of ``it`` (read on a worker thread), ``done`` last when it ended."""
    out = []
    for _ in range(n):
        try:
            out.append(next(it))
        except StopIteration:
            out.append(done)
            break
    return out



class AsyncDb(AsyncDbMethods):
    """:class:`mnemon.Db` for asyncio: the same handle (a file in this process or a server),
    with coroutine methods. ``async with`` closes it."""

    def __init__(self, db: Db):
        self._sync = db

    def ns(self, name: str) -> AsyncNamespace:
        """The namespace ``name``, with coroutine methods."""
        return AsyncNamespace(self._sync.ns(name))

    __getitem__ = ns

    @property
    def sync(self) -> Db:
        """The same handle with blocking methods."""
        return self._sync

    async def flush(self) -> None:
        """:meth:`mnemon.Db.sync` as a coroutine: make every acknowledged write durable
        (matters with ``durability="eventual"``). (``sync`` is the blocking handle.)"""
        await _run(self._sync.sync)

    @property
    def closed(self) -> bool:
        """Whether it was closed."""
        return self._sync.closed

    @property
    def remote(self) -> bool:
        """Whether this is a server's handle."""
        return self._sync.remote

    @property
    def target(self) -> str:
        """The file's path or the server's URL."""
        return self._sync.target

    @property
    def embedder(self) -> Optional[str]:
        """The model records are embedded with (``None`` for a server's handle)."""
        return self._sync.embedder

    async def __aenter__(self) -> "AsyncDb":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"mnemon.Async{self._sync!r}"



async def aopen(path: PathLike, **options: Any) -> AsyncDb:
    """:func:`mnemon.open` for asyncio (the file is opened on a worker thread): the same
    options, an :class:`AsyncDb`."""
    return AsyncDb(await _run(_open, os.fspath(path), **options))


async def aconnect(url: str, **options: Any) -> AsyncDb:
    """:func:`mnemon.connect` for asyncio: the same options, an :class:`AsyncDb`."""
    return AsyncDb(await _run(connect, url, **options))


