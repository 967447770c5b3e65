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
#include "core/cp_async.cuh"
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
  // the tile kernel's: its tile staged in shared memory (at most 32 KB), registers for one chunk
  static constexpr int kTileBlocks = sizeof(Acc) <= 4 ? 5 : (sizeof(Acc) <= 8 ? 3 : 2);  // no spills

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
  __device__ static Acc shfl_down(Acc a, int d) {
    if constexpr (kArg) return {__shfl_down_sync(0xffffffffu, a.v, d), __shfl_down_sync(0xffffffffu, a.i, d)};
    else return __shfl_down_sync(0xffffffffu, a, d);
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

// Calls f.template operator()<O>() for y's storage type, once around a whole loop of stores.
// The result types a scan of storage T writes: any float type for a float T (a result dtype
// argument, and cumsum's backward scanning dy into x's dtype), T or i64 for an integer T.
template <class T, class F>
__device__ __forceinline__ void with_out_type(uint8_t dt, F&& f) {
  if constexpr (std::is_integral_v<T>) {
    if (static_cast<DType>(dt) == DType::i64) f.template operator()<int64_t>();
    else f.template operator()<T>();
  } else {
    switch (static_cast<DType>(dt)) {
      case DType::f32: f.template operator()<float>(); return;
      case DType::f16: f.template operator()<__half>(); return;
      case DType::bf16: f.template operator()<__nv_bfloat16>(); return;
      default: f.template operator()<double>(); return;
    }
  }
}

// A line's offset in an operand: the reductions' kept-index decomposition over the other axes.
__device__ __forceinline__ int64_t line_offset(const ScanGeom& g, const int64_t* st, int64_t line) {
  if (g.ko == 1) return line * st[0];  // one other axis: no division
  return red::kept_offset_of(g.osize, st, g.ko, line);
}

// ---------------------------------------------------------------- row mode
//
// A warp scans a chunk of kChunk positions: lane l holds the kItems consecutive positions
// base + l * kItems + j, read and written as aligned 16-byte vectors of the line (8 bytes for
// 1-byte types; g.vec_*) or, where the line is not aligned, one by one: the order of combination
// is the same either way. The lane's positions in order, one shuffle scan over the lanes, the
// carry. (Sub-chunks of one vector per lane, R = kItems / V shuffle scans per chunk, measured
// slower: 48 against 43 us for f32 [65536, 256], 165 against 117 us for cummax.) The functions
// below take V, the positions per lane run (kItems), and R = kItems / V.

// The bits of storage element e of words u (T of 1, 2, 4 or 8 bytes) as T.
template <class T>
__device__ __forceinline__ T elem_of_words(const uint32_t* u, int e) {
  if constexpr (sizeof(T) == 8) {
    const uint64_t b = (static_cast<uint64_t>(u[2 * e + 1]) << 32) | u[2 * e];
    if constexpr (std::is_same_v<T, double>) return __longlong_as_double(static_cast<long long>(b));
    else return static_cast<T>(b);
  } else if constexpr (sizeof(T) == 4) {
    if constexpr (std::is_same_v<T, float>) return __uint_as_float(u[e]);
    else return static_cast<T>(u[e]);
  } else if constexpr (sizeof(T) == 2) {
    const unsigned short h = static_cast<unsigned short>(u[e / 2] >> (16 * (e & 1)));
    if constexpr (std::is_same_v<T, __half>) return __ushort_as_half(h);
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __ushort_as_bfloat16(h);
    else return static_cast<T>(h);
  } else {
    const uint32_t b = (u[e / 4] >> (8 * (e & 3))) & 0xffu;
    if constexpr (std::is_same_v<T, bool>) return b != 0;
    else return static_cast<T>(static_cast<uint8_t>(b));
  }
}

// The bits of v (O of 1, 2 or 4 bytes; 8-byte O gives word h of it).
template <class O>
__device__ __forceinline__ uint32_t word_bits(O v, int h) {
  if constexpr (sizeof(O) == 8) {
    uint64_t b;
    if constexpr (std::is_same_v<O, double>) b = static_cast<uint64_t>(__double_as_longlong(v));
    else b = static_cast<uint64_t>(v);
    return static_cast<uint32_t>(h ? b >> 32 : b);
  } else if constexpr (std::is_same_v<O, float>) return __float_as_uint(v);
  else if constexpr (std::is_same_v<O, __half>) return __half_as_ushort(v);
  else if constexpr (std::is_same_v<O, __nv_bfloat16>) return __bfloat16_as_ushort(v);
  else if constexpr (std::is_same_v<O, bool>) return v ? 1u : 0u;
  else if constexpr (sizeof(O) == 4) return static_cast<uint32_t>(v);
  else if constexpr (sizeof(O) == 2) return static_cast<uint16_t>(v);
  else return static_cast<uint8_t>(v);
}

// N values of O at p (global, aligned to min(16, N·sizeof(O)) bytes; N·sizeof(O) of 8 or a
// multiple of 16) as packed words, stored as 8- or 16-byte vectors in PTX (nvcc splits a Vec
// assignment into narrow stores: store_global16's note).
template <class O, int N>
__device__ __forceinline__ void store_words(O* p, const O (&v)[N]) {
  constexpr int kBytes = static_cast<int>(sizeof(O)) * N;
  static_assert(kBytes == 8 || kBytes % 16 == 0, "8 bytes or whole 16-byte vectors");
  uint32_t w[kBytes / 4] = {};
#pragma unroll
  for (int e = 0; e < N; ++e) {
    if constexpr (sizeof(O) == 8) {
      w[2 * e] = word_bits(v[e], 0), w[2 * e + 1] = word_bits(v[e], 1);
    } else {
      constexpr int per = 4 / static_cast<int>(sizeof(O));
      w[e / per] |= word_bits(v[e], 0) << (8 * static_cast<int>(sizeof(O)) * (e % per));
    }
  }
  const size_t g = __cvta_generic_to_global(p);
  if constexpr (kBytes == 8) {
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(g), "r"(w[0]), "r"(w[1]) : "memory");
  } else {
#pragma unroll
    for (int q = 0; q < kBytes / 16; ++q)
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(g + 16 * q), "r"(w[4 * q]), "r"(w[4 * q + 1]), "r"(w[4 * q + 2]),
                   "r"(w[4 * q + 3])
                   : "memory");
  }
}

