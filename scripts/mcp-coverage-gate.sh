#!/usr/bin/env bash
# Coverage gate of the MCP crates (contract §14): fails when LINE coverage of crates/pkm-mcp/src
# plus src-tauri/src is under the threshold (default 80%, override with MCP_COVERAGE_THRESHOLD).
# Uses rustup's llvm-tools directly (no cargo-llvm-cov).
#   scripts/mcp-coverage-gate.sh
#       builds `cargo test -p pkm-mcp -p stratum-app` with `-C instrument-coverage` into
#       target/coverage (the normal target dir is untouched), runs it and reports.
#   scripts/mcp-coverage-gate.sh --from-profiles DIR
#       reports on profiles already written to DIR by an instrumented `cargo test --workspace
#       --locked` run in the current environment (same compiler flags and target dir), plus whatever else
#       ran the instrumented binary since (the client suites in .ci/run). Builds nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

THRESHOLD="${MCP_COVERAGE_THRESHOLD:-80}"
FROM_PROFILES=""
case "${1:-}" in
  --from-profiles) FROM_PROFILES="${2:?--from-profiles needs a directory}" ;;
  "") ;;
  *) echo "usage: scripts/mcp-coverage-gate.sh [--from-profiles DIR]" >&2; exit 2 ;;
esac
# Sources outside the MCP crates: dependencies, the standard library, test code, and the core crates
# (those have their own tests; counting them here would let them mask untested MCP handlers).
IGNORE_REGEX='\.cargo/(registry|git)|rustc/|/tests/|crates/pkm-(core|markdown|block|index)'

rustup component add llvm-tools >/dev/null 2>&1 || rustup component add llvm-tools-preview >/dev/null
HOST="$(rustc -vV | sed -n 's/^host: //p')"
LLVM_BIN="$(rustc --print sysroot)/lib/rustlib/${HOST}/bin"
for tool in llvm-profdata llvm-cov; do
  if [[ ! -x "$LLVM_BIN/$tool" ]]; then
    echo "mcp-coverage: $LLVM_BIN/$tool not found (rustup component add llvm-tools)" >&2
    exit 1
  fi
done

if [[ -n "$FROM_PROFILES" ]]; then
  PROF_DIR="$(cd "$FROM_PROFILES" && pwd)"
  TEST_ARGS=(--workspace --locked)
  OUT_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
else
  export CARGO_TARGET_DIR="$ROOT/target/coverage"
  export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C instrument-coverage"
  PROF_DIR="$CARGO_TARGET_DIR/profraw"
  rm -rf "$PROF_DIR"
  mkdir -p "$PROF_DIR"
  # Absolute path: test binaries run with the package directory as their working directory, and
  # the stratum-mcp child processes they spawn inherit this variable, so their profiles land here
  # too. %4m: at most four files per binary, merged as processes exit.
  export LLVM_PROFILE_FILE="$PROF_DIR/%4m.profraw"
  TEST_ARGS=(-p pkm-mcp -p stratum-app --locked)
  OUT_DIR="$CARGO_TARGET_DIR"
fi

# Every executable of the two MCP crates: their test harnesses plus the stratum-mcp binary the
# integration tests spawn (CARGO_BIN_EXE_stratum-mcp). In --from-profiles mode this is a no-op
# build that only lists them.
echo "mcp-coverage: listing instrumented executables"
OBJECTS_FILE="$OUT_DIR/coverage-objects.txt"
mkdir -p "$OUT_DIR"
cargo test "${TEST_ARGS[@]}" --no-run --message-format=json \
  | python3 -c '
import json, sys
seen = []
for line in sys.stdin:
    line = line.strip()
    if not line.startswith("{"):
        continue
    msg = json.loads(line)
    if msg.get("reason") != "compiler-artifact":
        continue
    exe = msg.get("executable")
    manifest = msg.get("manifest_path", "")
    if not exe or not manifest.endswith(("crates/pkm-mcp/Cargo.toml", "src-tauri/Cargo.toml")):
        continue
    is_test = msg.get("profile", {}).get("test", False)
    is_mcp_bin = "bin" in msg.get("target", {}).get("kind", []) and msg["target"].get("name") == "stratum-mcp"
    if (is_test or is_mcp_bin) and exe not in seen:
        seen.append(exe)
print("\n".join(seen))
' >"$OBJECTS_FILE"

mapfile -t OBJECTS <"$OBJECTS_FILE"
if [[ ${#OBJECTS[@]} -eq 0 ]]; then
  echo "mcp-coverage: no test executables found" >&2
  exit 1
fi
if ! grep -q '/stratum-mcp$' "$OBJECTS_FILE" && [[ -x "$OUT_DIR/debug/stratum-mcp" ]]; then
  # Fresh, so not listed as an artifact: it is still at its fixed path.
  OBJECTS+=("$OUT_DIR/debug/stratum-mcp")
fi

if [[ -z "$FROM_PROFILES" ]]; then
  echo "mcp-coverage: running tests"
  cargo test "${TEST_ARGS[@]}"
fi

PROFDATA="$OUT_DIR/mcp-coverage.profdata"
shopt -s nullglob
PROFRAWS=("$PROF_DIR"/*.profraw)
shopt -u nullglob
if [[ ${#PROFRAWS[@]} -eq 0 ]]; then
  echo "mcp-coverage: tests produced no .profraw files" >&2
  exit 1
fi
"$LLVM_BIN/llvm-profdata" merge -sparse "${PROFRAWS[@]}" -o "$PROFDATA"

COV_ARGS=(-instr-profile="$PROFDATA" --ignore-filename-regex="$IGNORE_REGEX" "${OBJECTS[0]}")
for obj in "${OBJECTS[@]:1}"; do
  COV_ARGS+=(-object "$obj")
done

"$LLVM_BIN/llvm-cov" export -format=text -summary-only "${COV_ARGS[@]}" \
  | python3 -c '
import json, sys
root, threshold = sys.argv[1].rstrip("/") + "/", float(sys.argv[2])
crates = {"pkm-mcp": "crates/pkm-mcp/src/", "stratum-app": "src-tauri/src/"}
totals = {name: [0, 0] for name in crates}
for export in json.load(sys.stdin)["data"]:
    for f in export["files"]:
        path = f["filename"]
        rel = path[len(root):] if path.startswith(root) else path
        lines = f["summary"]["lines"]
        for name, prefix in crates.items():
            if rel.startswith(prefix):
                totals[name][0] += lines["covered"]
                totals[name][1] += lines["count"]
def pct(c, n):
    return 100.0 * c / n if n else 0.0
for name, (c, n) in totals.items():
    print(f"  {name}: {pct(c, n):.1f}% ({c}/{n} lines)")
cov = sum(c for c, _ in totals.values())
cnt = sum(n for _, n in totals.values())
total = pct(cov, cnt)
print(f"  total: {total:.1f}% ({cov}/{cnt} lines)")
print(f"coverage: {total:.1f}% (threshold {threshold:g}%)")
if cnt == 0 or total < threshold:
    print(f"mcp-coverage: FAIL, line coverage under {threshold:g}%", file=sys.stderr)
    sys.exit(1)
' "$ROOT" "$THRESHOLD"
