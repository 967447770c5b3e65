// baracuda/ops/reduce.hpp — reductions over any set of axes: torch.sum / nansum / mean / nanmean
// / prod / amax / amin / all / any / count_nonzero / logsumexp / linalg.vector_norm / var / std /
// argmax / argmin / max(dim) / min(dim) (and jax.numpy's / lax.reduce_*'s counterparts).
//
// Math, per output over its reduced elements x_0 .. x_{N-1} (row-major over the reduced axes):
//   sum Σx; nansum Σ of the non-NaN; mean Σx · (1/N); nanmean over the non-NaN; prod Πx;
//   amax / amin (NaN propagates); all / any (x != 0); count_nonzero (NaN counts);
//   logsumexp m + log Σ exp(x - m), m = max (all -inf: -inf; any +inf: +inf; any NaN: NaN);
//   norm (vector_norm): p = 0 the count of nonzeros, 1 Σ|x|, 2 sqrt(Σx²), inf max|x|, -inf min|x|,
//   else (Σ|x|^p)^(1/p); var Σ(x - mean)² / max(0, N - correction) (Welford per element, partial
//   results merged by Chan's formula; N - correction <= 0 gives inf, or NaN with no spread, as
//   PyTorch), std = sqrt(var); argmax / argmin: the first index of the extreme, NaN being the
//   extreme (the reduced elements' row-major index: the index along `dims` for one axis, the
//   flattened index for all); max / min: the values and argmax / argmin's indices; var_mean /
//   std_mean: var / std in y and the mean in y2 (one pass); aminmax: amin in y, amax in y2.
// Shapes: x rank 0..8; dims the reduced axes (num_dims of them, negative counts from the end,
//   each once; num_dims = 0: every axis); y x's shape without the reduced axes (keepdim: kept
//   as 1); indices (argmax, argmin, max, min) y's shape, i64; y2 (var_mean, std_mean, aminmax)
//   y's shape and dtype, with y's strides.
// Dtypes (x -> y, PyTorch's result types): f32 / f16 / bf16 / f64 for every op; i8 / u8 / i16 / i32 /
//   i64 / bool for sum / nansum / prod / count_nonzero (-> i64), amax / amin / max / min / aminmax (same),
//   all / any (bool; u8 -> u8), argmax / argmin, logsumexp (-> f32). out_dtype (PyTorch's dtype
//   argument) may name another float type for sum / nansum / mean / nanmean / prod / norm /
//   logsumexp. Accumulation: f32 (f64 for f64 x), i64 for integer x; an f32 sum (sum, nansum,
//   mean, the finite norms) adds each 16-byte vector in f32 and everything after in f64 (lane
//   slots, shuffle tree, split partials), so a long f32 sum is not less accurate than PyTorch's.
// Empty reductions (a reduced axis of extent 0): sum / nansum / count_nonzero 0, prod 1, all
//   true, any false, logsumexp -inf, norm 0 (p >= 0, not inf), mean / nanmean / var / std NaN;
//   amax / amin / aminmax / argmax / argmin / max / min and norm with p = inf or p < 0 are refused at
//   select (PyTorch raises).
// Strides: any for x (0 allowed); y and indices must not self-overlap or overlap x.
// Determinism: bitwise run-to-run deterministic (every output combined in a fixed order: per-warp
//   shuffle trees or in-order rows, split partials in the workspace, then a fixed-order pass);
//   no atomics.
// Workspace: the split partials (workspace_size(); 0 when no output is split).
// Aliasing: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(ReduceKind, uint8_t, (kSum, "sum"), (kNanSum, "nansum"), (kMean, "mean"), (kNanMean, "nanmean"),
              (kProd, "prod"), (kAmax, "amax"), (kAmin, "amin"), (kAll, "all"), (kAny, "any"),
              (kCountNonzero, "count_nonzero"), (kLogSumExp, "logsumexp"), (kNorm, "norm"), (kVar, "var"), (kStd, "std"),
              (kArgmax, "argmax"), (kArgmin, "argmin"), (kMax, "max"), (kMin, "min"), (kVarMean, "var_mean"),
              (kStdMean, "std_mean"), (kAminmax, "aminmax"));

struct ReduceDescriptor {
  ReduceKind op = ReduceKind::kSum;
  DType dtype = DType::f32;        // x
  std::optional<DType> out_dtype;  // y; unset: PyTorch's result type (above)
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int num_dims = 0;  // 0: reduce every axis
  int dims[kMaxRank] = {};
  bool keepdim = false;
  double p = 2;           // norm
  double correction = 1;  // var / std (PyTorch's default: Bessel's correction)

  bool operator==(const ReduceDescriptor&) const = default;
};
BARACUDA_DESCRIBE(ReduceDescriptor, op, dtype, out_dtype, rank, shape, num_dims, dims, keepdim, p, correction);

