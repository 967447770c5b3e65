// The elementwise engine's kernels (device code; included only by the ew_inst_<group>.cu units).
//
//   rows_kernel<A, T, TO, MI>   [rows, cols] vectorized along cols: 16-byte accesses (UNR
//                               vectors per thread, RowsShape); operand MI (if >= 0) is a bool mask.
//   flat_kernel<A, T, TO, MI>   one dense run (rows == 1, no literal or per-row operand): the
//                               rows kernel without its per-vector row and kind arithmetic.
//   strided_kernel<A, C>        any coalesced layout; each operand loaded from its own dtype.
// A is an adapter (Fwd/Bwd in ew_ops_common.hpp) with NI inputs and NO outputs computed in C.
// No op struct is included here: a unit includes its group's ew_ops_<group>.hpp (ew_inst_group.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <utility>

#include "baracuda/ops/elementwise_ops.hpp"
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/elementwise/ew_geometry.hpp"
#include "ops/elementwise/ew_ops_common.hpp"

namespace baracuda::ew {

inline constexpr int kThreads = 256;
// The flat kernel's blocks: 128 threads measured 1-5 % faster than 256 on compute-bound ops
// (tan, sin, hardswish bf16) and no slower on memory-bound ones (H200, 2026-11-23): a block's
// slot frees sooner when its warps' running times differ.
inline constexpr int kFlatThreads = 128;

template <class C> __device__ __forceinline__ C scalar_of(const EwScalars& s, int k);
template <> __device__ __forceinline__ float scalar_of<float>(const EwScalars& s, int k) { return s.f[k]; }
template <> __device__ __forceinline__ double scalar_of<double>(const EwScalars& s, int k) { return s.d[k]; }
template <> __device__ __forceinline__ int64_t scalar_of<int64_t>(const EwScalars& s, int k) { return s.i[k]; }

template <class C>
__device__ __forceinline__ P<C> load_params(const EwScalars& s) {
  P<C> p;
#pragma unroll
  for (int k = 0; k < 4; ++k) p.v[k] = scalar_of<C>(s, k);
  return p;
}

// The op on VEC elements: x[input][e] -> y[output][e]. kDense: every operand is a tensor (the
// flat kernel), so the adapter's apply_dense where it has one.
template <class A, int VEC, bool kDense = false, class C>
__device__ __forceinline__ void apply_vec(const C (&x)[A::NI][VEC], C (&y)[A::NO][VEC], const P<C>& p) {
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    C in[A::NI], out[A::NO];
#pragma unroll
    for (int i = 0; i < A::NI; ++i) in[i] = x[i][e];
    if constexpr (kDense && requires(const C* i, C* o, const P<C>& q) { A::apply_dense(i, o, q); }) A::apply_dense(in, out, p);
    else A::apply(in, out, p);
#pragma unroll
    for (int o = 0; o < A::NO; ++o) y[o][e] = out[o];
  }
}


// ---------------------------------------------------------------- rows path
template <class A, class T, class TO, int MI, int VEC, int UNR>
__global__ void __launch_bounds__(kThreads) rows_kernel(const EwRows g) {
  using C = compute_t<T>;
  constexpr int NI = A::NI, NO = A::NO;
  const P<C> p = load_params<C>(g.s);
  const uint32_t base = blockIdx.x * (kThreads * UNR) + threadIdx.x;
  // every load of the batch (as stored: load_raw), then the conversions
  RawVec<T, VEC> raw[UNR][NI];
  RawVec<bool, VEC> mask_raw[UNR];  // operand MI, when there is one
  uint32_t row[UNR], col[UNR];
#pragma unroll
  for (int u = 0; u < UNR; ++u) {
    const uint32_t v = base + u * kThreads;
    row[u] = 0;
    col[u] = 0xffffffffu;  // inactive
    if (v >= g.total) continue;
    const uint32_t r = g.vpr.div(v);
    const uint32_t c0 = (v - r * g.vecs_per_row) * VEC;
    row[u] = r;
    col[u] = c0;
    const bool full = c0 + VEC <= g.cols;
#pragma unroll
    for (int i = 0; i < NI; ++i) {
      if (g.in_kind[i] == kLiteral) continue;
      const int64_t roff = static_cast<int64_t>(r) * g.in_rs[i];
      // a per-row scalar: its one element, in lane 0 of the vector
      const bool one = g.in_kind[i] == kRowScalar;
      const uint32_t c = one ? 0u : c0;
      if (i == MI) mask_raw[u] = load_raw<VEC>(static_cast<const bool*>(g.in[i]) + roff + c, c, !one && full, one ? 1u : g.cols);
      else raw[u][i] = load_raw<VEC>(static_cast<const T*>(g.in[i]) + roff + c, c, !one && full, one ? 1u : g.cols);
    }
  }
#pragma unroll
  for (int u = 0; u < UNR; ++u) {
    if (col[u] == 0xffffffffu) continue;
    C x[NI][VEC];
#pragma unroll
    for (int i = 0; i < NI; ++i) {
      if (g.in_kind[i] == kVector) {
        if (i == MI) to_c_vec<C, VEC, bool>(mask_raw[u], x[i]);
        else to_c_vec<C, VEC, T>(raw[u][i], x[i]);
        continue;
      }
      C s = scalar_of<C>(g.s, kLiteralSlot + i);
      if (g.in_kind[i] == kRowScalar) {  // its element 0
        C one[VEC];
        if (i == MI) to_c_vec<C, VEC, bool>(mask_raw[u], one);
        else to_c_vec<C, VEC, T>(raw[u][i], one);
        s = one[0];
      }
#pragma unroll
      for (int e = 0; e < VEC; ++e) x[i][e] = s;
    }
    C y[NO][VEC];
    apply_vec<A, VEC>(x, y, p);
    const uint32_t c0 = col[u];
    const bool full = c0 + VEC <= g.cols;
    // output O in its storage type (TO, or what the adapter fixes: frexp's i32 exponent)
    auto store = [&]<int O>() {
      using TS = typename A::template out_t<O, TO>;
      if (!g.out_on[O]) return;
      TS* dst = static_cast<TS*>(g.out[O]) + static_cast<int64_t>(row[u]) * g.out_rs[O];
      store_vec<VEC>(dst + c0, c0, full, g.cols, y[O], g.sat_fp8 != 0);
    };
    [&]<int... O>(std::integer_sequence<int, O...>) { (store.template operator()<O>(), ...); }(std::make_integer_sequence<int, NO>{});
  }
}

