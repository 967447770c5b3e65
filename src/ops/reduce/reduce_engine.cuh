// The reduction engine of ReducePlan and ReduceToShapePlan (device code; included by
// reduce_kernels.cu and the reduce_ops_*.cu units).
//
// The kernels walk the geometry of reduce_geometry.hpp (kept axes K x reduced axes R): row mode (a warp per (output, split), lanes striding
// the reduced range, 16-byte loads on a contiguous run, a fixed shuffle tree), column mode (a
// thread per (output, split) walking its rows in order, col_vec adjacent outputs per thread on
// 16-byte rows), then a fixed-order pass over the split partials. What is reduced is a policy P:
//   T, C, Acc     storage type, compute type (f32; f64 for f64; i64 for integers), accumulator
//   identity(g)   the empty reduction's accumulator
//   map(g, v, r)  the accumulator of element v (a C) at reduced index r (row-major over the
//                 reduced axes: the index argmax returns)
//   combine(a, b) a then b (a holds the smaller indices: the tie rules rely on it)
//   shfl(a, d)    __shfl_xor_sync of every field
//   store(g, k, a) the output(s) of kept index k from the final accumulator (finalize: mean's
//                 division, sqrt of var, the index output ...)
// Every order is a function of the shape alone: results are bitwise run-to-run deterministic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cp_async.cuh"
#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/reduce/reduce_geometry.hpp"

namespace baracuda::red {

// Calls f.template operator()<T>() for a reduction's or scan's storage dtype: the floats (when
// Floats), and every integer type and bool (not fp8); false for any other dtype.
template <bool Floats, class F>
bool dispatch_reduce_storage(DType t, F&& f) {
  bool hit = false;
  dispatch_storage<Floats, true, true>(t, [&]<class T>() {
    if constexpr (!std::is_same_v<T, __nv_fp8_e4m3> && !std::is_same_v<T, __nv_fp8_e5m2>) {
      f.template operator()<T>();
      hit = true;
    }
  });
  return hit;
}

__device__ __forceinline__ int64_t kept_offset_of(const int64_t* ksize, const int64_t* st, int kk, int64_t k) {
  int64_t off = 0;
  for (int a = kk - 1; a >= 0; --a) {
    const int64_t c = k % ksize[a];
    k /= ksize[a];
    off += c * st[a];
  }
  return off;
}
__device__ __forceinline__ int64_t reduced_offset(const ReduceGeom& g, int64_t r) {
  if (g.kr == 1) return r * g.rxs[0];
  int64_t off = 0;
  for (int a = g.kr - 1; a >= 0; --a) {
    const int64_t c = r % g.rsize[a];
    r /= g.rsize[a];
    off += c * g.rxs[a];
  }
  return off;
}

// Writes v (converted to the output's dtype) at kept index k of y (second = the index output).
template <class V>
__device__ __forceinline__ void store_kept(const ReduceGeom& g, int64_t k, V v, bool second = false) {
  void* y = second ? g.y2 : g.y;
  if (!y) return;
  const uint8_t dt = second ? g.y2_dtype : g.y_dtype;
  const int64_t off = kept_offset_of(g.ksize, second ? g.kys2 : g.kys, g.kk, k);
  store_dyn<V>(static_cast<char*>(y) + off * static_cast<int64_t>(dtype_size(static_cast<DType>(dt))), 0, dt, v, false);
}

// The type partial results are combined in across lanes, warps and splits: the policy's Tree
// where it has one (f64 for f32 sums), else its Acc. Partials are stored as Acc.
template <class P>
struct TreeOf {
  using type = typename P::Acc;
};
template <class P>
  requires requires { typename P::Tree; }
struct TreeOf<P> {
  using type = typename P::Tree;
};
template <class P>
using tree_t = typename TreeOf<P>::type;

// Element v at reduced index r folded into a: the policy's in-order step(g, a, v, r) where it has
// one (r larger than every index already in a: a cheaper update than a combine), else
// combine(a, map(g, v, r)).
template <class P>
__device__ __forceinline__ typename P::Acc step(const ReduceGeom& g, typename P::Acc a, typename P::C v, int64_t r) {
  if constexpr (requires { P::step(g, a, v, r); }) return P::step(g, a, v, r);
  else return P::combine(a, P::map(g, v, r));
}

// V consecutive elements (indices r0 ..) folded into a: the policy's step_vec where it has one
// (a cheaper update per vector), else element by element.
template <class P, int V>
__device__ __forceinline__ typename P::Acc step_vec(const ReduceGeom& g, typename P::Acc a, const typename P::C (&v)[V], int64_t r0) {
  if constexpr (requires { P::template step_vec<V>(g, a, v, r0); }) {
    return P::template step_vec<V>(g, a, v, r0);
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) a = step<P>(g, a, v[j], r0 + j);
    return a;
  }
}
// Four consecutive rows of one output (column kernels): the policy's step4, else four steps.
template <class P>
__device__ __forceinline__ typename P::Acc step4(const ReduceGeom& g, typename P::Acc a, typename P::C v0, typename P::C v1,
                                                 typename P::C v2, typename P::C v3, int64_t r) {
  if constexpr (requires { P::step4(g, a, v0, v1, v2, v3, r); }) return P::step4(g, a, v0, v1, v2, v3, r);
  else return step<P>(g, step<P>(g, step<P>(g, step<P>(g, a, v0, r), v1, r + 1), v2, r + 2), v3, r + 3);
}
// Whether the policy folds a whole 16-byte vector as raw words (bit tricks on 1-byte types):
// the row kernel then loads the vector as a uint4 (loaded as Vec<bool, 16>, nvcc rebuilt the
// words byte by byte: PRMT / LOP3 per byte, 2x the instructions of the fold itself).
template <class P, int V>
inline constexpr bool kRawFold = requires(typename P::Acc a, uint4 w) { P::template step_raw<V>(a, w); };
// A whole 16-byte vector of storage folded in: the policy's step_raw on its words, else
// converted and step_vec.
template <class P, int V, class E>
__device__ __forceinline__ typename P::Acc step_raw(const ReduceGeom& g, typename P::Acc a, const E& e, int64_t r0) {
  if constexpr (kRawFold<P, V>) {
    return P::template step_raw<V>(a, e);
  } else {
    typename P::C c[V];
#pragma unroll
    for (int j = 0; j < V; ++j) c[j] = to_c<typename P::C>(e.v[j]);
    return step_vec<P, V>(g, a, c, r0);
  }
}

