"""The domain groups, on a file and through a server."""

from __future__ import annotations

import pytest

import mnemon


def test_tasks(ns: mnemon.Namespace) -> None:
    a = ns.tasks.add("Write the loader", priority="high")
    b = ns.tasks.add("Benchmark it", priority="medium")
    ns.tasks.depend(b, on=a)
    assert ns.tasks.can_start(b)["ready"] is False
    assert ns.tasks.start(a)["task"]["status"] == "in_progress"
    assert ns.tasks.block(a, "waiting for review")["task"]["status"] == "blocked"
    assert ns.tasks.unblock(a)["task"]["status"] == "in_progress"
    assert ns.tasks.complete(a)["task"]["status"] == "completed"
    assert ns.tasks.can_start(b)["ready"] is True
    with pytest.raises(mnemon.Conflict):
        ns.tasks.start(a)
    with pytest.raises(mnemon.Conflict):
        ns.tasks.depend(a, on=b)
    ns.tasks.plan(b)
    assert ns.tasks.cancel(b, "not needed")["task"]["status"] == "cancelled"
    listed = ns.tasks.list(all=True)
    assert {r.id for r in listed["entries"]} >= {a, b}
    assert ns.tasks.graph()
    assert [h.op for h in ns.history(a)][0] == "insert"


def test_decisions(ns: mnemon.Namespace) -> None:
    d = ns.decisions.add("Use redb", "embedded, no server", status="proposed")
    t = ns.tasks.add("Migrate")
    ns.decisions.accept(d)
    assert [r.id for r in ns.decisions.active()["entries"]] == [d]
    ns.decisions.link(d, t)
    assert t in ns.get(d).related_tasks
    ns.decisions.deprecate(d)
    assert ns.get(d).status == "active" and ns.get(d)["status"] == "deprecated"
    ns.decisions.propose(d)
    ns.decisions.reject(d)
    new = ns.decisions.supersede(d, {"title": "Use redb 4"})
    assert [r.title for r in ns.chain(new)] == ["Use redb", "Use redb 4"]


def test_entities(ns: mnemon.Namespace) -> None:
    made = ns.entities.ensure("redb", entity_type="library", description="embedded store")
    again = ns.entities.ensure("redb")
    assert made["id"] == again["id"]
    eid = made["id"]
    ns.entities.set(eid, "license", "MIT or Apache-2.0")
    ns.entities.mention(eid, source="dev-1", context="picked for storage")
    other = ns.entities.ensure("mnemon", entity_type="library")["id"]
    ns.entities.link(eid, other)
    found = ns.entities.find("redb")
    assert found
    assert ns.entities.by_type("library")
    dup = ns.entities.ensure("redb-db", entity_type="library")["id"]
    ns.entities.merge(eid, dup)
    with pytest.raises(mnemon.NotFound):
        ns.get(dup)


def test_episodes(ns: mnemon.Namespace) -> None:
    e = ns.episodes.store("ran the storage benchmark: 10x SQLite", task="bench", importance=4, files=["a.rs"])
    hits = ns.episodes.query("storage benchmark")
    assert hits["episodes"][0]["record"].id == e["id"]
    ns.episodes.access(e["id"])
    assert "benchmark" in ns.episodes.context("bench")["text"]
    assert ns.episodes.prune(days=3650)["retired"] == 0


def test_memory_knowledge_conversations(db: mnemon.Db) -> None:
    ns = db.ns("global")
    added = ns.memory.add("prefer pnpm over npm", section="preferences", scope="global", importance=4)
    assert added["id"]
    shown = ns.memory.show(scope="global")
    assert "pnpm" in str(shown)
    assert "pnpm" in ns.memory.context("package manager", scope="global")["context"]
    ns.memory.brief("A web app", scope="project:/tmp/app")
    assert ns.memory.projects()
    ns.memory.import_markdown("- use ruff\n- use mypy\n", section="learnings", scope="global")
    assert ns.memory.prune() is not None
    graph = '{"type":"entity","name":"redb","entityType":"library","observations":["embedded"]}\n'
    assert db.ns("kg").memory.import_graph(graph)["imported"] == 1
    ns.memory.delete(added["id"], scope="global")
    ns.memory.clear(scope="project:/tmp/app")

    agent = db.ns("agent:dev-1")
    k = agent.knowledge.learn("testing", "run the slow tests last")
    agent.knowledge.reinforce(k["id"])
    assert ["run the slow tests last"] == [r.content for r in agent.knowledge.list()["entries"]]
    assert agent.knowledge.prune("2000-01-01") is not None
    agent.agent.prefer({"style": "terse"})
    assert agent.agent.preferences()["preferences"]["style"] == "terse"
    agent.agent.completed("t1", duration_ms=1200, iterations=2, errors=["one flaky test"], quality_gate_passed=True)
    agent.agent.error("flaky test", resolution="retry once")
    assert agent.agent.performance()
    assert agent.agent.context()

    c = ns.conversations.start("design review")
    ns.conversations.add(c["id"], "user", "should we use redb?")
    ns.conversations.add(c["id"], "assistant", "yes, embedded")
    ns.conversations.end(c["id"], summary="use redb")
    assert [m.content for m in ns.conversations.show(c["id"])["messages"]["entries"]] == ["should we use redb?", "yes, embedded"]
    assert ns.conversations.recent(5)


def test_project_and_vectors(db: mnemon.Db) -> None:
    ns = db.ns("project:1a2b3c4d-app")
    ns.project.pattern({"title": "Retry with jitter", "description": "exponential backoff", "category": "net"})
    assert ns.project.patterns("net")
    ns.project.gotcha({"title": "redb locks the file", "problem": "two processes", "solution": "shared", "severity": "high"})
    assert ns.project.gotchas("high")
    ns.project.relate("api", "depends_on", "storage", description="reads records")
    assert ns.project.relations("api")
    ns.project.learn("batch fsyncs", type="performance", files=["store.rs"])
    assert ns.project.learnings(10)
    assert ns.project.search("jitter")
    assert ns.project.knowledge()

    rid = ns.add("learning", "vectors of our own")
    ns.vectors.put(rid, "mine", [1.0, 0.0, 0.0])
    near = ns.vectors.search("mine", [0.9, 0.1, 0.0], k=3)
    assert str(near).count(rid) >= 1
    with pytest.raises(mnemon.InvalidInput):
        ns.vectors.put(rid, "mine", [1.0, 0.0])
