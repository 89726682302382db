# Written by scripts/gen-python.py (python3 scripts/gen-python.py): do not edit by hand.
"""The types of the operations' answers, as the domain groups return them (records in them as
:class:`mnemon.Record` and :class:`mnemon.Hit`), and the enumerations their arguments take."""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Tuple, TypedDict, Union

from ._values import Hit, Record

__all__ = [
    "OperationName",
    "Access",
    "Backlog",
    "Batched",
    "Block",
    "BuildReport",
    "ChainOut",
    "ChangeDict",
    "ChangeOp",
    "ChangePage",
    "Cleared",
    "Consolidation",
    "ContextOut",
    "Cursor",
    "DecisionStatus",
    "DomainStats",
    "Ensured",
    "Entries",
    "EpisodeContext",
    "EpisodeHit",
    "EpisodesDict",
    "Erased",
    "Forgotten",
    "GotRecords",
    "Graph",
    "GraphImported",
    "GraphLines",
    "Group",
    "Groups",
    "Hits",
    "ImportSummary",
    "Imported",
    "Indexes",
    "Kind",
    "Learned",
    "Learnings",
    "Linked",
    "MemoryAdded",
    "MemoryShown",
    "NamespaceNames",
    "NamespaceStats",
    "Nearest",
    "One",
    "PatternAdded",
    "Performance",
    "Plan",
    "Preferences",
    "Priority",
    "ProjectSummary",
    "Projects",
    "PruneReport",
    "Pruned",
    "Readiness",
    "Records",
    "Reindexed",
    "Remembered",
    "Retired",
    "Revisions",
    "Role",
    "SearchPath",
    "SectionArg",
    "SectionEntries",
    "SectionEntry",
    "SegmentStatus",
    "Severity",
    "Stats",
    "Stored",
    "Superseded",
    "TaskAction",
    "TaskDeps",
    "TaskMoved",
    "TaskStatus",
    "Transcript",
    "VectorMode",
    "WriteResult",
]

OperationName = Literal[
    "add",
    "agent_completed",
    "agent_context",
    "agent_error",
    "agent_performance",
    "agent_prefer",
    "agent_preferences",
    "batch",
    "chain",
    "changes",
    "consolidate",
    "context",
    "conversation_add",
    "conversation_end",
    "conversation_recent",
    "conversation_show",
    "conversation_start",
    "db_stats",
    "decision_active",
    "decision_status",
    "entity_by_type",
    "entity_ensure",
    "entity_find",
    "entity_link",
    "entity_mention",
    "entity_merge",
    "entity_set",
    "episode_access",
    "episode_context",
    "episode_prune",
    "episode_query",
    "episode_store",
    "erase",
    "forget",
    "get",
    "get_many",
    "graph_export",
    "graph_import",
    "history",
    "index_build",
    "index_status",
    "knowledge_learn",
    "knowledge_list",
    "knowledge_prune",
    "knowledge_reinforce",
    "link",
    "list",
    "memory_add",
    "memory_brief",
    "memory_clear",
    "memory_context",
    "memory_delete",
    "memory_import",
    "memory_import_graph",
    "memory_projects",
    "memory_prune",
    "memory_show",
    "namespaces",
    "project_gotcha",
    "project_gotchas",
    "project_knowledge",
    "project_learn",
    "project_learnings",
    "project_pattern",
    "project_patterns",
    "project_relate",
    "project_relations",
    "project_search",
    "prune",
    "recall",
    "reindex",
    "remember",
    "retire",
    "revise",
    "stats",
    "supersede",
    "tagged",
    "task",
    "task_can_start",
    "task_depend",
    "task_graph",
    "task_list",
    "vector_put",
    "vector_search",
]
#: The name of every operation (``mnemon.operations()``).


class _WriteResultRequired(TypedDict):
    #: Whether a live record of the same identity already held it: its id is returned and
    #: nothing was written.
    existing: bool
    #: The record written (for a supersession, the new one).
    id: str


class WriteResult(_WriteResultRequired, total=False):
    """What a write did."""
    #: Its revision now (absent when nothing was written).
    rev: Optional[int]
    #: The record it superseded, if it did.
    supersedes: Optional[str]


class Stored(TypedDict):
    """A new record's id."""
    #: Its id.
    id: str


class Block(TypedDict):
    """A block of text."""
    #: The text to read.
    context: str


