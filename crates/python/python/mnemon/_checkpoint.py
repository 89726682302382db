"""A LangGraph checkpointer over mnemon: :class:`MnemonSaver`, a
``langgraph.checkpoint.base.BaseCheckpointSaver`` (imported from :mod:`mnemon.langgraph`).

Each thread lives in a mnemon namespace of its own (``langgraph-checkpoints:THREAD``, the id
percent-encoded). Its checkpoints of one checkpoint namespace (``""`` for the graph, one per
subgraph) are the revisions of one record: every ``put`` revises it, so the thread's history
*is* the record's history, with the transaction time of each checkpoint, and the database
read as known at a past time gives the checkpoint of that time. A checkpoint's pending writes
(``put_writes``) are a record of their own, found by a tag of the checkpoint's id.

The checkpoint, its metadata and every write are kept as LangGraph's serializer writes them
(``serde.dumps_typed``), base64 in the record's metadata; the record's text is a fixed line
per thread, so the database's embedder runs once per thread, not per step.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional, Sequence, Tuple
from urllib.parse import quote, unquote

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    SerializerProtocol,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)

from . import _db
from ._values import Record
from .errors import InvalidInput, NotFound

__all__ = ["MnemonSaver"]

#: The prefix of a thread's namespace.
ROOT = "langgraph-checkpoints:"
KIND = "learning"
CHECKPOINTS = "langgraph-checkpoint"
WRITES = "langgraph-writes"


def _tag(prefix: str, *parts: str) -> str:
    h = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:32]
    return f"{prefix}:{h}"


def _pack(typed: Tuple[str, bytes]) -> List[str]:
    return [typed[0], base64.b64encode(typed[1]).decode("ascii")]


def _unpack(packed: List[str]) -> Tuple[str, bytes]:
    return packed[0], base64.b64decode(packed[1])


class MnemonSaver(BaseCheckpointSaver[str]):
    """LangGraph's checkpointer in a mnemon database::

        from mnemon.langgraph import MnemonSaver

        saver = MnemonSaver(mnemon.open("memory.redb"))      # or mnemon.connect(url, token=...)
        graph = builder.compile(checkpointer=saver)
        graph.invoke(inputs, {"configurable": {"thread_id": "t1"}})

    Sync and async (``aget_tuple``, ``alist``, ``aput``, ``aput_writes``, ``adelete_thread``:
    the same calls on worker threads). A thread's checkpoints are the revisions of one record
    (:meth:`thread_history` lists them with their transaction times); ``delete_thread`` erases
    the thread's records for good (every revision).
    """

    def __init__(self, db: "_db.Db", *, serde: Optional[SerializerProtocol] = None) -> None:
        super().__init__(serde=serde)
        self._db = db
        # The ids of records found or made, by tag and namespace: read by id afterwards (a
        # record's id never changes; a record erased meanwhile is looked up again).
        self._ids: Dict[Tuple[str, str], str] = {}

    # Names and records.
    @staticmethod
    def _ns_name(thread_id: str) -> str:
        return ROOT + quote(str(thread_id), safe="")

    def _ns(self, thread_id: str) -> "_db.Namespace":
        return self._db.ns(self._ns_name(thread_id))

    def _threads(self) -> List[str]:
        names = self._db.ns(ROOT + "_").call("namespaces", prefix=ROOT)["namespaces"]
        return [unquote(n[len(ROOT) :]) for n in names if n.startswith(ROOT)]

    def _find(self, ns: "_db.Namespace", tag: str) -> Optional[Record]:
        known = self._ids.get((ns.name, tag))
        if known is not None:
            try:
                return ns.get(known)
            except (NotFound, InvalidInput):
                del self._ids[(ns.name, tag)]
        found = next(ns.list(KIND, tags=[tag], limit=1), None)
        if found is not None:
            self._ids[(ns.name, tag)] = found.id
        return found

    def _checkpoint_record(self, ns: "_db.Namespace", checkpoint_ns: str) -> Optional[Record]:
        return self._find(ns, _tag(CHECKPOINTS, checkpoint_ns))

    def _checkpoint_namespaces(self, ns: "_db.Namespace") -> List[Record]:
        return list(ns.list(KIND, tags=[CHECKPOINTS]))

    # Reading.
    def _writes(self, ns: "_db.Namespace", checkpoint_ns: str, checkpoint_id: str) -> List[Tuple[str, str, Any]]:
        record = self._find(ns, _tag(WRITES, checkpoint_ns, checkpoint_id))
        if record is None:
            return []
        stored = (record.metadata or {}).get("writes", {})
        rows = sorted(stored.values(), key=lambda w: writes_sort_key(w[4], w[0], w[5]))
        return [(w[0], w[1], self.serde.loads_typed(_unpack(w[2:4]))) for w in rows]

    def _tuple(self, thread_id: str, ns: "_db.Namespace", meta: Dict[str, Any]) -> CheckpointTuple:
        checkpoint_ns = meta["checkpoint_ns"]
        checkpoint_id = meta["checkpoint_id"]
        parent = meta.get("parent_checkpoint_id")

        def config(cid: str) -> RunnableConfig:
            return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": cid}}

        return CheckpointTuple(
            config=config(checkpoint_id),
            checkpoint=self.serde.loads_typed(_unpack(meta["checkpoint"])),
            metadata=self.serde.loads_typed(_unpack(meta["metadata"])),
            parent_config=config(parent) if parent else None,
            pending_writes=self._writes(ns, checkpoint_ns, checkpoint_id),
        )

    def get_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        """The checkpoint ``config`` names (``checkpoint_id``), or the thread's latest."""
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        ns = self._ns(thread_id)
        record = self._checkpoint_record(ns, checkpoint_ns)
        if record is None:
            return None
        wanted = get_checkpoint_id(config)
        if not wanted or (record.metadata or {}).get("checkpoint_id") == wanted:
            return self._tuple(thread_id, ns, record.metadata)
        for revision in reversed(ns.history(record)):
            meta = revision.metadata or {}
            if meta.get("checkpoint_id") == wanted:
                return self._tuple(thread_id, ns, meta)
        return None

    def list(
        self,
        config: Optional[RunnableConfig],
        *,
        filter: Optional[Dict[str, Any]] = None,
        before: Optional[RunnableConfig] = None,
        limit: Optional[int] = None,
    ) -> Iterator[CheckpointTuple]:
        """The checkpoints of ``config``'s thread (every thread's without one), newest first:
        of its ``checkpoint_ns`` if given, only ``checkpoint_id`` if given, those before
        ``before``'s, those whose metadata has every pair of ``filter``, at most ``limit``."""
        configurable = (config or {}).get("configurable", {})
        threads = [configurable["thread_id"]] if config else self._threads()
        only_ns = configurable.get("checkpoint_ns")
        only_id = get_checkpoint_id(config) if config else None
        before_id = get_checkpoint_id(before) if before else None
        left = limit
        for thread_id in threads:
            ns = self._ns(thread_id)
            for record in self._checkpoint_namespaces(ns):
                checkpoint_ns = (record.metadata or {}).get("checkpoint_ns", "")
                if only_ns is not None and checkpoint_ns != only_ns:
                    continue
                revisions = sorted(
                    (r.metadata for r in ns.history(record) if r.metadata and "checkpoint_id" in r.metadata),
                    key=lambda m: m["checkpoint_id"],
                    reverse=True,
                )
                seen = set()
                for meta in revisions:
                    cid = meta["checkpoint_id"]
                    if cid in seen or (only_id and cid != only_id) or (before_id and cid >= before_id):
                        continue
                    seen.add(cid)
                    if filter:
                        metadata = self.serde.loads_typed(_unpack(meta["metadata"]))
                        if not all(metadata.get(k) == v for k, v in filter.items()):
                            continue
                    if left is not None:
                        if left <= 0:
                            return
                        left -= 1
                    yield self._tuple(thread_id, ns, meta)

    def thread_history(self, thread_id: str, checkpoint_ns: str = "") -> List[Tuple[str, Any]]:
        """The checkpoints of a thread as mnemon recorded them, oldest first: ``(checkpoint_id,
        recorded_at)`` for each revision of the thread's record."""
        ns = self._ns(thread_id)
        record = self._checkpoint_record(ns, checkpoint_ns)
        if record is None:
            return []
        return [(r.metadata["checkpoint_id"], r.recorded_at) for r in ns.history(record) if r.metadata]

    # Writing.
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` as the next revision of its thread's record."""
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        meta = {
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
            "parent_checkpoint_id": config["configurable"].get("checkpoint_id"),
            "checkpoint": _pack(self.serde.dumps_typed(checkpoint)),
            "metadata": _pack(self.serde.dumps_typed(get_checkpoint_metadata(config, metadata))),
        }
        ns = self._ns(thread_id)
        record = self._checkpoint_record(ns, checkpoint_ns)
        if record is None:
            tag = _tag(CHECKPOINTS, checkpoint_ns)
            self._ids[(ns.name, tag)] = ns.add(
                KIND,
                f"LangGraph checkpoints of thread {thread_id} {checkpoint_ns}".strip(),
                tags=[CHECKPOINTS, tag],
                metadata=meta,
            )
        else:
            ns.revise(record, metadata=meta)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint["id"]}}

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[Tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against the checkpoint ``config`` names (a write already
        stored for the same task and index is kept, special writes replaced, as LangGraph's
        savers do)."""
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        checkpoint_id = config["configurable"]["checkpoint_id"]
        ns = self._ns(thread_id)
        tag = _tag(WRITES, checkpoint_ns, checkpoint_id)
        record = self._find(ns, tag)
        stored: Dict[str, Any] = dict((record.metadata or {}).get("writes", {})) if record else {}
        added: Dict[str, Any] = {}
        for i, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, i)
            key = f"{task_id}|{idx}"
            if idx >= 0 and key in stored:
                continue
            added[key] = [task_id, channel, *_pack(self.serde.dumps_typed(value)), task_path, idx]
        if not added:
            return
        if record is None:
            self._ids[(ns.name, tag)] = ns.add(
                KIND,
                f"LangGraph pending writes of thread {thread_id}",
                tags=[WRITES, tag],
                metadata={"checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id, "writes": added},
            )
        else:
            ns.revise(record, metadata={"writes": added})

    def delete_thread(self, thread_id: str) -> None:
        """Erase every checkpoint and write of the thread, every revision (``forget`` with
        ``erase``): the database as known at a past time no longer has them either."""
        ns = self._ns(thread_id)
        self._ids = {k: v for k, v in self._ids.items() if k[0] != ns.name}
        ids = [r.id for r in ns.list(KIND)]
        for start in range(0, len(ids), 1000):
            ns.call("batch", writes=[{"op": "forget", "id": i, "erase": True} for i in ids[start : start + 1000]])

    # Async: the same calls on worker threads.
    async def aget_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: Optional[RunnableConfig],
        *,
        filter: Optional[Dict[str, Any]] = None,
        before: Optional[RunnableConfig] = None,
        limit: Optional[int] = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[Tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    def get_next_version(self, current: Optional[str], channel: None) -> str:
        """Monotonic channel versions (as LangGraph's own savers make them)."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(str(current).split(".")[0])
        return f"{current_v + 1:032}"
