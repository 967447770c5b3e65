// Reference adapters of the copy family: copy (dst = cast(src broadcast to dst's shape)), cat
// (each input's elements at its place in out), flip / roll (each output coordinate mapped back,
// the flattened roll over the row-major order), tril / triu (kept or 0), every element exact;
// unfold_backward (reference/unfold_ref: the windows scattered back, within the sum's tolerance);
// fill (the creation ops: full / eye exact, arange / linspace / logspace in float64 against the f32 / f64 kernels, their
// integer forms as PyTorch defines them: f32 fused arithmetic, truncated).
#include <algorithm>
#include <cmath>

#include "baracuda/ops/cat.hpp"
#include "baracuda/ops/copy.hpp"
#include "baracuda/ops/fill.hpp"
#include "baracuda/ops/flip_roll.hpp"
#include "baracuda/ops/triangle.hpp"
#include "baracuda/ops/unfold.hpp"
#include "elementwise_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "unfold_ref.hpp"

namespace baracuda::harness {

namespace {

Status copy(RefCall& c) {
  const CopyDescriptor& d = c.desc<CopyDescriptor>();
  const std::span<const int64_t> out(d.out_shape, static_cast<size_t>(d.out_rank)), in(d.in_shape, static_cast<size_t>(d.in_rank));
  const std::vector<double>& src = c["src"].in;
  RefOperand& dst = c["dst"];
  const int64_t n = numel_of(out);
  dst.want.resize(static_cast<size_t>(n));
  for (int64_t f = 0; f < n; ++f)
    dst.want[static_cast<size_t>(f)] = ref::store_as(d.out_dtype, src[static_cast<size_t>(broadcast_index(out, f, in))], d.saturate_fp8);
  dst.exact = true;
  return {};
}

// out's element f: the input whose range along dim holds f's index there, at that index less
// the input's begin (stack: the input's axis dim dropped), cast to out's dtype when the input's
// differs (PyTorch's conversion, as the copy adapter).
Status cat(RefCall& c) {
  const CatDescriptor& d = c.desc<CatDescriptor>();
  const int dim = d.dim < 0 ? d.dim + d.rank : d.dim;
  const std::span<const int64_t> out(d.shape, static_cast<size_t>(d.rank));
  RefOperand& dst = c["out"];
  const int64_t n = numel_of(out);
  dst.want.assign(static_cast<size_t>(n), 0.0);
  std::vector<int64_t> owner(static_cast<size_t>(d.shape[dim])), local(owner.size());
  for (size_t i = 0, at = 0; i < d.sizes.size(); ++i)
    for (int64_t j = 0; j < d.sizes[i]; ++j, ++at) owner[at] = static_cast<int64_t>(i), local[at] = j;
  int64_t inner = 1;
  for (int a = dim + 1; a < d.rank; ++a) inner *= d.shape[a];
  for (int64_t f = 0; f < n; ++f) {
    const int64_t o = f / (inner * d.shape[dim]), k = (f / inner) % d.shape[dim], r = f % inner;
    const size_t i = static_cast<size_t>(owner[static_cast<size_t>(k)]);
    const std::vector<double>& src = c[element_name("inputs", i)].in;
    const int64_t from = (o * d.sizes[i] + local[static_cast<size_t>(k)]) * inner + r;
    const double v = src[static_cast<size_t>(from)];
    dst.want[static_cast<size_t>(f)] = d.in_dtype(i) == d.dtype ? v : ref::store_as(d.dtype, v, false);
  }
  dst.exact = true;
  return {};
}

bool is_float(DType dt) { return dt == DType::f32 || dt == DType::f16 || dt == DType::bf16 || dt == DType::f64; }
// A float truncated into an integer dtype (the kernels' saturating conversion, in range here).
double trunc_into(DType dt, float v) { return wrap_int(dt, static_cast<int64_t>(std::trunc(v))); }
// A Scalar as an integer (ints exactly, floats truncated).
int64_t int_of(const Scalar& v) { return v.is_int() ? v.i : static_cast<int64_t>(std::trunc(v.f)); }

Status fill(RefCall& c) {
  const FillDescriptor& d = c.desc<FillDescriptor>();
  RefOperand& out = c["out"];
  const int64_t n = numel_of(std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)));
  out.want.assign(static_cast<size_t>(n), 0.0);
  out.exact = d.kind == FillKind::kFull || d.kind == FillKind::kEye || !is_float(d.dtype);
  if (!out.exact) out.mag.assign(static_cast<size_t>(n), 0.0);
  // the ends as the dtype holds them (floats rounded, integers truncated)
  auto held = [&](const Scalar& v) { return is_float(d.dtype) ? ref::store_as(d.dtype, v.as_double()) : std::trunc(v.as_double()); };
  const double s = held(d.start), e = held(d.end);
  for (int64_t i = 0; i < n; ++i) {
    double& w = out.want[static_cast<size_t>(i)];
    switch (d.kind) {
      case FillKind::kFull:
        w = is_float(d.dtype) ? ref::store_as(d.dtype, d.value.as_double())
            : d.dtype == DType::boolean ? (d.value.as_double() != 0 || std::isnan(d.value.as_double()))
                                        : wrap_int(d.dtype, int_of(d.value));
        break;
      case FillKind::kEye: w = i / d.shape[1] == i % d.shape[1] ? 1.0 : 0.0; break;
      case FillKind::kArange:
        if (is_float(d.dtype)) {
          w = d.start.as_double() + d.step.as_double() * static_cast<double>(i);
          out.mag[static_cast<size_t>(i)] = std::fabs(d.start.as_double()) + std::fabs(d.step.as_double() * static_cast<double>(i));
        } else {
          const int64_t s0 = int_of(d.start), st = int_of(d.step);
          w = wrap_int(d.dtype, static_cast<int64_t>(static_cast<uint64_t>(s0) + static_cast<uint64_t>(st) * static_cast<uint64_t>(i)));
        }
        break;
      default: {  // linspace, logspace
        const double x = n == 1 ? s : s + (e - s) * static_cast<double>(i) / static_cast<double>(n - 1);
        if (!is_float(d.dtype)) {  // PyTorch's integer linspace: f32 step, fused, truncated
          const float fs = static_cast<float>(s), fe = static_cast<float>(e);
          const float step = n > 1 ? (fe - fs) / static_cast<float>(n - 1) : 0.0f;
          const float v = n == 1 ? fs : i < n / 2 ? std::fma(step, static_cast<float>(i), fs) : std::fma(-step, static_cast<float>(n - 1 - i), fe);
          w = trunc_into(d.dtype, v);
        } else if (d.kind == FillKind::kLinspace) {
          w = x;
          out.mag[static_cast<size_t>(i)] = std::fabs(s) + std::fabs(e);
        } else {
          w = std::pow(d.base, x);
          // the exponent's rounding (f32) grows the power's relative error by |ln base| · |exponent|
          out.mag[static_cast<size_t>(i)] = std::fabs(w) * std::max(1.0, std::fabs(std::log(d.base)) * (std::fabs(s) + std::fabs(e)));
        }
      }
    }
  }
  return {};
}

