// NormPlan's and NormBackwardPlan's kernels on the row base (core/row_reduce.cuh): a block per
// row (rows::ClusterGroup of one block), rows staged by rows::for_each_line; the backward's
// dweight / dbias partials per row group, then a fixed-order column pass over the groups.
#include <algorithm>
#include <type_traits>

#include "core/launch.cuh"
#include "core/row_reduce.cuh"
#include "ops/norm/norm_geometry.hpp"

namespace baracuda::nrm {

namespace {

struct Off {
  int64_t v[kViews];
};

__device__ __forceinline__ void row_offsets(const NormGeom& g, int64_t line, Off& o) {
  rows::split_offsets<kViews>(line, g.ko, g.osize, g.os, o.v);
}

// V values stored as T at p (V > 1: 16-byte vector stores to global memory; else stride s).
template <class T, int V, class C>
__device__ __forceinline__ void store_n(T* p, int64_t s, const C (&v)[V]) {
  if constexpr (V == 1) {
    p[0] = from_c<T>(static_cast<acc_t<T>>(v[0]), false);
  } else {
    acc_t<T> w[V];
#pragma unroll
    for (int e = 0; e < V; ++e) w[e] = static_cast<acc_t<T>>(v[e]);
    store_global16<T, V>(p, w);
  }
}
// The same into shared memory (the staged h of the fused residual).
template <class T, int V, class C>
__device__ __forceinline__ void store_stage(T* p, const C (&v)[V]) {
  if constexpr (V == 1) {
    p[0] = from_c<T>(static_cast<acc_t<T>>(v[0]), false);
  } else {
    constexpr int W = 16 / static_cast<int>(sizeof(T));
#pragma unroll
    for (int q = 0; q < V / W; ++q) {
      acc_t<T> w[W];
#pragma unroll
      for (int e = 0; e < W; ++e) w[e] = static_cast<acc_t<T>>(v[q * W + e]);
      store_acc_vec<T, W>(p + q * W, w);
    }
  }
}

// A row's (or its pieces') weight / bias: 1 / 0 when absent.
template <class P, int V, class C>
__device__ __forceinline__ void load_param(const void* base, int64_t stride, int64_t col, C one, C (&v)[V]) {
  if (!base) {
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = one;
    return;
  }
  const P* p = static_cast<const P*>(base);
  if constexpr (V == 1) v[0] = static_cast<C>(to_acc(p[col * stride]));
  else rows::load_piece<P, V, C>(p + col, v);
}

template <class C>
struct Pair {
  C a, b;
  __device__ __forceinline__ Pair operator+(const Pair& o) const { return {a + o.a, b + o.b}; }
  __device__ __forceinline__ Pair& operator+=(const Pair& o) {
    a += o.a, b += o.b;
    return *this;
  }
};

// Forward of one row: x (and residual) at src[0] (src[1]), the piece width V (16-byte vectors
// of T, or 1 at the views' strides), Staged: src in shared memory (h written back there).
template <class T, class P, bool Res, bool Staged, int V, class Red>
__device__ __forceinline__ void forward_row(const NormGeom& g, const Off& o, const T* const* src, int tid, int nt, Red&& red) {
  using C = acc_t<T>;
  const int64_t pieces = g.N / V;
  const int64_t sx = Staged || V > 1 ? 1 : g.s[kX], sr = Staged || V > 1 ? 1 : g.s[kR];
  T* hout = Res ? static_cast<T*>(g.p[kH]) + o.v[kH] : nullptr;
  // the row's h over piece i (rounded to T: the unfused sum's result); pass 0 writes it
  auto load_h = [&](int64_t i, C (&h)[V], bool write) {
    rows::load_piece<T, V, C>(src[0] + i * V * sx, h);
    if constexpr (Res) {
      if (Staged && !write) return;  // pass 0 left h in the stage
      C r[V];
      rows::load_piece<T, V, C>(src[1] + i * V * sr, r);
#pragma unroll
      for (int e = 0; e < V; ++e) h[e] = static_cast<C>(to_acc(from_c<T>(static_cast<acc_t<T>>(h[e] + r[e]), false)));
      if (write) {
        store_n<T, V, C>(hout + i * V * (V > 1 ? 1 : g.s[kH]), g.s[kH], h);
        if constexpr (Staged) store_stage<T, V, C>(const_cast<T*>(src[0]) + i * V, h);
      }
    }
  };
  C t[V];
#pragma unroll
  for (int e = 0; e < V; ++e) t[e] = C(0);
  for (int64_t i = tid; i < pieces; i += nt) {
    C h[V];
    load_h(i, h, true);
#pragma unroll
    for (int e = 0; e < V; ++e) t[e] += g.layer ? h[e] : h[e] * h[e];
  }
  const C n = static_cast<C>(g.N);
  const C s1 = red(rows::tree_sum<C, V>(t), rows::SumOp{});
  C mean = C(0), var;
  if (g.layer) {
    mean = s1 / n;
#pragma unroll
    for (int e = 0; e < V; ++e) t[e] = C(0);
    for (int64_t i = tid; i < pieces; i += nt) {
      C h[V];
      load_h(i, h, false);
#pragma unroll
      for (int e = 0; e < V; ++e) t[e] += (h[e] - mean) * (h[e] - mean);
    }
    var = red(rows::tree_sum<C, V>(t), rows::SumOp{}) / n;
  } else {
    var = s1 / n;
  }
  const C rstd = C(1) / sqrt(var + static_cast<C>(g.eps));
  if (tid == 0) {
    if (g.layer) static_cast<C*>(g.p[kMean])[o.v[kMean]] = mean;
    static_cast<C*>(g.p[kRstd])[o.v[kRstd]] = rstd;
  }
  T* y = static_cast<T*>(g.p[kY]) + o.v[kY];
  for (int64_t i = tid; i < pieces; i += nt) {
    C h[V], w[V], b[V], out[V];
    load_h(i, h, false);
    load_param<P, V, C>(g.w, g.ws, i * V, C(1), w);
    load_param<P, V, C>(g.b, g.bs, i * V, C(0), b);
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = (h[e] - mean) * rstd * w[e] + b[e];
    store_n<T, V, C>(y + i * V * (V > 1 ? 1 : g.s[kY]), g.s[kY], out);
  }
}

// A thread's dweight / dbias partials in registers: its pieces tid + k·kThreads, k < kRegPieces
// (rows of at most kRegPieces·kThreads pieces).
constexpr int kRegPieces = 4;
template <class C, int V>
struct RegAcc {
  C w[kRegPieces][V], b[kRegPieces][V];
};

// Backward of one row: x at src[0], dy at src[1]; the group's dweight / dbias partials in ra
// (registers), or else at acc (this block's row of the workspace: 2 x N), each column updated only
// by the thread owning it, rows in order.
template <class T, class P, bool Staged, int V, class Red>
__device__ __forceinline__ void backward_row(const NormGeom& g, const Off& o, const T* const* src, acc_t<T>* acc,
                                             RegAcc<acc_t<T>, V>* ra, Red&& red) {
  using C = acc_t<T>;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t pieces = g.N / V;
  const int64_t sx = Staged || V > 1 ? 1 : g.s[kX], sd = Staged || V > 1 ? 1 : g.s[kDy];
  const C mean = g.layer ? static_cast<const C*>(g.p[kMean])[o.v[kMean]] : C(0);
  const C rstd = static_cast<const C*>(g.p[kRstd])[o.v[kRstd]];
  Pair<C> t[V];
#pragma unroll
  for (int e = 0; e < V; ++e) t[e] = {C(0), C(0)};
  for (int64_t i = tid; i < pieces; i += kThreads) {
    C x[V], d[V], w[V];
    rows::load_piece<T, V, C>(src[0] + i * V * sx, x);
    rows::load_piece<T, V, C>(src[1] + i * V * sd, d);
    load_param<P, V, C>(g.w, g.ws, i * V, C(1), w);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const C gg = d[e] * w[e], xh = (x[e] - mean) * rstd;
      t[e].a += gg;
      t[e].b += gg * xh;
    }
  }
  const Pair<C> s = red(rows::tree_sum<Pair<C>, V>(t), rows::SumOp{});
  const C n = static_cast<C>(g.N), ma = g.layer ? s.a / n : C(0), mb = s.b / n;
  T* dx = static_cast<T*>(g.p[kDx]) + o.v[kDx];
  const T* dh = g.p[kDh] ? static_cast<const T*>(g.p[kDh]) + o.v[kDh] : nullptr;
  const int64_t sdx = V > 1 ? 1 : g.s[kDx], sdh = V > 1 ? 1 : g.s[kDh];
  auto piece = [&](int64_t i, C* aw, C* ab) {
    C x[V], d[V], w[V], out[V];
    rows::load_piece<T, V, C>(src[0] + i * V * sx, x);
    rows::load_piece<T, V, C>(src[1] + i * V * sd, d);
    load_param<P, V, C>(g.w, g.ws, i * V, C(1), w);
    C hg[V];
    if (dh) rows::load_piece<T, V, C>(dh + i * V * sdh, hg);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const C xh = (x[e] - mean) * rstd;
      out[e] = rstd * (d[e] * w[e] - ma - xh * mb) + (dh ? hg[e] : C(0));
    }
    store_n<T, V, C>(dx + i * V * sdx, sdx, out);
    if (aw) {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        aw[e] += d[e] * (x[e] - mean) * rstd;
        ab[e] += d[e];
      }
    }
  };
  if (ra) {
#pragma unroll
    for (int k = 0; k < kRegPieces; ++k) {
      const int64_t i = tid + static_cast<int64_t>(k) * kThreads;
      if (i < pieces) piece(i, ra->w[k], ra->b[k]);
    }
  } else {
    for (int64_t i = tid; i < pieces; i += kThreads) piece(i, acc ? acc + i * V : nullptr, acc ? acc + g.N + i * V : nullptr);
  }
}

