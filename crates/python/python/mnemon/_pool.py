"""The worker threads the asyncio API runs its calls on (the engine releases the GIL, so
calls run in parallel and the event loop never waits on the engine, the disk or a server)."""

from __future__ import annotations

import asyncio
import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

#: Threads the calls of every AsyncDb run on: enough for 32 concurrent tasks against a server
#: and a few watches, however many cores the machine has.
WORKERS = 64
_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()


def executor() -> ThreadPoolExecutor:
    """The shared pool, made on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="mnemon-async")
        return _pool


async def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` on a worker thread, awaited."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(executor(), functools.partial(fn, *args, **kwargs))