// ---------------------------------------------------------------- flat path
// g.flat_rows rows (grid.y) of g.cols elements, every operand a vector along the row
// (g.in_kind all kVector). Each block covers kFlatThreads * UNR * VEC consecutive elements of
// one row; only a row's last block takes the guarded path. The rows kernel's per-vector row
// division, row offsets and operand-kind dispatch cost about 100 instructions per thread, which
// compute-bound ops paid as 10-20 % of their time.
template <class A, class T, class TO, int MI, int VEC, int UNR>
__global__ void __launch_bounds__(kFlatThreads) flat_kernel(const EwRows g) {
  using C = compute_t<T>;
  constexpr int NI = A::NI, NO = A::NO;
  constexpr uint32_t kStep = kFlatThreads * VEC;  // elements between a thread's vectors
  constexpr uint32_t kPerBlock = kStep * UNR;
  const P<C> p = load_params<C>(g.s);
  // Offsets in 32 bits (the host keeps every operand's offsets in a launch below 2^31): 64-bit
  // ones cost registers, and the occupancy of compute-bound ops with them. Each operand's address
  // is formed once; its UNR vectors lie kStep elements apart, constant offsets that the loads and
  // stores take as immediates (per-vector addresses cost compute-bound ops ~3 % of their time).
  const int32_t row = static_cast<int32_t>(blockIdx.y);
  const uint32_t c_first = blockIdx.x * kPerBlock + threadIdx.x * VEC;
  const bool whole = (blockIdx.x + 1u) * kPerBlock <= g.cols;
  // every load of the batch (as stored: load_raw), then the conversions
  RawVec<T, VEC> raw[UNR][NI];
  RawVec<bool, VEC> mask_raw[UNR];  // operand MI, when there is one
#pragma unroll
  for (int i = 0; i < NI; ++i) {
    const int32_t off = row * static_cast<int32_t>(g.in_rs[i]) + static_cast<int32_t>(c_first);
#pragma unroll
    for (int u = 0; u < UNR; ++u) {
      if (i == MI) mask_raw[u] = load_raw<VEC>(static_cast<const bool*>(g.in[i]) + off + u * kStep, c_first + u * kStep, whole, g.cols);
      else raw[u][i] = load_raw<VEC>(static_cast<const T*>(g.in[i]) + off + u * kStep, c_first + u * kStep, whole, g.cols);
    }
  }
#pragma unroll
  for (int u = 0; u < UNR; ++u) {
    C x[NI][VEC];
#pragma unroll
    for (int i = 0; i < NI; ++i) {
      if (i == MI) to_c_vec<C, VEC, bool>(mask_raw[u], x[i]);
      else to_c_vec<C, VEC, T>(raw[u][i], x[i]);
    }
    C y[NO][VEC];
    apply_vec<A, VEC, true>(x, y, p);
    // output O (always written when it is the only one: a plan launches no kernel otherwise)
    auto store = [&]<int O>() {
      using TS = typename A::template out_t<O, TO>;
      if (NO == 1 || g.out_on[O]) {
        const int32_t off = row * static_cast<int32_t>(g.out_rs[O]) + static_cast<int32_t>(c_first);
        store_vec<VEC>(static_cast<TS*>(g.out[O]) + off + u * kStep, c_first + u * kStep, whole, g.cols, y[O], g.sat_fp8 != 0);
      }
    };
    [&]<int... O>(std::integer_sequence<int, O...>) { (store.template operator()<O>(), ...); }(std::make_integer_sequence<int, NO>{});
  }
}

// Keyed by the adapter A: its op's FlatDepth (ew_ops_common.hpp) picks the flat kernel's depth and
// may narrow the vector. Vectors are 16 bytes of the widest operand, outputs included (frexp's
// i32 exponent beside a bf16 mantissa: 4 elements, not 8, so each warp store is one contiguous
// 512-byte run; 8 took 25 % longer, H200).
template <class A, class T, class TO>
struct RowsShape {
  static constexpr int NI = A::NI;
  static constexpr int kOutBytes = []<int... O>(std::integer_sequence<int, O...>) {
    int b = 0;
    ((b = b > static_cast<int>(sizeof(typename A::template out_t<O, TO>)) ? b : static_cast<int>(sizeof(typename A::template out_t<O, TO>))), ...);
    return b;
  }(std::make_integer_sequence<int, A::NO>{});
  static constexpr int kBytes = static_cast<int>(sizeof(T)) > kOutBytes ? static_cast<int>(sizeof(T)) : kOutBytes;
  static constexpr int kFull = 16 / kBytes > 0 ? 16 / kBytes : 1;
  static constexpr FlatDepth D = A::kDepth;
  static constexpr int kVecAsked = NI == 1 ? D.vec_one : D.vec_many;
  static constexpr int VEC = kVecAsked > 0 && kVecAsked < kFull ? kVecAsked : kFull;
  // vectors per thread: the flat kernel (the contiguous case) as the op's FlatDepth says; the
  // rows kernel (strided rows, literal and per-row operands) one, which halves its code (build
  // time) where it is not the hot path.
  static constexpr bool kNarrow = kBytes <= 2;
  static constexpr int FLAT_UNR = NI == 1 ? (kNarrow ? D.one16 : D.one) : (kNarrow ? D.many16 : D.many);
  static constexpr int ROWS_UNR = 1;
};

