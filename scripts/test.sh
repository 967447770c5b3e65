#!/usr/bin/env bash
# Builds everything and runs the test suite (host tier everywhere; device tier when a GPU is
# present, otherwise those tests are reported as skipped with the reason), then the host tier
# again with the library's host code under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
BUILD=${BUILD:-build}
start=$(date +%s)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j"$(nproc)"
echo "build took $(( $(date +%s) - start )) s"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)"
"$BUILD/tests/baracuda_device_tests" --gtest_filter='PadDevice.EdgeGeometries' 2>&1 | grep -m1 -o 'no GPU: .*' \
  | sed 's/^/device tier skipped: /' || true

# host tier under ASan/UBSan (validation, geometry and index math at the 2^31 boundaries)
SAN=${BUILD}-asan
cmake -S . -B "$SAN" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DBARACUDA_SANITIZE=ON -DBARACUDA_BUILD_BENCH=OFF > /dev/null
cmake --build "$SAN" -j"$(nproc)" --target baracuda_host_tests
ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  "$SAN/tests/baracuda_host_tests" --gtest_brief=1
