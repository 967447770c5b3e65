#include "core/cuda_check.hpp"

#include "core/validate.hpp"

namespace baracuda {

Status cuda_status(cudaError_t e, std::string_view op) {
  if (e == cudaSuccess) return {};
  return error(StatusCode::kCudaError, op, ": ", cudaGetErrorName(e), ": ", cudaGetErrorString(e));
}

}  // namespace baracuda
