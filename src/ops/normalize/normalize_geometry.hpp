// What NormalizePlan / NormalizeBackwardPlan hand their kernels (no CUDA headers).
//
// The input is viewed as `lines` lines of N elements (element stride s[v] per view); the line
// axes (outer-first, unmerged) give a line's offset in every view (g, norm and dg: one value per
// line, s = 0). Paths: kWarpRows (s = 1 in every line view, N ≤ kWarpMaxN: a warp per line,
// kRowWarps per block), kBlockRows (a block of kThreads per line); strided lines: kColumnBlocks
// (N ≥ kColumnMinN: kColY threads per line, kColX lines per block) or kColumns (a thread per line).
// Every path reads a line twice: its sums, then the outputs (the second read mostly from L2).
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/tensor.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::nrmz {

inline constexpr int kThreads = 256;
inline constexpr int kRowWarps = 8;
inline constexpr int64_t kWarpMaxN = 1024;
inline constexpr int64_t kMaxGrid = int64_t{132} * 16;
inline constexpr int kColX = 16, kColY = 32;
inline constexpr int64_t kColumnMinN = 64;

enum Path : int { kWarpRows = 0, kBlockRows = 1, kColumns = 2, kColumnBlocks = 3 };
enum View : int { kX = 0, kY, kDy, kDx, kG, kNorm, kDg, kViews };

struct NormalizeGeom {
  int64_t lines = 0, N = 0;
  int ko = 0;
  int64_t osize[kMaxRank] = {};
  int64_t os[kViews][kMaxRank] = {};
  int64_t s[kViews] = {};
  void* p[kViews] = {};  // data (null: absent)
  bool weight_norm = false;
  double p_norm = 2.0, eps = 0.0;
  int path = kColumns;
};
using NormalizeLaunchFn = LaunchFn<NormalizeGeom>;

NormalizeLaunchFn find_normalize(DType x, bool backward);

}  // namespace baracuda::nrmz
