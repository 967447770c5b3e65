// baracuda/ops/unfold.hpp — the backward of Tensor.unfold (aten::unfold_backward): the gradient
// of every window summed back onto the input it views.
//
// The forward, input.unfold(dim, size, step), is a view (no kernel): out[..., w, ..., k] =
//   input[..., w·step + k, ...], w in [0, W), W = (L − size) / step + 1, L = shape[dim], the
//   window axis k appended last.
// Math: grad_input[..., l, ...] = Σ_{w : w·step <= l < w·step + size} grad_out[..., w, ..., l − w·step]
//   (0 where no window covers l), summed in ascending w.
// Shapes: the input [shape] (rank 1..7); grad_out = shape with shape[dim] = W, then [size]
//   appended (rank + 1 axes); grad_input = [shape]. dim in [-rank, rank); size in [0, L];
//   step >= 1 (PyTorch's checks; L = 0 with size 0 gives W = 1).
// Strides: any for grad_out (0, negative, overlapping); grad_input any non-self-overlapping view
//   that does not overlap grad_out. Every element of grad_input is written.
// Dtypes: f32, f16, bf16, f64 (grad_out and grad_input alike). Accumulator f32 (f64 for f64):
//   at most ceil(size / step) terms per element, rounded once into the dtype.
// Paths: disjoint windows (step >= size > 0) are a strided copy of grad_out into the windows'
//   view of grad_input (the copy row; the gaps, when step > size or windows stop short of L,
//   zero-filled first by the fill row): bit-exact. Overlapping windows (and size 0): a gather
//   kernel, every grad_input element summing its windows (8 elements a thread, or warp runs of
//   256 along the innermost axis).
// Determinism: bitwise (windows summed in ascending order). Workspace: none.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

class CopyPlan;
class FillPlan;

struct UnfoldBackwardDescriptor {
  DType dtype = DType::f32;
  int rank = 1;                  // the input's rank
  int64_t shape[kMaxRank] = {};  // the input's shape
  int dim = 0;                   // the unfolded axis, in [-rank, rank)
  int64_t size = 1;              // window length
  int64_t step = 1;              // distance between window starts

  static UnfoldBackwardDescriptor make(DType dtype, std::span<const int64_t> input_shape, int dim, int64_t size, int64_t step);
  // W: the number of windows (-1 when the descriptor is invalid).
  int64_t windows() const;
  bool operator==(const UnfoldBackwardDescriptor&) const = default;
};
BARACUDA_DESCRIBE(UnfoldBackwardDescriptor, dtype, rank, shape, dim, size, step);

struct UnfoldBackwardArgs {
  TensorRef grad_out;    // the unfolded view's gradient: shape with shape[dim] = W, then [size]
  TensorMut grad_input;  // [shape], fully written
};
BARACUDA_DESCRIBE(UnfoldBackwardArgs, grad_out, grad_input);

class UnfoldBackwardPlan : public PlanBase<UnfoldBackwardDescriptor> {
 public:
  static Result<UnfoldBackwardPlan> select(const UnfoldBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const UnfoldBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const UnfoldBackwardArgs& args) const;

 private:
  std::shared_ptr<const CopyPlan> copy_;  // disjoint windows: grad_out -> the windows of grad_input
  std::shared_ptr<const FillPlan> zero_;  // ... and the gaps between / after them
};

}  // namespace baracuda
