// The staged pad kernels (pad_staged.cu; see PadStaged in pad_geometry.hpp).
#pragma once

#include <cuda_runtime.h>

#include "ops/pad/pad_geometry.hpp"

namespace baracuda::detail {

// Launches the staged backward for g.st (T: float, __half, __nv_bfloat16 or double); returns
// the cudaError_t of the launch.
template <class T>
cudaError_t launch_staged_backward(const PadGeometry& g, cudaStream_t s);
// The staged forward for elements of E bytes (1, 2, 4 or 8).
template <int E>
cudaError_t launch_staged_forward(const PadGeometry& g, cudaStream_t s);

}  // namespace baracuda::detail
