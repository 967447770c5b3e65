// baracuda/core/cuda_types.hpp — DTypeOf for CUDA's own element types, so that
// TensorRef::of(const __half*, ...) works. Optional: includes the CUDA half/fp8 headers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "baracuda/core/dtype.hpp"

namespace baracuda {
template <> struct DTypeOf<__half> { static constexpr DType value = DType::f16; };
template <> struct DTypeOf<__nv_bfloat16> { static constexpr DType value = DType::bf16; };
template <> struct DTypeOf<__nv_fp8_e4m3> { static constexpr DType value = DType::f8e4m3; };
template <> struct DTypeOf<__nv_fp8_e5m2> { static constexpr DType value = DType::f8e5m2; };
}  // namespace baracuda
