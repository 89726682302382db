"""Records, time travel on both axes, search and context: every test runs on a file and
through a server."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

import mnemon

UTC = dt.timezone.utc


def test_add_get_list(ns: mnemon.Namespace) -> None:
    rid = ns.add("decision", {"title": "Use redb", "rationale": "embedded"}, valid_from="2024-02-01", tags=["storage"])
    assert isinstance(rid, str) and uuid.UUID(rid)
    r = ns.get(rid)
    assert isinstance(r, mnemon.Record)
    assert (r.id, r.kind, r.namespace, r.status, r.rev) == (rid, "decision", "project:demo", "active", 0)
    assert r.title == "Use redb" and r["rationale"] == "embedded" and "title" in r
    assert r.body["title"] == "Use redb" and r.get("missing", 7) == 7
    assert r.tags == ("storage",)
    assert r.valid_from == dt.datetime(2024, 2, 1, tzinfo=UTC)
    assert r.valid_until is None and r.replaced_at is None
    assert r.recorded_at.tzinfo is not None and r.recorded_at <= dt.datetime.now(UTC)
    assert "Use redb" in r.text
    assert r.to_dict()["body"]["title"] == "Use redb"
    assert "Use redb" in repr(r)
    # ids: strings, UUIDs, records, a unique head of the digits.
    assert ns.get(uuid.UUID(rid)).id == rid
    assert ns.get(r).id == rid
    assert ns.get(rid[:13]).id == rid
    # Text as the data, and the envelope's keywords.
    lid = ns.add("learning", "retries need jitter", importance=4, source="dev-1", metadata={"pr": 7})
    learning = ns.get(lid)
    assert learning.importance == 4 and learning.source == "dev-1" and learning.metadata == {"pr": 7}
    kinds = [x.kind for x in ns.list()]
    assert sorted(kinds) == ["decision", "learning"]
    assert [x.id for x in ns.list("decision")] == [rid]
    assert [x.id for x in ns.list(tags="storage")] == [rid]
    assert list(ns.list("task")) == []
    assert [r.id for r in ns.tagged("storage")] == [rid]
    assert ns.tagged("nothing") == []


def test_records_are_immutable(ns: mnemon.Namespace) -> None:
    r = ns.get(ns.add("gotcha", {"title": "fsync", "problem": "slow", "solution": "batch"}))
    with pytest.raises(AttributeError):
        r.title = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        r.nope
    with pytest.raises(TypeError):
        r.body["title"] = "other"  # type: ignore[index]
    assert r == ns.get(r.id) and hash(r) == hash(ns.get(r.id))


def test_list_pages_through_everything(ns: mnemon.Namespace) -> None:
    ids = {ns.add("learning", f"fact number {i}") for i in range(23)}
    listed = list(ns.list("learning", page_size=5))
    assert {r.id for r in listed} == ids and len(listed) == 23
    assert len(list(ns.list("learning", limit=7, page_size=3))) == 7
    assert len(list(ns.list(limit=0))) == 0
    it = ns.list()
    assert iter(it) is it


def test_time_travel_on_both_axes(ns: mnemon.Namespace) -> None:
    old = ns.add("decision", {"title": "Use SQLite"}, valid_from="2024-01-01")
    new = ns.supersede(old, {"title": "Use redb"}, at=dt.datetime(2024, 6, 1, tzinfo=UTC))
    # Valid time: what was true then.
    assert [r.title for r in ns.list("decision", as_of="2024-03-01")] == ["Use SQLite"]
    assert [r.title for r in ns.list("decision", as_of=dt.date(2024, 7, 1))] == ["Use redb"]
    assert list(ns.list("decision", as_of="2023-12-31")) == []
    assert ns.get(old, as_of="2024-03-01").status == "active"
    with pytest.raises(mnemon.NotFound, match="superseded"):
        ns.get(old)
    assert ns.history(old)[-1].valid_until == dt.datetime(2024, 6, 1, tzinfo=UTC)
    # Transaction time: what we knew then. Before the supersession was recorded, the old
    # decision was still open-ended, even for a valid time after June.
    recorded = ns.get(new).recorded_at
    before = recorded - dt.timedelta(microseconds=1)
    assert [r.title for r in ns.list("decision", as_of="2024-07-01", known_at=before)] == ["Use SQLite"]
    assert ns.get(old, as_of="2024-07-01", known_at=before).status == "active"
    with pytest.raises(mnemon.NotFound):
        ns.get(new, known_at=before)
    # An aware datetime in another zone is the same instant.
    plus2 = dt.timezone(dt.timedelta(hours=2))
    assert [r.title for r in ns.list("decision", as_of=dt.datetime(2024, 6, 1, 1, 0, tzinfo=plus2))] == ["Use SQLite"]
    # History and chain: how it came to be.
    assert [r.title for r in ns.chain(new)] == ["Use SQLite", "Use redb"]
    assert [r.status for r in ns.history(old)] == ["active", "superseded"]
    assert ns.search("redb", as_of="2024-03-01") == []


def test_naive_datetimes_are_refused(ns: mnemon.Namespace) -> None:
    with pytest.raises(mnemon.InvalidInput, match="naive"):
        ns.list(as_of=dt.datetime(2024, 1, 1))
    with pytest.raises(mnemon.InvalidInput, match="naive"):
        ns.add("learning", "x", valid_from=dt.datetime(2024, 1, 1))
    with pytest.raises(ValueError):
        ns.get("whatever", as_of=dt.datetime(2024, 1, 1))
    with pytest.raises(mnemon.InvalidInput):
        ns.list(as_of=20240101)  # type: ignore[arg-type]


def test_revise_retire_expire_forget(ns: mnemon.Namespace) -> None:
    rid = ns.add("task", {"title": "Benchmark", "priority": "low"})
    assert ns.revise(rid, {"priority": "high"}) == 1
    assert ns.revise(rid, description="against SQLite") == 2
    r = ns.get(rid)
    assert (r.priority, r.description, r.rev) == ("high", "against SQLite", 2)
    assert [h.rev for h in ns.history(rid)] == [0, 1, 2]
    ns.retire(rid, at="2030-01-01")
    assert ns.get(rid).valid_until == dt.datetime(2030, 1, 1, tzinfo=UTC)
    other = ns.add("learning", "temporary")
    ns.expire(other)
    with pytest.raises(mnemon.NotFound, match="expired"):
        ns.get(other)
    gone = ns.add("learning", "a secret that must go")
    done = ns.forget(gone, erase=True)
    assert done["id"] == gone
    with pytest.raises(mnemon.NotFound):
        ns.get(gone)
    with pytest.raises(mnemon.NotFound):
        ns.history(gone)


def test_search_finds_only_what_matches(ns: mnemon.Namespace) -> None:
    a = ns.add("gotcha", {"title": "redb needs the file to itself", "problem": "locks", "solution": "shared"})
    ns.add("learning", "kubernetes pods restart on OOM")
    hits = ns.search("redb file")
    assert hits and hits[0].record.id == a and isinstance(hits[0], mnemon.Hit)
    assert 0 < hits[0].score <= 1
    assert hits[0].to_dict()["record"]["id"] == a
    assert ns.search("zzzqqq") == []
    lexical = ns.search("kubernetes", mode="lexical", explain=True)
    assert [h.record.kind for h in lexical] == ["learning"] and lexical[0].explain["lexical_rank"] == 1
    assert ns.search("redb", kinds="learning") == []
    assert len(ns.search("redb OR kubernetes OR file", limit=1)) <= 1
    with pytest.raises(mnemon.InvalidInput):
        ns.search("redb", mode="psychic")


def test_search_in_other_namespaces(db: mnemon.Db) -> None:
    db.ns("project:a").add("learning", "alpha uses redb")
    db.ns("project:b").add("learning", "beta uses redb too")
    assert [h.record.namespace for h in db.ns("project:a").search("redb")] == ["project:a"]
    both = db.ns("project:a").search("redb", also=["project:b"])
    assert sorted(h.record.namespace for h in both) == ["project:a", "project:b"]


def test_context_block(ns: mnemon.Namespace) -> None:
    d = ns.add("decision", {"title": "Use redb", "rationale": "embedded"}, valid_from="2024-02-01")
    block = ns.context("storage engine", budget=500)
    assert isinstance(block, str) and "Use redb" in block
    assert block.tokens <= 500 and d in block.ids and block.left_out == 0
    assert block.to_dict()["context"] == block.text
    xml = ns.context(format="xml")
    assert xml.startswith("<mnemon-context")
    assert "Use redb" not in ns.context(as_of="2024-01-01")
    assert ns.context(budget=0).tokens == 0


def test_generic_call(ns: mnemon.Namespace) -> None:
    made = ns.call("remember", kind="learning", text="generic calls work")
    assert set(made) >= {"id", "kind", "existing"}
    got = ns.call("get", id=made["id"])
    assert isinstance(got["record"], mnemon.Record)
    assert "remember" in mnemon.operations() and "recall" in mnemon.operations()
    with pytest.raises(mnemon.InvalidInput, match="no operation"):
        ns.call("teleport")
    with pytest.raises(mnemon.InvalidInput, match="invalid arguments"):
        ns.call("get", identifier="x")


def test_export_import_round_trip(db: mnemon.Db, ns: mnemon.Namespace, tmp_path) -> None:
    first = ns.add("decision", {"title": "Use redb"}, valid_from="2024-02-01")
    ns.supersede(first, {"title": "Use redb 4"}, at="2024-06-01")
    ns.add("learning", "kept across files")
    path = tmp_path / "dump.jsonl"
    assert db.export(path, namespace="project:demo") == 4
    with mnemon.open(tmp_path / "copy.redb", embedder="hash") as copy:
        report = copy.import_(path)
        assert report["restored"] >= 3 and report["failed"] == []
        again = copy.ns("project:demo")
        assert [r.title for r in again.list("decision", as_of="2024-03-01")] == ["Use redb"]
        assert {r.text for r in again.list("learning")} == {"kept across files"}
        assert again.history(first)[0].recorded_at == ns.history(first)[0].recorded_at
    loose = tmp_path / "loose.jsonl"
    loose.write_text('{"kind":"learning","text":"loose line"}\n{"kind":"nonsense"}\n')
    with pytest.raises(mnemon.InvalidInput):
        db.import_(loose, namespace="project:loose")
    report = db.import_(loose, namespace="project:loose", partial=True)
    assert report["created"] == 1 and len(report["failed"]) == 1 and ":2:" in report["failed"][0]
    assert [r.text for r in db.ns("project:loose").list()] == ["loose line"]


def test_stats(db: mnemon.Db, ns: mnemon.Namespace) -> None:
    ns.add("learning", "counted")
    assert ns.stats()
    names = [n["namespace"] for n in db.stats()["namespaces"]]
    assert "project:demo" in names


def test_closed_handle(db: mnemon.Db) -> None:
    ns = db.ns("project:demo")
    db.close()
    db.close()
    assert db.closed
    with pytest.raises(mnemon.Unavailable, match="closed"):
        ns.add("learning", "too late")
    assert "closed" in repr(db)
