"""Deferred embeddings from Python: records committed before their vectors, searches that
still find what was just written, the option's rules."""

from __future__ import annotations

from pathlib import Path

import pytest

import mnemon


def test_a_search_finds_what_was_just_written(tmp_path: Path) -> None:
    path = tmp_path / "d.redb"
    with mnemon.open(path, embedder="hash", defer_embeddings=True) as db:
        ns = db.ns("project:q")
        ids = [ns.add("learning", f"note {i} about the deploy queue") for i in range(40)]
        ids += ns.add_many([f"batch note {i} about the deploy queue" for i in range(40)], kind="learning")
        # By meaning only: each record's vector is attached before the search reads.
        hits = ns.search("deploy queue", mode="vector", limit=100, min_score=0)
        assert {h.record.id for h in hits} == set(ids)
        pending = db.stats()["vectors_pending"]
        assert pending["deferred"] is True and pending["limit"] == 1024
        # The same file with the other choice is another engine: refused while this one is open.
        with pytest.raises(mnemon.InvalidInput, match="defer_embeddings=True"):
            mnemon.open(path, embedder="hash", defer_embeddings=False)
    # Closed: every vector attached. The hashing embedder's default is to embed on the write.
    with mnemon.open(path) as db:
        assert db.stats()["vectors_pending"] == {
            "deferred": False, "pending": 0, "oldest_ms": 0, "limit": 0, "attached": 0,
        }
        hits = db.ns("project:q").search("deploy queue", mode="vector", limit=100, min_score=0)
        assert len(hits) == 80


def test_your_own_embedder_is_never_deferred(tmp_path: Path) -> None:
    def embed(texts):
        return [[1.0, float(len(t))] for t in texts]

    with pytest.raises(mnemon.InvalidInput, match="writer's thread"):
        mnemon.open(tmp_path / "o.redb", embedder=embed, defer_embeddings=True)
    with mnemon.open(tmp_path / "o.redb", embedder=embed) as db:
        assert db.stats()["vectors_pending"]["deferred"] is False
