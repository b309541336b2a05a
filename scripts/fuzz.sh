#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/) for the given number of seconds
# each (default 60) with cargo fuzz, and prints executions and crashes per target.
#
#   bash scripts/fuzz.sh 600                    # ten minutes per target
#   RUNS=10000000 bash scripts/fuzz.sh 1800     # ten million inputs each (at most 30 min)
#   SANITIZER=address bash scripts/fuzz.sh 60
#   RUNS=200000 bash scripts/fuzz.sh 0          # CI: exactly 200,000 inputs each, no time limit
#
# With 0 seconds a target runs until its RUNS inputs are done (each input
# still has 10 s), and fewer is a failure: the run is bounded by inputs, so a
# slow machine tests as much as a fast one.
# The corpus grows in fuzz/corpus/<target> (not committed), starting from the
# committed seeds in fuzz/seeds/<target>; crashes land in fuzz/artifacts/<target>.
# The default sanitizer is none: the fuzzed crates forbid unsafe code, so
# AddressSanitizer finds nothing more there and runs several times slower.
set -uo pipefail
seconds="${1:-60}"
sanitizer="${SANITIZER:-none}"
runs_flag=()
[ -n "${RUNS:-}" ] && runs_flag=(-runs="$RUNS")
cd "$(dirname "$0")/../fuzz"
# Pinned: CI builds it on a fresh machine (about 75 s on two cores).
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version 0.13.2 --locked
# cargo fuzz passes flags that need nightly; the stable toolchain accepts them so.
export RUSTC_BOOTSTRAP=1
cargo fuzz build --sanitizer "$sanitizer" || exit 1
failed=0
summary=()
for target in frame_decoder sse_parser qualified_name mcp_config gateway_request cluster_frames; do
  mkdir -p "corpus/$target"
  log="$(mktemp)"
  echo "== $target: ${seconds}s${RUNS:+ or $RUNS runs}"
  # -timeout: an input that takes 10 s is a finding too (quadratic paths).
  cargo fuzz run --sanitizer "$sanitizer" "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" "${runs_flag[@]}" -timeout=10 -print_final_stats=1 >"$log" 2>&1
  status=$?
  runs="$(grep -oE '^Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' || echo 0)"
  if [ "$status" -eq 0 ] && [ "$seconds" = 0 ] && [ -n "${RUNS:-}" ] && [ "$runs" != "$RUNS" ]; then
    echo "$target stopped after $runs of $RUNS runs"
    status=1
  fi
  if [ "$status" -ne 0 ]; then
    failed=1
    grep -E "panicked|SUMMARY|Test unit written|ERROR" "$log" | head -20
    summary+=("$target: FAILED after $runs runs (log: $log)")
  else
    summary+=("$target: $runs runs, 0 crashes")
    rm -f "$log"
  fi
done
printf '%s\n' "${summary[@]}"
exit "$failed"
