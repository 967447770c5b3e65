// ReduceBackwardPlan's pass: dx from dy broadcast over the reduced axes (reduce.hpp's formulas).
#include "ops/reduce/reduce_policies.cuh"

namespace baracuda::red {

namespace {

template <class T, class C>
__global__ void __launch_bounds__(256) reduce_backward_kernel(const ReduceBwdGeom g) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t f = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; f < g.numel; f += step) {
    int64_t rem = f, xo = 0, dxo = 0, yo = 0, dyo = 0, io = 0, mo = 0, r = 0;
    for (int a = g.rank - 1; a >= 0; --a) {
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
    const C d = load_dyn<C>(g.dy, dyo, g.y_dtype);
    const C x = g.x ? to_c<C>(static_cast<const T*>(g.x)[xo]) : C(0);
    const C y = g.y ? load_dyn<C>(g.y, yo, g.y_dtype) : C(0);
    C out = C(0);
    switch (g.kind) {
      case kSum: out = d; break;
      case kNanSum: out = x != x ? C(0) : d; break;
      case kMean: out = d * static_cast<C>(g.inv_n); break;
      case kLogSumExp: out = d * exp(x - y); break;
      case kNorm0: out = C(0); break;
      case kNorm1: out = x > C(0) ? d : (x < C(0) ? -d : C(0)); break;
      case kNorm2: out = y == C(0) ? C(0) : d * x / y; break;
      case kNormP: {
        const C pm1 = static_cast<C>(g.p - 1.0);
        const C s = x > C(0) ? C(1) : (x < C(0) ? C(-1) : C(0));
        out = y == C(0) ? C(0) : d * s * pow(fabs(x), pm1) / pow(y, pm1);
        break;
      }
      case kVar: case kStd: {
        const C m = static_cast<const C*>(g.mean)[mo];
        const C dof = static_cast<C>(g.dof);
        out = g.kind == kVar ? d * C(2) * (x - m) / dof : (y == C(0) ? C(0) : d * (x - m) / (dof * y));
        break;
      }
      case kMax: case kMin:
        out = static_cast<const int64_t*>(g.indices)[io] == r ? d : C(0);
        break;
      default: break;
    }
    static_cast<T*>(g.dx)[dxo] = from_c<T>(out, false);
  }
}

template <class T, class C>
cudaError_t launch_backward(const ReduceBwdGeom& g, cudaStream_t stream) {
  if (g.numel == 0) return cudaSuccess;
  const int64_t want = (g.numel + 255) / 256, blocks = want < 132 * 16 ? want : 132 * 16;
  return launch_kernel(reduce_backward_kernel<T, C>, dim3(static_cast<unsigned>(blocks)), dim3(256), 0, stream, g);
}

}  // namespace

ReduceBwdLaunchFn find_backward(DType x) {
  ReduceBwdLaunchFn fn = nullptr;
  dispatch_storage<true, false>(x, [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) fn = &launch_backward<T, double>;
    else fn = &launch_backward<T, float>;
  });
  return fn;
}

}  // namespace baracuda::red