// Element index of scan position q.
__device__ __forceinline__ int64_t elem_at(const ScanGeom& g, int64_t q) { return g.reverse ? g.L - 1 - q : q; }

// N elements of T at p (global or shared memory; 16-byte aligned, or 8-byte for an 8-byte run)
// as C, in order or reversed. Read as whole words; both orders spelled out (a run-time index into
// the words or into v would put them in local memory).
template <class T, class C, int N>
__device__ __forceinline__ void run_to_c(const void* p, bool reverse, C* v) {
  constexpr int kBytes = N * static_cast<int>(sizeof(T));
  uint32_t u[kBytes / 4];
  if constexpr (kBytes % 16 == 0) {
#pragma unroll
    for (int h = 0; h < kBytes / 16; ++h) {
      const uint4 w = static_cast<const uint4*>(p)[h];
      u[4 * h] = w.x, u[4 * h + 1] = w.y, u[4 * h + 2] = w.z, u[4 * h + 3] = w.w;
    }
  } else {
    static_assert(kBytes == 8, "8 bytes or whole 16-byte vectors");
    const uint2 w = *static_cast<const uint2*>(p);
    u[0] = w.x, u[1] = w.y;
  }
  if (reverse) {
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = to_c<C>(elem_of_words<T>(u, N - 1 - j));
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = to_c<C>(elem_of_words<T>(u, j));
  }
}

