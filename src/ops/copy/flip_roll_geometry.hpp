// What FlipPlan and RollPlan hand their kernel (no CUDA headers): the output's axes that remain
// after merging (outermost first), each with its map (identity, reflection or cyclic shift) and
// the input's and output's strides in units, then a trailing run of units contiguous on both
// sides. A unit is 16 bytes (vec; reversed in registers when the unitized last axis is flipped)
// or one element. Unit u: c = u mod run, the rest decomposed over the axes. A roll of the last
// axis by a shift that is no multiple of the unit still moves 16-byte units: each joins two
// neighbouring source units at a byte offset (sub).
// flat: a flattened roll over views that are not both contiguous: element f of out (row-major)
// takes the input's element (f − shift) mod numel, both decomposed over the shape.
#pragma once

#include <cstdint>

#include "baracuda/core/tensor.hpp"
#include "core/fast_div.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::fliproll {

inline constexpr int kThreads = 128;
inline constexpr int kUnitsPerThread = 4;

struct Axis {
  int64_t n = 1;
  int64_t in_stride = 0, out_stride = 0;  // in units
  int64_t shift = 0;                      // roll: in [0, n)
  bool flip = false;
  detail::FastDiv div;                    // by n, when the launch is small
};

struct Params {
  const char* in = nullptr;
  char* out = nullptr;
  int naxes = 0;
  Axis ax[kMaxRank];
  int64_t run = 1;  // units
  detail::FastDiv run_div;
  int64_t units = 0;
  bool small = false;    // units < 2^31: FastDiv divisions
  bool vec = false;      // 16-byte units
  bool reverse = false;  // vec: the elements of a unit reversed
  // vec roll of the last axis by a shift that is no whole unit: an output unit is the 16 bytes
  // from byte `sub` of its source unit on (the last axis' unit shift rounded up) joined with the
  // next unit along that axis (cyclically); 0 otherwise
  int sub = 0;
  // flat
  bool flat = false;
  int64_t flat_shift = 0;  // in [0, numel)
  int rank = 0;
  int64_t shape[kMaxRank] = {}, in_stride[kMaxRank] = {}, out_stride[kMaxRank] = {};
};
using FlipRollLaunchFn = LaunchFn<Params>;

// The map of one axis of the output.
struct AxisMap {
  bool flip = false;
  int64_t shift = 0;  // roll, already reduced into [0, n)
};

// The launcher for an element size (1, 2, 4, 8 bytes); null for any other.
FlipRollLaunchFn find_flip_roll(int esize);

}  // namespace baracuda::fliproll