template <class P>
__global__ void __launch_bounds__(256) engine_row_kernel(const ReduceGeom g) {
  using T = typename P::T;
  using C = typename P::C;
  using Acc = typename P::Acc;
  const int64_t w = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (w >= g.K * g.splits) return;
  const int64_t k = w / g.splits, s = w % g.splits;
  const T* x = static_cast<const T*>(g.x) + kept_offset_of(g.ksize, g.kxs, g.kk, k);
  const int64_t r0 = s * g.r_per_split, r1 = min(g.R, r0 + g.r_per_split);
  Acc acc = P::identity(g);
  tree_t<P> tree = P::identity(g);  // the head and vectors (contiguous runs); acc: what follows
  if (g.kr == 1 && g.rxs[0] == 1) {
    // contiguous run: scalar head up to 16-byte alignment, 16-byte vectors, scalar tail; the
    // vectors go round four accumulators (shorter dependent chains: latency and rounding),
    // combined in order at the end
    constexpr int V = 16 / sizeof(T) > 0 ? 16 / sizeof(T) : 1;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(x + r0);
    int64_t head = static_cast<int64_t>(((16 - addr % 16) % 16) / sizeof(T));
    if (addr % sizeof(T) != 0) head = r1 - r0;  // cannot align: all scalar
    head = min(head, r1 - r0);
    for (int64_t r = r0 + lane; r < r0 + head; r += 32) acc = step<P>(g, acc, to_c<C>(x[r]), r);
    const int64_t nvec = (r1 - r0 - head) / V;
    using Ld = std::conditional_t<kRawFold<P, V>, uint4, Vec<T, V>>;  // what a 16-byte load gives the fold
    const Ld* xv = reinterpret_cast<const Ld*>(x + r0 + head);
    const int64_t rv = r0 + head;
    int64_t v = lane;
    // the slots are of the tree type: an f32 sum's vector is summed in f32, then added in f64
    using Tr = tree_t<P>;
    Tr slot[4] = {acc, P::identity(g), P::identity(g), P::identity(g)};
    auto fold = [&](Tr s, const Ld& e, int64_t r0) -> Tr {
      if constexpr (std::is_same_v<Tr, Acc>) return step_raw<P, V>(g, s, e, r0);
      else return P::combine(s, static_cast<Tr>(step_raw<P, V>(g, P::identity(g), e, r0)));
    };
    // kL 16-byte loads in flight: four, eight for the raw 1-byte folds (a uint4 each, and exact
    // in any order: all / any / count_nonzero; all over [16384, 16384] bool: 69 -> 80 % of copy, H200)
    constexpr int kL = kRawFold<P, V> ? 8 : 4;
    for (; v + 32 * (kL - 1) < nvec; v += 32 * kL) {
      Ld e[kL];
#pragma unroll
      for (int u = 0; u < kL; ++u) e[u] = xv[v + 32 * u];
#pragma unroll
      for (int u = 0; u < kL; ++u) slot[u % 4] = fold(slot[u % 4], e[u], rv + (v + 32 * u) * V);
    }
#pragma unroll
    for (int u = 0; u < kL - 1; ++u, v += 32)  // at most kL - 1 vectors left
      if (v < nvec) slot[u % 4] = fold(slot[u % 4], xv[v], rv + v * V);
    tree = P::combine(P::combine(slot[0], slot[1]), P::combine(slot[2], slot[3]));
    acc = P::identity(g);  // the tail, in order after the vectors
    for (int64_t r = rv + nvec * V + lane; r < r1; r += 32) acc = step<P>(g, acc, to_c<C>(x[r]), r);
  } else {
    for (int64_t r = r0 + lane; r < r1; r += 32) acc = step<P>(g, acc, to_c<C>(x[reduced_offset(g, r)]), r);
  }
  // lanes hold interleaved indices: a lane's partner at distance d holds the larger ones when
  // its lane bit d is clear, so combine (smaller, larger)
  tree_t<P> t = P::combine(tree, static_cast<tree_t<P>>(acc));
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    const tree_t<P> o = P::shfl(t, d);
    t = (lane & d) ? P::combine(o, t) : P::combine(t, o);
  }
  if (lane != 0) return;
  if (g.splits == 1) P::store(g, k, t);
  else static_cast<tree_t<P>*>(g.partials)[s * g.K + k] = t;
}

