// baracuda/ops/norm.hpp — F.layer_norm (aten.native_layer_norm: y, mean, rstd) and F.rms_norm
// (aten._fused_rms_norm: y, rstd) over the trailing `norm_dims` axes, each with an optional fused
// residual add (the pre-norm transformer's h = x + residual, normalized and also returned); and
// their backward (native_layer_norm_backward / _fused_rms_norm_backward: dx, dweight, dbias).
//
// Math, per row h_0 .. h_{N-1} (N = the product of the normalized axes; h = x, or x + residual
// rounded to x's dtype as the unfused PyTorch sum is):
//   layer_norm  mean = Σh / N, var = Σ(h - mean)² / N (biased; two passes over the row),
//               rstd = 1 / sqrt(var + eps), y = (h - mean) · rstd · w + b
//   rms_norm    rstd = 1 / sqrt(Σh² / N + eps), y = h · rstd · w
//   w and b optional (absent: 1 and 0). eps unset: layer_norm 1e-5, rms_norm the machine epsilon
//   of x's dtype (PyTorch's eps=None).
// Shapes: x rank 1..8; norm_dims in [1, rank] trailing axes; residual, y, h x's shape; weight and
//   bias the normalized shape; mean, rstd x's leading axes followed by norm_dims axes of 1
//   (PyTorch's). The normalized axes of every view must merge into one axis (a row with one
//   stride; unit stride for the fast path); the leading axes may have any strides.
// Dtypes: x / residual / y / h f32, f16, bf16, f64; weight / bias (param_dtype) x's dtype, or f32
//   for an f16 / bf16 x; mean / rstd f32 (f64 for f64). Math and accumulation in f32 (f64).
// Layout: a block of 256 threads per row, the row staged in shared memory (read once; the next
//   row's copies in flight while this one is used for rows up to 48 KB, single-buffered up to
//   96 KB), longer or strided rows read from global memory again for each pass.
// Determinism: bitwise run-to-run (fixed-order reductions; no atomics).
// Workspace: none. Aliasing: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(NormKind, uint8_t, (kLayerNorm, "layer_norm"), (kRmsNorm, "rms_norm"));

struct NormDescriptor {
  NormKind op = NormKind::kLayerNorm;
  DType dtype = DType::f32;          // x, residual, y, h
  std::optional<DType> param_dtype;  // weight, bias; unset: x's dtype
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int norm_dims = 1;  // trailing axes normalized (len(normalized_shape))
  bool weight = true;
  bool bias = true;  // layer_norm only
  bool residual = false;
  std::optional<double> eps;

  bool operator==(const NormDescriptor&) const = default;
};
BARACUDA_DESCRIBE(NormDescriptor, op, dtype, param_dtype, rank, shape, norm_dims, weight, bias, residual, eps);

// The eps a plan of this descriptor uses: eps, or PyTorch's default for the op and dtype.
double norm_eps(const NormDescriptor& d);

struct NormArgs {
  TensorRef x;
  TensorRef residual;  // with `residual`
  TensorRef weight;    // with `weight`
  TensorRef bias;      // layer_norm with `bias`
  TensorMut y;
  TensorMut h;     // with `residual`: x + residual
  TensorMut mean;  // layer_norm
  TensorMut rstd;
};
BARACUDA_DESCRIBE(NormArgs, x, residual, weight, bias, y, h, mean, rstd);

class NormPlan : public PlanBase<NormDescriptor> {
 public:
  static Result<NormPlan> select(const NormDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const NormArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const NormArgs& args) const;

 private:
  DType param_ = DType::f32, stat_ = DType::f32;
  double eps_ = 1e-5;
};

// ---------------------------------------------------------------- backward
// From the forward's input (x, or h with `residual`), mean / rstd and dy, per row (xhat = (h -
// mean) · rstd; rms_norm: mean = 0; g = dy · w):
//   layer_norm  dx = rstd · (g - Σg / N - xhat · Σ(g · xhat) / N)
//   rms_norm    dx = rstd · (g - xhat · Σ(g · xhat) / N)
//   dweight = Σ_rows dy · xhat, dbias = Σ_rows dy; with `residual`, dx (the gradient of both x
//   and residual) also adds dh, the gradient h received elsewhere (optional operand).
// Operands: x (h with `residual`), weight (with `weight`), mean (layer_norm), rstd, dy, dh
//   (optional) -> dx (x's dtype), dweight, dbias (param_dtype; with `weight` / `bias`).
// Accumulation: f32 (f64); dweight / dbias: each of G = min(rows, 264) row groups (a block: rows
//   g, g + G, ...) sums its rows in order into f32 partials, then a second pass adds the G
//   partials of a column in order: bitwise run-to-run, independent of the device.
// Workspace: the partials, G x 2 x N accumulators (0 without weight and bias).
using NormBackwardDescriptor = NormDescriptor;

struct NormBackwardArgs {
  TensorRef x;
  TensorRef weight;
  TensorRef mean;
  TensorRef rstd;
  TensorRef dy;
  TensorRef dh;  // optional, with `residual`
  TensorMut dx;
  TensorMut dweight;
  TensorMut dbias;
};
BARACUDA_DESCRIBE(NormBackwardArgs, x, weight, mean, rstd, dy, dh, dx, dweight, dbias);

class NormBackwardPlan : public PlanBase<NormDescriptor> {
 public:
  static Result<NormBackwardPlan> select(const NormBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const NormBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const NormBackwardArgs& args) const;

 private:
  DType param_ = DType::f32, stat_ = DType::f32;
  int64_t groups_ = 0;
};

}  // namespace baracuda
