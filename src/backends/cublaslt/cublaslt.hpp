// Thin owner of cuBLASLt state: one handle per device (created on first use by select(), never
// inside run()), the one mapping from cublasStatus_t to Status, and dtype -> cudaDataType_t.
#pragma once

#include <cublasLt.h>

#include <string_view>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::cublaslt {

// OK for CUBLAS_STATUS_SUCCESS; otherwise LibraryError "<op>: <what>: cuBLASLt <status name>".
Status lt_status(cublasStatus_t s, std::string_view op, std::string_view what);

// The handle of the current device, created once per device and kept for the process.
// Fails (Unsupported) when there is no usable device.
Result<cublasLtHandle_t> handle_for_current_device(std::string_view op, int* device);

// cuBLASLt's data type for a baracuda dtype (f32, f64, f16, bf16, e4m3, e5m2); false otherwise.
bool data_type(DType t, cudaDataType_t* out);

}  // namespace baracuda::cublaslt
