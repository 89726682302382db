#!/usr/bin/env bash
# Build the data sets `benches/ann_all.sh` compares the vector graph on (docs/index.md), each
# 100k base vectors and 1,000 queries of 384 dimensions with their exact cosine top-100, in
# the TEXMEX format, under DIR (default target/ann-data):
#
#   clustered  100 clusters over 16 latent directions, noise 0.05 (the earlier single set)
#   topics     1,000 anisotropic clusters around 50 topics, 32 latent directions
#   diffuse    20 clusters over 96 latent directions, noise 0.1 (high intrinsic dimension)
#   between    clustered's base, queries out of distribution (between two clusters)
#   text       real text: documentation paragraphs of the crates Cargo.lock names, embedded
#              by the local model (all-MiniLM-L6-v2; scripts/fetch-minilm.sh), queries held out
#
# The synthetic sets are seeded and the same on every machine. The text set is the same for
# the same Cargo.lock and model: it reads cargo's registry sources (run `cargo fetch` first)
# and embedding its 101k paragraphs takes long: 98 minutes on two shared cores (about 17 per
# second; the paragraphs run to 80 words). A set already built is kept.
#
# Usage: scripts/ann-datasets.sh [DIR]
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/target/ann-data}"
cd "$root"
cargo build --release -q -p mnemon-bench
bench="$root/target/release/mnemon-bench"

make_set() {
    local name="$1"
    shift
    if [[ -f "$dir/$name/gt.ivecs" ]]; then
        echo "$name: already in $dir/$name"
        return
    fi
    "$bench" "$@" --out "$dir/$name.tmp"
    rm -rf "$dir/$name"
    mv "$dir/$name.tmp" "$dir/$name"
}

make_set clustered ann-data
make_set topics ann-data --clusters 1000 --topics 50 --anisotropy 1.0 --latent 32
make_set diffuse ann-data --clusters 20 --latent 96 --noise 0.1
make_set between ann-data --query-kind between
scripts/fetch-minilm.sh > /dev/null
cargo fetch -q
make_set text --embedder local ann-text --lock "$root/Cargo.lock"
echo "data sets in $dir"
