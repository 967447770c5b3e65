// ScanPlan's device code (included by scan_float.cu and scan_int.cu): the scan policies and the
// row / column / segment-prefix kernels of scan_geometry.hpp.
//
// A policy P has T (storage), C (compute: f32, f64, i64), Acc, identity(), map(v, e) (element v
// at index e along the axis), combine(a, b) (a covers the earlier positions), shfl_up / shfl_idx
// and store(g, y_off, i_off, a). Every order of combination is a function of the shape alone.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/arith.hpp"
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/reduce/scan_geometry.hpp"

namespace baracuda::scan {

enum Kind : int { kCumsum = 0, kCumprod, kCummax, kCummin, kLogCumSumExp };

template <class C>
__device__ __forceinline__ bool nan_of(C v) {
  if constexpr (std::is_integral_v<C>) return false;
  else return v != v;
}

// PyTorch's _log_add_exp_helper: max + log1p(exp(min - max)); equal infinities stay; NaN wins.
template <class C>
__device__ __forceinline__ C log_add_exp(C a, C b) {
  if (a != a) return a;
  if (b != b) return b;
  const C mx = a > b ? a : b, mn = a > b ? b : a;
  if (mn == mx && !isfinite(mn)) return mn;
  return mx + log1p(exp(mn - mx));
}

template <class T_, class C_, int K>
struct ScanOp {
  using T = T_;
  using C = C_;
  static constexpr bool kArg = K == kCummax || K == kCummin;
  struct ArgAcc {
    C v;
    int64_t i;  // -1: the identity (no element yet)
  };
  using Acc = std::conditional_t<kArg, ArgAcc, C>;

  __device__ static Acc identity() {
    if constexpr (kArg) return {C(0), -1};
    else if constexpr (K == kCumprod) return C(1);
    else if constexpr (K == kLogCumSumExp) return -std::numeric_limits<C>::infinity();
    else return C(0);
  }
  __device__ static Acc map(C v, int64_t e) {
    if constexpr (kArg) return {v, e};
    else return v;
  }
  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (kArg) {
      // PyTorch's cummax / cummin: the later of a tie, a NaN sticks (a later NaN takes its index)
      if (b.i < 0) return a;
      if (a.i < 0 || nan_of(b.v)) return b;
      if (nan_of(a.v)) return a;
      return (K == kCummax ? b.v >= a.v : b.v <= a.v) ? b : a;
    } else if constexpr (K == kCumprod) {
      if constexpr (std::is_integral_v<C>) return wmul(a, b);
      else return a * b;
    } else if constexpr (K == kLogCumSumExp) {
      return log_add_exp(a, b);
    } else {
      if constexpr (std::is_integral_v<C>) return wadd(a, b);
      else return a + b;
    }
  }
  __device__ static Acc shfl_up(Acc a, int d) {
    if constexpr (kArg) return {__shfl_up_sync(0xffffffffu, a.v, d), __shfl_up_sync(0xffffffffu, a.i, d)};
    else return __shfl_up_sync(0xffffffffu, a, d);
  }
  __device__ static Acc shfl_idx(Acc a, int lane) {
    if constexpr (kArg) return {__shfl_sync(0xffffffffu, a.v, lane), __shfl_sync(0xffffffffu, a.i, lane)};
    else return __shfl_sync(0xffffffffu, a, lane);
  }
  __device__ static void store(const ScanGeom& g, int64_t yo, int64_t io, Acc a) {
    if constexpr (kArg) {
      if (g.y) store_dyn<C>(g.y, yo, g.y_dtype, a.v, false);
      if (g.indices) static_cast<int64_t*>(g.indices)[io] = a.i;
    } else {
      store_dyn<C>(g.y, yo, g.y_dtype, a, false);
    }
  }
};

__device__ __forceinline__ int64_t line_offset(const ScanGeom& g, const int64_t* st, int64_t line) {
  int64_t off = 0;
  for (int a = g.ko - 1; a >= 0; --a) {
    const int64_t c = line % g.osize[a];
    line /= g.osize[a];
    off += c * st[a];
  }
  return off;
}