template <class P>
__global__ void __launch_bounds__(256) engine_col_kernel(const ReduceGeom g) {
  using T = typename P::T;
  using C = typename P::C;
  using Acc = typename P::Acc;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  const int64_t s = blockIdx.y;
  if (k >= g.K) return;
  const T* x = static_cast<const T*>(g.x) + kept_offset_of(g.ksize, g.kxs, g.kk, k);
  const int64_t r0 = s * g.r_per_split, r1 = min(g.R, r0 + g.r_per_split);
  Acc acc = P::identity(g);
  if (g.kr == 1) {
    const int64_t st = g.rxs[0];
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {  // four loads in flight, combined in order
      const C a0 = to_c<C>(x[r * st]), a1 = to_c<C>(x[(r + 1) * st]);
      const C a2 = to_c<C>(x[(r + 2) * st]), a3 = to_c<C>(x[(r + 3) * st]);
      acc = step4<P>(g, acc, a0, a1, a2, a3, r);
    }
    for (; r < r1; ++r) acc = step<P>(g, acc, to_c<C>(x[r * st]), r);
  } else {
    for (int64_t r = r0; r < r1; ++r) acc = step<P>(g, acc, to_c<C>(x[reduced_offset(g, r)]), r);
  }
  if (g.splits == 1) P::store(g, k, acc);
  else static_cast<tree_t<P>*>(g.partials)[s * g.K + k] = acc;
}

