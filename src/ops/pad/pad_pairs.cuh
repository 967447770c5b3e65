// The pairs pad forward (pad_pairs.cu; see PadPairs in pad_geometry.hpp).
#pragma once

#include <cuda_runtime.h>

#include "ops/pad/pad_geometry.hpp"

namespace baracuda::detail {

// Launches the pairs forward for g.pr (2-byte elements); returns the cudaError_t of the launch.
cudaError_t launch_pairs_forward(const PadGeometry& g, cudaStream_t s);

}  // namespace baracuda::detail