// The kItems positions qa .. qa + n - 1 of a unit-stride line (reverse: counted from its end) as
// C: whole aligned vectors when all kItems are there, else element by element.
template <class T, class C>
__device__ __forceinline__ void load_items(const T* x, int64_t L, int64_t qa, int n, bool reverse, C (&v)[kItems]) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * kItems;
  constexpr int V = kBytes >= 16 ? 16 / static_cast<int>(sizeof(T)) : kItems;
  if (n == kItems) {
    const T* lo = x + (reverse ? L - qa - kItems : qa);
    if (reinterpret_cast<uintptr_t>(lo) % (sizeof(T) * V) == 0) {
      C t[kItems];
#pragma unroll
      for (int u = 0; u < kItems / V; ++u) to_c_vec<C, V, T>(*reinterpret_cast<const RawVec<T, V>*>(lo + u * V), t + u * V);
#pragma unroll
      for (int j = 0; j < kItems; ++j) v[j] = reverse ? t[kItems - 1 - j] : t[j];
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < kItems; ++j) v[j] = j < n ? to_c<C>(x[reverse ? L - 1 - (qa + j) : qa + j]) : C(0);
}

// pass 0: the whole line (one segment); 1: segment totals into partials; 3: each segment from
// its prefix (partials after scan_prefix_kernel).
template <class P>
__global__ void __launch_bounds__(256) scan_row_kernel(const ScanGeom g, int pass) {
  using T = typename P::T;
  using C = typename P::C;
  using Acc = typename P::Acc;
  const int lane = threadIdx.x & 31;
  const int64_t units = g.lines * g.segments;
  for (int64_t w = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) / 32; w < units; w += static_cast<int64_t>(gridDim.x) * 8) {
    const int64_t line = w / g.segments, seg = w % g.segments;
    const T* x = static_cast<const T*>(g.x) + line_offset(g, g.oxs, line);
    const int64_t yo = line_offset(g, g.oys, line), io = g.indices ? line_offset(g, g.ois, line) : 0;
    const int64_t q0 = seg * g.seg_len, q1 = min(g.L, q0 + g.seg_len);
    Acc carry = pass == 3 ? static_cast<const Acc*>(g.partials)[line * g.segments + seg] : P::identity();
    for (int64_t base = q0; base < q1; base += kChunk) {
      const int64_t qa = base + lane * kItems;
      const int64_t left = q1 - qa;
      const int n = left <= 0 ? 0 : left >= kItems ? kItems : static_cast<int>(left);
      C v[kItems];
      load_items<T, C>(x, g.L, qa, n, g.reverse, v);
      Acc a[kItems];
      a[0] = n > 0 ? P::map(v[0], g.reverse ? g.L - 1 - qa : qa) : P::identity();
#pragma unroll
      for (int j = 1; j < kItems; ++j) a[j] = j < n ? P::combine(a[j - 1], P::map(v[j], g.reverse ? g.L - 1 - (qa + j) : qa + j)) : a[j - 1];
      Acc inc = a[kItems - 1];
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const Acc o = P::shfl_up(inc, d);
        if (lane >= d) inc = P::combine(o, inc);
      }
      Acc ex = P::shfl_up(inc, 1);
      if (lane == 0) ex = P::identity();
      const Acc pre = P::combine(carry, ex);
      if (pass != 1) {
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
          if (j >= n) break;
          const int64_t e = g.reverse ? g.L - 1 - (qa + j) : qa + j;
          P::store(g, yo + e, io + e, g.exclusive ? (j == 0 ? pre : P::combine(pre, a[j - 1])) : P::combine(pre, a[j]));
        }
      }
      carry = P::combine(carry, P::shfl_idx(inc, 31));
    }
    if (pass == 1 && lane == 0) static_cast<Acc*>(g.partials)[line * g.segments + seg] = carry;
  }
}