template <class A, class T, class TO, int MI>
int launch_rows(const EwRows& g, cudaStream_t stream) {
  using S = RowsShape<A, T, TO>;
  const uint32_t per_block = kThreads * S::ROWS_UNR;
  const uint32_t blocks = (g.total + per_block - 1) / per_block;
  if (blocks == 0) return 0;
  return static_cast<int>(launch_kernel(rows_kernel<A, T, TO, MI, S::VEC, S::ROWS_UNR>, dim3(blocks), dim3(kThreads), 0, stream, g));
}

template <class A, class T, class TO, int MI>
int launch_flat(const EwRows& g, cudaStream_t stream) {
  using S = RowsShape<A, T, TO>;
  const uint32_t per_block = kFlatThreads * S::FLAT_UNR * S::VEC;
  const uint32_t blocks = static_cast<uint32_t>((static_cast<uint64_t>(g.cols) + per_block - 1) / per_block);
  if (blocks == 0 || g.flat_rows == 0) return 0;
  return static_cast<int>(
      launch_kernel(flat_kernel<A, T, TO, MI, S::VEC, S::FLAT_UNR>, dim3(blocks, g.flat_rows), dim3(kFlatThreads), 0, stream, g));
}

// The rows and flat kernels of one (adapter, storage types, mask operand).
template <class A, class T, class TO, int MI>
void set_rows(EwKernels& k) {
  k.rows = &launch_rows<A, T, TO, MI>;
  k.flat = &launch_flat<A, T, TO, MI>;
  k.rows_vec = RowsShape<A, T, TO>::VEC;
  k.flat_block = kFlatThreads * RowsShape<A, T, TO>::FLAT_UNR * k.rows_vec;
}

// ---------------------------------------------------------------- broadcast backward
// One broadcast operand's gradient summed in the elementwise pass (EwBcast, ew_geometry.hpp).
// Thread t of block (bx, by) owns columns c0 = (bx·kBcastThreads + t)·VEC .. + VEC and walks
// rows by·R .. by·R + R - 1 (R = rows_per_block), UNR rows per step, each access addressed
// from the kernel parameters (row × row stride + column, 64-bit). Each step stores the other gradients as the flat
// kernel does; the reduced one is summed unrounded (rounded to the storage type once, by the
// finish kernel; PyTorch's autograd rounds each element first) into VEC column sums (row mode) or summed over the thread's VEC columns
// into a shared slot per (row, thread) (col mode), which the block then adds up per row in a
// fixed order: 4 slots per lane, then a shuffle tree. Partials, then bcast_finish_kernel: the
// result depends only on the shape (bitwise deterministic). Without it the full-size gradient
// went through the workspace and ReduceToShapePlan: two more full-size passes (54-59 % of copy
// on mul / prelu with a [n] or [m, 1] operand, H200).
template <class A, class T, int MI, int VEC, int UNR, int MINB, int RED = -1>
__global__ void __launch_bounds__(kBcastThreads, MINB) bcast_bwd_kernel(const EwBcast g) {
  using C = compute_t<T>;
  constexpr int NI = A::NI, NO = A::NO;
  // the reduced output: g.red, or RED when the launcher fixed it at compile time
  const int red = RED >= 0 ? RED : g.red;
  extern __shared__ __align__(16) unsigned char bcast_smem[];
  C* rsum = reinterpret_cast<C*>(bcast_smem);  // col mode: [kBcastColRows][kBcastThreads]
  const P<C> p = load_params<C>(g.s);
  const uint32_t c0 = (blockIdx.x * kBcastThreads + threadIdx.x) * VEC;
  const bool live = c0 < g.cols, whole = c0 + VEC <= g.cols;
  const uint32_t r_first = blockIdx.y * g.rows_per_block;
  const uint32_t nr = min(g.rows - r_first, g.rows_per_block);
  C acc[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) acc[e] = C(0);
  for (uint32_t r = 0; r < nr; r += UNR) {
    RawVec<T, VEC> raw[UNR][NI];
    RawVec<bool, VEC> mask_raw[UNR];
#pragma unroll
    for (int u = 0; u < UNR; ++u) {
      if (r + u >= nr || !live) continue;
#pragma unroll
      for (int i = 0; i < NI; ++i) {
        if (g.in_kind[i] == kLiteral) continue;
        const bool one = g.in_kind[i] == kRowScalar;
        const int64_t es = i == MI ? 1 : static_cast<int64_t>(sizeof(T));
        const char* a = static_cast<const char*>(g.in[i]) + (static_cast<int64_t>(r_first + r + u) * g.in_rs[i] + (g.in_kind[i] == kVector ? c0 : 0)) * es;
        if (i == MI) mask_raw[u] = load_raw<VEC>(reinterpret_cast<const bool*>(a), 0u, !one && whole, one ? 1u : g.cols - c0);
        else raw[u][i] = load_raw<VEC>(reinterpret_cast<const T*>(a), 0u, !one && whole, one ? 1u : g.cols - c0);
      }
    }
#pragma unroll
    for (int u = 0; u < UNR; ++u) {
      if (r + u >= nr) continue;
      C x[NI][VEC];
#pragma unroll
      for (int i = 0; i < NI; ++i) {
        C v[VEC];
        if (g.in_kind[i] == kLiteral) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) v[e] = scalar_of<C>(g.s, kLiteralSlot + i);
        } else if (!live) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) v[e] = C(0);
        } else if (i == MI) {
          to_c_vec<C, VEC, bool>(mask_raw[u], v);
        } else {
          to_c_vec<C, VEC, T>(raw[u][i], v);
        }
        if (g.in_kind[i] == kRowScalar) {
#pragma unroll
          for (int e = 1; e < VEC; ++e) v[e] = v[0];
        }