// engine_col_kernel with V adjacent outputs per thread (one kept axis, unit stride, 16-byte
// aligned rows): one 16-byte load per row; each output combines its rows in the same order.
template <class P, int V>
__global__ void __launch_bounds__(256) engine_col_vec_kernel(const ReduceGeom g) {
  using T = typename P::T;
  using C = typename P::C;
  using Acc = typename P::Acc;
  const int64_t k0 = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) * V;
  const int64_t s = blockIdx.y;
  if (k0 >= g.K) return;
  const T* x = static_cast<const T*>(g.x) + kept_offset_of(g.ksize, g.kxs, g.kk, k0);  // k0 .. k0 + V - 1: one run
  const int64_t r0 = s * g.r_per_split, r1 = min(g.R, r0 + g.r_per_split), st = g.rxs[0];
  Acc acc[V];
#pragma unroll
  for (int e = 0; e < V; ++e) acc[e] = P::identity(g);
  auto add = [&](const RawVec<T, V>& w, int64_t r) {
    C a[V];
    to_c_vec<C, V, T>(w, a);
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = step<P>(g, acc[e], a[e], r);
  };
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {  // four loads in flight, combined in order
    RawVec<T, V> w[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) w[u] = load_raw<V>(x + (r + u) * st, 0u, true, 0u);
    if constexpr (requires(Acc a, C c) { P::step4(g, a, c, c, c, c, r); }) {
      C a[4][V];
#pragma unroll
      for (int u = 0; u < 4; ++u) to_c_vec<C, V, T>(w[u], a[u]);
#pragma unroll
      for (int e = 0; e < V; ++e) acc[e] = P::step4(g, acc[e], a[0][e], a[1][e], a[2][e], a[3][e], r);
    } else {
#pragma unroll
      for (int u = 0; u < 4; ++u) add(w[u], r + u);
    }
  }
  for (; r < r1; ++r) add(load_raw<V>(x + r * st, 0u, true, 0u), r);
#pragma unroll
  for (int e = 0; e < V; ++e) {
    if (g.splits == 1) P::store(g, k0 + e, acc[e]);
    else static_cast<tree_t<P>*>(g.partials)[s * g.K + k0 + e] = acc[e];
  }
}

// Pass 2 over a tile of 32 adjacent outputs x 8 split groups (coalesced rows of partials): group
// y combines its contiguous run of splits in order, four loads in flight, then group 0 combines
// the 8 runs in order.
template <class P>
__global__ void __launch_bounds__(256) engine_combine_kernel(const ReduceGeom g) {
  using Acc = typename P::Acc;
  using Tr = tree_t<P>;
  __shared__ Tr runs[8][32];
  const int tx = static_cast<int>(threadIdx.x) & 31, ty = static_cast<int>(threadIdx.x) >> 5;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * 32 + tx;
  const Tr* p = static_cast<const Tr*>(g.partials);
  const int64_t per = (g.splits + 7) / 8, s0 = ty * per, s1 = min(g.splits, s0 + per);
  Tr acc = P::identity(g);
  if (k < g.K) {
    int64_t s = s0;
    for (; s + 4 <= s1; s += 4) {
      Tr t[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) t[u] = p[(s + u) * g.K + k];
#pragma unroll
      for (int u = 0; u < 4; ++u) acc = P::combine(acc, t[u]);
    }
    for (; s < s1; ++s) acc = P::combine(acc, p[s * g.K + k]);
  }
  runs[ty][tx] = acc;
  __syncthreads();
  if (ty != 0 || k >= g.K) return;
  for (int y = 1; y < 8; ++y) acc = P::combine(acc, runs[y][tx]);
  P::store(g, k, acc);
}