// out[f] = input[source(f)], source from the output's coordinates (row-major, logical).
template <class Source>
Status index_map(RefCall& c, std::span<const int64_t> shape, Source source) {
  const std::vector<double>& in = c["input"].in;
  RefOperand& out = c["out"];
  const int64_t n = numel_of(shape);
  out.want.assign(static_cast<size_t>(n), 0.0);
  std::vector<int64_t> idx(shape.size());
  for (int64_t f = 0; f < n; ++f) {
    int64_t r = f;
    for (size_t a = shape.size(); a-- > 0;) idx[a] = r % shape[a], r /= shape[a];
    out.want[static_cast<size_t>(f)] = in[static_cast<size_t>(source(f, idx))];
  }
  out.exact = true;
  return {};
}
// The row-major index of coordinates idx.
int64_t linear(std::span<const int64_t> shape, const std::vector<int64_t>& idx) {
  int64_t g = 0;
  for (size_t a = 0; a < shape.size(); ++a) g = g * shape[a] + idx[a];
  return g;
}
int64_t mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }
int axis(int64_t d, int rank) { return static_cast<int>(d < 0 ? d + rank : d); }

Status flip(RefCall& c) {
  const FlipDescriptor& d = c.desc<FlipDescriptor>();
  const std::span<const int64_t> shape(d.shape, static_cast<size_t>(d.rank));
  return index_map(c, shape, [&](int64_t, std::vector<int64_t> idx) {
    for (int64_t dim : d.dims.v) {
      if (d.rank == 0) continue;
      const size_t a = static_cast<size_t>(axis(dim, d.rank));
      idx[a] = shape[a] - 1 - idx[a];
    }
    return linear(shape, idx);
  });
}