// A block's rows blockIdx.x, + gridDim.x, ... (V: the piece width).
template <class T, class P, bool Bwd, bool Res, int V, class Red>
__device__ __forceinline__ void block_rows(const NormGeom& g, T* stage, acc_t<T>* acc, Red& red) {
  constexpr int R = Bwd ? 2 : (Res ? 2 : 1);
  constexpr int kSecond = Bwd ? kDy : kR;
  using C = acc_t<T>;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t pieces = g.N / V;
  RegAcc<C, V> regs;
  const bool in_regs = Bwd && acc && pieces <= int64_t{kRegPieces} * kThreads;
  if (in_regs) {
#pragma unroll
    for (int k = 0; k < kRegPieces; ++k)
#pragma unroll
      for (int e = 0; e < V; ++e) regs.w[k][e] = regs.b[k][e] = C(0);
  }
  rows::for_each_line<R, V, T, Off>(
      blockIdx.x, gridDim.x, g.lines, stage, g.N, g.N, static_cast<int>(threadIdx.x), kThreads, V > 1, g.staged, g.buffers,
      [&](int64_t line, Off& o) { row_offsets(g, line, o); },
      [&](const Off& o, int r) {
        const int v = r == 0 ? static_cast<int>(kX) : kSecond;
        return static_cast<const T*>(g.p[v]) + o.v[v];
      },
      [&]<bool Staged>(const Off& o, const T* const* p) {
        if constexpr (Bwd) backward_row<T, P, Staged, V>(g, o, p, acc, in_regs ? &regs : nullptr, red);
        else forward_row<T, P, Res, Staged, V>(g, o, p, tid, kThreads, red);
      });
  if (in_regs) {  // the block's partials: every owned column, zeros where it had no row
#pragma unroll
    for (int k = 0; k < kRegPieces; ++k) {
      const int64_t i = tid + static_cast<int64_t>(k) * kThreads;
      if (i >= pieces) continue;
#pragma unroll
      for (int e = 0; e < V; ++e) acc[i * V + e] = regs.w[k][e], acc[g.N + i * V + e] = regs.b[k][e];
    }
  }
}

