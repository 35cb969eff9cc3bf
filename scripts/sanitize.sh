#!/usr/bin/env bash
# Builds the whole test suite with AddressSanitizer + UndefinedBehaviorSanitizer (gcc, shared runtime so
# connector modules resolve it from the host) and runs it. Any sanitizer report fails the test that hit
# it. Usage: ./scripts/sanitize.sh [build-dir]   (default build-asan; CI runs it after scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-asan}"
./scripts/setup-debian.sh postgres redis nats rabbitmq browser providers proxy
# The product (bridge, SDK, connectors) is instrumented at -O1. Test code compiles exactly as in the
# normal build (see tests/CMakeLists.txt), so after scripts/test.sh the compiler cache supplies those
# objects: same command lines, and the cache must not key on the build directory (nor on the path
# of a unity batch inside it).
export CCACHE_NOHASHDIR=1 CCACHE_BASEDIR="$PWD"
cmake -S . -B "$build" -G Ninja -DWOPBRIDGE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DWOPBRIDGE_BUILD_TESTS=ON >/dev/null
if [[ -f build/compile_commands.json ]]; then
    python3 scripts/check-shared-test-objects.py build "$build"
fi
cmake --build "$build" -j"$(nproc)"
# Child processes (wopbridge serve, modules) inherit these. Leaks are checked; tests/lsan.supp lists the
# deliberate ones with the reason for each.
# handle_segv=0: connector-check tests crash test modules on purpose (SIGSEGV in a forked child) and
# assert on the signal; a real segfault still fails the test that hits it.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=1:handle_segv=0"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
junit="$(cd "$build" && pwd)/ctest-junit.xml"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 600 --output-junit "$junit"
# A skip counts as passed for ctest; with CI=true an unexpected one fails the run.
python3 scripts/check-skips.py "$junit"