template <class P>
__global__ void __launch_bounds__(256) scan_col_kernel(const ScanGeom g, int pass) {
  using T = typename P::T;
  using C = typename P::C;
  using Acc = typename P::Acc;
  const int64_t units = g.lines * g.segments;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x; t < units; t += static_cast<int64_t>(gridDim.x) * 256) {
    const int64_t seg = t / g.lines, line = t % g.lines;  // adjacent threads: adjacent lines
    const T* x = static_cast<const T*>(g.x) + line_offset(g, g.oxs, line);
    const int64_t yo = line_offset(g, g.oys, line), io = g.indices ? line_offset(g, g.ois, line) : 0;
    const int64_t q0 = seg * g.seg_len, q1 = min(g.L, q0 + g.seg_len);
    Acc acc = pass == 3 ? static_cast<const Acc*>(g.partials)[line * g.segments + seg] : P::identity();
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t e = g.reverse ? g.L - 1 - q : q;
      const Acc a = P::combine(acc, P::map(to_c<C>(x[e * g.xs]), e));
      if (pass != 1) P::store(g, yo + e * g.ys, io + e * g.is, g.exclusive ? acc : a);
      acc = a;
    }
    if (pass == 1) static_cast<Acc*>(g.partials)[line * g.segments + seg] = acc;
  }
}

// pass 2: a warp per line turns its segment totals into exclusive prefixes, in a fixed order
// (lane runs in order, a shuffle scan over the lanes, the runs again in order).
template <class P>
__global__ void __launch_bounds__(256) scan_prefix_kernel(const ScanGeom g) {
  using Acc = typename P::Acc;
  const int lane = threadIdx.x & 31;
  const int64_t per = (g.segments + 31) / 32;
  for (int64_t line = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) / 32; line < g.lines;
       line += static_cast<int64_t>(gridDim.x) * 8) {
    Acc* p = static_cast<Acc*>(g.partials) + line * g.segments;
    const int64_t s0 = min(g.segments, lane * per), s1 = min(g.segments, s0 + per);
    Acc tot = P::identity();
    for (int64_t s = s0; s < s1; ++s) tot = P::combine(tot, p[s]);
    Acc inc = tot;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const Acc o = P::shfl_up(inc, d);
      if (lane >= d) inc = P::combine(o, inc);
    }
    Acc run = P::shfl_up(inc, 1);
    if (lane == 0) run = P::identity();
    for (int64_t s = s0; s < s1; ++s) {
      const Acc t = p[s];
      p[s] = run;
      run = P::combine(run, t);
    }
  }
}

inline unsigned grid_for(int64_t threads) {
  const int64_t blocks = (threads + 255) / 256;
  return static_cast<unsigned>(blocks < (int64_t{1} << 24) ? (blocks > 0 ? blocks : 1) : (int64_t{1} << 24));
}

template <class P>
cudaError_t scan_launch(const ScanGeom& g, cudaStream_t stream) {
  if (g.lines == 0 || g.L == 0) return cudaSuccess;
  const int64_t units = g.lines * g.segments;
  auto pass = [&](int p) {
    return g.row_mode ? launch_kernel(scan_row_kernel<P>, dim3(grid_for(units * 32)), dim3(256), 0, stream, g, p)
                      : launch_kernel(scan_col_kernel<P>, dim3(grid_for(units)), dim3(256), 0, stream, g, p);
  };
  if (g.segments == 1) return pass(0);
  cudaError_t e = pass(1);
  if (e == cudaSuccess) e = launch_kernel(scan_prefix_kernel<P>, dim3(grid_for(g.lines * 32)), dim3(256), 0, stream, g);
  if (e == cudaSuccess) e = pass(3);
  return e;
}

template <class T, bool F64, int K>
ScanLaunchFn scan_pick() {
  using C = std::conditional_t<std::is_integral_v<T>, int64_t, std::conditional_t<F64 || std::is_same_v<T, double>, double, float>>;
  return &scan_launch<ScanOp<T, C, K>>;
}

}  // namespace baracuda::scan
