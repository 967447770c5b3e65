// What the reduce-to-shape host code hands its kernels (no CUDA headers).
//
// x is viewed as kept axes K (kk of them) and reduced axes R (kr of them), both outer-first.
//   row mode     the innermost x axis is reduced: a warp per (output, split) walks the reduced
//                index space; lanes combine in a fixed shuffle tree.
//   column mode  the innermost axis is kept: a thread per (output, split) walks its share of the
//                reduced index space in order (coalesced across threads); with col_vec > 1 a
//                thread per col_vec adjacent outputs, one 16-byte load per row (same order of
//                additions per output, so the same bits).
// With splits > 1 pass 1 writes partials[split][k] and pass 2 combines them in split order.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::red {

struct ReduceGeom {
  int kk = 0, kr = 0;
  int64_t ksize[kMaxRank] = {}, kxs[kMaxRank] = {}, kys[kMaxRank] = {};  // kept: extent, x stride, y stride
  int64_t rsize[kMaxRank] = {}, rxs[kMaxRank] = {};                       // reduced: extent, x stride
  int64_t K = 1, R = 1;
  int64_t splits = 1;
  int64_t r_per_split = 0;
  const void* x = nullptr;
  void* y = nullptr;
  uint8_t y_dtype = 0;
  void* partials = nullptr;  // splits * K accumulators
  bool row_mode = false;
  // column mode: each thread takes col_vec adjacent kept elements (one 16-byte load per row) when
  // the one kept axis is unit-stride and 16-byte aligned at run; set from the shape (one kept and
  // one reduced axis, K a multiple of it), so the splits and the workspace do not depend on it
  int col_vec = 1;
};

// Launches pass 1 (and pass 2 when splits > 1).
using ReduceLaunchFn = LaunchFn<ReduceGeom>;
ReduceLaunchFn reduce_find_kernel(DType in, int op, bool f64_acc);

}  // namespace baracuda::red
