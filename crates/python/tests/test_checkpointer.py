"""MnemonSaver, LangGraph's checkpointer over mnemon: every method, a real graph (state kept
across invocations, an interrupt resumed, replay from a past checkpoint, async), a graph
resumed after its process was killed, and a thread's history as mnemon's history."""

from __future__ import annotations

import asyncio
import operator
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Annotated, TypedDict

import pytest

import mnemon

pytest.importorskip("langgraph.graph")
from langgraph.checkpoint.base import empty_checkpoint, create_checkpoint  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402

from mnemon.langgraph import MnemonSaver  # noqa: E402


class State(TypedDict):
    steps: Annotated[list, operator.add]


def _graph(saver: MnemonSaver, ask: bool = False):
    g = StateGraph(State)
    g.add_node("a", lambda s: {"steps": ["a"]})
    g.add_node("b", lambda s: {"steps": ["b"]})

    def c(s: State) -> dict:
        if ask:
            answer = interrupt("approve?")
            return {"steps": [f"c:{answer}"]}
        return {"steps": ["c"]}

    g.add_node("c", c)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    return g.compile(checkpointer=saver)


def test_each_method(transport) -> None:
    _, db = transport
    saver = MnemonSaver(db)
    config = {"configurable": {"thread_id": "t/1 é", "checkpoint_ns": ""}}
    assert saver.get_tuple(config) is None
    first = create_checkpoint(empty_checkpoint(), {}, 1)
    c1 = saver.put(config, first, {"source": "input", "step": -1, "who": "me"}, {})
    saver.put_writes(c1, [("steps", ["x"]), ("other", 1)], task_id="task-1", task_path="p1")
    saver.put_writes(c1, [("steps", ["ignored: same task and index"])], task_id="task-1")
    saver.put_writes(c1, [("steps", ["y"])], task_id="task-0", task_path="p0")
    second = create_checkpoint(first, {}, 2)
    c2 = saver.put(c1, second, {"source": "loop", "step": 0}, {})
    latest = saver.get_tuple({"configurable": {"thread_id": "t/1 é"}})
    assert latest.config == c2 and latest.parent_config == c1
    assert latest.metadata["step"] == 0 and latest.pending_writes == []
    old = saver.get_tuple(c1)
    assert old.checkpoint["id"] == first["id"] and old.metadata["who"] == "me"
    # Writes in LangGraph's order: by task path, then task, then index.
    assert old.pending_writes == [("task-0", "steps", ["y"]), ("task-1", "steps", ["x"]), ("task-1", "other", 1)]
    listed = list(saver.list({"configurable": {"thread_id": "t/1 é"}}))
    assert [t.config for t in listed] == [c2, c1]
    assert [t.config for t in saver.list(None, filter={"source": "input"})] == [c1]
    assert [t.config for t in saver.list({"configurable": {"thread_id": "t/1 é"}}, before=c2)] == [c1]
    assert len(list(saver.list({"configurable": {"thread_id": "t/1 é"}}, limit=1))) == 1
    # A subgraph's checkpoint namespace is its own.
    sub = {"configurable": {"thread_id": "t/1 é", "checkpoint_ns": "child:1"}}
    saver.put(sub, create_checkpoint(empty_checkpoint(), {}, 1), {"step": 5}, {})
    assert saver.get_tuple(sub).metadata["step"] == 5
    assert saver.get_tuple({"configurable": {"thread_id": "t/1 é"}}).config == c2
    # The thread's history is the record's: one revision per checkpoint.
    assert [cid for cid, _ in saver.thread_history("t/1 é")] == [first["id"], second["id"]]
    # Another thread is untouched by deleting this one.
    other = {"configurable": {"thread_id": "t2", "checkpoint_ns": ""}}
    saver.put(other, create_checkpoint(empty_checkpoint(), {}, 1), {}, {})
    saver.delete_thread("t/1 é")
    assert saver.get_tuple(config) is None and list(saver.list(config)) == []
    assert saver.get_tuple(other) is not None
    # Another saver erases a thread this one has read: it is looked up again, not served stale.
    MnemonSaver(db).delete_thread("t2")
    assert saver.get_tuple(other) is None
    again = saver.put(other, create_checkpoint(empty_checkpoint(), {}, 1), {"step": 9}, {})
    assert saver.get_tuple(other).config == again


