"""One's own embedder: a function or a LangChain Embeddings object, called by the engine in
batches, its space recorded with its dimension."""

from __future__ import annotations

import hashlib
import itertools
import threading
from pathlib import Path
from typing import List

import pytest

import mnemon

DIM = 16


def bag_of_words(texts: List[str]) -> List[List[float]]:
    """A toy embedding: words hashed into 16 buckets (so that shared words are near)."""
    out = []
    for t in texts:
        v = [0.0] * DIM
        for w in t.lower().split():
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % DIM] += 1.0
        if not any(v):
            v[0] = 1.0
        out.append(v)
    return out


class Calls:
    def __init__(self) -> None:
        self.batches: List[int] = []
        self.lock = threading.Lock()

    def __call__(self, texts: List[str]) -> List[List[float]]:
        with self.lock:
            self.batches.append(len(texts))
        return bag_of_words(texts)


class LangChainLike:
    """What LangChain's Embeddings interface offers."""

    model = "toy-words-v1"

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return bag_of_words(texts)

    def embed_query(self, text: str) -> List[float]:
        return bag_of_words([text])[0]


def test_a_function_embeds_records_and_queries(tmp_path: Path) -> None:
    calls = Calls()
    db = mnemon.open(tmp_path / "own.redb", embedder=calls, embedder_name="toy-words")
    assert db.embedder == "python:toy-words"
    ns = db.ns("p")
    ns.add_many([f"retry with exponential backoff {i}" for i in range(50)] + ["the cache is cold"], kind="learning")
    # One batch for the whole commit (after the probe call at open).
    assert calls.batches[0] == 1 and max(calls.batches[1:]) >= 51
    hits = ns.search("cache cold", mode="vector", limit=3)
    assert hits and hits[0].record.text == "the cache is cold"
    db.close()
    # The space is recorded: another embedder is refused, the same one accepted.
    with pytest.raises(mnemon.InvalidInput, match="python:toy-words"):
        mnemon.open(tmp_path / "own.redb", embedder="hash")
    again = mnemon.open(tmp_path / "own.redb", embedder=calls, embedder_name="toy-words")
    assert again.ns("p").search("backoff", limit=1)
    again.close()


def test_a_langchain_embeddings_object(tmp_path: Path) -> None:
    db = mnemon.open(tmp_path / "lc.redb", embedder=LangChainLike())
    assert db.embedder == "python:toy-words-v1"
    rid = db.ns("p").add("learning", "vectors from langchain")
    assert db.ns("p").search("langchain vectors", mode="vector", limit=1)[0].record.id == rid
    db.close()


def test_bad_embedders_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(mnemon.InvalidInput, match="a function from a list of texts to vectors"):
        mnemon.open(tmp_path / "a.redb", embedder=42)
    with pytest.raises(mnemon.InvalidInput, match="not a list of vectors"):
        mnemon.open(tmp_path / "b.redb", embedder=lambda texts: "nope")
    with pytest.raises(mnemon.InvalidInput, match="raised"):
        mnemon.open(tmp_path / "c.redb", embedder=lambda texts: 1 / 0)
    with pytest.raises(mnemon.InvalidInput, match="embedder_name names your own embedder"):
        mnemon.open(tmp_path / "d.redb", embedder_name="x")
    # An embedder that fails later: a write still succeeds (the record is stored without a
    # vector, found by its words, embedded by a later reindex), a vector search says why.
    state = {"fail": False}

    def flaky(texts: List[str]) -> List[List[float]]:
        if state["fail"]:
            raise RuntimeError("the model server is down")
        return bag_of_words(texts)

    db = mnemon.open(tmp_path / "e.redb", embedder=flaky, embedder_name="flaky")
    ns = db.ns("p")
    ns.add("learning", "before")
    state["fail"] = True
    ns.add("learning", "written while the embedder is down")
    with pytest.raises(mnemon.Unavailable, match="the model server is down"):
        ns.search("a query not seen before", mode="vector")
    assert ns.search("embedder down", mode="lexical")
    state["fail"] = False
    assert ns.search("before", limit=1)
    db.close()
    # Vectors of the wrong size.
    sizes = itertools.chain([4], itertools.repeat(5))
    bad = mnemon.open(tmp_path / "f.redb", embedder=lambda texts: [[1.0] * next(sizes) for _ in texts],
                      embedder_name="shifty")
    with pytest.raises(mnemon.Unavailable, match="vector 0 has 5 dimensions, not 4"):
        bad.ns("p").search("x", mode="vector")
    bad.close()


def test_threads_share_an_own_embedder(tmp_path: Path) -> None:
    db = mnemon.open(tmp_path / "t.redb", embedder=bag_of_words)
    ns = db.ns("p")
    errors = []

    def work(k: int) -> None:
        try:
            for i in range(20):
                ns.add("learning", f"thread {k} note {i}")
                ns.search(f"note {i}", limit=2)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and len(list(ns.list())) == 160
    db.close()
