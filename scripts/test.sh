#!/usr/bin/env bash
# Builds wopbridge and runs the whole test suite. Usage: ./scripts/test.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
./scripts/setup-debian.sh postgres redis nats rabbitmq browser providers proxy
# The compiler cache may serve these objects to other build directories (scripts/sanitize.sh): it
# keys on neither the build directory nor, below the project root, absolute paths (a unity batch is a
# generated file inside the build directory).
export CCACHE_NOHASHDIR=1 CCACHE_BASEDIR="$PWD"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWOPBRIDGE_BUILD_TESTS=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
junit="$(cd "$build" && pwd)/ctest-junit.xml"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 300 --output-junit "$junit"
# A skip counts as passed for ctest; with CI=true an unexpected one fails the run.
python3 scripts/check-skips.py "$junit"
