"""`where`: filters over metadata and envelope fields evaluated by the engine, on both
transports: a filtered list or search is full when enough records pass; bad filters name the
part."""

from __future__ import annotations

import pytest

import mnemon


@pytest.fixture
def filled(ns: mnemon.Namespace) -> mnemon.Namespace:
    ns.add_many(
        [
            {
                "kind": "learning",
                "text": f"memory number {i} about the user's preferences",
                "importance": 1 + i % 5,
                "tags": ["pii"] if i % 7 == 0 else [],
                "metadata": {"user_id": "42" if i % 25 == 0 else "7", "score": i / 200},
            }
            for i in range(200)
        ]
    )
    return ns


def test_where_in_list_and_search(filled: mnemon.Namespace) -> None:
    mine = list(filled.list(where={"user_id": "42"}, page_size=3))
    assert len(mine) == 8 and all(r.metadata["user_id"] == "42" for r in mine)
    assert len(list(filled.list(where={"user_id": "42"}, limit=5))) == 5
    assert len(list(filled.list(where={"$or": [{"user_id": "42"}, {"tags": "pii"}], "importance": {"$gte": 1}}))) == 8 + 29 - 2
    assert len(list(filled.list(where={"score": {"$gte": 0.5, "$lt": 0.6}}))) == 20
    hits = filled.search("memory about preferences", limit=8, where={"user_id": "42"})
    assert len(hits) == 8 and {h.record.metadata["user_id"] for h in hits} == {"42"}
    assert filled.search("memory", where={"user_id": "nobody"}) == []


def test_where_in_context(filled: mnemon.Namespace) -> None:
    block = filled.context("the user's preferences", where={"user_id": "42"})
    assert block.ids and all(filled.get(i).metadata["user_id"] == "42" for i in block.ids)
    assert "memory number 25 " in block or "memory number 50 " in block
    everyone = filled.context("the user's preferences")
    assert any(filled.get(i).metadata["user_id"] == "7" for i in everyone.ids)
    with pytest.raises(mnemon.InvalidInput, match=r"where\.score\.\$gt"):
        filled.context("x", where={"score": {"$gt": "high"}})


def test_bad_filters_name_the_part(filled: mnemon.Namespace) -> None:
    with pytest.raises(mnemon.InvalidInput, match=r"where\.importance\.\$gt"):
        list(filled.list(where={"importance": {"$gt": "high"}}))
    with pytest.raises(mnemon.InvalidInput, match=r"where\.\$or\[0\]"):
        filled.search("x", where={"$or": ["nope"]})
