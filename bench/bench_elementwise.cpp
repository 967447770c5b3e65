// Elementwise family benchmark: every op forward (and backward where differentiable) on 2^28
// contiguous elements in bf16 and f32 (integer-only ops in i32), plus broadcast and strided
// cases and SwiGLU on [32768, 2 x 14336]; bytes = each operand read once + each result
// written once, against the copy ceiling measured in the same run (backward: grad_out, the
// operands its derivative reads, the gradients it writes). Backward: a gradient that is
// grad_out itself (ElementwiseBackwardPlan::grad_is_grad_out) is passed aliasing grad_out, as a
// framework passes PyTorch's pass-through gradients on; when every gradient is, nothing runs and
// the record has 0 bytes. --ew-json FILE writes records for bench/torch_elementwise_side_by_side.py.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/core/half_bits.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "elementwise_ref.hpp"
#include "ops/elementwise/ew_params.hpp"
#include "bench_data.hpp"
#include "timing.hpp"

namespace baracuda::bench {

namespace {

struct EwRecord {
  std::string op, direction, dtype, variant, sku;
  std::vector<int64_t> shape;
  double us = 0, bytes = 0, tbps = 0;
  double graph_us = 0;  // device time per call under CUDA graph replay (latency cases only)
  bool verified = true;
};

// Ops whose f32 result is defined by f32 rounding itself (floor division, remainder, nextafter)
// are verified by the device suite, which evaluates their reference in the kernel's precision.
bool discontinuous_ok(EwOp op) {
  return op != EwOp::div_floor && op != EwOp::div_trunc && op != EwOp::remainder && op != EwOp::fmod && op != EwOp::nextafter;
}

// Fills a device buffer with a tiled block of random values in [0.25, 2] (positive, so the
// log/sqrt family runs on its domain); bool buffers get 0/1.
void fill_device(void* dev, DType dt, int64_t n, uint64_t seed) {
  const int64_t tile = int64_t{1} << 20;
  const size_t es = dtype_size(dt);
  std::vector<uint8_t> h(static_cast<size_t>(tile) * es);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.25f, 2.f);
  for (int64_t i = 0; i < tile; ++i) {
    const float v = u(rng);
    uint8_t* p = h.data() + i * es;
    switch (dt) {
      case DType::f32: std::memcpy(p, &v, 4); break;
      case DType::f64: { const double d = v; std::memcpy(p, &d, 8); break; }
      case DType::bf16: { const uint16_t b = float_to_bf16_bits(v); std::memcpy(p, &b, 2); break; }
      case DType::f16: { const uint16_t b = float_to_f16_bits(v); std::memcpy(p, &b, 2); break; }
      case DType::i32: { const int32_t b = static_cast<int32_t>(rng() % 61) - 30; std::memcpy(p, &b, 4); break; }
      case DType::boolean: p[0] = rng() & 1; break;
      default: std::memset(p, static_cast<int>(rng() & 0x3f), es); break;
    }
  }
  const int64_t first = std::min(n, tile);
  BENCH_CUDA_OK(cudaMemcpy(dev, h.data(), first * es, cudaMemcpyHostToDevice));
  for (int64_t off = first; off < n; off += first)
    BENCH_CUDA_OK(cudaMemcpy(static_cast<char*>(dev) + off * es, dev, std::min(first, n - off) * es, cudaMemcpyDeviceToDevice));
}

DType operand_dtype(EwOp op, int k, DType dt) {
  if ((op == EwOp::where && k == 0) || (op == EwOp::masked_fill && k == 1)) return DType::boolean;
  return dt;
}

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

double host_value(DType dt, const uint8_t* p) {
  switch (dt) {
    case DType::f32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::f64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::bf16: { uint16_t b; std::memcpy(&b, p, 2); return bf16_bits_to_float(b); }
    case DType::f16: { uint16_t b; std::memcpy(&b, p, 2); return f16_bits_to_float(b); }
    case DType::i32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::boolean: return p[0] ? 1.0 : 0.0;
    default: return 0.0;
  }
}

// The first elements of a contiguous forward result against the float64 reference (same
// tolerance rule as the device suite: 64 ulp of f32 plus one ulp of a 16-bit result).
bool verify_prefix(const ElementwiseDescriptor& d, const ElementwiseArgs& a, DType out_dt, bool int_math) {
  const int64_t n = std::min<int64_t>(65536, a.out.numel());
  const int ar = d.num_operands;
  std::vector<std::vector<uint8_t>> in(ar);
  for (int k = 0; k < ar; ++k) {
    in[k].resize(n * dtype_size(a.in[k].dtype));
    BENCH_CUDA_OK(cudaMemcpy(in[k].data(), a.in[k].data, in[k].size(), cudaMemcpyDeviceToHost));
  }
  std::vector<uint8_t> out(n * dtype_size(out_dt));
  BENCH_CUDA_OK(cudaMemcpy(out.data(), a.out.data, out.size(), cudaMemcpyDeviceToHost));
  auto pk = ew::kernel_params("bench", d, out_dt, int_math);
  if (!pk) return false;
  int64_t pint[4];
  for (int k = 0; k < 4; ++k) pint[k] = ew::kernel_int_param(d, *pk, k);
  for (int64_t i = 0; i < n; ++i) {
    double x[3] = {};
    int64_t xi[3] = {};
    for (int k = 0; k < ar; ++k) {
      x[k] = host_value(a.in[k].dtype, in[k].data() + i * dtype_size(a.in[k].dtype));
      xi[k] = static_cast<int64_t>(x[k]);
      if (!int_math) x[k] = static_cast<float>(x[k]);  // the kernel computes in f32
    }
    const double got = host_value(out_dt, out.data() + i * dtype_size(out_dt));
    double want = int_math ? static_cast<double>(ref::store_int(out_dt, ref::ew_forward_int(d.op, xi, pint)))
                           : ref::store_as(out_dt, ref::ew_forward(d.op, x, pk->data()));
    if (int_math && is_floating(out_dt)) want = ref::store_as(out_dt, static_cast<double>(ref::ew_forward_int(d.op, xi, pint)));
    if (std::isnan(want) || std::isnan(got) || std::isinf(want)) {
      const bool same = std::isnan(want) ? std::isnan(got) : got == want;
      if (!same) {
        std::printf("  verify: %s element %lld got %.9g want %.9g\n", std::string(ew_op_name(d.op)).c_str(), static_cast<long long>(i), got, want);
        return false;
      }
      continue;
    }
    const double tol = out_dt == DType::boolean || out_dt == DType::i32 ? 0.0
                       : (64 * 1.2e-7 + (out_dt == DType::bf16 ? 7.8125e-3 : out_dt == DType::f16 ? 9.77e-4 : 0.0)) * (1 + std::fabs(want));
    if (!(std::fabs(got - want) <= tol)) {
      std::printf("  verify: %s element %lld got %.9g want %.9g\n", std::string(ew_op_name(d.op)).c_str(), static_cast<long long>(i), got, want);
      return false;
    }
  }
  return true;
}

struct Runner {
  double ceiling = 0;
  bool quick = false;
  std::string filter;
  std::vector<EwRecord> out;
  int failures = 0;