#pragma unroll
        for (int e = 0; e < VEC; ++e) x[i][e] = v[e];
      }
      C y[NO][VEC];
      apply_vec<A, VEC>(x, y, p);
#pragma unroll
      for (int o = 0; o < NO; ++o) {
        if (!g.out_on[o]) continue;
        if (o != red) {
          if (live) store_vec<VEC>(static_cast<T*>(g.out[o]) + static_cast<int64_t>(r_first + r + u) * g.out_rs[o] + c0, 0u, whole, g.cols - c0, y[o], false);
          continue;
        }
        C v[VEC];
#pragma unroll
        for (int e = 0; e < VEC; ++e) v[e] = live && c0 + e < g.cols ? y[o][e] : C(0);
        if (g.col_mode) {
          C sum = v[0];
#pragma unroll
          for (int e = 1; e < VEC; ++e) sum += v[e];
          rsum[(r + u) * kBcastThreads + threadIdx.x] = sum;
        } else {
#pragma unroll
          for (int e = 0; e < VEC; ++e) acc[e] += v[e];
        }
      }
    }
  }
  C* part = static_cast<C*>(g.part);
  if (!g.col_mode) {
    if (live) {
      C* dst = part + static_cast<size_t>(blockIdx.y) * g.cols + c0;
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        if (c0 + e < g.cols) dst[e] = acc[e];
    }
    return;
  }
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  for (uint32_t rl = warp; rl < nr; rl += kBcastThreads / 32) {
    const C* row = rsum + rl * kBcastThreads;
    C sum = row[lane];
#pragma unroll
    for (int j = 1; j < kBcastThreads / 32; ++j) sum += row[lane + 32 * j];
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
    if (lane == 0) part[static_cast<size_t>(r_first + rl) * gridDim.x + blockIdx.x] = sum;
  }
}


// grad[l] = the sum of n_part partials part[l·ls + k·ks], k = 0, 1, ... (a fixed order: 8
// interleaved strands of k, then the strands in order), rounded to the gradient's type.
template <class TO, class C>
__global__ void __launch_bounds__(256) bcast_finish_kernel(const C* part, uint32_t n_out, uint32_t n_part, uint32_t ls, uint32_t ks,
                                                           TO* grad) {
  __shared__ C strand[8][32];
  const uint32_t tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const uint32_t l = blockIdx.x * 32 + tx;
  C sum = C(0);
  if (l < n_out)
    for (uint32_t k = ty; k < n_part; k += 8) sum += part[static_cast<size_t>(l) * ls + static_cast<size_t>(k) * ks];
  strand[ty][tx] = sum;
  __syncthreads();
  if (ty != 0 || l >= n_out) return;
  C total = strand[0][tx];
#pragma unroll
  for (int j = 1; j < 8; ++j) total += strand[j][tx];
  grad[l] = from_c<TO>(total, false);
}

// Per storage type (H200, mul / where backward on [16384, 16384] with a [n] or [m, 1] operand,
// a bare benchmark of the variants): 2-byte types 8 elements per thread, one row per step, at
// most 64 registers (MINB 8: at 85 registers 59 % of copy, at 56 registers 77-78 %); with a bool
// mask (where) 8 elements and two rows per step, at most 128 registers (below); 4-byte types 4
// elements and two rows per step (98-100 %; one row per step 95-96 %). Per-operand pointers stepped per row held ~20
// registers more than addressing each access from the kernel parameters.
//
// Masked ops (where, masked_fill; session 26) take the reduced output as a template parameter
// (RED, one kernel per differentiable operand): with it read from g.red, nvcc merged the
// per-output branches into an index of y by g.red and put y on the stack at 8 elements per
// thread (96-byte frame, 2.2x the time), which had held them to 4 elements. Bare kernel, where's
// backward, bf16 [16384, 16384], other [n] (H200): run-time red, 4 x 2 rows: 407 µs; RED, 4 x 2:
// 386; RED, 8 elements, one row per step at most 64 registers: 357, two rows per step at most
// 128 registers: 343 (kept).
template <class T, int MI>
struct BcastShape {
  static constexpr bool kTwoByte = sizeof(T) == 2, kMask = MI >= 0;
  static constexpr int VEC = kTwoByte ? 8 : 4;
  static constexpr int UNR = kTwoByte && !kMask ? 1 : 2;
  static constexpr int MINB = kTwoByte ? (kMask ? 4 : 8) : 1;
};

// G: the op's gradient mask (which outputs can be the reduced one).
template <class A, class T, int MI, unsigned G>
int launch_bcast(const EwBcast& g, cudaStream_t stream) {
  using S = BcastShape<T, MI>;
  using C = compute_t<T>;
  if (g.grid_x == 0 || g.grid_y == 0) return 0;
  const size_t smem = g.col_mode ? sizeof(C) * kBcastColRows * kBcastThreads : 0;
  auto main = [&]<int RED>() {
    return launch_kernel(bcast_bwd_kernel<A, T, MI, S::VEC, S::UNR, S::MINB, RED>, dim3(g.grid_x, g.grid_y), dim3(kBcastThreads), smem, stream, g);
  };
  cudaError_t e = cudaErrorInvalidValue;
  if constexpr (MI >= 0) {
    [&]<int... O>(std::integer_sequence<int, O...>) {
      ([&] {
        if constexpr ((G >> O & 1u) != 0)
          if (g.red == O) e = main.template operator()<O>();
      }(), ...);
    }(std::make_integer_sequence<int, A::NO>{});
  } else {
    e = main.template operator()<-1>();
  }
  if (e != cudaSuccess) return static_cast<int>(e);
  const uint32_t n_out = g.col_mode ? g.rows : g.cols, n_part = g.col_mode ? g.grid_x : g.grid_y;
  const uint32_t ls = g.col_mode ? g.grid_x : 1u, ks = g.col_mode ? 1u : g.cols;
  return static_cast<int>(launch_kernel(bcast_finish_kernel<T, C>, dim3((n_out + 31) / 32), dim3(256), 0, stream,
                                        static_cast<const C*>(g.part), n_out, n_part, ls, ks, static_cast<T*>(g.grad)));
}

