// CrossEntropyPlan's and CrossEntropyBackwardPlan's kernels on the row base (core/row_reduce.cuh):
// one sample body for a warp, a block or a lone thread per sample (the group's reduce), and the
// fixed-order sum of the per-sample losses for reduction mean / sum.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "baracuda/ops/loss.hpp"
#include "core/launch.cuh"
#include "core/row_reduce.cuh"
#include "ops/loss/loss_geometry.hpp"

namespace baracuda::loss {

namespace {

constexpr int kNll = static_cast<int>(ClassLossKind::kNllLoss);
constexpr int kNone = static_cast<int>(LossReduction::kNone);
constexpr int kMean = static_cast<int>(LossReduction::kMean);

struct Off {
  int64_t v[kViews];
};

__device__ __forceinline__ void sample_offsets(const LossGeom& g, int64_t s, Off& o) {
  rows::split_offsets<kViews>(s, g.ko, g.osize, g.os, o.v);
}

// exp(v - lse): f32 as one FFMA and MUFU ex2 (results below 2^-126 flushed to 0), f64 exact.
__device__ __forceinline__ float exp_minus(float v, float lse) {
  return rows::ex2_ftz(fmaf(v, 1.4426950408889634f, -lse * 1.4426950408889634f));
}
__device__ __forceinline__ double exp_minus(double v, double lse) { return exp(v - lse); }

// A sample's (max, Σ exp), x_t (picked from the stream by the thread that loads it: no dependent
// load after the row) and the two weighted sums of label smoothing / a probability target:
// a = Σ q_c · x_c, b = Σ q_c (q_c = w_c, or w_c · t'_c).
template <class C>
struct FwdAcc {
  rows::MaxSum<C> ms;
  C a, b;
  C xt;  // x at the target class: 0 but on the thread whose piece holds it
};
struct FwdOp {
  template <class C>
  __device__ __forceinline__ FwdAcc<C> operator()(const FwdAcc<C>& x, const FwdAcc<C>& y) const {
    return {rows::combine(x.ms, y.ms), x.a + y.a, x.b + y.b, x.xt + y.xt};
  }
};

template <class T, class C>
__device__ __forceinline__ C weight_at(const LossGeom& g, int64_t c) {
  return g.w ? static_cast<C>(to_acc(static_cast<const T*>(g.w)[c * g.ws])) : C(1);
}

// q_c of the smoothing / probability sums for V classes from c: w_c, or w_c · t'_c.
template <class T, int V, class C>
__device__ __forceinline__ void q_piece(const LossGeom& g, const T* tp, int64_t st, int64_t c, C (&q)[V]) {
  C t[V];
  if (g.prob) {
    if constexpr (V > 1) rows::load_piece<T, V, C>(tp + c, t);
    else t[0] = static_cast<C>(to_acc(tp[c * st]));
  }
  const C keep = C(1) - static_cast<C>(g.smoothing), spread = static_cast<C>(g.smoothing) / static_cast<C>(g.C);
#pragma unroll
  for (int e = 0; e < V; ++e) q[e] = weight_at<T, C>(g, c + e) * (g.prob ? t[e] * keep + spread : C(1));
}

// The class index of a sample (i64 or i32).
__device__ __forceinline__ int64_t target_at(const LossGeom& g, const Off& o) {
  return g.index64 ? static_cast<const int64_t*>(g.in[kT])[o.v[kT]] : static_cast<int64_t>(static_cast<const int32_t*>(g.in[kT])[o.v[kT]]);
}

// One sample's forward: every thread of the group calls it (red: the group's reduce).
template <class T, int V, int U, class Grp, class Red>
__device__ __forceinline__ void forward_sample(const LossGeom& g, int64_t s, const Grp& grp, Red&& red) {
  using C = acc_t<T>;
  Off o;
  sample_offsets(g, s, o);
  const T* x = static_cast<const T*>(g.in[kX]) + o.v[kX];
  const T* tp = g.prob ? static_cast<const T*>(g.in[kT]) + o.v[kT] : nullptr;
  const int64_t sx = V > 1 ? 1 : g.cs[kX], st = V > 1 ? 1 : g.cs[kT];
  const bool nll = g.kind == kNll;
  // the smoothing / probability sums: plain Σx (b = C) without weights and probabilities
  const bool plain = !g.prob && !g.w && g.smoothing > 0, sums = g.prob || (g.smoothing > 0 && g.w);
  FwdAcc<C> acc{rows::max_sum_empty<C>(), C(0), C(0), C(0)};
  const int64_t t = g.prob ? -1 : target_at(g, o);  // (every thread: one broadcast load, in flight with the row's first)
  if (!nll) {
    // piece k: elements [kV, kV + V) (V > 1: one 16-byte vector; V = 1: element k at stride sx)
    auto use = [&](int64_t k, const C (&v)[V]) {
      rows::add_piece<C, V>(acc.ms, v);
      if (const int64_t r = t - k * V; r >= 0 && r < V) {
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (e == r) acc.xt = v[e];
      }
      if (plain) {
#pragma unroll
        for (int e = 0; e < V; ++e) acc.a += v[e];
      } else if (sums) {
        C q[V];
        q_piece<T, V, C>(g, tp, st, k * V, q);
#pragma unroll
        for (int e = 0; e < V; ++e) acc.a += q[e] * v[e], acc.b += q[e];
      }
    };
    constexpr int64_t S = Grp::size;
    const int64_t pieces = g.C / V;  // (V > 1: the vector path has C % V == 0)
    int64_t k = grp.tid;
    for (; k + (U - 1) * S < pieces; k += U * S) {  // U pieces in bounds: their loads in flight together
      C v[U][V];
#pragma unroll
      for (int u = 0; u < U; ++u) rows::load_piece<T, V, C>(x + (k + u * S) * V * sx, v[u]);
#pragma unroll
      for (int u = 0; u < U; ++u) use(k + u * S, v[u]);
    }
    for (; k < pieces; k += S) {
      C v[V];
      rows::load_piece<T, V, C>(x + k * V * sx, v);
      use(k, v);
    }
    acc = red(acc, FwdOp{});
    if (plain) acc.b = static_cast<C>(g.C);
  }
  if (grp.tid != 0) return;
  C xt = C(0), wt = C(0);
  bool kept = true, valid = true;
  if (!g.prob) {
    kept = t != g.ignore_index;
    valid = kept && t >= 0 && t < g.C;
    if (valid) xt = nll ? static_cast<C>(to_acc(x[t * g.cs[kX]])) : acc.xt, wt = weight_at<T, C>(g, t);
  }
  // (a +inf score: s = NaN, so lse and the loss are NaN, as log_softmax's row)
  const C lse = nll ? C(0) : acc.ms.m + rows::row_log(acc.ms.s);
  const C eps = static_cast<C>(g.smoothing);
  C l = C(0);
  if (g.prob) {
    l = acc.b * lse - acc.a;
    wt = C(1);
  } else if (!valid) {
    l = kept ? C(NAN) : C(0);  // out of range: never dereferenced (PyTorch: a device-side assert)
  } else {
    l = nll ? -wt * xt : (C(1) - eps) * wt * ((acc.ms.m - xt) + rows::row_log(acc.ms.s));  // (m - x_t first: no rounding to lse's ulp)
    if (!nll && g.smoothing > 0) l += eps / static_cast<C>(g.C) * (acc.b * lse - acc.a);
  }
  if (kept && g.z > 0) l += static_cast<C>(g.z) * lse * lse;
  if (g.out[kLse]) static_cast<C*>(g.out[kLse])[o.v[kLse]] = lse;
  if (g.reduction == kNone) {
    static_cast<T*>(g.out[kLoss])[o.v[kLoss]] = from_c<T>(static_cast<acc_t<T>>(l), false);
  } else {
    C* part = static_cast<C*>(g.partials);
    part[s] = l;
    part[(g.part_stride ? g.part_stride : g.samples) + s] = wt;
  }
}

// One sample's backward.
template <class T, int V, class Grp, class Red>
__device__ __forceinline__ void backward_sample(const LossGeom& g, int64_t s, const Grp& grp, Red&& red) {
  using C = acc_t<T>;
  Off o;
  sample_offsets(g, s, o);
  const T* x = static_cast<const T*>(g.in[kX]) + o.v[kX];
  const T* tp = g.prob ? static_cast<const T*>(g.in[kT]) + o.v[kT] : nullptr;
  T* dx = static_cast<T*>(g.out[kDx]) + o.v[kDx];
  const int64_t sx = V > 1 ? 1 : g.cs[kX], st = V > 1 ? 1 : g.cs[kT], sdx = V > 1 ? 1 : g.cs[kDx];
  const bool nll = g.kind == kNll;
  constexpr int64_t kStep = static_cast<int64_t>(Grp::size) * V;
  C gr = g.reduction == kNone ? static_cast<C>(to_acc(static_cast<const T*>(g.in[kDloss])[o.v[kDloss]]))
                              : static_cast<C>(to_acc(static_cast<const T*>(g.in[kDloss])[0]));
  if (g.reduction == kMean) gr /= static_cast<const C*>(g.tw_in)[0];
  int64_t t = -1;
  C wt = C(0);
  bool invalid = false;  // a target outside [0, C) that is not ignore_index: a NaN row
  if (!g.prob) {
    t = target_at(g, o);
    if (t == g.ignore_index) gr = C(0), t = -1;
    else if (t < 0 || t >= g.C) gr = C(NAN), t = -1, invalid = true;
    else wt = weight_at<T, C>(g, t);
  }
  auto write = [&](int64_t c, const C (&v)[V]) {
    if constexpr (V > 1) {
      acc_t<T> w[V];
#pragma unroll
      for (int e = 0; e < V; ++e) w[e] = static_cast<acc_t<T>>(v[e]);
      store_global16<T, V>(dx + c, w);
    } else {
      dx[c * sdx] = from_c<T>(static_cast<acc_t<T>>(v[0]), false);
    }
  };
  if (nll) {
    const C bad = invalid ? C(NAN) : C(0);  // 0 off the target (PyTorch), whatever dloss
    for (int64_t c = static_cast<int64_t>(grp.tid) * V; c < g.C; c += kStep) {
      C v[V];
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] = c + e == t ? -gr * wt : bad;
      write(c, v);
    }
    return;
  }
  // b = Σ q_c (W, or Σ w_c · t'_c) when label smoothing or a probability target needs it
  const C eps = static_cast<C>(g.smoothing), lse = static_cast<const C*>(g.in[kLse])[o.v[kLse]];
  C b = g.prob ? C(0) : static_cast<C>(g.C);  // W without weights
  if (g.prob || (g.smoothing > 0 && g.w)) {
    b = C(0);
    for (int64_t c = static_cast<int64_t>(grp.tid) * V; c < g.C; c += kStep) {
      C q[V];
      q_piece<T, V, C>(g, tp, st, c, q);
#pragma unroll
      for (int e = 0; e < V; ++e) b += q[e];
    }
    b = red(b, rows::SumOp{});
  }
  // dinput_c = gr · (coef · p_c - sub_c) - gr · (1 - ε) · w_t at c = t, with p_c = exp(x_c - lse),
  // coef = (1 - ε) w_t + ε / C · W + 2 z lse (class index) or Σ w t' + 2 z lse (probability),
  // sub_c = ε / C · w_c (class index) or w_c · t'_c (probability)
  const C keep = C(1) - eps, spread = eps / static_cast<C>(g.C);
  const C coef = gr * ((g.prob ? b : keep * wt + spread * b) + C(2) * static_cast<C>(g.z) * lse), hit = gr * keep * wt, sub = gr * spread;
  constexpr int U = 1;  // (2 pieces in flight measured slower on [8192, 128256] bf16, 2026-11-28)
  for (int64_t c0 = static_cast<int64_t>(grp.tid) * V; c0 < g.C; c0 += kStep * U) {
    C v[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u)  // the U pieces' loads in flight together
      if (c0 + u * kStep < g.C) rows::load_piece<T, V, C>(x + (c0 + u * kStep) * sx, v[u]);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + u * kStep;
      if (c >= g.C) break;
      C q[V];
      if (g.prob) q_piece<T, V, C>(g, tp, st, c, q);
      const int r = t >= c && t < c + V ? static_cast<int>(t - c) : -1;  // the target's place in the piece
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C p = exp_minus(v[u][e], lse);
        const C s_c = g.prob ? gr * q[e] : (g.w ? sub * weight_at<T, C>(g, c + e) : sub);
        v[u][e] = coef * p - s_c - (e == r ? hit : C(0));
      }
      write(c, v[u]);
    }
  }
}

