"""A LangGraph store over mnemon: :class:`MnemonStore`, a ``langgraph.store.base.BaseStore``.

Every item lives in a mnemon namespace of its own LangGraph namespace (``("users", "42")`` is
``langgraph:users/42``, each label percent-encoded), as a record whose revisions are the
item's values over time: a put of an existing key revises it, a delete retires it, a TTL sets
its expiry. So besides what every LangGraph store does, a mnemon store can be read as it was
at any past time (:meth:`MnemonStore.as_of`), and an item's history is the record's.

Search with a query is mnemon's hybrid search (words and meaning, with the database's
embedder) over the item's text: the string values of the fields its put named in ``index``
(all of them by default); only what matches comes back. Filters follow LangGraph's in-memory
store: equality, nested objects, and ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``.

:class:`MnemonSaver` is LangGraph's checkpointer over mnemon: a thread's checkpoints are the
revisions of one record, so its history is mnemon's history.

Requires the ``langgraph`` package (``pip install mnemon-db[langgraph]``).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import quote, unquote

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    IndexConfig,
    SearchOp,
    TTLConfig,
)

from . import _db
from ._values import Record, Time, time_arg
from .errors import Forbidden, InvalidInput

from ._checkpoint import MnemonSaver

__all__ = ["MnemonStore", "MnemonSaver"]

#: The kind of an item's record, and the tag every item's record carries.
KIND = "learning"
TAG = "langgraph"


def _key_tag(key: str) -> str:
    """The tag that finds an item's record by its key (through mnemon's tag index)."""
    return "lgk:" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise InvalidInput(f"a store value must be JSON: {type(value).__name__} is not")


def _strings(value: Any, out: List[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _strings(v, out)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out.append(str(value))


def _at_path(value: Any, path: str) -> Any:
    """The value at a dotted path (``a.b``, ``a[0]``, ``a[*].b``), as LangGraph's index
    fields name them."""
    current = [value]
    for part in path.replace("]", "").split("."):
        name, _, index = part.partition("[")
        nxt = []
        for v in current:
            if name:
                v = v.get(name) if isinstance(v, dict) else None
            if v is None:
                continue
            if index == "*" and isinstance(v, list):
                nxt.extend(v)
            elif index and isinstance(v, list):
                try:
                    nxt.append(v[int(index)])
                except (ValueError, IndexError):
                    pass
            elif not index:
                nxt.append(v)
        current = nxt
    return current


def _text(key: str, value: Dict[str, Any], index: Any) -> str:
    """The text an item is searched by: the strings of its indexed fields (every field by
    default; none with ``index=False``, then only its key)."""
    parts: List[str] = []
    if index is False:
        pass
    elif index is None:
        _strings(value, parts)
    else:
        for path in index:
            for v in _at_path(value, path):
                _strings(v, parts)
    return "\n".join(parts) if parts else key


def _index_fields(index: Optional[IndexConfig]) -> Optional[List[str]]:
    """The fields a put embeds by default: every one (``None``) unless ``index`` names some."""
    fields = (index or {}).get("fields")
    if fields is None or list(fields) == ["$"]:
        return None
    if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
        raise InvalidInput("index['fields'] is a list of paths such as ['text', 'a.b']")
    return list(fields)


def _embedder(index: IndexConfig) -> Any:
    """The function of ``index['embed']``, its dimension checked against ``index['dims']``."""
    embed = index["embed"]
    if isinstance(embed, str):
        try:
            from langchain.embeddings import init_embeddings  # type: ignore[import-not-found]
        except ImportError as e:
            raise InvalidInput(
                f"index['embed'] = {embed!r} needs LangChain's init_embeddings (pip install langchain); "
                "or give an Embeddings object or a function"
            ) from e
        embed = init_embeddings(embed)
    if asyncio.iscoroutinefunction(embed):
        raise InvalidInput("index['embed'] must be synchronous (mnemon calls it on its own threads)")
    dims = index.get("dims")
    if dims is not None:
        probe: Any = embed.embed_documents(["dimension"]) if hasattr(embed, "embed_documents") else embed(["dimension"])
        got = len(list(probe)[0])
        if got != dims:
            raise InvalidInput(f"index['dims'] is {dims}, but index['embed'] returns vectors of {got}")
    return embed


def _compare(item_value: Any, filter_value: Any) -> bool:
    """LangGraph's filter semantics (its in-memory store's)."""
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(_operator(item_value, op, v) for op, v in filter_value.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare(a, b) for a, b in zip(item_value, filter_value))
        )
    return item_value == filter_value


def _pushdown(filter: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The part of a LangGraph filter the engine evaluates the same way, as a ``where`` over
    the items' values (kept beside their JSON text as ``metadata.langgraph.doc``): equalities
    with strings, at any depth. It may keep more than the filter does (the store checks
    LangGraph's semantics on what comes back), never less; items written before values were
    kept so pass it, to be checked the same way."""
    conditions: List[Dict[str, Any]] = []

    def walk(path: str, f: Mapping[str, Any]) -> None:
        for k, v in f.items():
            if not isinstance(k, str) or not k or "." in k or k.startswith("$"):
                continue
            if isinstance(v, dict) and set(v) == {"$eq"}:
                v = v["$eq"]
            if isinstance(v, str):
                conditions.append({f"{path}.{k}": v})
            elif isinstance(v, dict) and v and not any(str(x).startswith("$") for x in v):
                walk(f"{path}.{k}", v)

    walk("metadata.langgraph.doc", filter or {})
    if not conditions:
        return None
    return {"$or": [{"metadata.langgraph.doc": {"$exists": False}}, {"$and": conditions}]}


