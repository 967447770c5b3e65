// Device helpers of the pad backward's gathers (pad_warprows.cu, pad_flat.cu, pad_segments.cu):
// the preimage cells of a coordinate along one axis, the preimage rows of a dx row, and the sum
// of a dx column's cells in one preimage row.
#pragma once

#include <cstdint>

#include "core/cuda_types.cuh"
#include "ops/pad/pad_device.cuh"
#include "ops/pad/pad_geometry.hpp"

namespace baracuda::detail {

// The padded coordinates whose source is x along one axis: up to 3 non-empty ranges [a, b),
// in increasing order.
template <class Idx>
struct Preimages {
  int cnt;
  Idx a[3];
  Idx b[3];
  __device__ __forceinline__ void add(Idx lo_, Idx hi_, Idx m) {
    lo_ = lo_ < 0 ? Idx(0) : lo_;
    hi_ = hi_ > m ? m : hi_;
    if (lo_ < hi_) {  // appended through selects, not a[cnt]: the ranges stay in registers
#pragma unroll
      for (int i = 0; i < 3; ++i) {
        a[i] = i == cnt ? lo_ : a[i];
        b[i] = i == cnt ? hi_ : b[i];
      }
      ++cnt;
    }
  }
};

template <class Idx>
__device__ __forceinline__ Preimages<Idx> pad_preimages(int mode, Idx n, Idx m, Idx lo, Idx x) {
  Preimages<Idx> p;
  p.cnt = 0;
  p.a[0] = p.b[0] = p.a[1] = p.b[1] = p.a[2] = p.b[2] = 0;
  const Idx o = x + lo;  // the identity cell
  if (mode == kConstant) {
    p.add(o, o + 1, m);
  } else if (mode == kReflect) {
    if (x > 0) p.add(lo - x, lo - x + 1, m);  // mirrored from i = -x
    p.add(o, o + 1, m);
    if (x < n - 1) p.add(lo + 2 * (n - 1) - x, lo + 2 * (n - 1) - x + 1, m);  // from i = 2(n-1)-x
  } else if (mode == kReplicate) {
    p.add(x == 0 ? Idx(0) : o, x == n - 1 ? m : o + 1, m);  // edges take every clamped cell
  } else {  // circular
    p.add(o - n, o - n + 1, m);
    p.add(o, o + 1, m);
    p.add(o + n, o + n + 1, m);
  }
  return p;
}

template <class Idx>
__device__ __forceinline__ Idx pick4(const Idx (&a)[4], int i) {
  return i == 0 ? a[0] : i == 1 ? a[1] : i == 2 ? a[2] : a[3];
}

// The c-th cell (0-based) of a preimage set, counting through its ranges in order.
template <class Idx>
__device__ __forceinline__ Idx nth_cell(const Preimages<Idx>& p, Idx c) {
  const Idx l0 = p.b[0] - p.a[0], l1 = p.cnt > 1 ? p.b[1] - p.a[1] : Idx(0);
  return c < l0 ? p.a[0] + c : (c < l0 + l1 ? p.a[1] + (c - l0) : p.a[2] + (c - l0 - l1));
}

// Backward row set-up: the dy row offsets of one dx row (every combination of its per-axis
// preimage cells) when there are at most 4. nrow = 0: nothing maps to the row; 5: more than 4.
template <class Idx>
__device__ __forceinline__ void bwd_row(const PadGeometry& g, Idx r, Idx* xo, Idx (&off)[4], int* nrow) {
  off[0] = off[1] = off[2] = off[3] = 0;
  int cnt = 1;
  Idx x_off = 0;
  for_row_axes<Idx>(g, r, true, [&](int d, Idx x) {
    x_off += x * static_cast<Idx>(g.xs[d]);
    if (cnt == 0 || cnt > 4) return;
    const Preimages<Idx> p = pad_preimages<Idx>(g.mode, g.n[d], g.m[d], g.lo[d], x);
    Idx cells = 0;
#pragma unroll
    for (int i = 0; i < 3; ++i)
      if (i < p.cnt) cells += p.b[i] - p.a[i];
    if (cells == 0) {
      cnt = 0;
      return;
    }
    if (cells > 4 || cnt * static_cast<int>(cells) > 4) {
      cnt = 5;
      return;
    }
    const int cl = static_cast<int>(cells);
    Idx nw[4];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int i = s / cl, c = s - i * cl;
      nw[s] = i < cnt ? pick4(off, i) + nth_cell(p, static_cast<Idx>(c)) * static_cast<Idx>(g.ys[d]) : Idx(0);
    }
#pragma unroll
    for (int s = 0; s < 4; ++s) off[s] = nw[s];
    cnt *= cl;
  });
  *xo = x_off;
  *nrow = cnt;
}

// acc plus dx column x's cells of one preimage row.
template <class T>
__device__ __forceinline__ acc_t<T> add_col_cells(const PadColCells& cc, const T* __restrict__ row, int32_t sy, int32_t x,
                                                  acc_t<T> acc) {
  const XCells c = x_cells(cc, x);
  for (int32_t t = 0; t < c.ln; ++t) acc += to_acc(row[(c.la + t) * sy]);
  if (c.id) acc += to_acc(row[(x + cc.lo) * sy]);
  for (int32_t t = 0; t < c.hn; ++t) acc += to_acc(row[(c.ha + t) * sy]);
  return acc;
}

}  // namespace baracuda::detail
