#include "backends/cublaslt/cublaslt.hpp"

#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

#include "core/validate.hpp"

namespace baracuda::cublaslt {

Status lt_status(cublasStatus_t s, std::string_view op, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  return error(StatusCode::kLibraryError, op, ": ", what, ": cuBLASLt ", cublasLtGetStatusName(s), " (",
               cublasLtGetStatusString(s), ")");
}

Result<cublasLtHandle_t> handle_for_current_device(std::string_view op, int* device) {
  // Handles live for the process: destroying them at exit races the CUDA runtime's own teardown.
  static std::mutex mu;
  static std::vector<cublasLtHandle_t> handles;
  int dev = -1;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) {
    (void)cudaGetLastError();
    return error(StatusCode::kUnsupported, op, ": no CUDA device (", cudaGetErrorName(e),
                 "); cuBLASLt needs one to choose an algorithm");
  }
  std::lock_guard<std::mutex> lock(mu);
  if (handles.size() <= static_cast<size_t>(dev)) handles.resize(dev + 1, nullptr);
  if (handles[dev] == nullptr) {
    cublasLtHandle_t h = nullptr;
    if (Status st = lt_status(cublasLtCreate(&h), op, "cublasLtCreate"); !st.ok()) return st;
    handles[dev] = h;
  }
  *device = dev;
  return handles[dev];
}

bool data_type(DType t, cudaDataType_t* out) {
  switch (t) {
    case DType::f32: *out = CUDA_R_32F; return true;
    case DType::f64: *out = CUDA_R_64F; return true;
    case DType::f16: *out = CUDA_R_16F; return true;
    case DType::bf16: *out = CUDA_R_16BF; return true;
    case DType::f8e4m3: *out = CUDA_R_8F_E4M3; return true;
    case DType::f8e5m2: *out = CUDA_R_8F_E5M2; return true;
    default: return false;
  }
}

}  // namespace baracuda::cublaslt
