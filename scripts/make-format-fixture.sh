#!/usr/bin/env bash
# Write the format fixture crates/storage/tests/data/formatN.redb with the `mnemon` of the
# commit that last wrote format N (the tests in crates/storage/tests/integration/formats.rs
# open, upgrade and read each one). Not run by the tests or CI: the fixtures are checked in.
#
#   scripts/make-format-fixture.sh N COMMIT
#
# The commit is checked out in a temporary worktree and its CLI built there (without the
# local embedder); the workload below uses only commands every format's CLI has.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 FORMAT COMMIT" >&2; exit 2; }
version=$1 commit=$2
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$root" worktree add --detach "$work/tree" "$commit" >/dev/null
target=${MNEMON_FIXTURE_TARGET:-$work/target}
(cd "$work/tree" && CARGO_INCREMENTAL=0 CARGO_TARGET_DIR=$target \
    cargo build --quiet -p mnemon-cli --no-default-features)
mnemon() { "$target/debug/mnemon" --db "$work/f.redb" --ns fixture "$@"; }
mnemon init >/dev/null
decision=$(mnemon add decision --data '{"title":"Use redb","rationale":"embedded, one file"}')
mnemon add learning --data '{"text":"bounded queues need backpressure"}' >/dev/null
task=$(mnemon add task --data '{"title":"Write the importer"}')
mnemon revise "$decision" --data '{"rationale":"embedded, one file, ACID transactions"}' >/dev/null
mnemon retire "$task" >/dev/null
mnemon check >/dev/null
cp "$work/f.redb" "$root/crates/storage/tests/data/format$version.redb"
echo "format $version from $commit: decision $decision, task $task (retired)"
