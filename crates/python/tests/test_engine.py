"""Errors of every class, threads, crashes, durability and the handle's life: on files (and on
a server where the test says so)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import mnemon
from conftest import Server


def test_error_classes(tmp_path: Path) -> None:
    assert issubclass(mnemon.InvalidInput, mnemon.Error) and issubclass(mnemon.InvalidInput, ValueError)
    assert issubclass(mnemon.NotFound, LookupError) and issubclass(mnemon.Forbidden, PermissionError)
    with mnemon.open(tmp_path / "m.redb", embedder="hash") as db:
        ns = db.ns("project:demo")
        with pytest.raises(mnemon.InvalidInput) as bad:
            ns.add("no-such-kind", "x")
        assert bad.value.code == "invalid_input"
        with pytest.raises(mnemon.InvalidInput):
            db.ns(" padded ").add("learning", "x")
        with pytest.raises(mnemon.NotFound) as missing:
            ns.get(uuid.uuid4())
        assert missing.value.code == "not_found"
        old = ns.add("decision", {"title": "A"})
        ns.supersede(old, {"title": "B"})
        with pytest.raises(mnemon.Conflict) as twice:
            ns.supersede(old, {"title": "C"})
        assert twice.value.code == "conflict"
        with pytest.raises(mnemon.InvalidInput, match="durability"):
            mnemon.open(tmp_path / "x.redb", durability="sometimes")
        with pytest.raises(mnemon.InvalidInput, match="unknown embedder"):
            mnemon.open(tmp_path / "x.redb", embedder="bert")
    # Forbidden: a write to a read-only handle.
    with mnemon.open(tmp_path / "m.redb", read_only=True) as ro:
        assert len(list(ro.ns("project:demo").list())) == 1
        with pytest.raises(mnemon.Forbidden) as refused:
            ro.ns("project:demo").add("learning", "x")
        assert refused.value.code == "forbidden"
    # Damaged: a file that is not a database. Unavailable: a file in use, a closed handle.
    (tmp_path / "text.redb").write_text("hello")
    with pytest.raises(mnemon.Damaged, match="not a mnemon database"):
        mnemon.open(tmp_path / "text.redb")
    with pytest.raises(mnemon.Error):
        mnemon.open(tmp_path / "none.redb", create=False)
    # A file another process holds.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import mnemon, sys, time; d = mnemon.open(sys.argv[1]); print('held', flush=True); time.sleep(60)",
         str(tmp_path / "m.redb")],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(mnemon.Unavailable) as busy:
            mnemon.open(tmp_path / "m.redb")
        assert busy.value.code == "unavailable"
    finally:
        holder.kill()
        holder.wait()
    held = mnemon.open(tmp_path / "m.redb")
    held.close()
    with pytest.raises(mnemon.Unavailable, match="closed"):
        held.stats()


def test_damaged_files_raise_errors_never_crash(tmp_path: Path) -> None:
    path = tmp_path / "m.redb"
    with mnemon.open(path, embedder="hash") as db:
        ns = db.ns("p")
        for i in range(300):
            ns.add("learning", f"note {i} about topic{i % 10}")
    size = path.stat().st_size
    outcomes = set()
    for k in range(1, 40):
        copy = tmp_path / f"damaged-{k}.redb"
        shutil.copy(path, copy)
        with copy.open("r+b") as f:
            f.seek(size * k // 40)
            f.write(b"\xff" * 4096)
        try:
            db = mnemon.open(copy)
            try:
                records = list(db.ns("p").list())
                hits = db.ns("p").search("topic3")
                outcomes.add("read")
                assert len(records) == 300 and all(h.record.text.endswith("topic3") for h in hits)
            finally:
                db.close()
        except mnemon.Error as e:
            outcomes.add(type(e).__name__)
    assert "Damaged" in outcomes
    assert outcomes <= {"read", "Damaged", "Unavailable"}


def test_forbidden_and_unavailable_through_a_server(server: Server, tmp_path: Path) -> None:
    from conftest import run
    import json

    scoped = json.loads(
        run(server.db, "--json", "token", "create", "--name", "a", "--allow-ns", "project:a", "--scope", "write")
    )["token"]
    db = server.connect(scoped)
    db.ns("project:a").add("learning", "mine")
    server.connect().ns("project:b").add("learning", "theirs")
    with pytest.raises(mnemon.Forbidden):
        db.stats()
    assert [n["namespace"] for n in db.stats(namespace="project:a")["namespaces"]] == ["project:a"]
    with pytest.raises(mnemon.Forbidden):
        db.ns("project:b").add("learning", "theirs")
    with pytest.raises(mnemon.Forbidden):
        db.ns("project:a").search("mine", also=["project:b"])
    with pytest.raises(mnemon.Forbidden):
        server.connect("mnemon_not-a-token").ns("project:a").list().__next__()
    with pytest.raises(mnemon.NotFound):
        db.ns("project:a").get(uuid.uuid4())
    nobody = mnemon.connect("http://127.0.0.1:9")
    with pytest.raises(mnemon.Unavailable):
        nobody.ns("x").add("learning", "x")
    with pytest.raises(mnemon.InvalidInput):
        mnemon.connect("not a url")


def test_threads_write_and_search_at_once(transport) -> None:
    _, db = transport
    ns = db.ns("project:threads")
    errors = []

    def work(t: int) -> list:
        ids = []
        try:
            for i in range(25):
                ids.append(ns.add("learning", f"thread {t} fact {i} about caching"))
                if i % 5 == 0:
                    ns.search("caching", limit=5)
                    list(ns.list("learning", limit=10))
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)
        return ids

    with ThreadPoolExecutor(8) as pool:
        written = [i for ids in pool.map(work, range(8)) for i in ids]
    assert errors == []
    assert len(written) == 200 == len(set(written))
    assert {r.id for r in ns.list("learning")} == set(written)
    assert len(ns.search("thread 3 fact", mode="lexical", limit=50)) >= 25


def test_the_gil_is_released_during_calls() -> None:
    """A call blocks until a Python thread of this process answers it: it can only return if
    the extension let go of the GIL while it waited (every operation goes through the same
    call, for a file too). Should it not, faulthandler ends the process after a minute,
    failing the run instead of hanging it."""
    import faulthandler
    import json
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    answered = "01a22051-2e95-7407-8b25-20fbd09334ef"

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server interface
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"id": answered, "rev": 0, "existing": False}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    faulthandler.dump_traceback_later(60, exit=True)
    try:
        db = mnemon.connect(f"http://127.0.0.1:{server.server_address[1]}")
        assert db.ns("p").add("learning", "answered by a Python thread") == answered
    finally:
        faulthandler.cancel_dump_traceback_later()
        server.shutdown()


KILLED = r"""
import sys, mnemon
db = mnemon.open(sys.argv[1], embedder="hash")
ns = db.ns("p")
i = 0
while True:
    rid = ns.add("learning", f"acknowledged {i}")
    print(rid, flush=True)
    i += 1
