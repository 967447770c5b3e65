// What CtcLossPlan / CtcLossBackwardPlan hand their kernel (no CUDA headers).
//
// A block per sample. Workspace, carved by the plan: kIntArrays int32 arrays of P = 2S + 1 per
// sample (the extended labels and the grouping of positions by label: each position's slot in
// the label-sorted order, its group's head, the heads' group bounds, the large groups' heads),
// then the accumulators: per sample `rows` rows of P (forward: the α ping-pong, 2; backward: α of
// every step, then 5 scratch rows), then (forward mean / sum) N per-sample losses. The scratch
// rows (α and β ping-pong, the grouped α·β of a step) live in shared memory when they fit.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::ctc {

inline constexpr int kMaxThreads = 1024;
inline constexpr int kFinishThreads = 256;
inline constexpr int kIntArrays = 6;
inline constexpr int kScratchRows = 5;   // backward: α ping-pong, β ping-pong, the grouped α·β
inline constexpr int64_t kBigGroup = 32;  // a label's positions reduced by a warp past this
inline constexpr int64_t kMaxGrid = int64_t{132} * 16;

struct CtcGeom {
  int64_t T = 0, N = 0, C = 0, S = 0, total = 0, blank = 0, P = 1;
  bool concatenated = false, zero_infinity = false;
  int reduction = 1;  // LossReduction
  const void* lp = nullptr;
  int64_t lps[3] = {};  // t, n, c
  const void* tg = nullptr;
  int64_t tgs[2] = {};  // padded: n, s; concatenated: 0, element
  const void* il = nullptr;
  const void* tl = nullptr;
  int64_t ils = 0, tls = 0;
  void* loss = nullptr;  // reduction none: per sample at loss_s; else the scalar
  int64_t loss_s = 0;
  const void* dloss = nullptr;  // backward: none per sample at dloss_s, else the scalar (dloss_s 0)
  int64_t dloss_s = 0;
  void* dlp = nullptr;
  int64_t dlps[3] = {};
  int32_t* ints = nullptr;  // kIntArrays · P per sample
  void* acc = nullptr;      // rows · P per sample
  int64_t rows = 2;
  void* partials = nullptr;  // forward mean / sum: N
};
using CtcLaunchFn = LaunchFn<CtcGeom>;

CtcLaunchFn find_ctc(DType x, DType index, bool backward);

}  // namespace baracuda::ctc
