// baracuda/ops/softmax.hpp — torch.softmax / log_softmax / nn.functional.softmin along one axis
// (jax.nn.softmax / log_softmax), and their backward: aten's _softmax_backward_data /
// _log_softmax_backward_data.
//
// Math, per line x_0 .. x_{L-1} along `dim` (softmin: the same on -x):
//   softmax      y_i = exp(x_i - m) / s,  m = max_k x_k, s = Σ_k exp(x_k - m)
//   log_softmax  y_i = x_i - m - log(s)
//   A line holding a NaN, or whose maximum is ±inf, is NaN throughout (PyTorch: x - m is NaN for
//   an infinite m; a fully masked line of -inf therefore gives NaN, not 0).
// Masks (the masked / causal softmax: attention's score softmax), applied to the argument of the
// exponential, x (softmin: -x), element by element before anything else:
//   mask_dtype bool     entries where mask is false become -inf (x.masked_fill(~mask, -inf): a
//                       NaN of x under a false entry is dropped too)
//   mask_dtype float    mask is added: x + mask (x's dtype, or f32; -inf masks; formed in the
//                       accumulator type, not rounded to x's dtype first)
//   causal              entry k of a line whose index along the axis before `dim` is q becomes
//                       -inf where k > q + diagonal (torch.tril(ones, diagonal)'s zeros; 0 is
//                       the top-left aligned causal mask of F.scaled_dot_product_attention,
//                       Lk - Lq the bottom-right one). Needs rank >= 2 and dim >= 1.
//   masked_rows         a line whose every entry is -inf after masking: "nan" gives NaN
//                       throughout (torch.softmax of such a line), "zero" gives 0 (log_softmax:
//                       -inf) and a zero gradient (torch._masked_softmax; attention kernels).
//   The mask has x's shape with any strides, 0 included: a broadcast mask ([B, 1, 1, Lk] key
//   padding) is passed expanded, as torch.expand gives it.
// Shapes: x rank 0..8 (rank 0 is a line of one); dim in [-rank, rank) (0 for rank 0); y x's shape.
// Dtypes (x -> y): f32, f16, bf16, f64 -> the same; out_dtype (PyTorch's `dtype` argument: x is
//   converted first) may also name f32 for an f16 / bf16 x (the half-to-float form).
// Accumulation: f32 (f64 for f64): m and s per line; s adds exp(x - m) over each thread's
//   elements in order, then the threads' (max, sum) pairs combined in a fixed tree.
// Layout: the line's axis unit-stride in x (any other strides): the line is staged in shared
//   memory (read from memory once) by a warp (lines of at most 8 KB) or by a cluster of 1-8
//   blocks (longer: each block a slice, the slices' (max, sum) exchanged through distributed
//   shared memory); lines past 8 x 96 KB are read twice (the second time mostly from L2).
//   Otherwise (a strided axis) a thread per line, adjacent lines on adjacent threads, x read twice.
// Determinism: bitwise run-to-run (fixed orders; no atomics).
// Workspace: none. Aliasing: none (y must not overlap x).
// Masks in the Args: the last field (positional {x, y} initialisers keep their meaning). A bool
// or causal mask is applied once to a staged line (the removed entries written as -inf into the
// stage); an additive mask, and any mask on the unstaged and column paths, is read at each pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(SoftmaxKind, uint8_t, (kSoftmax, "softmax"), (kLogSoftmax, "log_softmax"), (kSoftmin, "softmin"));
BARACUDA_ENUM(MaskedRows, uint8_t, (kNaN, "nan"), (kZero, "zero"));

struct SoftmaxDescriptor {
  SoftmaxKind op = SoftmaxKind::kSoftmax;
  DType dtype = DType::f32;        // x
  std::optional<DType> out_dtype;  // y; unset: x's dtype
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int dim = -1;
  std::optional<DType> mask_dtype;  // unset: no mask; bool: keep where true; f32 / x's dtype: added
  bool causal = false;
  int64_t diagonal = 0;  // causal: entry k of line q kept while k <= q + diagonal
  MaskedRows masked_rows = MaskedRows::kNaN;

  bool operator==(const SoftmaxDescriptor&) const = default;
};
BARACUDA_DESCRIBE(SoftmaxDescriptor, op, dtype, out_dtype, rank, shape, dim, mask_dtype, causal, diagonal, masked_rows);

struct SoftmaxArgs {
  TensorRef x;
  TensorMut y;
  TensorRef mask;  // mask_dtype set: x's shape (any strides, 0 for broadcast axes)
};
BARACUDA_DESCRIBE(SoftmaxArgs, x, y, mask);

class SoftmaxPlan : public PlanBase<SoftmaxDescriptor> {
 public:
  static Result<SoftmaxPlan> select(const SoftmaxDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const SoftmaxArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const SoftmaxArgs& args) const;

 private:
  DType out_ = DType::f32;
};

// ---------------------------------------------------------------- backward
// dx from the forward's output y and the gradient dy (the descriptor is the forward's; x itself
// is not read), per line:
//   softmax      dx_i = y_i · (dy_i - Σ_k dy_k · y_k)
//   log_softmax  dx_i = dy_i - exp(y_i) · Σ_k dy_k
//   softmin      dx_i = -y_i · (dy_i - Σ_k dy_k · y_k)
// Masks: dx is 0 wherever the forward's bool or causal mask removed the entry (masked_fill's
// gradient; an additive mask passes the gradient through, as x + mask does); with masked_rows =
// zero also where log_softmax's y is -inf (a line the forward zeroed has no gradient; softmax's
// y = 0 gives dx = 0 by the formula).
// Operands: y and dy (y's dtype), the bool mask (mask_dtype bool only), dx (x's dtype).
// Accumulation, layout (both lines staged), determinism: as the forward. Workspace: none.
// Aliasing: none.
using SoftmaxBackwardDescriptor = SoftmaxDescriptor;

struct SoftmaxBackwardArgs {
  TensorRef y;
  TensorRef dy;
  TensorMut dx;
  TensorRef mask;  // mask_dtype bool: the forward's mask
};
BARACUDA_DESCRIBE(SoftmaxBackwardArgs, y, dy, dx, mask);

class SoftmaxBackwardPlan : public PlanBase<SoftmaxDescriptor> {
 public:
  static Result<SoftmaxBackwardPlan> select(const SoftmaxBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const SoftmaxBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const SoftmaxBackwardArgs& args) const;

 private:
  DType out_ = DType::f32;  // y / dy
};

}  // namespace baracuda
