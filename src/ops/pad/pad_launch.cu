// Pad kernel dispatch: the launcher tables (pad_forward_launcher, pad_backward_launcher) and,
// per launch, the kernel run() planned for the geometry: with 32-bit indices the staged, pairs,
// segment or flat kernels where their planners admitted it (pad_geometry.cpp), else warprows.
#include <cstdint>

#include "core/cuda_types.cuh"
#include "core/dispatch.hpp"
#include "ops/pad/pad_flat.cuh"
#include "ops/pad/pad_geometry.hpp"
#include "ops/pad/pad_pairs.cuh"
#include "ops/pad/pad_segments.cuh"
#include "ops/pad/pad_staged.cuh"
#include "ops/pad/pad_warprows.cuh"

namespace baracuda::detail {
namespace {

template <class T, class Idx>
cudaError_t launch_forward(const PadGeometry& g, cudaStream_t s) {
  if constexpr (sizeof(Idx) == 4) {
    if (g.st.tiles > 0) return launch_staged_forward<static_cast<int>(sizeof(T))>(g, s);
    if constexpr (sizeof(T) == 2)
      if (g.pr.blocks > 0) return launch_pairs_forward(g, s);
    if (g.flat_words > 0) return launch_flat_forward<T>(g, s);
  }
  return launch_warprows_forward<T, Idx>(g, s);
}

template <class T, class Idx>
cudaError_t launch_backward(const PadGeometry& g, cudaStream_t s) {
  if constexpr (sizeof(Idx) == 4) {
    if (g.st.tiles > 0) return launch_staged_backward<T>(g, s);
    if (g.seg_tasks > 0) return launch_segment_backward<T>(g, s);
    if (g.flat_words > 0) return launch_flat_backward<T>(g, s);
  }
  return launch_warprows_backward<T, Idx>(g, s);
}

}  // namespace

PadLaunchFn pad_forward_launcher(DType dtype, bool index64) {
  PadLaunchFn fn = nullptr;
  dispatch_dtype<StorageTypes>(dtype, PadForwardDTypes{}, [&]<class T>() {
    fn = index64 ? &launch_forward<T, int64_t> : &launch_forward<T, int32_t>;
  });
  return fn;
}

PadLaunchFn pad_backward_launcher(DType dtype, bool index64) {
  PadLaunchFn fn = nullptr;
  dispatch_dtype<CudaTypes>(dtype, PadBackwardDTypes{}, [&]<class T>() {
    fn = index64 ? &launch_backward<T, int64_t> : &launch_backward<T, int32_t>;
  });
  return fn;
}

}  // namespace baracuda::detail
