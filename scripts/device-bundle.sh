#!/usr/bin/env bash
# Packs what this machine built (Release, scripts/test.sh's `build`) for the GPU machine, so that a
# session's device time is not spent compiling: the library, the test binaries and the benchmark
# CLI, xz-compressed into .device-bin/bundle.tar.xz (git-ignored; about 50 MB: gzip's 60+ MB no longer
# fits the device tool's 64 MiB carry beside the working tree). On the GPU machine, with `.device-bin` carried:
#   PREBUILT=.device-bin/bundle.tar.xz scripts/device-check.sh [options]
# (the binaries find the library through LD_LIBRARY_PATH there; the Python bindings are built
# there against it: a few seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
cmake --build "$BUILD" -j"$(nproc)" --target baracuda baracuda_device_tests baracuda_host_tests baracuda_bench > /dev/null
mkdir -p .device-bin
rm -f .device-bin/bundle.tar.gz
tar -C "$BUILD" -cf - \
  $(cd "$BUILD" && ls libbaracuda.so*) tests/baracuda_device_tests tests/baracuda_host_tests bench/baracuda_bench | xz -T0 -6 > .device-bin/bundle.tar.xz
echo "$(du -h .device-bin/bundle.tar.xz | cut -f1) .device-bin/bundle.tar.xz (commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ', with uncommitted changes'))"
