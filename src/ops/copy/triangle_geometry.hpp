// What TrianglePlan hands its kernel (no CUDA headers): the batch axes (merged where they nest on
// both sides), the matrix's row and column strides, and units of one element or 16 bytes along a
// row contiguous in both views.
#pragma once

#include <cstdint>

#include "baracuda/core/tensor.hpp"
#include "core/fast_div.hpp"
#include "core/launch_fn.hpp"

namespace baracuda::trik {

inline constexpr int kThreads = 256;

struct Params {
  const char* in = nullptr;
  char* out = nullptr;
  int64_t rows = 0, cols = 0;  // cols in units
  int vec = 1;                 // elements per unit
  int64_t diagonal = 0;
  int upper = 0;
  int nb = 0;  // batch axes, outermost first
  int64_t bn[kMaxRank] = {}, b_in[kMaxRank] = {}, b_out[kMaxRank] = {};
  int64_t r_in = 0, r_out = 0, c_in = 0, c_out = 0;  // element strides (a unit step: vec elements)
  int64_t units = 0;
  int small = 1;
  detail::FastDiv col_div, row_div, b_div[kMaxRank];
};
using TriLaunchFn = LaunchFn<Params>;

// The launcher for an element size (1, 2, 4, 8) in elements or 16-byte units.
TriLaunchFn find_triangle(int esize, bool vec);

}  // namespace baracuda::trik