class Performance(TypedDict):
    """What [`Agent::performance`] computes from the recorded task metrics and errors."""
    #: Mean duration of the tasks that measured it, in milliseconds.
    average_duration_ms: Optional[float]
    #: Mean iterations per task.
    average_iterations: float
    #: Error patterns, most frequent first: (pattern, resolution, occurrences).
    common_errors: List[Tuple[str, str, int]]
    #: Share of tasks whose quality gate passed (0 to 1).
    quality_gate_pass_rate: float
    #: Task completions recorded.
    tasks_completed: int


class Preferences(TypedDict):
    """An agent's preferences."""
    #: The preferences, over the defaults asked with.
    preferences: Any


class Batched(TypedDict):
    """What a batch did: one result per write, in order."""
    #: The commit's sequence number: every write of the batch is in it.
    commit: int
    #: Per write: the record written (for a supersession the new one), its revision, whether
    #: a live record of the same identity already held it, the record it superseded.
    results: List[WriteResult]


class ChainOut(TypedDict):
    """A supersession chain."""
    #: The memory the chain was asked through.
    asked: str
    #: From the first memory to the latest.
    chain: List[Record]


Cursor = str


ChangeOp = Literal["insert", "revise", "supersede", "superseded", "retire", "expire", "forget", "change"]
#: ``insert``: The record was created.; ``revise``: A new revision corrected it.; ``supersede``:
#: It was created to replace another (its `supersedes` names it).; ``superseded``: It was
#: replaced by another (its `superseded_by` names it).; ``retire``: Its valid interval was
#: closed.; ``expire``: Its expiry was set.; ``forget``: Every revision was erased.; ``change``:
#: A change recorded by a release before the feed, which did not say what it was.


class _ChangeDictRequired(TypedDict):
    #: Where the feed resumes after this change.
    cursor: Cursor
    #: The record.
    id: str
    #: The record's namespace.
    namespace: str
    #: What happened.
    op: ChangeOp
    #: The revision written (for a forgetting, the last one erased).
    rev: int
    #: The transaction time of the change.
    tx: str


class ChangeDict(_ChangeDictRequired, total=False):
    """One committed change."""
    #: Its kind (absent for a change recorded before the feed existed).
    kind: Optional[str]


class ChangePage(TypedDict):
    """A page of the feed: the changes found, and where to go on from (past every change looked at,
    the filtered-out ones included).
    """
    #: The changes, oldest first.
    changes: List[ChangeDict]
    #: Where the next page starts.
    next: Cursor


class Consolidation(TypedDict):
    """What [`Ns::consolidate`] did."""
    #: Decisions still valid with status `superseded` (marked so by hand or an import)
    #: retired.
    decisions_retired: int
    #: Decisions that were superseded before the cutoff (already hidden from current
    #: queries).
    decisions_superseded: int
    #: Cancelled tasks retired.
    tasks_retired: int


class ContextOut(TypedDict):
    """A context block."""
    #: The text to read.
    context: str
    #: The memories in it, in order.
    ids: List[str]
    #: Items that did not fit the budget.
    left_out: int
    #: Its size in tokens (never above the budget).
    tokens: int


class One(TypedDict):
    """One record."""
    #: The record.
    record: Record


class Entries(TypedDict):
    """Records."""
    #: In the operation's order.
    entries: List[Record]


class Transcript(TypedDict):
    """A conversation and its messages."""
    #: The conversation.
    conversation: One
    #: Its messages, in order.
    messages: Entries


class NamespaceStats(TypedDict):
    """Statistics of one namespace."""
    #: Records valid now or later, as known now, per kind.
    current: Dict[str, int]
    #: The namespace.
    namespace: str
    #: Records (all revisions of a record count once; forgotten ones not at all).
    records: int
    #: Revisions stored.
    revisions: int


class Backlog(TypedDict):
    """The vectors still to attach, as [`crate::Db::embed_backlog`] reports them."""
    #: Vectors attached in the background since the database was opened.
    attached: int
    #: Whether written records get their vectors in the background (see
    #: [`crate::DbBuilder::defer_embeddings`]).
    deferred: bool
    #: The most records that wait before writers wait for room.
    limit: int
    #: How long the oldest of them has waited, in milliseconds.
    oldest_ms: int
    #: Records committed whose vectors are not attached yet.
    pending: int


class Stats(TypedDict):
    """Statistics of a database."""
    #: Commits so far.
    commits: int
    #: The embedder (model id) records are embedded with.
    embedder: str
    #: Its size in bytes.
    file_bytes: int
    #: The format version.
    format_version: int
    #: The latest transaction time, if anything was written.
    last_commit: Optional[str]
    #: Per namespace.
    namespaces: List[NamespaceStats]
    #: The file.
    path: str
    #: Row counts of the internal tables.
    tables: Dict[str, int]
    #: Vector spaces and their dimensions.
    vector_spaces: List[Tuple[str, int]]
    #: The records whose vectors are still being attached in the background (see
    #: [`crate::DbBuilder::defer_embeddings`]).
    vectors_pending: Backlog


