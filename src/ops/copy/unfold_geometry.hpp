// What UnfoldBackwardPlan hands its kernel (no CUDA headers): grad_input's axes (extent-1 axes
// dropped, nesting neighbours merged, the unfolded axis always kept) with both views' strides,
// and the window arithmetic.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/tensor.hpp"
#include "core/fast_div.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::unfk {

inline constexpr int kThreads = 256;
inline constexpr int64_t kRun = 256;  // elements of a warp's run (32 lanes x 8)

struct Params {
  const void* grad_out = nullptr;
  void* grad_input = nullptr;
  int na = 0;   // axes, outermost first
  int axis = 0; // the unfolded axis' place among them
  int64_t n[kMaxRank] = {}, gi[kMaxRank] = {}, go[kMaxRank] = {};  // extents and element strides
  int64_t windows = 1, size = 0, step = 1;
  int64_t go_w = 0;  // grad_out's stride along the unfolded axis (between windows)
  int64_t go_k = 0;  // grad_out's stride along the window axis
  int64_t units = 0; // grad_input's elements
  int small = 1;     // units < 2^31: FastDiv coordinates
  int narrow = 0;    // small, and both views reach less than 2^31 elements: 32-bit offsets
  int run = 0;       // narrow, and the innermost axis' extent a multiple of 256: runs of 256 a warp
  detail::FastDiv div[kMaxRank], step_div;
};
using UnfLaunchFn = LaunchFn<Params>;

// The launcher for a float dtype (f32 f16 bf16 f64); null for any other.
UnfLaunchFn find_unfold_backward(DType dtype);

}  // namespace baracuda::unfk
