#!/usr/bin/env bash
# Builds everything and runs the test suite (host tier everywhere; device tier when a GPU is
# present, otherwise those tests are reported as skipped with the reason).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
BUILD=${BUILD:-build}
start=$(date +%s)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j"$(nproc)"
echo "build took $(( $(date +%s) - start )) s"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)"