class Ensured(TypedDict):
    """An entity found or made."""
    #: Whether it was made now.
    created: bool
    #: Its id.
    id: str


class Access(TypedDict):
    """An access count: how often, and when last."""
    #: Times returned by a query.
    count: int
    #: When last returned.
    last: Optional[str]


class EpisodeContext(TypedDict):
    """What [`Episodes::context`] selected."""
    #: The episodes in it, in order.
    ids: List[str]
    #: The rendered block.
    text: str
    #: Its estimated size in tokens (about four characters each).
    tokens: int


class Retired(TypedDict):
    """How many records an upkeep retired."""
    #: Records retired (their history stays).
    retired: int


class EpisodeHit(TypedDict):
    """An episode found, with how often episodes queries returned it."""
    #: Times returned by a query, this one included.
    access_count: int
    #: When last returned.
    last_accessed_at: Optional[str]
    #: The episode.
    record: Record


class EpisodesDict(TypedDict):
    """Episodes found."""
    #: Best first.
    episodes: List[EpisodeHit]


class Erased(TypedDict):
    """What was erased."""
    #: The audit record in namespace `mnemon:erasures` (none when nothing matched).
    audit: Optional[str]
    #: Records erased.
    records: int
    #: Their revisions, all erased.
    revisions: int


class _ForgottenRequired(TypedDict):
    #: The memory.
    id: str


class Forgotten(_ForgottenRequired, total=False):
    """What `forget` did."""
    #: How many revisions were erased (with `erase`).
    erased_revisions: Optional[int]
    #: Whether it was retired (valid until now, kept in the history).
    retired: Optional[bool]


class GotRecords(TypedDict):
    """Records by id, in the order asked."""
    #: One per id asked, in order: the record, or null when none is visible then (unknown,
    #: not yet known, or not valid at that time).
    records: List[Optional[Record]]


class GraphLines(TypedDict):
    """A knowledge graph as JSON lines."""
    #: The lines, each ending in a line break: entities with their observations, then
    #: relations, as the reference memory server writes its file.
    jsonl: str


class ImportSummary(TypedDict):
    """What an import did."""
    #: Lines or entries refused, with file and line.
    errors: List[str]
    #: Records written.
    imported: int
    #: Lines or entries already present (nothing written).
    skipped: int


class Revisions(TypedDict):
    """A memory's revisions."""
    #: Oldest first.
    revisions: List[Record]


class BuildReport(TypedDict):
    """What a build or publish did."""
    #: The generation published (None: not published).
    generation: Optional[int]
    #: Points in the new graph.
    graph_points: int
    #: The namespace.
    namespace: str
    #: The vector space.
    space: str


class SegmentStatus(TypedDict):
    """One segment's state (for `stats` and tests)."""
    #: The commit the segment reflects.
    covered_seq: int
    #: Dimension.
    dimension: int
    #: The published generation (0: never published).
    generation: int
    #: Points in the graph.
    graph_points: int
    #: Live now.
    live: int
    #: Why a persisted graph was not used, if it was not.
    load_note: Optional[str]
    #: The namespace.
    namespace: str
    #: The vector space.
    space: str
    #: Graph points no longer live.
    tombstones: int
    #: Live points not in the graph yet.
    unindexed: int
    #: Vectors held (all revisions, not forgotten).
    vectors: int


class Indexes(TypedDict):
    """The state of every (space, namespace) index the session reaches."""
    #: By space and namespace.
    segments: List[SegmentStatus]


class Learned(TypedDict):
    """Role knowledge learned."""
    #: The entry.
    id: str
    #: Whether a similar entry was reinforced instead of a new one written.
    reinforced: bool


class Linked(TypedDict):
    """A task and a decision, linked."""
    #: The decision now.
    decision: One
    #: The task now.
    task: One


class _RecordsRequired(TypedDict):
    #: The records, newest first.
    records: List[Record]


class Records(_RecordsRequired, total=False):
    """Records, as of the asked time."""
    #: Present when more records follow: pass it as `cursor` for the next page.
    next_cursor: Optional[str]


class _MemoryAddedRequired(TypedDict):
    #: The entry's id.
    id: str
    #: The namespace of its scope.
    namespace: str
    #: `written` (new), `existing` (the same entry was there) or `superseded` (a pattern of
    #: that name said something else and was replaced).
    outcome: str
    #: The section it went to.
    section: str


