// ScanBackwardPlan's serial pass (cumprod, cummax / cummin, logcumsumexp): a thread per line,
// positions walked in the scan's order (scan.hpp's formulas).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/cuda_types.cuh"
#include "core/launch.cuh"
#include "ops/reduce/scan_engine.cuh"

namespace baracuda::scan {

namespace {

__device__ __forceinline__ int64_t offset_of(const ScanBwdGeom& g, const int64_t* st, int64_t line) {
  return red::kept_offset_of(g.osize, st, g.ko, line);
}

template <class T>
__global__ void __launch_bounds__(256) scan_backward_kernel(const ScanBwdGeom g) {
  using C = acc_t<T>;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x; line < g.lines;
       line += static_cast<int64_t>(gridDim.x) * 256) {
    const T* x = g.x ? static_cast<const T*>(g.x) + offset_of(g, g.ox, line) : nullptr;
    const int64_t yo = offset_of(g, g.oy, line), dyo = offset_of(g, g.ody, line);
    const int64_t* ix = g.indices ? static_cast<const int64_t*>(g.indices) + offset_of(g, g.oi, line) : nullptr;
    T* dx = static_cast<T*>(g.dx) + offset_of(g, g.odx, line);
    const int64_t L = g.L;
    auto el = [&](int64_t q) { return g.reverse ? L - 1 - q : q; };  // element index of scan position q
    auto X = [&](int64_t q) { return to_c<C>(x[el(q) * g.xs]); };
    auto Y = [&](int64_t q) { return load_dyn<C>(g.y, yo + el(q) * g.ys, g.y_dtype); };
    auto DY = [&](int64_t q) { return load_dyn<C>(g.dy, dyo + el(q) * g.dys, g.y_dtype); };
    auto DX = [&](int64_t q, C v) { dx[el(q) * g.dxs] = from_c<T>(v, false); };
    if (g.kind == kCumprod) {
      // dx_q = P_q T_q, T_q = dy'_q + x_{q+1} T_{q+1}
      C tn = 0;
      for (int64_t q = L - 1; q >= 0; --q) {
        const C dyp = g.exclusive ? (q + 1 < L ? DY(q + 1) : C(0)) : DY(q);
        const C tq = q + 1 < L ? dyp + X(q + 1) * tn : dyp;
        const C p = g.exclusive ? Y(q) : (q == 0 ? C(1) : Y(q - 1));
        DX(q, p * tq);
        tn = tq;
      }
    } else if (g.kind == kCummax || g.kind == kCummin) {
      // dy_j summed at the forward's index (a run per index: the indices only grow along the scan)
      for (int64_t e = 0; e < L; ++e) dx[e * g.dxs] = from_c<T>(C(0), false);
      int64_t cur = -1;
      C sum = 0;
      for (int64_t q = 0; q <= L; ++q) {
        const int64_t i = q < L ? ix[el(q) * g.is] : -1;
        if (q < L && (i < 0 || i >= L)) continue;  // out of range: skipped
        if (i != cur || q == L) {
          if (cur >= 0) dx[cur * g.dxs] = from_c<T>(to_c<C>(dx[cur * g.dxs]) + sum, false);
          cur = i;
          sum = 0;
        }
        if (q < L) sum += DY(q);
      }
    } else {
      // logcumsumexp: dx_q = exp(x_q + lp) - exp(x_q + ln), lp / ln = log Σ over the outputs
      // covering q of dy_j^± exp(-y_j)
      const C ninf = -std::numeric_limits<C>::infinity();
      C lp = ninf, ln = ninf;
      auto add = [&](int64_t j) {
        const C d = DY(j), yj = Y(j);
        if (d != d) lp = d;
        else if (d > C(0)) lp = log_add_exp(lp, log(d) - yj);
        else if (d < C(0)) ln = log_add_exp(ln, log(-d) - yj);
      };
      for (int64_t q = L - 1; q >= 0; --q) {
        if (!g.exclusive) add(q);
        const C xq = X(q);
        DX(q, exp(xq + lp) - exp(xq + ln));
        if (g.exclusive) add(q);
      }
    }
  }
}

template <class T>
cudaError_t scan_backward_launch(const ScanBwdGeom& g, cudaStream_t stream) {
  if (g.lines == 0 || g.L == 0) return cudaSuccess;
  return launch_kernel(scan_backward_kernel<T>, dim3(grid_for(g.lines)), dim3(256), 0, stream, g);
}

}  // namespace

ScanBwdLaunchFn find_scan_backward(DType x) {
  ScanBwdLaunchFn fn = nullptr;
  dispatch_storage<true, false>(x, [&]<class T>() { fn = &scan_backward_launch<T>; });
  return fn;
}

}  // namespace baracuda::scan
