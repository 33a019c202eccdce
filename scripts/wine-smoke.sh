#!/usr/bin/env bash
# Runs the Windows build under wine through the MCP Python SDK (tests/clients/wine). Needs wine
# (Debian's `wine`), python3 with venv; makes the SDK's venv as scripts/client-tests.sh does and
# a throwaway wine prefix. Usage: scripts/wine-smoke.sh [path/to/stratum-mcp.exe]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export STRATUM_MCP_EXE="${1:-${STRATUM_MCP_EXE:-target/x86_64-pc-windows-gnu/release/stratum-mcp.exe}}"
command -v wine >/dev/null || { echo "wine-smoke: wine is missing (apt-get install wine)" >&2; exit 1; }

PY_DIR="$ROOT/tests/clients/python"
if [[ ! -x "$PY_DIR/.venv/bin/python" ]]; then
  python3 -m venv "$PY_DIR/.venv"
fi
"$PY_DIR/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$PY_DIR/requirements.txt"

WINEPREFIX="$(mktemp -d /tmp/stratum-wine.XXXXXX)"
export WINEPREFIX WINEDEBUG=-all
# No Mono or Gecko prompts: the server needs neither.
export WINEDLLOVERRIDES="mscoree,mshtml="
cleanup() { wineserver -k >/dev/null 2>&1 || true; rm -rf "$WINEPREFIX"; }
trap cleanup EXIT
wineboot --init >/dev/null 2>&1
wineserver -w
# Debian 12's wine lacks bcryptprimitives.dll (ProcessPrng), which Rust's std imports: a stand-in.
if [[ ! -f "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ]]; then
  x86_64-w64-mingw32-gcc -shared -O2 -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
    "$ROOT/tests/clients/wine/bcryptprimitives.c" -ladvapi32
fi
"$PY_DIR/.venv/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/tests/clients/wine/test_wine_smoke.py"
