// What LocalResponseNormPlan / LocalResponseNormBackwardPlan hand their kernels (no CUDA headers).
//
// Every view as [N, C, S] (the spatial axes merged into one strided run): strides s[v] = {n, c,
// s}. channels_fast (the input's channel stride is 1): a thread per element, channel-fastest;
// otherwise threads walk chunks of kChunk channels (windows up to kMaxRing), positions fastest.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::lrn {

inline constexpr int kThreads = 256;
inline constexpr int kWalkThreads = 128;
inline constexpr int64_t kChunk = 64;    // channels per walking thread
inline constexpr int64_t kMaxRing = 16;  // the walk's largest window
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

// The channel walk's shared-memory rings (x; backward also dy, u, d^beta), bytes.
inline size_t ring_bytes(int64_t size, size_t acc_size, bool backward) {
  return static_cast<size_t>(backward ? 4 : 1) * static_cast<size_t>(size) * kWalkThreads * acc_size;
}
// Whether a call walks channels (else a thread per element).
inline bool walks(bool channels_fast, int64_t size, size_t acc_size, bool backward) {
  return !channels_fast && size <= kMaxRing && ring_bytes(size, acc_size, backward) <= 48 * 1024;
}

LrnLaunchFn find_lrn(DType x, bool backward);

}  // namespace baracuda::lrn