  // One op on the given operand views (allocated here), forward and (if differentiable) backward.
  void run(EwOp op, DType dt, const std::vector<std::vector<int64_t>>& shapes, const std::vector<std::vector<int64_t>>& strides,
           const std::string& variant, std::vector<Scalar> params = {}) {
    const int ar = ew_op_arity(op);
    ElementwiseDescriptor d;
    d.op = op;
    ew_default_params(op, d.param);
    for (size_t k = 0; k < params.size(); ++k) d.param[k] = params[k];
    d.num_operands = ar;
    for (int k = 0; k < ar; ++k) d.operand[k] = EwOperand::tensor(operand_dtype(op, k, dt), shapes[k]);
    auto fwd = ElementwisePlan::select(d);
    const std::string line = std::string(ew_op_name(op)) + " " + std::string(dtype_name(dt)) + " " + variant;
    if (filter_skips(filter, line)) return;
    if (!fwd) {
      std::printf("%-40s select failed: %s\n", line.c_str(), fwd.status().to_string().c_str());
      ++failures;
      return;
    }
    int orank = 0;
    int64_t os[kMaxRank];
    (void)ew_broadcast_shape(d, &orank, os);
    const std::vector<int64_t> out_shape(os, os + orank);
    const int64_t on = numel_of(out_shape);
    std::vector<DeviceBuffer*> bufs;
    ElementwiseArgs a;
    double in_bytes = 0;
    for (int k = 0; k < ar; ++k) {
      const DType odt = operand_dtype(op, k, dt);
      const std::vector<int64_t>& st = strides[k];
      int64_t span = 1;
      for (size_t i = 0; i < shapes[k].size(); ++i) span += (shapes[k][i] - 1) * (st.empty() ? 0 : st[i]);
      const int64_t alloc = st.empty() ? numel_of(shapes[k]) : span;
      bufs.push_back(new DeviceBuffer(static_cast<size_t>(alloc) * dtype_size(odt)));
      fill_device(bufs.back()->p, odt, alloc, 100 + k);
      a.in[k] = TensorRef::make(bufs.back()->p, odt, shapes[k], st);
      in_bytes += static_cast<double>(numel_of(shapes[k])) * dtype_size(odt);
    }
    const DType out_dt = fwd->out_dtype();
    DeviceBuffer y(static_cast<size_t>(on) * dtype_size(out_dt));
    a.out = TensorMut::make(y.p, out_dt, out_shape);
    const int warm = 2, reps = quick ? 5 : 15;
    EwRecord r;
    r.op = std::string(ew_op_name(op));
    r.dtype = std::string(dtype_name(dt));
    r.variant = variant;
    r.shape = out_shape;
    r.direction = "fwd";
    r.sku = fwd->sku().name();
    r.bytes = in_bytes + static_cast<double>(on) * dtype_size(out_dt);
    r.us = median_us([&] { (void)fwd->run(nullptr, {}, a); }, warm, reps);
    const bool latency = variant.rfind("latency", 0) == 0;  // small shape: graph replay as well
    if (latency) r.graph_us = median_graph_us([&](cudaStream_t s) { (void)fwd->run(s, {}, a); }, 20, reps);
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    if (variant == "contiguous") {
      const bool imath = fwd->precision_guarantee().math == DType::i64;
      r.verified = discontinuous_ok(op) ? verify_prefix(d, a, out_dt, imath) : true;
      failures += !r.verified;
    }
    finish(r);
    if (ew_op_grad_mask(op) != 0 && is_floating(dt)) {
      auto bwd = ElementwiseBackwardPlan::select(d);
      if (bwd) {
        ElementwiseBackwardArgs b;
        // a unary op on a transposed x: PyTorch's result keeps x's layout, so its autograd's g
        // and grad_x have it too (one permuted-contiguous pass); ours gets the same layouts
        const std::vector<int64_t> keep = ar == 1 ? strides[0] : std::vector<int64_t>{};
        b.grad_out = keep.empty() ? a.out.as_ref() : TensorRef::make(y.p, out_dt, out_shape, keep);
        fill_device(y.p, out_dt, on, 7);
        std::vector<DeviceBuffer*> grads;
        double gbytes = static_cast<double>(on) * dtype_size(out_dt);
        bool written = false;
        for (int k = 0; k < ar; ++k) {
          b.in[k] = a.in[k];
          if (bwd->operands_read() >> k & 1u)  // operand read by the derivative
            gbytes += static_cast<double>(numel_of(shapes[k])) * dtype_size(a.in[k].dtype);
          if (!(ew_op_grad_mask(op) >> k & 1u) || !is_floating(a.in[k].dtype)) continue;
          if (bwd->grad_is_grad_out(k)) {  // grad_out itself, as PyTorch's autograd passes it on
            b.grad_in[k] = a.out;
            continue;
          }
          written = true;
          grads.push_back(new DeviceBuffer(static_cast<size_t>(numel_of(shapes[k])) * dtype_size(a.in[k].dtype)));
          b.grad_in[k] = TensorMut::make(grads.back()->p, a.in[k].dtype, shapes[k], keep);
          gbytes += static_cast<double>(numel_of(shapes[k])) * dtype_size(a.in[k].dtype);  // gradient written
        }
        DeviceBuffer ws(bwd->workspace_size());
        EwRecord rb = r;
        rb.verified = true;  // gradients: verified by the device suite (ElementwiseDevice.EveryDerivative*)
        rb.direction = "bwd";
        rb.sku = bwd->sku().name();
        rb.bytes = written ? gbytes : 0.0;  // 0: every gradient is grad_out, no pass at all
        rb.us = median_us([&] { (void)bwd->run(nullptr, {ws.p, bwd->workspace_size()}, b); }, warm, reps);
        rb.graph_us = latency ? median_graph_us([&](cudaStream_t s) { (void)bwd->run(s, {ws.p, bwd->workspace_size()}, b); }, 20, reps) : 0;
        BENCH_CUDA_OK(cudaDeviceSynchronize());
        finish(rb);
        for (auto* g : grads) delete g;
      }
    }
    for (auto* b : bufs) delete b;
  }