struct ReduceArgs {
  TensorRef x;
  TensorMut y;        // every op but argmax / argmin
  TensorMut indices;  // argmax / argmin / max / min
  TensorMut y2;       // var_mean / std_mean: the mean; aminmax: the max (y: the min)
};
BARACUDA_DESCRIBE(ReduceArgs, x, y, indices, y2);

class ReducePlan : public PlanBase<ReduceDescriptor> {
 public:
  static Result<ReducePlan> select(const ReduceDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ReduceArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const ReduceArgs& args) const;

 private:
  int kind_ = 0;  // the kernels' kind (red::Kind; the norms by p)
  int group_ = 0;
  DType out_ = DType::f32;
  size_t acc_bytes_ = 0;
  int64_t keep_shape_[kMaxRank] = {};  // x's shape with 1 on the reduced axes
  bool reduced_[kMaxRank] = {};
};

// ---------------------------------------------------------------- backward
// dx = d(op)/dx · dy, broadcast over the reduced axes (the descriptor is the forward's):
//   sum dy; nansum dy where x is not NaN (else 0); mean dy / N; nanmean (dy / count) · !isnan(x)
//   (count: the non-NaN elements); prod dy · y / x when the output's elements have no zero, dy ·
//   (the product of the others) at a single zero and 0 elsewhere, 0 with two or more zeros;
//   logsumexp dy · exp(x - y); amax / amin (dy / count) · (x == y), count the elements equal to
//   y (PyTorch's even split of ties; NaN everywhere when y is NaN); norm p = 0: 0; p = 1: dy ·
//   sign(x); p = 2: dy · x / y; p = ±inf: sgn(x) · (|x| == y, or both NaN) · dy / count; other
//   p: dy · sign(x) · |x|^(p-1) / y^(p-1) (0 where y = 0, as PyTorch's); var dy · 2 (x - mean) /
//   max(0, N - correction); std dy · (x - mean) / (max(0, N - correction) · y) (0 where y = 0);
//   max / min dy at the forward's index, 0 elsewhere; var_mean / std_mean var's / std's formula
//   with dy plus dy2 / N (dy2: the mean's gradient); aminmax amin's formula with dy and y plus
//   amax's with dy2 and y2 (PyTorch's aminmax backward). y, y2 must be the forward's results.
//   Not differentiable: all, any, count_nonzero, argmax, argmin (refused).
// Operands: dy (y's shape and dtype); dy2 (var_mean, std_mean, aminmax: the second result's
//   gradient, dy's strides); x (nansum, nanmean, prod, amax, amin, aminmax, logsumexp, norm
//   p != 0, var, std, var_mean, std_mean); y (prod, amax, amin, aminmax: the min, logsumexp, std,
//   std_mean, norm but p = 0 / 1); y2 (aminmax: the max, y's strides); indices (max, min); dx
//   (x's shape and dtype, f32 / f16 / bf16 / f64).
// Accumulation: f32 (f64 for f64 x). The per-output values a formula needs (var / std /
//   var_mean / std_mean: the mean, recomputed in f32 / f64 as PyTorch's var_backward does; amax /
//   amin / norm ±inf: the count of extremes; aminmax: both counts; nanmean: the non-NaN count;
//   prod: the product of the nonzeros and the count of zeros) come from a pre-pass over x in the
//   forward's fixed order.
// Layout: x's axes merged where every view allows; a thread per 8 consecutive elements of a row
//   (16-byte loads and stores where the views are unit-stride and aligned), its row group in order.
// Determinism: bitwise run-to-run (the pre-pass is fixed-order, the broadcast elementwise).
// Workspace: the pre-pass's per-output values and its split partials (0 for the other ops).
using ReduceBackwardDescriptor = ReduceDescriptor;

struct ReduceBackwardArgs {
  TensorRef x;
  TensorRef y;
  TensorRef y2;  // aminmax: the max
  TensorRef indices;
  TensorRef dy;
  TensorRef dy2;  // var_mean / std_mean: the mean's gradient; aminmax: the max's
  TensorMut dx;
};
BARACUDA_DESCRIBE(ReduceBackwardArgs, x, y, y2, indices, dy, dy2, dx);

class ReduceBackwardPlan : public PlanBase<ReduceDescriptor> {
 public:
  static Result<ReduceBackwardPlan> select(const ReduceBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ReduceBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const ReduceBackwardArgs& args) const;

 private:
  DType out_ = DType::f32;  // y / dy
  int64_t keep_shape_[kMaxRank] = {};
  bool reduced_[kMaxRank] = {};
  size_t mean_bytes_ = 0, mean_partials_ = 0;  // var / std: the means and their pass's partials
};

}  // namespace baracuda
