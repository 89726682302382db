#!/bin/sh
# Install the official MCP Python SDK (mcp 2.3.0; every package pinned and hash-checked by pip
# --require-hashes) into a virtual environment, for the MCP client tests
# (crates/cli/tests/mcp_sdk.rs). Idempotent.
#
#   scripts/fetch-mcp-sdk.sh [VENV]     (default: $MNEMON_MCP_SDK_VENV or ~/.cache/mnemon/mcp-sdk)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${MNEMON_MCP_SDK_VENV:-$HOME/.cache/mnemon/mcp-sdk}}
req=$root/crates/cli/tests/mcp_sdk/requirements.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
stamp=$venv/.mnemon-requirements.sha256
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
    echo "MCP Python SDK already in $venv"
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r "$req"
"$venv/bin/python" -c 'import mcp.client.stdio'
echo "$want" > "$stamp"
echo "MCP Python SDK (mcp 2.3.0) installed in $venv"