"""


def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "m.redb"
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(path)], stdout=subprocess.PIPE, text=True)
    acknowledged = []
    assert child.stdout is not None
    while len(acknowledged) < 200:
        line = child.stdout.readline()
        assert line, "the writer stopped"
        acknowledged.append(line.strip())
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with mnemon.open(path) as db:
        there = {r.id for r in db.ns("p").list("learning")}
    assert set(acknowledged) <= there


def test_eventual_durability_is_durable_after_sync_and_close(tmp_path: Path) -> None:
    path = tmp_path / "m.redb"
    with mnemon.open(path, embedder="hash", durability="eventual") as db:
        ns = db.ns("p")
        ids = [ns.add("learning", f"bulk {i}") for i in range(100)]
        assert len(list(ns.list())) == 100
        db.sync()
    with mnemon.open(path) as db:
        assert {r.id for r in db.ns("p").list()} == set(ids)
        assert db.embedder == "mnemon-hash-v1-384"


def test_handle_life(tmp_path: Path) -> None:
    path = tmp_path / "m.redb"
    db = mnemon.open(path, embedder="hash")
    assert not db.remote and db.target == str(path) and "file" in repr(db)
    db.ns("p").add("learning", "x")
    # Opened again in this process: one more handle on the same engine.
    other = mnemon.open(path)
    assert len(list(other.ns("p").list())) == 1
    other.close()
    db.ns("p").get(next(db.ns("p").list()))
    db.close()
    with mnemon.open(path) as again:
        assert len(list(again.ns("p").list())) == 1
    assert again.closed
    with pytest.raises(mnemon.InvalidInput):
        again.ns(7)  # type: ignore[arg-type]


def test_help_is_useful() -> None:
    for obj in (mnemon, mnemon.open, mnemon.connect, mnemon.Db, mnemon.Namespace, mnemon.Record, mnemon.Hit):
        assert obj.__doc__ and len(obj.__doc__) > 40, obj
    for name in ("add", "get", "list", "search", "context", "supersede", "history", "chain"):
        assert getattr(mnemon.Namespace, name).__doc__, name
    assert (Path(mnemon.__file__).parent / "py.typed").exists()


DEFAULT_EMBEDDER = r"""
import sys, mnemon
with mnemon.open(sys.argv[1]) as db:
    print(db.embedder)
"""


def test_a_new_file_gets_the_local_model_when_installed(tmp_path: Path) -> None:
    env = dict(os.environ, MNEMON_MINILM_DIR=str(tmp_path / "no-model"))
    without = subprocess.run(
        [sys.executable, "-c", DEFAULT_EMBEDDER, str(tmp_path / "a.redb")], env=env, capture_output=True, text=True
    )
    assert without.stdout.strip() == "mnemon-hash-v1-384", without.stderr
    model = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mnemon/models/all-minilm-l6-v2"
    if not (model / "model.safetensors").is_file():
        pytest.skip("the local model is not installed (scripts/fetch-minilm.sh)")
    env = {k: v for k, v in os.environ.items() if k != "MNEMON_MINILM_DIR"}
    made = subprocess.run(
        [sys.executable, "-c", DEFAULT_EMBEDDER, str(tmp_path / "b.redb")], env=env, capture_output=True, text=True
    )
    assert made.stdout.strip() == "all-MiniLM-L6-v2", made.stderr
    # An existing file keeps the embedder it was written with.
    again = subprocess.run(
        [sys.executable, "-c", DEFAULT_EMBEDDER, str(tmp_path / "a.redb")], env=env, capture_output=True, text=True
    )
    assert again.stdout.strip() == "mnemon-hash-v1-384", again.stderr