// A chunk's values (positions past L: 0) from the line at x.
template <class T, class C, int V>
__device__ __forceinline__ void load_chunk(const ScanGeom& g, const T* x, int64_t base, int lane, C (&v)[kItems]) {
  constexpr int R = kItems / V;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t q0 = base + (r * 32 + lane) * V;
    if (g.vec_x && q0 + V <= g.L) {
      // the vectors holding positions q0 .. q0 + V - 1 (reversed: elements L - q0 - V .. L - 1 - q0)
      run_to_c<T, C, V>(x + (g.reverse ? g.L - q0 - V : q0), g.reverse, v + r * V);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) v[r * V + j] = q0 + j < g.L ? to_c<C>(x[elem_at(g, q0 + j)]) : C(0);
    }
  }
}

// Scans a chunk from carry (the combination of every earlier position), updating it; out: each
// position's result (exclusive: of the positions before it). Full: every position is < L.
template <class P, int V, bool Full>
__device__ __forceinline__ void scan_chunk(const ScanGeom& g, const typename P::C (&v)[kItems], int64_t base, int lane,
                                           typename P::Acc& carry, typename P::Acc (&out)[kItems]) {
  using Acc = typename P::Acc;
  constexpr int R = kItems / V;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t q0 = base + (r * 32 + lane) * V;
    Acc a[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const bool valid = Full || q0 + j < g.L;
      const Acc m = P::map(v[r * V + j], elem_at(g, q0 + j));
      a[j] = j == 0 ? (valid ? m : P::identity()) : (valid ? P::combine(a[j - 1], m) : a[j - 1]);
    }
    Acc inc = a[V - 1];
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const Acc o = P::shfl_up(inc, d);
      if (lane >= d) inc = P::combine(o, inc);
    }
    Acc ex = P::shfl_up(inc, 1);
    if (lane == 0) ex = P::identity();
    const Acc pre = P::combine(carry, ex);
    // inclusive results; exclusive ones are the same shifted by one position
#pragma unroll
    for (int j = 0; j < V; ++j) a[j] = P::combine(pre, a[j]);
#pragma unroll
    for (int j = 0; j < V; ++j) out[r * V + j] = g.exclusive ? (j == 0 ? pre : a[j - 1]) : a[j];
    carry = P::combine(carry, P::shfl_idx(inc, 31));
  }
}
template <class P, int V>
__device__ __forceinline__ void scan_chunk_any(const ScanGeom& g, const typename P::C (&v)[kItems], int64_t base, int lane,
                                               typename P::Acc& carry, typename P::Acc (&out)[kItems]) {
  if (base + kChunk <= g.L) scan_chunk<P, V, true>(g, v, base, lane, carry, out);
  else scan_chunk<P, V, false>(g, v, base, lane, carry, out);
}

// The combination of a warp's kW chunks (positions past L left out) at lane 0. Kinds whose
// combine is commutative fold each lane's values, then a lane tree; cummax / cummin (the later of
// a tie wins) combine sub-chunk by sub-chunk in position order. Either way a fixed order.
template <class P, int V, int kW>
__device__ __forceinline__ typename P::Acc warp_total(const ScanGeom& g, const typename P::C (&v)[kW][kItems], int64_t wbase, int lane) {
  using Acc = typename P::Acc;
  constexpr int R = kItems / V;
  auto tree = [&](Acc t) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const Acc o = P::shfl_down(t, d);
      if ((lane & (2 * d - 1)) == 0) t = P::combine(t, o);
    }
    return t;
  };
  if constexpr (!P::kArg) {
    auto fold = [&]<bool Full>() {
      Acc t = P::identity();
#pragma unroll
      for (int c = 0; c < kW; ++c)
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int j = 0; j < V; ++j)
            if (Full || wbase + c * kChunk + (r * 32 + lane) * V + j < g.L) t = P::combine(t, v[c][r * V + j]);
      return t;
    };
    return tree(wbase + kW * kChunk <= g.L ? fold.template operator()<true>() : fold.template operator()<false>());
  } else {
    Acc t = P::identity();
#pragma unroll
    for (int c = 0; c < kW; ++c)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        Acc u = P::identity();
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const int64_t q = wbase + c * kChunk + (r * 32 + lane) * V + j;
          if (q < g.L) u = P::combine(u, P::map(v[c][r * V + j], elem_at(g, q)));
        }
        t = P::combine(t, P::shfl_idx(tree(u), 0));
      }
    return t;
  }
}

