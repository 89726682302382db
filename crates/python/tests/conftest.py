"""Fixtures: the same tests run against a file opened in-process and against a real
`mnemon serve` on loopback (the `mnemon` binary of $MNEMON_BIN, started per test with a
token of its own)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterator, Tuple

import pytest

import mnemon

BIN = os.environ.get("MNEMON_BIN", "mnemon")


def run(db: Path, *args: str) -> str:
    """Run the `mnemon` command line on `db`; its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMON_")}
    done = subprocess.run(
        [BIN, "--db", str(db), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"mnemon {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done.stdout


class Server:
    """A `mnemon serve` on a fresh file, listening on a free loopback port."""

    def __init__(self, tmp: Path):
        self.db = tmp / "served.redb"
        run(self.db, "--embedder", "hash", "init")
        self.token = json.loads(
            run(self.db, "--json", "token", "create", "--name", "tests", "--allow-ns", "*", "--scope", "admin")
        )["token"]
        self.log = tmp / "serve.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMON_")}
        self.proc = subprocess.Popen(
            [BIN, "--db", str(self.db), "serve", "--listen", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("wb"),
            env=env,
        )
        self.url = self._address()

    def _address(self) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            first = self.log.read_text(errors="replace").split("\n", 1)
            if len(first) == 2 and "://" in first[0]:
                return "http://" + first[0].split("://", 1)[1].split()[0]
            if self.proc.poll() is not None:
                raise RuntimeError(f"mnemon serve exited: {self.log.read_text()}")
            time.sleep(0.02)
        raise RuntimeError(f"mnemon serve did not start: {self.log.read_text()}")

    def connect(self, token: "str | None" = None) -> mnemon.Db:
        return mnemon.connect(self.url, token=self.token if token is None else token)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path)
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(params=["file", "server"])
def transport(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Tuple[str, mnemon.Db]]:
    """A database handle: a file in-process, or a server (the same API)."""
    if request.param == "file":
        db = mnemon.open(tmp_path / "memory.redb", embedder="hash")
        try:
            yield "file", db
        finally:
            db.close()
    else:
        s = Server(tmp_path)
        try:
            db = s.connect()
            yield "server", db
            db.close()
        finally:
            s.stop()


@pytest.fixture
def db(transport: Tuple[str, mnemon.Db]) -> mnemon.Db:
    return transport[1]


@pytest.fixture
def ns(db: mnemon.Db) -> mnemon.Namespace:
    return db.ns("project:demo")
