#!/usr/bin/env bash
# The whole GPU round trip in one command (run on the GPU machine from the repo root): build,
# the test suite (device tier and contract suite included), compute-sanitizer, the benchmark CLI
# over the problem files, and PyTorch beside every timed record. Logs and tables go to $OUT
# (default /tmp/baracuda-out). Usage:
#   COMMIT=abc1234 DATE=2026-11-27 [BENCH=bench/problems/perf[/FAMILY.txt]] [BENCH_FILTER=TEXT] \
#     [TORCH_COMPILE=rope,rope_backward,...] [PREBUILT=.device-bin/bundle.tar.xz] scripts/device-check.sh [--no-tests] [--no-sanitizer] [--no-bench]
#     [--no-torch] [--parity]
#   With PREBUILT, TESTS_FILTER=GTEST_FILTER runs only those device tests (the contract suite is
#   Contract.*; no host tier) and SAN_FILTER=GTEST_FILTER narrows memcheck, racecheck and synccheck to those tests.
# Results to commit: $OUT/verified.json -> docs/verified.json (the contract suite per row),
# $OUT/perf/<family>.{json,md} -> docs/perf/, then python3 scripts/gen_ops_md.py (docs/ops.md).
set -uo pipefail
OUT=${OUT:-/tmp/baracuda-out}
mkdir -p "$OUT"
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DATE=${DATE:-$(date +%F)}
TESTS=1; SAN=1; BENCHING=1; TORCH=1; PARITY=0
for a in "$@"; do
  case "$a" in --no-tests) TESTS=0 ;; --no-sanitizer) SAN=0 ;; --no-bench) BENCHING=0 ;; --no-torch) TORCH=0 ;; --parity) PARITY=1 ;; esac
done
BUILD=${BUILD:-build-device}
# Python wheels carried in .whl (the device README's route; expecttest for PyTorch's OpInfo
# database in python/tests/test_gpu_parity.py)
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
start=$(date +%s)
PYOPT=""  # the Python package's extension too, where nanobind is installed (the GPU machine has it)
python3 -c "import nanobind" 2>/dev/null && PYOPT="-DBARACUDA_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3)"
if [ -n "${PREBUILT:-}" ]; then
  # binaries built elsewhere (scripts/device-bundle.sh): no compile here but the Python bindings
  mkdir -p "$BUILD" && tar -C "$BUILD" -xf "$PREBUILT" || exit 1  # (gzip or xz: tar tells them apart)
  export LD_LIBRARY_PATH="$PWD/$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [ -n "$PYOPT" ]; then
    lib=$(ls "$PWD/$BUILD"/libbaracuda.so.*.*.* | head -1)
    (cmake -S python -B "$BUILD/python" -G Ninja -DBARACUDA_LIBRARY="$lib" -DPython_EXECUTABLE="$(command -v python3)" &&
      ninja -C "$BUILD/python") > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; PYOPT=""; }
  fi
else
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release $PYOPT > "$OUT/configure.log" 2>&1 || { tail -20 "$OUT/configure.log"; exit 1; }
  ninja -C "$BUILD" -j"$(nproc)" > "$OUT/build.log" 2>&1 || { grep -m20 -E "error" "$OUT/build.log"; exit 1; }
