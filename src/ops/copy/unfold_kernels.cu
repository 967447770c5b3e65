// unfold_backward: every grad_input element sums the windows that cover its index l along the
// unfolded axis, w in [max(0, ⌊(l − size) / step⌋ + 1), min(⌊l / step⌋, W − 1)], in ascending w.
// The index arithmetic, not the bytes, bounds this kernel, so it is cut three ways (measured on
// the [65536, 4096] bf16 case, H200):
//   - offsets in 32 bits when both views reach less than 2^31 elements (64-bit: 5x slower);
//   - the axis loop unrolled to the axis count for 1..3 merged axes (else to kMaxRank with a
//     guard each), constant indices into the parameter block (the guarded form: ~130
//     instructions an element);
//   - warp runs (unfold_backward_runs_kernel) when the innermost extent is a multiple of kRun:
//     one coordinate decomposition per kPer elements.
// Otherwise each thread takes kPer elements kThreads apart, coordinates by FastDiv below 2^31
// elements (64-bit division above). Every element's first window is loaded before any sum
// (kPer loads in flight per thread).
#include <algorithm>

#include "core/cuda_types.cuh"
#include "core/dispatch.hpp"
#include "core/launch.cuh"
#include "ops/copy/unfold_geometry.hpp"

namespace baracuda::unfk {

namespace {

constexpr int kPer = 8;

// The windows that cover index l: the first, w0, and how many.
template <bool Small, class I>
__device__ __forceinline__ void windows(const Params& p, I l, I* w0, I* count) {
  I w_lo = 0, w_hi = 0;
  if constexpr (Small) {
    w_hi = static_cast<I>(p.step_div.div(static_cast<uint32_t>(l)));
    w_lo = l >= p.size ? static_cast<I>(p.step_div.div(static_cast<uint32_t>(l - p.size))) + 1 : 0;
  } else {
    w_hi = l / p.step;
    w_lo = l >= p.size ? (l - p.size) / p.step + 1 : 0;
  }
  w_hi = w_hi < p.windows - 1 ? w_hi : static_cast<I>(p.windows - 1);
  *w0 = w_lo, *count = w_hi - w_lo + 1;
}

// Element u: grad_input's offset, grad_out's offset of its row (every axis but the unfolded
// one), its index l along the unfolded axis and its first window w0 and window count. I: the
// offsets' type (int32 when both views reach less than 2^31 elements: one multiply-add a term).
// NA: the number of axes when known at compile time (1..3: no guard per unrolled axis), else 0.
template <bool Small, class I, int NA>
__device__ __forceinline__ void locate(const Params& p, int64_t u, I* gi_off, I* go_row, I* l_out, I* w0, I* count) {
  I gi = 0, go = 0, l = 0;
  constexpr int kAxes = NA > 0 ? NA : kMaxRank;
  if constexpr (Small) {
    uint32_t r = static_cast<uint32_t>(u);
#pragma unroll
    for (int k = kAxes - 1; k >= 0; --k) {
      if (NA == 0 && k >= p.na) continue;
      const uint32_t q = k > 0 ? p.div[k].div(r) : 0;
      const I c = static_cast<I>(r - q * static_cast<uint32_t>(p.n[k]));
      r = q;
      gi += c * static_cast<I>(p.gi[k]);
      if (k == p.axis) l = c;
      else go += c * static_cast<I>(p.go[k]);
    }
  } else {
    int64_t r = u;
#pragma unroll
    for (int k = kAxes - 1; k >= 0; --k) {
      if (NA == 0 && k >= p.na) continue;
      const int64_t q = k > 0 ? r / p.n[k] : 0;
      const I c = static_cast<I>(r - q * p.n[k]);
      r = q;
      gi += c * static_cast<I>(p.gi[k]);
      if (k == p.axis) l = c;
      else go += c * static_cast<I>(p.go[k]);
    }
  }
  *gi_off = gi, *go_row = go, *l_out = l;
  windows<Small>(p, l, w0, count);
}

template <class T, bool Small, class I, int NA>
__global__ void __launch_bounds__(kThreads) unfold_backward_kernel(const __grid_constant__ Params p) {
  using A = acc_t<T>;
  const T* go = static_cast<const T*>(p.grad_out);
  T* gi = static_cast<T*>(p.grad_input);
  const I go_w = static_cast<I>(p.go_w), go_k = static_cast<I>(p.go_k), step = static_cast<I>(p.step);
  constexpr int64_t kTile = int64_t{kThreads} * kPer;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kTile; base < p.units; base += static_cast<int64_t>(gridDim.x) * kTile) {
    I dst[kPer], row[kPer], l[kPer], w0[kPer], n[kPer];
    A acc[kPer];
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const int64_t u = base + int64_t{e} * kThreads + threadIdx.x;
      n[e] = 0;
      if (u < p.units) locate<Small, I, NA>(p, u, &dst[e], &row[e], &l[e], &w0[e], &n[e]);
    }
    // grad_out's element of window w for index l: row + w·go_w + (l − w·step)·go_k (every term
    // within grad_out's reach)
#pragma unroll
    for (int e = 0; e < kPer; ++e) acc[e] = n[e] > 0 ? to_acc(go[row[e] + w0[e] * go_w + (l[e] - w0[e] * step) * go_k]) : A(0);
#pragma unroll
    for (int e = 0; e < kPer; ++e)
      for (I w = w0[e] + 1; w < w0[e] + n[e]; ++w) acc[e] += to_acc(go[row[e] + w * go_w + (l[e] - w * step) * go_k]);
#pragma unroll
    for (int e = 0; e < kPer; ++e)
      if (base + int64_t{e} * kThreads + threadIdx.x < p.units) gi[dst[e]] = from_acc<T>(acc[e]);
  }
}

