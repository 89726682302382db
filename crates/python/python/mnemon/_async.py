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

import asyncio
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, AsyncIterator, Callable, Optional, Union

from ._db import Db, Namespace, PathLike, connect, open as _open
from ._values import Change, Record, Time

__all__ = ["AsyncDb", "AsyncNamespace", "aopen", "aconnect"]

#: Threads the calls of every AsyncDb run on: enough for 32 concurrent tasks against a server
#: and a few watches, however many cores the machine has.
_WORKERS = 64
_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="mnemon-async")
        return _pool


async def _run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_executor(), functools.partial(fn, *args, **kwargs))


def _coroutine(name: str, doc_from: type) -> Callable[..., Any]:
    """A coroutine method calling the synchronous method ``name`` of ``self._sync`` on a
    worker thread; its documentation is the synchronous method's."""

    async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await _run(getattr(self._sync, name), *args, **kwargs)

    original = getattr(doc_from, name)
    method.__name__ = name
    method.__qualname__ = f"Async{doc_from.__name__}.{name}"
    method.__doc__ = f"Coroutine of :meth:`mnemon.{doc_from.__name__}.{name}`.\n\n{original.__doc__ or ''}"
    return method


class _AsyncGroup:
    """A domain group (``tasks``, ``decisions``...) whose methods are coroutines."""

    __slots__ = ("_sync",)

    def __init__(self, group: Any):
        self._sync = group

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._sync, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await _run(attr, *args, **kwargs)

        return call

    def __repr__(self) -> str:
        return f"mnemon.Async({self._sync!r})"


class AsyncNamespace:
    """:class:`mnemon.Namespace` with coroutine methods: ``await ns.add(...)``, ``await
    ns.search(...)``; ``list`` and ``watch`` are async iterators; the domain groups
    (``ns.tasks``...) have coroutine methods too."""

    _GROUPS = ("tasks", "decisions", "entities", "episodes", "memory", "knowledge", "conversations", "project",
               "agent", "vectors")

    def __init__(self, ns: Namespace):
        self._sync = ns
        for g in self._GROUPS:
            setattr(self, g, _AsyncGroup(getattr(ns, g)))

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


for _name in ("call", "add", "add_many", "revise", "supersede", "retire", "expire", "forget", "erase", "get", "get_many",
              "history", "chain", "tagged", "stats", "changes", "search", "context"):
    setattr(AsyncNamespace, _name, _coroutine(_name, Namespace))


class AsyncDb:
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


for _name in ("export", "import_", "stats", "sync", "close"):
    setattr(AsyncDb, _name, _coroutine(_name, Db))


async def aopen(path: PathLike, **options: Any) -> AsyncDb:
    """:func:`mnemon.open` for asyncio (the file is opened on a worker thread): the same
    options, an :class:`AsyncDb`."""
    return AsyncDb(await _run(_open, os.fspath(path), **options))


async def aconnect(url: str, **options: Any) -> AsyncDb:
    """:func:`mnemon.connect` for asyncio: the same options, an :class:`AsyncDb`."""
    return AsyncDb(await _run(connect, url, **options))


