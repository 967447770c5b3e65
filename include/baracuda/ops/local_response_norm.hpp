// baracuda/ops/local_response_norm.hpp — F.local_response_norm (AlexNet's LRN across channels),
// forward and backward: every element divided by a power of the sum of squares over a window of
// neighbouring channels.
//
// Math (PyTorch's composite: x² average-pooled over channels with zero padding size / 2 before and
// (size - 1) / 2 after, count_include_pad, then · alpha + k, ^ beta), per batch n, channel c and
// spatial position s:
//   W(c)  = [c - size / 2, c + (size - 1) / 2] ∩ [0, C)        (integer division)
//   d_c   = k + alpha / size · Σ_{j ∈ W(c)} x_j²
//   y_c   = x_c / d_c^beta
// Backward (autograd of the composite): with u_j = dy_j · x_j · d_j^(-beta - 1),
//   dx_c  = dy_c / d_c^beta - (2 · alpha · beta / size) · x_c · Σ_{j : c ∈ W(j)} u_j
//   (j runs over [c - (size - 1) / 2, c + size / 2] ∩ [0, C)).
// A zero window with k = 0 gives 0 / 0 = NaN, as PyTorch.
// Shapes: input [N, C, d1, ..., dk] (rank 3 .. 8, PyTorch requires 3 or more), the spatial axes
//   merged into one strided run per view (refused when their strides do not nest); output, doutput,
//   dinput the input's shape; any strides (channels-last included).
// Parameters (PyTorch's names and defaults): size (> 0), alpha 1e-4, beta 0.75, k 1.
// Dtypes: input / output `dtype` (f32, f16, bf16, f64); math and accumulation f32 (f64), one
//   rounding at the output (PyTorch rounds each step of the composite in the input's dtype).
// Layout: spatial-fast inputs (NCHW) and size <= 16: a thread walks 64 channels of one position
//   (consecutive threads at consecutive positions: coalesced), each element loaded once plus the
//   window's halo per chunk, the last `size` values in shared-memory rings. Channels-last inputs
//   (channel stride 1) and wider windows: a thread per element, channel-fastest, the window's other
//   channels from L1 / L2 (size loads per element forward; the backward sums size windows of size,
//   size² loads from cache). Every window sum is taken whole (no running sum).
// Determinism: bitwise run-to-run (no atomics). Workspace: none. Aliasing: none (the output
//   window reads neighbours of the element it writes).
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct LocalResponseNormDescriptor {
  DType dtype = DType::f32;
  int rank = 4;  // 3 .. 8: [N, C, spatial...]
  int64_t shape[kMaxRank] = {};
  int64_t size = 5;  // channels in the window, > 0
  double alpha = 1e-4;
  double beta = 0.75;
  double k = 1.0;

  bool operator==(const LocalResponseNormDescriptor&) const = default;
};
BARACUDA_DESCRIBE(LocalResponseNormDescriptor, dtype, rank, shape, size, alpha, beta, k);

struct LocalResponseNormArgs {
  TensorRef input;
  TensorMut output;
};
BARACUDA_DESCRIBE(LocalResponseNormArgs, input, output);

class LocalResponseNormPlan : public PlanBase<LocalResponseNormDescriptor> {
 public:
  static Result<LocalResponseNormPlan> select(const LocalResponseNormDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const LocalResponseNormArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const LocalResponseNormArgs& args) const;
};

// Backward: dinput from doutput and the forward's input (the windows recomputed).
using LocalResponseNormBackwardDescriptor = LocalResponseNormDescriptor;

struct LocalResponseNormBackwardArgs {
  TensorRef input;
  TensorRef doutput;
  TensorMut dinput;
};
BARACUDA_DESCRIBE(LocalResponseNormBackwardArgs, input, doutput, dinput);

class LocalResponseNormBackwardPlan : public PlanBase<LocalResponseNormDescriptor> {
 public:
  static Result<LocalResponseNormBackwardPlan> select(const LocalResponseNormBackwardDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const LocalResponseNormBackwardArgs& args) const;
  Status run(cudaStream_t stream, Workspace ws, const LocalResponseNormBackwardArgs& args) const;
};

}  // namespace baracuda
