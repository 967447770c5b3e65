// baracuda_bench — the benchmark / verification CLI (README's main job).
//
// For every implemented op family (today: pad) it
//   1. verifies the op on the GPU against the float64 reference (sampled on the benchmark
//      shapes, exhaustively on reduced shapes),
//   2. measures the copy-bandwidth ceiling in the same run (device-to-device copy, 2 x 2 GiB),
//   3. times each case with CUDA events (warm-up, then the median of many repetitions; working
//      sets far beyond the 50 MB L2) and reports GB/s and the fraction of the ceiling,
//   4. writes machine-readable records (--json FILE) that bench/torch_side_by_side.py
//      completes with PyTorch's time for the same case.
// Without a GPU it says so and exits 0 after checking that every case's plan selects.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "pad_ref.hpp"
#include "timing.hpp"

using namespace baracuda;
using baracuda::bench::median_us;
using baracuda::bench::filter_skips;

namespace {

struct Case {
  PadMode mode;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> pads;  // PyTorch order
};

struct Record {
  std::string op, direction, dtype, variant, sku;
  std::vector<int64_t> shape, pads;
  double us = 0, bytes = 0, tbps = 0, ceiling = 0;
  bool verified = false;
};


bool g_pad_extra = false;  // --pad-extra: more bf16 row lengths, for kernel-selection studies

std::vector<Case> pad_cases() {
  std::vector<Case> cs;
  if (g_pad_extra) {
    for (PadMode m : {PadMode::kReflect, PadMode::kConstant}) {
      cs.push_back({m, DType::bf16, {64, 64, 100, 100}, {1, 1, 1, 1}});  // rows of 102 columns
      cs.push_back({m, DType::bf16, {16, 16, 512, 512}, {2, 2, 2, 2}});  // 516
      cs.push_back({m, DType::bf16, {8, 2048, 1000}, {1, 2}});           // 1003
      cs.push_back({m, DType::bf16, {16, 16384, 64}, {0, 3}});           // 67
    }
  }
  const std::vector<int64_t> s1{16, 512, 16384}, s2{32, 64, 256, 256};
  for (DType dt : {DType::bf16, DType::f32}) {
    for (PadMode m : {PadMode::kReflect, PadMode::kReplicate, PadMode::kCircular}) {
      cs.push_back({m, dt, s1, {3, 3}});
      cs.push_back({m, dt, s2, {1, 1, 1, 1}});
    }
    cs.push_back({PadMode::kConstant, dt, s2, {1, 1, 1, 1}});
    cs.push_back({PadMode::kConstant, dt, s1, {3, 3}});
  }
  return cs;
}

std::string json_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (auto v : s) n *= v;
  return n;
}

// Random bf16 values in [-2, 2]; an f32 buffer reads pairs of them (finite, varied values).
void fill_random_bits(std::vector<uint16_t>& h, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (auto& v : h) v = float_to_bf16_bits(u(rng));
}

Result<PadDescriptor> descriptor(const Case& c) { return PadDescriptor::torch_style(c.dtype, c.shape, c.pads, c.mode); }

// Forward: sampled positions of the full benchmark output against the reference's per-axis map.
bool verify_forward_sampled(const PadDescriptor& d, const void* x_dev, const void* y_dev) {
  const size_t es = dtype_size(d.dtype);
  std::mt19937_64 rng(42);
  const auto os = ref::out_shape(d);
  const int64_t nout = numel(os);
  for (int s = 0; s < 20000; ++s) {
    int64_t f = static_cast<int64_t>(rng() % static_cast<uint64_t>(nout)), rem = f, src = 0, mul = 1;
    for (int a = d.rank - 1; a >= 0; --a) {
      const int64_t o = rem % os[a];
      rem /= os[a];
      const int64_t i = ref::pad_source_index(d.mode, d.in_shape[a], d.pad_low[a], o);
      if (i < 0) {
        src = -1;
        break;
      }
      src += i * mul;
      mul *= d.in_shape[a];
    }
    uint64_t got = 0, want = 0;
    BENCH_CUDA_OK(cudaMemcpy(&got, static_cast<const char*>(y_dev) + f * es, es, cudaMemcpyDeviceToHost));
    if (src >= 0) BENCH_CUDA_OK(cudaMemcpy(&want, static_cast<const char*>(x_dev) + src * es, es, cudaMemcpyDeviceToHost));
    if (got != want) {
      std::fprintf(stderr, "VERIFY FAILED fwd %s at output %lld\n", std::string(enum_name(d.mode)).c_str(), (long long)f);
      return false;
    }
  }
  return true;
}

