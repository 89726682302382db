#!/bin/sh
# Install Chroma (chromadb 1.5.9 from PyPI; every package pinned and hash-checked by pip
# --require-hashes) into a virtual environment, for the side-by-side part of
# `mnemon-bench serve --chroma VENV` (docs/server.md). Not needed by the tests. Idempotent.
#
#   scripts/fetch-chroma.sh [VENV]     (default: $MNEMON_CHROMA_VENV or ~/.cache/mnemon/chroma)
#
# benches/chroma/requirements.txt was written by pip-compile --generate-hashes from
# benches/chroma/requirements.in.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${MNEMON_CHROMA_VENV:-$HOME/.cache/mnemon/chroma}}
req=$root/benches/chroma/requirements.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
stamp=$venv/.mnemon-requirements.sha256
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/chroma" ]; then
    echo "Chroma already in $venv"
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r "$req"
"$venv/bin/python" -c 'import chromadb'
echo "$want" > "$stamp"
echo "Chroma (chromadb 1.5.9) installed in $venv: mnemon-bench serve --chroma $venv"
