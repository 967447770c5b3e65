#!/usr/bin/env bash
# The main job: builds, then verifies and benchmarks every implemented op on the GPU
# (bench/baracuda_bench). Without a GPU it says so and only checks plan selection.
# On the GPU machine, scripts/device-check.sh adds the tests, sanitizers and PyTorch side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j"$(nproc)" --target baracuda_bench
"$BUILD/bench/baracuda_bench" "$@"