// Backward: the same mode/pads on a reduced shape, every element against the float64 reference.
bool verify_backward_reduced(const Case& c) {
  Case small = c;
  for (auto& s : small.shape) s = std::min<int64_t>(s, 19);
  auto d = descriptor(small);
  auto plan = PadBackwardPlan::select(*d);
  if (!d || !plan) return false;
  const auto os = ref::out_shape(*d);
  const int64_t nin = numel(small.shape), nout = numel(os);
  const size_t es = dtype_size(c.dtype);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> dy(nout);
  std::vector<uint8_t> hb(nout * es), ho(nin * es);
  for (int64_t i = 0; i < nout; ++i) {
    float v = static_cast<float>(u(rng));
    if (c.dtype == DType::bf16) {
      uint16_t b = float_to_bf16_bits(v);
      std::memcpy(&hb[i * es], &b, 2);
      dy[i] = bf16_bits_to_float(b);
    } else {
      std::memcpy(&hb[i * es], &v, 4);
      dy[i] = v;
    }
  }
  void *ddy = nullptr, *ddx = nullptr;
  BENCH_CUDA_OK(cudaMalloc(&ddy, hb.size()));
  BENCH_CUDA_OK(cudaMalloc(&ddx, ho.size()));
  BENCH_CUDA_OK(cudaMemcpy(ddy, hb.data(), hb.size(), cudaMemcpyHostToDevice));
  Status s = plan->run(nullptr, {}, {TensorRef::make(ddy, c.dtype, os), TensorMut::make(ddx, c.dtype, small.shape)});
  BENCH_CUDA_OK(cudaMemcpy(ho.data(), ddx, ho.size(), cudaMemcpyDeviceToHost));
  cudaFree(ddy);
  cudaFree(ddx);
  if (!s.ok()) return false;
  const auto want = ref::pad_backward(*d, dy);
  const double eps = c.dtype == DType::bf16 ? 7.8125e-3 : 1.2e-7;
  for (int64_t i = 0; i < nin; ++i) {
    double got;
    if (c.dtype == DType::bf16) {
      uint16_t b;
      std::memcpy(&b, &ho[i * es], 2);
      got = bf16_bits_to_float(b);
    } else {
      float f;
      std::memcpy(&f, &ho[i * es], 4);
      got = f;
    }
    if (!(std::abs(got - want[i]) <= eps * std::abs(want[i]) + 1e-5)) {
      std::fprintf(stderr, "VERIFY FAILED bwd at %lld: got %g want %g\n", (long long)i, got, want[i]);
      return false;
    }
  }
  return true;
}

std::string device_name() {
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  return p.name;
}

std::string g_filter;  // --filter: run only cases whose "op dtype shape" line contains it

