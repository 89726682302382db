#!/bin/sh
# Install what the web view's browser tests need (crates/cli/tests/ui.rs): Debian's chromium
# (apt, when /usr/bin/chromium is missing) and Playwright for Python (pinned, hash-checked by
# pip --require-hashes) in a virtual environment. Playwright drives the system browser; its
# own browser download is never run. Idempotent.
#
#   scripts/fetch-browser.sh [VENV]     (default: $MNEMON_BROWSER_VENV or ~/.cache/mnemon/browser)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${MNEMON_BROWSER_VENV:-$HOME/.cache/mnemon/browser}}
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null
    else
        sudo -n apt-get update -qq && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null
    fi
fi
/usr/bin/chromium --version
req=$root/crates/cli/tests/ui/requirements.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
stamp=$venv/.mnemon-requirements.sha256
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$venv/bin/python" -c 'import playwright' 2>/dev/null; then
    echo "Playwright already in $venv"
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r "$req"
"$venv/bin/python" -c 'import playwright.sync_api'
echo "$want" > "$stamp"
echo "Playwright (1.65.2) installed in $venv, driving /usr/bin/chromium"
