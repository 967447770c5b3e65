// RowLossPlan's and RowLossBackwardPlan's kernels on the row base (core/row_reduce.cuh): a
// sample's sums over its row (one group reduction), its loss from them, and the backward's
// per-element gradients; mean / sum: rows::block_sum of the per-sample losses.
#include <algorithm>
#include <cmath>

#include "baracuda/ops/row_loss.hpp"
#include "core/launch.cuh"
#include "core/pnorm.cuh"
#include "core/row_reduce.cuh"
#include "ops/loss/loss_geometry.hpp"

namespace baracuda::loss {

namespace {

constexpr int kMlsm = static_cast<int>(RowLossKind::kMultilabelSoftMargin);
constexpr int kCos = static_cast<int>(RowLossKind::kCosineEmbedding);
constexpr int kNoneR = static_cast<int>(LossReduction::kNone);
constexpr int kMeanR = static_cast<int>(LossReduction::kMean);
constexpr double kCosEps = 1e-12;  // aten's cosine_embedding_loss EPSILON

template <class T, class C>
__device__ __forceinline__ C at(const RowLossGeom& g, int v, int64_t s, int64_t i) {
  return static_cast<C>(to_acc(static_cast<const T*>(g.p[v])[s * g.os[v] + i * g.s[v]]));
}
template <class T, class C>
__device__ __forceinline__ void put(const RowLossGeom& g, int v, int64_t s, int64_t i, C x) {
  if (g.p[v]) static_cast<T*>(g.p[v])[s * g.os[v] + i * g.s[v]] = from_c<T>(static_cast<acc_t<T>>(x), false);
}

template <class C>
__device__ __forceinline__ C softplus(C x) {
  return (x > C(0) ? x : C(0)) + log1p(exp(-fabs(x)));
}

// A sample's three sums: multilabel a = Σ w (y softplus(-x) + (1 - y) softplus(x)); cosine a =
// Σ x x2, b = Σ x², c = Σ x2²; triplet the p-norm accumulations of x - x2 + eps, x - x3 + eps and
// (swap) x2 - x3 + eps.
template <class C>
struct Acc3 {
  C a, b, c;
};
struct Acc3Op {
  template <class C>
  __device__ __forceinline__ Acc3<C> operator()(const Acc3<C>& x, const Acc3<C>& y) const {
    return {x.a + y.a, x.b + y.b, x.c + y.c};
  }
};

// One element's contribution to the three sums.
template <class C>
__device__ __forceinline__ void add_element(const RowLossGeom& g, Acc3<C>& acc, C x, C x2, C x3, C y, C w, int pk, C p, C eps) {
  if (g.op == kMlsm) {
    acc.a += w * (y * softplus(-x) + (C(1) - y) * softplus(x));
  } else if (g.op == kCos) {
    acc.a += x * x2, acc.b += x * x, acc.c += x2 * x2;
  } else {
    acc.a = pnorm::accumulate(pk, acc.a, x - x2 + eps, p);
    acc.b = pnorm::accumulate(pk, acc.b, x - x3 + eps, p);
    if (g.swap) acc.c = pnorm::accumulate(pk, acc.c, x2 - x3 + eps, p);
  }
}

// V > 1: every row view the op reads is unit-stride and 16-byte aligned: V-element pieces.
template <class T, int V, class Grp, class Red>
__device__ __forceinline__ Acc3<acc_t<T>> row_sums(const RowLossGeom& g, int64_t s, const Grp& grp, Red&& red) {
  using C = acc_t<T>;
  Acc3<C> acc{C(0), C(0), C(0)};
  const int pk = pnorm::kind(g.p_norm);
  const C p = static_cast<C>(g.p_norm), eps = static_cast<C>(g.eps);
  const bool mlsm = g.op == kMlsm, cos = g.op == kCos;
  if constexpr (V > 1) {
    auto row = [&](int v) { return static_cast<const T*>(g.p[v]) + s * g.os[v]; };
    for (int64_t i = static_cast<int64_t>(grp.tid) * V; i < g.D; i += static_cast<int64_t>(Grp::size) * V) {
      C x[V], x2[V], x3[V], y[V];
      rows::load_piece<T, V, C>(row(kRA) + i, x);
      if (mlsm) rows::load_piece<T, V, C>(row(kRT) + i, y);
      else rows::load_piece<T, V, C>(row(kRB) + i, x2);
      if (!mlsm && !cos) rows::load_piece<T, V, C>(row(kRC) + i, x3);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C w = mlsm && g.w ? static_cast<C>(to_acc(static_cast<const T*>(g.w)[(i + e) * g.ws])) : C(1);
        add_element(g, acc, x[e], mlsm ? C(0) : x2[e], mlsm || cos ? C(0) : x3[e], mlsm ? y[e] : C(0), w, pk, p, eps);
      }
    }
  } else {
    for (int64_t i = grp.tid; i < g.D; i += Grp::size) {
      const C x = at<T, C>(g, kRA, s, i);
      const C x2 = mlsm ? C(0) : at<T, C>(g, kRB, s, i), x3 = mlsm || cos ? C(0) : at<T, C>(g, kRC, s, i);
      const C y = mlsm ? at<T, C>(g, kRT, s, i) : C(0);
      const C w = mlsm && g.w ? static_cast<C>(to_acc(static_cast<const T*>(g.w)[i * g.ws])) : C(1);
      add_element(g, acc, x, x2, x3, y, w, pk, p, eps);
    }
  }
  return red(acc, Acc3Op{});
}

// What a sample's loss and gradient need of its sums: the loss l, d l / d (the clamped quantity)
// (cosine: d l / d cos; triplet: d l / d (margin + d_ap - d_an)), and the intermediates.
template <class C>
struct Derived {
  C l = 0, dl = 0, cos = 0, denom = 1, m1 = 1, m2 = 1, dap = 0, dan = 0, dpn = 0;
};

template <class T>
__device__ __forceinline__ Derived<acc_t<T>> derive(const RowLossGeom& g, int64_t s, const Acc3<acc_t<T>>& a) {
  using C = acc_t<T>;
  Derived<C> d;
  if (g.op == kMlsm) {
    d.l = a.a / static_cast<C>(g.D);
  } else if (g.op == kCos) {
    d.m1 = a.b + static_cast<C>(kCosEps), d.m2 = a.c + static_cast<C>(kCosEps);
    d.denom = sqrt(d.m1 * d.m2);
    d.cos = a.a / d.denom;
    const C y = at<T, C>(g, kRT, s, 0), neg = d.cos - static_cast<C>(g.margin);
    d.l = y == C(1) ? C(1) - d.cos : y == C(-1) ? (neg < C(0) ? C(0) : neg) : C(0);  // (clamp_min keeps a NaN)
    d.dl = y == C(1) ? C(-1) : (y == C(-1) && neg >= C(0)) ? C(1) : C(0);
  } else {
    const int pk = pnorm::kind(g.p_norm);
    const C p = static_cast<C>(g.p_norm);
    d.dap = pnorm::norm_of(pk, a.a, p), d.dan = pnorm::norm_of(pk, a.b, p), d.dpn = g.swap ? pnorm::norm_of(pk, a.c, p) : C(0);
    C dn = d.dan;
    if (g.swap) dn = d.dan != d.dan ? d.dan : d.dpn != d.dpn ? d.dpn : (d.dan < d.dpn ? d.dan : d.dpn);  // torch.min keeps a NaN
    const C v = static_cast<C>(g.margin) + d.dap - dn;
    d.l = v < C(0) ? C(0) : v;
    d.dl = v >= C(0) ? C(1) : C(0);
  }
  return d;
}

template <class T, int V, class Grp, class Red>
__device__ __forceinline__ void forward_sample(const RowLossGeom& g, int64_t s, const Grp& grp, Red&& red) {
  using C = acc_t<T>;
  const Acc3<C> a = row_sums<T, V>(g, s, grp, red);
  if (grp.tid != 0) return;
  const C l = derive<T>(g, s, a).l;
  if (g.reduction == kNoneR) put<T, C>(g, kRLoss, s, 0, l);
  else static_cast<C*>(g.partials)[s] = l;
}

template <class T, int V, class Grp, class Red>
__device__ __forceinline__ void backward_sample(const RowLossGeom& g, int64_t s, const Grp& grp, Red&& red) {
  using C = acc_t<T>;
  C gr = g.reduction == kNoneR ? at<T, C>(g, kRDloss, s, 0) : static_cast<C>(to_acc(static_cast<const T*>(g.p[kRDloss])[0]));
  if (g.reduction == kMeanR) gr /= static_cast<C>(g.N);
  if (g.op == kMlsm) {  // dx_c = g w_c (σ(x_c) - y_c) / D; dy_c = -g w_c x_c / D
    const C k = gr / static_cast<C>(g.D);
    for (int64_t i = grp.tid; i < g.D; i += Grp::size) {
      const C x = at<T, C>(g, kRA, s, i), y = at<T, C>(g, kRT, s, i);
      const C w = g.w ? static_cast<C>(to_acc(static_cast<const T*>(g.w)[i * g.ws])) : C(1);
      put<T, C>(g, kRDa, s, i, k * w * (C(1) / (C(1) + exp(-x)) - y));
      put<T, C>(g, kRDt, s, i, -k * w * x);
    }
    return;
  }
  const Acc3<C> a = row_sums<T, V>(g, s, grp, red);
  const Derived<C> d = derive<T>(g, s, a);
  const C k = gr * d.dl;
  if (g.op == kCos) {  // d cos / d x = x2 / denom - cos x / m1, and symmetrically
    for (int64_t i = grp.tid; i < g.D; i += Grp::size) {
      const C x = at<T, C>(g, kRA, s, i), x2 = at<T, C>(g, kRB, s, i);
      put<T, C>(g, kRDa, s, i, k * (x2 / d.denom - d.cos * x / d.m1));
      put<T, C>(g, kRDb, s, i, k * (x / d.denom - d.cos * x2 / d.m2));
    }
    return;
  }
  // triplet: the negative distance's share (torch.min splits a tie in half)
  const int pk = pnorm::kind(g.p_norm);
  const C p = static_cast<C>(g.p_norm), eps = static_cast<C>(g.eps);
  const C an = !g.swap ? C(1) : d.dan < d.dpn ? C(1) : d.dan == d.dpn ? C(0.5) : C(0), pn = g.swap ? C(1) - an : C(0);
  for (int64_t i = grp.tid; i < g.D; i += Grp::size) {
    const C x = at<T, C>(g, kRA, s, i), x2 = at<T, C>(g, kRB, s, i), x3 = at<T, C>(g, kRC, s, i);
    const C gap = pnorm::derivative(pk, x - x2 + eps, d.dap, p, C(1)), gan = pnorm::derivative(pk, x - x3 + eps, d.dan, p, C(1));
    const C gpn = g.swap ? pnorm::derivative(pk, x2 - x3 + eps, d.dpn, p, C(1)) : C(0);
    put<T, C>(g, kRDa, s, i, k * (gap - an * gan));
    put<T, C>(g, kRDb, s, i, k * (-gap - pn * gpn));
    put<T, C>(g, kRDc, s, i, k * (an * gan + pn * gpn));
  }
}

template <class T, bool Bwd, int V>
__device__ __forceinline__ void run_sample(const RowLossGeom& g, int64_t s, const auto& grp, auto&& red) {
  if constexpr (Bwd) backward_sample<T, V>(g, s, grp, red);
  else forward_sample<T, V>(g, s, grp, red);
}

template <class T, bool Bwd, int V>
__global__ void __launch_bounds__(32 * kRowWarps) row_warp_kernel(const RowLossGeom g) {
  rows::warp_lines<kRowWarps>(g.N, [&](int64_t s, const auto& grp, auto&& red) { run_sample<T, Bwd, V>(g, s, grp, red); });
}

template <class T, bool Bwd, int V>
__global__ void __launch_bounds__(kThreads, 4) row_block_kernel(const RowLossGeom g) {
  rows::block_lines<kThreads, sizeof(Acc3<double>)>(g.N, [&](int64_t s, const auto& grp, auto&& red) { run_sample<T, Bwd, V>(g, s, grp, red); });
}

template <class T, bool Bwd>
__global__ void __launch_bounds__(kThreads) row_thread_kernel(const RowLossGeom g) {
  rows::thread_lines<kThreads>(g.N, [&](int64_t s, const auto& grp, auto&& red) { run_sample<T, Bwd, 1>(g, s, grp, red); });
}

// 16-byte pieces: every row view the sums read unit-stride, 16-byte aligned at every sample's start.
bool vectorizable(const RowLossGeom& g, int64_t es) {
  if (g.D % (16 / es) != 0) return false;
  const bool mlsm = g.op == kMlsm, cos = g.op == kCos;
  for (int v : {static_cast<int>(kRA), mlsm ? static_cast<int>(kRT) : static_cast<int>(kRB), mlsm || cos ? -1 : static_cast<int>(kRC)}) {
    if (v < 0) continue;
    if (!g.p[v] || g.s[v] != 1 || reinterpret_cast<uintptr_t>(g.p[v]) % 16 != 0) return false;
    if (g.N > 1 && (g.os[v] * es) % 16 != 0) return false;
  }
  return true;
}

// mean / sum: the per-sample losses in a fixed order.
template <class T>
__global__ void __launch_bounds__(kFinishThreads) row_finish_kernel(const RowLossGeom g) {
  using C = acc_t<T>;
  const C* part = static_cast<const C*>(g.partials);
  const C total = rows::block_sum<kFinishThreads>(g.N, C(0), [&](int64_t s) { return part[s]; });
  if (threadIdx.x == 0)
    static_cast<T*>(g.scalar_loss)[0] = from_c<T>(static_cast<acc_t<T>>(g.reduction == kMeanR ? total / static_cast<C>(g.N) : total), false);
}

template <class T, bool Bwd>
cudaError_t launch(const RowLossGeom& g, cudaStream_t stream) {
  constexpr int VW = 16 / static_cast<int>(sizeof(T));
  const bool vec = vectorizable(g, sizeof(T));
  if (g.N > 0 && (g.D > 0 || !Bwd)) {
    if (g.path == kColumns) {
      const int64_t blocks = std::min<int64_t>((g.N + kThreads - 1) / kThreads, kMaxGrid);
      BARACUDA_CUDA_TRY(launch_kernel(row_thread_kernel<T, Bwd>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g));
    } else if (g.path == kWarpRows) {
      const int64_t blocks = std::min<int64_t>((g.N + kRowWarps - 1) / kRowWarps, kMaxGrid);
      auto k = vec ? row_warp_kernel<T, Bwd, VW> : row_warp_kernel<T, Bwd, 1>;
      BARACUDA_CUDA_TRY(launch_kernel(k, dim3(static_cast<unsigned>(blocks)), dim3(32 * kRowWarps), 0, stream, g));
    } else {
      const int64_t blocks = std::min<int64_t>(g.N, kMaxGrid);
      auto k = vec ? row_block_kernel<T, Bwd, VW> : row_block_kernel<T, Bwd, 1>;
      BARACUDA_CUDA_TRY(launch_kernel(k, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g));
    }
  }
  if (!Bwd && g.reduction != kNoneR)
    BARACUDA_CUDA_TRY(launch_kernel(row_finish_kernel<T>, dim3(1), dim3(kFinishThreads), 0, stream, g));
  return cudaSuccess;
}

}  // namespace

RowLossLaunchFn find_row_loss(DType x, bool backward) {
  return pick_float_type<RowLossLaunchFn>(x, [&]<class T>() -> RowLossLaunchFn { return backward ? &launch<T, true> : &launch<T, false>; });
}

}  // namespace baracuda::loss
