// baracuda/ops/reduce_to_shape.hpp — reduce a tensor to a broadcast-compatible shape: the
// backward of broadcasting (torch's sum_to_size / Tensor.sum_to_size), with max/min/prod too.
//
// Math: y[j] = R over every x[i] that broadcasting y to x's shape maps onto j, where R is sum,
//   prod, max or min (max/min propagate NaN, as torch.amax).
// Shapes: x rank 0..8; y rank <= x rank, right-aligned against x, each extent 1 or equal to
//   x's (leading axes of x absent from y are reduced). An empty reduction gives 0 (sum) or 1
//   (prod); max/min over an empty axis is an InvalidProblem, as torch.amax.
// Dtypes: x and y f32, f16, bf16, f64 (y may differ from x); i32/i64/u8/i8/i16 for sum/prod/max/
//   min with an i64 accumulator. Accumulation in f32 (f64 for f64 or when either side is f64).
// Strides: any for x (0 allowed); y must not self-overlap and must not overlap x.
// Determinism: bitwise run-to-run deterministic: every output is reduced in a fixed order
//   (per-block partials in the workspace, then a fixed-order final pass); no atomics.
// Workspace: workspace_size() bytes (partials of the column pass; 0 for row/inner reductions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(ReduceOp, uint8_t, (kSum, "sum"), (kProd, "prod"), (kMax, "max"), (kMin, "min"));

struct ReduceToShapeDescriptor {
  ReduceOp op = ReduceOp::kSum;
  DType in_dtype = DType::f32;
  DType out_dtype = DType::f32;
  int in_rank = 0;
  int64_t in_shape[kMaxRank] = {};
  int out_rank = 0;
  int64_t out_shape[kMaxRank] = {};

  static ReduceToShapeDescriptor make(ReduceOp op, DType in_dtype, std::span<const int64_t> in_shape,
                                      DType out_dtype, std::span<const int64_t> out_shape);
  bool operator==(const ReduceToShapeDescriptor&) const = default;
};
BARACUDA_DESCRIBE(ReduceToShapeDescriptor, op, in_dtype, out_dtype, in_rank, in_shape, out_rank, out_shape);

struct ReduceToShapeArgs {
  TensorRef x;
  TensorMut y;
};
BARACUDA_DESCRIBE(ReduceToShapeArgs, x, y);

class ReduceToShapePlan : public PlanBase<ReduceToShapeDescriptor> {
 public:
  static Result<ReduceToShapePlan> select(const ReduceToShapeDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ReduceToShapeArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const ReduceToShapeArgs& args) const;
};

}  // namespace baracuda
