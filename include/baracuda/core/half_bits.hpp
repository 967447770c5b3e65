// baracuda/core/half_bits.hpp — conversions between float and the 16-bit float formats.
//
// Round-to-nearest-even, NaN kept quiet, overflow to ±inf: the same results as the CUDA
// intrinsics __float2half_rn / __float2bfloat16_rn and PyTorch's c10::Half / c10::BFloat16.
// constexpr and header-only, without CUDA headers: host code and the float64 reference use
// them (device code takes the hardware conversions, which give the same results).
#pragma once

#include <bit>
#include <cstdint>

namespace baracuda {

constexpr uint16_t float_to_f16_bits(float v) {
  const uint32_t x = std::bit_cast<uint32_t>(v);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  const int exp = static_cast<int>(abs >> 23) - 127;
  if (exp >= -14) {  // normal half
    const uint32_t mant = abs & 0x7fffffu;
    uint32_t h = (static_cast<uint32_t>(exp + 15) << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carries into the exponent correctly
    return static_cast<uint16_t>(sign | h);
  }
  if (exp < -25) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
  // subnormal half: value = m * 2^-24, m = round(|v| * 2^24) = round(mant * 2^(exp + 1)),
  // mant the 24-bit significand; exp + 1 <= -14, so a right shift by -(exp + 1)
  const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  const int shift = -exp - 1;
  const uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  uint32_t h = q;
  if (rem > half || (rem == half && (q & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

constexpr float f16_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float m = static_cast<float>(mant) * 5.9604644775390625e-08f;  // mant * 2^-24, exact
    return sign ? -m : m;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

constexpr uint16_t float_to_bf16_bits(float v) {
  uint32_t x = std::bit_cast<uint32_t>(v);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

constexpr float bf16_bits_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

}  // namespace baracuda
