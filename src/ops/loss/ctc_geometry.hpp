// What CtcLossPlan / CtcLossBackwardPlan hand their kernel (no CUDA headers).
//
// Forward: a block per sample runs α (the ping-pong rows in shared memory when they fit, else in
// the workspace). Backward: the same block per sample stores every α and β row and the grouping
// of positions by label, then a second kernel forms the gradient with a block per (t, n).
// Workspace, carved by the plan: per sample kIntArrays int32 arrays of P = 2S + 1 (the extended
// labels; each position's slot in label order; its group's head; the heads' group bounds; the
// large groups' heads; the position at each slot) and one state (0 valid, 1 bad); then the
// accumulators, per sample `rows` rows of P (forward: α ping-pong, 2; backward: α and β of every
// step, 2T); then N per-sample values (forward mean / sum: the losses; backward: the nll).
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::ctc {

inline constexpr int kMaxThreads = 1024;
inline constexpr int kFinishThreads = 256;
inline constexpr int kIntArrays = 7;
inline constexpr int kGradThreads = 256;
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
  int32_t* ints = nullptr;  // kIntArrays · P + 1 per sample
  void* acc = nullptr;      // rows · P per sample
  int64_t rows = 2;
  void* partials = nullptr;  // forward mean / sum: the N losses; backward: the N nll
};
using CtcLaunchFn = LaunchFn<CtcGeom>;

CtcLaunchFn find_ctc(DType x, DType index, bool backward);

}  // namespace baracuda::ctc