// A chunk's results into the line's y (at y + yo) and indices (at ix + io).
template <class P, int V>
__device__ __forceinline__ void store_chunk(const ScanGeom& g, int64_t yo, int64_t io, int64_t base, int lane,
                                            const typename P::Acc (&out)[kItems]) {
  constexpr int R = kItems / V;
  with_out_type<typename P::T>(g.y_dtype, [&]<class O>() {
    O* y = static_cast<O*>(g.y) + yo;
    int64_t* ix = g.indices ? static_cast<int64_t*>(g.indices) + io : nullptr;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t q0 = base + (r * 32 + lane) * V;
      if (q0 + V <= g.L) {
        const int64_t e0 = g.reverse ? g.L - q0 - V : q0;  // the vector's first element
        // the vector's values in memory order (both orders spelled out: a run-time index into
        // out would put it in local memory)
        typename P::Acc m[V];
        if (g.reverse) {
#pragma unroll
          for (int j = 0; j < V; ++j) m[j] = out[r * V + V - 1 - j];
        } else {
#pragma unroll
          for (int j = 0; j < V; ++j) m[j] = out[r * V + j];
        }
        constexpr int kOB = static_cast<int>(sizeof(O)) * V;
        if (kOB == 8 || kOB % 16 == 0 ? g.vec_y : false) {
          O w[V];
#pragma unroll
          for (int j = 0; j < V; ++j) {
            if constexpr (P::kArg) w[j] = from_c<O>(m[j].v, false);
            else w[j] = from_c<O>(m[j], false);
          }
          if constexpr (kOB == 8 || kOB % 16 == 0) {
            if (!P::kArg || y) store_words<O, V>(y + e0, w);
          }
        } else if (!P::kArg || y) {
#pragma unroll
          for (int j = 0; j < V; ++j) P::store(y, nullptr, e0 + j, 0, m[j]);
        }
        if constexpr (P::kArg) {
          if (ix) {
            int64_t w[V];
#pragma unroll
            for (int j = 0; j < V; ++j) w[j] = m[j].i;
            if (g.vec_i) store_words<int64_t, V>(ix + e0, w);
            else
#pragma unroll
              for (int j = 0; j < V; ++j) ix[e0 + j] = w[j];
          }
        }
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j)
          if (q0 + j < g.L) P::store(y, ix, elem_at(g, q0 + j), elem_at(g, q0 + j), out[r * V + j]);
      }
    }
  });
}

// Whole lines (segments == 1): a warp per line, chunk after chunk; a warp's chunks (of its
// lines, in grid-stride order) are software-pipelined: the next chunk's loads are issued before
// this one is scanned.
template <class P>
__global__ void __launch_bounds__(256, P::kRowBlocks) scan_row_kernel(const ScanGeom g) {
  using T = typename P::T;
  using C = typename P::C;
  using Acc = typename P::Acc;
  constexpr int V = kItems;
  const int lane = threadIdx.x & 31;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * 8;
  int64_t w = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) / 32;
  if (w >= g.lines) return;
  struct Line {
    const T* x;
    int64_t yo, io;
  };
  auto setup = [&](int64_t line) {
    Line r;
    r.x = static_cast<const T*>(g.x) + line_offset(g, g.oxs, line);
    r.yo = line_offset(g, g.oys, line);
    r.io = g.indices ? line_offset(g, g.ois, line) : 0;
    return r;
  };
  Line cur = setup(w);
  int64_t base = 0;
  C ld[kItems];
  load_chunk<T, C, V>(g, cur.x, base, lane, ld);
  Acc carry = P::identity();
  for (;;) {
    // the next job: this line's next chunk, or the next line's first
    const bool done = base + kChunk >= g.L;
    const int64_t nw = done ? w + stride : w;
    const bool more = nw < g.lines;
    Line nxt = cur;
    int64_t nbase = base + kChunk;
    if (done && more) nxt = setup(nw), nbase = 0;
    C nld[kItems];
    if (more) load_chunk<T, C, V>(g, nxt.x, nbase, lane, nld);
    Acc out[kItems];
    scan_chunk_any<P, V>(g, ld, base, lane, carry, out);
    store_chunk<P, V>(g, cur.yo, cur.io, base, lane, out);
    if (done) carry = P::identity();
    if (!more) break;
    w = nw;
    cur = nxt;
    base = nbase;
#pragma unroll
    for (int k = 0; k < kItems; ++k) ld[k] = nld[k];
  }
}

