# Written by scripts/gen-python.py (python3 scripts/gen-python.py): do not edit by hand.
"""The coroutine twins of :class:`mnemon.Namespace`'s and :class:`mnemon.Db`'s methods, for
:class:`mnemon.AsyncNamespace` and :class:`mnemon.AsyncDb` (each runs on a worker thread)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Union

from ._db import Db, Namespace, PathLike
from ._types import DomainStats, Erased, Forgotten, Stats
from ._values import Change, Context, Hit, Id, Record, Time
from ._pool import run as _run


class AsyncNamespaceMethods:
    """The coroutine methods of :class:`mnemon.AsyncNamespace`."""

    __slots__ = ()
    _sync: Namespace

    async def call(self, operation: str, **args: Any) -> Any:
        """:meth:`mnemon.Namespace.call` as a coroutine.

        Run any operation of mnemon's operation layer by name (the names and arguments of
        the MCP tools and the HTTP API: ``mnemon.operations()``), records in its answer as
        :class:`Record` objects.
        """
        return await _run(self._sync.call, operation, **args)

    async def add(
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
        """:meth:`mnemon.Namespace.add` as a coroutine.

        Store a record of ``kind``; its id. ``data`` is the kind's fields (a decision's
        ``title``, ``rationale``...) or, as a string, its main text. A live record of the same
        identity (an entity's name, a preference's key) is returned instead of a second one.
        """
        return await _run(
            self._sync.add,
            kind,
            data,
            text=text,
            valid_from=valid_from,
            valid_until=valid_until,
            expires_at=expires_at,
            tags=tags,
            importance=importance,
            confidence=confidence,
            source=source,
            task=task,
            key=key,
            metadata=metadata,
        )

    async def add_many(
        self,
        items: 'List[Union[Mapping[str, Any], str]]',
        *,
        kind: Optional[str] = None,
    ) -> List[str]:
        """:meth:`mnemon.Namespace.add_many` as a coroutine.

        Store many records in one durable commit; their ids, in order. Each item is a dict
        of a record's fields and envelope (``kind`` unless given here, ``text`` or the kind's
        fields, ``tags``, ``valid_from``, ``metadata``... as :meth:`add` takes them), or, with
        ``kind``, a string: its text. All or nothing: a bad item raises
        :class:`mnemon.InvalidInput` naming its index, and nothing is written. Up to 10,000
        items a call.
        """
        return await _run(self._sync.add_many, items, kind=kind)

    async def revise(self, id: Id, patch: Optional[Mapping[str, Any]] = None, **fields: Any) -> int:
        """:meth:`mnemon.Namespace.revise` as a coroutine.

        Correct a record in place (a JSON merge patch of its fields: ``None`` removes one);
        the new revision's number. The old revision stays in :meth:`history`.
        """
        return await _run(self._sync.revise, id, patch, **fields)

    async def supersede(
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
        """:meth:`mnemon.Namespace.supersede` as a coroutine.

        Replace ``old`` by a new record from ``at`` (default now): ``old`` stays valid until
        then, the new one is valid from then; the new record's id. ``chain`` links them.
        """
        return await _run(
            self._sync.supersede,
            old,
            data,
            text=text,
            at=at,
            tags=tags,
            importance=importance,
            kind=kind,
        )

    async def retire(self, id: Id, *, at: Optional[Time] = None) -> None:
        """:meth:`mnemon.Namespace.retire` as a coroutine.

        End a record's validity at ``at`` (default now): it was true until then.
        """
        return await _run(self._sync.retire, id, at=at)

    async def expire(self, id: Id, *, at: Optional[Time] = None) -> None:
        """:meth:`mnemon.Namespace.expire` as a coroutine.

        Mark a record expired at ``at`` (default now).
        """
        return await _run(self._sync.expire, id, at=at)

    async def forget(self, id: Id, *, erase: bool = False) -> Forgotten:
        """:meth:`mnemon.Namespace.forget` as a coroutine.

        Retire a record now; with ``erase``, remove every revision of it for good (for
        data that must not be kept). What was done.
        """
        return await _run(self._sync.forget, id, erase=erase)

    async def erase(
        self,
        *,
        confirm: str,
        kinds: Union[str, List[str], tuple] = (),
        tags: Union[str, List[str], tuple] = (),
        where: Optional[Mapping[str, Any]] = None,
    ) -> Erased:
        """:meth:`mnemon.Namespace.erase` as a coroutine.

        Erase, for good, every record of this namespace (or those of ``kinds``, carrying
        every tag of ``tags``): every revision, vector and index entry, so that no reading at
        any time sees them again (a data-deletion request; :meth:`retire` keeps the history,
        :meth:`forget` is one record); ``where`` narrows it as :meth:`list`'s does (mem0's
        ``delete_all(user_id=...)`` is ``erase(confirm=ns.name, where={"user_id": ...})``).
        ``confirm`` must be this namespace's name. An audit
        record without content (counts, kinds, hashes of the namespace and tags) goes to the
        namespace ``mnemon:erasures``. Through a server it needs an admin token. The answer:
        ``records``, ``revisions``, ``audit`` (the audit record's id).
        """
        return await _run(self._sync.erase, confirm=confirm, kinds=kinds, tags=tags, where=where)

    async def get(
        self,
        id: Id,
        *,
        as_of: Optional[Time] = None,
        known_at: Optional[Time] = None,
    ) -> Record:
        """:meth:`mnemon.Namespace.get` as a coroutine.

        The record as it was valid at ``as_of`` (default now), as the database knew it at
        ``known_at`` (default now). Raises :class:`mnemon.NotFound` if there is none.
        """
        return await _run(self._sync.get, id, as_of=as_of, known_at=known_at)

    async def get_many(
        self,
        ids: 'List[Id]',
        *,
        as_of: Optional[Time] = None,
        known_at: Optional[Time] = None,
    ) -> List[Optional[Record]]:
        """:meth:`mnemon.Namespace.get_many` as a coroutine.

        Many records in one call, in the order of ``ids``: each as :meth:`get` reads it, or
        ``None`` where none is visible then (unknown, not yet known, or not valid at
        ``as_of``). Up to 1,000 ids a call.
        """
        return await _run(self._sync.get_many, ids, as_of=as_of, known_at=known_at)

    async def history(self, id: Id) -> List[Record]:
        """:meth:`mnemon.Namespace.history` as a coroutine.

        Every revision of a record, oldest first, each with when it was recorded and
        replaced: how it came to be.
        """
        return await _run(self._sync.history, id)

    async def chain(self, id: Id) -> List[Record]:
        """:meth:`mnemon.Namespace.chain` as a coroutine.

        The supersession chain through a record, oldest first.
        """
        return await _run(self._sync.chain, id)

    async def tagged(self, tag: str) -> List[Record]:
        """:meth:`mnemon.Namespace.tagged` as a coroutine.

        The live records with ``tag``, grouped by kind in the answer and flattened here.
        """
        return await _run(self._sync.tagged, tag)

    async def stats(self) -> DomainStats:
        """:meth:`mnemon.Namespace.stats` as a coroutine.

        Figures of this namespace: records by kind, tags.
        """
        return await _run(self._sync.stats)

    async def changes(
        self,
        since: Optional[Union[str, Time]] = None,
        *,
        kinds: Union[str, List[str], tuple] = (),
        tags: Union[str, List[str], tuple] = (),
        limit: int = 100,
        wait: float = 0.0,
    ) -> 'tuple[List[Change], str]':
        """:meth:`mnemon.Namespace.changes` as a coroutine.

        The changes committed to this namespace after ``since`` (a change's ``cursor``, an
        earlier call's next place, or a time; default now), oldest first, at most ``limit``,
        waiting up to ``wait`` seconds (at most 30) for a first one: ``(changes, next)``, where
        ``next`` is the place to go on from.
        """
        return await _run(
            self._sync.changes,
            since,
            kinds=kinds,
            tags=tags,
            limit=limit,
            wait=wait,
        )

    async def search(
        self,
        query: str,
        *,
        mode: str = 'hybrid',
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
        """:meth:`mnemon.Namespace.search` as a coroutine.

        The records most relevant to ``query``, best first: ``mode`` is ``hybrid`` (words
        and meaning), ``lexical`` (BM25), ``vector`` or ``exact`` (the exact scan). Only what
        matches comes back: a query that matches nothing gets an empty list. ``also`` searches
        other namespaces too; ``explain`` tells each hit's ranks and scores. ``where`` (as
        :meth:`list` takes it) keeps the hits that pass, looking further down the ranking
        until ``limit`` pass or none is left.
        """
        return await _run(
            self._sync.search,
            query,
            mode=mode,
            limit=limit,
            kinds=kinds,
            tags=tags,
            agent=agent,
            task=task,
            as_of=as_of,
            known_at=known_at,
            min_score=min_score,
            also=also,
            explain=explain,
            where=where,
        )

    async def context(
        self,
        query: Optional[str] = None,
        *,
        budget: int = 2000,
        format: str = 'markdown',
        task: Optional[Id] = None,
        agent: Optional[str] = None,
        as_of: Optional[Time] = None,
        known_at: Optional[Time] = None,
        where: Optional[Mapping[str, Any]] = None,
    ) -> Context:
        """:meth:`mnemon.Namespace.context` as a coroutine.

        A ready-to-read briefing for a prompt within ``budget`` tokens: critical gotchas,
        the brief, active decisions, open tasks, the memories relevant to ``query``, the
        entities it names, the agent's preferences; ``format`` is ``markdown`` or ``xml``. As
        of a past time with ``as_of`` / ``known_at``. With ``where`` (as :meth:`list`'s), only
        records passing the filter may be in it: ``where={"user_id": "42"}`` is one user's.
        """
        return await _run(
            self._sync.context,
            query,
            budget=budget,
            format=format,
            task=task,
            agent=agent,
            as_of=as_of,
            known_at=known_at,
            where=where,
        )


class AsyncDbMethods:
    """The coroutine methods of :class:`mnemon.AsyncDb`."""

    __slots__ = ()
    _sync: Db

    async def export(self, path: PathLike, *, namespace: Optional[str] = None) -> int:
        """:meth:`mnemon.Db.export` as a coroutine.

        Write ``namespace``'s records (every namespace's when ``None``), every revision, as
        JSON lines to the file at ``path``; how many lines. :meth:`import_` reads them back.
        """
        return await _run(self._sync.export, path, namespace=namespace)

    async def import_(
        self,
        path: PathLike,
        *,
        namespace: str = 'default',
        partial: bool = False,
    ) -> Dict[str, Any]:
        """:meth:`mnemon.Db.import_` as a coroutine.

        Import the JSON lines at ``path`` (an export, or loose records such as
        ``{"kind": "learning", "text": "..."}``); lines that name no namespace go into
        ``namespace``. All or nothing unless ``partial``. The report: ``lines``, ``created``,
        ``restored``, ``unchanged``, ``failed`` (``"SOURCE:LINE: REASON"``), ``embedded``.
        """
        return await _run(self._sync.import_, path, namespace=namespace, partial=partial)

    async def stats(self, *, namespace: str = 'default') -> Stats:
        """:meth:`mnemon.Db.stats` as a coroutine.

        Figures of the whole database: the file, its tables, and the namespaces this handle
        reaches with their records and revisions. Through a server the call is made in
        ``namespace``, which the token must reach.
        """
        return await _run(self._sync.stats, namespace=namespace)

    async def close(self) -> None:
        """:meth:`mnemon.Db.close` as a coroutine.

        Sync and release the file (or forget the server). Later calls raise
        :class:`mnemon.Unavailable`. Closing twice does nothing.
        """
        return await _run(self._sync.close)