def test_a_graph_keeps_state_interrupts_and_replays(tmp_path: Path) -> None:
    db = mnemon.open(tmp_path / "g.redb", embedder="hash")
    saver = MnemonSaver(db)
    graph = _graph(saver)
    cfg = {"configurable": {"thread_id": "run-1"}}
    assert graph.invoke({"steps": ["start"]}, cfg)["steps"] == ["start", "a", "b", "c"]
    assert graph.invoke({"steps": ["again"]}, cfg)["steps"] == ["start", "a", "b", "c", "again", "a", "b", "c"]
    history = list(graph.get_state_history(cfg))
    assert len(history) == 10
    # Replay from a past checkpoint: the state as it was after the first run's "a".
    past = next(h for h in history if h.values.get("steps") == ["start", "a"])
    replayed = graph.invoke(None, past.config)
    assert replayed["steps"] == ["start", "a", "b", "c"]
    # Human in the loop: the interrupt's pending writes are stored, the answer resumes it.
    asking = _graph(saver, ask=True)
    cfg2 = {"configurable": {"thread_id": "run-2"}}
    out = asking.invoke({"steps": []}, cfg2)
    assert "__interrupt__" in out
    assert asking.invoke(Command(resume="yes"), cfg2)["steps"] == ["a", "b", "c:yes"]
    db.close()


def test_async_graph(tmp_path: Path) -> None:
    async def main() -> list:
        db = mnemon.open(tmp_path / "async.redb", embedder="hash")
        saver = MnemonSaver(db)
        graph = _graph(saver)
        outs = await asyncio.gather(*(graph.ainvoke({"steps": [f"t{i}"]}, {"configurable": {"thread_id": f"a{i}"}})
                                      for i in range(8)))
        listed = [t async for t in saver.alist({"configurable": {"thread_id": "a3"}})]
        assert len(listed) == 5 and await saver.aget_tuple({"configurable": {"thread_id": "a3"}}) is not None
        await saver.adelete_thread("a3")
        assert await saver.aget_tuple({"configurable": {"thread_id": "a3"}}) is None
        db.close()
        return outs

    outs = asyncio.run(main())
    assert [o["steps"] for o in outs] == [[f"t{i}", "a", "b", "c"] for i in range(8)]


CHILD = textwrap.dedent(
    """
    import operator, sys, time
    from typing import Annotated, TypedDict
    import mnemon
    from langgraph.graph import END, START, StateGraph
    from mnemon.langgraph import MnemonSaver

    class State(TypedDict):
        steps: Annotated[list, operator.add]

    def slow(s):
        print("in b", flush=True)
        time.sleep(60)
        return {"steps": ["b"]}

    g = StateGraph(State)
    g.add_node("a", lambda s: {"steps": ["a"]})
    g.add_node("b", slow)
    g.add_edge(START, "a"); g.add_edge("a", "b"); g.add_edge("b", END)
    graph = g.compile(checkpointer=MnemonSaver(mnemon.open(sys.argv[1], embedder="hash")))
    # "sync": each checkpoint is stored before the next step starts.
    graph.invoke({"steps": ["start"]}, {"configurable": {"thread_id": "crash"}}, durability="sync")
    """
)


def test_a_graph_resumes_after_its_process_is_killed(tmp_path: Path) -> None:
    path = tmp_path / "crash.redb"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "in b"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    db = mnemon.open(path)
    saver = MnemonSaver(db)
    g = StateGraph(State)
    g.add_node("a", lambda s: {"steps": ["a!"]})  # must not run again
    g.add_node("b", lambda s: {"steps": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    graph = g.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "crash"}}
    state = graph.get_state(cfg)
    assert state.values["steps"] == ["start", "a"] and state.next == ("b",)
    assert graph.invoke(None, cfg)["steps"] == ["start", "a", "b"]
    db.close()
