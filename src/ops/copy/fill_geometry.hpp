// What FillPlan hands its kernels (no CUDA headers): the output view, its element count and
// contiguity, and the kind's constants, converted on the host once per plan.
#pragma once

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/fill.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::fillk {

inline constexpr int kThreads = 128;
inline constexpr int kPiecesPerThread = 4;  // 16-byte pieces a thread writes per block (contiguous)

struct FillParams {
  void* out = nullptr;
  int rank = 0;
  int64_t shape[kMaxRank] = {}, stride[kMaxRank] = {};
  int64_t numel = 0;
  int esize = 1;
  bool contiguous = false;  // row-major strides: element f at out + f
  FillKind kind = FillKind::kFull;
  uint64_t bits = 0;        // full: the value; eye: 1 (raw bits of the dtype)
  double start = 0, end = 0, step = 0, base = 10;  // float kinds (arange's step; linspace's computed on the device)
  int64_t istart = 0, iend = 0, istep = 0;         // integer dtypes: start / end / step as integers
  int64_t steps = 0, halfway = 0;                  // linspace / logspace: n and n / 2
};
using FillLaunchFn = LaunchFn<FillParams>;

// The launcher for a dtype and kind (null when the pair has no kernel).
FillLaunchFn find_fill(DType dtype, FillKind kind);

}  // namespace baracuda::fillk
