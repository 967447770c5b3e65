#!/usr/bin/env bash
# Builds everything and runs the test suite (host tier everywhere; device tier when a GPU is
# present, otherwise those tests are reported as skipped with the reason), then the host tier
# again with the library's host code under AddressSanitizer + UBSan (+ float-cast-overflow),
# and the descriptor fuzzer over the op table under them.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
BUILD=${BUILD:-build}
start=$(date +%s)
# (the Python lookups are redone: the package step below configures this tree with a throwaway venv)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBARACUDA_BUILD_PYTHON=OFF -U "Python*" -U "_Python*"
cmake --build "$BUILD" -j"$(nproc)"
echo "build took $(( $(date +%s) - start )) s"
log=$(mktemp)
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" | tee "$log"
total=$(grep -oE 'out of [0-9]+' "$log" | grep -oE '[0-9]+' | tail -1)
skipped=$(grep -cE '\(Skipped\)' "$log" || true)
"$BUILD/tests/baracuda_device_tests" --gtest_filter='PadDevice.EdgeGeometries' 2>&1 | grep -m1 -o 'no GPU: .*' \
  | sed 's/^/device tier skipped: /' || true

# host tier under ASan/UBSan (validation, geometry and index math at the 2^31 boundaries)
SAN=${BUILD}-asan
cmake -S . -B "$SAN" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DBARACUDA_SANITIZE=ON -DBARACUDA_BUILD_BENCH=OFF > /dev/null
cmake --build "$SAN" -j"$(nproc)" --target baracuda_host_tests baracuda_fuzz
ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  "$SAN/tests/baracuda_host_tests" --gtest_brief=1 | tee "$log"
san=$(grep -oE 'PASSED  \] [0-9]+' "$log" | grep -oE '[0-9]+$')
# the descriptor fuzzer over the op table under the sanitizers (a fixed seed and round count:
# the same cases on every machine; scripts/fuzz.sh explores further)
ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  "$SAN/tests/baracuda_fuzz" --iterations "${FUZZ_ITERATIONS:-20000}" --seed 1 | tail -3

# the Python package: pip install into a throwaway venv, reusing the Release build tree (the
# extension is the only new target), its tests (python/tests; the GPU tier skips without a GPU),
# and an sdist
VENV=$(mktemp -d)
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q nanobind scikit-build-core pytest numpy build
"$VENV/bin/pip" install -q --no-build-isolation -C build-dir="$BUILD" -C cmake.define.BARACUDA_BUILD_TESTS=ON \
  -C cmake.define.BARACUDA_BUILD_BENCH=ON .
root=$PWD
(cd "$VENV" && "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests") | tee "$log"
py=$(grep -oE '[0-9]+ passed' "$log" | grep -oE '[0-9]+')
"$VENV/bin/python" -m build --sdist --no-isolation -o "$VENV/dist" . > /dev/null
echo "sdist: $(ls "$VENV/dist")"
rm -rf "$VENV" "$log"
# ctest, pytest and set -e stop the script on any failure, so reaching here means none failed
echo "tests: $(( total - skipped + san + 1 + py )) passed, 0 failed, ${skipped} skipped (the C++ suites, the sanitizer host" \
  "tier and fuzz run, the Python package's host tests)"
