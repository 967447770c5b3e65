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
#include "ops/reduce/reduce_engine.cuh"
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
  // the row kernel's blocks per SM (its register cap): 4 for 4-byte accumulators, 2 otherwise
  // (no spills)
  static constexpr int kRowBlocks = sizeof(Acc) <= 4 ? 4 : 2;

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
  // a at y[yo] (as O) and, for cummax / cummin, its index at indices[io] (either may be null)
  template <class O>
  __device__ static void store(O* y, int64_t* indices, int64_t yo, int64_t io, Acc a) {
    if constexpr (kArg) {
      if (y) y[yo] = from_c<O>(a.v, false);
      if (indices) indices[io] = a.i;
    } else {
      y[yo] = from_c<O>(a, false);
    }
  }
};

// Calls f.template operator()<O>() for y's storage type (the scans' result types), once around a
// whole loop of stores.
template <class F>
__device__ __forceinline__ void with_out_type(uint8_t dt, F&& f) {
  switch (static_cast<DType>(dt)) {
    case DType::f32: f.template operator()<float>(); return;
    case DType::f16: f.template operator()<__half>(); return;
    case DType::bf16: f.template operator()<__nv_bfloat16>(); return;
    case DType::f64: f.template operator()<double>(); return;
    case DType::i8: f.template operator()<int8_t>(); return;
    case DType::u8: f.template operator()<uint8_t>(); return;
    case DType::i16: f.template operator()<int16_t>(); return;
    case DType::i32: f.template operator()<int32_t>(); return;
    case DType::i64: f.template operator()<int64_t>(); return;
    case DType::boolean: f.template operator()<bool>(); return;
    default: return;
  }
}

// A line's offset in an operand: the reductions' kept-index decomposition over the other axes.
__device__ __forceinline__ int64_t line_offset(const ScanGeom& g, const int64_t* st, int64_t line) {
  if (g.ko == 1) return line * st[0];  // one other axis: no division
  return red::kept_offset_of(g.osize, st, g.ko, line);
}

// A warp's staging area: kChunk values with one pad slot per lane's kItems (lane-major writes
// and position-major reads both without bank conflicts).
inline constexpr int kStage = kChunk + kChunk / kItems;
__device__ __forceinline__ int stage_at(int p) { return p + p / kItems; }

