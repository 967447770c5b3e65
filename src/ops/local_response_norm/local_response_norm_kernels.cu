// LocalResponseNormPlan's and LocalResponseNormBackwardPlan's kernel: a thread per element, its
// channel window (and, backward, the windows of the channels whose window holds it) read from
// cache.
#include <algorithm>
#include <cmath>

#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/local_response_norm/lrn_geometry.hpp"

namespace baracuda::lrn {

namespace {

template <class T, bool Bwd>
__global__ void __launch_bounds__(kThreads) lrn_kernel(const LrnGeom g, const int64_t numel) {
  using C = acc_t<T>;
  const int64_t half_lo = g.size / 2, half_hi = (g.size - 1) / 2;
  const C scale = static_cast<C>(g.alpha) / static_cast<C>(g.size), beta = static_cast<C>(g.beta), k = static_cast<C>(g.k);
  const C coef = C(2) * static_cast<C>(g.alpha) * beta / static_cast<C>(g.size);
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < numel; e += static_cast<int64_t>(gridDim.x) * kThreads) {
    int64_t n, c, sp;
    if (g.channels_fast) {
      c = e % g.C;
      const int64_t r = e / g.C;
      sp = r % g.S, n = r / g.S;
    } else {
      sp = e % g.S;
      const int64_t r = e / g.S;
      c = r % g.C, n = r / g.C;
    }
    const T* x = static_cast<const T*>(g.p[kX]) + n * g.s[kX][0] + sp * g.s[kX][2];
    const int64_t xs = g.s[kX][1];
    auto xat = [&](int64_t j) { return static_cast<C>(to_acc(x[j * xs])); };
    // d_j = k + alpha / size · Σ_{W(j)} x²
    auto den = [&](int64_t j) {
      C sum = C(0);
      const int64_t hi = std::min(g.C - 1, j + half_hi);
      for (int64_t i = std::max<int64_t>(0, j - half_lo); i <= hi; ++i) {
        const C v = xat(i);
        sum += v * v;
      }
      return k + scale * sum;
    };
    const C xc = xat(c), dc = den(c), qc = pow(dc, beta);
    if constexpr (!Bwd) {
      T* y = static_cast<T*>(g.p[kY]) + n * g.s[kY][0] + c * g.s[kY][1] + sp * g.s[kY][2];
      *y = from_c<T>(static_cast<acc_t<T>>(xc / qc), false);
    } else {
      const T* dy = static_cast<const T*>(g.p[kDy]) + n * g.s[kDy][0] + sp * g.s[kDy][2];
      const int64_t dys = g.s[kDy][1];
      C acc = C(0);
      const int64_t hi = std::min(g.C - 1, c + half_lo);
      for (int64_t j = std::max<int64_t>(0, c - half_hi); j <= hi; ++j) {
        const C dj = j == c ? dc : den(j), qj = j == c ? qc : pow(dj, beta);
        acc += static_cast<C>(to_acc(dy[j * dys])) * xat(j) / (qj * dj);
      }
      const C dyc = static_cast<C>(to_acc(dy[c * dys]));
      T* dx = static_cast<T*>(g.p[kDx]) + n * g.s[kDx][0] + c * g.s[kDx][1] + sp * g.s[kDx][2];
      *dx = from_c<T>(static_cast<acc_t<T>>(dyc / qc - coef * xc * acc), false);
    }
  }
}

template <class T, bool Bwd>
cudaError_t launch(const LrnGeom& g, cudaStream_t stream) {
  const int64_t numel = g.N * g.C * g.S;  // the plan's operands: fits int64
  if (numel == 0) return cudaSuccess;
  const int64_t blocks = std::min<int64_t>((numel + kThreads - 1) / kThreads, kMaxGrid);
  return launch_kernel(lrn_kernel<T, Bwd>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, g, numel);
}

}  // namespace

LrnLaunchFn find_lrn(DType x, bool backward) {
  return pick_float_type<LrnLaunchFn>(x, [&]<class T>() -> LrnLaunchFn { return backward ? &launch<T, true> : &launch<T, false>; });
}

}  // namespace baracuda::lrn
