#!/bin/sh
# The reference knowledge-graph MCP server (@modelcontextprotocol/server-memory 2026.8.31),
# installed with `npm ci` from the committed package-lock.json (every package pinned with its
# sha512 integrity), for `mnemon-bench mcp --reference`. The tests never need it. Prints the
# command to pass to --reference.
#
#   scripts/fetch-reference-memory-server.sh [DIR]   (default ~/.cache/mnemon/reference-memory-server)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$HOME/.cache/mnemon/reference-memory-server}
mkdir -p "$dir"
cp "$root/benches/reference-memory-server/package.json" "$root/benches/reference-memory-server/package-lock.json" "$dir/"
(cd "$dir" && npm ci --no-audit --no-fund --silent)
echo "node $dir/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
