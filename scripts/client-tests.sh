#!/usr/bin/env bash
# End-to-end tests of stratum-mcp with the official MCP client SDKs (Python and TypeScript),
# over stdio and Streamable HTTP. Needs python3 (with venv), node >= 20 and npm; builds the
# release binary when it is missing. The binary under test is $STRATUM_MCP_BIN
# (default: target/release/stratum-mcp, relative to the repository root).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

export STRATUM_MCP_BIN="${STRATUM_MCP_BIN:-target/release/stratum-mcp}"
case "$STRATUM_MCP_BIN" in
  /*) BIN="$STRATUM_MCP_BIN" ;;
  *) BIN="$ROOT/$STRATUM_MCP_BIN" ;;
esac

if [[ ! -x "$BIN" ]]; then
  if [[ "$BIN" != "$ROOT/target/release/stratum-mcp" ]]; then
    echo "client-tests: STRATUM_MCP_BIN=$STRATUM_MCP_BIN does not exist" >&2
    exit 1
  fi
  echo "client-tests: building stratum-mcp (release)"
  cargo build --release -p pkm-mcp --locked
fi

echo "client-tests: Python SDK"
PY_DIR="$ROOT/tests/clients/python"
if [[ ! -x "$PY_DIR/.venv/bin/python" ]]; then
  python3 -m venv "$PY_DIR/.venv"
fi
"$PY_DIR/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$PY_DIR/requirements.txt"
# Both suites run even when the first fails, so one run reports everything; any failure fails the script.
py_status=0
(cd "$PY_DIR" && .venv/bin/python -m pytest -q -p no:cacheprovider test_clients.py) || py_status=$?

echo "client-tests: TypeScript SDK"
TS_DIR="$ROOT/tests/clients/typescript"
(cd "$TS_DIR" && npm ci --no-audit --no-fund --loglevel=error)
ts_status=0
(cd "$TS_DIR" && node --test test.mjs) || ts_status=$?

if (( py_status != 0 || ts_status != 0 )); then
  echo "client-tests: FAILED (pytest exit $py_status, node --test exit $ts_status)" >&2
  exit 1
fi
