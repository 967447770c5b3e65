// baracuda/core/half_bits.hpp — host conversions between float and the 16-bit float formats.
//
// Round-to-nearest-even, NaN kept quiet, overflow to ±inf: the same results as the CUDA
// intrinsics __float2half_rn / __float2bfloat16_rn and PyTorch's c10::Half / c10::BFloat16.
// Host-only and header-light, so host code and the float64 reference need no CUDA headers.
#pragma once

#include <cstdint>

namespace baracuda {

uint16_t float_to_f16_bits(float v);
float f16_bits_to_float(uint16_t bits);
uint16_t float_to_bf16_bits(float v);
float bf16_bits_to_float(uint16_t bits);

}  // namespace baracuda
