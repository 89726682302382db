"""The few group methods written by hand (shorthands over :meth:`mnemon.Namespace.add` and
:meth:`mnemon.Namespace.supersede`), mixed into the generated groups of ``_groups.py``:
``scripts/gen-python.py`` gives group ``X`` the mixin ``XSugar`` (and ``AsyncX`` the mixin
``AsyncXSugar``) when this module defines it."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Union

from ._pool import run as _run
from ._values import Id, Time


def _given(**kw: Any) -> Dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


class TasksSugar:
    __slots__ = ()
    _ns: Any

    def add(self, title: str, **fields: Any) -> str:
        """A new task (fields: ``description``, ``priority`` (critical, high, medium, low),
        ``due``, ``assignee``, ``dependencies``, plus :meth:`Namespace.add`'s keywords); its id."""
        return self._ns.add("task", {"title": title, **_given(**fields)})


class DecisionsSugar:
    __slots__ = ()
    _ns: Any

    def add(self, title: str, rationale: Optional[str] = None, **fields: Any) -> str:
        """A new decision (fields: ``decision``, ``context``, ``alternatives``,
        ``consequences``, ``status``, plus :meth:`Namespace.add`'s keywords); its id."""
        return self._ns.add("decision", {"title": title, **_given(rationale=rationale, **fields)})

    def supersede(self, id: Id, data: Union[Mapping[str, Any], str], *, at: Optional[Time] = None) -> str:
        """Replace a decision by a new one from ``at``; the new id (see
        :meth:`Namespace.supersede`)."""
        return self._ns.supersede(id, data, at=at, kind="decision")


class AsyncTasksSugar:
    __slots__ = ()
    _sync: Any

    async def add(self, title: str, **fields: Any) -> str:
        """Coroutine of :meth:`Tasks.add`: a new task; its id."""
        return await _run(self._sync.add, title, **fields)


class AsyncDecisionsSugar:
    __slots__ = ()
    _sync: Any

    async def add(self, title: str, rationale: Optional[str] = None, **fields: Any) -> str:
        """Coroutine of :meth:`Decisions.add`: a new decision; its id."""
        return await _run(self._sync.add, title, rationale, **fields)

    async def supersede(self, id: Id, data: Union[Mapping[str, Any], str], *, at: Optional[Time] = None) -> str:
        """Coroutine of :meth:`Decisions.supersede`: the new decision's id."""
        return await _run(self._sync.supersede, id, data, at=at)
