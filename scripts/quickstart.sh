#!/usr/bin/env bash
# Builds wopbridge and runs the quickstart bridge on the embedded defaults (SQLite, local run ledger).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-debian.sh
# The product only: the test suites are more than half of the build (scripts/test.sh builds them).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWOPBRIDGE_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)"
exec ./examples/quickstart/run.sh
