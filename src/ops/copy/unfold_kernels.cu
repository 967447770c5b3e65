// unfold_backward: one thread per grad_input element; its coordinates by FastDiv below 2^31
// elements (64-bit division above), then the windows that cover its index l along the unfolded
// axis, w in [max(0, ⌊(l − size) / step⌋ + 1), min(⌊l / step⌋, W − 1)], summed in ascending w.
#include <algorithm>

#include "core/cuda_types.cuh"
#include "core/dispatch.hpp"
#include "core/launch.cuh"
#include "ops/copy/unfold_geometry.hpp"

namespace baracuda::unfk {

namespace {

template <class T>
__global__ void __launch_bounds__(kThreads) unfold_backward_kernel(const __grid_constant__ Params p) {
  using A = acc_t<T>;
  const T* go = static_cast<const T*>(p.grad_out);
  T* gi = static_cast<T*>(p.grad_input);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; u < p.units; u += stride) {
    int64_t gi_off = 0, go_off = 0, l = 0, w_lo = 0, w_hi = 0;
    if (p.small) {
      uint32_t r = static_cast<uint32_t>(u);
      for (int k = p.na - 1; k >= 0; --k) {
        const uint32_t q = k > 0 ? p.div[k].div(r) : 0;
        const int64_t c = r - q * static_cast<uint32_t>(p.n[k]);
        r = q;
        if (k == p.axis) l = c;
        else gi_off += c * p.gi[k], go_off += c * p.go[k];
      }
      w_hi = p.step_div.div(static_cast<uint32_t>(l));
      w_lo = l >= p.size ? p.step_div.div(static_cast<uint32_t>(l - p.size)) + 1 : 0;
    } else {
      int64_t r = u;
      for (int k = p.na - 1; k >= 0; --k) {
        const int64_t q = k > 0 ? r / p.n[k] : 0;
        const int64_t c = r - q * p.n[k];
        r = q;
        if (k == p.axis) l = c;
        else gi_off += c * p.gi[k], go_off += c * p.go[k];
      }
      w_hi = l / p.step;
      w_lo = l >= p.size ? (l - p.size) / p.step + 1 : 0;
    }
    w_hi = w_hi < p.windows - 1 ? w_hi : p.windows - 1;
    A acc = A(0);
    for (int64_t w = w_lo; w <= w_hi; ++w) acc += to_acc(go[go_off + w * p.go[p.axis] + (l - w * p.step) * p.go_k]);
    gi[gi_off + l * p.gi[p.axis]] = from_acc<T>(acc);
  }
}

template <class T>
cudaError_t launch(const Params& p, cudaStream_t stream) {
  if (p.units == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((p.units + kThreads - 1) / kThreads, int64_t{1} << 30));
  return launch_kernel(unfold_backward_kernel<T>, dim3(blocks), dim3(kThreads), 0, stream, p);
}

}  // namespace

UnfLaunchFn find_unfold_backward(DType dtype) {
  UnfLaunchFn fn = nullptr;
  dispatch_dtype<CudaTypes>(dtype, FloatDTypes{}, [&]<class T>() { fn = &launch<T>; });
  return fn;
}

}  // namespace baracuda::unfk
