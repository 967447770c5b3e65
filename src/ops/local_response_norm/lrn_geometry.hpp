// What LocalResponseNormPlan / LocalResponseNormBackwardPlan hand their kernels (no CUDA headers).
//
// Every view as [N, C, S] (the spatial axes merged into one strided run): strides s[v] = {n, c,
// s}. A thread per element, elements walked channel-fastest (channels_fast: the input's channel
// stride is 1) or spatial-fastest.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::lrn {

inline constexpr int kThreads = 256;
inline constexpr int64_t kMaxGrid = int64_t{132} * 32;

enum View : int { kX = 0, kY, kDy, kDx, kViews };

struct LrnGeom {
  int64_t N = 0, C = 0, S = 0;
  int64_t s[kViews][3] = {};
  void* p[kViews] = {};
  bool channels_fast = false;
  int64_t size = 5;
  double alpha = 1e-4, beta = 0.75, k = 1.0;
};
using LrnLaunchFn = LaunchFn<LrnGeom>;

LrnLaunchFn find_lrn(DType x, bool backward);

}  // namespace baracuda::lrn
