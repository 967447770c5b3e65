#include "baracuda/core/half_bits.hpp"

#include <bit>
#include <cmath>

namespace baracuda {

uint16_t float_to_f16_bits(float v) {
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
  // subnormal half: value = m * 2^-24, m = round(|v| * 2^24)
  const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;  // 24-bit significand, value = mant*2^(exp-23)
  const int shift = -exp - 1;                           // bits dropped: mant >> (exp... ) see below
  // |v| * 2^24 = mant * 2^(exp + 1); exp + 1 <= -14 so shift right by -(exp+1)
  const uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  uint32_t h = q;
  if (rem > half || (rem == half && (q & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float f16_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float m = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -m : m;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t float_to_bf16_bits(float v) {
  uint32_t x = std::bit_cast<uint32_t>(v);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bf16_bits_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

}  // namespace baracuda