// Runs (p.run): the innermost axis' extent is a multiple of kRun = 32·kPer, so a warp's kRun
// consecutive elements share every coordinate but the innermost: lane t takes elements t + 32·e,
// one coordinate decomposition a thread, then the innermost index steps by 32 (the unfolded axis:
// l + 32·e with its windows; another: its strides in both views). Every load and store of a warp
// is 32 consecutive innermost elements (coalesced when that axis is contiguous).
static_assert(kRun == 32 * kPer);

template <class T, int NA>
__global__ void __launch_bounds__(kThreads) unfold_backward_runs_kernel(const __grid_constant__ Params p) {
  using A = acc_t<T>;
  using I = int32_t;
  const T* go = static_cast<const T*>(p.grad_out);
  T* gi = static_cast<T*>(p.grad_input);
  const I go_w = static_cast<I>(p.go_w), go_k = static_cast<I>(p.go_k), step = static_cast<I>(p.step);
  const int last = p.na - 1;
  const bool along = p.axis == last;  // the innermost axis is the unfolded one
  const I gi_in = static_cast<I>(p.gi[last]), go_in = along ? 0 : static_cast<I>(p.go[last]);
  const int64_t runs = p.units / kRun, lane = threadIdx.x % 32;
  constexpr int kWarps = kThreads / 32;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; g < runs; g += static_cast<int64_t>(gridDim.x) * kWarps) {
    I dst = 0, row = 0, l0 = 0, w00 = 0, n0 = 0;
    locate<true, I, NA>(p, g * kRun + lane, &dst, &row, &l0, &w00, &n0);
    I l[kPer], w0[kPer], n[kPer];
    A acc[kPer];
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      l[e] = along ? l0 + 32 * e : l0, w0[e] = w00, n[e] = n0;
      if (along && e > 0) windows<true>(p, l[e], &w0[e], &n[e]);
    }
#pragma unroll
    for (int e = 0; e < kPer; ++e)
      acc[e] = n[e] > 0 ? to_acc(go[row + 32 * e * go_in + w0[e] * go_w + (l[e] - w0[e] * step) * go_k]) : A(0);
#pragma unroll
    for (int e = 0; e < kPer; ++e)
      for (I w = w0[e] + 1; w < w0[e] + n[e]; ++w) acc[e] += to_acc(go[row + 32 * e * go_in + w * go_w + (l[e] - w * step) * go_k]);
#pragma unroll
    for (int e = 0; e < kPer; ++e) gi[dst + 32 * e * gi_in] = from_acc<T>(acc[e]);
  }
}

template <class T>
cudaError_t launch(const Params& p, cudaStream_t stream) {
  if (p.units == 0) return cudaSuccess;
  constexpr int64_t kTile = int64_t{kThreads} * kPer;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((p.units + kTile - 1) / kTile, int64_t{1} << 30));
  const dim3 grid(blocks), block(kThreads);
  if (p.small && p.narrow && p.run) {
    const unsigned run_blocks = static_cast<unsigned>(std::min<int64_t>((p.units / kRun * 32 + kThreads - 1) / kThreads, int64_t{1} << 30));
    switch (p.na) {
      case 1: return launch_kernel(unfold_backward_runs_kernel<T, 1>, dim3(run_blocks), block, 0, stream, p);
      case 2: return launch_kernel(unfold_backward_runs_kernel<T, 2>, dim3(run_blocks), block, 0, stream, p);
      case 3: return launch_kernel(unfold_backward_runs_kernel<T, 3>, dim3(run_blocks), block, 0, stream, p);
      default: return launch_kernel(unfold_backward_runs_kernel<T, 0>, dim3(run_blocks), block, 0, stream, p);
    }
  }
  if (p.small && p.narrow) {
    switch (p.na) {  // the common merged forms: [dim], [outer, dim] / [dim, inner], [outer, dim, inner]
      case 1: return launch_kernel(unfold_backward_kernel<T, true, int32_t, 1>, grid, block, 0, stream, p);
      case 2: return launch_kernel(unfold_backward_kernel<T, true, int32_t, 2>, grid, block, 0, stream, p);
      case 3: return launch_kernel(unfold_backward_kernel<T, true, int32_t, 3>, grid, block, 0, stream, p);
      default: return launch_kernel(unfold_backward_kernel<T, true, int32_t, 0>, grid, block, 0, stream, p);
    }
  }
  if (p.small) return launch_kernel(unfold_backward_kernel<T, true, int64_t, 0>, grid, block, 0, stream, p);
  return launch_kernel(unfold_backward_kernel<T, false, int64_t, 0>, grid, block, 0, stream, p);
}

}  // namespace

UnfLaunchFn find_unfold_backward(DType dtype) {
  UnfLaunchFn fn = nullptr;
  dispatch_dtype<CudaTypes>(dtype, FloatDTypes{}, [&]<class T>() { fn = &launch<T>; });
  return fn;
}

}  // namespace baracuda::unfk
