#!/usr/bin/env bash
# Fuzzing with libFuzzer (the layout is cargo-fuzz's: fuzz/Cargo.toml, fuzz/fuzz_targets/). Builds
# the targets with the sanitizer-coverage flags cargo-fuzz uses, on the stable toolchain (no
# nightly, no AddressSanitizer: the code under test is safe Rust, so coverage guidance plus Rust's
# own checks, debug assertions and overflow checks are what find bugs).
#   scripts/fuzz.sh                 every target for FUZZ_SECONDS (default 60) each, two at a time
#   scripts/fuzz.sh markdown_roundtrip frontmatter     the named targets only
# Seeds come from fuzz/seeds/<target>/ and the corpus grows in fuzz/corpus/<target>/ (gitignored).
# A crash leaves its input in fuzz/artifacts/<target>/; replay it with
#   fuzz/target/release/<target> fuzz/artifacts/<target>/crash-...
# then make it a named regression test next to the code it broke.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT/fuzz"

ALL=(vault_path markdown_roundtrip frontmatter search_query tool_args)
TARGETS=("$@")
if [[ ${#TARGETS[@]} -eq 0 ]]; then TARGETS=("${ALL[@]}"); fi
SECONDS_EACH="${FUZZ_SECONDS:-60}"
JOBS="${FUZZ_JOBS:-2}"

export CARGO_TARGET_DIR="$ROOT/fuzz/target"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cllvm-args=-sanitizer-coverage-stack-depth \
--cfg fuzzing"
bins=()
for t in "${TARGETS[@]}"; do bins+=(--bin "$t"); done
echo "fuzz: building ${TARGETS[*]}"
cargo build --release --locked "${bins[@]}"

run_one() {
  local t="$1"
  mkdir -p "corpus/$t" "artifacts/$t" "seeds/$t"
  local log="artifacts/$t/last-run.log"
  if "target/release/$t" "corpus/$t" "seeds/$t" \
      -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1; then
    echo "fuzz: $t OK: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs in ${SECONDS_EACH}s"
  else
    echo "fuzz: $t FAILED; log follows" >&2
    tail -n 40 "$log" >&2
    return 1
  fi
}
export -f run_one
export SECONDS_EACH
printf '%s\n' "${TARGETS[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one {}'
