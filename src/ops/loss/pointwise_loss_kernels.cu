// PointwiseLossPlan's and PointwiseLossBackwardPlan's kernels: one element function per op (a
// uniform switch), a grid-stride pass over the elements (flat or by axis offsets), the reduction
// in per-block partials added in order by a one-block finish.
#include <cmath>
#include <type_traits>

#include "baracuda/ops/loss.hpp"
#include "core/launch.cuh"
#include "core/row_reduce.cuh"
#include "ops/loss/loss_geometry.hpp"

namespace baracuda::loss {

namespace {

using K = PointwiseLossKind;
constexpr int kNone = static_cast<int>(LossReduction::kNone);
constexpr double kLog2Pi = 1.8378770664093453;  // log(2 pi)

template <class C>
struct Vals {
  C x = 0, x2 = 0, y = 0, v = 1, w = 1, pw = 1;
};

template <class C> __device__ __forceinline__ C ex(C v) { if constexpr (std::is_same_v<C, double>) return exp(v); else return expf(v); }
template <class C> __device__ __forceinline__ C l1p(C v) { if constexpr (std::is_same_v<C, double>) return log1p(v); else return log1pf(v); }
template <class C> __device__ __forceinline__ C sgn(C v) { return v > C(0) ? C(1) : v < C(0) ? C(-1) : v; }  // sign(0) = 0, NaN stays
template <class C> __device__ __forceinline__ C sigm(C v) { return C(1) / (C(1) + ex(-v)); }
// max(v, lo) keeping a NaN v (std::max / clamp_min as PyTorch; fmax would return lo)
template <class C> __device__ __forceinline__ C max_nan(C v, C lo) { return v < lo ? lo : v; }
// softplus(-x) = log(1 + exp(-x)) without overflow: log1p(exp(-|x|)) + max(-x, 0)
template <class C> __device__ __forceinline__ C softplus_neg(C x) { return l1p(ex(-fabs(x))) + fmax(-x, C(0)); }

template <int Op, class C>
__device__ __forceinline__ C elem_loss(const PwGeom& g, const Vals<C>& a) {
  const C d = a.x - a.y;
  switch (static_cast<K>(Op)) {
    case K::kMse: return d * d;
    case K::kL1: return fabs(d);
    case K::kSmoothL1: {
      const C z = fabs(d), b = static_cast<C>(g.beta);
      if (g.beta == 0) return z;
      return z < b ? C(0.5) * z * z / b : z - C(0.5) * b;
    }
    case K::kHuber: {
      const C z = fabs(d), t = static_cast<C>(g.delta);
      return z < t ? C(0.5) * z * z : t * (z - C(0.5) * t);
    }
    case K::kBce: return -a.w * (a.y * max_nan(rows::row_log(a.x), C(-100)) + (C(1) - a.y) * max_nan(l1p(-a.x), C(-100)));
    case K::kBceWithLogits: return a.w * ((C(1) - a.y) * a.x + (C(1) + (a.pw - C(1)) * a.y) * softplus_neg(a.x));
    case K::kKlDiv: {
      if (g.log_target) return ex(a.y) * (a.y - a.x);
      const C xlogy = a.y == C(0) ? C(0) : a.y * rows::row_log(a.y);  // xlogy(0, 0) = 0; y < 0: NaN
      return xlogy - a.y * a.x;
    }
    case K::kPoissonNll: {
      C l = g.log_input ? ex(a.x) - a.y * a.x : a.x - a.y * rows::row_log(a.x + static_cast<C>(g.eps));
      if (g.full && a.y > C(1)) l += a.y * rows::row_log(a.y) - a.y + C(0.5) * rows::row_log(C(2 * M_PI) * a.y);
      return l;
    }
    case K::kGaussianNll: {
      const C v = max_nan(a.v, static_cast<C>(g.eps));
      return C(0.5) * (rows::row_log(v) + d * d / v) + (g.full ? C(0.5 * kLog2Pi) : C(0));
    }
    case K::kSoftMargin: return softplus_neg(a.y * a.x);
    case K::kHingeEmbedding: {
      const C m = static_cast<C>(g.margin);
      return (a.y != C(1) ? max_nan(m - a.x, C(0)) : C(0)) + (a.y != C(-1) ? a.x : C(0));
    }
    case K::kMarginRanking: return max_nan(-a.y * (a.x - a.x2) + static_cast<C>(g.margin), C(0));
  }
  return C(0);
}

// d l / d (x, x2, y, var) of one element (the clamps pass the gradient at equality, as clamp_min's).
template <class C>
struct Grads {
  C dx = 0, dx2 = 0, dy = 0, dv = 0;
};
template <int Op, class C>
__device__ __forceinline__ Grads<C> elem_grad(const PwGeom& g, const Vals<C>& a) {
  const C d = a.x - a.y;
  Grads<C> r;
  switch (static_cast<K>(Op)) {
    case K::kMse: r.dx = C(2) * d, r.dy = -r.dx; break;
    case K::kL1: r.dx = sgn(d), r.dy = -r.dx; break;
    case K::kSmoothL1: {
      const C b = static_cast<C>(g.beta);
      r.dx = g.beta == 0 ? sgn(d) : d < -b ? C(-1) : d > b ? C(1) : d / b;
      r.dy = -r.dx;
      break;
    }
    case K::kHuber: {
      const C t = static_cast<C>(g.delta);
      r.dx = d < -t ? -t : d > t ? t : d;
      r.dy = -r.dx;
      break;
    }
    case K::kBce: r.dx = a.w * (a.x - a.y) / fmax((C(1) - a.x) * a.x, C(1e-12)); break;
    case K::kBceWithLogits: {
      const C k = C(1) + (a.pw - C(1)) * a.y;
      r.dx = a.w * (k * sigm(a.x) - a.pw * a.y);
      r.dy = a.w * ((a.pw - C(1)) * softplus_neg(a.x) - a.x);
      break;
    }
    case K::kKlDiv:
      if (g.log_target) {
        const C e = ex(a.y);
        r.dx = -e, r.dy = e * (a.y - a.x + C(1));
      } else {
        r.dx = -a.y, r.dy = a.y > C(0) ? rows::row_log(a.y) + C(1) - a.x : a.y == C(0) ? C(0) : C(NAN);  // (y = 0: 0, see loss.hpp)
      }
      break;
    case K::kPoissonNll:
      if (g.log_input) {
        r.dx = ex(a.x) - a.y, r.dy = -a.x;
      } else {
        const C xe = a.x + static_cast<C>(g.eps);
        r.dx = C(1) - a.y / xe, r.dy = -rows::row_log(xe);
      }
      if (g.full && a.y > C(1)) r.dy += rows::row_log(a.y) + C(0.5) / a.y;
      break;
    case K::kGaussianNll: {
      const C v = max_nan(a.v, static_cast<C>(g.eps));
      r.dx = d / v, r.dy = -r.dx, r.dv = C(0.5) * (C(1) / v - d * d / (v * v));
      break;
    }
    case K::kSoftMargin: {
      const C s = sigm(-a.y * a.x);
      r.dx = -a.y * s, r.dy = -a.x * s;
      break;
    }
    case K::kHingeEmbedding: {
      const C m = static_cast<C>(g.margin);
      r.dx = (a.y != C(1) && m - a.x >= C(0) ? C(-1) : C(0)) + (a.y != C(-1) ? C(1) : C(0));
      break;
    }
    case K::kMarginRanking: {
      const bool on = -a.y * (a.x - a.x2) + static_cast<C>(g.margin) >= C(0);
      r.dx = on ? -a.y : C(0), r.dx2 = on ? a.y : C(0), r.dy = on ? -(a.x - a.x2) : C(0);
      break;
    }
  }
  return r;
}

// f.operator()<op>() for the run-time op: each kernel's element loop compiled once per op.
template <class F>
__device__ __forceinline__ void with_op(int op, F&& f) {
  switch (static_cast<K>(op)) {
#define BARACUDA_PW_CASE(k) \
  case K::k: f.template operator()<static_cast<int>(K::k)>(); break;
    BARACUDA_PW_CASE(kMse) BARACUDA_PW_CASE(kL1) BARACUDA_PW_CASE(kSmoothL1) BARACUDA_PW_CASE(kHuber) BARACUDA_PW_CASE(kBce)
    BARACUDA_PW_CASE(kBceWithLogits) BARACUDA_PW_CASE(kKlDiv) BARACUDA_PW_CASE(kPoissonNll) BARACUDA_PW_CASE(kGaussianNll)
    BARACUDA_PW_CASE(kSoftMargin) BARACUDA_PW_CASE(kHingeEmbedding) BARACUDA_PW_CASE(kMarginRanking)
#undef BARACUDA_PW_CASE
  }
}

struct Offs {
  int64_t v[kPwViews];
};
__device__ __forceinline__ void offsets_of(const PwGeom& g, int64_t i, Offs& o) {
  if (g.flat) {
#pragma unroll
    for (int v = 0; v < kPwViews; ++v) o.v[v] = i;
    return;
  }
  rows::split_offsets<kPwViews>(i, g.rank, g.size, g.st, o.v);
}

template <class T, class C>
__device__ __forceinline__ C read(const PwGeom& g, int v, const Offs& o, C absent) {
  return g.in[v] ? static_cast<C>(to_acc(static_cast<const T*>(g.in[v])[o.v[v]])) : absent;
}
template <class T, class C>
__device__ __forceinline__ void write(const PwGeom& g, int v, const Offs& o, C val) {
  if (g.out[v]) static_cast<T*>(g.out[v])[o.v[v]] = from_c<T>(static_cast<acc_t<T>>(val), false);
}

template <class T, class C>
__device__ __forceinline__ Vals<C> vals_at(const PwGeom& g, const Offs& o) {
  Vals<C> a;
  a.x = read<T, C>(g, kPwIn, o, C(0));
  a.x2 = read<T, C>(g, kPwIn2, o, C(0));
  a.y = read<T, C>(g, kPwTgt, o, C(0));
  a.v = read<T, C>(g, kPwVar, o, C(1));
  a.w = read<T, C>(g, kPwW, o, C(1));
  a.pw = read<T, C>(g, kPwPw, o, C(1));
  return a;
}

// The vector path (g.vec: flat, every view 16-byte aligned): V = 16 / sizeof(T) elements from
// i0 of every view present, one 16-byte load each.
template <class T, int V, class C>
__device__ __forceinline__ void vals_vec(const PwGeom& g, int64_t i0, Vals<C> (&a)[V]) {
  auto get = [&](int v, C Vals<C>::*m) {
    if (!g.in[v]) return;
    acc_t<T> w[V];
    load_acc_vec<T, V>(static_cast<const T*>(g.in[v]) + i0, w);
#pragma unroll
    for (int e = 0; e < V; ++e) a[e].*m = static_cast<C>(w[e]);
  };
  get(kPwIn, &Vals<C>::x), get(kPwIn2, &Vals<C>::x2), get(kPwTgt, &Vals<C>::y), get(kPwVar, &Vals<C>::v), get(kPwW, &Vals<C>::w),
      get(kPwPw, &Vals<C>::pw);
}
template <class T, int V, class C>
__device__ __forceinline__ void write_vec(const PwGeom& g, int v, int64_t i0, const C (&val)[V]) {
  if (!g.out[v]) return;
  acc_t<T> w[V];
#pragma unroll
  for (int e = 0; e < V; ++e) w[e] = static_cast<acc_t<T>>(val[e]);
  store_global16<T, V>(static_cast<T*>(g.out[v]) + i0, w);
}

// This thread's elements of the forward: written (none) or added in order (returned).
template <class T, int Op>
__device__ __forceinline__ acc_t<T> forward_elems(const PwGeom& g) {
  using C = acc_t<T>;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x, step = static_cast<int64_t>(gridDim.x) * kThreads;
  const bool none = g.reduction == kNone;
  C acc = C(0);
  int64_t tail = 0;
  if (g.vec) {
    const int64_t nv = g.n / V;
    for (int64_t k = first; k < nv; k += step) {
      Vals<C> a[V];
      vals_vec<T, V, C>(g, k * V, a);
      C l[V];
#pragma unroll
      for (int e = 0; e < V; ++e) l[e] = elem_loss<Op, C>(g, a[e]);
      if (none) {
        write_vec<T, V, C>(g, kPwOut, k * V, l);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) acc += l[e];
      }
    }
    tail = nv * V;
  }
  for (int64_t i = tail + first; i < g.n; i += step) {
    Offs o;
    offsets_of(g, i, o);
    const C l = elem_loss<Op, C>(g, vals_at<T, C>(g, o));
    if (none) write<T, C>(g, kPwOut, o, l);
    else acc += l;
  }
  return acc;
}

template <class T>
__global__ void __launch_bounds__(kThreads) pw_forward_kernel(const PwGeom g) {
  using C = acc_t<T>;
  __shared__ C slots[kThreads / 32];
  __shared__ C mine[2];
  C acc = C(0);
  with_op(g.op, [&]<int Op>() { acc = forward_elems<T, Op>(g); });
  if (g.reduction == kNone) return;
  const int tid = static_cast<int>(threadIdx.x);
  const rows::ClusterGroup<kThreads> grp{tid, 0, 1};
  acc = grp.reduce(acc, rows::SumOp{}, slots, mine);
  if (tid == 0) static_cast<C*>(g.partials)[blockIdx.x] = acc;
}

template <class T>
__global__ void __launch_bounds__(kFinishThreads) pw_finish_kernel(const PwGeom g) {
  using C = acc_t<T>;
  const C* part = static_cast<const C*>(g.partials);
  const C acc = rows::block_sum<kFinishThreads>(g.blocks, C(0), [&](int64_t b) { return part[b]; });
  if (threadIdx.x == 0) static_cast<T*>(g.scalar_loss)[0] = from_c<T>(static_cast<acc_t<T>>(acc / static_cast<C>(g.div)), false);
}

template <class T, int Op>
__device__ __forceinline__ void backward_elems(const PwGeom& g) {
  using C = acc_t<T>;
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x, step = static_cast<int64_t>(gridDim.x) * kThreads;
  const bool none = g.reduction == kNone;
  const C div = static_cast<C>(g.div);
  const C g0 = none ? C(0) : static_cast<C>(to_acc(static_cast<const T*>(g.in[kPwDl])[0])) / div;
  int64_t tail = 0;
  if (g.vec) {
    const int64_t nv = g.n / V;
    for (int64_t k = first; k < nv; k += step) {
      Vals<C> a[V];
      vals_vec<T, V, C>(g, k * V, a);
      C gr[V];
      if (none) {
        acc_t<T> w[V];
        load_acc_vec<T, V>(static_cast<const T*>(g.in[kPwDl]) + k * V, w);
#pragma unroll
        for (int e = 0; e < V; ++e) gr[e] = static_cast<C>(w[e]) / div;
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) gr[e] = g0;
      }
      C dx[V], dx2[V], dy[V], dv[V];
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const Grads<C> r = elem_grad<Op, C>(g, a[e]);
        dx[e] = gr[e] * r.dx, dx2[e] = gr[e] * r.dx2, dy[e] = gr[e] * r.dy, dv[e] = gr[e] * r.dv;
      }
      write_vec<T, V, C>(g, kPwOut, k * V, dx);
      write_vec<T, V, C>(g, kPwOut2, k * V, dx2);
      write_vec<T, V, C>(g, kPwDt, k * V, dy);
      write_vec<T, V, C>(g, kPwDv, k * V, dv);
    }
    tail = nv * V;
  }
  for (int64_t i = tail + first; i < g.n; i += step) {
    Offs o;
    offsets_of(g, i, o);
    const C gr = none ? read<T, C>(g, kPwDl, o, C(0)) / div : g0;
    const Grads<C> r = elem_grad<Op, C>(g, vals_at<T, C>(g, o));
    write<T, C>(g, kPwOut, o, gr * r.dx);
    write<T, C>(g, kPwOut2, o, gr * r.dx2);
    write<T, C>(g, kPwDt, o, gr * r.dy);
    write<T, C>(g, kPwDv, o, gr * r.dv);
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) pw_backward_kernel(const PwGeom g) {
  with_op(g.op, [&]<int Op>() { backward_elems<T, Op>(g); });
}

