#!/usr/bin/env bash
# Packs what this machine built (Release, scripts/test.sh's `build`) for the GPU machine, so that a
# session's device time is not spent compiling: the library, the test binaries and the benchmark
# CLI, gzipped into .device-bin/bundle.tar.gz (git-ignored; about 32 MB, inside the device tool's
# 64 MiB carry). On the GPU machine, with `.device-bin` carried:
#   PREBUILT=.device-bin/bundle.tar.gz scripts/device-check.sh [options]
# (the binaries find the library through LD_LIBRARY_PATH there; the Python bindings are built
# there against it: a few seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
cmake --build "$BUILD" -j"$(nproc)" --target baracuda baracuda_device_tests baracuda_host_tests baracuda_bench > /dev/null
mkdir -p .device-bin
tar -C "$BUILD" -czf .device-bin/bundle.tar.gz \
  $(cd "$BUILD" && ls libbaracuda.so*) tests/baracuda_device_tests tests/baracuda_host_tests bench/baracuda_bench
echo "$(du -h .device-bin/bundle.tar.gz | cut -f1) .device-bin/bundle.tar.gz (commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ', with uncommitted changes'))"