// pass 0: the whole line (one segment); 1: segment totals into partials; 3: each segment from
// its prefix (partials after scan_prefix_kernel). A chunk is loaded position-major (lane l reads
// positions l, l + 32, ..: coalesced in either direction) into shared memory, scanned
// lane-major (lane l owns positions 8l .. 8l + 7), and stored position-major again. A warp's
// chunks (of its segments, in grid-stride order) are software-pipelined: the next chunk's loads
// are issued before this one is scanned.
template <class P>
__global__ void __launch_bounds__(256, P::kRowBlocks) scan_row_kernel(const ScanGeom g, int pass) {
  using T = typename P::T;
  using C = typename P::C;
  using Acc = typename P::Acc;
  __shared__ Acc stage_all[8][kStage];
  const int lane = threadIdx.x & 31;
  Acc* stage = stage_all[threadIdx.x >> 5];
  C* stage_c = reinterpret_cast<C*>(stage);
  const int64_t units = g.lines * g.segments, stride = static_cast<int64_t>(gridDim.x) * 8;
  int64_t w = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) / 32;
  if (w >= units) return;
  struct Unit {
    const T* x;
    int64_t yo, io, q0, q1, slot;
  };
  auto setup = [&](int64_t u) {
    const int64_t line = g.segments == 1 ? u : u / g.segments, seg = u - line * g.segments;
    Unit r;
    r.x = static_cast<const T*>(g.x) + line_offset(g, g.oxs, line);
    r.yo = line_offset(g, g.oys, line);
    r.io = g.indices ? line_offset(g, g.ois, line) : 0;
    r.q0 = seg * g.seg_len;
    r.q1 = min(g.L, r.q0 + g.seg_len);
    r.slot = line * g.segments + seg;
    return r;
  };
  auto load = [&](const Unit& u, int64_t base, C (&ld)[kItems]) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int64_t q = base + 32 * k + lane;
      ld[k] = q < u.q1 ? to_c<C>(u.x[g.reverse ? g.L - 1 - q : q]) : C(0);
    }
  };
  Unit cur = setup(w);
  int64_t base = cur.q0;
  C ld[kItems];
  load(cur, base, ld);
  Acc carry = pass == 3 ? static_cast<const Acc*>(g.partials)[cur.slot] : P::identity();
  for (;;) {
    // the next job: this segment's next chunk, or the next segment's first
    const bool done = base + kChunk >= cur.q1;
    const int64_t nw = done ? w + stride : w;
    const bool more = nw < units;
    Unit nxt = cur;
    int64_t nbase = base + kChunk;
    if (done && more) nxt = setup(nw), nbase = nxt.q0;
    C nld[kItems];
    if (more) load(nxt, nbase, nld);
#pragma unroll
    for (int k = 0; k < kItems; ++k) stage_c[stage_at(32 * k + lane)] = ld[k];
    __syncwarp();
    const int64_t qa = base + lane * kItems;
    const int64_t left = cur.q1 - qa;
    const int n = left <= 0 ? 0 : left >= kItems ? kItems : static_cast<int>(left);
    Acc a[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const C v = stage_c[stage_at(lane * kItems + j)];
      const Acc m = P::map(v, g.reverse ? g.L - 1 - (qa + j) : qa + j);
      a[j] = j == 0 ? (n > 0 ? m : P::identity()) : (j < n ? P::combine(a[j - 1], m) : a[j - 1]);
    }
    Acc inc = a[kItems - 1];
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const Acc o = P::shfl_up(inc, d);
      if (lane >= d) inc = P::combine(o, inc);
    }
    Acc ex = P::shfl_up(inc, 1);
    if (lane == 0) ex = P::identity();
    const Acc pre = P::combine(carry, ex);
    carry = P::combine(carry, P::shfl_idx(inc, 31));
    __syncwarp();  // every lane has read its positions
    if (pass != 1) {
#pragma unroll
      for (int j = 0; j < kItems; ++j)
        stage[stage_at(lane * kItems + j)] = g.exclusive ? (j == 0 ? pre : P::combine(pre, a[j - 1])) : P::combine(pre, a[j]);
      __syncwarp();
      with_out_type(g.y_dtype, [&]<class O>() {
        O* y = static_cast<O*>(g.y) + cur.yo;
        int64_t* ix = g.indices ? static_cast<int64_t*>(g.indices) + cur.io : nullptr;
        const int64_t q = base + lane;  // this lane's positions: q + 32 k
        const int64_t e = g.reverse ? g.L - 1 - q : q, de = g.reverse ? -32 : 32;
#pragma unroll
        for (int k = 0; k < kItems; ++k)
          if (q + 32 * k < cur.q1) P::store(y, ix, e + de * k, e + de * k, stage[stage_at(32 * k + lane)]);
      });
      __syncwarp();
    }
    if (done) {
      if (pass == 1 && lane == 0) static_cast<Acc*>(g.partials)[cur.slot] = carry;
      if (more) carry = pass == 3 ? static_cast<const Acc*>(g.partials)[nxt.slot] : P::identity();
    }
    if (!more) break;
    w = nw;
    cur = nxt;
    base = nbase;
#pragma unroll
    for (int k = 0; k < kItems; ++k) ld[k] = nld[k];
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
    auto el = [&](int64_t q) { return g.reverse ? g.L - 1 - q : q; };
    with_out_type(g.y_dtype, [&]<class O>() {
      O* y = pass == 1 ? nullptr : static_cast<O*>(g.y);
      int64_t* ix = pass == 1 ? nullptr : static_cast<int64_t*>(g.indices);
      auto fold = [&](C v, int64_t q) {
        const int64_t e = el(q);
        const Acc a = P::combine(acc, P::map(v, e));
        if (y || ix) P::store(y, ix, yo + e * g.ys, io + e * g.is, g.exclusive ? acc : a);
        acc = a;
      };
      int64_t q = q0;
      for (; q + 8 <= q1; q += 8) {  // eight loads in flight, folded in order
        C v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = to_c<C>(x[el(q + u) * g.xs]);
#pragma unroll
        for (int u = 0; u < 8; ++u) fold(v[u], q + u);
      }
      for (; q < q1; ++q) fold(to_c<C>(x[el(q) * g.xs]), q);
    });
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
    int64_t s = s0;
    for (; s + 16 <= s1; s += 16) {  // 16 loads in flight: a lane's run is serial
      Acc t[16];
#pragma unroll
      for (int u = 0; u < 16; ++u) t[u] = p[s + u];
#pragma unroll
      for (int u = 0; u < 16; ++u) tot = P::combine(tot, t[u]);
    }
    for (; s < s1; ++s) tot = P::combine(tot, p[s]);
    Acc inc = tot;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const Acc o = P::shfl_up(inc, d);
      if (lane >= d) inc = P::combine(o, inc);
    }
    Acc run = P::shfl_up(inc, 1);
    if (lane == 0) run = P::identity();
    for (s = s0; s + 16 <= s1; s += 16) {
      Acc t[16];
#pragma unroll
      for (int u = 0; u < 16; ++u) t[u] = p[s + u];
#pragma unroll
      for (int u = 0; u < 16; ++u) {
        p[s + u] = run;
        run = P::combine(run, t[u]);
      }
    }
    for (; s < s1; ++s) {
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