// A unit of compute-heavy ops sets this to 0 before including this file (ew_inst_special.cu):
// their broadcast backward keeps the two-pass form, which spares that unit (the build's longest)
// one more kernel per op and dtype.
#ifndef BARACUDA_EW_BCAST
#define BARACUDA_EW_BCAST 1
#endif
template <class A, class T, int MI, int Ar, unsigned G>
void set_bcast(EwKernels& k) {
  if constexpr (BARACUDA_EW_BCAST && Ar >= 2 && (std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)) {
    k.bcast = &launch_bcast<A, T, MI, G>;
    k.bcast_vec = BcastShape<T, MI>::VEC;
  }
}

// ---------------------------------------------------------------- strided path
template <class A, class C, int UNR>
__global__ void __launch_bounds__(kThreads) strided_kernel(const EwStrided g) {
  constexpr int NI = A::NI, NO = A::NO;
  const P<C> p = load_params<C>(g.s);
  const uint32_t base = blockIdx.x * (kThreads * UNR) + threadIdx.x;
  C x[UNR][NI];
  int32_t ooff[UNR][NO];
  bool live[UNR];
#pragma unroll
  for (int u = 0; u < UNR; ++u) {
    const uint32_t idx = base + u * kThreads;
    live[u] = idx < g.numel;
    if (!live[u]) continue;
    int32_t ioff[NI];
#pragma unroll
    for (int i = 0; i < NI; ++i) ioff[i] = 0;
#pragma unroll
    for (int o = 0; o < NO; ++o) ooff[u][o] = 0;
    uint32_t rem = idx;
#pragma unroll
    for (int d = 0; d < kMaxRank; ++d) {
      if (d == g.rank) break;
      const uint32_t q = g.div[d].div(rem);
      const int32_t c = static_cast<int32_t>(rem - q * g.size[d]);
      rem = q;
#pragma unroll
      for (int i = 0; i < NI; ++i) ioff[i] += c * g.in_st[i][d];
#pragma unroll
      for (int o = 0; o < NO; ++o) ooff[u][o] += c * g.out_st[o][d];
    }
#pragma unroll
    for (int i = 0; i < NI; ++i)
      x[u][i] = g.in_kind[i] == kLiteral ? scalar_of<C>(g.s, kLiteralSlot + i) : load_dyn<C>(g.in[i], ioff[i], g.in_dt[i]);
  }
#pragma unroll
  for (int u = 0; u < UNR; ++u) {
    if (!live[u]) continue;
    C out[NO];
    A::apply(x[u], out, p);
#pragma unroll
    for (int o = 0; o < NO; ++o)
      if (g.out_on[o]) store_dyn<C>(g.out[o], ooff[u][o], g.out_dt[o], out[o], g.sat_fp8 != 0);
  }
}

template <class A, class C>
int launch_strided(const EwStrided& g, cudaStream_t stream) {
  constexpr int UNR = 1;
  const uint32_t per_block = kThreads * UNR;
  const uint32_t blocks = (g.numel + per_block - 1) / per_block;
  if (blocks == 0) return 0;
  return static_cast<int>(launch_kernel(strided_kernel<A, C, UNR>, dim3(blocks), dim3(kThreads), 0, stream, g));
}

// ---------------------------------------------------------------- tiled 2-D path
// Element (r, c) of a tile operand with element strides rs, cs and element size `size`: every
// access of a thread is its first one plus a multiple of one 64-bit step (the tile kernels form
// the thread's pointer once, then step it; per-access 64-bit index products and bounds compares
// tripled the 2-byte tile kernel's instructions, H200 ncu: 449 M against 143 M for the same tile
// scheme in a bare kernel).
__device__ __forceinline__ const char* tile_at(const void* base, int64_t r, int64_t c, int64_t rs, int64_t cs, int size) {
  return static_cast<const char*>(base) + (r * rs + c * cs) * size;
}
// Rows (cols) of the tensor from a tile's first one, clamped to the tile: in-tile bounds checks
// are 32-bit compares with constants.
__device__ __forceinline__ int tile_left(int64_t n, int64_t first, int ts) {
  return static_cast<int>(n - first < ts ? n - first : ts);
}

