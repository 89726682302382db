#!/bin/sh
# The Python package's tests: installs pytest, maturin and langgraph (every package pinned and
# hash-checked by pip --require-hashes) into a virtual environment, builds the extension into
# it with maturin (the workspace's target/, so cargo's build is shared), builds the `mnemon`
# binary the server tests start, and runs pytest on crates/python/tests. Idempotent.
#
#   scripts/test-python.sh [PYTEST ARGS...]
#   MNEMON_PYTHON_VENV   the environment (default ~/.cache/mnemon/python)
#   MNEMON_PYTHON_BUILD  "release" to build the extension optimised (benchmarks)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${MNEMON_PYTHON_VENV:-$HOME/.cache/mnemon/python}
req=$root/crates/python/tests/requirements.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
stamp=$venv/.mnemon-requirements.sha256
if ! { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r "$req"
    echo "$want" > "$stamp"
fi
profile=""
if [ "${MNEMON_PYTHON_BUILD:-}" = "release" ]; then
    profile="--release"
fi
# The extension, into the environment (as `pip install ./crates/python` would, without
# fetching maturin again).
(cd "$root/crates/python" && VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH "$venv/bin/maturin" develop --quiet $profile)
# The server the transport tests start.
cargo build --quiet -p mnemon-cli $profile
bin_dir=debug
[ -n "$profile" ] && bin_dir=release
target=$(cargo metadata --format-version 1 --no-deps | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
export MNEMON_BIN="${MNEMON_BIN:-$target/$bin_dir/mnemon}"
cd "$root/crates/python"
exec "$venv/bin/python" -m pytest -q tests "$@"
