// Division by a divisor fixed on the host, for unsigned numerators below 2^31, without a
// hardware divide (a 32-bit integer division is ~20 instructions on the GPU):
//   q = (hi32(n · mul) + n) >> shift,   l = ceil(log2 d),  mul = floor(2^32 · (2^l − d) / d) + 1
// (Granlund & Montgomery, "Division by invariant integers using multiplication", 1994, the
// round-up method; t + n needs 33 bits in general, so numerators are limited to n < 2^31).
// Host- and device-safe plain data: kernels receive it inside their parameter structs.
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace baracuda::detail {

struct FastDiv {
  uint32_t d = 1;
  uint32_t mul = 1;
  uint32_t shift = 0;

  FastDiv() = default;
  // d in [1, 2^31].
  explicit constexpr FastDiv(uint32_t divisor) : d(divisor) {
    uint32_t l = 0;
    while ((uint64_t{1} << l) < divisor) ++l;
    shift = l;
    mul = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << l) - divisor)) / divisor + 1);
  }
  // n / d for n < 2^31.
  BARACUDA_HD uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    return (__umulhi(n, mul) + n) >> shift;
#else
    return (static_cast<uint32_t>((static_cast<uint64_t>(n) * mul) >> 32) + n) >> shift;
#endif
  }
};

}  // namespace baracuda::detail
