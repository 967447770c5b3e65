// ReduceBackwardPlan's pass: dx from dy broadcast over the reduced axes
// (reduce.hpp's formulas).
#include "ops/reduce/reduce_policies.cuh"

namespace baracuda::red {

namespace {

// A warp per run of 32 x kRun elements along x's innermost axis (lane l:
// elements l, l + 32, ..: coalesced loads and stores); the run's offsets from
// one decomposition of its row index, then stepped. The kind and dy's dtype are
// dispatched once around the loop: f(d, xo, yo, io, mo, r) is the kind's
// formula for one element.
constexpr int kRun = 8;

template <class T, class D, class C, class F>
__device__ __forceinline__ void backward_elements(const ReduceBwdGeom& g, F f) {
  const int last = g.rank - 1, lane = threadIdx.x & 31;
  const int64_t inner = g.rank > 0 ? g.size[last] : 1;
  const int64_t per_row = (inner + 32 * kRun - 1) / (32 * kRun), runs = g.numel / inner * per_row;
  const int64_t sx = g.rank > 0 ? g.xs[last] : 0, sdx = g.rank > 0 ? g.dxs[last] : 0, sy = g.rank > 0 ? g.ys[last] : 0,
                sdy = g.rank > 0 ? g.dys[last] : 0, si = g.rank > 0 ? g.ixs[last] : 0, sm = g.rank > 0 ? g.ms[last] : 0,
                sr = g.rank > 0 ? g.rmul[last] : 0;
  const D* dy = static_cast<const D*>(g.dy);
  T* dx = static_cast<T*>(g.dx);
  // whole 16-byte stores: dx unit-stride along the innermost axis, every run of 8 aligned
  bool vec = sdx == 1 && inner % kRun == 0 && reinterpret_cast<uintptr_t>(dx) % 16 == 0;
  for (int a = 0; a < last; ++a) vec = vec && (g.size[a] == 1 || g.dxs[a] % kRun == 0);
  for (int64_t run = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) / 32; run < runs;
       run += static_cast<int64_t>(gridDim.x) * 8) {
    int64_t rem = run / per_row, xo = 0, dxo = 0, yo = 0, dyo = 0, io = 0, mo = 0, r = 0;
    for (int a = last - 1; a >= 0; --a) {
      const int64_t c = rem % g.size[a];
      rem /= g.size[a];
      xo += c * g.xs[a];
      dxo += c * g.dxs[a];
      yo += c * g.ys[a];
      dyo += c * g.dys[a];
      io += c * g.ixs[a];
      mo += c * g.ms[a];
      r += c * g.rmul[a];
    }
    if (vec) {  // lane l: the run's elements 8l .. 8l + 7, stored as 16-byte vectors
      const int64_t c = (run % per_row) * 32 * kRun + lane * kRun;
      if (c >= inner) continue;
      xo += c * sx, dxo += c, yo += c * sy, dyo += c * sdy, io += c * si, mo += c * sm, r += c * sr;
      C out[kRun];
#pragma unroll
      for (int e = 0; e < kRun; ++e) out[e] = f(to_c<C>(dy[dyo + e * sdy]), xo + e * sx, yo + e * sy, io + e * si, mo + e * sm, r + e * sr);
      constexpr int V = 16 / static_cast<int>(sizeof(T));
#pragma unroll
      for (int h = 0; h < kRun / V; ++h) store_acc_vec<T, V>(dx + dxo + h * V, reinterpret_cast<const C(&)[V]>(out[h * V]));
      continue;
    }
    int64_t c = (run % per_row) * 32 * kRun + lane;
    xo += c * sx, dxo += c * sdx, yo += c * sy, dyo += c * sdy, io += c * si, mo += c * sm, r += c * sr;
#pragma unroll
    for (int j = 0; j < kRun; ++j, c += 32) {
      if (c >= inner) break;
      dx[dxo] = from_c<T>(f(to_c<C>(dy[dyo]), xo, yo, io, mo, r), false);
      xo += 32 * sx, dxo += 32 * sdx, yo += 32 * sy, dyo += 32 * sdy, io += 32 * si, mo += 32 * sm, r += 32 * sr;
    }
  }
}

template <class T, class C>
__global__ void __launch_bounds__(256) reduce_backward_kernel(const ReduceBwdGeom g) {
  with_float_type(g.y_dtype, [&]<class D>() {
    const T* xp = static_cast<const T*>(g.x);
    const D* yp = static_cast<const D*>(g.y);
    const C* mean = static_cast<const C*>(g.mean);
    auto X = [&](int64_t o) { return to_c<C>(xp[o]); };
    auto Y = [&](int64_t o) { return to_c<C>(yp[o]); };
    auto run = [&](auto f) { backward_elements<T, D, C>(g, f); };
    switch (g.kind) {
      case kSum:
        run([&](C d, int64_t, int64_t, int64_t, int64_t, int64_t) { return d; });
        break;
      case kNanSum:
        run([&](C d, int64_t xo, int64_t, int64_t, int64_t, int64_t) {
          const C x = X(xo);
          return x != x ? C(0) : d;
        });
        break;
      case kMean: {
        const C inv = static_cast<C>(g.inv_n);
        run([&](C d, int64_t, int64_t, int64_t, int64_t, int64_t) { return d * inv; });
        break;
      }
      case kLogSumExp:
        run([&](C d, int64_t xo, int64_t yo, int64_t, int64_t, int64_t) { return d * exp(X(xo) - Y(yo)); });
        break;
      case kNorm0:
        run([&](C, int64_t, int64_t, int64_t, int64_t, int64_t) { return C(0); });
        break;
      case kNorm1:
        run([&](C d, int64_t xo, int64_t, int64_t, int64_t, int64_t) {
          const C x = X(xo);
          return x > C(0) ? d : (x < C(0) ? -d : C(0));
        });
        break;
      case kNorm2:
        run([&](C d, int64_t xo, int64_t yo, int64_t, int64_t, int64_t) {
          const C y = Y(yo);
          return y == C(0) ? C(0) : d * X(xo) / y;
        });
        break;
      case kNormP: {
        const C pm1 = static_cast<C>(g.p - 1.0);
        run([&](C d, int64_t xo, int64_t yo, int64_t, int64_t, int64_t) {
          const C x = X(xo), y = Y(yo), s = x > C(0) ? C(1) : (x < C(0) ? C(-1) : C(0));
          return y == C(0) ? C(0) : d * s * pow(fabs(x), pm1) / pow(y, pm1);
        });
        break;
      }
      case kVar: {
        const C two_over_dof = C(2) / static_cast<C>(g.dof);
        run([&](C d, int64_t xo, int64_t, int64_t, int64_t mo, int64_t) { return d * two_over_dof * (X(xo) - mean[mo]); });
        break;
      }
      case kStd: {
        const C dof = static_cast<C>(g.dof);
        run([&](C d, int64_t xo, int64_t yo, int64_t, int64_t mo, int64_t) {
          const C y = Y(yo);
          return y == C(0) ? C(0) : d * (X(xo) - mean[mo]) / (dof * y);
        });
        break;
      }
      case kMax:
      case kMin: {
        const int64_t* ix = static_cast<const int64_t*>(g.indices);
        run([&](C d, int64_t, int64_t, int64_t io, int64_t, int64_t r) { return ix[io] == r ? d : C(0); });
        break;
      }
      case kAmax:
      case kAmin:  // PyTorch's (dy / count) * (x == y): NaN everywhere when
                   // nothing equals y
        run([&](C d, int64_t xo, int64_t yo, int64_t, int64_t mo, int64_t) {
          const C q = d / mean[mo];
          return X(xo) == Y(yo) ? q : q * C(0);
        });
        break;
      case kNormInf:
      case kNormNegInf:  // sgn(x) * (|x| == y, or both NaN) * dy / count
        run([&](C d, int64_t xo, int64_t yo, int64_t, int64_t mo, int64_t) {
          const C x = X(xo), y = Y(yo), q = d / mean[mo];
          const C sg = x > C(0) ? C(1) : (x < C(0) ? C(-1) : (x != x ? x : C(0)));
          return sg * ((fabs(x) == y || (x != x && y != y)) ? C(1) : C(0)) * q;
        });
        break;
      case kNanMean:  // (dy / count) * !isnan(x)
        run([&](C d, int64_t xo, int64_t, int64_t, int64_t mo, int64_t) {
          const C x = X(xo);
          return d / mean[mo] * (x != x ? C(0) : C(1));
        });
        break;
      case kProd: {  // no zero: dy * y / x; one: dy * (the others' product) at it;
                     // more: 0
        const C* zeros = static_cast<const C*>(g.aux2);
        run([&](C d, int64_t xo, int64_t yo, int64_t, int64_t mo, int64_t) {
          const C x = X(xo), z = zeros[mo];
          return z == C(0) ? d * (Y(yo) / x) : (z == C(1) && x == C(0) ? d * mean[mo] : C(0));
        });
        break;
      }
      default:
        break;
    }
  });
}

template <class T, class C>
cudaError_t launch_backward(const ReduceBwdGeom& g, cudaStream_t stream) {
  if (g.numel == 0) return cudaSuccess;
  const int64_t want = (g.numel + 255) / 256, blocks = want < 132 * 64 ? want : 132 * 64;
  return launch_kernel(reduce_backward_kernel<T, C>, dim3(static_cast<unsigned>(blocks)), dim3(256), 0, stream, g);
}

}  // namespace

ReduceLaunchFn find_backward_prepass(DType x, int kind) {
  ReduceLaunchFn fn = nullptr;
  dispatch_storage<true, false>(x, [&]<class T>() {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    switch (kind) {
      case kAmax:
        fn = &engine_launch<ExtremeCount<T, C, true, false>>;
        break;
      case kAmin:
        fn = &engine_launch<ExtremeCount<T, C, false, false>>;
        break;
      case kNormInf:
        fn = &engine_launch<ExtremeCount<T, C, true, true>>;
        break;
      case kNormNegInf:
        fn = &engine_launch<ExtremeCount<T, C, false, true>>;
        break;
      case kNanMean:
        fn = &engine_launch<NotNanCount<T, C>>;
        break;
      case kProd:
        fn = &engine_launch<ProdZeros<T, C>>;
        break;
      default:
        break;
    }
  });
  return fn;
}

ReduceBwdLaunchFn find_backward(DType x) {
  ReduceBwdLaunchFn fn = nullptr;
  dispatch_storage<true, false>(x, [&]<class T>() {
    if constexpr (std::is_same_v<T, double>)
      fn = &launch_backward<T, double>;
    else
      fn = &launch_backward<T, float>;
  });
  return fn;
}

}  // namespace baracuda::red
