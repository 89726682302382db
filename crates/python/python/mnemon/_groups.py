# Written by scripts/gen-python.py (python3 scripts/gen-python.py): do not edit by hand.
"""The domain groups of a namespace: tasks, decisions, entities, episodes, scoped memory,
role knowledge, conversations, project knowledge, agent state and raw vectors, and their
coroutine twins. Each method is one operation of mnemon's operation layer (named in its
docstring); records in answers come back as :class:`mnemon.Record` objects."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _sugar
from ._pool import run as _run
from ._types import (
    Access,
    Block,
    Cleared,
    DecisionStatus,
    Ensured,
    Entries,
    EpisodeContext,
    EpisodesDict,
    Graph,
    GraphImported,
    Groups,
    Imported,
    Kind,
    Learned,
    Learnings,
    Linked,
    MemoryAdded,
    MemoryShown,
    Nearest,
    One,
    PatternAdded,
    Performance,
    Preferences,
    Priority,
    Projects,
    Pruned,
    Readiness,
    Retired,
    Role,
    SectionArg,
    Severity,
    Stored,
    TaskAction,
    TaskMoved,
    TaskStatus,
    Transcript,
    VectorMode,
    WriteResult,
)
from ._values import Id, id_arg, Record, strings, Time, time_arg, wrap

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
    "AsyncTasks",
    "AsyncDecisions",
    "AsyncEntities",
    "AsyncEpisodes",
    "AsyncMemory",
    "AsyncKnowledge",
    "AsyncConversations",
    "AsyncProject",
    "AsyncAgent",
    "AsyncVectors",
]


def _args(**kw: Any) -> Dict[str, Any]:
    """The arguments that were given (``None`` means: the operation's default)."""
    return {k: v for k, v in kw.items() if v is not None}


class _Group:
    __slots__ = ("_ns",)

    def __init__(self, ns: Any):
        self._ns = ns

    def _call(self, operation: str, **kw: Any) -> Any:
        return wrap(self._ns._raw(operation, _args(**kw)))

    def __repr__(self) -> str:
        return f"<{type(self).__name__.lower()} of {self._ns!r}>"


class _AsyncGroup:
    """A domain group whose methods are coroutines run on the package's worker threads."""

    __slots__ = ("_sync",)

    def __init__(self, group: Any):
        self._sync = group

    def __repr__(self) -> str:
        return f"mnemon.Async({self._sync!r})"


class Tasks(_sugar.TasksSugar, _Group):
    """Tasks with statuses, priorities, dependencies and their history."""

    __slots__ = ()

    def start(self, id: Id) -> TaskMoved:
        """In progress (operation ``task``, action ``start``).

        Change a task's status: start (in progress), complete, block (give the reason), unblock
        (back to the status before the block), cancel (optionally with a reason) or plan. Completed
        and cancelled tasks are final. Every change is kept in the task's history.

        Args:
            id: The task: a record id (a unique head or tail of at least 6 hex digits also works).
        """
        return self._call("task", action="start", id=id_arg(id, "id"))

    def complete(self, id: Id) -> TaskMoved:
        """Done (final) (operation ``task``, action ``complete``).

        Change a task's status: start (in progress), complete, block (give the reason), unblock
        (back to the status before the block), cancel (optionally with a reason) or plan. Completed
        and cancelled tasks are final. Every change is kept in the task's history.

        Args:
            id: The task: a record id (a unique head or tail of at least 6 hex digits also works).
        """
        return self._call("task", action="complete", id=id_arg(id, "id"))

    def plan(self, id: Id) -> TaskMoved:
        """Planned (operation ``task``, action ``plan``).

        Change a task's status: start (in progress), complete, block (give the reason), unblock
        (back to the status before the block), cancel (optionally with a reason) or plan. Completed
        and cancelled tasks are final. Every change is kept in the task's history.

        Args:
            id: The task: a record id (a unique head or tail of at least 6 hex digits also works).
        """
        return self._call("task", action="plan", id=id_arg(id, "id"))

    def block(self, id: Id, reason: Optional[str] = None) -> TaskMoved:
        """Blocked, with the reason (operation ``task``, action ``block``).

        Change a task's status: start (in progress), complete, block (give the reason), unblock
        (back to the status before the block), cancel (optionally with a reason) or plan. Completed
        and cancelled tasks are final. Every change is kept in the task's history.

        Args:
            id: The task: a record id (a unique head or tail of at least 6 hex digits also works).
            reason: What blocks it (block), or why it is cancelled (cancel).
        """
        return self._call("task", action="block", id=id_arg(id, "id"), reason=reason)

    def unblock(self, id: Id) -> TaskMoved:
        """Back to the status before the block (operation ``task``, action ``unblock``).

        Change a task's status: start (in progress), complete, block (give the reason), unblock
        (back to the status before the block), cancel (optionally with a reason) or plan. Completed
        and cancelled tasks are final. Every change is kept in the task's history.

        Args:
            id: The task: a record id (a unique head or tail of at least 6 hex digits also works).
        """
        return self._call("task", action="unblock", id=id_arg(id, "id"))

    def cancel(self, id: Id, reason: Optional[str] = None) -> TaskMoved:
        """Cancelled (final), optionally with a reason (operation ``task``, action ``cancel``).

        Change a task's status: start (in progress), complete, block (give the reason), unblock
        (back to the status before the block), cancel (optionally with a reason) or plan. Completed
        and cancelled tasks are final. Every change is kept in the task's history.

        Args:
            id: The task: a record id (a unique head or tail of at least 6 hex digits also works).
            reason: What blocks it (block), or why it is cancelled (cancel).
        """
        return self._call("task", action="cancel", id=id_arg(id, "id"), reason=reason)

    def move(self, id: Id, action: TaskAction, reason: Optional[str] = None) -> TaskMoved:
        """Change a task's status: start (in progress), complete, block (give the reason), unblock
        (back to the status before the block), cancel (optionally with a reason) or plan. Completed
        and cancelled tasks are final. Every change is kept in the task's history (operation
        ``task``).

        Args:
            id: The task: a record id (a unique head or tail of at least 6 hex digits also works).
            action: What to do with it.
            reason: What blocks it (block), or why it is cancelled (cancel).
        """
        return self._call("task", action=action, id=id_arg(id, "id"), reason=reason)

    def depend(self, id: Id, on: Id) -> TaskMoved:
        """Make a task wait for another: it cannot start until that one is completed. A dependency
        that would close a cycle is refused (operation ``task_depend``).

        Args:
            id: The task that waits.
            on: The task it waits for.
        """
        return self._call("task_depend", id=id_arg(id, "id"), on=id_arg(on, "on"))

    def can_start(self, id: Id) -> Readiness:
        """Whether every dependency of a task is completed, and which are not (operation
        ``task_can_start``).

        Args:
            id: The task.
        """
        return self._call("task_can_start", id=id_arg(id, "id"))

    def graph(self) -> Graph:
        """Every current task with the tasks it waits for (operation ``task_graph``)."""
        return self._call("task_graph")

    def list(
        self,
        *,
        all: Optional[bool] = None,
        assignee: Optional[str] = None,
        limit: Optional[int] = None,
        overdue: Optional[bool] = None,
        priorities: Optional[Union[Priority, Sequence[Priority]]] = None,
        statuses: Optional[Union[TaskStatus, Sequence[TaskStatus]]] = None,
        tag: Optional[str] = None,
    ) -> Entries:
        """The current tasks, by priority (critical first) then newest first, narrowed by status
        (default: all but completed and cancelled), priority, assignee or tag; or the overdue ones,
        soonest due first (operation ``task_list``).

        Args:
            all: Include completed and cancelled tasks.
            assignee: Only this assignee's.
            limit: At most this many (1 to 10,000; default: all).
            overdue: Only open tasks past their due date (the other filters do not apply).
            priorities: Only these priorities.
            statuses: Only these statuses (default: all open ones).
            tag: Only tasks carrying this tag.
        """
        return self._call(
            "task_list",
            all=all,
            assignee=assignee,
            limit=limit,
            overdue=overdue,
            priorities=strings("priorities", priorities),
            statuses=strings("statuses", statuses),
            tag=tag,
        )


class Decisions(_sugar.DecisionsSugar, _Group):
    """Decisions: their status, what superseded them, the tasks they drive."""

    __slots__ = ()

    def set_status(self, id: Id, status: DecisionStatus) -> One:
        """Propose, accept, reject or deprecate a decision; the change is a new revision in its
        history. A superseded decision keeps its status: change its replacement (operation
        ``decision_status``).

        Args:
            id: The decision: a record id (a unique head or tail of at least 6 hex digits also
                works).
            status: Proposed, accepted, rejected or deprecated (a decision becomes superseded by
                superseding it).
        """
        return self._call("decision_status", id=id_arg(id, "id"), status=status)

    def accept(self, id: Id) -> One:
        """Accepted and in force (operation ``decision_status``, status ``accepted``).

        Propose, accept, reject or deprecate a decision; the change is a new revision in its
        history. A superseded decision keeps its status: change its replacement.

        Args:
            id: The decision: a record id (a unique head or tail of at least 6 hex digits also
                works).
        """
        return self._call("decision_status", status="accepted", id=id_arg(id, "id"))

    def reject(self, id: Id) -> One:
        """Rejected (operation ``decision_status``, status ``rejected``).

        Propose, accept, reject or deprecate a decision; the change is a new revision in its
        history. A superseded decision keeps its status: change its replacement.

        Args:
            id: The decision: a record id (a unique head or tail of at least 6 hex digits also
                works).
        """
        return self._call("decision_status", status="rejected", id=id_arg(id, "id"))

    def deprecate(self, id: Id) -> One:
        """No longer recommended, not replaced (operation ``decision_status``, status
        ``deprecated``).

        Propose, accept, reject or deprecate a decision; the change is a new revision in its
        history. A superseded decision keeps its status: change its replacement.

        Args:
            id: The decision: a record id (a unique head or tail of at least 6 hex digits also
                works).
        """
        return self._call("decision_status", status="deprecated", id=id_arg(id, "id"))

    def propose(self, id: Id) -> One:
        """Proposed, not yet accepted (operation ``decision_status``, status ``proposed``).

        Propose, accept, reject or deprecate a decision; the change is a new revision in its
        history. A superseded decision keeps its status: change its replacement.

        Args:
            id: The decision: a record id (a unique head or tail of at least 6 hex digits also
                works).
        """
        return self._call("decision_status", status="proposed", id=id_arg(id, "id"))

    def active(self) -> Entries:
        """The accepted decisions valid now, newest first (operation ``decision_active``)."""
        return self._call("decision_active")

    def link(self, decision: Id, task: Id) -> Linked:
        """Record that a task implements a decision, on both (one commit): each lists the other
        (operation ``link``).

        Args:
            decision: The decision.
            task: The task.
        """
        return self._call("link", decision=id_arg(decision, "decision"), task=id_arg(task, "task"))


class Entities(_Group):
    """Entities (people, services, components), their facts, mentions and relations."""

    __slots__ = ()

    def ensure(
        self,
        name: str,
        entity_type: Optional[str] = None,
        description: Optional[str] = None,
    ) -> Ensured:
        """The entity with a name if there is one (filling in its description and type if they are
        unset), else a new one: how to refer to a person, component or technology without making
        duplicates (operation ``entity_ensure``).

        Args:
            name: Its name (its identity, whatever the case).
            entity_type: Its type: person, technology, component, service, concept, other or any
                (default other).
            description: What it is (fills in an existing entity's empty description).
        """
        return self._call(
            "entity_ensure",
            description=description,
            entity_type=entity_type,
            name=name,
        )

    def find(self, name: str) -> One:
        """The current entity with a name, whatever its case (operation ``entity_find``).

        Args:
            name: Its name (case does not matter).
        """
        return self._call("entity_find", name=name)

    def mention(self, id: Id, source: str, context: str) -> One:
        """Record a mention of an entity: what was said and where (operation ``entity_mention``).

        Args:
            id: The entity.
            source: Where (a conversation, a file, a document).
            context: What was said about it.
        """
        return self._call("entity_mention", context=context, id=id_arg(id, "id"), source=source)

    def set(self, id: Id, key: str, value: Any) -> One:
        """Set one free property of an entity to a JSON value (null removes it) (operation
        ``entity_set``).

        Args:
            id: The entity.
            key: The property.
            value: Its value, any JSON (`null` removes it).
        """
        return self._call("entity_set", id=id_arg(id, "id"), key=key, value=value)

    def link(self, a: Id, b: Id) -> One:
        """Record that two entities are related, on both (one commit) (operation ``entity_link``).

        Args:
            a: One entity.
            b: The other.
        """
        return self._call("entity_link", a=id_arg(a, "a"), b=id_arg(b, "b"))

    def merge(self, keep: Id, absorb: Id) -> One:
        """Merge entity `absorb` into entity `keep` (the same thing under two names), in one commit:
        `keep` gains its mentions, the properties it lacks, its relations (re-pointed) and tags;
        `absorb` ends, superseded by `keep` (its history stays), and its name stays an alias of
        `keep` (operation ``entity_merge``).

        Args:
            keep: The entity that stays.
            absorb: The entity merged into it (it ends).
        """
        return self._call(
            "entity_merge",
            absorb=id_arg(absorb, "absorb"),
            keep=id_arg(keep, "keep"),
        )

    def by_type(self, entity_type: str) -> Entries:
        """The current entities of one type, by name (operation ``entity_by_type``).

        Args:
            entity_type: The type (person, technology, component, service, concept, other or any).
        """
        return self._call("entity_by_type", entity_type=entity_type)


class Episodes(_Group):
    """Episodes: what an agent did, with their embeddings, access counts and pruning."""

    __slots__ = ()

    def store(
        self,
        content: str,
        *,
        files: Optional[Union[str, Sequence[str]]] = None,
        importance: Optional[int] = None,
        summary: Optional[str] = None,
        task: Optional[str] = None,
        type: Optional[str] = None,
    ) -> Stored:
        """Record an episode of work (what was done, what went wrong, feedback received) so that
        later work on similar tasks can find it with `episode_query` (operation ``episode_store``).

        Args:
            content: What happened.
            files: Files involved.
            importance: 1 to 5: how much it matters (an episode with an importance is kept for
                good).
            summary: A short summary (default: the first 200 characters).
            task: The task it belongs to (its episodes come first in its context).
            type: Its type: code_generation, error_fix, review_feedback, decision, research, ...
        """
        return self._call(
            "episode_store",
            content=content,
            files=strings("files", files),
            importance=importance,
            summary=summary,
            task=task,
            type=type,
        )

    def query(self, query: str, *, limit: Optional[int] = None) -> EpisodesDict:
        """The episodes most similar to a query (words and meaning), each with how often it has been
        returned: what happened the last times a similar task was done (operation
        ``episode_query``).

        Args:
            query: What to look for.
            limit: How many (default 5).
        """
        return self._call("episode_query", limit=limit, query=query)

    def context(
        self,
        task: str,
        *,
        max_tokens: Optional[int] = None,
        query: Optional[str] = None,
    ) -> EpisodeContext:
        """A task's episodes, then the episodes most relevant to the query, as a block within a
        token budget (operation ``episode_context``).

        Args:
            task: The task: its episodes come first.
            max_tokens: The most tokens the block may have (about four characters each; default
                1000).
            query: What to look for among the other episodes.
        """
        return self._call("episode_context", max_tokens=max_tokens, query=query, task=task)

    def access(self, id: Id) -> Access:
        """How often an episode was returned by queries, and when last (operation
        ``episode_access``).

        Args:
            id: The episode.
        """
        return self._call("episode_access", id=id_arg(id, "id"))

    def prune(
        self,
        *,
        days: Optional[int] = None,
        important_factor: Optional[int] = None,
        keep: Optional[int] = None,
    ) -> Retired:
        """Retire episodes older than some days (important ones kept longer), or all but the most
        important and newest (their history stays) (operation ``episode_prune``).

        Args:
            days: Retire episodes older than this many days.
            important_factor: Important episodes (importance 4 and 5) are kept this many times
                longer (default 3).
            keep: Keep only this many episodes, the most important and newest.
        """
        return self._call("episode_prune", days=days, important_factor=important_factor, keep=keep)


class Memory(_Group):
    """Scoped memory (global, ``project:PATH``, ``agent:NAME``): learnings, errors, patterns,
    preferences and briefs, as the assistant-memory design keeps them.
    """

    __slots__ = ()

    def add(
        self,
        content: str,
        *,
        importance: Optional[int] = None,
        scope: Optional[str] = None,
        section: Optional[SectionArg] = None,
    ) -> MemoryAdded:
        """Add an entry to the project's (or the global) memory: a learning, an error and its
        solution, a pattern, a preference. Entries expire by importance (1 a day ... 4 90 days, 5
        never). Use it for what this project's agents should know next time; the `memory_context`
        block shows them (operation ``memory_add``).

        Args:
            content: The entry: a learning; an error as `error → solution`; a pattern as `name:
                description`; a preference.
            importance: 1 to 5 (default 3): how long it is kept, 1 a day, 2 a week, 3 a month, 4 90
                days, 5 for good.
            scope: `current` (default: the server's namespace), `global`, `project:PATH` (or a
                project id), or `agent:NAME`.
            section: Its section. Left out, it is routed as the memory server of the design does:
                errors if the content speaks of an error, patterns of a pattern, else learnings
                (preferences in the global scope).
        """
        return self._call(
            "memory_add",
            content=content,
            importance=importance,
            scope=scope,
            section=section,
        )

    def show(
        self,
        *,
        scope: Optional[str] = None,
        section: Optional[SectionArg] = None,
    ) -> MemoryShown:
        """The current entries of the project's (or the global) memory, by section, with the project
        brief (operation ``memory_show``).

        Args:
            scope: `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
            section: Only this section (default: all).
        """
        return self._call("memory_show", scope=scope, section=section)

    def context(
        self,
        query: Optional[str] = None,
        *,
        budget: Optional[int] = None,
        scope: Optional[str] = None,
    ) -> Block:
        """The project's brief and memory entries (with the global preferences) as a `<mnemon-
        memory>` block within a token budget, the most relevant to the query first (operation
        ``memory_context``).

        Args:
            query: What you are about to do: entries that match it come first, and with a query only
                matching entries are shown.
            budget: The most tokens the block may have (default 2000).
            scope: `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
        """
        return self._call("memory_context", budget_tokens=budget, query=query, scope=scope)

    def brief(self, text: str, *, scope: Optional[str] = None) -> Stored:
        """Set a scope's brief (what the project is), shown first in its memory and its block; it
        supersedes the brief before (operation ``memory_brief``).

        Args:
            text: What the project is, in a few lines (it replaces the brief before).
            scope: `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
        """
        return self._call("memory_brief", scope=scope, text=text)

    def projects(self) -> Projects:
        """Every project the session reaches with current memory entries or a brief: its id, entry
        count and whether it has a brief (operation ``memory_projects``).
        """
        return self._call("memory_projects")

    def delete(self, id: Id, *, scope: Optional[str] = None) -> Stored:
        """Delete an entry of a scope's memory: it is retired, hidden from now on and kept for time
        travel (operation ``memory_delete``).

        Args:
            id: The entry: a record id (a unique head or tail of at least 6 hex digits also works).
            scope: `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
        """
        return self._call("memory_delete", id=id_arg(id, "id"), scope=scope)

    def prune(self) -> Pruned:
        """Close the validity of every entry whose time to live ran out (already hidden), at its
        expiry, in every namespace the session reaches (operation ``memory_prune``).
        """
        return self._call("memory_prune")

    def clear(self, *, scope: Optional[str] = None) -> Cleared:
        """Retire every current entry of a scope and its brief (kept for time travel) (operation
        ``memory_clear``).

        Args:
            scope: `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
        """
        return self._call("memory_clear", scope=scope)

    def import_markdown(
        self,
        markdown: str,
        *,
        section: SectionArg,
        scope: Optional[str] = None,
    ) -> Imported:
        """Import a section's markdown; entries already there (by id) are skipped, and a malformed
        heading is an error naming its line with nothing imported (operation ``memory_import``).

        Args:
            markdown: The markdown, as `memory show` writes a section (`# Title`, then `## <time> |
                importance:N | ttl:N | id:X` headings with the entry below).
            section: The section it fills.
            scope: `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
        """
        return self._call("memory_import", markdown=markdown, scope=scope, section=section)

    def import_graph(self, jsonl: str) -> GraphImported:
        """Import the reference memory server's knowledge-graph file as scoped entries: an entity
        named project:PATH goes to that project, others to the global scope; an observation already
        there is skipped. A bad line is an error naming it, and nothing is written (operation
        ``memory_import_graph``).

        Args:
            jsonl: The JSON lines of the reference memory server's file (`{"type":"entity",...}`,
                `{"type":"relation",...}`).
        """
        return self._call("memory_import_graph", jsonl=jsonl)


class Knowledge(_Group):
    """An agent's role knowledge: learned, reinforced, pruned."""

    __slots__ = ()

    def learn(self, category: str, content: str) -> Learned:
        """Keep a piece of role knowledge (how this agent should work: conventions, tools, pitfalls)
        under a category. Learning something already known reinforces it (confidence up) instead of
        repeating it (operation ``knowledge_learn``).

        Args:
            category: Its category (e.g. testing, style, tooling).
            content: What was learned. Something much like a current entry of the category
                reinforces it instead.
        """
        return self._call("knowledge_learn", category=category, content=content)

    def reinforce(self, id: Id) -> One:
        """Raise the confidence of a piece of role knowledge that proved right (by 0.1, at most 1)
        (operation ``knowledge_reinforce``).

        Args:
            id: The entry: a record id (a unique head or tail of at least 6 hex digits also works).
        """
        return self._call("knowledge_reinforce", id=id_arg(id, "id"))

    def list(self, category: Optional[str] = None) -> Entries:
        """The current role knowledge, strongest (highest confidence) first, of one category or all
        (operation ``knowledge_list``).

        Args:
            category: Only this category.
        """
        return self._call("knowledge_list", category=category)

    def prune(self, before: Time) -> Retired:
        """Retire the role knowledge not used since a time (its history stays) (operation
        ``knowledge_prune``).

        Args:
            before: Retire what was last used before this time. RFC 3339 or a date.
        """
        return self._call("knowledge_prune", before=time_arg("before", before))


class Conversations(_Group):
    """Conversations and their messages."""

    __slots__ = ()

    def start(self, title: str) -> Stored:
        """Start a conversation; add its messages with conversation_add (operation
        ``conversation_start``).

        Args:
            title: What it is about.
        """
        return self._call("conversation_start", title=title)

    def add(self, id: Id, role: Role, content: str) -> Stored:
        """Add a message to a conversation that has not ended; it is searchable at once (operation
        ``conversation_add``).

        Args:
            id: The conversation.
            role: Who said it: user, assistant, system or tool.
            content: What was said.
        """
        return self._call("conversation_add", content=content, id=id_arg(id, "id"), role=role)

    def end(self, id: Id, summary: Optional[str] = None) -> One:
        """End a conversation, optionally with a summary of what came of it (operation
        ``conversation_end``).

        Args:
            id: The conversation.
            summary: What came of it.
        """
        return self._call("conversation_end", id=id_arg(id, "id"), summary=summary)

    def show(self, id: Id) -> Transcript:
        """A conversation and its messages, in order (operation ``conversation_show``).

        Args:
            id: The conversation.
        """
        return self._call("conversation_show", id=id_arg(id, "id"))

    def recent(self, limit: Optional[int] = None) -> Entries:
        """The latest conversations, newest first (operation ``conversation_recent``).

        Args:
            limit: How many (default 10).
        """
        return self._call("conversation_recent", limit=limit)


class Project(_Group):
    """A project's patterns, gotchas, component relations and learnings."""

    __slots__ = ()

    def pattern(self, pattern: Mapping[str, Any], *, agent: Optional[str] = None) -> PatternAdded:
        """Add a pattern to the project's knowledge, unless one with the same title or a similar
        description is there: then that one is answered (its example filled in if it had none). A
        new pattern is also written to the learnings log (operation ``project_pattern``).

        Args:
            pattern: The pattern: `title`, `description`, `category`, `example`.
            agent: The agent that found it (written to the learnings log).
        """
        return self._call("project_pattern", agent=agent, pattern=dict(pattern))

    def patterns(self, category: Optional[str] = None) -> Entries:
        """The project's current patterns (of one category, or all), oldest first (operation
        ``project_patterns``).

        Args:
            category: Only this category.
        """
        return self._call("project_patterns", category=category)

    def gotcha(self, gotcha: Mapping[str, Any]) -> Stored:
        """Add a gotcha (a trap and its way out) to the project's knowledge (operation
        ``project_gotcha``).

        Args:
            gotcha: The gotcha: `title`, `problem`, `solution`, `severity` (low, medium, high,
                critical).
        """
        return self._call("project_gotcha", gotcha=dict(gotcha))

    def gotchas(self, severity: Optional[Severity] = None) -> Entries:
        """The project's current gotchas (of one severity, or all), most severe first (operation
        ``project_gotchas``).

        Args:
            severity: Only this severity.
        """
        return self._call("project_gotchas", severity=severity)

    def relate(
        self,
        from_: str,
        relation: str,
        to: str,
        description: Optional[str] = None,
    ) -> Stored:
        """Record how two components of the project relate (StorageService depends_on Database).
        Ordered relations (depends_on, extends, contains) that would close a cycle are refused
        (operation ``project_relate``).

        Args:
            from_: The component that relates (created as an entity if new).
            relation: How: depends_on, calls, extends, implements, uses, contains, ... (depends_on,
                extends and contains may not form cycles).
            to: The component related to.
            description: What the relationship is about.
        """
        return self._call(
            "project_relate",
            description=description,
            relation=relation,
            to=to,
            **{"from": from_},
        )

    def relations(self, component: Optional[str] = None) -> Entries:
        """The project's current component relationships (touching one component, or all) (operation
        ``project_relations``).

        Args:
            component: Only those from or to this component.
        """
        return self._call("project_relations", component=component)

    def learn(
        self,
        text: str,
        *,
        agent: Optional[str] = None,
        files: Optional[Union[str, Sequence[str]]] = None,
        type: Optional[str] = None,
    ) -> Stored:
        """Append a learning to the project's log, with the agent that learned it, its type and the
        files it concerns; it is kept permanently (operation ``project_learn``).

        Args:
            text: What was learned.
            agent: The agent that learned it (default unknown).
            files: The files it concerns.
            type: Its type (for example bugfix, convention, performance).
        """
        return self._call(
            "project_learn",
            agent=agent,
            files=strings("files", files),
            text=text,
            type=type,
        )

    def learnings(self, limit: Optional[int] = None) -> Learnings:
        """The project's latest learnings, oldest first, as records and as the markdown log
        (operation ``project_learnings``).

        Args:
            limit: How many (default 10).
        """
        return self._call("project_learnings", limit=limit)

    def search(self, query: str, limit: Optional[int] = None) -> Groups:
        """Search the project's patterns, decisions, gotchas, relationships and learnings together
        (words and meaning), grouped by kind, best first (operation ``project_search``).

        Args:
            query: What to look for.
            limit: How many in all (default 10).
        """
        return self._call("project_search", limit=limit, query=query)

    def knowledge(self) -> Block:
        """What the project knows about itself: its patterns, gotchas (critical first) and component
        relationships, as a block to read before changing the code (operation
        ``project_knowledge``).
        """
        return self._call("project_knowledge")


class Agent(_Group):
    """An agent's preferences, completions, errors and performance."""

    __slots__ = ()

    def prefer(self, preferences: Mapping[str, Any]) -> Preferences:
        """Set some of an agent's preferences (a JSON object: the keys given change, `null` removes
        one, the others stay) and answer them all (operation ``agent_prefer``).

        Args:
            preferences: The preferences to set (`{"indent": 4}`); the others stay, and `null`
                removes one.
        """
        return self._call("agent_prefer", preferences=dict(preferences))

    def preferences(self, defaults: Optional[Mapping[str, Any]] = None) -> Preferences:
        """An agent's preferences, over the defaults given (operation ``agent_preferences``).

        Args:
            defaults: Defaults for the keys not set.
        """
        return self._call(
            "agent_preferences",
            defaults=None if defaults is None else dict(defaults),
        )

    def completed(
        self,
        task: str,
        *,
        duration_ms: Optional[int] = None,
        errors: Optional[Union[str, Sequence[str]]] = None,
        iterations: int = 1,
        quality_gate_passed: bool = True,
    ) -> Stored:
        """Record that an agent completed a task: its iterations, whether the quality gate passed,
        its duration and the errors met (for the agent's performance) (operation
        ``agent_completed``).

        Args:
            task: The task.
            duration_ms: How long it took, in milliseconds.
            errors: Errors met on the way.
            iterations: Iterations it took.
            quality_gate_passed: Whether the quality gate passed.
        """
        return self._call(
            "agent_completed",
            duration_ms=duration_ms,
            errors=strings("errors", errors),
            iterations=iterations,
            quality_gate_passed=quality_gate_passed,
            task=task,
        )

    def error(self, pattern: str, resolution: Optional[str] = None) -> Stored:
        """Record an error an agent met and how it was resolved; a pattern seen before counts up
        (and takes the newer resolution) (operation ``agent_error``).

        Args:
            pattern: The error, as it shows.
            resolution: How it was resolved.
        """
        return self._call("agent_error", pattern=pattern, resolution=resolution)

    def performance(self) -> Performance:
        """An agent's tasks completed, average iterations and duration, quality-gate pass rate and
        most common errors (operation ``agent_performance``).
        """
        return self._call("agent_performance")

    def context(self) -> Block:
        """An agent's preferences, strongest role knowledge, performance and recent errors as a
        markdown block (operation ``agent_context``).
        """
        return self._call("agent_context")


class Vectors(_Group):
    """Embeddings you bring: attach them to records and search them by vector."""

    __slots__ = ()

    def put(self, id: Id, space: str, vector: Sequence[float]) -> WriteResult:
        """Store a vector for a record in a named space (a model of your own): it is searched with
        vector_search, as of any time (operation ``vector_put``).

        Args:
            id: The record: a record id (a unique head or tail of at least 6 hex digits also works).
            space: The vector space (the model that made the vector); its dimension is fixed by its
                first vector.
            vector: The vector (not all zeros); stored normalised.
        """
        return self._call(
            "vector_put",
            id=id_arg(id, "id"),
            space=space,
            vector=[float(x) for x in vector],
        )

    def search(
        self,
        space: str,
        vector: Sequence[float],
        *,
        as_of: Optional[Time] = None,
        ef: Optional[int] = None,
        k: int = 10,
        kinds: Optional[Sequence[Kind]] = None,
        known_at: Optional[Time] = None,
        mode: Optional[VectorMode] = None,
        tags: Optional[Union[str, Sequence[str]]] = None,
    ) -> Nearest:
        """The records whose vectors in a space are nearest to a query vector (cosine), valid and
        known at any time, narrowed by kinds and tags; the planner scans exactly or walks the graph
        (operation ``vector_search``).

        Args:
            space: The vector space.
            vector: The query vector.
            as_of: Valid time (default: now). RFC 3339 or a date.
            ef: Candidates the graph examines (default: the index's).
            k: How many (default 10).
            kinds: Only these kinds.
            known_at: Transaction time (default: now). RFC 3339 or a date.
            mode: auto (default), exact or graph.
            tags: Only records carrying all these tags.
        """
        return self._call(
            "vector_search",
            as_of=time_arg("as_of", as_of),
            ef=ef,
            k=k,
            kinds=None if kinds is None else list(kinds),
            known_at=time_arg("known_at", known_at),
            mode=mode,
            space=space,
            tags=strings("tags", tags),
            vector=[float(x) for x in vector],
        )


class AsyncTasks(_sugar.AsyncTasksSugar, _AsyncGroup):
    """:class:`Tasks` with coroutine methods: Tasks with statuses, priorities, dependencies and
    their history.
    """

    __slots__ = ()

    async def start(self, id: Id) -> TaskMoved:
        """Coroutine of :meth:`Tasks.start`: In progress (operation ``task``, action ``start``)."""
        return await _run(self._sync.start, id)

    async def complete(self, id: Id) -> TaskMoved:
        """Coroutine of :meth:`Tasks.complete`: Done (final) (operation ``task``, action
        ``complete``).
        """
        return await _run(self._sync.complete, id)

    async def plan(self, id: Id) -> TaskMoved:
        """Coroutine of :meth:`Tasks.plan`: Planned (operation ``task``, action ``plan``)."""
        return await _run(self._sync.plan, id)

    async def block(self, id: Id, reason: Optional[str] = None) -> TaskMoved:
        """Coroutine of :meth:`Tasks.block`: Blocked, with the reason (operation ``task``, action
        ``block``).
        """
        return await _run(self._sync.block, id, reason)

    async def unblock(self, id: Id) -> TaskMoved:
        """Coroutine of :meth:`Tasks.unblock`: Back to the status before the block (operation
        ``task``, action ``unblock``).
        """
        return await _run(self._sync.unblock, id)

    async def cancel(self, id: Id, reason: Optional[str] = None) -> TaskMoved:
        """Coroutine of :meth:`Tasks.cancel`: Cancelled (final), optionally with a reason (operation
        ``task``, action ``cancel``).
        """
        return await _run(self._sync.cancel, id, reason)

    async def move(self, id: Id, action: TaskAction, reason: Optional[str] = None) -> TaskMoved:
        """Coroutine of :meth:`Tasks.move`: Change a task's status: start (in progress), complete,
        block (give the reason), unblock (back to the status before the block), cancel (optionally
        with a reason) or plan. Completed and cancelled tasks are final. Every change is kept in the
        task's history (operation ``task``).
        """
        return await _run(self._sync.move, id, action, reason)

    async def depend(self, id: Id, on: Id) -> TaskMoved:
        """Coroutine of :meth:`Tasks.depend`: Make a task wait for another: it cannot start until
        that one is completed. A dependency that would close a cycle is refused (operation
        ``task_depend``).
        """
        return await _run(self._sync.depend, id, on)

    async def can_start(self, id: Id) -> Readiness:
        """Coroutine of :meth:`Tasks.can_start`: Whether every dependency of a task is completed,
        and which are not (operation ``task_can_start``).
        """
        return await _run(self._sync.can_start, id)

    async def graph(self) -> Graph:
        """Coroutine of :meth:`Tasks.graph`: Every current task with the tasks it waits for
        (operation ``task_graph``).
        """
        return await _run(self._sync.graph)

    async def list(
        self,
        *,
        all: Optional[bool] = None,
        assignee: Optional[str] = None,
        limit: Optional[int] = None,
        overdue: Optional[bool] = None,
        priorities: Optional[Union[Priority, Sequence[Priority]]] = None,
        statuses: Optional[Union[TaskStatus, Sequence[TaskStatus]]] = None,
        tag: Optional[str] = None,
    ) -> Entries:
        """Coroutine of :meth:`Tasks.list`: The current tasks, by priority (critical first) then
        newest first, narrowed by status (default: all but completed and cancelled), priority,
        assignee or tag; or the overdue ones, soonest due first (operation ``task_list``).
        """
        return await _run(
            self._sync.list,
            all=all,
            assignee=assignee,
            limit=limit,
            overdue=overdue,
            priorities=priorities,
            statuses=statuses,
            tag=tag,
        )


class AsyncDecisions(_sugar.AsyncDecisionsSugar, _AsyncGroup):
    """:class:`Decisions` with coroutine methods: Decisions: their status, what superseded them, the
    tasks they drive.
    """

    __slots__ = ()

    async def set_status(self, id: Id, status: DecisionStatus) -> One:
        """Coroutine of :meth:`Decisions.set_status`: Propose, accept, reject or deprecate a
        decision; the change is a new revision in its history. A superseded decision keeps its
        status: change its replacement (operation ``decision_status``).
        """
        return await _run(self._sync.set_status, id, status)

    async def accept(self, id: Id) -> One:
        """Coroutine of :meth:`Decisions.accept`: Accepted and in force (operation
        ``decision_status``, status ``accepted``).
        """
        return await _run(self._sync.accept, id)

    async def reject(self, id: Id) -> One:
        """Coroutine of :meth:`Decisions.reject`: Rejected (operation ``decision_status``, status
        ``rejected``).
        """
        return await _run(self._sync.reject, id)

    async def deprecate(self, id: Id) -> One:
        """Coroutine of :meth:`Decisions.deprecate`: No longer recommended, not replaced (operation
        ``decision_status``, status ``deprecated``).
        """
        return await _run(self._sync.deprecate, id)

    async def propose(self, id: Id) -> One:
        """Coroutine of :meth:`Decisions.propose`: Proposed, not yet accepted (operation
        ``decision_status``, status ``proposed``).
        """
        return await _run(self._sync.propose, id)

    async def active(self) -> Entries:
        """Coroutine of :meth:`Decisions.active`: The accepted decisions valid now, newest first
        (operation ``decision_active``).
        """
        return await _run(self._sync.active)

    async def link(self, decision: Id, task: Id) -> Linked:
        """Coroutine of :meth:`Decisions.link`: Record that a task implements a decision, on both
        (one commit): each lists the other (operation ``link``).
        """
        return await _run(self._sync.link, decision, task)


class AsyncEntities(_AsyncGroup):
    """:class:`Entities` with coroutine methods: Entities (people, services, components), their
    facts, mentions and relations.
    """

    __slots__ = ()

    async def ensure(
        self,
        name: str,
        entity_type: Optional[str] = None,
        description: Optional[str] = None,
    ) -> Ensured:
        """Coroutine of :meth:`Entities.ensure`: The entity with a name if there is one (filling in
        its description and type if they are unset), else a new one: how to refer to a person,
        component or technology without making duplicates (operation ``entity_ensure``).
        """
        return await _run(self._sync.ensure, name, entity_type, description)

    async def find(self, name: str) -> One:
        """Coroutine of :meth:`Entities.find`: The current entity with a name, whatever its case
        (operation ``entity_find``).
        """
        return await _run(self._sync.find, name)

    async def mention(self, id: Id, source: str, context: str) -> One:
        """Coroutine of :meth:`Entities.mention`: Record a mention of an entity: what was said and
        where (operation ``entity_mention``).
        """
        return await _run(self._sync.mention, id, source, context)

    async def set(self, id: Id, key: str, value: Any) -> One:
        """Coroutine of :meth:`Entities.set`: Set one free property of an entity to a JSON value
        (null removes it) (operation ``entity_set``).
        """
        return await _run(self._sync.set, id, key, value)

    async def link(self, a: Id, b: Id) -> One:
        """Coroutine of :meth:`Entities.link`: Record that two entities are related, on both (one
        commit) (operation ``entity_link``).
        """
        return await _run(self._sync.link, a, b)

    async def merge(self, keep: Id, absorb: Id) -> One:
        """Coroutine of :meth:`Entities.merge`: Merge entity `absorb` into entity `keep` (the same
        thing under two names), in one commit: `keep` gains its mentions, the properties it lacks,
        its relations (re-pointed) and tags; `absorb` ends, superseded by `keep` (its history
        stays), and its name stays an alias of `keep` (operation ``entity_merge``).
        """
        return await _run(self._sync.merge, keep, absorb)

    async def by_type(self, entity_type: str) -> Entries:
        """Coroutine of :meth:`Entities.by_type`: The current entities of one type, by name
        (operation ``entity_by_type``).
        """
        return await _run(self._sync.by_type, entity_type)


class AsyncEpisodes(_AsyncGroup):
    """:class:`Episodes` with coroutine methods: Episodes: what an agent did, with their embeddings,
    access counts and pruning.
    """

    __slots__ = ()

    async def store(
        self,
        content: str,
        *,
        files: Optional[Union[str, Sequence[str]]] = None,
        importance: Optional[int] = None,
        summary: Optional[str] = None,
        task: Optional[str] = None,
        type: Optional[str] = None,
    ) -> Stored:
        """Coroutine of :meth:`Episodes.store`: Record an episode of work (what was done, what went
        wrong, feedback received) so that later work on similar tasks can find it with
        `episode_query` (operation ``episode_store``).
        """
        return await _run(
            self._sync.store,
            content,
            files=files,
            importance=importance,
            summary=summary,
            task=task,
            type=type,
        )

    async def query(self, query: str, *, limit: Optional[int] = None) -> EpisodesDict:
        """Coroutine of :meth:`Episodes.query`: The episodes most similar to a query (words and
        meaning), each with how often it has been returned: what happened the last times a similar
        task was done (operation ``episode_query``).
        """
        return await _run(self._sync.query, query, limit=limit)

    async def context(
        self,
        task: str,
        *,
        max_tokens: Optional[int] = None,
        query: Optional[str] = None,
    ) -> EpisodeContext:
        """Coroutine of :meth:`Episodes.context`: A task's episodes, then the episodes most relevant
        to the query, as a block within a token budget (operation ``episode_context``).
        """
        return await _run(self._sync.context, task, max_tokens=max_tokens, query=query)

    async def access(self, id: Id) -> Access:
        """Coroutine of :meth:`Episodes.access`: How often an episode was returned by queries, and
        when last (operation ``episode_access``).
        """
        return await _run(self._sync.access, id)

    async def prune(
        self,
        *,
        days: Optional[int] = None,
        important_factor: Optional[int] = None,
        keep: Optional[int] = None,
    ) -> Retired:
        """Coroutine of :meth:`Episodes.prune`: Retire episodes older than some days (important ones
        kept longer), or all but the most important and newest (their history stays) (operation
        ``episode_prune``).
        """
        return await _run(
            self._sync.prune,
            days=days,
            important_factor=important_factor,
            keep=keep,
        )


class AsyncMemory(_AsyncGroup):
    """:class:`Memory` with coroutine methods: Scoped memory (global, ``project:PATH``,
    ``agent:NAME``): learnings, errors, patterns, preferences and briefs, as the assistant-memory
    design keeps them.
    """

    __slots__ = ()

    async def add(
        self,
        content: str,
        *,
        importance: Optional[int] = None,
        scope: Optional[str] = None,
        section: Optional[SectionArg] = None,
    ) -> MemoryAdded:
        """Coroutine of :meth:`Memory.add`: Add an entry to the project's (or the global) memory: a
        learning, an error and its solution, a pattern, a preference. Entries expire by importance
        (1 a day ... 4 90 days, 5 never). Use it for what this project's agents should know next
        time; the `memory_context` block shows them (operation ``memory_add``).
        """
        return await _run(
            self._sync.add,
            content,
            importance=importance,
            scope=scope,
            section=section,
        )

    async def show(
        self,
        *,
        scope: Optional[str] = None,
        section: Optional[SectionArg] = None,
    ) -> MemoryShown:
        """Coroutine of :meth:`Memory.show`: The current entries of the project's (or the global)
        memory, by section, with the project brief (operation ``memory_show``).
        """
        return await _run(self._sync.show, scope=scope, section=section)

    async def context(
        self,
        query: Optional[str] = None,
        *,
        budget: Optional[int] = None,
        scope: Optional[str] = None,
    ) -> Block:
        """Coroutine of :meth:`Memory.context`: The project's brief and memory entries (with the
        global preferences) as a `<mnemon-memory>` block within a token budget, the most relevant to
        the query first (operation ``memory_context``).
        """
        return await _run(self._sync.context, query, budget=budget, scope=scope)

    async def brief(self, text: str, *, scope: Optional[str] = None) -> Stored:
        """Coroutine of :meth:`Memory.brief`: Set a scope's brief (what the project is), shown first
        in its memory and its block; it supersedes the brief before (operation ``memory_brief``).
        """
        return await _run(self._sync.brief, text, scope=scope)

    async def projects(self) -> Projects:
        """Coroutine of :meth:`Memory.projects`: Every project the session reaches with current
        memory entries or a brief: its id, entry count and whether it has a brief (operation
        ``memory_projects``).
        """
        return await _run(self._sync.projects)

    async def delete(self, id: Id, *, scope: Optional[str] = None) -> Stored:
        """Coroutine of :meth:`Memory.delete`: Delete an entry of a scope's memory: it is retired,
        hidden from now on and kept for time travel (operation ``memory_delete``).
        """
        return await _run(self._sync.delete, id, scope=scope)

    async def prune(self) -> Pruned:
        """Coroutine of :meth:`Memory.prune`: Close the validity of every entry whose time to live
        ran out (already hidden), at its expiry, in every namespace the session reaches (operation
        ``memory_prune``).
        """
        return await _run(self._sync.prune)

    async def clear(self, *, scope: Optional[str] = None) -> Cleared:
        """Coroutine of :meth:`Memory.clear`: Retire every current entry of a scope and its brief
        (kept for time travel) (operation ``memory_clear``).
        """
        return await _run(self._sync.clear, scope=scope)

    async def import_markdown(
        self,
        markdown: str,
        *,
        section: SectionArg,
        scope: Optional[str] = None,
    ) -> Imported:
        """Coroutine of :meth:`Memory.import_markdown`: Import a section's markdown; entries already
        there (by id) are skipped, and a malformed heading is an error naming its line with nothing
        imported (operation ``memory_import``).
        """
        return await _run(self._sync.import_markdown, markdown, section=section, scope=scope)

    async def import_graph(self, jsonl: str) -> GraphImported:
        """Coroutine of :meth:`Memory.import_graph`: Import the reference memory server's knowledge-
        graph file as scoped entries: an entity named project:PATH goes to that project, others to
        the global scope; an observation already there is skipped. A bad line is an error naming it,
        and nothing is written (operation ``memory_import_graph``).
        """
        return await _run(self._sync.import_graph, jsonl)


class AsyncKnowledge(_AsyncGroup):
    """:class:`Knowledge` with coroutine methods: An agent's role knowledge: learned, reinforced,
    pruned.
    """

    __slots__ = ()

    async def learn(self, category: str, content: str) -> Learned:
        """Coroutine of :meth:`Knowledge.learn`: Keep a piece of role knowledge (how this agent
        should work: conventions, tools, pitfalls) under a category. Learning something already
        known reinforces it (confidence up) instead of repeating it (operation ``knowledge_learn``).
        """
        return await _run(self._sync.learn, category, content)

    async def reinforce(self, id: Id) -> One:
        """Coroutine of :meth:`Knowledge.reinforce`: Raise the confidence of a piece of role
        knowledge that proved right (by 0.1, at most 1) (operation ``knowledge_reinforce``).
        """
        return await _run(self._sync.reinforce, id)

    async def list(self, category: Optional[str] = None) -> Entries:
        """Coroutine of :meth:`Knowledge.list`: The current role knowledge, strongest (highest
        confidence) first, of one category or all (operation ``knowledge_list``).
        """
        return await _run(self._sync.list, category)

    async def prune(self, before: Time) -> Retired:
        """Coroutine of :meth:`Knowledge.prune`: Retire the role knowledge not used since a time
        (its history stays) (operation ``knowledge_prune``).
        """
        return await _run(self._sync.prune, before)


class AsyncConversations(_AsyncGroup):
    """:class:`Conversations` with coroutine methods: Conversations and their messages."""

    __slots__ = ()

    async def start(self, title: str) -> Stored:
        """Coroutine of :meth:`Conversations.start`: Start a conversation; add its messages with
        conversation_add (operation ``conversation_start``).
        """
        return await _run(self._sync.start, title)

    async def add(self, id: Id, role: Role, content: str) -> Stored:
        """Coroutine of :meth:`Conversations.add`: Add a message to a conversation that has not
        ended; it is searchable at once (operation ``conversation_add``).
        """
        return await _run(self._sync.add, id, role, content)

    async def end(self, id: Id, summary: Optional[str] = None) -> One:
        """Coroutine of :meth:`Conversations.end`: End a conversation, optionally with a summary of
        what came of it (operation ``conversation_end``).
        """
        return await _run(self._sync.end, id, summary)

    async def show(self, id: Id) -> Transcript:
        """Coroutine of :meth:`Conversations.show`: A conversation and its messages, in order
        (operation ``conversation_show``).
        """
        return await _run(self._sync.show, id)

    async def recent(self, limit: Optional[int] = None) -> Entries:
        """Coroutine of :meth:`Conversations.recent`: The latest conversations, newest first
        (operation ``conversation_recent``).
        """
        return await _run(self._sync.recent, limit)


class AsyncProject(_AsyncGroup):
    """:class:`Project` with coroutine methods: A project's patterns, gotchas, component relations
    and learnings.
    """

    __slots__ = ()

    async def pattern(
        self,
        pattern: Mapping[str, Any],
        *,
        agent: Optional[str] = None,
    ) -> PatternAdded:
        """Coroutine of :meth:`Project.pattern`: Add a pattern to the project's knowledge, unless
        one with the same title or a similar description is there: then that one is answered (its
        example filled in if it had none). A new pattern is also written to the learnings log
        (operation ``project_pattern``).
        """
        return await _run(self._sync.pattern, pattern, agent=agent)

    async def patterns(self, category: Optional[str] = None) -> Entries:
        """Coroutine of :meth:`Project.patterns`: The project's current patterns (of one category,
        or all), oldest first (operation ``project_patterns``).
        """
        return await _run(self._sync.patterns, category)

    async def gotcha(self, gotcha: Mapping[str, Any]) -> Stored:
        """Coroutine of :meth:`Project.gotcha`: Add a gotcha (a trap and its way out) to the
        project's knowledge (operation ``project_gotcha``).
        """
        return await _run(self._sync.gotcha, gotcha)

    async def gotchas(self, severity: Optional[Severity] = None) -> Entries:
        """Coroutine of :meth:`Project.gotchas`: The project's current gotchas (of one severity, or
        all), most severe first (operation ``project_gotchas``).
        """
        return await _run(self._sync.gotchas, severity)

    async def relate(
        self,
        from_: str,
        relation: str,
        to: str,
        description: Optional[str] = None,
    ) -> Stored:
        """Coroutine of :meth:`Project.relate`: Record how two components of the project relate
        (StorageService depends_on Database). Ordered relations (depends_on, extends, contains) that
        would close a cycle are refused (operation ``project_relate``).
        """
        return await _run(self._sync.relate, from_, relation, to, description)

    async def relations(self, component: Optional[str] = None) -> Entries:
        """Coroutine of :meth:`Project.relations`: The project's current component relationships
        (touching one component, or all) (operation ``project_relations``).
        """
        return await _run(self._sync.relations, component)

    async def learn(
        self,
        text: str,
        *,
        agent: Optional[str] = None,
        files: Optional[Union[str, Sequence[str]]] = None,
        type: Optional[str] = None,
    ) -> Stored:
        """Coroutine of :meth:`Project.learn`: Append a learning to the project's log, with the
        agent that learned it, its type and the files it concerns; it is kept permanently (operation
        ``project_learn``).
        """
        return await _run(self._sync.learn, text, agent=agent, files=files, type=type)

    async def learnings(self, limit: Optional[int] = None) -> Learnings:
        """Coroutine of :meth:`Project.learnings`: The project's latest learnings, oldest first, as
        records and as the markdown log (operation ``project_learnings``).
        """
        return await _run(self._sync.learnings, limit)

    async def search(self, query: str, limit: Optional[int] = None) -> Groups:
        """Coroutine of :meth:`Project.search`: Search the project's patterns, decisions, gotchas,
        relationships and learnings together (words and meaning), grouped by kind, best first
        (operation ``project_search``).
        """
        return await _run(self._sync.search, query, limit)

    async def knowledge(self) -> Block:
        """Coroutine of :meth:`Project.knowledge`: What the project knows about itself: its
        patterns, gotchas (critical first) and component relationships, as a block to read before
        changing the code (operation ``project_knowledge``).
        """
        return await _run(self._sync.knowledge)


class AsyncAgent(_AsyncGroup):
    """:class:`Agent` with coroutine methods: An agent's preferences, completions, errors and
    performance.
    """

    __slots__ = ()

    async def prefer(self, preferences: Mapping[str, Any]) -> Preferences:
        """Coroutine of :meth:`Agent.prefer`: Set some of an agent's preferences (a JSON object: the
        keys given change, `null` removes one, the others stay) and answer them all (operation
        ``agent_prefer``).
        """
        return await _run(self._sync.prefer, preferences)

    async def preferences(self, defaults: Optional[Mapping[str, Any]] = None) -> Preferences:
        """Coroutine of :meth:`Agent.preferences`: An agent's preferences, over the defaults given
        (operation ``agent_preferences``).
        """
        return await _run(self._sync.preferences, defaults)

    async def completed(
        self,
        task: str,
        *,
        duration_ms: Optional[int] = None,
        errors: Optional[Union[str, Sequence[str]]] = None,
        iterations: int = 1,
        quality_gate_passed: bool = True,
    ) -> Stored:
        """Coroutine of :meth:`Agent.completed`: Record that an agent completed a task: its
        iterations, whether the quality gate passed, its duration and the errors met (for the
        agent's performance) (operation ``agent_completed``).
        """
        return await _run(
            self._sync.completed,
            task,
            duration_ms=duration_ms,
            errors=errors,
            iterations=iterations,
            quality_gate_passed=quality_gate_passed,
        )

    async def error(self, pattern: str, resolution: Optional[str] = None) -> Stored:
        """Coroutine of :meth:`Agent.error`: Record an error an agent met and how it was resolved; a
        pattern seen before counts up (and takes the newer resolution) (operation ``agent_error``).
        """
        return await _run(self._sync.error, pattern, resolution)

    async def performance(self) -> Performance:
        """Coroutine of :meth:`Agent.performance`: An agent's tasks completed, average iterations
        and duration, quality-gate pass rate and most common errors (operation
        ``agent_performance``).
        """
        return await _run(self._sync.performance)

    async def context(self) -> Block:
        """Coroutine of :meth:`Agent.context`: An agent's preferences, strongest role knowledge,
        performance and recent errors as a markdown block (operation ``agent_context``).
        """
        return await _run(self._sync.context)


class AsyncVectors(_AsyncGroup):
    """:class:`Vectors` with coroutine methods: Embeddings you bring: attach them to records and
    search them by vector.
    """

    __slots__ = ()

    async def put(self, id: Id, space: str, vector: Sequence[float]) -> WriteResult:
        """Coroutine of :meth:`Vectors.put`: Store a vector for a record in a named space (a model
        of your own): it is searched with vector_search, as of any time (operation ``vector_put``).
        """
        return await _run(self._sync.put, id, space, vector)

    async def search(
        self,
        space: str,
        vector: Sequence[float],
        *,
        as_of: Optional[Time] = None,
        ef: Optional[int] = None,
        k: int = 10,
        kinds: Optional[Sequence[Kind]] = None,
        known_at: Optional[Time] = None,
        mode: Optional[VectorMode] = None,
        tags: Optional[Union[str, Sequence[str]]] = None,
    ) -> Nearest:
        """Coroutine of :meth:`Vectors.search`: The records whose vectors in a space are nearest to
        a query vector (cosine), valid and known at any time, narrowed by kinds and tags; the
        planner scans exactly or walks the graph (operation ``vector_search``).
        """
        return await _run(
            self._sync.search,
            space,
            vector,
            as_of=as_of,
            ef=ef,
            k=k,
            kinds=kinds,
            known_at=known_at,
            mode=mode,
            tags=tags,
        )