// TS x TS tiles (TS = 32), 256 threads: thread (tx, ty) covers column tx and rows ty,
// ty + 256/TS, ... Row-fastest inputs are staged through shared memory (coalesced along rows),
// row-fastest outputs likewise on the way out. Typed like the rows kernel (storage T, results
// TO, operand MI a bool mask): per-element dtype dispatch made this kernel issue-bound.
template <class A, class T, class TO, int MI>
__global__ void __launch_bounds__(256) tile_kernel(const EwTile g) {
  using C = compute_t<T>;
  constexpr int TS = 32, NI = A::NI, NO = A::NO, STEP = 256 / TS, PER = TS / STEP;
  __shared__ C sin[NI][TS][TS + 1];   // [input][col in tile][row in tile]
  __shared__ C sout[NO][TS][TS + 1];  // [output][col in tile][row in tile]
  const P<C> p = load_params<C>(g.s);
  // consecutive blocks walk down the rows (the staged operands' contiguous runs)
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * TS, c0 = static_cast<int64_t>(blockIdx.y) * TS;
  const int tx = threadIdx.x % TS, ty = threadIdx.x / TS;
  // staged accesses: row r0 + tx of columns c0 + ty + STEP·j; direct: row r0 + ty + STEP·j, column c0 + tx
  const int rows_left = tile_left(g.rows, r0, TS), cols_left = tile_left(g.cols, c0, TS);
  const bool st_row = tx < rows_left, dir_col = tx < cols_left;
  auto load = [&](int i, const char* a) -> C {
    if (i == MI) return to_c<C>(*reinterpret_cast<const bool*>(a));
    return to_c<C>(*reinterpret_cast<const T*>(a));
  };
  bool staged = false, staged_out = false;
#pragma unroll
  for (int i = 0; i < NI; ++i) {
    if (!g.in_t[i]) continue;
    staged = true;
    const int sz = i == MI ? 1 : static_cast<int>(sizeof(T));
    const char* a = tile_at(g.in[i], r0 + tx, c0 + ty, g.in_rs[i], g.in_cs[i], sz);
    const int64_t step = STEP * g.in_cs[i] * sz;
    C v[PER];  // every load in flight before the first shared-memory store
#pragma unroll
    for (int j = 0; j < PER; ++j, a += step) v[j] = (st_row && ty + STEP * j < cols_left) ? load(i, a) : C(0);
#pragma unroll
    for (int j = 0; j < PER; ++j) sin[i][ty + STEP * j][tx] = v[j];
  }
#pragma unroll
  for (int o = 0; o < NO; ++o) staged_out |= g.out_on[o] && g.out_t[o];
  if (staged) __syncthreads();
  C x[PER][NI];
#pragma unroll
  for (int i = 0; i < NI; ++i) {  // all direct loads first: PER x NI in flight
    if (g.in_kind[i] == kLiteral) {
#pragma unroll
      for (int j = 0; j < PER; ++j) x[j][i] = scalar_of<C>(g.s, kLiteralSlot + i);
      continue;
    }
    if (g.in_t[i]) {
#pragma unroll
      for (int j = 0; j < PER; ++j) x[j][i] = sin[i][tx][ty + STEP * j];
      continue;
    }
    const int sz = i == MI ? 1 : static_cast<int>(sizeof(T));
    const char* a = tile_at(g.in[i], r0 + ty, c0 + tx, g.in_rs[i], g.in_cs[i], sz);
    const int64_t step = STEP * g.in_rs[i] * sz;
#pragma unroll
    for (int j = 0; j < PER; ++j, a += step) x[j][i] = (dir_col && ty + STEP * j < rows_left) ? load(i, a) : C(0);
  }
#pragma unroll
  for (int j = 0; j < PER; ++j) {
    const int rl = ty + STEP * j;
    C y[NO];
    A::apply(x[j], y, p);
#pragma unroll
    for (int o = 0; o < NO; ++o) {
      if (!g.out_on[o]) continue;
      if (g.out_t[o]) {
        sout[o][tx][rl] = y[o];
      } else if (dir_col && rl < rows_left) {
        TO* a = const_cast<TO*>(reinterpret_cast<const TO*>(tile_at(g.out[o], r0 + rl, c0 + tx, g.out_rs[o], g.out_cs[o], sizeof(TO))));
        *a = from_c<TO>(y[o], g.sat_fp8 != 0);
      }
    }
  }
  if (!staged_out) return;
  __syncthreads();
#pragma unroll
  for (int o = 0; o < NO; ++o) {
    if (!g.out_on[o] || !g.out_t[o]) continue;
    const char* a = tile_at(g.out[o], r0 + tx, c0 + ty, g.out_rs[o], g.out_cs[o], sizeof(TO));
    const int64_t step = STEP * g.out_cs[o] * static_cast<int64_t>(sizeof(TO));
#pragma unroll
    for (int j = 0; j < PER; ++j, a += step) {
      const int cl = ty + STEP * j;
      if (st_row && cl < cols_left) *const_cast<TO*>(reinterpret_cast<const TO*>(a)) = from_c<TO>(sout[o][cl][tx], g.sat_fp8 != 0);
    }
  }
}

// 2-byte storage takes tile16_kernel (below) unless a unit of compute-heavy ops sets this to 0
// before including this file (ew_inst_special.cu: the 32 x 32 tile_kernel, 4 inlined ops per thread).
#ifndef BARACUDA_EW_TILE16
#define BARACUDA_EW_TILE16 1
#endif
// Keyed by A (one unit's op): the unit's BARACUDA_EW_TILE16 never gives one specialization two values.
template <class A, class T, class TO, int MI>
inline constexpr bool kTile16 = BARACUDA_EW_TILE16 && sizeof(T) == 2 && std::is_same_v<T, TO> && MI < 0;

// The element pair at p as one 4-byte word (zero bits when !ok), and one element broadcast to
// both halves (an operand with stride 0 along the paired axis: kRowScalar).
__device__ __forceinline__ uint32_t load_pair16(const char* p, bool ok) {
  return ok ? *reinterpret_cast<const uint32_t*>(p) : 0u;
}
__device__ __forceinline__ uint32_t load_dup16(const char* p, bool ok) {
  const uint32_t h = ok ? *reinterpret_cast<const uint16_t*>(p) : 0u;
  return h | h << 16;
}
// The two halves of a pair word as compute values, and back (T: __half or __nv_bfloat16).
template <class T>
__device__ __forceinline__ float2 unpack_pair(uint32_t w) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
  else return __half22float2(*reinterpret_cast<const __half2*>(&w));
}
template <class T>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  uint32_t w;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&w, &v, 4);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&w, &v, 4);
  }
  return w;
}

