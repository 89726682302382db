#!/usr/bin/env bash
# Compare the vector graph with hnswlib and faiss on every data set of
# scripts/ann-datasets.sh, in one run per set (M=16, ef_construction=200, k=10, single-thread
# queries, the same ef grid), then summarise and plot (docs/index.md).
#
# Usage: benches/ann_all.sh [DIR] [SET ...]
#   DIR defaults to target/ann-data; SETs default to every set in it. Results go to
#   DIR/SET/mnemon.json and DIR/SET/baseline.txt, plots to docs/index-SET.svg, the summary to
#   standard output. Python: $ANN_PYTHON, else a virtual environment made in
#   ~/.cache/mnemon/annvenv from benches/requirements.txt.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/target/ann-data}"
shift || true
sets=("$@")
if [[ ${#sets[@]} -eq 0 ]]; then
    for d in "$dir"/*/; do
        [[ -f "$d/gt.ivecs" ]] && sets+=("$(basename "$d")")
    done
fi
ef="${ANN_EF:-10,12,16,20,24,32,48,64,96,128,192,256,384,512,768,1024}"
engines="${ANN_ENGINES:-mnemon,mnemon-exact-walk}"

py="${ANN_PYTHON:-}"
if [[ -z "$py" ]]; then
    venv="${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/annvenv"
    if [[ ! -x "$venv/bin/python" ]]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q -r "$root/benches/requirements.txt"
    fi
    py="$venv/bin/python"
fi

cd "$root"
cargo build --release -q -p mnemon-bench
for s in "${sets[@]}"; do
    d="$dir/$s"
    echo "== $s" >&2
    "$root/target/release/mnemon-bench" --json ann --base "$d/base.fvecs" --queries "$d/queries.fvecs" \
        --gt "$d/gt.ivecs" --ef "$ef" --engine "$engines" > "$d/mnemon.json"
    "$py" benches/ann_baseline.py --base "$d/base.fvecs" --queries "$d/queries.fvecs" --gt "$d/gt.ivecs" \
        --ef "$ef" > "$d/baseline.txt"
    python3 benches/ann_plot.py "$d/mnemon.json" "$d/baseline.txt" "docs/index-$s.svg" "$s"
done
python3 benches/ann_summary.py "$dir" "${sets[@]}"