// Pass 2 for few outputs with many splits (an all-reduce): a block per output; thread t combines
// the t-th contiguous run of splits in order, then a fixed tree over the lanes (partners at
// distance 1, 2, .. 16: the lane with the bit set holds the later run) and the warps in order.
template <class P>
__global__ void __launch_bounds__(256) engine_combine_block_kernel(const ReduceGeom g) {
  using Acc = typename P::Acc;
  using Tr = tree_t<P>;
  __shared__ Tr warp_acc[8];
  const int64_t k = blockIdx.x;
  const int t = static_cast<int>(threadIdx.x), lane = t & 31;
  const Tr* p = static_cast<const Tr*>(g.partials);
  const int64_t per = (g.splits + 255) / 256, s0 = t * per, s1 = min(g.splits, s0 + per);
  Tr acc = P::identity(g);
  int64_t s = s0;
  for (; s + 4 <= s1; s += 4) {
    Tr u[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) u[i] = p[(s + i) * g.K + k];
#pragma unroll
    for (int i = 0; i < 4; ++i) acc = P::combine(acc, u[i]);
  }
  for (; s < s1; ++s) acc = P::combine(acc, p[s * g.K + k]);
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const Tr o = P::shfl(acc, d);
    acc = (lane & d) ? P::combine(o, acc) : P::combine(acc, o);
  }
  if (lane == 0) warp_acc[t >> 5] = acc;
  __syncthreads();
  if (t != 0) return;
  acc = warp_acc[0];
  for (int w = 1; w < 8; ++w) acc = P::combine(acc, warp_acc[w]);
  P::store(g, k, acc);
}

// var / std / var_mean / std_mean over short contiguous rows (P::kTwoPassRows; at most
// kStagedRowBytes, whole aligned 16-byte pieces): a warp per row, the row staged in the warp's
// shared-memory buffer with every piece in flight at once (cp.async), then two passes over the
// buffer: the mean (pieces summed in C pairwise, lanes' runs in f64, a butterfly), then
// sum (x - mean)^2 the same way. Exact to the f64 combination of f32 pieces, and a fixed order.
// (The Welford row kernel walks an 8 KB row in four dependent steps of loads: 58 % of copy.)
inline constexpr int64_t kStagedRowBytes = 8192;
inline constexpr int kStagedWarps = 4;
// Whether staged_variance_rows_kernel takes the geometry: row mode without splits, one reduced
// unit-stride axis of whole 16-byte pieces, at most max_bytes, every row 16-byte aligned.
inline bool staged_rows(const ReduceGeom& g, size_t elem, int64_t max_bytes) {
  const int64_t bytes = g.R * static_cast<int64_t>(elem);
  if (!g.row_mode || g.splits != 1 || g.kr != 1 || g.rxs[0] != 1 || g.R < 1 || bytes % 16 != 0 || bytes > max_bytes) return false;
  if (reinterpret_cast<uintptr_t>(g.x) % 16 != 0) return false;
  for (int a = 0; a < g.kk; ++a)
    if (g.ksize[a] > 1 && (g.kxs[a] * static_cast<int64_t>(elem)) % 16 != 0) return false;
  return true;
}
template <class P>
__global__ void __launch_bounds__(32 * kStagedWarps) staged_variance_rows_kernel(const ReduceGeom g) {
  using T = typename P::T;
  using C = typename P::C;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  __shared__ __align__(16) unsigned char rowbuf[kStagedWarps * kStagedRowBytes];
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  unsigned char* buf = rowbuf + warp * kStagedRowBytes;
  const unsigned sb = smem_u32(buf);
  const int64_t pieces = g.R / V;
  auto piece_sum = [&](int64_t i, C m, bool squares) {
    acc_t<T> w[V];
    load_acc_vec<T, V>(reinterpret_cast<const T*>(buf + i * 16), w);
    C v[V];
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = squares ? (static_cast<C>(w[e]) - m) * (static_cast<C>(w[e]) - m) : static_cast<C>(w[e]);
#pragma unroll
    for (int w = 1; w < V; w <<= 1)
#pragma unroll
      for (int e = 0; e + w < V; e += 2 * w) v[e] += v[e + w];
    return static_cast<double>(v[0]);
  };
  auto row_sum = [&](C m, bool squares) {
    double s = 0;
    for (int64_t i = lane; i < pieces; i += 32) s += piece_sum(i, m, squares);
#pragma unroll
    for (int d = 16; d >= 1; d >>= 1) s += __shfl_xor_sync(0xffffffffu, s, d);
    return s;
  };
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * kStagedWarps + warp; k < g.K; k += static_cast<int64_t>(gridDim.x) * kStagedWarps) {
    const unsigned char* x = reinterpret_cast<const unsigned char*>(static_cast<const T*>(g.x) + kept_offset_of(g.ksize, g.kxs, g.kk, k));
    for (int64_t i = lane; i < pieces; i += 32) cp_async<16>(sb + static_cast<unsigned>(i * 16), x + i * 16);
    cp_async_commit();
    cp_async_wait<0>();  // each lane reads back only the pieces it copied until the butterflies
    __syncwarp();
    const double mean = row_sum(C(0), false) / static_cast<double>(g.R);
    const double m2 = row_sum(static_cast<C>(mean), true);
    if (lane == 0) P::store(g, k, typename P::Acc{static_cast<C>(g.R), static_cast<C>(mean), static_cast<C>(m2)});
    __syncwarp();  // the buffer is rewritten by the next row
  }
}

