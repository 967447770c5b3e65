// Device helpers shared by the causal conv1d kernels (included by conv1d_*_kernels.cu only).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/cp_async.cuh"
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/conv1d/conv1d_geometry.hpp"

namespace baracuda::detail::conv1d {

// Staging of a thread's own loads through shared memory with cp.async (no barrier: a thread
// reads back only what it copied). Rings of `groups` groups, each of `per_group` vectors per
// stream, sized to at most 40 KB per block; a vector below 4 bytes (cp.async's minimum) or a
// ring of fewer than 2 groups falls back to plain loads.
template <class V, int kPerGroup, int kStreams, int kMaxGroups>
struct StageRing {
  static constexpr int kFit = 40960 / (static_cast<int>(sizeof(V)) * kPerGroup * kStreams * kConvThreads);
  static constexpr int kGroups = kFit < kMaxGroups ? kFit : kMaxGroups;
  static constexpr bool kAsync = sizeof(V) >= 4 && kGroups >= 2;
  static constexpr int kSlots = kAsync ? kGroups * kPerGroup : 1;
  // issue(g) copies group g into slots (g mod kGroups)·kPerGroup + [0, kPerGroup) and commits.
  // start: the first kGroups − 1 groups; before consuming group g: issue g + kGroups − 1, wait
  // for g. Both are no-ops without cp.async.
  template <class F>
  __device__ static void start(F&& issue) {
    if constexpr (kAsync)
      for (int g = 0; g + 1 < kGroups; ++g) issue(g);
  }
  template <class F, class I>
  __device__ static void advance(F&& issue, I g) {
    if constexpr (kAsync) {
      issue(g + kGroups - 1);
      cp_async_wait<kGroups - 1>();
    }
  }
  template <class I>  // g >= 0
  __device__ static int slot(I g) { return static_cast<int>(static_cast<std::make_unsigned_t<I>>(g) % kGroups) * kPerGroup; }
  // Byte distance between slots of a [kSlots][kConvThreads] stage array: a thread's copy into
  // slot i goes to smem_u32(&stage[0][threadIdx.x]) + i·kSlotBytes.
  static constexpr unsigned kSlotBytes = sizeof(V) * kConvThreads;
};

// A staged vector (shared memory) into the accumulator type.
template <class T, int NE>
__device__ __forceinline__ void unpack(const Vec<T, NE>& w, acc_t<T> (&v)[NE]) {
  load_acc_vec<T, NE>(w.v, v);
}

// NE elements at base[i·stride ...]: one aligned vector when NE > 1 (stride 1), else a scalar.
template <class T, int NE>
__device__ __forceinline__ void load_vec(const T* base, int64_t i, int64_t stride, acc_t<T> (&v)[NE]) {
  if constexpr (NE == 1) v[0] = to_acc(base[i * stride]);
  else load_acc_vec<T, NE>(base + i, v);
}
template <class T, int NE>
__device__ __forceinline__ void store_vec(T* base, int64_t i, int64_t stride, const acc_t<T> (&v)[NE]) {
  if constexpr (NE == 1) base[i * stride] = from_acc<T>(v[0]);
  else store_acc_vec<T, NE>(base + i, v);
}

// σ(z): float64 exactly rounded library calls for f64 data; for f32 math one hardware exp2 and
// one reciprocal, flushing denormals (relative error ~1e-7·(1 + |z|), well inside f32
// tolerances; a denormal exp2 only arises for z > 87 where σ rounds to 1 anyway). IEEE expf +
// division cost ~4x the instructions and made the kernels instruction bound on 16-bit data
// (44 % of copy, see docs/perf); __expf / __fdividef still add a range test and two scalings
// per element for their denormal inputs.
__device__ __forceinline__ float ex2_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ float rcp_ftz(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
template <class A>
__device__ __forceinline__ A sigmoid(A z) {
  if constexpr (sizeof(A) == 8) return 1.0 / (1.0 + exp(-z));
  else return rcp_ftz(1.0f + ex2_ftz(z * -1.4426950408889634f));
}
// y = act(y) for SiLU (z·σ(z)) or the identity, over a vector: one test of `silu` per vector.
template <class A, int N>
__device__ __forceinline__ void act_vec(A (&y)[N], int silu) {
  if (silu)
#pragma unroll
    for (int e = 0; e < N; ++e) y[e] *= sigmoid(y[e]);
}
// act'(z) for SiLU: σ(z)·(1 + z·(1 − σ(z))).
template <class A>
__device__ __forceinline__ A silu_grad(A z) {
  const A s = sigmoid(z);
  return s * (A(1) + z * (A(1) - s));
}
// g = dy·act'(z) over a vector (g may alias dy): one test of `silu` per vector.
template <class A, int N>
__device__ __forceinline__ void act_grad_vec(const A (&z)[N], A (&g)[N], int silu) {
  if (silu)
#pragma unroll
    for (int e = 0; e < N; ++e) g[e] *= silu_grad(z[e]);
}

// Extended-row input xe at time t of row (b, c): x for t >= 0, the initial states for
// t in [−(W−1), 0), zero before.
template <class T>
__device__ __forceinline__ acc_t<T> x_at(const Conv1dParams& p, int64_t b, int64_t c, int64_t t) {
  using A = acc_t<T>;
  if (t >= 0) return to_acc(static_cast<const T*>(p.x)[b * p.xs[0] + c * p.xs[1] + t * p.xs[2]]);
  if (p.s0 == nullptr || t < -(p.W - 1)) return A(0);
  return to_acc(static_cast<const T*>(p.s0)[b * p.s0s[0] + c * p.s0s[1] + (p.W - 1 + t) * p.s0s[2]]);
}

// Taps and bias of NE consecutive channels from c0, every load issued before the first
// conversion: one test of the weight dtype (with_float_type) around them all. A test per
// element (load_as) put each load and its conversion in its own branch, so every load waited
// for the one before: KW·NE + NE L2 latencies in a row. Taps reversed so that tap j multiplies x[t − j]: wr[j][e] = w[c0 + e, W−1−j] for
// j < W, 0 beyond; bias[e] = bias[c0 + e] or 0.
// P: Conv1dParams or Conv1dUpdateParams (the same weight / bias fields).
template <class A, int KW, int NE, class P>
__device__ __forceinline__ void load_chan_taps(const P& p, int64_t c0, A (&wr)[KW][NE], A (&bias)[NE]) {
  with_float_type(p.wdt, [&]<class W>() {
    const W* w = static_cast<const W*>(p.w);
    const W* bs = static_cast<const W*>(p.bias);
    W rw[KW][NE], rb[NE];
#pragma unroll
    for (int e = 0; e < NE; ++e) {
#pragma unroll
      for (int j = 0; j < KW; ++j) rw[j][e] = w[(c0 + e) * p.ws[0] + (j < p.W ? p.W - 1 - j : 0) * p.ws[1]];
      rb[e] = bs != nullptr ? bs[(c0 + e) * p.bs] : W{};
    }
#pragma unroll
    for (int e = 0; e < NE; ++e) {
#pragma unroll
      for (int j = 0; j < KW; ++j) wr[j][e] = j < p.W ? static_cast<A>(to_acc(rw[j][e])) : A(0);
      bias[e] = bs != nullptr ? static_cast<A>(to_acc(rb[e])) : A(0);
    }
  });
}
// The same for one channel (time kernels): wr[j] = w[c, W−1−j].
template <class A, int KW, class P>
__device__ __forceinline__ void load_taps(const P& p, int64_t c, A (&wr)[KW], A& bias) {
  A w1[KW][1], b1[1];
  load_chan_taps<A, KW, 1>(p, c, w1, b1);
#pragma unroll
  for (int j = 0; j < KW; ++j) wr[j] = w1[j][0];
  bias = b1[0];
}

// ring[s][e] = x at step t0 + s of channel c0 + e for s in [1, KW) (the extended row: initial
// states before 0), 0 at or past L; ring[0] = 0. Where all of t0 .. t0 + KW − 1 are in [0, L)
// (every warp but a row's first), plain loads, all issued before the first conversion.
template <class T, int KW, int NE>
__device__ __forceinline__ void load_x_window(const Conv1dParams& p, int64_t b, int64_t c0, int64_t t0,
                                              acc_t<T> (&ring)[KW][NE]) {
  using A = acc_t<T>;
  if (t0 >= 0 && t0 + KW - 1 < p.L) {
    const T* x = static_cast<const T*>(p.x) + b * p.xs[0] + c0 * p.xs[1] + t0 * p.xs[2];
    T raw[KW][NE];
#pragma unroll
    for (int s = 1; s < KW; ++s)
#pragma unroll
      for (int e = 0; e < NE; ++e) raw[s][e] = x[e * p.xs[1] + s * p.xs[2]];
#pragma unroll
    for (int s = 0; s < KW; ++s)
#pragma unroll
      for (int e = 0; e < NE; ++e) ring[s][e] = s == 0 ? A(0) : to_acc(raw[s][e]);
  } else {
#pragma unroll
    for (int s = 0; s < KW; ++s)
#pragma unroll
      for (int e = 0; e < NE; ++e) ring[s][e] = s == 0 || t0 + s >= p.L ? A(0) : x_at<T>(p, b, c0 + e, t0 + s);
  }
}

// What a time-kernel warp owns: rows (b + i, c) for i < rows, steps [t_beg, t_end) of segment
// sg of each (rows > 1 only with whole-row tasks: sg = 0, t_beg = 0, t_end = L). False for a
// warp past the last task.
struct TimeTask {
  int64_t b, c, sg, t_beg, t_end;
  int rows;
};
__device__ __forceinline__ bool time_task(const Conv1dParams& p, TimeTask& k) {
  const int64_t task = int64_t{blockIdx.x} * (kConvThreads / 32) + (threadIdx.x >> 5);
  if (task >= p.tasks) return false;
  if (p.task_rows > 1) {
    k.c = task / p.row_groups;
    k.b = (task - k.c * p.row_groups) * p.task_rows;
    k.rows = static_cast<int>(min(p.task_rows, p.B - k.b));
    k.sg = 0;
    k.t_beg = 0;
    k.t_end = p.L;
    return true;
  }
  const int64_t row = task / p.segs;
  k.sg = task - row * p.segs;
  k.b = row / p.C;
  k.c = row - k.b * p.C;
  k.t_beg = k.sg * p.warp_steps;
  k.t_end = min(p.L, k.t_beg + p.warp_steps);
  k.rows = 1;
  return true;
}
// Time kernels: the inputs before a lane's vector of NE steps. h[j] (j in [1, KW)) = x at the
// vector's first step − j, which lane l − q holds (q = ceil(j / NE)): one shuffle per j from lane
// (l − q) mod 32. Lanes l < q receive lane 32 − q + l's value, which is what they need for the
// next vector; they keep it in carry[j] and use the one kept from the previous vector. keep =
// false leaves the carry as it was (a look-ahead vector that is read again next sub-chunk).
template <class A, int NE, int KW>
__device__ __forceinline__ void halo_before(const A (&xv)[NE], A (&carry)[KW], A (&h)[KW], int lane, bool keep) {
  h[0] = A(0);
#pragma unroll
  for (int j = 1; j < KW; ++j) {
    const int q = (j + NE - 1) / NE, e = q * NE - j;
    const A cur = __shfl_sync(0xffffffffu, xv[e], (lane - q) & 31);
    h[j] = lane >= q ? cur : carry[j];
    if (keep) carry[j] = cur;
  }
}
// The carry before a task's first vector: lanes l < q hold x at (t_beg + l·NE − j). Plain loads
// issued together where t_beg >= KW (every task but a row's first).
template <class T, int NE, int KW>
__device__ __forceinline__ void halo_carry_init(const Conv1dParams& p, int64_t b, int64_t c, int64_t t_beg, int lane,
                                                acc_t<T> (&carry)[KW]) {
  using A = acc_t<T>;
  carry[0] = A(0);
  if (t_beg >= KW) {
    const T* x = static_cast<const T*>(p.x) + b * p.xs[0] + c * p.xs[1];
    T raw[KW];
#pragma unroll
    for (int j = 1; j < KW; ++j) {
      const int q = (j + NE - 1) / NE;
      raw[j] = x[(t_beg + int64_t{lane < q ? lane : 0} * NE - j) * p.xs[2]];
    }
#pragma unroll
    for (int j = 1; j < KW; ++j) carry[j] = lane < (j + NE - 1) / NE ? to_acc(raw[j]) : A(0);
  } else {
#pragma unroll
    for (int j = 1; j < KW; ++j) {
      const int q = (j + NE - 1) / NE;
      carry[j] = lane < q ? x_at<T>(p, b, c, t_beg + int64_t{lane} * NE - j) : A(0);
    }
  }
}

// Bound for the 32-bit step indices relative to a warp's first step: row limits are clamped to
// ±this (a warp walks fewer than warp_steps + 8 steps; a time task looks one vector ahead).
inline constexpr int kConvRelClamp = 1 << 20;
__device__ __forceinline__ int rel_steps(int64_t v) {
  return static_cast<int>(v < -kConvRelClamp ? -kConvRelClamp : v > kConvRelClamp ? kConvRelClamp : v);
}

// What a chan-kernel lane owns: batch row b, channels [c0, c0 + NE), steps [t_beg, t_end) of
// block segment sg (warp w of the block takes the w-th warp_steps of it).
struct ChanTask {
  int64_t b, sg, c0, t_beg, t_end;
};
__device__ __forceinline__ ChanTask chan_task(const Conv1dParams& p, int ne) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  ChanTask k;
  const int64_t bt = blockIdx.x / p.cblocks, cb = blockIdx.x - bt * p.cblocks;
  k.b = bt / p.segs;
  k.sg = bt - k.b * p.segs;
  k.c0 = (cb * 32 + lane) * ne;
  k.t_beg = (k.sg * 4 + warp) * p.warp_steps;
  k.t_end = min(p.L, k.t_beg + p.warp_steps);
  return k;
}
// Row (b, c) of a [B, C, L]-indexed operand with (b, c, t) strides s.
template <class T, class P>
__device__ __forceinline__ T* row_ptr(P* base, const int64_t* s, int64_t b, int64_t c) {
  return static_cast<T*>(base) + b * s[0] + c * s[1];
}

// Gradient of the final states reaching extended position s (x index; s < 0 is an initial
// state): dfinal[s − L + W − 1] when that is in [0, W−1).
template <class T>
__device__ __forceinline__ acc_t<T> dfinal_at(const Conv1dParams& p, int64_t b, int64_t c, int64_t s) {
  const int64_t j = s - p.L + p.W - 1;
  if (p.dsfin == nullptr || j < 0 || j >= p.W - 1) return acc_t<T>(0);
  return to_acc(static_cast<const T*>(p.dsfin)[b * p.dsfins[0] + c * p.dsfins[1] + j * p.dsfins[2]]);
}

// Launch shape: the time kernels run 4 warp tasks per block, the chan kernels one block per task.
inline cudaError_t launch_conv(void (*kernel)(Conv1dParams), ConvKernel k, const Conv1dParams& p, cudaStream_t s) {
  const int64_t per_block = k == ConvKernel::kTime ? kConvThreads / 32 : 1;
  const int64_t blocks = (p.tasks + per_block - 1) / per_block;
  return launch_kernel(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kConvThreads), 0, s, p);
}