def _operator(value: Any, op: str, expected: Any) -> bool:
    if op == "$eq":
        return value == expected
    if op == "$ne":
        return value != expected
    if value is None:
        return False
    try:
        if op == "$gt":
            return float(value) > float(expected)
        if op == "$gte":
            return float(value) >= float(expected)
        if op == "$lt":
            return float(value) < float(expected)
        if op == "$lte":
            return float(value) <= float(expected)
    except (TypeError, ValueError):
        return False
    raise InvalidInput(f"unsupported filter operator {op!r}")


def _matches(condition: MatchCondition, namespace: Tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    if condition.match_type not in ("prefix", "suffix"):
        raise InvalidInput(f"unsupported match type {condition.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)


class MnemonStore(BaseStore):
    """A LangGraph ``BaseStore`` over a mnemon database (a file or a server).

    ``MnemonStore(db)`` works over an open :class:`mnemon.Db`; ``MnemonStore.open(path)``
    opens a file of its own (closed with the store). ``root`` names the mnemon namespaces it
    uses (``langgraph`` gives ``langgraph:users/42``); ``ttl`` is LangGraph's TTL
    configuration (``default_ttl`` and ``refresh_on_read``, in minutes). Expired items are
    gone from reads at once (their records expire in valid time); no sweeper is needed.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        db: "_db.Db",
        *,
        root: str = "langgraph",
        ttl: Optional[TTLConfig] = None,
        index: Optional[IndexConfig] = None,
        _as_of: Optional[str] = None,
        _known_at: Optional[str] = None,
        _owned: bool = False,
    ) -> None:
        if not root or "/" in root:
            raise InvalidInput("the store's root must be a non-empty name without '/'")
        self._db = db
        self._root = root + ":"
        self.ttl_config = ttl
        self.index_config = index
        self._fields = _index_fields(index)
        if index and index.get("embed") is not None:
            if db.remote or not (db.embedder or "").startswith("python:"):
                raise InvalidInput(
                    "index['embed'] embeds with your function: open the file with it "
                    "(MnemonStore.open(path, index=...), or mnemon.open(path, embedder=...)); "
                    f"this database embeds with {db.embedder or 'the server' + chr(39) + 's embedder'}"
                )
        self._as_of = _as_of
        self._known_at = _known_at
        self._owned = _owned

    @classmethod
    def open(
        cls,
        path: Any,
        *,
        root: str = "langgraph",
        ttl: Optional[TTLConfig] = None,
        index: Optional[IndexConfig] = None,
        **options: Any,
    ) -> "MnemonStore":
        """A store over the database file at ``path`` (``options`` as :func:`mnemon.open`'s).
        ``index`` is LangGraph's index configuration: ``embed`` (a LangChain ``Embeddings``, a
        function from texts to vectors, or a provider string that LangChain's
        ``init_embeddings`` knows) becomes the file's embedder, ``dims`` is checked against
        what it returns, and ``fields`` (paths such as ``"text"``, ``"a.b"``, ``"a[*].c"``;
        ``["$"]``, the default, is every field) is what a put embeds unless it names its own
        ``index`` (``False``: none)."""
        if index and index.get("embed") is not None:
            embed = _embedder(index)
            options = {**options, "embedder": embed}
        return cls(_db.open(path, **options), root=root, ttl=ttl, index=index, _owned=True)

    def as_of(self, when: Time, known_at: Optional[Time] = None) -> "MnemonStore":
        """A read-only view of the store as it was at ``when``: the items it held then, with
        the values they had then (as known at ``known_at``, by default ``when`` too)."""
        at = time_arg("when", when)
        known = time_arg("known_at", known_at) if known_at is not None else at
        return MnemonStore(self._db, root=self._root[:-1], ttl=self.ttl_config, index=self.index_config, _as_of=at, _known_at=known)

    @property
    def db(self) -> "_db.Db":
        """The database it works on."""
        return self._db

    def close(self) -> None:
        """Close the database if the store opened it (:meth:`open`)."""
        if self._owned:
            self._db.close()

    def __enter__(self) -> "MnemonStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Names.
    def _ns_name(self, namespace: Tuple[str, ...]) -> str:
        return self._root + "/".join(quote(label, safe="") for label in namespace)

    def _ns_tuple(self, name: str) -> Tuple[str, ...]:
        rest = name[len(self._root) :]
        return tuple(unquote(label) for label in rest.split("/")) if rest else ()

    def _namespaces(self, prefix: Tuple[str, ...]) -> List[str]:
        """The mnemon namespaces of the LangGraph namespaces under ``prefix``."""
        start = self._ns_name(prefix)
        names = self._db.ns(self._root + "_").call("namespaces", prefix=start)["namespaces"]
        if not prefix:
            return names
        return [n for n in names if n == start or n.startswith(start + "/")]

    # Reading.
    def _record(self, namespace: Tuple[str, ...], key: str) -> Optional[Record]:
        ns = self._db.ns(self._ns_name(namespace))
        found = ns.list(KIND, tags=[TAG, _key_tag(key)], as_of=self._as_of, known_at=self._known_at, limit=1)
        return next(found, None)

    @staticmethod
    def _item_fields(record: Record) -> Dict[str, Any]:
        meta = (record.metadata or {}).get("langgraph") or {}
        return meta

    def _item(self, record: Record, cls: type = Item, score: Optional[float] = None) -> Any:
        meta = self._item_fields(record)
        kwargs = dict(
            value=json.loads(meta["value"]),
            key=meta["key"],
            namespace=tuple(meta["namespace"]),
            created_at=_dt.datetime.fromisoformat(meta["created_at"]),
            updated_at=record.recorded_at,
        )
        if cls is SearchItem:
            return SearchItem(score=score, **kwargs)
        return Item(**kwargs)

    def _refresh(self, records: Sequence[Record], refresh: Optional[bool]) -> None:
        """Push back the expiry of items read, when their TTL asks for it."""
        if self._as_of is not None:
            return
        if refresh is None:
            refresh = (self.ttl_config or {}).get("refresh_on_read", True)
        if not refresh:
            return
        writes: List[Dict[str, Any]] = []
        now = _dt.datetime.now(_dt.timezone.utc)
        for r in records:
            ttl = self._item_fields(r).get("ttl")
            if ttl is not None:
                expires = (now + _dt.timedelta(minutes=ttl)).isoformat()
                writes.append({"op": "revise", "id": r.id, "patch": {"expires_at": expires}, "namespace": r.namespace})
        if writes:
            self._db.ns(writes[0]["namespace"]).call("batch", writes=writes)

    def _get(self, op: GetOp) -> Optional[Item]:
        record = self._record(tuple(op.namespace), op.key)
        if record is None:
            return None
        self._refresh([record], op.refresh_ttl)
        return self._item(record)

    def _search(self, op: SearchOp) -> List[SearchItem]:
        names = self._namespaces(tuple(op.namespace_prefix))
        if not names or op.limit <= 0:
            return []
        wanted = op.offset + op.limit
        kept: List[Tuple[Record, Optional[float]]] = []
        where = _pushdown(op.filter)
        if op.query:
            # A filter drops some: ask for more until enough pass it or there are no more.
            asked = min(10_000, wanted * 4 if op.filter else wanted)
            while True:
                hits = self._db.ns(names[0]).search(
                    op.query,
                    limit=asked,
                    kinds=[KIND],
                    tags=[TAG],
                    also=names[1:],
                    as_of=self._as_of,
                    known_at=self._known_at,
                    where=where,
                )
                passing = sum(1 for h in hits if self._passes(h.record, op.filter))
                if passing >= wanted or len(hits) < asked or asked >= 10_000:
                    break
                asked = min(10_000, asked * 4)
            candidates: Iterable[Tuple[Record, Optional[float]]] = ((h.record, h.score) for h in hits)
        else:
            candidates = (
                (r, None)
                for name in names
                for r in self._db.ns(name).list(
                    KIND, tags=[TAG], as_of=self._as_of, known_at=self._known_at, where=where
                )
            )
        for record, score in candidates:
            if not self._passes(record, op.filter):
                continue
            kept.append((record, score))
            if not op.query and len(kept) >= wanted:
                break
        page = kept[op.offset : wanted]
        self._refresh([r for r, _ in page], op.refresh_ttl)
        return [self._item(r, SearchItem, s) for r, s in page]

    def _passes(self, record: Record, filter: Optional[Dict[str, Any]]) -> bool:
        if not filter:
            return True
        value = json.loads(self._item_fields(record)["value"])
        return all(_compare(value.get(k), v) for k, v in filter.items())

    def _list_namespaces(self, op: ListNamespacesOp) -> List[Tuple[str, ...]]:
        spaces = [self._ns_tuple(n) for n in self._namespaces(())]
        if op.match_conditions:
            spaces = [s for s in spaces if all(_matches(c, s) for c in op.match_conditions)]
        if op.max_depth is not None:
            spaces = sorted({s[: op.max_depth] for s in spaces})
        else:
            spaces = sorted(set(spaces))
        return spaces[op.offset : op.offset + op.limit]

    # Writing.
    def _put_all(self, puts: Dict[Tuple[Tuple[str, ...], str], PutOp]) -> None:
        if not puts:
            return
        if self._as_of is not None:
            raise Forbidden("a view of the store as of a past time is read-only")
        now = _dt.datetime.now(_dt.timezone.utc)
        writes: List[Dict[str, Any]] = []
        for (namespace, key), op in puts.items():
            if not namespace:
                raise InvalidInput("an item's namespace must have at least one label")
            name = self._ns_name(namespace)
            existing = self._record(namespace, key)
            if op.value is None:
                if existing is not None:
                    writes.append({"op": "forget", "id": existing.id, "namespace": name})
                continue
            # BaseStore.put has applied the default TTL already; a raw PutOp may carry none.
            ttl = op.ttl if isinstance(op.ttl, (int, float)) else None
            text = json.dumps(dict(op.value), default=_json_default, ensure_ascii=False)
            meta = {
                "namespace": list(namespace),
                "key": key,
                # The value as given (its keys in order), and as an object the engine's
                # filters read (_pushdown).
                "value": text,
                "doc": json.loads(text),
                "created_at": (self._item_fields(existing)["created_at"] if existing is not None else now.isoformat()),
                "ttl": ttl,
            }
            fields: Dict[str, Any] = {
                "text": _text(key, dict(op.value), self._fields if op.index is None else op.index),
                "metadata": {"langgraph": meta},
                "expires_at": None if ttl is None else (now + _dt.timedelta(minutes=ttl)).isoformat(),
            }
            if existing is None:
                if fields["expires_at"] is None:
                    del fields["expires_at"]
                record = {**fields, "tags": [TAG, _key_tag(key)]}
                writes.append({"op": "add", "kind": KIND, "record": record, "namespace": name})
            else:
                writes.append({"op": "revise", "id": existing.id, "patch": fields, "namespace": name})
        for start in range(0, len(writes), 10_000):
            chunk = writes[start : start + 10_000]
            self._db.ns(chunk[0]["namespace"]).call("batch", writes=chunk)

    # The interface.
    def batch(self, ops: Iterable[Op]) -> List[Result]:
        """Run ``ops`` in order: reads see the store before the batch's puts, which are then
        committed together (the last put of a key wins) in one durable transaction."""
        results: List[Result] = []
        puts: Dict[Tuple[Tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise InvalidInput(f"unknown store operation {type(op).__name__}")
        self._put_all(puts)
        return results

    async def abatch(self, ops: Iterable[Op]) -> List[Result]:
        """:meth:`batch` on a worker thread (the engine releases the GIL while it works)."""
        ops = list(ops)
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, ops)

    def history(self, namespace: Tuple[str, ...], key: str) -> List[Item]:
        """Every value the item has had, oldest first (mnemon's extra)."""
        record = self._record(tuple(namespace), key)
        if record is None:
            return []
        return [self._item(r) for r in self._db.ns(self._ns_name(tuple(namespace))).history(record.id)]
