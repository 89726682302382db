#!/usr/bin/env bash
# Fuzz every target under fuzz/ (cargo-fuzz, libFuzzer, nightly Rust with its sanitizer) for
# SECONDS each (default 60), growing the corpus in fuzz/corpus/TARGET, then minimise each
# corpus (cmin). A failing input lands in fuzz/artifacts/TARGET: once fixed, copy it into
# fuzz/regressions/TARGET, where `cargo test` (tests/tests/fuzz_corpus.rs) runs it for good.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-60}
shift || true
command -v cargo-fuzz > /dev/null || cargo install cargo-fuzz --locked --version 0.13.2
rustup run nightly rustc --version > /dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    echo "== $t: ${seconds}s"
    cargo +nightly fuzz run -O "$t" "corpus/$t" -- -max_total_time="$seconds" -max_len=16384 -rss_limit_mb=2048 2>&1 |
        grep -E '^(#[0-9]+ +DONE|Done|==[0-9]+==|SUMMARY|thread .* panicked)' || true
    cargo +nightly fuzz cmin -O "$t" "corpus/$t" > /dev/null 2>&1
    echo "$t: $(ls "corpus/$t" | wc -l) inputs kept"
done
# The scratch databases of the targets that import (one per fuzzing process).
rm -f "${TMPDIR:-/tmp}"/mnemon-fuzz-*.redb