template <class T, bool Bwd>
cudaError_t launch(const PwGeom& g, cudaStream_t stream) {
  if constexpr (Bwd) {
    if (g.n == 0) return cudaSuccess;
    const int64_t blocks = std::min<int64_t>((g.n + kThreads - 1) / kThreads, kMaxGrid);
    return launch_kernel(pw_backward_kernel<T>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g);
  } else {
    if (g.reduction == kNone) {
      if (g.n == 0) return cudaSuccess;
      const int64_t blocks = std::min<int64_t>((g.n + kThreads - 1) / kThreads, kMaxGrid);
      return launch_kernel(pw_forward_kernel<T>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g);
    }
    if (g.n > 0) BARACUDA_CUDA_TRY(launch_kernel(pw_forward_kernel<T>, dim3(static_cast<unsigned>(g.blocks)), dim3(kThreads), 0, stream, g));
    return launch_kernel(pw_finish_kernel<T>, dim3(1), dim3(kFinishThreads), 0, stream, g);
  }
}

}  // namespace

PwLaunchFn find_pointwise_loss(DType x, bool backward) {
  auto pick = [&]<class T>() -> PwLaunchFn { return backward ? &launch<T, true> : &launch<T, false>; };
  return pick_float_type<PwLaunchFn>(x, pick);
}

}  // namespace baracuda::loss
