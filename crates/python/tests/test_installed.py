"""The package as a user gets it: `pip install mnemon-db` from the wheels into a fresh virtual
environment with no Rust toolchain (scripts/test-python.sh builds them and sets
MNEMON_WHEEL_TEST=1; skipped otherwise). What a new user does first: import, add, search; the
`mnemon` command the wheel put on the PATH; `mnemon mcp` answering the official MCP SDK, started
by the command `mnemon mcp install` writes; `mnemon serve` reached from Python; the local model
from the `local` extra found with no path set."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import mnemon
from conftest import Server

pytestmark = pytest.mark.skipif(
    os.environ.get("MNEMON_WHEEL_TEST") != "1", reason="runs against the installed wheels (scripts/test-python.sh)"
)

SCRIPTS = Path(sysconfig.get_path("scripts"))
EXE = SCRIPTS / ("mnemon.exe" if os.name == "nt" else "mnemon")
HERE = Path(__file__).parent


def mnemon_cmd(*args: str, env: "dict | None" = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, timeout=120, env=env, check=False)


def test_the_package_and_the_command_come_from_the_wheels() -> None:
    # The module is the installed one, not a development build beside the sources.
    assert Path(mnemon.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), mnemon.__file__
    # The command is on the PATH, from the companion wheel, and no toolchain is.
    assert shutil.which("mnemon") == str(EXE)
    assert shutil.which("cargo") is None and shutil.which("rustc") is None
    from importlib.metadata import requires, version

    assert version("mnemon-db") == version("mnemon-db-cli") == mnemon.__version__
    assert f"mnemon-db-cli=={mnemon.__version__}" in (requires("mnemon-db") or [])
    done = mnemon_cmd("--version")
    assert done.returncode == 0 and mnemon.__version__ in done.stdout, done


def test_import_add_search(tmp_path: Path) -> None:
    with mnemon.open(tmp_path / "m.redb", embedder="hash") as db:
        ns = db.ns("smoke")
        rid = ns.add("decision", {"title": "Use redb for storage", "rationale": "embedded, one file"})
        assert [h.record.id for h in ns.search("storage")] == [rid]
    # The command reads what Python wrote.
    done = mnemon_cmd("--db", str(tmp_path / "m.redb"), "--ns", "smoke", "--json", "search", "storage")
    assert done.returncode == 0, done.stderr
    assert rid in done.stdout


def test_the_command_line(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.redb")
    assert mnemon_cmd("--db", db, "--embedder", "hash", "init").returncode == 0
    added = mnemon_cmd("--db", db, "add", "learning", "--data", '{"text": "retries use exponential backoff"}')
    assert added.returncode == 0, added.stderr
    found = mnemon_cmd("--db", db, "search", "backoff")
    assert found.returncode == 0 and "backoff" in found.stdout, found
    bad = mnemon_cmd("--db", db, "search")
    assert bad.returncode == 2 and bad.stderr.count("\n") <= 3, bad
    assert mnemon_cmd("completions", "bash").stdout.startswith("_mnemon()")


def test_mcp_through_the_official_sdk(tmp_path: Path) -> None:
    sdk = Path(os.environ.get("MNEMON_MCP_SDK_VENV", Path.home() / ".cache/mnemon/mcp-sdk")) / "bin" / "python"
    assert sdk.is_file(), "the MCP SDK is installed by scripts/fetch-mcp-sdk.sh"
    # The entry `mnemon mcp install` writes names this installed command.
    entry = mnemon_cmd("mcp", "install", "claude-code", "--print", "--db", str(tmp_path / "mcp.redb"), "--ns", "smoke")
    assert entry.returncode == 0, entry.stderr
    server = json.loads(entry.stdout)["mcpServers"]["mnemon"]
    assert server["command"] == str(EXE), server
    done = subprocess.run(
        [str(sdk), str(HERE / "installed" / "mcp_initialize.py"), json.dumps(server)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp ok" in done.stdout


def test_uvx_runs_the_mcp_server(tmp_path: Path) -> None:
    # `uvx --from mnemon-db mnemon mcp`, offline from the wheels just built (a fresh uv cache:
    # uv makes its own tool environment from them).
    wheels = os.environ["MNEMON_WHEELS"]
    uv_args = ["--no-index", "--find-links", wheels, "--python", sys.executable, "--from", "mnemon-db"]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "UV_CACHE_DIR": str(tmp_path / "uv"),
           "UV_PYTHON_DOWNLOADS": "never"}
    done = subprocess.run([str(SCRIPTS / "uvx"), *uv_args, "mnemon", "--version"], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.startswith("mnemon "), done
    sdk = Path(os.environ.get("MNEMON_MCP_SDK_VENV", Path.home() / ".cache/mnemon/mcp-sdk")) / "bin" / "python"
    entry = {"command": str(SCRIPTS / "uvx"), "args": [*uv_args, "mnemon", "--db", str(tmp_path / "uvx.redb"), "mcp"],
             "env": env}
    done = subprocess.run([str(sdk), str(HERE / "installed" / "mcp_initialize.py"), json.dumps(entry)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and "mcp ok" in done.stdout, done.stdout + done.stderr


def test_serve_reached_from_python(tmp_path: Path) -> None:
    s = Server(tmp_path)
    try:
        with s.connect() as db:
            rid = db.ns("remote").add("gotcha", {"title": "The build needs a C compiler"})
            assert db.ns("remote").get(rid).title == "The build needs a C compiler"
    finally:
        s.stop()


def test_the_local_extra_is_found_without_a_path(tmp_path: Path) -> None:
    pytest.importorskip("mnemon_db_minilm", reason="the `local` extra is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMON_")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "empty-cache")  # no model fetched into a cache
    # The command finds the package installed beside it.
    status = mnemon_cmd("--json", "model", "status", env=env)
    assert status.returncode == 0, status.stderr
    used = json.loads(status.stdout)["used"]
    assert used and "mnemon_db_minilm" in used, status.stdout
    # And so does the Python package, in a process that sees no cache either.
    code = (
        "import mnemon, sys; d = mnemon.open(sys.argv[1], embedder='local'); "
        "print(d.embedder); print([x for x in mnemon.model_dirs() if x[2]][0][1])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "local.redb")], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["all-MiniLM-L6-v2", "python", "package"], done.stdout
