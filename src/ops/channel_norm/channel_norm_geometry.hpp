// What ChannelNormPlan / ChannelNormBackwardPlan hand their kernels (no CUDA headers).
//
// x = [N, C, S] (the spatial axes merged per view: strides sn, sc, ss). A cell is (n, c); each
// cell's S elements are read in `chunks` chunks of `chunk` (the last shorter). Chunk id k =
// (n · chunks + j) · C + c: adjacent ids are adjacent channels. Statistic of cell (n, c): batch
// c, group n · G + c / Cg, instance n · C + c. Workspace: part (chunk partials, 2 accumulators:
// forward (mean, M2), backward (Σdy, Σdy·(x - mean))), cell (4 accumulators per cell: forward
// (mean, rstd·w, b, var); backward (mean, a1, a2, a3): dx = a1·dy + a2·(x - mean) + a3).
#pragma once

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "core/fast_div.hpp"
#include "core/hd.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::cn {

enum Kind : int { kBatch = 0, kGroup = 1, kInstance = 2 };
enum View : int { kX = 0, kYd = 1, kDx = 2, kViews };  // x; y (forward) or dy (backward); dx

struct CnGeom {
  int kind = kBatch;
  int64_t N = 0, C = 0, S = 0, G = 1, Cg = 1;  // G: groups (group_norm); Cg = C / G
  int64_t sn[kViews] = {}, sc[kViews] = {}, ss[kViews] = {};
  const void* x = nullptr;
  void* y = nullptr;  // forward
  const void* dy = nullptr;
  void* dx = nullptr;
  void* mean = nullptr;  // the statistics: batch [C], group [N, G], instance [N, C] (strides ms0, ms1)
  void* rstd = nullptr;
  int64_t ms0 = 0, ms1 = 0, rs0 = 0, rs1 = 0;
  const void* w = nullptr;  // [C] each (stride)
  const void* b = nullptr;
  void* rm = nullptr;
  void* rv = nullptr;
  void* dw = nullptr;
  void* db = nullptr;
  int64_t wst = 1, bst = 1, rmst = 1, rvst = 1, dwst = 1, dbst = 1;
  void* part = nullptr;  // workspace: chunk partials
  void* cell = nullptr;  // workspace: the cell table
  int64_t chunks = 1, chunk = 0;
  bool warp = true;           // a warp per chunk (spatial unit-stride in the read views), else a thread
  bool channels_last = false;  // the element pass in (n, s, c) order (x's channel stride below its spatial one)
  bool vec_p = false;  // the partials in 16-byte pieces (warp: along s; thread: V channels)
  bool vec_e = false;  // the element pass in 16-byte pieces along the inner axis
  bool training = true, running = false;
  double momentum = 0.1, eps = 1e-5;
  // the element pass: rows x inner (inner = S, rows = N·C; channels_last: inner = C, rows = N·S)
  bool small = true;  // N·C·S < 2^31: 32-bit index with FastDiv
  detail::FastDiv inner_div, mid_div;  // by inner, and by C (rows -> n, c) or S (rows -> n, s)

  BARACUDA_HD int64_t stats() const { return kind == kBatch ? C : kind == kGroup ? N * G : N * C; }
};
using CnLaunchFn = LaunchFn<CnGeom>;

// The launcher for x's dtype and the parameters' (forward or backward); nullptr when none.
CnLaunchFn find_channel_norm(DType x, DType param, bool backward);

}  // namespace baracuda::cn
