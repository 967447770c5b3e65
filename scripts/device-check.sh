#!/usr/bin/env bash
# The whole GPU round trip in one command (run on the H200 machine from the repo root):
# build, device + host tests, compute-sanitizer, benchmarks, PyTorch side by side.
# Logs and tables go to $OUT (default /tmp/baracuda-out). Usage:
#   COMMIT=abc1234 DATE=2026-11-21 [BENCH_FAMILY=pad|gemm|elementwise|rope|conv1d|embedding|all] [BENCH_QUICK=1] scripts/device-check.sh [--no-sanitizer] [--no-bench]
set -uo pipefail
OUT=${OUT:-/tmp/baracuda-out}
mkdir -p "$OUT"
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DATE=${DATE:-$(date +%F)}
SAN=1; BENCH=1
for a in "$@"; do
  case "$a" in --no-sanitizer) SAN=0 ;; --no-bench) BENCH=0 ;; esac
done
BUILD=${BUILD:-build-device}
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
start=$(date +%s)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/configure.log" 2>&1 || { tail -20 "$OUT/configure.log"; exit 1; }
ninja -C "$BUILD" -j"$(nproc)" > "$OUT/build.log" 2>&1 || { grep -m20 -E "error" "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
ctest --test-dir "$BUILD" -j4 --output-on-failure > "$OUT/ctest.log" 2>&1 || status=1
tail -4 "$OUT/ctest.log"
"$BUILD/tests/baracuda_device_tests" --gtest_filter='PadDevice.*Matrix*' 2>&1 | grep -E '^\[pad' | tee "$OUT/device_summary.txt"
grep -E '^\[gemm' "$OUT/ctest.log" | tee -a "$OUT/device_summary.txt"
"$BUILD/tests/baracuda_device_tests" --gtest_filter='ElementwiseDevice.Every*:ReduceToShapeDevice.*' 2>&1 | grep -E '^\[(elementwise|reduce)' | tee -a "$OUT/device_summary.txt"
"$BUILD/tests/baracuda_device_tests" --gtest_filter='RopeDevice.*' 2>&1 | grep -E '^\[rope' | tee -a "$OUT/device_summary.txt"
"$BUILD/tests/baracuda_device_tests" --gtest_filter='CausalConv1dDevice.*' 2>&1 | grep -E '^\[causal_conv1d' | tee -a "$OUT/device_summary.txt"
"$BUILD/tests/baracuda_device_tests" --gtest_filter='EmbeddingDevice.*' 2>&1 | grep -E '^\[embedding' | tee -a "$OUT/device_summary.txt"
if [ $SAN = 1 ]; then
  compute-sanitizer --tool memcheck --error-exitcode 9 "$BUILD/tests/baracuda_device_tests" \
    --gtest_filter='-*Large*:*BeyondTwoToThe31*:*BeyondInt32*:GemmDevice.MatmulShapes*:GemmDevice.Batch65537' > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$? ($(grep -c 'Invalid' "$OUT/memcheck.log") invalid accesses); $(tail -1 "$OUT/memcheck.log")"
  compute-sanitizer --tool initcheck --error-exitcode 9 "$BUILD/tests/baracuda_device_tests" \
    --gtest_filter='PadDevice.EdgeGeometries:PadDevice.GraphCapture*:ElementwiseDevice.MixedDtypes*:ReduceToShapeDevice.*' > "$OUT/initcheck.log" 2>&1
  echo "initcheck rc=$?; $(tail -1 "$OUT/initcheck.log")"
  for tool in racecheck synccheck; do  # kernels with shared memory and barriers
    compute-sanitizer --tool $tool --error-exitcode 9 "$BUILD/tests/baracuda_device_tests" \
      --gtest_filter='RopeDevice.AllViewPairsOnOneShape:CausalConv1dDevice.GraphCapture' > "$OUT/$tool.log" 2>&1
    echo "$tool rc=$?; $(tail -1 "$OUT/$tool.log")"
  done
fi
if [ $BENCH = 1 ]; then
  FAM=${BENCH_FAMILY:-all}  # pad | gemm | elementwise | rope | conv1d | embedding | all
  "$BUILD/bench/baracuda_bench" --family "$FAM" --json "$OUT/bench_raw.json" --gemm-json "$OUT/gemm_raw.json" \
    --ew-json "$OUT/ew_raw.json" --rope-json "$OUT/rope_raw.json" --conv1d-json "$OUT/conv1d_raw.json" --emb-json "$OUT/emb_raw.json" \
    ${BENCH_QUICK:+--quick} > "$OUT/bench.log" 2>&1 || status=1
  cat "$OUT/bench.log"
  if [ "$FAM" = all ] || [ "$FAM" = pad ]; then
    python3 bench/torch_side_by_side.py --ours "$OUT/bench_raw.json" --out-json "$OUT/pad.json" \
      --out-md "$OUT/pad.md" --commit "$COMMIT" --date "$DATE" > "$OUT/torch.log" 2>&1 || status=1
    tail -30 "$OUT/torch.log"
  fi
  if [ "$FAM" = all ] || [ "$FAM" = elementwise ]; then
    (cd bench && python3 torch_elementwise_side_by_side.py --ours "$OUT/ew_raw.json" --out-json "$OUT/elementwise.json" \
      --out-md "$OUT/elementwise.md" --commit "$COMMIT" --date "$DATE") > "$OUT/torch_ew.log" 2>&1 || status=1
    tail -3 "$OUT/torch_ew.log"
    # bitwise parity of every forward op with PyTorch (docs/perf/elementwise_parity.md)
    PDIR=$(mktemp -d)
    "$BUILD/bench/baracuda_bench" --family ew-parity --parity-dir "$PDIR" > "$OUT/parity.log" 2>&1 || status=1
    (cd bench && python3 torch_elementwise_parity.py --dir "$PDIR" --out-json "$OUT/elementwise_parity.json" \
      --out-md "$OUT/elementwise_parity.md" --commit "$COMMIT" --date "$DATE") >> "$OUT/parity.log" 2>&1 || status=1
    rm -rf "$PDIR"
    tail -4 "$OUT/parity.log"
  fi
  if [ "$FAM" = all ] || [ "$FAM" = rope ]; then
    (cd bench && python3 torch_rope_side_by_side.py --ours "$OUT/rope_raw.json" --out-json "$OUT/rope.json" \
      --out-md "$OUT/rope.md" --commit "$COMMIT" --date "$DATE") > "$OUT/torch_rope.log" 2>&1 || status=1
    tail -20 "$OUT/torch_rope.log"
  fi
  if [ "$FAM" = all ] || [ "$FAM" = conv1d ]; then
    (cd bench && python3 torch_conv1d_side_by_side.py --ours "$OUT/conv1d_raw.json" --out-json "$OUT/causal_conv1d.json" \
      --out-md "$OUT/causal_conv1d.md" --commit "$COMMIT" --date "$DATE") > "$OUT/torch_conv1d.log" 2>&1 || status=1
    tail -20 "$OUT/torch_conv1d.log"
  fi
  if [ "$FAM" = all ] || [ "$FAM" = embedding ]; then
    (cd bench && python3 torch_embedding_side_by_side.py --ours "$OUT/emb_raw.json" --out-json "$OUT/embedding.json" \
      --out-md "$OUT/embedding.md" --commit "$COMMIT" --date "$DATE") > "$OUT/torch_embedding.log" 2>&1 || status=1
    tail -20 "$OUT/torch_embedding.log"
  fi
  if [ "$FAM" = all ] || [ "$FAM" = gemm ]; then
    python3 bench/torch_gemm_side_by_side.py --ours "$OUT/gemm_raw.json" --out-json "$OUT/gemm.json" \
      --out-md "$OUT/gemm.md" --commit "$COMMIT" --date "$DATE" > "$OUT/torch_gemm.log" 2>&1 || status=1
    tail -30 "$OUT/torch_gemm.log"
  fi
fi
exit $status