template <class T, bool Bwd, int V>
__device__ __forceinline__ void run_sample(const LossGeom& g, int64_t s, const auto& grp, auto&& red) {
  if constexpr (Bwd) backward_sample<T, V>(g, s, grp, red);
  else forward_sample<T, V, (V > 1 ? 2 : 1)>(g, s, grp, red);
}

template <class T, bool Bwd, int V>
__global__ void __launch_bounds__(32 * kRowWarps) warp_rows_kernel(const LossGeom g) {
  rows::warp_lines<kRowWarps>(g.samples, [&](int64_t s, const auto& grp, auto&& red) { run_sample<T, Bwd, V>(g, s, grp, red); });
}

template <class T, bool Bwd, int V>
__global__ void __launch_bounds__(kThreads, 4) block_rows_kernel(const LossGeom g) {
  rows::block_lines<kThreads, sizeof(FwdAcc<double>)>(g.samples,
                                                      [&](int64_t s, const auto& grp, auto&& red) { run_sample<T, Bwd, V>(g, s, grp, red); });
}

template <class T, bool Bwd>
__global__ void __launch_bounds__(kThreads) columns_kernel(const LossGeom g) {
  rows::thread_lines<kThreads>(g.samples, [&](int64_t s, const auto& grp, auto&& red) { run_sample<T, Bwd, 1>(g, s, grp, red); });
}