class MemoryAdded(_MemoryAddedRequired, total=False):
    """What `memory_add` did."""
    #: The entry it replaced, when it superseded one.
    supersedes: Optional[str]


class Cleared(TypedDict):
    """How many entries were cleared."""
    #: Entries retired (the brief included).
    cleared: int


class Imported(TypedDict):
    """What an import wrote."""
    #: Entries written.
    imported: int
    #: Entries already there (by id), left as they were.
    skipped: int


class GraphImported(TypedDict):
    """What a graph import wrote."""
    #: Entries written (observations already there are not written again).
    imported: int


class ProjectSummary(TypedDict):
    """A project known to the memory."""
    #: Current entries.
    entries: int
    #: Whether it has a brief.
    has_brief: bool
    #: Its id (`<hash>-<basename>`).
    id: str


class Projects(TypedDict):
    """Projects with scoped memory."""
    #: By id.
    projects: List[ProjectSummary]


class Pruned(TypedDict):
    """Expired entries closed."""
    #: How many per namespace.
    by_namespace: Dict[str, int]
    #: How many in all.
    pruned: int


class SectionEntry(TypedDict):
    """An entry of a section."""
    #: The entry as its section writes it (`error → solution`, `name: description`).
    line: str
    #: The record.
    record: Record


class SectionEntries(TypedDict):
    """One section's entries."""
    #: Its current entries, newest first.
    entries: List[SectionEntry]
    #: The section.
    section: str


class MemoryShown(TypedDict):
    """A scope's memory."""
    #: The project brief, if any.
    brief: Optional[str]
    #: The namespace of the scope.
    namespace: str
    #: The sections asked for.
    sections: List[SectionEntries]


class NamespaceNames(TypedDict):
    """The namespaces."""
    #: Their names, in order.
    namespaces: List[str]


class Learnings(TypedDict):
    """The learnings log."""
    #: The learnings, oldest first.
    entries: List[Record]
    #: The same as the readable markdown log (`## date`, `### [agent] time`, the text).
    markdown: str


class PatternAdded(TypedDict):
    """A pattern added, or the one already known."""
    #: Whether a pattern with the same title or a similar description was there (its example
    #: filled in if it had none); nothing new was written.
    existing: bool
    #: Its id.
    id: str


class Group(TypedDict):
    """Records of one kind."""
    #: The kind.
    kind: str
    #: Its records.
    records: List[Record]


class Groups(TypedDict):
    """Records by kind."""
    #: One group per kind that has any, in the kinds' order.
    groups: List[Group]


class PruneReport(TypedDict):
    """What [`Db::prune`] found (and, unless dry, did)."""
    #: Whether nothing was changed.
    dry_run: bool
    #: Episodes past their age.
    episodes_aged: int
    #: Episodes over the cap.
    episodes_capped: int
    #: Records whose TTL ran out (retired at their expiry, or forgotten).
    expired: int
    #: Whether pruned records were erased rather than retired.
    forgotten: bool


class Hits(TypedDict):
    """What `recall` found."""
    #: Best first.
    hits: List[Hit]


class Reindexed(TypedDict):
    """What a reindex did."""
    #: Calls to the embedder for written texts: concurrent writers' texts share calls, so
    #: `misses / calls` is the texts a call embedded on average.
    calls: int
    #: The embedder's model.
    embedder: str
    #: Texts whose embedding failed (their records were stored without a vector).
    failures: int
    #: Texts found in the cache.
    hits: int
    #: Texts embedded.
    misses: int


class Remembered(TypedDict):
    """What `remember` answers."""
    #: Whether a live memory of the same identity (an entity's name, a pattern's title in its
    #: scope...) already held it: its id is returned and nothing was written.
    existing: bool
    #: The memory's id.
    id: str
    #: Its kind.
    kind: str


class DomainStats(TypedDict):
    """What [`Ns::domain_stats`] counts (records valid now)."""
    #: Mean time from a task's valid_from to its completion, in seconds.
    average_completion_secs: Optional[float]
    #: Records per kind.
    by_kind: Dict[str, int]
    #: Decisions per status.
    decisions_by_status: Dict[str, int]
    #: Entities per type.
    entities_by_type: Dict[str, int]
    #: The ten most mentioned entities (name, mentions).
    most_mentioned: List[Tuple[str, int]]
    #: Records per tag.
    tags: Dict[str, int]
    #: Tasks per priority.
    tasks_by_priority: Dict[str, int]
    #: Tasks per status.
    tasks_by_status: Dict[str, int]
    #: Open tasks past their due date.
    tasks_overdue: int


