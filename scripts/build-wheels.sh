#!/bin/sh
# Build the Python wheels, optimised, into DIR (default target/wheels):
#   mnemon-db      the package `import mnemon` (crates/python: the extension, abi3: one wheel
#                  for CPython 3.9 and later on this platform), which depends on
#   mnemon-db-cli  the `mnemon` command (crates/cli/pyproject.toml: the binary in the wheel's
#                  scripts, put on the PATH by pip, as ruff and uv ship theirs);
#   mnemon-db-minilm  the local model's files, data only (scripts/model-wheel.py): the `local`
#                  extra, from the files `mnemon model fetch` checks (kept in target/model).
# maturin comes from the tools environment scripts/test-python.sh makes (pinned, hash-checked),
# or $MATURIN. Prints each wheel's name (platform tag) and size.
#
#   scripts/build-wheels.sh [DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/wheels}
maturin=${MATURIN:-$HOME/.cache/mnemon/python/bin/maturin}
mkdir -p "$out"
rm -f "$out"/mnemon_db-*.whl "$out"/mnemon_db_cli-*.whl "$out"/mnemon_db_minilm-*.whl
# One cargo target directory for both (and for `cargo build --release`): what the two share
# is built once.
"$maturin" build --quiet --release --out "$out" --manifest-path "$root/crates/cli/Cargo.toml"
"$maturin" build --quiet --release --out "$out" --manifest-path "$root/crates/python/Cargo.toml"
# The model: fetched (or found already there) and checked by the binary just packed.
target=$(cd "$root" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
"$target/release/mnemon" model fetch --dir "$target/model" > /dev/null
python3 "$root/scripts/model-wheel.py" "$target/model" "$out" > /dev/null
for w in "$out"/mnemon_db-*.whl "$out"/mnemon_db_cli-*.whl "$out"/mnemon_db_minilm-*.whl; do
    echo "$(basename "$w")  $(du -k "$w" | cut -f1) KiB"
done
