// The flat pad kernels (pad_flat.cu; see pad_plan_flat in pad_geometry.hpp): a dense
// destination walked as consecutive words, 32-bit indices.
#pragma once

#include <cuda_runtime.h>

#include "ops/pad/pad_geometry.hpp"

namespace baracuda::detail {

// Launches the flat forward for g's word size g.flat_epw (T: uint8_t, uint16_t, uint32_t or
// uint64_t, the raw bits of the element); returns the cudaError_t of the launch.
template <class T>
cudaError_t launch_flat_forward(const PadGeometry& g, cudaStream_t s);
// The flat backward (T: float, __half, __nv_bfloat16 or double).
template <class T>
cudaError_t launch_flat_backward(const PadGeometry& g, cudaStream_t s);

}  // namespace baracuda::detail
