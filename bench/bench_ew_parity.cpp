// PyTorch parity dump of the elementwise family (`baracuda_bench --family ew-parity --parity-dir
// DIR`): every op forward on every bf16 and f16 bit pattern (operand 0; further tensor operands
// get fixed permutations of the patterns), on 65536 f32 and f64 values (special values, random
// bit patterns, moderate values) and on small i32 values with extremes; binary ops also with a
// Python-style scalar on either side (values the 16-bit formats do not hold, and pow's special
// exponents); casts between the float formats, fp8 and bool. Writes DIR/cases.json (op, form,
// dtypes, scalar, params, byte offsets of the inputs and of our output) and DIR/data.bin;
// bench/torch_elementwise_parity.py runs PyTorch on the same inputs and reports bitwise
// agreement per op. Not part of `--family all`.
#include <cuda_runtime_api.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/core/half_bits.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "bench_data.hpp"
#include "timing.hpp"

namespace baracuda::bench {

namespace {

constexpr int64_t kN = 65536;  // elements per case (every 16-bit pattern once)

// Host bytes of one input pool: kN elements of dt for operand slot k (0, 1, 2), or a bool mask.
std::vector<uint8_t> make_pool(DType dt, int k) {
  const size_t es = dtype_size(dt);
  std::vector<uint8_t> h(static_cast<size_t>(kN) * es);
  std::mt19937_64 rng(9001 + 17 * k + static_cast<int>(dt));
  for (int64_t f = 0; f < kN; ++f) {
    uint8_t* p = h.data() + f * es;
    if (dt == DType::bf16 || dt == DType::f16) {
      // slot 0: pattern f; slots 1, 2: odd-multiplier permutations of all patterns
      const uint16_t mul[3] = {1, 40503, 20071}, add[3] = {0, 12345, 777};
      const uint16_t b = static_cast<uint16_t>(f * mul[k] + add[k]);
      std::memcpy(p, &b, 2);
    } else if (dt == DType::f32 || dt == DType::f64) {
      static const float special[] = {0.f, -0.f, 1.f, -1.f, 0.5f, -0.5f, 2.f, -2.f, 3.f, -3.f,
                                      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max(),
                                      -std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                                      std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                                      0.1f, -0.1f, 1e-20f, 1e20f, 88.7f, -88.7f, 0.99999994f, 1.0000001f, 10.f, 100.f, -100.f};
      const int64_t ns = static_cast<int64_t>(sizeof(special) / sizeof(special[0]));
      double v;
      if (f < ns) v = special[(f + 5 * k) % ns];
      else if (f % 4 == 0) {  // random bit patterns: every exponent
        const uint64_t bits = rng();
        if (dt == DType::f32) v = std::bit_cast<float>(static_cast<uint32_t>(bits));
        else v = std::bit_cast<double>(bits);
      } else {
        v = std::uniform_real_distribution<double>(-8.0, 8.0)(rng);
      }
      if (dt == DType::f32) {
        const float vf = static_cast<float>(v);
        std::memcpy(p, &vf, 4);
      } else {
        std::memcpy(p, &v, 8);
      }
    } else if (dt == DType::i32) {
      int32_t v = static_cast<int32_t>(rng() % 41) - 20;
      if (rng() % 31 == 0) v = static_cast<int32_t>(rng());
      std::memcpy(p, &v, 4);
    } else if (dt == DType::boolean) {
      p[0] = static_cast<uint8_t>((static_cast<uint64_t>(f) * 2654435761u >> 7) & 1u);
    }
  }
  return h;
}

struct Pool {
  DType dt;
  int k;
  size_t offset;
  void* dev = nullptr;
};

struct Dumper {
  FILE* data = nullptr;
  FILE* index = nullptr;
  size_t offset = 0;
  std::vector<Pool> pools;
  int cases = 0, skipped = 0;
  std::string filter;
  bool trace = false;
  void* out_dev = nullptr;
  std::vector<uint8_t> out_host;

  const Pool& pool(DType dt, int k) {
    for (const Pool& p : pools)
      if (p.dt == dt && p.k == k) return p;
    std::vector<uint8_t> h = make_pool(dt, k);
    Pool p{dt, k, offset};
    BENCH_CUDA_OK(cudaMalloc(&p.dev, h.size()));
    BENCH_CUDA_OK(cudaMemcpy(p.dev, h.data(), h.size(), cudaMemcpyHostToDevice));
    std::fwrite(h.data(), 1, h.size(), data);
    offset += h.size();
    pools.push_back(p);
    return pools.back();
  }

