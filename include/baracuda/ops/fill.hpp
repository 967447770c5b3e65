// baracuda/ops/fill.hpp — the creation ops: fill_ / full / zeros / ones (+ _like), arange,
// linspace, logspace, eye (jnp.full / arange / linspace / logspace / eye), written into a view.
//
// Math (i = the element's position along the 1-D output; eye: (r, c) of the 2-D output):
//   full      out[...] = value, converted as PyTorch's fill_ (c10::checked_convert: floats round
//             to nearest, f16 / bf16 through f32; integers range-checked, truncated; bool = != 0).
//   arange    out[i] = start + step · i, computed as PyTorch's CUDA kernel does: in f32 for f32 /
//             f16 / bf16 (one rounding to the dtype at the end), f64 for f64, i64 for integers
//             (start and step truncated to integers). FillDescriptor::arange() sizes the output as
//             PyTorch does (ceil((end − start) / step); i64: integer arithmetic) and refuses a zero
//             step, a non-finite bound or a step whose sign disagrees with end − start.
//   linspace  steps = n points from start to end: step = (end − start) / (n − 1);
//             out[i] = start + step · i for i < n / 2, end − step · (n − 1 − i) after (both ends
//             exact, PyTorch's symmetric form); n = 1: start. Floats in f32 (f64 for f64);
//             integers: start / end truncated to the dtype, step and the value in f32, truncated.
//   logspace  base ^ (linspace's value), the exponent as linspace computes it (f32, f64 for f64),
//             the power in f64, then rounded to the dtype. Float dtypes only.
//   eye       out[r, c] = (r == c) (n × m, any n, m).
// Shapes: full: any rank 0..8; arange / linspace / logspace: rank 1; eye: rank 2.
// Strides: out any non-self-overlapping view (a slice, a transposed or negative-stride view);
//   contiguous outputs are written in 16-byte pieces.
// Dtypes: full and eye every real dtype but fp8 for full (no checked conversion to fp8; eye
//   writes fp8's 1.0 and 0); arange / linspace: f32 f16 bf16 f64 i8 u8 i16 i32 i64; logspace:
//   f32 f16 bf16 f64.
// Determinism: bitwise. Workspace: none. Aliasing: out only. No backward (no inputs).
#pragma once

#include <cstdint>
#include <span>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/scalar.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(FillKind, uint8_t, (kFull, "full"), (kArange, "arange"), (kLinspace, "linspace"), (kLogspace, "logspace"),
              (kEye, "eye"));

struct FillDescriptor {
  DType dtype = DType::f32;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  FillKind kind = FillKind::kFull;
  Scalar value = 0.0;   // full
  Scalar start = 0.0;   // arange, linspace, logspace
  Scalar end = 0.0;     // linspace, logspace (arange's end only sizes it: arange())
  Scalar step = 1.0;    // arange
  double base = 10.0;   // logspace

  static FillDescriptor full(DType dtype, std::span<const int64_t> shape, Scalar value);
  // torch.arange(start, end, step): the output's length as PyTorch computes it, or its error.
  static Result<FillDescriptor> arange(DType dtype, Scalar start, Scalar end, Scalar step = Scalar(int64_t{1}));
  static FillDescriptor linspace(DType dtype, Scalar start, Scalar end, int64_t steps);
  static FillDescriptor logspace(DType dtype, Scalar start, Scalar end, int64_t steps, double base = 10.0);
  static FillDescriptor eye(DType dtype, int64_t n, int64_t m);
  bool operator==(const FillDescriptor&) const = default;
};
BARACUDA_DESCRIBE(FillDescriptor, dtype, rank, shape, kind, value, start, end, step, base);

struct FillArgs {
  TensorMut out;
};
BARACUDA_DESCRIBE(FillArgs, out);

class FillPlan : public PlanBase<FillDescriptor> {
 public:
  static Result<FillPlan> select(const FillDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const FillArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const FillArgs& args) const;

 private:
  uint64_t bits_ = 0;  // full: value in dtype; eye: 1 in dtype
};

}  // namespace baracuda
