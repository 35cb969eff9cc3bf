#!/usr/bin/env bash
# Bounded libFuzzer run over every parser target (tests/fuzz). Usage:
#   [FUZZ_SEED=N] scripts/fuzz.sh [seconds-per-target] [target ...]
# Installs the `fuzz` package group, builds the targets with clang in build-fuzz/ (override with
# FUZZ_BUILD_DIR), runs each for the given time (default 20 s) from its committed seed corpus and
# prints one summary line per target. Exit 1 if any target crashed, leaked, hit a sanitizer or
# timed out; the reproducer is kept under <build>/fuzz-out/<target>/.
set -euo pipefail

seconds=${1:-20}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-2}

"$root/scripts/setup-debian.sh" fuzz

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
    -DWOPBRIDGE_FUZZ=ON -DWOPBRIDGE_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" -j"$jobs" --target fuzzers

if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  targets=()
  for dir in "$root"/tests/fuzz/corpus/*/; do
    targets+=("$(basename "$dir")")
  done
fi

failed=0
summary=()
for t in "${targets[@]}"; do
  bin="$build/fuzz/$t"
  out="$build/fuzz-out/$t"
  rm -rf "$out"
  mkdir -p "$out/corpus"
  # FUZZ_SEED fixes the mutation sequence (CI uses it, so a red run is reproducible); unset = random.
  args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
        -artifact_prefix="$out/" -seed="${FUZZ_SEED:-0}")
  dict="$root/tests/fuzz/dict/$t.dict"
  [[ -f "$dict" ]] && args+=(-dict="$dict")
  # New inputs go to the first directory (scratch), never into the committed seeds.
  set +e
  "$bin" "${args[@]}" "$out/corpus" "$root/tests/fuzz/corpus/$t" >"$out/log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$out/log" | tail -1)
  if [[ $rc -eq 0 ]]; then
    status=ok
  else
    status="FAILED (exit $rc; see $out/log)"
    failed=1
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$out/log" | head -5 >&2 || true
  fi
  summary+=("$(printf '%-22s %-6s execs=%-9s %s' "$t" "$status" "${execs:-?}" "${cov:-cov: ?}")")
done

echo "---- fuzz summary (${seconds}s per target) ----"
printf '%s\n' "${summary[@]}"
exit $failed
