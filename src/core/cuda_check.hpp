// The one mapping from CUDA runtime errors to Status, used by every op.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include "baracuda/core/status.hpp"

namespace baracuda {

// OK for cudaSuccess; otherwise CudaError "<op>: <cudaErrorName>: <description>".
Status cuda_status(cudaError_t e, std::string_view op);

}  // namespace baracuda
