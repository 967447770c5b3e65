// What NormPlan / NormBackwardPlan hand their kernels (no CUDA headers).
//
// x is viewed as `lines` rows of N elements (the normalized axes merged into one, stride s[v]
// per view); the leading axes (outer-first, unmerged) give a row's offset in every view. A block
// of kThreads threads per row (rows::ClusterGroup of one block), rows g, g + groups, ... for
// block g; the row staged (x and residual; backward x and dy) when `staged`. The forward's short
// staged rows (warp): a warp per row instead, kRowWarps per block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/tensor.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::nrm {

inline constexpr int kThreads = 256;
inline constexpr int kRowWarps = 4;                // the forward's warp path: rows (warps) per block
inline constexpr int64_t kWarpRowBytes = 8192;     // ... for rows of at most this many staged bytes
inline constexpr int64_t kStageBytes = 48 * 1024;  // a row's staged bytes (double-buffered) at most
inline constexpr int64_t kMaxGroups = 264;         // row groups (blocks) of the backward: dweight / dbias partials

// Views of a row: inputs and outputs along the normalized axis; mean / rstd one value per row.
enum View : int { kX = 0, kR, kY, kH, kDy, kDh, kDx, kMean, kRstd, kViews };

struct NormGeom {
  int64_t lines = 0, N = 0;
  int ko = 0;
  int64_t osize[kMaxRank] = {};
  int64_t os[kViews][kMaxRank] = {};  // per view: strides of the leading axes
  int64_t s[kViews] = {};             // per view: stride along the row (0 for mean / rstd)
  void* p[kViews] = {};               // data (null: absent)
  const void* w = nullptr;            // weight, bias (stride ws / bs along the row)
  const void* b = nullptr;
  int64_t ws = 1, bs = 1;
  void* dw = nullptr;  // backward: dweight, dbias (stride dws / dbs)
  void* db = nullptr;
  int64_t dws = 1, dbs = 1;
  void* partials = nullptr;  // backward: groups x 2 x N accumulators (dweight's, then dbias's)
  int64_t groups = 1;
  double eps = 1e-5;
  bool layer = true;  // layer_norm (else rms_norm)
  bool vec = false;   // every row view unit-stride, 16-byte aligned rows, N a multiple of the vector
  bool staged = true;
  int buffers = 2;
  bool warp = false;  // forward: a warp per row (staged rows of at most kWarpRowBytes)
};
using NormLaunchFn = LaunchFn<NormGeom>;

// The launcher of x's dtype `x` and the parameters' `param` (forward or backward); nullptr when
// there is none.
NormLaunchFn find_norm(DType x, DType param, bool backward);

}  // namespace baracuda::nrm
