// The warprows pad kernels (pad_warprows.cu): forward and backward for every geometry, with
// 32- or 64-bit indices; the kernels pad_launch.cu falls back to.
#pragma once

#include <cuda_runtime.h>

#include "ops/pad/pad_geometry.hpp"

namespace baracuda::detail {

// Launches the warprows forward (T: uint8_t, uint16_t, uint32_t or uint64_t, the raw bits of
// the element; Idx: int32_t or int64_t); returns the cudaError_t of the launch.
template <class T, class Idx>
cudaError_t launch_warprows_forward(const PadGeometry& g, cudaStream_t s);
// Launches the warprows backward (T: float, __half, __nv_bfloat16 or double; Idx: int32_t or
// int64_t); returns the cudaError_t of the launch.
template <class T, class Idx>
cudaError_t launch_warprows_backward(const PadGeometry& g, cudaStream_t s);

}  // namespace baracuda::detail