template <class C>
struct Pair {
  C l, w;
  __device__ __forceinline__ Pair operator+(const Pair& o) const { return {l + o.l, w + o.w}; }
  __device__ __forceinline__ Pair& operator+=(const Pair& o) {
    l += o.l, w += o.w;
    return *this;
  }
};

// reduction mean / sum: the per-sample (loss, weight) pairs by rows::block_sum (sample order per
// thread, then a fixed tree); loss = Σ l (sum) or Σ l / Σ w (mean), total_weight = Σ w.
template <class T>
__global__ void __launch_bounds__(kFinishThreads) finish_kernel(const LossGeom g) {
  using C = acc_t<T>;
  const C* part = static_cast<const C*>(g.partials);
  const int64_t ws = g.part_stride ? g.part_stride : g.samples;
  const Pair<C> a = rows::block_sum<kFinishThreads>(g.samples, Pair<C>{C(0), C(0)}, [&](int64_t s) { return Pair<C>{part[s], part[ws + s]}; });
  if (threadIdx.x != 0) return;
  const C loss = g.reduction == kMean ? a.l / a.w : a.l;
  static_cast<T*>(g.scalar_loss)[0] = from_c<T>(static_cast<acc_t<T>>(loss), false);
  if (g.total_weight) static_cast<C*>(g.total_weight)[0] = a.w;
}