class Superseded(TypedDict):
    """The two ends of a supersession."""
    #: Its replacement.
    new: str
    #: The memory replaced.
    old: str


class TaskMoved(TypedDict):
    """A task after its move."""
    #: The task.
    id: str
    #: Its fields now (status, title, dependencies...).
    task: Any


class Readiness(TypedDict):
    """Whether a task can start, and what it waits for."""
    #: Every dependency is completed.
    ready: bool
    #: The dependencies not completed yet.
    waiting_on: List[str]


class TaskDeps(TypedDict):
    """A task and what it depends on."""
    #: The tasks it waits for.
    dependencies: List[str]
    #: The task.
    id: str


class Graph(TypedDict):
    """Every current task with its dependencies."""
    #: By task id.
    tasks: List[TaskDeps]


SearchPath = Literal["empty", "exact", "graph", "graph-overfetch", "graph-filtered"]
#: ``empty``: Nothing to search.; ``exact``: The exact scan over every candidate.; ``graph``: The
#: graph (dead points filtered inside the search), plus the exact scan of points newer than the
#: graph.; ``graph-overfetch``: The graph asked for more than k, then filtered.; ``graph-
#: filtered``: The graph with the filter applied inside the search.


class Plan(TypedDict):
    """What the planner decided and saw (for tests and `--explain`)."""
    #: Candidates (records with a vector that match the filter and time).
    candidates: int
    #: ef used.
    ef: int
    #: The path tried first when it fell back.
    first: Optional[SearchPath]
    #: Points in the graph (0: no graph).
    graph_points: int
    #: The path that produced the results (after any fallback).
    path: SearchPath
    #: Hits dropped because the snapshot no longer had them as they were.
    rejected: int
    #: Share of the graph the filter keeps.
    selectivity: float
    #: Live points newer than the graph, scanned exactly.
    unindexed: int


class _NearestRequired(TypedDict):
    #: Records with a vector that matched the filter and time.
    candidates: int
    #: Best first.
    hits: List[Hit]
    #: The path that answered: exact, graph or filtered graph.
    path: str


class Nearest(_NearestRequired, total=False):
    """What a vector search found, and how."""
    #: The plan in full: how the planner chose the path, and what it saw.
    plan: Optional[Plan]


TaskAction = Literal["start", "complete", "block", "unblock", "cancel", "plan"]
#: ``start``: In progress.; ``complete``: Done (final).; ``block``: Blocked, with the reason.;
#: ``unblock``: Back to the status before the block.; ``cancel``: Cancelled (final), optionally
#: with a reason.; ``plan``: Planned.


Priority = Literal["critical", "high", "medium", "low"]
#: ``critical``: Must be done first.; ``high``: High.; ``medium``: Medium.; ``low``: Low.


TaskStatus = Literal["backlog", "planned", "in_progress", "blocked", "completed", "cancelled"]
#: ``backlog``: Not yet planned.; ``planned``: Planned.; ``in_progress``: Being worked on.;
#: ``blocked``: Blocked (see `blocked_by`).; ``completed``: Done.; ``cancelled``: Abandoned.


DecisionStatus = Literal["proposed", "accepted", "rejected", "superseded", "deprecated"]
#: ``proposed``: Proposed, not yet accepted.; ``accepted``: Accepted and in force.; ``rejected``:
#: Rejected.; ``superseded``: Replaced by a later decision.; ``deprecated``: No longer
#: recommended, not replaced.


SectionArg = Literal["learnings", "errors", "patterns", "preferences"]
#: ``learnings``: What was learned.; ``errors``: Errors and their solutions (`error →
#: solution`).; ``patterns``: Patterns (`name: description`; one per name, a new description
#: supersedes).; ``preferences``: Preferences.


Role = Literal["user", "assistant", "system", "tool"]
#: ``user``: The user.; ``assistant``: The assistant.; ``system``: The system.; ``tool``: A tool.


Severity = Literal["low", "medium", "high", "critical"]
#: ``low``: Low.; ``medium``: Medium.; ``high``: High: shown first in context blocks.;
#: ``critical``: Critical.


Kind = Literal[
    "decision",
    "task",
    "entity",
    "relation",
    "observation",
    "pattern",
    "gotcha",
    "learning",
    "error_fix",
    "episode",
    "knowledge",
    "preference",
    "brief",
    "conversation",
    "message",
    "metrics",
]
#: What sort of memory a record is.


VectorMode = Literal["auto", "exact", "graph"]
#: ``auto``: The planner decides (default).; ``exact``: The exact scan of every candidate.;
#: ``graph``: The graph whenever there is one.
