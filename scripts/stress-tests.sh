#!/usr/bin/env bash
# Runs tests repeatedly while other processes keep every core busy: the busy CI machine, on purpose.
# A test that passes on a quiet machine and fails here waits on time instead of an event, or asserts
# "at once" across threads or processes. Run it on the tests a change touched before submitting.
#
#   scripts/stress-tests.sh [-n ROUNDS] [-R REGEX] [-E REGEX] [-j JOBS] [--no-load] [BUILD_DIR ...]
#
#   -n ROUNDS   how many times each selected test runs (default 3)
#   -R REGEX    ctest's -R: the tests to run (default: all)
#   -E REGEX    ctest's -E: tests to leave out
#   -j JOBS     ctest jobs per round (default: the number of cores)
#   --no-load   run without the busy loops (to tell a load failure from a plain one)
#   BUILD_DIR   built trees to run in, one after the other (default: build, and build-asan when it
#               exists; scripts/test.sh and scripts/sanitize.sh make them)
#
# Every failure is reported with its round, its build and the test's own output, kept under
# <BUILD_DIR>/stress/ (round-N.log, round-N.xml). Exit 0 only when every round of every build passed.
# The last line is "stress: N passed, N failed" over every test run of every round.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3
include=""
exclude=""
jobs="$(nproc)"
load=1
builds=()
while [ $# -gt 0 ]; do
    case "$1" in
        -n) rounds="$2"; shift 2 ;;
        -R) include="$2"; shift 2 ;;
        -E) exclude="$2"; shift 2 ;;
        -j) jobs="$2"; shift 2 ;;
        --no-load) load=0; shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "stress: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) builds+=("$1"); shift ;;
    esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "stress: -n takes a whole number >= 1" >&2; exit 2 ;; esac
if [ ${#builds[@]} -eq 0 ]; then
    builds=(build)
    [ -d build-asan ] && builds+=(build-asan)
fi
for b in "${builds[@]}"; do
    if [ ! -f "$b/CTestTestfile.cmake" ]; then
        echo "stress: $b is not a built tree (scripts/test.sh builds build/, scripts/sanitize.sh build-asan/)" >&2
        exit 2
    fi
done

# The load: one busy loop per core at the tests' own priority, so every test competes for CPU the
# way it does on a busy CI machine. Stopped on any exit.
load_pids=()
stop_load() {
    for p in "${load_pids[@]:-}"; do
        [ -n "$p" ] && kill "$p" 2>/dev/null || true
    done
    load_pids=()
}
trap stop_load EXIT INT TERM
if [ "$load" = 1 ]; then
    for _ in $(seq "$(nproc)"); do
        ( while :; do :; done ) &
        load_pids+=("$!")
    done
fi

# The same sanitizer settings as scripts/sanitize.sh (an ASan build reads them; others ignore them).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=1:handle_segv=0"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

passed=0
failed=0
failures=()
start=$SECONDS
for b in "${builds[@]}"; do
    out="$b/stress"
    mkdir -p "$out"
    timeout_s=300
    grep -q 'WOPBRIDGE_SANITIZE:BOOL=ON' "$b/CMakeCache.txt" 2>/dev/null && timeout_s=600
    for round in $(seq "$rounds"); do
        args=(--test-dir "$b" -j"$jobs" --timeout "$timeout_s" --output-on-failure
              --output-junit "$(cd "$out" && pwd)/round-$round.xml")
        [ -n "$include" ] && args+=(-R "$include")
        [ -n "$exclude" ] && args+=(-E "$exclude")
        echo "stress: $b round $round/$rounds (load: $([ "$load" = 1 ] && echo "$(nproc) busy loops" || echo none))"
        ctest "${args[@]}" >"$out/round-$round.log" 2>&1 || true
        # Count from the JUnit file: ctest's own exit code does not say how many.
        read -r p f names < <(python3 - "$out/round-$round.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print(0, 1, "(no-junit-written)")
    sys.exit(0)
ok = bad = 0
names = []
for case in root.iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        bad += 1
        names.append(case.get("name", "?"))
    elif case.get("status") in ("fail", "error"):
        bad += 1
        names.append(case.get("name", "?"))
    else:
        ok += 1
print(ok, bad, " ".join(names) or "-")
EOF
)
        passed=$((passed + p))
        failed=$((failed + f))
        if [ "$f" -gt 0 ]; then
            echo "stress: $b round $round: $f failed: $names"
            for n in $names; do
                failures+=("$b round $round: $n")
                # The failing test's own output, as ctest printed it.
                awk -v name="$n" '
                    /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / || /^ +Start +[0-9]+: / {
                        on = ($0 ~ /Test +#/ && index($0, ": " name " ") > 0)
                    }
                    on { print }
                ' "$out/round-$round.log" | tail -n 200 | sed "s/^/    /"
            done
            echo "    (whole log: $out/round-$round.log)"
        fi
    done
done
stop_load
echo "stress: $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s over ${builds[*]}, $rounds round(s) each"
if [ ${#failures[@]} -gt 0 ]; then
    echo "stress: failures:"
    printf '  %s\n' "${failures[@]}"
fi
echo "stress: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
