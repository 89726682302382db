"""add_many / get_many on both transports, the same-process reopen of a file."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import mnemon


def test_add_many_is_one_commit_with_ids_in_order(ns: mnemon.Namespace) -> None:
    items = [{"kind": "learning", "text": f"note {i}", "tags": "bulk", "metadata": {"n": i}} for i in range(250)]
    items.append({"kind": "decision", "title": "Use redb", "valid_from": dt.datetime(2024, 2, 1, tzinfo=dt.timezone.utc)})
    before = ns.changes(limit=1)[1]
    ids = ns.add_many(items)
    assert len(ids) == 251 and len(set(ids)) == 251
    got = ns.get_many(ids)
    assert [r.text for r in got[:250]] == [f"note {i}" for i in range(250)]
    assert got[250].title == "Use redb" and got[250].valid_from.year == 2024
    # One commit: every change at one transaction time.
    changes, _ = ns.changes(before, limit=1000)
    assert len(changes) == 251 and len({c.tx for c in changes}) == 1
    # Strings with a kind.
    assert len(ns.add_many(["a", "b"], kind="learning")) == 2
    assert ns.add_many([]) == []


def test_a_bad_item_names_its_index_and_nothing_is_written(ns: mnemon.Namespace) -> None:
    before = len(list(ns.list()))
    items = [{"kind": "learning", "text": "fine"}, {"kind": "learning", "text": "fine too"},
             {"kind": "decision", "rationale": "no title"}]
    with pytest.raises(mnemon.InvalidInput, match="write 2 of the batch"):
        ns.add_many(items)
    with pytest.raises(mnemon.InvalidInput, match="item 1: no kind"):
        ns.add_many([{"kind": "learning", "text": "x"}, {"text": "y"}])
    with pytest.raises(mnemon.InvalidInput, match="item 0: a dict"):
        ns.add_many([3])
    with pytest.raises(mnemon.InvalidInput, match="a list"):
        ns.add_many("text")  # type: ignore[arg-type]
    assert len(list(ns.list())) == before


def test_get_many_in_order_with_none_for_what_is_not_visible(ns: mnemon.Namespace) -> None:
    a = ns.add("learning", "first", valid_from="2024-01-01")
    b = ns.add("learning", "second", valid_from="2025-01-01")
    got = ns.get_many([b, "0123456789abcdef0123456789abcdef", a], as_of="2024-06-01")
    assert got[0] is None and got[1] is None and got[2].text == "first"
    assert [r.text for r in ns.get_many([a, b])] == ["first", "second"]
    with pytest.raises(mnemon.InvalidInput):
        ns.get_many(["x"] * 1001)


def test_reopening_a_path_in_this_process_shares_the_engine(tmp_path: Path) -> None:
    path = tmp_path / "m.redb"
    first = mnemon.open(path, embedder="hash")
    rid = first.ns("p").add("learning", "kept")
    # A notebook cell run again: the same path (another spelling of it), the old handle alive.
    second = mnemon.open(tmp_path / "." / "m.redb")
    assert second.ns("p").get(rid).text == "kept"
    # Closing one leaves the other working.
    first.close()
    assert first.closed and not second.closed
    second.ns("p").add("learning", "after")
    with pytest.raises(mnemon.Unavailable):
        first.ns("p").get(rid)
    # Other options than the open engine's: a clear error.
    with pytest.raises(mnemon.InvalidInput, match="already open in this process with other options"):
        mnemon.open(path, read_only=True)
    second.close()
    # Once every handle is closed the file is released: another opener gets it.
    third = mnemon.open(path, read_only=True)
    assert len(list(third.ns("p").list())) == 2
    third.close()


def test_erase_a_namespace(transport) -> None:
    _, db = transport
    user = db.ns("user:alice")
    user.add_many([{"kind": "learning", "text": "Alice likes tea", "tags": ["pii"]}, {"kind": "learning", "text": "Alice's orders"}])
    with pytest.raises(mnemon.InvalidInput, match="nothing was erased"):
        user.erase(confirm="user:bob")
    assert user.erase(confirm="user:alice", tags="pii")["records"] == 1
    user.add("learning", "Alice's trip", metadata={"trip": True})
    assert user.erase(confirm="user:alice", where={"trip": True})["records"] == 1
    done = user.erase(confirm="user:alice")
    assert done["records"] == 1 and done["audit"]
    assert list(user.list()) == [] and user.search("Alice") == []
    assert list(user.list(known_at="2000-01-01")) == []
    audit = list(db.ns("mnemon:erasures").list())
    assert len(audit) == 3 and all("alice" not in str(r.metadata) for r in audit)
