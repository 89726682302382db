"""The domain groups of a namespace: tasks, decisions, entities, episodes, scoped memory,
role knowledge, conversations, project knowledge, agent state and raw vectors. Each method is
one operation of mnemon's operation layer (named in its docstring); records in answers come
back as :class:`mnemon.Record` objects."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence, Union

from ._values import Id, Time, id_arg, strings, time_arg, wrap


class _Namespace(Protocol):
    """What a group needs of its namespace (:class:`mnemon.Namespace`)."""

    def _raw(self, operation: str, args: Dict[str, Any]) -> Any: ...

    def add(self, kind: str, data: Any = None, **envelope: Any) -> str: ...

    def supersede(self, old: Id, data: Any = None, **fields: Any) -> str: ...

__all__ = [
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
]


def _args(**kw: Any) -> Dict[str, Any]:
    """The arguments that were given (``None`` means: the operation's default)."""
    return {k: v for k, v in kw.items() if v is not None}


class _Group:
    __slots__ = ("_ns",)

    def __init__(self, ns: _Namespace):
        self._ns = ns

    def _call(self, operation: str, **kw: Any) -> Any:
        return wrap(self._ns._raw(operation, _args(**kw)))

    def __repr__(self) -> str:
        return f"<{type(self).__name__.lower()} of {self._ns!r}>"


class Tasks(_Group):
    """Tasks with statuses, priorities, dependencies and their history."""

    __slots__ = ()

    def add(self, title: str, **fields: Any) -> str:
        """A new task (fields: ``description``, ``priority`` (critical, high, medium, low),
        ``due``, ``assignee``, ``dependencies``, plus :meth:`Namespace.add`'s keywords); its id."""
        return self._ns.add("task", {"title": title, **_args(**fields)})

    def _move(self, id: Id, action: str, reason: Optional[str] = None) -> Dict[str, Any]:
        return self._call("task", id=id_arg(id), action=action, reason=reason)

    def start(self, id: Id) -> Dict[str, Any]:
        """In progress (operation ``task``)."""
        return self._move(id, "start")

    def complete(self, id: Id) -> Dict[str, Any]:
        """Done: final."""
        return self._move(id, "complete")

    def plan(self, id: Id) -> Dict[str, Any]:
        """Planned."""
        return self._move(id, "plan")

    def block(self, id: Id, reason: str) -> Dict[str, Any]:
        """Blocked, with what blocks it."""
        return self._move(id, "block", reason)

    def unblock(self, id: Id) -> Dict[str, Any]:
        """Back to its status before the block."""
        return self._move(id, "unblock")

    def cancel(self, id: Id, reason: Optional[str] = None) -> Dict[str, Any]:
        """Cancelled: final."""
        return self._move(id, "cancel", reason)

    def depend(self, id: Id, on: Id) -> Dict[str, Any]:
        """``id`` waits for ``on`` (a cycle is refused) (``task_depend``)."""
        return self._call("task_depend", id=id_arg(id), on=id_arg(on, "on"))

    def can_start(self, id: Id) -> Dict[str, Any]:
        """Whether every dependency is done, and which are not (``task_can_start``)."""
        return self._call("task_can_start", id=id_arg(id))

    def graph(self) -> Dict[str, Any]:
        """The dependency graph of the live tasks (``task_graph``)."""
        return self._call("task_graph")

    def list(
        self,
        *,
        statuses: Sequence[str] = (),
        priorities: Sequence[str] = (),
        assignee: Optional[str] = None,
        tag: Optional[str] = None,
        overdue: Optional[bool] = None,
        all: Optional[bool] = None,
        limit: Optional[int] = None,
    ) -> Any:
        """Tasks by status, priority, assignee, tag or overdue (``task_list``)."""
        return self._call(
            "task_list",
            statuses=strings("statuses", statuses),
            priorities=strings("priorities", priorities),
            assignee=assignee,
            tag=tag,
            overdue=overdue,
            all=all,
            limit=limit,
        )


class Decisions(_Group):
    """Decisions: their status, what superseded them, the tasks they drive."""

    __slots__ = ()

    def add(self, title: str, rationale: Optional[str] = None, **fields: Any) -> str:
        """A new decision (fields: ``decision``, ``context``, ``alternatives``,
        ``consequences``, ``status``, plus :meth:`Namespace.add`'s keywords); its id."""
        return self._ns.add("decision", {"title": title, **_args(rationale=rationale, **fields)})

    def set_status(self, id: Id, status: str) -> Dict[str, Any]:
        """Set the status: proposed, accepted, rejected or deprecated (``decision_status``)."""
        return self._call("decision_status", id=id_arg(id), status=status)

    def accept(self, id: Id) -> Dict[str, Any]:
        """Accepted."""
        return self.set_status(id, "accepted")

    def reject(self, id: Id) -> Dict[str, Any]:
        """Rejected."""
        return self.set_status(id, "rejected")

    def deprecate(self, id: Id) -> Dict[str, Any]:
        """Deprecated."""
        return self.set_status(id, "deprecated")

    def propose(self, id: Id) -> Dict[str, Any]:
        """Back to proposed."""
        return self.set_status(id, "proposed")

    def active(self) -> Any:
        """The accepted decisions in force now (``decision_active``)."""
        return self._call("decision_active")

    def link(self, decision: Id, task: Id) -> Dict[str, Any]:
        """Link a decision and a task both ways (``link``)."""
        return self._call("link", decision=id_arg(decision, "decision"), task=id_arg(task, "task"))

    def supersede(self, id: Id, data: Union[Mapping[str, Any], str], *, at: Optional[Time] = None) -> str:
        """Replace a decision by a new one from ``at``; the new id (see
        :meth:`Namespace.supersede`)."""
        return self._ns.supersede(id, data, at=at, kind="decision")


class Entities(_Group):
    """Entities (people, services, components), their facts, mentions and relations."""

    __slots__ = ()

    def ensure(self, name: str, entity_type: Optional[str] = None, description: Optional[str] = None) -> Any:
        """The live entity named ``name``, made if there is none (``entity_ensure``)."""
        return self._call("entity_ensure", name=name, entity_type=entity_type, description=description)

    def find(self, name: str) -> Any:
        """The entity named ``name`` (``entity_find``)."""
        return self._call("entity_find", name=name)

    def mention(self, id: Id, source: str, context: str) -> Any:
        """Record that ``source`` mentioned it, in ``context`` (``entity_mention``)."""
        return self._call("entity_mention", id=id_arg(id), source=source, context=context)

    def set(self, id: Id, key: str, value: Any) -> Any:
        """Set one of its facts (``entity_set``)."""
        return self._call("entity_set", id=id_arg(id), key=key, value=value)

    def link(self, a: Id, b: Id) -> Any:
        """Relate two entities (``entity_link``)."""
        return self._call("entity_link", a=id_arg(a, "a"), b=id_arg(b, "b"))

    def merge(self, keep: Id, absorb: Id) -> Any:
        """Merge ``absorb`` into ``keep`` (``entity_merge``)."""
        return self._call("entity_merge", keep=id_arg(keep, "keep"), absorb=id_arg(absorb, "absorb"))

    def by_type(self, entity_type: str) -> Any:
        """The live entities of a type (``entity_by_type``)."""
        return self._call("entity_by_type", entity_type=entity_type)


class Episodes(_Group):
    """Episodes: what an agent did, with their embeddings, access counts and pruning."""

    __slots__ = ()

    def store(
        self,
        content: str,
        *,
        task: Optional[str] = None,
        summary: Optional[str] = None,
        type: Optional[str] = None,
        files: Sequence[str] = (),
        importance: Optional[int] = None,
    ) -> Any:
        """Store an episode (``episode_store``): ``type`` is code_generation, error_fix,
        review_feedback, decision, research...; ``importance`` 1 to 5 keeps it for good."""
        return self._call(
            "episode_store",
            content=content,
            task=task,
            summary=summary,
            type=type,
            files=strings("files", files) or None,
            importance=importance,
        )

    def query(self, query: str, *, limit: Optional[int] = None) -> Any:
        """The episodes most similar to ``query`` (``episode_query``)."""
        return self._call("episode_query", query=query, limit=limit)

    def context(self, task: str, *, query: Optional[str] = None, max_tokens: Optional[int] = None) -> Any:
        """The episodes of a task as a prompt block (``episode_context``)."""
        return self._call("episode_context", task=task, query=query, max_tokens=max_tokens)

    def access(self, id: Id) -> Any:
        """Count one access of an episode (``episode_access``)."""
        return self._call("episode_access", id=id_arg(id))

    def prune(
        self, *, days: Optional[int] = None, keep: Optional[int] = None, important_factor: Optional[float] = None
    ) -> Any:
        """Retire old, unimportant, rarely read episodes (``episode_prune``)."""
        return self._call("episode_prune", days=days, keep=keep, important_factor=important_factor)


class Memory(_Group):
    """Scoped memory (global, ``project:PATH``, ``agent:NAME``): learnings, errors, patterns,
    preferences and briefs, as the assistant-memory design keeps them."""

    __slots__ = ()

    def add(
        self, content: str, *, section: Optional[str] = None, scope: Optional[str] = None, importance: Optional[int] = None
    ) -> Any:
        """Add an entry to a section (learnings, errors, patterns, preferences) of a scope
        (``memory_add``)."""
        return self._call("memory_add", content=content, section=section, scope=scope, importance=importance)

    def show(self, *, scope: Optional[str] = None, section: Optional[str] = None) -> Any:
        """A scope's entries by section (``memory_show``)."""
        return self._call("memory_show", scope=scope, section=section)

    def context(self, query: Optional[str] = None, *, scope: Optional[str] = None, budget: Optional[int] = None) -> Any:
        """A scope's memory as a prompt block (``memory_context``)."""
        return self._call("memory_context", query=query, scope=scope, budget_tokens=budget)

    def brief(self, text: str, *, scope: Optional[str] = None) -> Any:
        """Set a scope's brief (``memory_brief``)."""
        return self._call("memory_brief", text=text, scope=scope)

    def projects(self) -> Any:
        """The project scopes (``memory_projects``)."""
        return self._call("memory_projects")

    def delete(self, id: Id, *, scope: Optional[str] = None) -> Any:
        """Delete an entry (``memory_delete``)."""
        return self._call("memory_delete", id=id_arg(id), scope=scope)

    def prune(self) -> Any:
        """Drop the entries whose time is up (``memory_prune``)."""
        return self._call("memory_prune")

    def clear(self, *, scope: Optional[str] = None) -> Any:
        """Clear a scope (``memory_clear``)."""
        return self._call("memory_clear", scope=scope)

    def import_markdown(self, markdown: str, *, section: str, scope: Optional[str] = None) -> Any:
        """Import a Markdown list into a section (``memory_import``)."""
        return self._call("memory_import", markdown=markdown, section=section, scope=scope)

    def import_graph(self, jsonl: str) -> Any:
        """Import the reference MCP memory server's JSON lines (``memory_import_graph``)."""
        return self._call("memory_import_graph", jsonl=jsonl)


class Knowledge(_Group):
    """An agent's role knowledge: learned, reinforced, pruned."""

    __slots__ = ()

    def learn(self, category: str, content: str) -> Any:
        """Learn an item (``knowledge_learn``)."""
        return self._call("knowledge_learn", category=category, content=content)

    def reinforce(self, id: Id) -> Any:
        """Reinforce an item (``knowledge_reinforce``)."""
        return self._call("knowledge_reinforce", id=id_arg(id))

    def list(self, category: Optional[str] = None) -> Any:
        """The items, strongest first (``knowledge_list``)."""
        return self._call("knowledge_list", category=category)

    def prune(self, before: Time) -> Any:
        """Retire items not reinforced since ``before`` (``knowledge_prune``)."""
        return self._call("knowledge_prune", before=time_arg("before", before))


class Conversations(_Group):
    """Conversations and their messages."""

    __slots__ = ()

    def start(self, title: str) -> Any:
        """Start one; its id (``conversation_start``)."""
        return self._call("conversation_start", title=title)

    def add(self, id: Id, role: str, content: str) -> Any:
        """Add a message (``conversation_add``)."""
        return self._call("conversation_add", id=id_arg(id), role=role, content=content)

    def end(self, id: Id, summary: Optional[str] = None) -> Any:
        """End it, with a summary (``conversation_end``)."""
        return self._call("conversation_end", id=id_arg(id), summary=summary)

    def show(self, id: Id) -> Any:
        """It and its messages (``conversation_show``)."""
        return self._call("conversation_show", id=id_arg(id))

    def recent(self, limit: Optional[int] = None) -> Any:
        """The latest ones (``conversation_recent``)."""
        return self._call("conversation_recent", limit=limit)


class Project(_Group):
    """A project's patterns, gotchas, component relations and learnings."""

    __slots__ = ()

    def pattern(self, pattern: Mapping[str, Any], *, agent: Optional[str] = None) -> Any:
        """Record a code pattern (``project_pattern``)."""
        return self._call("project_pattern", pattern=dict(pattern), agent=agent)

    def patterns(self, category: Optional[str] = None) -> Any:
        """The patterns (``project_patterns``)."""
        return self._call("project_patterns", category=category)

    def gotcha(self, gotcha: Mapping[str, Any]) -> Any:
        """Record a gotcha (``project_gotcha``)."""
        return self._call("project_gotcha", gotcha=dict(gotcha))

    def gotchas(self, severity: Optional[str] = None) -> Any:
        """The gotchas (``project_gotchas``)."""
        return self._call("project_gotchas", severity=severity)

    def relate(self, from_: str, relation: str, to: str, description: Optional[str] = None) -> Any:
        """Relate two components (``project_relate``)."""
        return self._call("project_relate", **{"from": from_}, relation=relation, to=to, description=description)

    def relations(self, component: Optional[str] = None) -> Any:
        """The relations (``project_relations``)."""
        return self._call("project_relations", component=component)

    def learn(
        self, text: str, *, type: Optional[str] = None, agent: Optional[str] = None, files: Sequence[str] = ()
    ) -> Any:
        """Record a learning (``project_learn``)."""
        return self._call("project_learn", text=text, type=type, agent=agent, files=strings("files", files) or None)

    def learnings(self, limit: Optional[int] = None) -> Any:
        """The learnings (``project_learnings``)."""
        return self._call("project_learnings", limit=limit)

    def search(self, query: str, limit: Optional[int] = None) -> Any:
        """Search the project's knowledge (``project_search``)."""
        return self._call("project_search", query=query, limit=limit)

    def knowledge(self) -> Any:
        """Everything the project knows, grouped (``project_knowledge``)."""
        return self._call("project_knowledge")


class Agent(_Group):
    """An agent's preferences, completions, errors and performance."""

    __slots__ = ()

    def prefer(self, preferences: Mapping[str, Any]) -> Any:
        """Set preferences (``agent_prefer``)."""
        return self._call("agent_prefer", preferences=dict(preferences))

    def preferences(self, defaults: Optional[Mapping[str, Any]] = None) -> Any:
        """The preferences, over ``defaults`` (``agent_preferences``)."""
        return self._call("agent_preferences", defaults=None if defaults is None else dict(defaults))

    def completed(
        self,
        task: str,
        *,
        iterations: int = 1,
        quality_gate_passed: bool = True,
        duration_ms: Optional[int] = None,
        errors: Sequence[str] = (),
    ) -> Any:
        """Record a completed task: how many iterations, whether it passed its quality gate,
        how long it took, the errors met (``agent_completed``)."""
        return self._call(
            "agent_completed",
            task=task,
            iterations=iterations,
            quality_gate_passed=quality_gate_passed,
            duration_ms=duration_ms,
            errors=strings("errors", errors),
        )

    def error(self, pattern: str, resolution: Optional[str] = None) -> Any:
        """Record an error pattern and its resolution (``agent_error``)."""
        return self._call("agent_error", pattern=pattern, resolution=resolution)

    def performance(self) -> Any:
        """The agent's figures (``agent_performance``)."""
        return self._call("agent_performance")

    def context(self) -> Any:
        """The agent's context block (``agent_context``)."""
        return self._call("agent_context")


class Vectors(_Group):
    """Embeddings you bring: attach them to records and search them by vector."""

    __slots__ = ()

    def put(self, id: Id, space: str, vector: Sequence[float]) -> Any:
        """Attach ``vector`` to a record in the vector space ``space`` (a model's name)
        (``vector_put``)."""
        return self._call("vector_put", id=id_arg(id), space=space, vector=[float(x) for x in vector])

    def search(
        self,
        space: str,
        vector: Sequence[float],
        *,
        k: int = 10,
        kinds: Union[str, List[str], tuple] = (),
        tags: Union[str, List[str], tuple] = (),
        as_of: Optional[Time] = None,
        known_at: Optional[Time] = None,
        mode: Optional[str] = None,
        ef: Optional[int] = None,
    ) -> Any:
        """The ``k`` records nearest to ``vector`` in ``space``, as of a time
        (``vector_search``); ``mode``: auto, exact or graph."""
        return self._call(
            "vector_search",
            space=space,
            vector=[float(x) for x in vector],
            k=k,
            kinds=strings("kinds", kinds),
            tags=strings("tags", tags),
            as_of=time_arg("as_of", as_of),
            known_at=time_arg("known_at", known_at),
            mode=mode,
            ef=ef,
        )