template <class Acc>
__host__ __device__ constexpr int kTileChunks() {
  return tile_chunks(static_cast<int>(sizeof(Acc)));
}

// Flag words: ld.relaxed / st.release at GPU scope; a tile total read from L2 (after the fence
// that follows the flags).
__device__ __forceinline__ uint32_t load_relaxed(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(p)) : "memory");
  return v;
}
__device__ __forceinline__ void store_release(uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(v) : "memory");
}
template <class A>
__device__ __forceinline__ A load_cg(const A* p) {
  if constexpr (sizeof(A) == 4) {
    const uint32_t b = __ldcg(reinterpret_cast<const unsigned int*>(p));
    A a;
    memcpy(&a, &b, 4);
    return a;
  } else if constexpr (sizeof(A) == 8) {
    const unsigned long long b = __ldcg(reinterpret_cast<const unsigned long long*>(p));
    A a;
    memcpy(&a, &b, 8);
    return a;
  } else {
    static_assert(sizeof(A) == 16, "4-, 8- or 16-byte totals");
    const uint4 b = __ldcg(reinterpret_cast<const uint4*>(p));
    A a;
    memcpy(&a, &b, 16);
    return a;
  }
}

// The combination of the n published totals at slots first .. first + n - 1, in order, at lane 0
// of the calling warp: each lane polls its run's flags (relaxed, all at once) until the warp's
// are all set, then, after one fence, folds its run in order; then an ordered lane tree. The
// order is a function of n alone.
template <class P>
__device__ __forceinline__ typename P::Acc sum_published(const uint32_t* flags, const typename P::Acc* aggs, int64_t first, int64_t n,
                                                         int lane) {
  using Acc = typename P::Acc;
  const int64_t per = (n + 31) / 32, s0 = min(n, lane * per), s1 = min(n, s0 + per);
  for (;;) {
    bool ready = true;
#pragma unroll 4
    for (int64_t s = s0; s < s1; ++s) ready &= load_relaxed(flags + first + s) != 0;
    if (__all_sync(0xffffffffu, ready)) break;
  }
  __threadfence();
  Acc run = P::identity();
#pragma unroll 4
  for (int64_t s = s0; s < s1; ++s) run = P::combine(run, load_cg(aggs + first + s));
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const Acc o = P::shfl_down(run, d);
    if ((lane & (2 * d - 1)) == 0) run = P::combine(run, o);
  }
  return run;
}

