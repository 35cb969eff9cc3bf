#!/usr/bin/env bash
# Builds wopbridge and runs the quickstart bridge on the embedded defaults (SQLite, local run ledger).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-debian.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
exec ./examples/quickstart/run.sh