Status roll(RefCall& c) {
  const RollDescriptor& d = c.desc<RollDescriptor>();
  const std::span<const int64_t> shape(d.shape, static_cast<size_t>(d.rank));
  const int64_t n = numel_of(shape);
  return index_map(c, shape, [&](int64_t f, std::vector<int64_t> idx) {
    if (d.dims.empty()) return mod(f - mod(d.shifts[0], n), n);
    for (size_t k = 0; k < d.dims.size(); ++k) {
      if (d.rank == 0) continue;
      const size_t a = static_cast<size_t>(axis(d.dims[k], d.rank));
      idx[a] = mod(idx[a] - mod(d.shifts[k], shape[a]), shape[a]);
    }
    return linear(shape, idx);
  });
}

// tril / triu: the input where the element's (j − i) is on the kept side of the diagonal, else 0.
Status triangle(RefCall& c) {
  const TriangleDescriptor& d = c.desc<TriangleDescriptor>();
  const std::span<const int64_t> shape(d.shape, static_cast<size_t>(d.rank));
  const std::vector<double>& in = c["input"].in;
  RefOperand& out = c["out"];
  const int64_t n = numel_of(shape), rows = d.shape[d.rank - 2], cols = d.shape[d.rank - 1];
  out.want.assign(static_cast<size_t>(n), 0.0);
  for (int64_t f = 0; f < n; ++f) {
    const int64_t j = f % cols, i = (f / cols) % rows;
    const bool keep = d.upper ? j - i >= d.diagonal : j - i <= d.diagonal;
    out.want[static_cast<size_t>(f)] = keep ? in[static_cast<size_t>(f)] : 0.0;
  }
  out.exact = true;
  return {};
}

// unfold_backward: each window's gradient summed back onto the input (reference/unfold_ref).
Status unfold_backward(RefCall& c) {
  const UnfoldBackwardDescriptor& d = c.desc<UnfoldBackwardDescriptor>();
  const std::vector<double>& dout = c["grad_out"].in;
  RefOperand& dx = c["grad_input"];
  dx.want = ref::unfold_backward(d, dout);
  dx.mag = ref::unfold_backward(d, abs_of(dout));
  return {};
}

}  // namespace

OpRef ref_copy() { return {nullptr, &copy, nullptr}; }
OpRef ref_cat() { return {nullptr, &cat, nullptr}; }
OpRef ref_fill() { return {nullptr, &fill, nullptr}; }
OpRef ref_flip() { return {nullptr, &flip, nullptr}; }
OpRef ref_roll() { return {nullptr, &roll, nullptr}; }
OpRef ref_triangle() { return {nullptr, &triangle, nullptr}; }
OpRef ref_unfold_backward() { return {nullptr, &unfold_backward, nullptr}; }

}  // namespace baracuda::harness