  void finish(EwRecord& r) {
    r.tbps = r.bytes / (r.us * 1e-6) / 1e12;
    std::printf("%-20s %s %-5s %-22s %-24s %9.1f us %6.3f TB/s %5.1f%% of copy%s", r.op.c_str(), r.direction.c_str(), r.dtype.c_str(),
                shape_json(r.shape).c_str(), r.variant.c_str(), r.us, r.tbps, 100 * r.tbps / ceiling, r.verified ? "" : "  VERIFY FAILED");
    if (r.graph_us > 0) std::printf("  graph %.1f us (%.1f%% of copy)", r.graph_us, 100 * r.bytes / (r.graph_us * 1e-6) / 1e12 / ceiling);
    std::printf("\n");
    out.push_back(r);
  }
};

}  // namespace

int run_elementwise_family(const std::string& json_path, bool quick, const std::string& filter) {
  int dev_count = 0;
  if (cudaGetDeviceCount(&dev_count) != cudaSuccess || dev_count == 0) return 0;
  Runner R;
  R.quick = quick;
  R.filter = filter;
  R.ceiling = measure_copy_tbps();
  std::printf("elementwise: copy ceiling %.3f TB/s\n", R.ceiling);
  const int64_t n = quick ? (int64_t{1} << 24) : (int64_t{1} << 28);
  for (int o = 0; o < kNumEwOps; ++o) {
    const EwOp op = static_cast<EwOp>(o);
    if (op == EwOp::to) continue;
    const EwKind k = ew_op_kind(op);
    const int ar = ew_op_arity(op);
    std::vector<DType> dts;
    if (ew_kind_has_floats(k)) dts = {DType::bf16, DType::f32};
    else dts = {DType::i32};
    for (DType dt : dts) {
      std::vector<Scalar> ps;
      if (op == EwOp::threshold) ps = {0.5, 0.0};
      if (op == EwOp::lerp_scalar) ps = {0.3};
      if (op == EwOp::clamp) ps = {-0.5, 1.25};
      R.run(op, dt, std::vector<std::vector<int64_t>>(ar, {n}), std::vector<std::vector<int64_t>>(ar), "contiguous", ps);
    }
  }
  // casts
  for (DType from : {DType::bf16, DType::f32})
    for (DType to : {DType::f32, DType::bf16, DType::f8e4m3}) {
      if (from == to) continue;
      const std::string line = "to_" + std::string(dtype_name(to)) + " " + std::string(dtype_name(from)) + " contiguous";
      if (filter_skips(filter, line)) continue;
      ElementwiseDescriptor d = ElementwiseDescriptor::make(EwOp::to, {EwOperand::tensor(from, {n})});
      d.out_dtype = to;
      auto p = ElementwisePlan::select(d);
      if (!p) continue;
      DeviceBuffer x(n * dtype_size(from)), y(n * dtype_size(to));
      fill_device(x.p, from, n, 3);
      EwRecord r;
      r.op = std::string("to_") + std::string(dtype_name(to));
      r.dtype = std::string(dtype_name(from));
      r.variant = "contiguous";
      r.shape = {n};
      r.direction = "fwd";
      r.sku = p->sku().name();
      r.bytes = static_cast<double>(n) * (dtype_size(from) + dtype_size(to));
      ElementwiseArgs a;
      a.in[0] = TensorRef::make(x.p, from, {n});
      a.out = TensorMut::make(y.p, to, {n});
      r.us = median_us([&] { (void)p->run(nullptr, {}, a); }, 2, quick ? 5 : 15);
      R.finish(r);
    }
  // frexp with both results (FrexpPlan): mantissa in the input dtype, exponent i32
  for (DType dt : {DType::bf16, DType::f32}) {
    const std::string line = "frexp2 " + std::string(dtype_name(dt)) + " contiguous";
    if (filter_skips(filter, line)) continue;
    auto p = FrexpPlan::select(ElementwiseDescriptor::make(EwOp::frexp, {EwOperand::tensor(dt, {n})}));
    if (!p) continue;
    DeviceBuffer x(n * dtype_size(dt)), m(n * dtype_size(dt)), e(n * 4);
    fill_device(x.p, dt, n, 3);
    FrexpArgs a;
    a.in = TensorRef::make(x.p, dt, {n});
    a.mantissa = TensorMut::make(m.p, dt, {n});
    a.exponent = TensorMut::make(e.p, DType::i32, {n});
    EwRecord r;
    r.op = "frexp2";
    r.dtype = std::string(dtype_name(dt));
    r.variant = "contiguous";
    r.shape = {n};
    r.direction = "fwd";
    r.sku = p->sku().name();
    r.bytes = static_cast<double>(n) * (2 * dtype_size(dt) + 4);
    r.us = median_us([&] { (void)p->run(nullptr, {}, a); }, 2, quick ? 5 : 15);
    R.finish(r);
  }
  // broadcast and strided cases of representative ops (2^28 outputs)
  const int64_t rows = quick ? 4096 : 16384, cols = quick ? 4096 : 16384;
  for (DType dt : {DType::bf16, DType::f32}) {
    for (EwOp op : {EwOp::add, EwOp::mul, EwOp::prelu}) {
      R.run(op, dt, {{rows, cols}, {cols}}, {{}, {}}, "row-broadcast [n]");
      R.run(op, dt, {{rows, cols}, {rows, 1}}, {{}, {}}, "column-broadcast [m,1]");
      R.run(op, dt, {{rows, cols}, {rows, cols}}, {{1, rows}, {}}, "strided (transposed a)");
    }
    R.run(EwOp::exp, dt, {{rows, cols}}, {{1, rows}}, "strided (transposed)");  // a transposing copy-with-math
    R.run(EwOp::where, dt, {{rows, cols}, {rows, cols}, {cols}}, {{}, {}, {}}, "row-broadcast other");
    // SwiGLU on the halves of [32768, 2 x 14336]
    const int64_t m = quick ? 4096 : 32768, h = 14336;
    R.run(EwOp::swiglu, dt, {{m, h}, {m, h}}, {{2 * h, 1}, {2 * h, 1}}, "halves of [m, 2h]");
    // the latency case of performance.md: [4096, 4096] (32 / 64 MB a tensor, about the 50 MB L2),
    // eager and under graph replay
    for (EwOp op : {EwOp::add, EwOp::mul, EwOp::exp, EwOp::gelu, EwOp::silu})
      R.run(op, dt, std::vector<std::vector<int64_t>>(ew_op_arity(op), {4096, 4096}), std::vector<std::vector<int64_t>>(ew_op_arity(op)),
            "latency [4096, 4096]");
  }
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) return 1;
    std::fprintf(f, "[\n");
    for (size_t i = 0; i < R.out.size(); ++i) {
      const EwRecord& r = R.out[i];
      std::fprintf(f,
                   "  {\"op\": \"%s\", \"direction\": \"%s\", \"dtype\": \"%s\", \"shape\": %s, \"variant\": \"%s\", \"sku\": \"%s\", "
                   "\"ours_us\": %.3f, \"graph_us\": %.3f, \"bytes\": %.0f, \"achieved\": %.4f, \"ceiling\": %.4f}%s\n",
                   r.op.c_str(), r.direction.c_str(), r.dtype.c_str(), shape_json(r.shape).c_str(), r.variant.c_str(), r.sku.c_str(), r.us,
                   r.graph_us, r.bytes, r.tbps, R.ceiling, i + 1 < R.out.size() ? "," : "");
    }
    std::fprintf(f, "]\n");
    std::fclose(f);
  }
  return R.failures;
}

}  // namespace baracuda::bench