// kPrep (the fused linear cross entropy): the finish's Σ w without the losses, in its order (the
// same block_sum: the same bits as the finish's total_weight), and the ones.
template <class T>
__global__ void __launch_bounds__(kFinishThreads) prep_kernel(const LossGeom g) {
  using C = acc_t<T>;
  const C w = rows::block_sum<kFinishThreads>(g.total_weight ? g.samples : 0, C(0), [&](int64_t s) {
    Off o;
    sample_offsets(g, s, o);
    const int64_t t = target_at(g, o);
    return t != g.ignore_index && t >= 0 && t < g.C ? weight_at<T, C>(g, t) : C(0);
  });
  for (int64_t i = threadIdx.x; i < g.n_ones; i += kFinishThreads) static_cast<T*>(g.ones)[i] = from_c<T>(acc_t<T>(1), false);
  if (threadIdx.x != 0) return;
  if (g.total_weight) static_cast<C*>(g.total_weight)[0] = w;
  if (g.one) static_cast<T*>(g.one)[0] = from_c<T>(acc_t<T>(1), false);
}

template <class T, bool Bwd>
cudaError_t launch(const LossGeom& g, cudaStream_t stream) {
  constexpr int VW = 16 / static_cast<int>(sizeof(T));
  if (g.stages & LossGeom::kPrep) {
    if constexpr (!Bwd) BARACUDA_CUDA_TRY(launch_kernel(prep_kernel<T>, dim3(1), dim3(kFinishThreads), 0, stream, g));
    return cudaSuccess;
  }
  if ((g.stages & LossGeom::kSamples) && g.samples > 0 && g.C > 0) {
    const int64_t cap = kMaxGrid;
    if (g.path == kColumns) {
      const int64_t blocks = std::min<int64_t>((g.samples + kThreads - 1) / kThreads, cap);
      BARACUDA_CUDA_TRY(launch_kernel(columns_kernel<T, Bwd>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g));
    } else if (g.path == kWarpRows) {
      const int64_t blocks = std::min<int64_t>((g.samples + kRowWarps - 1) / kRowWarps, cap);
      auto k = g.vec ? warp_rows_kernel<T, Bwd, VW> : warp_rows_kernel<T, Bwd, 1>;
      BARACUDA_CUDA_TRY(launch_kernel(k, dim3(static_cast<unsigned>(blocks)), dim3(32 * kRowWarps), 0, stream, g));
    } else {
      const int64_t blocks = std::min<int64_t>(g.samples, cap);
      auto k = g.vec ? block_rows_kernel<T, Bwd, VW> : block_rows_kernel<T, Bwd, 1>;
      BARACUDA_CUDA_TRY(launch_kernel(k, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g));
    }
  }
  if (!Bwd && g.reduction != kNone && (g.stages & LossGeom::kFinish))
    BARACUDA_CUDA_TRY(launch_kernel(finish_kernel<T>, dim3(1), dim3(kFinishThreads), 0, stream, g));
  return cudaSuccess;
}

}  // namespace