// The tile path for 2-byte storage without a mask operand: 64 x 64 tiles, every access an
// element pair (4 bytes) along the operand's contiguous axis — staged operands pair rows, the
// others pair columns. The host (try_tile, EwKernels::tile_pairs) routes here only even rows and
// cols and operands whose pairs are 4-byte aligned (unit stride along the paired axis, an even
// stride along the other, a 4-byte aligned base) or inputs broadcast along it (stride 0,
// kRowScalar: one element per pair); other layouts take the strided kernel. The 32 x 32 tile kernel moved one 2-byte element per
// access: bf16 with a transposed operand ran at 30-35 % of copy (f32 70-77 %).
// Thread (lane, warp) computes rows warp + 8j (j < 8) at columns 2·lane, 2·lane + 1.
template <class A, class T>
__global__ void __launch_bounds__(256) tile16_kernel(const EwTile g) {
  using C = compute_t<T>;
  constexpr int TS = 64, NI = A::NI, NO = A::NO, RS = TS + 2, J = TS / 8;  // RS: halves per staged column (+1 word pad)
  __shared__ __align__(4) uint16_t sin[NI][TS][RS];   // [input][col in tile][row in tile]
  __shared__ __align__(4) uint16_t sout[NO][TS][RS];  // [output][col in tile][row in tile]
  const P<C> p = load_params<C>(g.s);
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * TS, c0 = static_cast<int64_t>(blockIdx.y) * TS;
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  // staged accesses: rows r0 + 2·lane, + 1 of columns c0 + warp + 8j; direct accesses: row
  // r0 + warp + 8j, columns c0 + 2·lane, + 1
  const int64_t sr = r0 + 2 * lane, dc = c0 + 2 * lane;
  const int rows_left = tile_left(g.rows, r0, TS), cols_left = tile_left(g.cols, c0, TS);
  const bool sr_ok = 2 * lane < rows_left, dc_ok = 2 * lane < cols_left;  // rows and cols are even: pairs are whole or absent
  bool staged = false, staged_out = false;
#pragma unroll
  for (int i = 0; i < NI; ++i) {
    if (!g.in_t[i]) continue;
    staged = true;
    const char* a = tile_at(g.in[i], sr, c0 + warp, g.in_rs[i], g.in_cs[i], 2);
    const int64_t step = 16 * g.in_cs[i];  // 8 columns of 2 bytes
    // every load in flight before the first shared-memory store (a store after each load left
    // one load in flight per thread)
    uint32_t w[J];
    if (g.in_kind[i] == kRowScalar) {
#pragma unroll
      for (int j = 0; j < J; ++j, a += step) w[j] = load_dup16(a, sr_ok && warp + 8 * j < cols_left);
    } else {
#pragma unroll
      for (int j = 0; j < J; ++j, a += step) w[j] = load_pair16(a, sr_ok && warp + 8 * j < cols_left);
    }
#pragma unroll
    for (int j = 0; j < J; ++j) *reinterpret_cast<uint32_t*>(&sin[i][warp + 8 * j][2 * lane]) = w[j];
  }
#pragma unroll
  for (int o = 0; o < NO; ++o) staged_out |= g.out_on[o] && g.out_t[o];
  if (staged) __syncthreads();
  uint32_t x[J][NI];
#pragma unroll
  for (int i = 0; i < NI; ++i) {  // all direct loads first
    if (g.in_kind[i] == kLiteral) continue;
    if (g.in_t[i]) {
#pragma unroll
      for (int j = 0; j < J; ++j) x[j][i] = uint32_t{sin[i][2 * lane][warp + 8 * j]} | uint32_t{sin[i][2 * lane + 1][warp + 8 * j]} << 16;
      continue;
    }
    const char* a = tile_at(g.in[i], r0 + warp, dc, g.in_rs[i], g.in_cs[i], 2);
    const int64_t step = 16 * g.in_rs[i];  // 8 rows
    if (g.in_kind[i] == kRowScalar) {
#pragma unroll
      for (int j = 0; j < J; ++j, a += step) x[j][i] = load_dup16(a, dc_ok && warp + 8 * j < rows_left);
    } else {
#pragma unroll
      for (int j = 0; j < J; ++j, a += step) x[j][i] = load_pair16(a, dc_ok && warp + 8 * j < rows_left);
    }
  }
  const char* dir_out[NO];
  int64_t dir_step[NO];
#pragma unroll
  for (int o = 0; o < NO; ++o) {
    dir_out[o] = tile_at(g.out[o], r0 + warp, dc, g.out_rs[o], g.out_cs[o], 2);
    dir_step[o] = 16 * g.out_rs[o];
  }
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const int rl = warp + 8 * j;
    const bool okr = rl < rows_left;
    float lo[NO], hi[NO];
    {
      C in[NI], out[NO];
#pragma unroll
      for (int i = 0; i < NI; ++i) in[i] = g.in_kind[i] == kLiteral ? scalar_of<C>(g.s, kLiteralSlot + i) : unpack_pair<T>(x[j][i]).x;
      A::apply(in, out, p);
#pragma unroll
      for (int o = 0; o < NO; ++o) lo[o] = out[o];
#pragma unroll
      for (int i = 0; i < NI; ++i) in[i] = g.in_kind[i] == kLiteral ? scalar_of<C>(g.s, kLiteralSlot + i) : unpack_pair<T>(x[j][i]).y;
      A::apply(in, out, p);
#pragma unroll
      for (int o = 0; o < NO; ++o) hi[o] = out[o];
    }
#pragma unroll
    for (int o = 0; o < NO; ++o) {
      if (!g.out_on[o]) continue;
      const uint32_t w = pack_pair<T>(lo[o], hi[o]);
      if (g.out_t[o]) {
        sout[o][2 * lane][rl] = static_cast<uint16_t>(w);
        sout[o][2 * lane + 1][rl] = static_cast<uint16_t>(w >> 16);
      } else {
        if (okr && dc_ok) *reinterpret_cast<uint32_t*>(const_cast<char*>(dir_out[o])) = w;
        dir_out[o] += dir_step[o];
      }
    }
  }
  if (!staged_out) return;
  __syncthreads();
