"""The generated surface (scripts/gen-python.py): every method of every domain group is called
once, on a file and through a server, and its answer is checked against the type its
signature declares (the TypedDict generated from the operation's response schema): every
required key there, no key the type does not know, every value of its field's type. The
async twins have the same methods, as coroutines."""

from __future__ import annotations

import asyncio
import inspect
import typing
from typing import Any, Callable, List, Tuple

import pytest

import mnemon
from mnemon import _groups
from mnemon.types import Readiness

def conforms(value: Any, tp: Any, where: str = "answer") -> None:
    """Raise AssertionError naming the place where ``value`` is not of type ``tp``."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return
    if tp is type(None):
        assert value is None, f"{where}: {value!r} is not None"
        return
    if origin is typing.Union:
        errors = []
        for a in args:
            try:
                conforms(value, a, where)
                return
            except AssertionError as e:
                errors.append(str(e))
        raise AssertionError(" / ".join(errors))
    if origin is typing.Literal:
        assert value in args, f"{where}: {value!r} is not one of {args}"
        return
    if origin in (list, typing.List):
        assert isinstance(value, list), f"{where}: {type(value).__name__} is not a list"
        for i, v in enumerate(value):
            conforms(v, args[0], f"{where}[{i}]")
        return
    if origin in (tuple, typing.Tuple):
        assert isinstance(value, (list, tuple)) and len(value) == len(args), f"{where}: {value!r} is not {tp}"
        for i, (v, a) in enumerate(zip(value, args)):
            conforms(v, a, f"{where}[{i}]")
        return
    if origin in (dict, typing.Dict):
        assert isinstance(value, dict), f"{where}: {type(value).__name__} is not a dict"
        for k, v in value.items():
            conforms(v, args[1], f"{where}[{k!r}]")
        return
    if typing.is_typeddict(tp):
        assert isinstance(value, dict), f"{where}: {type(value).__name__} is not a dict ({tp.__name__})"
        hints = typing.get_type_hints(tp)
        missing = tp.__required_keys__ - value.keys()
        assert not missing, f"{where}: {tp.__name__} misses {sorted(missing)}"
        unknown = value.keys() - hints.keys()
        assert not unknown, f"{where}: {tp.__name__} does not know {sorted(unknown)}"
        for k, v in value.items():
            conforms(v, hints[k], f"{where}.{k}")
        return
    if tp is float:
        assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{where}: {value!r} is not a number"
        return
    if tp is int:
        assert isinstance(value, int) and not isinstance(value, bool), f"{where}: {value!r} is not an int"
        return
    assert isinstance(value, tp), f"{where}: {type(value).__name__} is not {tp.__name__}"


def scenario(ns: mnemon.Namespace) -> List[Tuple[str, Callable[[], Any]]]:
    """One call of every group method, in an order where each finds what it needs."""
    t = ns.tasks
    a = t.add("Write the loader", priority="high")
    b = t.add("Benchmark it")
    d = ns.decisions.add("Use redb", "embedded", status="proposed")
    e = ns.entities.ensure("redb", "library")["id"]
    f = ns.entities.ensure("sled", "library")["id"]
    ep = ns.episodes.store("fixed the flaky test by waiting for the port", task="ci")["id"]
    conv = ns.conversations.start("planning")["id"]
    mem = ns.memory.add("retry with backoff", section="learnings", scope="global")["id"]
    k = ns.knowledge.learn("rust", "prefer iterators")["id"]
    return [
        ("tasks.depend", lambda: t.depend(b, a)),
        ("tasks.can_start", lambda: t.can_start(b)),
        ("tasks.plan", lambda: t.plan(a)),
        ("tasks.start", lambda: t.start(a)),
        ("tasks.block", lambda: t.block(a, "review")),
        ("tasks.unblock", lambda: t.unblock(a)),
        ("tasks.move", lambda: t.move(a, "complete")),
        ("tasks.complete", lambda: t.complete(t.add("Small one"))),
        ("tasks.cancel", lambda: t.cancel(b, "not needed")),
        ("tasks.graph", lambda: t.graph()),
        ("tasks.list", lambda: t.list(statuses=["completed", "cancelled"], all=True)),
        ("decisions.set_status", lambda: ns.decisions.set_status(d, "accepted")),
        ("decisions.deprecate", lambda: ns.decisions.deprecate(d)),
        ("decisions.propose", lambda: ns.decisions.propose(d)),
        ("decisions.reject", lambda: ns.decisions.reject(d)),
        ("decisions.accept", lambda: ns.decisions.accept(d)),
        ("decisions.active", lambda: ns.decisions.active()),
        ("decisions.link", lambda: ns.decisions.link(d, a)),
        ("entities.ensure", lambda: ns.entities.ensure("redb")),
        ("entities.find", lambda: ns.entities.find("redb")),
        ("entities.mention", lambda: ns.entities.mention(e, "review", "redb is embedded")),
        ("entities.set", lambda: ns.entities.set(e, "version", 4)),
        ("entities.link", lambda: ns.entities.link(e, f)),
        ("entities.by_type", lambda: ns.entities.by_type("library")),
        ("entities.merge", lambda: ns.entities.merge(e, f)),
        ("episodes.store", lambda: ns.episodes.store("added a retry", summary="retry", importance=4, files=["a.rs"])),
        ("episodes.query", lambda: ns.episodes.query("flaky test", limit=3)),
        ("episodes.context", lambda: ns.episodes.context("ci", query="port")),
        ("episodes.access", lambda: ns.episodes.access(ep)),
        ("episodes.prune", lambda: ns.episodes.prune(days=30)),
        ("memory.add", lambda: ns.memory.add("use uv for venvs", section="preferences")),
        ("memory.show", lambda: ns.memory.show(scope="global")),
        ("memory.context", lambda: ns.memory.context("backoff", scope="global", budget=500)),
        ("memory.brief", lambda: ns.memory.brief("A loader for LoCoMo", scope="project:/tmp/demo")),
        ("memory.projects", lambda: ns.memory.projects()),
        ("memory.import_markdown", lambda: ns.memory.import_markdown("- one\n- two\n", section="learnings")),
        ("memory.import_graph", lambda: ns.memory.import_graph(
            '{"type":"entity","name":"Ada","entityType":"person","observations":["writes Rust"]}\n')),
        ("memory.delete", lambda: ns.memory.delete(mem, scope="global")),
        ("memory.prune", lambda: ns.memory.prune()),
        ("memory.clear", lambda: ns.memory.clear(scope="project:/tmp/demo")),
        ("knowledge.reinforce", lambda: ns.knowledge.reinforce(k)),
        ("knowledge.learn", lambda: ns.knowledge.learn("rust", "clippy before commit")),
        ("knowledge.list", lambda: ns.knowledge.list("rust")),
        ("knowledge.prune", lambda: ns.knowledge.prune("2000-01-01T00:00:00Z")),
        ("conversations.add", lambda: ns.conversations.add(conv, "user", "what next?")),
        ("conversations.show", lambda: ns.conversations.show(conv)),
        ("conversations.end", lambda: ns.conversations.end(conv, "planned")),
        ("conversations.recent", lambda: ns.conversations.recent(5)),
        ("conversations.start", lambda: ns.conversations.start("another")),
        ("project.pattern", lambda: ns.project.pattern({"name": "retry", "description": "retry with backoff",
                                                         "category": "resilience"}, agent="dev")),
        ("project.patterns", lambda: ns.project.patterns()),
        ("project.gotcha", lambda: ns.project.gotcha({"title": "ports", "problem": "flaky", "solution": "wait for the port",
                                                       "severity": "high"})),
        ("project.gotchas", lambda: ns.project.gotchas("high")),
        ("project.relate", lambda: ns.project.relate("loader", "uses", "redb", "stores records")),
        ("project.relations", lambda: ns.project.relations("loader")),
        ("project.learn", lambda: ns.project.learn("the loader needs a warm cache", type="performance")),
        ("project.learnings", lambda: ns.project.learnings(5)),
        ("project.search", lambda: ns.project.search("retry", 5)),
        ("project.knowledge", lambda: ns.project.knowledge()),
        ("agent.prefer", lambda: ns.agent.prefer({"indent": 4})),
        ("agent.preferences", lambda: ns.agent.preferences({"tabs": False})),
        ("agent.completed", lambda: ns.agent.completed("loader", duration_ms=1200, errors=["E0499"])),
        ("agent.error", lambda: ns.agent.error("E0499", "split the borrow")),
        ("agent.performance", lambda: ns.agent.performance()),
        ("agent.context", lambda: ns.agent.context()),
        ("vectors.put", lambda: ns.vectors.put(a, "mine", [1.0, 0.0, 0.0])),
        ("vectors.search", lambda: ns.vectors.search("mine", [1.0, 0.1, 0.0], k=3)),
    ]


def generated_methods() -> List[str]:
    out = []
    for name in dir(_groups):
        cls = getattr(_groups, name)
        if isinstance(cls, type) and issubclass(cls, _groups._Group) and cls is not _groups._Group:
            for m, f in vars(cls).items():
                if callable(f) and not m.startswith("_"):
                    out.append(f"{name.lower()}.{m}")
    return sorted(out)


def test_every_group_method_answers_its_declared_type(ns: mnemon.Namespace) -> None:
    steps = scenario(ns)
    assert sorted(name for name, _ in steps) == generated_methods(), "a group method has no step here"
    for name, step in steps:
        group, method = name.split(".")
        declared = typing.get_type_hints(getattr(getattr(ns, group), method))["return"]
        conforms(step(), declared, name)


def test_a_wrong_answer_is_caught() -> None:
    # The checker itself: a missing key, an unknown key and a wrong type are each refused.
    with pytest.raises(AssertionError, match="misses"):
        conforms({}, Readiness)
    with pytest.raises(AssertionError, match="does not know"):
        conforms({"ready": True, "waiting_on": [], "extra": 1}, Readiness)
    with pytest.raises(AssertionError, match="is not"):
        conforms({"ready": "yes", "waiting_on": []}, Readiness)
    conforms({"ready": True, "waiting_on": ["a"]}, Readiness)


def test_async_groups_mirror_the_sync_ones() -> None:
    for name in dir(_groups):
        cls = getattr(_groups, name)
        if not (isinstance(cls, type) and issubclass(cls, _groups._Group) and cls is not _groups._Group):
            continue
        twin = getattr(_groups, "Async" + name)
        for m, f in inspect.getmembers(cls, callable):
            if m.startswith("_"):
                continue
            af = getattr(twin, m)
            assert inspect.iscoroutinefunction(af), f"Async{name}.{m} is not a coroutine"
            assert inspect.signature(af) == inspect.signature(f), f"Async{name}.{m} takes other arguments"
            assert typing.get_type_hints(af)["return"] == typing.get_type_hints(f)["return"]


def test_async_group_calls_answer_as_the_sync_ones(tmp_path) -> None:
    async def main() -> None:
        async with await mnemon.aopen(tmp_path / "a.redb", embedder="hash") as db:
            ns = db.ns("project:demo")
            a = await ns.tasks.add("Write the loader")
            moved = await ns.tasks.start(a)
            conforms(moved, typing.get_type_hints(_groups.Tasks.start)["return"])
            ready = await ns.tasks.can_start(a)
            conforms(ready, Readiness)
            found = await ns.search("loader")
            assert [h.record.id for h in found] == [a]
            await db.flush()

    asyncio.run(main())
