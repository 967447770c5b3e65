#!/usr/bin/env bash
# The descriptor fuzzer over the op table (tests/fuzz/fuzz_op_table.cpp), longer than the
# bounded runs of scripts/test.sh: under ASan + UBSan + float-cast-overflow, several seeds.
#   scripts/fuzz.sh [SECONDS_PER_SEED (default 300)] [SEEDS (default "1 2 3 4")] [--row NAME]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
SECS=${1:-300}
SEEDS=${2:-"1 2 3 4"}
shift $(( $# > 2 ? 2 : $# )) || true
SAN=${BUILD:-build}-asan
cmake -S . -B "$SAN" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DBARACUDA_SANITIZE=ON -DBARACUDA_BUILD_BENCH=OFF > /dev/null
cmake --build "$SAN" -j"$(nproc)" --target baracuda_fuzz
for seed in $SEEDS; do
  ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$SAN/tests/baracuda_fuzz" --seconds "$SECS" --seed "$seed" "$@"
done