int run_pad(std::vector<Record>& out, double ceiling, bool quick) {
  int failures = 0;
  std::vector<Case> cases = pad_cases();
  // group by (shape, dtype) so buffers are filled once
  void *x = nullptr, *y = nullptr, *dx = nullptr;
  std::vector<int64_t> cur_shape;
  DType cur_dt = DType::f64;
  for (const Case& c : cases) {
    const std::string label = "pad_" + std::string(enum_name(c.mode)) + " " + std::string(dtype_name(c.dtype)) + " " + json_list(c.shape);
    if (filter_skips(g_filter, label)) continue;
    auto d = descriptor(c);
    auto fwd = PadPlan::select(*d);
    auto bwd = PadBackwardPlan::select(*d);
    if (!fwd || !bwd) {
      std::fprintf(stderr, "select failed: %s\n", (!fwd ? fwd.status() : bwd.status()).to_string().c_str());
      return 1;
    }
    const auto os = ref::out_shape(*d);
    const int64_t nin = numel(c.shape), nout = numel(os);
    const size_t es = dtype_size(c.dtype);
    if (c.shape != cur_shape || c.dtype != cur_dt) {
      cudaFree(x);
      cudaFree(y);
      cudaFree(dx);
      BENCH_CUDA_OK(cudaMalloc(&x, nin * es));
      BENCH_CUDA_OK(cudaMalloc(&dx, nin * es));
      BENCH_CUDA_OK(cudaMalloc(&y, nout * es));
      std::vector<uint16_t> h(nin * es / 2);
      fill_random_bits(h, 1234);
      BENCH_CUDA_OK(cudaMemcpy(x, h.data(), nin * es, cudaMemcpyHostToDevice));
      cur_shape = c.shape;
      cur_dt = c.dtype;
    }
    const TensorRef xr = TensorRef::make(x, c.dtype, c.shape);
    const TensorMut ym = TensorMut::make(y, c.dtype, os);
    const TensorMut dxm = TensorMut::make(dx, c.dtype, c.shape);
    const int warm = quick ? 2 : 5, reps = quick ? 10 : 50;
    Record rf;
    rf.op = "pad_" + std::string(enum_name(c.mode));
    rf.dtype = std::string(dtype_name(c.dtype));
    rf.shape = c.shape;
    rf.pads = c.pads;
    rf.ceiling = ceiling;
    rf.bytes = static_cast<double>((nin + nout) * es);
    std::string variant = "pad=(";
    for (size_t i = 0; i < c.pads.size(); ++i) variant += (i ? "," : "") + std::to_string(c.pads[i]);
    rf.variant = variant + ")";
    Record rb = rf;
    rf.direction = "fwd";
    rb.direction = "bwd";
    rf.sku = fwd->sku().name();
    rb.sku = bwd->sku().name();
    rf.us = median_us([&] { (void)fwd->run(nullptr, {}, {xr, ym}); }, warm, reps);
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    rf.verified = verify_forward_sampled(*d, x, y);
    rb.us = median_us([&] { (void)bwd->run(nullptr, {}, {ym.as_ref(), dxm}); }, warm, reps);
    BENCH_CUDA_OK(cudaGetLastError());
    rb.verified = verify_backward_reduced(c);
    for (Record* r : {&rf, &rb}) {
      r->tbps = r->bytes / (r->us * 1e-6) / 1e12;
      failures += !r->verified;
      std::printf("%-14s %s %-5s %-18s %-14s %9.1f us %6.3f TB/s %5.1f%% of copy  %s\n", r->op.c_str(),
                  r->direction.c_str(), r->dtype.c_str(), json_list(r->shape).c_str(), r->variant.c_str(), r->us,
                  r->tbps, 100 * r->tbps / ceiling, r->verified ? "verified" : "VERIFY FAILED");
      out.push_back(*r);
    }
  }
  cudaFree(x);
  cudaFree(y);
  cudaFree(dx);
  return failures;
}

// Host cost of one run() call (argument checks + geometry + launch), enqueue only.
double host_overhead_us() {
  auto d = *PadDescriptor::torch_style(DType::f32, {64, 64}, {1, 1, 1, 1}, PadMode::kReflect);
  auto plan = *PadPlan::select(d);
  void *x = nullptr, *y = nullptr;
  BENCH_CUDA_OK(cudaMalloc(&x, 64 * 64 * 4));
  BENCH_CUDA_OK(cudaMalloc(&y, 66 * 66 * 4));
  PadArgs a{TensorRef::make(x, DType::f32, {64, 64}), TensorMut::make(y, DType::f32, {66, 66})};
  for (int i = 0; i < 100; ++i) (void)plan.run(nullptr, {}, a);
  BENCH_CUDA_OK(cudaDeviceSynchronize());
  const int n = 2000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) (void)plan.run(nullptr, {}, a);
  auto t1 = std::chrono::steady_clock::now();
  BENCH_CUDA_OK(cudaDeviceSynchronize());
  cudaFree(x);
  cudaFree(y);
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
}

}  // namespace

