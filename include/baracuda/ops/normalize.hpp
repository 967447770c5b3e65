// baracuda/ops/normalize.hpp — F.normalize and torch._weight_norm (nn.utils.weight_norm's
// w = g · v / ||v||), forward and backward: a p-norm per line, then every element of the line
// divided by it.
//
// Lines: normalize: the elements along axis `dim` (every other index is a line); weight_norm:
//   every element but those along axis `dim` (dim 0: each v[i, ...] is a line; dim rank - 1: each
//   v[..., j]), the axes of a line merged into one strided run (refused when their strides do not
//   nest; PyTorch's fused kernel takes the same two dims).
// Math, per line x_0 .. x_{N-1}:
//   n = ||x||_p = (Σ |x_i|^p)^(1/p) (p = 2: sqrt(Σ x²); p = 1: Σ |x|; p = inf: max |x|)
//   normalize    y_i = x_i / max(n, eps)                   (p > 0, inf allowed; eps 1e-12)
//   weight_norm  w_i = x_i · (g / n), norm = n (p = 2, no eps: a zero line gives NaN, as PyTorch)
// Backward (PyTorch's derivatives): with N = max(n, eps), dot = Σ dy_j x_j and
//   d n / d x_i = sign(x_i) (|x_i| / n)^(p-1) (0 at x_i = 0; p = inf: sign(x_i) / T where |x_i| = n
//   and T such entries tie, 0 elsewhere; 0 for a zero line),
//   normalize    dx_i = dy_i / N - [n >= eps] · dot / N² · d n / d x_i (clamp_min's gradient passes at n = eps)
//   weight_norm  dx_i = (g / n) · (dy_i - dot / n² · x_i), dg = dot / n   (n: the forward's norm output)
// Shapes: input (v) any rank 1..8 with any strides; output its shape; weight_norm's g and norm:
//   input's shape with 1 on every axis but dim (PyTorch's g), any strides.
// Dtypes: input, output, g `dtype` (f32, f16, bf16, f64); norm f32 (f64 for f64), as
//   _weight_norm_interface's norms. Accumulation f32 (f64).
// Layout: lines of unit stride (in every line view): a warp per line (N ≤ 1024) or a block of 256
//   threads, 16-byte pieces where aligned; strided lines: 32 threads per line and 16 adjacent
//   lines per block (N ≥ 64), else a thread per line. Every path reads a line twice (the norm,
//   then the outputs; the second read mostly from L2).
// Determinism: bitwise run-to-run (fixed-order sums, no atomics). Workspace: none. Aliasing: none.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(NormalizeKind, uint8_t, (kNormalize, "normalize"), (kWeightNorm, "weight_norm"));

struct NormalizeDescriptor {
  NormalizeKind op = NormalizeKind::kNormalize;
  DType dtype = DType::f32;
  int rank = 2;  // 1 .. 8
  int64_t shape[kMaxRank] = {};
  int dim = 1;         // normalize: the axis normalized; weight_norm: the axis kept (0 or rank - 1); negative from the end
  double p = 2.0;      // normalize: > 0 (inf: max |x|); weight_norm: 2
  double eps = 1e-12;  // normalize: >= 0

  bool operator==(const NormalizeDescriptor&) const = default;
};
BARACUDA_DESCRIBE(NormalizeDescriptor, op, dtype, rank, shape, dim, p, eps);

struct NormalizeArgs {
  TensorRef input;  // x (normalize), v (weight_norm)
  TensorRef g;      // weight_norm
  TensorMut output;
  TensorMut norm;   // weight_norm (what its backward reads)
};
BARACUDA_DESCRIBE(NormalizeArgs, input, g, output, norm);

class NormalizePlan : public PlanBase<NormalizeDescriptor> {
 public:
  static Result<NormalizePlan> select(const NormalizeDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const NormalizeArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const NormalizeArgs& args) const;
};

// Backward: dinput (and dg for weight_norm) from doutput; normalize recomputes the norm from
// input, weight_norm reads the forward's norm. Outputs optional (dg).
using NormalizeBackwardDescriptor = NormalizeDescriptor;

struct NormalizeBackwardArgs {
  TensorRef input;
  TensorRef g;     // weight_norm
  TensorRef norm;  // weight_norm
  TensorRef doutput;
  TensorMut dinput;
  TensorMut dg;  // weight_norm, optional
};
BARACUDA_DESCRIBE(NormalizeBackwardArgs, input, g, norm, doutput, dinput, dg);

class NormalizeBackwardPlan : public PlanBase<NormalizeDescriptor> {
 public:
  static Result<NormalizeBackwardPlan> select(const NormalizeBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const NormalizeBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const NormalizeBackwardArgs& args) const;
};

}  // namespace baracuda