// The launcher table of one direction. Dir provides kBackward and the static launch templates
// time<T, NE, KW, kEx> / chan<T, NE, KW, kEx>; width 4 takes the exact kernels, 2-3 the KW = 4
// window, 5-8 the KW = 8 window; NE = the vector width, or 1 for scalar accesses.
template <class Dir, class T, int KW, bool kEx>
Conv1dLaunchFn pick_launcher(ConvKernel k, bool vec) {
  constexpr int es = sizeof(T);
  if (k == ConvKernel::kTime)
    return vec ? &Dir::template time<T, conv_time_ne(es), KW, kEx> : &Dir::template time<T, 1, KW, kEx>;
  return vec ? &Dir::template chan<T, conv_chan_ne(es, KW, Dir::kBackward), KW, kEx>
             : &Dir::template chan<T, 1, KW, kEx>;
}
template <class Dir>
Conv1dLaunchFn direction_launcher(DType t, ConvKernel k, bool vec, int width) {
  Conv1dLaunchFn fn = nullptr;
  dispatch_dtype<CudaTypes>(t, FloatDTypes{}, [&]<class T>() {
    fn = width == 4  ? pick_launcher<Dir, T, 4, true>(k, vec)
         : width < 4 ? pick_launcher<Dir, T, 4, false>(k, vec)
                     : pick_launcher<Dir, T, 8, false>(k, vec);
  });
  return fn;
}

}  // namespace baracuda::detail::conv1d
