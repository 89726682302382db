"""The LangGraph store, with the pinned langgraph package: every operation of BaseStore
(get, put, delete, search with query, filters and paging, list_namespaces with conditions and
depth, TTL, batch and abatch) and reading the store as of a past time; on a file and through a
server."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time

import pytest
from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, MatchCondition, PutOp, SearchItem, SearchOp

import mnemon
from mnemon.langgraph import MnemonStore

UTC = dt.timezone.utc


@pytest.fixture
def store(db: mnemon.Db) -> MnemonStore:
    return MnemonStore(db)


def test_is_a_base_store(store: MnemonStore) -> None:
    assert isinstance(store, BaseStore) and store.supports_ttl


def test_put_get_update_delete(store: MnemonStore) -> None:
    ns = ("users", "42", "memories")
    assert store.get(ns, "food") is None
    store.put(ns, "food", {"likes": "pizza", "n": 1, "none": None, "nested": {"a": [1, 2]}})
    item = store.get(ns, "food")
    assert isinstance(item, Item)
    assert item.value == {"likes": "pizza", "n": 1, "none": None, "nested": {"a": [1, 2]}}
    assert (item.key, item.namespace) == ("food", ns)
    assert item.created_at.tzinfo is not None and item.created_at <= item.updated_at
    time.sleep(0.01)
    store.put(ns, "food", {"likes": "sushi"})
    again = store.get(ns, "food")
    assert again.value == {"likes": "sushi"}  # replaced, not merged
    assert again.created_at == item.created_at and again.updated_at > item.updated_at
    assert [i.value["likes"] for i in store.history(ns, "food")] == ["pizza", "sushi"]
    # Keys and labels with any characters; a key is case-sensitive.
    odd = ("a/b", "100%", "ünï cödé")
    store.put(odd, "Key/With Slash", {"x": 1})
    store.put(odd, "key/with slash", {"x": 2})
    assert store.get(odd, "Key/With Slash").value == {"x": 1}
    assert store.get(odd, "key/with slash").value == {"x": 2}
    store.delete(ns, "food")
    assert store.get(ns, "food") is None
    store.delete(ns, "never-there")
    store.put(ns, "food", {"likes": "ramen"})
    assert store.get(ns, "food").value == {"likes": "ramen"}
    with pytest.raises(mnemon.InvalidInput):
        store.put(ns, "bad", {"when": object()})


def test_search(store: MnemonStore) -> None:
    store.put(("docs", "a"), "1", {"text": "redb is an embedded key value store", "lang": "rust", "stars": 5})
    store.put(("docs", "a"), "2", {"text": "kubernetes schedules pods", "lang": "go", "stars": 3})
    store.put(("docs", "b"), "3", {"text": "sqlite is an embedded database", "lang": "c", "stars": 4})
    store.put(("other",), "4", {"text": "embedded systems", "lang": "c", "stars": 1})
    store.put(("docs", "b"), "5", {"text": "hidden from search", "secret": "embedded"}, index=["text"])
    # By query: only what matches, best first, within the prefix.
    hits = store.search(("docs",), query="embedded store")
    assert hits and all(isinstance(h, SearchItem) and h.score is not None for h in hits)
    assert hits[0].key == "1"
    assert {h.key for h in hits} <= {"1", "3"} and "2" not in {h.key for h in hits}
    assert store.search(("docs",), query="zzzqqq") == []
    assert [h.key for h in store.search(("docs", "b"), query="embedded")] == ["3"]
    # By filter: equality, operators, nested.
    assert {h.key for h in store.search(("docs",), filter={"lang": "rust"})} == {"1"}
    assert {h.key for h in store.search(("docs",), filter={"stars": {"$gte": 4}})} == {"1", "3"}
    assert {h.key for h in store.search(("docs",), filter={"stars": {"$lt": 4, "$ne": 1}})} == {"2"}
    assert {h.key for h in store.search(("docs",), query="embedded", filter={"lang": "c"})} == {"3"}
    # Everything under a prefix, and paging.
    everything = store.search(())
    assert {h.key for h in everything} == {"1", "2", "3", "4", "5"}
    assert all(h.score is None for h in everything)
    page1 = store.search(("docs",), limit=2)
    page2 = store.search(("docs",), limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2 and not {h.key for h in page1} & {h.key for h in page2}
    assert store.search(("nothing",)) == []
    # A prefix matches whole labels only.
    store.put(("docsx",), "6", {"text": "embedded"})
    assert "6" not in {h.key for h in store.search(("docs",))}


def test_list_namespaces(store: MnemonStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "e")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"), ("x", "b", "c")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "e"), ("x", "b")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "e")]
    ops = [ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("a",)), MatchCondition("suffix", ("d",))))]
    assert store.batch(ops) == [[("a", "b", "d")]]


def test_ttl(db: mnemon.Db) -> None:
    store = MnemonStore(db, ttl={"default_ttl": 0.05, "refresh_on_read": True})  # 3 s
    store.put(("t",), "short", {"v": 1})
    store.put(("t",), "forever", {"v": 2}, ttl=None)
    store.put(("t",), "long", {"v": 3}, ttl=60)
    assert store.get(("t",), "short").value == {"v": 1}
    # Delays on a busy machine only make the reads later: each margin is 1 s the safe way.
    time.sleep(2.0)
    assert store.get(("t",), "short") is not None  # read: its expiry moves 3 s on
    time.sleep(2.0)
    assert store.get(("t",), "short", refresh_ttl=False) is not None
    time.sleep(1.5)
    assert store.get(("t",), "short") is None
    assert {h.key for h in store.search(("t",))} == {"forever", "long"}


def test_batch_and_abatch(store: MnemonStore) -> None:
    ns = ("b",)
    results = store.batch(
        [
            PutOp(ns, "k1", {"v": 1}),
            GetOp(ns, "k1"),  # reads see the store before the batch's puts
            PutOp(ns, "k2", {"v": 2}),
            PutOp(ns, "k2", {"v": 3}),  # the last put of a key wins
            ListNamespacesOp(),
        ]
    )
    assert results[0] is None and results[1] is None and results[2] is None
    assert store.get(ns, "k2").value == {"v": 3}

    async def run() -> list:
        await store.aput(ns, "k3", {"v": 4})
        return await store.abatch([GetOp(ns, "k3"), SearchOp(ns, filter={"v": 4})])

    got, found = asyncio.run(run())
    assert got.value == {"v": 4} and [h.key for h in found] == ["k3"]
    assert asyncio.run(store.aget(ns, "k1")).value == {"v": 1}


def test_as_of_a_past_time(store: MnemonStore) -> None:
    ns = ("users", "1")
    store.put(ns, "city", {"name": "Lyon"})
    store.put(ns, "job", {"title": "baker"})
    time.sleep(0.01)
    then = dt.datetime.now(UTC)
    time.sleep(0.01)
    store.put(ns, "city", {"name": "Oslo"})
    store.delete(ns, "job")
    store.put(ns, "pet", {"kind": "cat"})
    past = store.as_of(then)
    assert past.get(ns, "city").value == {"name": "Lyon"}
    assert past.get(ns, "job").value == {"title": "baker"}
    assert past.get(ns, "pet") is None
    assert {h.key for h in past.search(ns)} == {"city", "job"}
    assert [h.key for h in past.search(ns, query="Lyon")] == ["city"]
    assert store.get(ns, "city").value == {"name": "Oslo"} and store.get(ns, "job") is None
    with pytest.raises(mnemon.Forbidden):
        past.put(ns, "city", {"name": "Paris"})


def test_open_owns_its_file(tmp_path) -> None:
    with MnemonStore.open(tmp_path / "lg.redb", embedder="hash") as store:
        store.put(("a",), "k", {"v": 1})
        db = store.db
    assert db.closed
    with MnemonStore.open(tmp_path / "lg.redb") as store:
        assert store.get(("a",), "k").value == {"v": 1}
        # The store's records are mnemon records, visible to the rest of the API.
        assert [r.kind for r in store.db.ns("langgraph:a").list()] == ["learning"]


def _words(texts):
    """A toy embedding function: words hashed into 8 buckets."""
    import hashlib

    out = []
    for t in texts:
        v = [0.0] * 8
        for w in t.lower().split():
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % 8] += 1.0
        out.append(v if any(v) else [1.0] + [0.0] * 7)
    return out


def test_index_config_embeds_the_named_fields_with_your_function(tmp_path) -> None:
    calls = []

    def embed(texts):
        calls.extend(texts)
        return _words(texts)

    with MnemonStore.open(tmp_path / "idx.redb", index={"embed": embed, "dims": 8, "fields": ["title"]}) as store:
        assert store.db.embedder == "python:embed"
        store.put(("docs",), "a", {"title": "green tea", "body": "never embedded"})
        store.put(("docs",), "b", {"title": "black coffee", "body": "green"}, index=["body"])
        store.put(("docs",), "c", {"title": "not searchable"}, index=False)
        assert "green tea" in calls and "never embedded" not in calls and "not searchable" not in calls
        hits = store.search(("docs",), query="green tea", limit=2)
        assert [h.key for h in hits][0] == "a"
    with pytest.raises(mnemon.InvalidInput, match="dims"):
        MnemonStore.open(tmp_path / "d.redb", index={"embed": embed, "dims": 9})
    # A database that embeds otherwise cannot take index['embed'].
    with mnemon.open(tmp_path / "h.redb", embedder="hash") as db:
        with pytest.raises(mnemon.InvalidInput, match="open the file with it"):
            MnemonStore(db, index={"embed": embed, "dims": 8})


def test_a_filtered_search_is_not_short(store: MnemonStore) -> None:
    # 60 items match the query, only every tenth passes the filter: all six come back.
    for i in range(60):
        store.put(("many",), f"k{i}", {"text": f"shared words item {i}", "group": "kept" if i % 10 == 0 else "other"})
    hits = store.search(("many",), query="shared words", filter={"group": "kept"}, limit=6)
    assert sorted(h.key for h in hits) == sorted(f"k{i}" for i in range(0, 60, 10))


def test_filters_reach_the_engine_and_keep_langgraph_semantics(store: MnemonStore, db: mnemon.Db) -> None:
    from mnemon.langgraph import _pushdown

    # String equalities (nested, $eq) go to the engine; the rest stays with the store.
    assert _pushdown({"user": "42", "meta": {"lang": "rust"}, "stars": {"$gt": 3}, "tags": ["a"]}) == {
        "$or": [
            {"metadata.langgraph.doc": {"$exists": False}},
            {"$and": [{"metadata.langgraph.doc.user": "42"}, {"metadata.langgraph.doc.meta.lang": "rust"}]},
        ]
    }
    assert _pushdown({"stars": 3}) is None and _pushdown(None) is None
    for i in range(200):
        store.put(("users",), f"k{i}", {"text": f"likes tea {i}", "user": "42" if i % 50 == 0 else "7", "n": i})
    # An item as an earlier release wrote it (its value as text only) is still found.
    ns = db.ns(store._ns_name(("users",)))  # noqa: SLF001
    old = {"namespace": ["users"], "key": "old", "value": '{"text": "likes tea too", "user": "42", "n": -1}',
           "created_at": "2026-01-01T00:00:00+00:00", "ttl": None}
    from mnemon.langgraph import KIND, TAG, _key_tag

    ns.add(KIND, text="likes tea too", tags=[TAG, _key_tag("old")], metadata={"langgraph": old})
    listed = store.search(("users",), filter={"user": "42"}, limit=10)
    assert sorted(h.key for h in listed) == ["k0", "k100", "k150", "k50", "old"]
    found = store.search(("users",), query="likes tea", filter={"user": "42", "n": {"$gte": 0}}, limit=3)
    assert len(found) == 3 and all(h.value["user"] == "42" and h.value["n"] >= 0 for h in found)
    # LangGraph's semantics, not the engine's: a list is equal only to the same list.
    store.put(("users",), "listy", {"user": ["42"]})
    assert "listy" not in {h.key for h in store.search(("users",), filter={"user": "42"}, limit=20)}
    # The engine was asked: a search through the pushed filter alone finds only the user's.
    engine = list(ns.list(where=_pushdown({"user": "42"})))
    users = sorted(str(json.loads(r.metadata["langgraph"]["value"])["user"]) for r in engine)
    assert users == ["42"] * 5 + ["['42']"]