// Pass 1, and the partials' pass when the reduction is split.
template <class P>
cudaError_t engine_launch(const ReduceGeom& g, cudaStream_t stream) {
  using T = typename P::T;
  if (g.K == 0) return cudaSuccess;
  cudaError_t e = cudaSuccess;
  if (g.row_mode) {
    if constexpr (requires { P::kTwoPassRows; }) {
      if (staged_rows(g, sizeof(T), kStagedRowBytes)) {
        const int64_t blocks = (g.K + kStagedWarps - 1) / kStagedWarps;
        return launch_kernel(staged_variance_rows_kernel<P>, dim3(static_cast<unsigned>(blocks < (int64_t{1} << 20) ? blocks : (int64_t{1} << 20))),
                             dim3(32 * kStagedWarps), 0, stream, g);
      }
    }
    const int64_t warps = g.K * g.splits;
    e = launch_kernel(engine_row_kernel<P>, dim3(static_cast<unsigned>((warps + 7) / 8)), dim3(256), 0, stream, g);
  } else {
    constexpr int V = 16 / sizeof(T);
    constexpr bool kVecType = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, __half> ||
                              std::is_same_v<T, __nv_bfloat16>;
    bool vec = kVecType && g.col_vec == V && g.kk >= 1 && g.kxs[g.kk - 1] == 1 && g.rxs[0] % V == 0 &&
               reinterpret_cast<uintptr_t>(g.x) % 16 == 0;
    for (int a = 0; a + 1 < g.kk; ++a) vec = vec && g.kxs[a] % V == 0;  // every run starts 16-byte aligned
    if constexpr (kVecType) {
      if (vec)
        e = launch_kernel(engine_col_vec_kernel<P, V>,
                          dim3(static_cast<unsigned>((g.K / V + 255) / 256), static_cast<unsigned>(g.splits)), dim3(256), 0, stream, g);
    }
    if (!vec)
      e = launch_kernel(engine_col_kernel<P>, dim3(static_cast<unsigned>((g.K + 255) / 256), static_cast<unsigned>(g.splits)),
                        dim3(256), 0, stream, g);
  }
  if (e != cudaSuccess || g.splits == 1) return e;
  if (combine_per_block(g))
    return launch_kernel(engine_combine_block_kernel<P>, dim3(static_cast<unsigned>(g.K)), dim3(256), 0, stream, g);
  return launch_kernel(engine_combine_kernel<P>, dim3(static_cast<unsigned>((g.K + 31) / 32)), dim3(256), 0, stream, g);
}

}  // namespace baracuda::red