namespace baracuda::bench {
int run_gemm_family(const std::string& json_path, bool quick, const std::string& filter);  // bench_gemm.cpp
int run_elementwise_family(const std::string& json_path, bool quick, const std::string& filter);  // bench_elementwise.cpp
int run_rope_family(const std::string& json_path, bool quick, const std::string& filter);  // bench_rope.cpp
bool rope_cases_select();
int run_conv1d_family(const std::string& json_path, bool quick, const std::string& filter);  // bench_conv1d.cpp
bool conv1d_cases_select();
int run_embedding_family(const std::string& json_path, bool quick, const std::string& filter);  // bench_embedding.cpp
bool emb_cases_select();
int run_ew_parity(const std::string& dir, const std::string& filter);  // bench_ew_parity.cpp
}

int main(int argc, char** argv) {
  std::string json_path, gemm_json_path, ew_json_path, rope_json_path, conv1d_json_path, emb_json_path, family = "all";
  std::string parity_dir = ".";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (a == "--family" && i + 1 < argc) family = argv[++i];
    else if (a == "--gemm-json" && i + 1 < argc) gemm_json_path = argv[++i];
    else if (a == "--ew-json" && i + 1 < argc) ew_json_path = argv[++i];
    else if (a == "--rope-json" && i + 1 < argc) rope_json_path = argv[++i];
    else if (a == "--conv1d-json" && i + 1 < argc) conv1d_json_path = argv[++i];
    else if (a == "--emb-json" && i + 1 < argc) emb_json_path = argv[++i];
    else if (a == "--parity-dir" && i + 1 < argc) parity_dir = argv[++i];
    else if (a == "--quick") quick = true;
    else if (a == "--pad-extra") g_pad_extra = true;
    else if (a == "--filter" && i + 1 < argc) g_filter = argv[++i];
    else {
      std::printf("usage: baracuda_bench [--family pad|gemm|elementwise|rope|conv1d|embedding|all|ew-parity] [--json FILE] [--gemm-json FILE] [--ew-json FILE] [--rope-json FILE] [--conv1d-json FILE] [--emb-json FILE] [--parity-dir DIR] [--quick] [--filter TEXT] [--pad-extra]\n"
                  "  --filter: run the cases whose label contains TEXT, or one of its '|'-separated parts ('^' at a\n"
                  "    part's start: the label starts with it)\n"
                  "  BARACUDA_BENCH_PROFILE=1 (environment): each timed call also runs once alone between\n"
                  "    cudaProfilerStart / Stop, for ncu --profile-from-start off (bench/ncu_issue_table.py)\n"
                  "  --pad-extra: pad cases of more bf16 row lengths besides the issue's table\n"
                  "  --family ew-parity (not part of all): writes DIR/cases.json + DIR/data.bin for bench/torch_elementwise_parity.py\n");
      return a == "--help" ? 0 : 2;
    }
  }
  if (family == "ew-parity") return baracuda::bench::run_ew_parity(parity_dir, g_filter);
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    // still prove every benchmark plan selects for Hopper
    int ok = 0;
    PlanPreference pref;
    pref.target_arch = 90;
    for (const Case& c : pad_cases()) {
      auto d = descriptor(c);
      ok += d && PadPlan::select(*d, pref).ok() && PadBackwardPlan::select(*d, pref).ok();
    }
    const TensorLayout X = TensorLayout::make(DType::bf16, std::vector<int64_t>{32768, 4096});
    const TensorLayout W = TensorLayout::make(DType::bf16, std::vector<int64_t>{6144, 4096});
    const TensorLayout Y = TensorLayout::make(DType::bf16, std::vector<int64_t>{32768, 6144});
    const bool gemm_ok = GemmPlan::select(GemmDescriptor::linear(X, W, nullptr, Y), pref).ok();
    // every pointwise op selects (bf16, or i32 for integer-only ops), forward and backward
    int ew_ok = 0;
    for (int o = 0; o < kNumEwOps; ++o) {
      const EwOp op = static_cast<EwOp>(o);
      const DType dt = ew_kind_has_floats(ew_op_kind(op)) ? DType::bf16 : DType::i32;
      ElementwiseDescriptor d;
      d.op = op;
      ew_default_params(op, d.param);
      d.num_operands = ew_op_arity(op);
      for (int k = 0; k < d.num_operands; ++k)
        d.operand[k] = EwOperand::tensor((op == EwOp::where && k == 0) || (op == EwOp::masked_fill && k == 1) ? DType::boolean : dt, {1024});
      if (op == EwOp::to) d.out_dtype = DType::f32;
      ew_ok += ElementwisePlan::select(d, pref).ok() && (ew_op_grad_mask(op) == 0 || ElementwiseBackwardPlan::select(d, pref).ok());
    }
    std::printf("  elementwise: %d of %d ops select forward (and backward where differentiable) for sm_90.\n", ew_ok, kNumEwOps);
    const bool rope_ok = baracuda::bench::rope_cases_select();
    std::printf("  rope: every benchmark case %s forward and backward for sm_90.\n", rope_ok ? "selects" : "does NOT select");
    const bool conv1d_ok = baracuda::bench::conv1d_cases_select();
    std::printf("  causal_conv1d: every benchmark case %s forward and backward for sm_90.\n",
                conv1d_ok ? "selects" : "does NOT select");
    const bool emb_ok = baracuda::bench::emb_cases_select();
    std::printf("  embedding: every benchmark case %s forward and backward for sm_90.\n", emb_ok ? "selects" : "does NOT select");
    std::printf("baracuda_bench: no CUDA GPU on this machine, so nothing was run or timed.\n"
                "  %d/%zu pad benchmark cases select a plan for sm_90 (checked without a GPU).\n"
                "  gemm: the Llama-3 QKV projection %s for sm_90 (cuBLASLt picks its algorithm on the GPU).\n"
                "  Run this on an H200 (scripts/device-check.sh) for verification and timings.\n",
                ok, pad_cases().size(), gemm_ok ? "validates" : "FAILS to validate");
    return ok == static_cast<int>(pad_cases().size()) && gemm_ok && ew_ok == kNumEwOps && rope_ok && conv1d_ok && emb_ok ? 0 : 1;
  }
  const std::string dev = device_name();
  const double ceiling = baracuda::bench::measure_copy_tbps();
  std::printf("device: %s   copy ceiling (D2D 2 GiB, read+write): %.3f TB/s\n", dev.c_str(), ceiling);
  std::vector<Record> recs;
  int failures = 0;
  if (family == "all" || family == "pad") failures += run_pad(recs, ceiling, quick);
  if (family == "all" || family == "gemm") failures += baracuda::bench::run_gemm_family(gemm_json_path, quick, g_filter);
  if (family == "all" || family == "elementwise") failures += baracuda::bench::run_elementwise_family(ew_json_path, quick, g_filter);
  if (family == "all" || family == "rope") failures += baracuda::bench::run_rope_family(rope_json_path, quick, g_filter);
  if (family == "all" || family == "conv1d")
    failures += baracuda::bench::run_conv1d_family(conv1d_json_path, quick, g_filter);
  if (family == "all" || family == "embedding")
    failures += baracuda::bench::run_embedding_family(emb_json_path, quick, g_filter);
  const double overhead = host_overhead_us();
  std::printf("host overhead of PadPlan::run (checks + launch, enqueue only): %.2f us/call\n", overhead);
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) return 2;
    std::fprintf(f, "{\"device\": \"%s\", \"copy_tbps\": %.4f, \"host_overhead_us\": %.3f, \"records\": [\n", dev.c_str(),
                 ceiling, overhead);
    for (size_t i = 0; i < recs.size(); ++i) {
      const Record& r = recs[i];
      std::fprintf(f,
                   "  {\"op\": \"%s\", \"direction\": \"%s\", \"dtype\": \"%s\", \"shape\": %s, \"pads\": %s, "
                   "\"variant\": \"%s\", \"sku\": \"%s\", \"ours_us\": %.3f, \"bytes\": %.0f, \"achieved\": %.4f, "
                   "\"ceiling\": %.4f, \"verified\": %s}%s\n",
                   r.op.c_str(), r.direction.c_str(), r.dtype.c_str(), json_list(r.shape).c_str(),
                   json_list(r.pads).c_str(), r.variant.c_str(), r.sku.c_str(), r.us, r.bytes, r.tbps, r.ceiling,
                   r.verified ? "true" : "false", i + 1 < recs.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  std::printf("%d verification failure(s)\n", failures);
  return failures ? 1 : 0;
}
