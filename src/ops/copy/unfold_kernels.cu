// unfold_backward: each thread sums kPer grad_input elements (a block's tile: kPer strided
// passes of kThreads), their coordinates by FastDiv below 2^31 elements (64-bit division above)
// over the axes unrolled to kMaxRank (constant indices into the parameter block), then the
// windows that cover each index l along the unfolded axis, w in
// [max(0, ⌊(l − size) / step⌋ + 1), min(⌊l / step⌋, W − 1)], summed in ascending w. The first
// window of every element is loaded before any sum (kPer loads in flight per thread).
#include <algorithm>

#include "core/cuda_types.cuh"
#include "core/dispatch.hpp"
#include "core/launch.cuh"
#include "ops/copy/unfold_geometry.hpp"

namespace baracuda::unfk {

namespace {

constexpr int kPer = 8;

// Element u: grad_input's offset, grad_out's offset of its first window, its window count.
template <bool Small>
__device__ __forceinline__ void locate(const Params& p, int64_t u, int64_t* gi_off, int64_t* go_off, int64_t* count) {
  int64_t gi = 0, go = 0, l = 0;
  if constexpr (Small) {
    uint32_t r = static_cast<uint32_t>(u);
#pragma unroll
    for (int k = kMaxRank - 1; k >= 0; --k) {
      if (k >= p.na) continue;
      const uint32_t q = k > 0 ? p.div[k].div(r) : 0;
      const int64_t c = r - q * static_cast<uint32_t>(p.n[k]);
      r = q;
      gi += c * p.gi[k];
      if (k == p.axis) l = c;
      else go += c * p.go[k];
    }
  } else {
    int64_t r = u;
#pragma unroll
    for (int k = kMaxRank - 1; k >= 0; --k) {
      if (k >= p.na) continue;
      const int64_t q = k > 0 ? r / p.n[k] : 0;
      const int64_t c = r - q * p.n[k];
      r = q;
      gi += c * p.gi[k];
      if (k == p.axis) l = c;
      else go += c * p.go[k];
    }
  }
  int64_t w_lo = 0, w_hi = 0;
  if constexpr (Small) {
    w_hi = p.step_div.div(static_cast<uint32_t>(l));
    w_lo = l >= p.size ? p.step_div.div(static_cast<uint32_t>(l - p.size)) + 1 : 0;
  } else {
    w_hi = l / p.step;
    w_lo = l >= p.size ? (l - p.size) / p.step + 1 : 0;
  }
  w_hi = w_hi < p.windows - 1 ? w_hi : p.windows - 1;
  *gi_off = gi;
  *go_off = go + w_lo * p.go_w + (l - w_lo * p.step) * p.go_k;
  *count = w_hi - w_lo + 1;
}

template <class T, bool Small>
__global__ void __launch_bounds__(kThreads) unfold_backward_kernel(const __grid_constant__ Params p) {
  using A = acc_t<T>;
  const T* go = static_cast<const T*>(p.grad_out);
  T* gi = static_cast<T*>(p.grad_input);
  const int64_t next = p.go_w - p.step * p.go_k;  // grad_out's offset from window w to w + 1 (same l)
  constexpr int64_t kTile = int64_t{kThreads} * kPer;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kTile; base < p.units; base += static_cast<int64_t>(gridDim.x) * kTile) {
    int64_t dst[kPer], src[kPer], n[kPer];
    A acc[kPer];
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const int64_t u = base + int64_t{e} * kThreads + threadIdx.x;
      n[e] = 0;
      if (u < p.units) locate<Small>(p, u, &dst[e], &src[e], &n[e]);
    }
#pragma unroll
    for (int e = 0; e < kPer; ++e) acc[e] = n[e] > 0 ? to_acc(go[src[e]]) : A(0);
#pragma unroll
    for (int e = 0; e < kPer; ++e)
      for (int64_t w = 1; w < n[e]; ++w) acc[e] += to_acc(go[src[e] + w * next]);
#pragma unroll
    for (int e = 0; e < kPer; ++e)
      if (base + int64_t{e} * kThreads + threadIdx.x < p.units) gi[dst[e]] = from_acc<T>(acc[e]);
  }
}

template <class T>
cudaError_t launch(const Params& p, cudaStream_t stream) {
  if (p.units == 0) return cudaSuccess;
  constexpr int64_t kTile = int64_t{kThreads} * kPer;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((p.units + kTile - 1) / kTile, int64_t{1} << 30));
  if (p.small) return launch_kernel(unfold_backward_kernel<T, true>, dim3(blocks), dim3(kThreads), 0, stream, p);
  return launch_kernel(unfold_backward_kernel<T, false>, dim3(blocks), dim3(kThreads), 0, stream, p);
}

}  // namespace

UnfLaunchFn find_unfold_backward(DType dtype) {
  UnfLaunchFn fn = nullptr;
  dispatch_dtype<CudaTypes>(dtype, FloatDTypes{}, [&]<class T>() { fn = &launch<T>; });
  return fn;
}

}  // namespace baracuda::unfk
