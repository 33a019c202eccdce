#!/usr/bin/env bash
# Fuzzing with libFuzzer (the layout is cargo-fuzz's: fuzz/Cargo.toml, fuzz/fuzz_targets/). Builds
# the targets with the sanitizer-coverage flags cargo-fuzz uses, on the stable toolchain (no
# nightly, no AddressSanitizer: the code under test is safe Rust, so coverage guidance plus Rust's
# own checks, debug assertions and overflow checks are what find bugs).
#   scripts/fuzz.sh                 every target for FUZZ_SECONDS (default 60) each, two at a time
#   scripts/fuzz.sh markdown_roundtrip frontmatter     the named targets only
# Seeds come from fuzz/seeds/<target>/ and the corpus grows in fuzz/corpus/<target>/ (gitignored).
# A crash leaves its input in fuzz/artifacts/<target>/; replay it with
#   target/release/<target> fuzz/artifacts/<target>/crash-...
# then make it a named regression test next to the code it broke.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT/fuzz"

ALL=(vault_path markdown_roundtrip frontmatter search_query tool_args edit_list)
TARGETS=("$@")
if [[ ${#TARGETS[@]} -eq 0 ]]; then TARGETS=("${ALL[@]}"); fi
SECONDS_EACH="${FUZZ_SECONDS:-60}"
# FUZZ_RUNS=N (with FUZZ_SEED, default 1) makes a run reproducible: N inputs from a fixed seed,
# whatever the machine's speed. .ci/run uses it so that CI fails only on what a run here finds.
RUNS="${FUZZ_RUNS:-}"
SEED="${FUZZ_SEED:-1}"
JOBS="${FUZZ_JOBS:-2}"

# The targets build into the workspace's target dir with its release profile (fuzz/Cargo.toml
# repeats it), so every dependency compiled by `cargo build --release` is reused. Only the
# project's own crates are rebuilt: with debug assertions and overflow checks (per-package profile
# settings, which also keep their artifacts apart from the release build's) and with libFuzzer's
# coverage instrumentation, which scripts/fuzz-rustc adds to them alone: the fuzzer is guided by
# the code under test, and the dependencies run uninstrumented.
export CARGO_TARGET_DIR="$ROOT/target"
export RUSTC_WRAPPER="$ROOT/scripts/fuzz-rustc"
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS RUSTC_WORKSPACE_WRAPPER
BIN_DIR="$CARGO_TARGET_DIR/release"
bins=()
for t in "${TARGETS[@]}"; do bins+=(--bin "$t"); done
echo "fuzz: building ${TARGETS[*]}"
cargo build --release --locked "${bins[@]}"

run_one() {
  local t="$1"
  mkdir -p "corpus/$t" "artifacts/$t" "seeds/$t"
  local log="artifacts/$t/last-run.log"
  local budget=(-max_total_time="$SECONDS_EACH")
  if [[ -n "$RUNS" ]]; then
    # A fresh corpus: the run depends only on the seeds, the seed and the binary.
    rm -rf "corpus/$t" && mkdir -p "corpus/$t"
    budget=(-runs="$RUNS" -seed="$SEED")
  fi
  if "$BIN_DIR/$t" "corpus/$t" "seeds/$t" \
      "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1; then
    echo "fuzz: $t OK: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs"
  else
    echo "fuzz: $t FAILED; log follows" >&2
    tail -n 40 "$log" >&2
    return 1
  fi
}
export -f run_one
export SECONDS_EACH BIN_DIR RUNS SEED
printf '%s\n' "${TARGETS[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one {}'
