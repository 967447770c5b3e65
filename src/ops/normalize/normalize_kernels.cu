// NormalizePlan's and NormalizeBackwardPlan's kernels on the row base (core/row_reduce.cuh): one
// line body for a warp, a block or a lone thread per line (the group's reduce); the line read
// once for its sums and again for the outputs.
#include <algorithm>
#include <cmath>

#include "core/launch.cuh"
#include "core/pnorm.cuh"
#include "core/row_reduce.cuh"
#include "ops/normalize/normalize_geometry.hpp"

namespace baracuda::nrmz {

namespace {

using namespace pnorm;

struct Off {
  int64_t v[kViews];
};

// The pair a line reduces: a = the norm's accumulation (Σ |x|^p, or max |x|), b = Σ dy · x.
template <class C>
struct Acc2 {
  C a, b;
};
struct Acc2Op {
  bool max_a;
  template <class C>
  __device__ __forceinline__ Acc2<C> operator()(const Acc2<C>& x, const Acc2<C>& y) const {
    return {max_a ? nan_max(x.a, y.a) : x.a + y.a, x.b + y.b};
  }
};

template <class T, class C>
__device__ __forceinline__ C load_c(const NormalizeGeom& g, int v, int64_t off) {
  return static_cast<C>(to_acc(static_cast<const T*>(g.p[v])[off]));
}

// The line's V-element pieces: f(i) for the piece starting at element i (V > 1: 16-byte vectors
// of unit-stride views; V = 1: one element at the views' strides); unrolled by 4 on the strided
// paths (more of a thread's loads in flight).
template <class T, int V, class Grp, class F>
__device__ __forceinline__ void for_pieces(const NormalizeGeom& g, const Grp& grp, F&& f) {
#pragma unroll(V == 1 ? 4 : 1)
  for (int64_t i = static_cast<int64_t>(grp.tid) * V; i < g.N; i += static_cast<int64_t>(Grp::size) * V) f(i);
}

template <class T, int V, class C>
__device__ __forceinline__ void load_v(const NormalizeGeom& g, int view, const Off& o, int64_t i, C (&v)[V]) {
  const T* p = static_cast<const T*>(g.p[view]) + o.v[view];
  if constexpr (V == 1) v[0] = static_cast<C>(to_acc(p[i * g.s[view]]));
  else rows::load_piece<T, V, C>(p + i, v);
}
template <class T, int V, class C>
__device__ __forceinline__ void store_v(const NormalizeGeom& g, int view, const Off& o, int64_t i, const C (&v)[V]) {
  T* p = static_cast<T*>(g.p[view]) + o.v[view];
  if constexpr (V == 1) {
    p[i * g.s[view]] = from_c<T>(static_cast<acc_t<T>>(v[0]), false);
  } else {
    acc_t<T> w[V];
#pragma unroll
    for (int e = 0; e < V; ++e) w[e] = static_cast<acc_t<T>>(v[e]);
    store_global16<T, V>(p + i, w);
  }
}

template <class T, int V, class Grp, class Red>
__device__ __forceinline__ void forward_line(const NormalizeGeom& g, int64_t line, const Grp& grp, Red&& red) {
  using C = acc_t<T>;
  Off o;
  rows::split_offsets<kViews>(line, g.ko, g.osize, g.os, o.v);
  const int pk = kind(g.p_norm);
  const C p = static_cast<C>(g.p_norm);
  Acc2<C> acc{C(0), C(0)};
  for_pieces<T, V>(g, grp, [&](int64_t i) {
    C x[V];
    load_v<T, V, C>(g, kX, o, i, x);
#pragma unroll
    for (int e = 0; e < V; ++e) acc.a = accumulate(pk, acc.a, x[e], p);
  });
  acc = red(acc, Acc2Op{pk == kPInf});
  const C n = norm_of(pk, acc.a, p);
  C scale = C(1), den = C(1);
  if (g.weight_norm) {
    scale = load_c<T, C>(g, kG, o.v[kG]) / n;
    if (grp.tid == 0 && g.p[kNorm]) static_cast<C*>(g.p[kNorm])[o.v[kNorm]] = n;
  } else {
    const C eps = static_cast<C>(g.eps);
    den = n < eps ? eps : n;  // clamp_min (a NaN norm stays NaN)
  }
  for_pieces<T, V>(g, grp, [&](int64_t i) {
    C x[V];
    load_v<T, V, C>(g, kX, o, i, x);
#pragma unroll
    for (int e = 0; e < V; ++e) x[e] = g.weight_norm ? x[e] * scale : x[e] / den;
    store_v<T, V, C>(g, kY, o, i, x);
  });
}

template <class T, int V, class Grp, class Red>
__device__ __forceinline__ void backward_line(const NormalizeGeom& g, int64_t line, const Grp& grp, Red&& red) {
  using C = acc_t<T>;
  Off o;
  rows::split_offsets<kViews>(line, g.ko, g.osize, g.os, o.v);
  const int pk = g.weight_norm ? kP2 : kind(g.p_norm);
  const C p = static_cast<C>(g.p_norm);
  Acc2<C> acc{C(0), C(0)};
  for_pieces<T, V>(g, grp, [&](int64_t i) {
    C x[V], dy[V];
    load_v<T, V, C>(g, kX, o, i, x);
    load_v<T, V, C>(g, kDy, o, i, dy);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if (!g.weight_norm) acc.a = accumulate(pk, acc.a, x[e], p);
      acc.b += dy[e] * x[e];
    }
  });
  acc = red(acc, Acc2Op{pk == kPInf});
  const C dot = acc.b;
  if (g.weight_norm) {
    const C n = static_cast<const C*>(g.p[kNorm])[o.v[kNorm]], gv = load_c<T, C>(g, kG, o.v[kG]);
    const C scale = gv / n, proj = dot / (n * n);
    if (grp.tid == 0 && g.p[kDg]) static_cast<T*>(g.p[kDg])[o.v[kDg]] = from_c<T>(static_cast<acc_t<T>>(dot / n), false);
    for_pieces<T, V>(g, grp, [&](int64_t i) {
      C x[V], dy[V];
      load_v<T, V, C>(g, kX, o, i, x);
      load_v<T, V, C>(g, kDy, o, i, dy);
#pragma unroll
      for (int e = 0; e < V; ++e) x[e] = scale * (dy[e] - proj * x[e]);
      store_v<T, V, C>(g, kDx, o, i, x);
    });
    return;
  }
  const C n = norm_of(pk, acc.a, p), eps = static_cast<C>(g.eps);
  const C den = n < eps ? eps : n;
  C ties = C(1);
  if (pk == kPInf) {  // the entries at the max share its gradient
    C t = C(0);
    for_pieces<T, V>(g, grp, [&](int64_t i) {
      C x[V];
      load_v<T, V, C>(g, kX, o, i, x);
#pragma unroll
      for (int e = 0; e < V; ++e) t += fabs(x[e]) == n ? C(1) : C(0);
    });
    ties = red(t, rows::SumOp{});
  }
  // dx_i = dy_i / den - coef · dn_i; dn_i = sign(x_i) (|x_i| / n)^(p-1) (inf: [|x_i| = n] sign / ties);
  // coef = 0 (a clamped or zero line) drops the term
  const C coef = n >= eps && n > C(0) ? dot / (den * den) : C(0);
  for_pieces<T, V>(g, grp, [&](int64_t i) {
    C x[V], dy[V];
    load_v<T, V, C>(g, kX, o, i, x);
    load_v<T, V, C>(g, kDy, o, i, dy);
#pragma unroll
    for (int e = 0; e < V; ++e) x[e] = dy[e] / den - (coef == C(0) ? C(0) : coef * derivative(pk, x[e], n, p, ties));
    store_v<T, V, C>(g, kDx, o, i, x);
  });
}

template <class T, bool Bwd, int V>
__device__ __forceinline__ void run_line(const NormalizeGeom& g, int64_t line, const auto& grp, auto&& red) {
  if constexpr (Bwd) backward_line<T, V>(g, line, grp, red);
  else forward_line<T, V>(g, line, grp, red);
}

template <class T, bool Bwd, int V>
__global__ void __launch_bounds__(32 * kRowWarps) warp_rows_kernel(const NormalizeGeom g) {
  rows::warp_lines<kRowWarps>(g.lines, [&](int64_t l, const auto& grp, auto&& red) { run_line<T, Bwd, V>(g, l, grp, red); });
}

template <class T, bool Bwd, int V>
__global__ void __launch_bounds__(kThreads, 4) block_rows_kernel(const NormalizeGeom g) {
  rows::block_lines<kThreads, sizeof(Acc2<double>)>(g.lines, [&](int64_t l, const auto& grp, auto&& red) { run_line<T, Bwd, V>(g, l, grp, red); });
}

template <class T, bool Bwd>
__global__ void __launch_bounds__(kThreads) columns_kernel(const NormalizeGeom g) {
  rows::thread_lines<kThreads>(g.lines, [&](int64_t l, const auto& grp, auto&& red) { run_line<T, Bwd, 1>(g, l, grp, red); });
}

template <class T, bool Bwd>
__global__ void __launch_bounds__(kColX * kColY) column_blocks_kernel(const NormalizeGeom g) {
  rows::column_lines<kColX, kColY, sizeof(Acc2<double>)>(g.lines,
                                                           [&](int64_t l, const auto& grp, auto&& red) { run_line<T, Bwd, 1>(g, l, grp, red); });
}

// 16-byte pieces: every line view unit-stride and 16-byte aligned at every line's start.
bool vectorizable(const NormalizeGeom& g, int64_t es) {
  const int64_t w = 16 / es;
  if (g.N % w != 0) return false;
  for (int v : {kX, kY, kDy, kDx}) {
    if (!g.p[v]) continue;
    if (g.s[v] != 1 || reinterpret_cast<uintptr_t>(g.p[v]) % 16 != 0) return false;
    for (int a = 0; a < g.ko; ++a)
      if (g.osize[a] > 1 && (g.os[v][a] * es) % 16 != 0) return false;
  }
  return true;
}

template <class T, bool Bwd>
cudaError_t launch(const NormalizeGeom& g, cudaStream_t stream) {
  if (g.lines == 0 || g.N == 0) return cudaSuccess;
  constexpr int VW = 16 / static_cast<int>(sizeof(T));
  const bool vec = (g.path == kWarpRows || g.path == kBlockRows) && vectorizable(g, sizeof(T));
  if (g.path == kColumnBlocks) {
    const int64_t blocks = std::min<int64_t>((g.lines + kColX - 1) / kColX, kMaxGrid);
    return launch_kernel(column_blocks_kernel<T, Bwd>, dim3(static_cast<unsigned>(blocks)), dim3(kColX, kColY), 0, stream, g);
  }
  if (g.path == kColumns) {
    const int64_t blocks = std::min<int64_t>((g.lines + kThreads - 1) / kThreads, kMaxGrid);
    return launch_kernel(columns_kernel<T, Bwd>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g);
  }
  if (g.path == kWarpRows) {
    const int64_t blocks = std::min<int64_t>((g.lines + kRowWarps - 1) / kRowWarps, kMaxGrid);
    auto k = vec ? warp_rows_kernel<T, Bwd, VW> : warp_rows_kernel<T, Bwd, 1>;
    return launch_kernel(k, dim3(static_cast<unsigned>(blocks)), dim3(32 * kRowWarps), 0, stream, g);
  }
  const int64_t blocks = std::min<int64_t>(g.lines, kMaxGrid);
  auto k = vec ? block_rows_kernel<T, Bwd, VW> : block_rows_kernel<T, Bwd, 1>;
  return launch_kernel(k, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g);
}

}  // namespace

NormalizeLaunchFn find_normalize(DType x, bool backward) {
  return pick_float_type<NormalizeLaunchFn>(x, [&]<class T>() -> NormalizeLaunchFn { return backward ? &launch<T, true> : &launch<T, false>; });
}

}  // namespace baracuda::nrmz