template <class T, class P, bool Bwd, bool Res>
__global__ void __launch_bounds__(kThreads) norm_kernel(const NormGeom g) {
  extern __shared__ __align__(16) unsigned char stage[];
  using C = acc_t<T>;
  __shared__ __align__(16) unsigned char slots[kThreads / 32 * 16];
  __shared__ __align__(16) unsigned char mine[32];
  const rows::ClusterGroup<kThreads> grp{static_cast<int>(threadIdx.x), 0, 1};
  auto red = [&](auto v, auto op) {
    using VT = decltype(v);
    return grp.reduce(v, op, reinterpret_cast<VT*>(slots), reinterpret_cast<VT*>(mine));
  };
  C* acc = Bwd && g.partials ? static_cast<C*>(g.partials) + static_cast<int64_t>(blockIdx.x) * 2 * g.N : nullptr;
  constexpr int VW = 16 / static_cast<int>(sizeof(T));  // (an f32 weight's piece: two vectors)
  if (g.vec) block_rows<T, P, Bwd, Res, VW>(g, reinterpret_cast<T*>(stage), acc, red);
  else block_rows<T, P, Bwd, Res, 1>(g, reinterpret_cast<T*>(stage), acc, red);
}

// The forward's short rows (g.warp: staged bytes of at most kWarpRowBytes): a warp per row,
// kRowWarps rows per block, each warp's rows double-buffered in its share of the stage.
template <class T, class P, bool Res>
__global__ void __launch_bounds__(32 * kRowWarps) norm_warp_kernel(const NormGeom g) {
  extern __shared__ __align__(16) unsigned char stage[];
  constexpr int R = Res ? 2 : 1;
  constexpr int VW = 16 / static_cast<int>(sizeof(T));
  const int w = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  T* st = reinterpret_cast<T*>(stage) + static_cast<int64_t>(w) * g.N * R * g.buffers;
  const rows::WarpGroup grp{lane};
  auto red = [&](auto v, auto op) { return grp.reduce(v, op); };
  auto run_rows = [&]<int V>() {
    rows::for_each_line<R, V, T, Off>(
        static_cast<int64_t>(blockIdx.x) * kRowWarps + w, static_cast<int64_t>(gridDim.x) * kRowWarps, g.lines, st, g.N, g.N, lane, 32,
        V > 1, g.staged, g.buffers, [&](int64_t line, Off& o) { row_offsets(g, line, o); },
        [&](const Off& o, int r) {
          const int v = r == 0 ? static_cast<int>(kX) : static_cast<int>(kR);
          return static_cast<const T*>(g.p[v]) + o.v[v];
        },
        [&]<bool Staged>(const Off& o, const T* const* p) { forward_row<T, P, Res, Staged, V>(g, o, p, lane, 32, red); });
  };
  if (g.vec) run_rows.template operator()<VW>();
  else run_rows.template operator()<1>();
}

