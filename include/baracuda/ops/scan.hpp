// baracuda/ops/scan.hpp — scans along one axis: torch.cumsum / cumprod / cummax / cummin /
// logcumsumexp, and jax.lax.cumsum / cumprod / cummax / cummin / cumlogsumexp (reverse=) with
// lax.associative_scan's add / mul / max / min; exclusive forms (the scan shifted by one,
// starting from the identity).
//
// Math, per line x_0 .. x_{L-1} along `dim` (reverse: the line read from its end, y_i over
// x_i .. x_{L-1}; exclusive: y_i over the elements strictly before i in that order):
//   cumsum y_i = Σ_{k<=i} x_k; cumprod Π; logcumsumexp log Σ exp(x_k) (pairwise
//   max + log1p(exp(min - max)); a NaN propagates, equal infinities stay); cummax / cummin the
//   running extreme and its index along `dim`: PyTorch's rule, the LAST index of a tie, a NaN
//   sticks from its first occurrence and a later NaN takes its index.
// Shapes: x rank 0..8 (rank 0 is a line of one); dim in [-rank, rank) (0 for rank 0); y x's
//   shape; indices (cummax / cummin, when `indices` is set) x's shape, i64.
// Dtypes (x -> y, PyTorch's): cumsum / cumprod f32 / f16 / bf16 / f64 -> the same, i8 / u8 / i16 / i32 /
//   i64 / bool -> i64 (out_dtype: f32 or f64 for float x, i64 for integer x); cummax / cummin
//   every one of those -> the same; logcumsumexp float only.
// Accumulation: f32 for f32 / f16 / bf16 (f64 where x or y is f64), i64 (wrapping) for integers.
// Exclusive: cumsum / cumprod / logcumsumexp (y_0 = 0 / 1 / -inf); cummax / cummin refuse it
//   (no index for an empty prefix).
// Strides: any for x (0 allowed); y and indices must not self-overlap or overlap x.
// Determinism: bitwise run-to-run deterministic: every line is scanned in chunks of 32 x 8 by a
//   warp (each lane's 8 positions in order, then a fixed shuffle scan, then the chunk's carry),
//   or serially by a thread when `dim` is not the unit-stride axis. A long line along the
//   unit-stride axis is cut into tiles scanned in one pass: each tile publishes its total and
//   starts from the sum of its line's earlier tiles' totals taken in a fixed order (lane runs,
//   then a lane tree: a function of the tile's place, never of timing); the only atomic is the
//   tile counter, which orders the tiles' start and no value. A long strided line: segments
//   whose totals are scanned in a fixed order between two passes.
// Workspace: the tiles' counter, flags and totals, or the segments' totals (workspace_size(); 0
//   when no line is tiled or segmented); run() zeroes the counter and flags (one memset).
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

BARACUDA_ENUM(ScanKind, uint8_t, (kCumsum, "cumsum"), (kCumprod, "cumprod"), (kCummax, "cummax"), (kCummin, "cummin"),
              (kLogCumSumExp, "logcumsumexp"));

struct ScanDescriptor {
  ScanKind op = ScanKind::kCumsum;
  DType dtype = DType::f32;        // x
  std::optional<DType> out_dtype;  // y; unset: PyTorch's result type (above)
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int dim = 0;
  bool reverse = false;
  bool exclusive = false;
  bool indices = true;  // cummax / cummin: write the indices (jax.lax.cummax: false)

  bool operator==(const ScanDescriptor&) const = default;
};
BARACUDA_DESCRIBE(ScanDescriptor, op, dtype, out_dtype, rank, shape, dim, reverse, exclusive, indices);

struct ScanArgs {
  TensorRef x;
  TensorMut y;
  TensorMut indices;  // cummax / cummin with `indices`
};
BARACUDA_DESCRIBE(ScanArgs, x, y, indices);

class ScanPlan : public PlanBase<ScanDescriptor> {
 public:
  static Result<ScanPlan> select(const ScanDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ScanArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const ScanArgs& args) const;

 private:
  DType out_ = DType::f32;
  size_t acc_bytes_ = 0;
};

// ---------------------------------------------------------------- backward
// dx for the forward's descriptor, per line (positions in the scan's order; S_j the elements y_j
// covers):
//   cumsum        dx_i = Σ_{j: i in S_j} dy_j: the scan of dy the other way round (same kernels);
//   cumprod       dx_i = Σ_{j: i in S_j} dy_j Π_{k in S_j, k != i} x_k, without division (zeros
//                 are exact): dx_i = P_i · T_i, P_i the product before i (y_{i-1}; exclusive:
//                 y_i), T_i = dy'_i + x_{i+1} T_{i+1} (Horner from the end; dy' = dy, exclusive:
//                 dy shifted by one);
//   cummax/cummin dx_i = Σ_{j: indices_j = i} dy_j (the forward's indices; one out of range is
//                 skipped, never written);
//   logcumsumexp  dx_i = Σ_{j: i in S_j} dy_j exp(x_i - y_j), the positive and negative dy
//                 accumulated apart in log space (no overflow of exp(-y)).
// Operands: cumsum dy -> dx; cumprod x, y, dy; cummax / cummin indices, dy (the forward's
//   `indices` must be set); logcumsumexp x, y, dy. dy has y's dtype, dx x's (floating x only).
// Accumulation: f32 (f64 for f64). Determinism: bitwise run-to-run (cumsum: the forward's
//   kernels; the others a thread per line, serial).
// Workspace: cumsum the forward's; the others none.
using ScanBackwardDescriptor = ScanDescriptor;

struct ScanBackwardArgs {
  TensorRef x;
  TensorRef y;
  TensorRef indices;
  TensorRef dy;
  TensorMut dx;
};
BARACUDA_DESCRIBE(ScanBackwardArgs, x, y, indices, dy, dx);

class ScanBackwardPlan : public PlanBase<ScanDescriptor> {
 public:
  static Result<ScanBackwardPlan> select(const ScanBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ScanBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const ScanBackwardArgs& args) const;

 private:
  DType out_ = DType::f32;  // y / dy
  size_t acc_bytes_ = 0;
};

}  // namespace baracuda