  static std::string num(double v) {
    if (std::isnan(v)) return "null";
    if (std::isinf(v)) return v > 0 ? "1e999" : "-1e999";
    return strf("%.17g", v);
  }

  // One case: operand k is a tensor of dtype dts[k] (pool slot k) or, where scalar[k] is set,
  // that Scalar. Writes our output and its index record.
  void run(EwOp op, const std::vector<DType>& dts, const std::vector<const Scalar*>& scalar, const std::vector<Scalar>& params,
           const std::string& form, std::optional<DType> out_dtype = std::nullopt) {
    const int ar = ew_op_arity(op);
    ElementwiseDescriptor d;
    d.op = op;
    ew_default_params(op, d.param);
    for (size_t i = 0; i < params.size(); ++i) d.param[i] = params[i];
    d.num_operands = ar;
    d.out_dtype = out_dtype;
    for (int k = 0; k < ar; ++k)
      d.operand[k] = scalar[k] ? EwOperand::scalar(*scalar[k]) : EwOperand::tensor(dts[k], {kN});
    const DType data_dt = dts[op == EwOp::where ? 1 : 0];  // where: the values' dtype, not the condition's
    const std::string line = strf("%s %s %s", std::string(ew_op_name(op)).c_str(), std::string(dtype_name(data_dt)).c_str(), form.c_str());
    if (filter_skips(filter, line)) return;
    if (trace) std::fprintf(stderr, "%s\n", line.c_str());  // BARACUDA_PARITY_TRACE=1: the case about to run
    auto plan = ElementwisePlan::select(d);
    if (!plan) {  // a combination the op does not take (PyTorch rejects it too)
      ++skipped;
      return;
    }
    ElementwiseArgs a;
    std::string ins = "[";
    for (int k = 0; k < ar; ++k) {
      if (k) ins += ", ";
      if (scalar[k]) {
        const Scalar& s = *scalar[k];
        ins += s.is_int() ? strf("{\"scalar\": %lld, \"int\": true}", static_cast<long long>(s.i))
                          : (s.is_bool() ? strf("{\"scalar\": %s, \"bool\": true}", s.as_double() != 0 ? "true" : "false")
                                         : "{\"scalar\": " + num(s.as_double()) + "}");
        continue;
      }
      const Pool& p = pool(dts[k], k);
      a.in[k] = TensorRef::make(p.dev, dts[k], {kN});
      ins += strf("{\"dtype\": \"%s\", \"offset\": %zu}", std::string(dtype_name(dts[k])).c_str(), p.offset);
    }
    ins += "]";
    const DType odt = plan->out_dtype();
    a.out = TensorMut::make(out_dev, odt, {kN});
    BENCH_CUDA_OK(cudaMemset(out_dev, 0xFF, kN * 8));
    const Status st = plan->run(nullptr, {}, a);
    if (!st.ok()) {
      std::printf("ew-parity: %s: run failed: %s\n", line.c_str(), st.to_string().c_str());
      ++skipped;
      return;
    }
    const size_t ob = static_cast<size_t>(kN) * dtype_size(odt);
    BENCH_CUDA_OK(cudaMemcpy(out_host.data(), out_dev, ob, cudaMemcpyDeviceToHost));
    std::fwrite(out_host.data(), 1, ob, data);
    std::string ps = "[";
    for (int i = 0; i < kEwMaxParams; ++i) ps += (i ? ", " : "") + num(d.param[i].as_double());
    ps += "]";
    std::fprintf(index, "%s  {\"op\": \"%s\", \"form\": \"%s\", \"dtype\": \"%s\", \"n\": %lld, \"inputs\": %s, \"params\": %s, "
                        "\"out\": {\"dtype\": \"%s\", \"offset\": %zu}}",
                 cases ? ",\n" : "", std::string(ew_op_name(op)).c_str(), form.c_str(), std::string(dtype_name(data_dt)).c_str(),
                 static_cast<long long>(kN), ins.c_str(), ps.c_str(), std::string(dtype_name(odt)).c_str(), offset);
    offset += ob;
    ++cases;
  }
};

// Parameters for the parity cases: PyTorch's defaults, except where PyTorch needs them given
// (clamp, threshold, polygamma) or a value the 16-bit formats do not hold tests their reading.
std::vector<Scalar> parity_params(EwOp op) {
  switch (op) {
    case EwOp::clamp: return {-0.5, 1.25};
    case EwOp::threshold: return {0.1, 0.3};
    case EwOp::hardshrink: case EwOp::softshrink: return {0.3};
    case EwOp::polygamma: return {Scalar(int64_t{1})};
    case EwOp::lerp_scalar: return {0.3};
    case EwOp::masked_fill: return {0.1};
    case EwOp::addcmul: case EwOp::addcdiv: return {0.7};
    default: return {};
  }
}

}  // namespace

int run_ew_parity(const std::string& dir, const std::string& filter) {
  int dev_count = 0;
  if (cudaGetDeviceCount(&dev_count) != cudaSuccess || dev_count == 0) {
    std::printf("ew-parity: no CUDA device; nothing written\n");
    return 0;
  }
  Dumper D;
  D.filter = filter;
  D.trace = std::getenv("BARACUDA_PARITY_TRACE") != nullptr;
  D.data = std::fopen((dir + "/data.bin").c_str(), "wb");
  D.index = std::fopen((dir + "/cases.json").c_str(), "w");
  if (!D.data || !D.index) {
    std::printf("ew-parity: cannot write into %s\n", dir.c_str());
    return 1;
  }
  BENCH_CUDA_OK(cudaMalloc(&D.out_dev, kN * 8));
  D.out_host.resize(kN * 8);
  std::fprintf(D.index, "[\n");
  const Scalar floats[] = {0.1, 0.3, 1.0 / 3.0, 2.001, -2.5, 0.5, -0.5, -1.0, 2.0, 3.0, -2.0};
  const Scalar ints[] = {Scalar(int64_t{3}), Scalar(int64_t{-2})};
  for (int o = 0; o < kNumEwOps; ++o) {
    const EwOp op = static_cast<EwOp>(o);
    if (op == EwOp::to) continue;
    const EwKind kind = ew_op_kind(op);
    const int ar = ew_op_arity(op);
    std::vector<DType> dts;
    if (ew_kind_has_floats(kind)) dts = {DType::bf16, DType::f16, DType::f32, DType::f64};
    if (ew_kind_has_ints(kind)) dts.push_back(DType::i32);
    const std::vector<Scalar> ps = parity_params(op);
    for (DType dt : dts) {
      std::vector<DType> t(ar, dt);
      if (op == EwOp::where) t[0] = DType::boolean;
      if (op == EwOp::masked_fill) t[1] = DType::boolean;
      std::vector<const Scalar*> none(ar, nullptr);
      D.run(op, t, none, ps, "tensor");
      if (ar < 2 || op == EwOp::masked_fill || (ar == 3 && op != EwOp::where)) continue;
      // a scalar in the last slot (where: the `other` value), and for binary ops in the first
      const bool fdt = dt != DType::i32;
      const int n_sc = fdt ? static_cast<int>(std::size(floats)) : static_cast<int>(std::size(ints));
      for (int i = 0; i < n_sc; ++i) {
        const Scalar* s = fdt ? &floats[i] : &ints[i];
        std::vector<const Scalar*> last = none;
        last[ar - 1] = s;
        D.run(op, t, last, ps, ar == 2 ? "tensor-scalar" : "scalar-other");
        if (ar == 2 && (i < 5 || !fdt)) {
          std::vector<const Scalar*> first = none;
          first[0] = s;
          D.run(op, t, first, ps, "scalar-tensor");
        }
      }
    }
  }
  // casts among the float formats, fp8 and bool
  const DType from[] = {DType::bf16, DType::f16, DType::f32, DType::f64};
  const DType to[] = {DType::bf16, DType::f16, DType::f32, DType::f64, DType::f8e4m3, DType::f8e5m2, DType::boolean};
  for (DType a : from)
    for (DType b : to)
      if (a != b) D.run(EwOp::to, {a}, {nullptr}, {}, "to " + std::string(dtype_name(b)), b);
  std::fprintf(D.index, "\n]\n");
  std::fclose(D.index);
  std::fclose(D.data);
  BENCH_CUDA_OK(cudaFree(D.out_dev));
  for (const Pool& p : D.pools) BENCH_CUDA_OK(cudaFree(p.dev));
  std::printf("ew-parity: %d cases (%d combinations skipped), %.1f MB in %s/data.bin\n", D.cases, D.skipped, D.offset / 1e6, dir.c_str());
  return 0;
}

}  // namespace baracuda::bench