#pragma unroll
  for (int o = 0; o < NO; ++o) {
    if (!g.out_on[o] || !g.out_t[o]) continue;
    const char* a = tile_at(g.out[o], sr, c0 + warp, g.out_rs[o], g.out_cs[o], 2);
    const int64_t step = 16 * g.out_cs[o];
#pragma unroll
    for (int j = 0; j < J; ++j, a += step)
      if (sr_ok && warp + 8 * j < cols_left) *reinterpret_cast<uint32_t*>(const_cast<char*>(a)) = *reinterpret_cast<const uint32_t*>(&sout[o][warp + 8 * j][2 * lane]);
  }
}

template <class A, class T, class TO, int MI>
int launch_tile(const EwTile& g, cudaStream_t stream) {
  if constexpr (kTile16<A, T, TO, MI>) {
    const dim3 grid(static_cast<unsigned>((g.rows + 63) / 64), static_cast<unsigned>((g.cols + 63) / 64));
    if (grid.x == 0 || grid.y == 0) return 0;
    return static_cast<int>(launch_kernel(tile16_kernel<A, T>, grid, dim3(256), 0, stream, g));
  } else {
    const dim3 grid(static_cast<unsigned>((g.rows + 31) / 32), static_cast<unsigned>((g.cols + 31) / 32));
    if (grid.x == 0 || grid.y == 0) return 0;
    return static_cast<int>(launch_kernel(tile_kernel<A, T, TO, MI>, grid, dim3(256), 0, stream, g));
  }
}

// The tile kernel for the 16/32-bit float storage types (others run the strided kernel).
template <class T>
inline constexpr bool kTileType = std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <class A, class T, class TO, int MI>
void set_tile(EwKernels& k) {
  if constexpr (kTileType<T>) {
    k.tile = &launch_tile<A, T, TO, MI>;
    k.tile_pairs = kTile16<A, T, TO, MI>;
  }
}

constexpr int kind_mask_operand(EwKind k) {
  return k == EwKind::kSelect ? 0 : (k == EwKind::kMasked ? 1 : -1);
}

template <class Op, int Ar, EwKind K, unsigned G>
EwKernels find_kernels(bool backward, DType ri, DType ro, EwCompute c) {
  EwKernels k;
  if (backward) {
    if constexpr (G != 0) {
      using A = Bwd<Op, Ar>;
      constexpr int MI = kind_mask_operand(K) < 0 ? -1 : kind_mask_operand(K) + 1;
      if (ri == ro && K != EwKind::kFloatPower)
        dispatch_storage<true, false>(ri, [&]<class T>() {
          set_rows<A, T, T, MI>(k);
          set_tile<A, T, T, MI>(k);
          set_bcast<A, T, MI, Ar, G>(k);
        });
      if (c == EwCompute::kF32 && K != EwKind::kFloatPower) k.strided = &launch_strided<A, float>;
      if (c == EwCompute::kF64) k.strided = &launch_strided<A, double>;
    }
    return k;
  }
  using A = Fwd<Op, Ar>;
  constexpr int MI = kind_mask_operand(K);
  if constexpr (K == EwKind::kCast) {
    dispatch_storage<true, true, true>(ri, [&]<class T>() {
      dispatch_storage<true, true, true>(ro, [&]<class TO>() {
        set_rows<A, T, TO, -1>(k);
      });
    });
    if (c == EwCompute::kF64) k.strided = &launch_strided<A, double>;
    if (c == EwCompute::kI64) k.strided = &launch_strided<A, int64_t>;
    return k;
  } else if constexpr (K == EwKind::kFloatPower) {
    if (ri == DType::f64 && ro == DType::f64) {
      set_rows<A, double, double, -1>(k);
    }
    if (c == EwCompute::kF64) k.strided = &launch_strided<A, double>;
    return k;
  } else {
    constexpr bool fl = ew_kind_has_floats(K), in = ew_kind_has_ints(K);
    if constexpr (ew_kind_bool_result(K)) {
      if (ro == DType::boolean)
        dispatch_storage<fl, in>(ri, [&]<class T>() {
          set_rows<A, T, bool, MI>(k);
        });
    } else {
      if (ri == ro)
        dispatch_storage<fl, in>(ri, [&]<class T>() {
          set_rows<A, T, T, MI>(k);
          set_tile<A, T, T, MI>(k);
        });
    }
    if constexpr (fl) {
      if (c == EwCompute::kF32) k.strided = &launch_strided<A, float>;
      if (c == EwCompute::kF64) k.strided = &launch_strided<A, double>;
    }
    if constexpr (in) {
      if (c == EwCompute::kI64) k.strided = &launch_strided<A, int64_t>;
    }
    return k;
  }
}

}  // namespace baracuda::ew

// One definition per op of the group this unit instantiates.
#define BARACUDA_EW_DEFINE(name, arity, kind, grad)                                                      \
  namespace baracuda::ew {                                                                                \
  EwKernels ew_kernels_##name(bool bwd, DType ri, DType ro, EwCompute c) {                                 \
    return find_kernels<op_##name, arity, EwKind::kind, grad>(bwd, ri, ro, c);                             \
  }                                                                                                       \
  }
#define BARACUDA_EW_SKIP(name, arity, kind, grad)
