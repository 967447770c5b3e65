// The segment pad backward (pad_segments.cu; see pad_plan_segments in pad_geometry.hpp).
#pragma once

#include <cuda_runtime.h>

#include "ops/pad/pad_geometry.hpp"

namespace baracuda::detail {

// Launches the segment backward (T: float, __half, __nv_bfloat16 or double); returns the
// cudaError_t of the launch.
template <class T>
cudaError_t launch_segment_backward(const PadGeometry& g, cudaStream_t s);

}  // namespace baracuda::detail