fi
echo "build: $(( $(date +%s) - start )) s"
if [ $TESTS = 1 ] && [ -n "${PREBUILT:-}" ]; then
  # no ctest tree: the two suites directly (the contract results as with ctest)
  start=$(date +%s)
  : > "$OUT/ctest.log"
  [ -z "${TESTS_FILTER:-}" ] && { "$BUILD/tests/baracuda_host_tests" --gtest_brief=1 > "$OUT/ctest.log" 2>&1 || status=1; }
  BARACUDA_CONTRACT_JSON="$OUT/contract.json" "$BUILD/tests/baracuda_device_tests" --gtest_brief=1 \
    ${TESTS_FILTER:+--gtest_filter="$TESTS_FILTER"} >> "$OUT/ctest.log" 2>&1 || status=1
  [ -f "$OUT/contract.json" ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d.update(date=sys.argv[2], commit=sys.argv[3]); json.dump(d, open(sys.argv[4], 'w'), indent=1)" \
    "$OUT/contract.json" "$DATE" "$COMMIT" "$OUT/verified.json" && rm -f "$OUT/contract.json"
  echo "tests: $(( $(date +%s) - start )) s"
  grep -E "^\[(contract|  PASSED|  FAILED)|Failure|repro" "$OUT/ctest.log" | head -80
elif [ $TESTS = 1 ]; then
  start=$(date +%s)
  BARACUDA_CONTRACT_JSON="$OUT/contract.json" ctest --test-dir "$BUILD" -j4 --output-on-failure > "$OUT/ctest.log" 2>&1 || status=1
  [ -f "$OUT/contract.json" ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d.update(date=sys.argv[2], commit=sys.argv[3]); json.dump(d, open(sys.argv[4], 'w'), indent=1)" \
    "$OUT/contract.json" "$DATE" "$COMMIT" "$OUT/verified.json" && rm -f "$OUT/contract.json"
  echo "ctest: $(( $(date +%s) - start )) s"
  tail -4 "$OUT/ctest.log"
  grep -E "^\[(contract|op table|pad|gemm|elementwise|reduce|rope|causal_conv1d|embedding)" "$OUT/ctest.log" | sort -u > "$OUT/device_summary.txt"
  # the per-family summaries print from inside the suites: run them once more for their lines
  "$BUILD/tests/baracuda_device_tests" --gtest_filter='PadDevice.*Matrix*:ElementwiseDevice.Every*:ReduceToShapeDevice.*:RopeDevice.*:CausalConv1dDevice.*:EmbeddingDevice.*' 2>&1 \
    | grep -E '^\[|FAILED|Failure' >> "$OUT/device_summary.txt" || status=1
  [ -f "$OUT/verified.json" ] && python3 -c "import json,sys; [print('[contract]', r) for r in json.load(open(sys.argv[1]))['rows']]" \
    "$OUT/verified.json" >> "$OUT/device_summary.txt"
  cat "$OUT/device_summary.txt"
fi
if [ $TESTS = 1 ] && [ -n "$PYOPT" ]; then
  # the Python package on the GPU: every row from Python, PyTorch parity, gradcheck, compile,
  # graphs, JAX, call overhead (the [overhead] line)
  start=$(date +%s)
  root=$PWD
  (cd "$OUT" && XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH="$root/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" BARACUDA_PARITY_JSON="$OUT/parity.json" \
    python3 -m pytest -q -rs -s -p no:cacheprovider "$root/python/tests") > "$OUT/pytest.log" 2>&1 || status=1
  echo "pytest: $(( $(date +%s) - start )) s; $(grep -E '[0-9]+ (passed|failed)' "$OUT/pytest.log" | tail -1)"
  grep -E '^\[overhead\]|^FAILED' "$OUT/pytest.log"
fi
if [ $SAN = 1 ]; then
  compute-sanitizer --tool memcheck --error-exitcode 9 "$BUILD/tests/baracuda_device_tests" \
    --gtest_filter="${SAN_FILTER:--*Large*:*BeyondTwoToThe31*:*BeyondInt32*:GemmDevice.MatmulShapes*:GemmDevice.Batch65537}" > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$? ($(grep -c 'Invalid' "$OUT/memcheck.log") invalid accesses); $(tail -1 "$OUT/memcheck.log")"
  compute-sanitizer --tool initcheck --error-exitcode 9 "$BUILD/tests/baracuda_device_tests" \
    --gtest_filter='Contract.*:PadDevice.EdgeGeometries:ElementwiseDevice.MixedDtypes*:ReduceToShapeDevice.*' > "$OUT/initcheck.log" 2>&1
  echo "initcheck rc=$?; $(tail -1 "$OUT/initcheck.log")"
  for tool in racecheck synccheck; do  # kernels with shared memory and barriers
    compute-sanitizer --tool $tool --error-exitcode 9 "$BUILD/tests/baracuda_device_tests" \
      --gtest_filter="${SAN_FILTER:-RopeDevice.AllViewPairsOnOneShape:CausalConv1dDevice.ChunkedStates*}" > "$OUT/$tool.log" 2>&1
    echo "$tool rc=$?; $(tail -1 "$OUT/$tool.log")"
  done
fi
if [ $BENCHING = 1 ]; then
  "$BUILD/bench/baracuda_bench" --batch "${BENCH:-bench/problems/perf}" --mode P ${BENCH_FILTER:+--filter "$BENCH_FILTER"} \
    ${BENCH_GRAPH:+--graph} --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1 || status=1
  grep -E "^(PASSED|FAILED|UNSUPPORTED|PERF)" "$OUT/bench.log" | cut -c1-150 | tail -n 400
  tail -2 "$OUT/bench.log"
  if [ $TORCH = 1 ]; then
    (cd bench && PYTHONUNBUFFERED=1 python3 torch_side_by_side.py --ours "$OUT/bench.json" --out-dir "$OUT/perf" \
      --commit "$COMMIT" --date "$DATE" ${TORCH_COMPILE:+--compile "$TORCH_COMPILE"}) > "$OUT/torch.log" 2>&1 || status=1
    tail -40 "$OUT/torch.log"
  fi
fi
if [ $PARITY = 1 ]; then  # bitwise parity of every elementwise forward op with PyTorch
  PDIR=$(mktemp -d)
  "$BUILD/bench/baracuda_bench" --ew-parity "$PDIR" > "$OUT/parity.log" 2>&1 || status=1
  (cd bench && python3 torch_elementwise_parity.py --dir "$PDIR" --out-json "$OUT/elementwise_parity.json" \
    --out-md "$OUT/elementwise_parity.md" --commit "$COMMIT" --date "$DATE") >> "$OUT/parity.log" 2>&1 || status=1
  rm -rf "$PDIR"
  tail -4 "$OUT/parity.log"
fi
exit $status
