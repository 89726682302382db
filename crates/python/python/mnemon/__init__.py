"""mnemon: an embedded, bitemporal memory database for AI agents.

Open a file in-process, or connect to a ``mnemon serve``; both give a :class:`Db` with the
same methods::

    import mnemon

    with mnemon.open("memory.redb") as db:
        ns = db.ns("project:demo")
        ns.add("decision", {"title": "Use redb", "rationale": "embedded"}, valid_from="2024-02-01")
        [hit.record.title for hit in ns.search("redb")]      # ['Use redb']
        ns.list("decision", as_of="2024-01-01")              # nothing was decided yet

Records are immutable :class:`Record` objects; times are timezone-aware datetimes (or ISO
strings); errors are subclasses of :class:`mnemon.Error`, one per stable error code.
:mod:`mnemon.langgraph` has a LangGraph store over a :class:`Db`.
"""

from __future__ import annotations

from typing import List

from . import _native
from ._db import Db, Namespace, connect, open
from ._groups import Agent, Conversations, Decisions, Entities, Episodes, Knowledge, Memory, Project, Tasks, Vectors
from ._values import Change, Context, Hit, Record
from .errors import Conflict, Damaged, Error, Forbidden, InvalidInput, NotFound, Unavailable

__version__: str = _native.VERSION

__all__ = [
    "open",
    "connect",
    "operations",
    "Db",
    "Namespace",
    "Record",
    "Hit",
    "Context",
    "Change",
    "Tasks",
    "Decisions",
    "Entities",
    "Episodes",
    "Memory",
    "Knowledge",
    "Conversations",
    "Project",
    "Agent",
    "Vectors",
    "Error",
    "InvalidInput",
    "NotFound",
    "Forbidden",
    "Conflict",
    "Damaged",
    "Unavailable",
]


def operations() -> List[str]:
    """The names of every operation :meth:`Namespace.call` takes (the MCP tools' and the HTTP
    API's names)."""
    return list(_native.operations())
