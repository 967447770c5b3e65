// The one launch-and-check helper for bespoke kernels (device code only; included by .cu files).
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace baracuda {

// Launches and returns the launch error (configuration errors, missing kernel image ...).
// Never synchronizes: asynchronous faults surface at the caller's next synchronization.
template <class... KArgs, class... Args>
cudaError_t launch_kernel(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                          cudaStream_t stream, Args&&... args) {
  kernel<<<grid, block, smem, stream>>>(std::forward<Args>(args)...);
  return cudaGetLastError();
}

}  // namespace baracuda

// For launchers that chain several CUDA calls (memsets, kernels, CUB): returns the first error.
#define BARACUDA_CUDA_TRY(expr)          \
  do {                                   \
    const cudaError_t e_ = (expr);       \
    if (e_ != cudaSuccess) return e_;    \
  } while (0)