// dweight / dbias: column j's partials of the groups added in group order.
template <class T, class P>
__global__ void __launch_bounds__(256) norm_param_grad_kernel(const NormGeom g) {
  using C = acc_t<T>;
  const C* part = static_cast<const C*>(g.partials);
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < g.N; j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    C w = C(0), b = C(0);
    for (int64_t k = 0; k < g.groups; ++k) {
      w += part[k * 2 * g.N + j];
      b += part[k * 2 * g.N + g.N + j];
    }
    if (g.dw) static_cast<P*>(g.dw)[j * g.dws] = from_c<P>(static_cast<acc_t<P>>(w), false);
    if (g.db) static_cast<P*>(g.db)[j * g.dbs] = from_c<P>(static_cast<acc_t<P>>(b), false);
  }
}

template <class T, class P, bool Bwd>
cudaError_t launch(const NormGeom& g, cudaStream_t stream) {
  if (g.N == 0 || (g.lines == 0 && (!Bwd || (!g.dw && !g.db)))) return cudaSuccess;
  const size_t reads = Bwd || g.p[kR] ? 2 : 1;
  const size_t smem = g.staged ? static_cast<size_t>(g.N) * sizeof(T) * reads * g.buffers : 0;
  auto go = [&](auto* k, int64_t blocks) -> cudaError_t {
    BARACUDA_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    if (blocks > 0) BARACUDA_CUDA_TRY(launch_kernel(k, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), smem, stream, g));
    return cudaSuccess;
  };
  if constexpr (Bwd) {
    if (g.partials && g.lines > 0) BARACUDA_CUDA_TRY(cudaMemsetAsync(g.partials, 0, static_cast<size_t>(g.groups) * 2 * g.N * sizeof(acc_t<T>), stream));
    BARACUDA_CUDA_TRY(go(norm_kernel<T, P, true, false>, g.lines > 0 ? g.groups : 0));
    if (g.dw || g.db) {
      if (g.lines == 0) {  // no rows: dweight = dbias = 0
        if (g.dw) BARACUDA_CUDA_TRY(cudaMemset2DAsync(g.dw, g.dws * sizeof(P), 0, sizeof(P), static_cast<size_t>(g.N), stream));
        if (g.db) BARACUDA_CUDA_TRY(cudaMemset2DAsync(g.db, g.dbs * sizeof(P), 0, sizeof(P), static_cast<size_t>(g.N), stream));
        return cudaSuccess;
      }
      const int64_t blocks = std::min<int64_t>((g.N + 255) / 256, 1024);
      return launch_kernel(norm_param_grad_kernel<T, P>, dim3(static_cast<unsigned>(blocks)), dim3(256), 0, stream, g);
    }
    return cudaSuccess;
  } else {
    if (g.warp) {
      const size_t wsmem = smem * kRowWarps;
      auto wgo = [&](auto* k) -> cudaError_t {
        BARACUDA_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(wsmem)));
        int per_sm = 0;
        BARACUDA_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, 32 * kRowWarps, wsmem));
        const int64_t blocks = std::min<int64_t>((g.lines + kRowWarps - 1) / kRowWarps, int64_t{132} * std::max(per_sm, 1));
        return launch_kernel(k, dim3(static_cast<unsigned>(blocks)), dim3(32 * kRowWarps), wsmem, stream, g);
      };
      return g.p[kR] ? wgo(norm_warp_kernel<T, P, true>) : wgo(norm_warp_kernel<T, P, false>);
    }
    const int64_t blocks = std::min<int64_t>(g.lines, 132 * 8);
    return g.p[kR] ? go(norm_kernel<T, P, false, true>, blocks) : go(norm_kernel<T, P, false, false>, blocks);
  }
}

}  // namespace

NormLaunchFn find_norm(DType x, DType param, bool backward) {
  auto pick = [&]<class T, class P>() -> NormLaunchFn { return backward ? &launch<T, P, true> : &launch<T, P, false>; };
  if (x == param) return pick_float_type<NormLaunchFn>(x, [&]<class T>() { return pick.template operator()<T, T>(); });
  if (param == DType::f32 && x == DType::f16) return pick.template operator()<__half, float>();
  if (param == DType::f32 && x == DType::bf16) return pick.template operator()<__nv_bfloat16, float>();
  return nullptr;
}

}  // namespace baracuda::nrm