// Long lines (segments > 1), in one pass: a block per tile (segment) of seg_len = 8 warps x
// kTileChunks<Acc> chunks, tiles taken in order from a counter. A block stages its tile in
// shared memory (registers then hold one chunk at a time: 5 blocks per SM for 4-byte
// accumulators instead of 3 with the tile in registers: [8, 2^20] f32 37.8 -> 33.4 us, bf16
// 25.7 -> 19.4 us under graph replay),
// publishes the tile's total (its slot in tile_aggs, then its flag), sums the published totals
// before it in a fixed order (sum_published: a function of the tile's place alone) and scans its
// tile from that prefix. The totals before a tile: those of the line's complete groups of
// kTileGroup tiles (each published by the group's last tile, from its own in-group prefix) and
// those of its group's earlier tiles, so a tile reads at most kTileGroup + segments / kTileGroup
// totals. Every total waited for belongs to a tile taken earlier, which publishes it without
// waiting on a later one: no tile waits forever, and none waits on a chain of prefixes.
template <class P>
__global__ void __launch_bounds__(256, P::kTileBlocks) scan_tile_kernel(const ScanGeom g) {
  using T = typename P::T;
  using C = typename P::C;
  using Acc = typename P::Acc;
  constexpr int V = kItems, kW = kTileChunks<Acc>();
  constexpr int kSlot = kItems * static_cast<int>(sizeof(T));  // a lane's bytes of a chunk
  // the tile staged in shared memory, a slot per (warp, chunk, lane): the lane's kItems elements
  // in memory order (reversed lines: read back from the end). Each thread reads back only the
  // slots it filled, so the copies need no barrier.
  __shared__ __align__(16) unsigned char stage[8 * kW * 32 * kSlot];
  __shared__ Acc wtot[8];
  __shared__ Acc tpre;
  __shared__ unsigned long long tid_s;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned long long* counter = static_cast<unsigned long long*>(g.partials);
  uint32_t* flags = reinterpret_cast<uint32_t*>(counter + 2);
  Acc* aggs = static_cast<Acc*>(g.tile_aggs);
  const unsigned long long tiles = static_cast<unsigned long long>(g.lines * g.segments);
  auto slot = [&](int c) { return stage + ((warp * kW + c) * 32 + lane) * kSlot; };
  // chunk c's values from the thread's slot
  auto read_slot = [&](int c, C (&v)[kItems]) { run_to_c<T, C, kItems>(slot(c), g.reverse, v); };
  for (;;) {
    if (threadIdx.x == 0) tid_s = atomicAdd(counter, 1ull);
    __syncthreads();
    const int64_t t = static_cast<int64_t>(tid_s);
    if (static_cast<unsigned long long>(t) >= tiles) return;
    const int64_t line = t / g.segments, seg = t - line * g.segments;
    const T* x = static_cast<const T*>(g.x) + line_offset(g, g.oxs, line);
    const int64_t wbase = seg * g.seg_len + static_cast<int64_t>(warp) * kW * kChunk;
    // the whole tile in flight at once: cp.async of aligned vectors (a whole tile of an aligned
    // line), else element by element (0 past the line's ends)
    if (g.vec_x && (seg + 1) * g.seg_len <= g.L) {
      const unsigned sa = smem_u32(slot(0));
#pragma unroll
      for (int c = 0; c < kW; ++c) {
        const int64_t q0 = wbase + c * kChunk + lane * kItems;
        const T* src = x + (g.reverse ? g.L - q0 - kItems : q0);
        if constexpr (kSlot % 16 == 0) {
#pragma unroll
          for (int h = 0; h < kSlot / 16; ++h) cp_async<16>(sa + c * 32 * kSlot + 16 * h, reinterpret_cast<const unsigned char*>(src) + 16 * h);
        } else {
          cp_async<8>(sa + c * 32 * kSlot, src);
        }
      }
      cp_async_commit();
      cp_async_wait<0>();
    } else {
#pragma unroll
      for (int c = 0; c < kW; ++c) {
        const int64_t q0 = wbase + c * kChunk + lane * kItems;
        T* sp = reinterpret_cast<T*>(slot(c));
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
          const int64_t e = g.reverse ? g.L - q0 - kItems + j : q0 + j;  // memory order within the slot
          sp[j] = (g.reverse ? e >= 0 : e < g.L) ? x[e] : T{};
        }
      }
    }
    // the warp's total, chunk by chunk from the slots
    Acc wt;
    {
      C v[kW][kItems];
#pragma unroll
      for (int c = 0; c < kW; ++c) read_slot(c, v[c]);
      wt = warp_total<P, V, kW>(g, v, wbase, lane);
    }
    if (lane == 0) wtot[warp] = wt;
    __syncthreads();
    if (warp == 0) {
      Acc tot = wtot[0];
      if (lane == 0) {
#pragma unroll
        for (int k = 1; k < 8; ++k) tot = P::combine(tot, wtot[k]);
        aggs[t] = tot;
        store_release(flags + t, 1u);
      }
      // the prefix: the line's complete groups' totals, then this group's earlier tiles' totals
      const int64_t grp = seg / kTileGroup, first = grp * kTileGroup;
      const int64_t gslot = static_cast<int64_t>(tiles) + line * (g.segments / kTileGroup);
      const Acc in_group = sum_published<P>(flags, aggs, t - seg + first, seg - first, lane);
      const Acc before = sum_published<P>(flags, aggs, gslot, grp, lane);
      if (lane == 0) {
        tpre = P::combine(before, in_group);
        if (seg - first == kTileGroup - 1) {  // the group's last tile publishes the group's total
          aggs[gslot + grp] = P::combine(in_group, tot);
          store_release(flags + gslot + grp, 1u);
        }
      }
    }
    __syncthreads();
    Acc carry = tpre;
    for (int k = 0; k < warp; ++k) carry = P::combine(carry, wtot[k]);
    const int64_t yo = line_offset(g, g.oys, line), io = g.indices ? line_offset(g, g.ois, line) : 0;
    auto finish = [&]<bool Full>() {
#pragma unroll
      for (int c = 0; c < kW; ++c) {
        C v[kItems];
        read_slot(c, v);
        Acc out[kItems];
        scan_chunk<P, V, Full>(g, v, wbase + c * kChunk, lane, carry, out);
        store_chunk<P, V>(g, yo, io, wbase + c * kChunk, lane, out);
      }
    };
    if (wbase + kW * kChunk <= g.L) finish.template operator()<true>();
    else finish.template operator()<false>();
    __syncthreads();  // tid_s, wtot and tpre are rewritten by the next tile
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
    with_out_type<typename P::T>(g.y_dtype, [&]<class O>() {
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
  if (g.row_mode) {
    if (!g.tiled) return launch_kernel(scan_row_kernel<P>, dim3(grid_for(g.lines * 32)), dim3(256), 0, stream, g);
    if (g.seg_len != 8 * kTileChunks<typename P::Acc>() * kChunk) return cudaErrorInvalidValue;  // the host's tile length
    // the tile counter and flags start at zero every run
    BARACUDA_CUDA_TRY(cudaMemsetAsync(g.partials, 0, tile_flag_bytes(tile_slots(g.lines, g.segments)), stream));
    const int64_t tiles = g.lines * g.segments;
    const int64_t blocks = tiles < kTileGridCap ? tiles : kTileGridCap;
    return launch_kernel(scan_tile_kernel<P>, dim3(static_cast<unsigned>(blocks)), dim3(256), 0, stream, g);
  }
  const int64_t units = g.lines * g.segments;
  auto pass = [&](int p) { return launch_kernel(scan_col_kernel<P>, dim3(grid_for(units)), dim3(256), 0, stream, g, p); };
  if (g.segments == 1) return pass(0);
  BARACUDA_CUDA_TRY(pass(1));
  BARACUDA_CUDA_TRY(launch_kernel(scan_prefix_kernel<P>, dim3(grid_for(g.lines * 32)), dim3(256), 0, stream, g));
  return pass(3);
}

template <class T, bool F64, int K>
ScanLaunchFn scan_pick() {
  using C = std::conditional_t<std::is_integral_v<T>, int64_t, std::conditional_t<F64 || std::is_same_v<T, double>, double, float>>;
  return &scan_launch<ScanOp<T, C, K>>;
}

}  // namespace baracuda::scan