// buf[i] *= *scale: grid-stride over each array in turn (one launch for all three), 16-byte
// pieces (the arrays are 16-byte aligned) and the tail element by element.
template <class T>
__global__ void __launch_bounds__(kThreads) scale_kernel(const ScaleGeom g) {
  using C = acc_t<T>;
  constexpr int W = 16 / static_cast<int>(sizeof(T));
  const C k = static_cast<C>(to_acc(static_cast<const T*>(g.scale)[0]));
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x, step = static_cast<int64_t>(gridDim.x) * kThreads;
#pragma unroll 1
  for (int b = 0; b < 3; ++b) {
    T* p = static_cast<T*>(g.buf[b]);
    if (!p) continue;
    const int64_t pieces = g.n[b] / W;
    for (int64_t i = first; i < pieces; i += step) {
      acc_t<T> v[W];
      load_acc_vec<T, W>(p + i * W, v);
#pragma unroll
      for (int e = 0; e < W; ++e) v[e] = static_cast<acc_t<T>>(static_cast<C>(v[e]) * k);
      store_global16<T, W>(p + i * W, v);
    }
    for (int64_t i = pieces * W + first; i < g.n[b]; i += step)
      p[i] = from_c<T>(static_cast<acc_t<T>>(static_cast<C>(to_acc(p[i])) * k), false);
  }
}

template <class T>
cudaError_t launch_scale(const ScaleGeom& g, cudaStream_t stream) {
  int64_t n = 0;
  for (int b = 0; b < 3; ++b)
    if (g.buf[b]) n = std::max(n, g.n[b]);
  if (n == 0) return cudaSuccess;
  const int64_t pieces = n / (16 / static_cast<int64_t>(sizeof(T))) + 1;
  const int64_t blocks = std::min<int64_t>((pieces + kThreads - 1) / kThreads, kMaxGrid);
  return launch_kernel(scale_kernel<T>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g);
}

ScaleLaunchFn find_scale_by(DType x) {
  return pick_float_type<ScaleLaunchFn>(x, [&]<class T>() -> ScaleLaunchFn { return &launch_scale<T>; });
}

LossLaunchFn find_cross_entropy(DType x, bool backward) {
  auto pick = [&]<class T>() -> LossLaunchFn { return backward ? &launch<T, true> : &launch<T, false>; };
  return pick_float_type<LossLaunchFn>(x, pick);
}

}  // namespace baracuda::loss
