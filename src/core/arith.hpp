// Scalar arithmetic that must mean the same on the host (references) and the device (kernels):
// integer wrap-around in 64 bits (narrowing on store then reproduces PyTorch's wrap-around in
// every width) and the NaN rules of max / min.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/hd.hpp"

namespace baracuda {

BARACUDA_HD int64_t wadd(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
BARACUDA_HD int64_t wsub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
BARACUDA_HD int64_t wmul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
BARACUDA_HD int64_t wneg(int64_t a) { return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a)); }

// NaN-ignoring max / min that order -0 below +0: what the GPU's fmax / fmin do (the C library
// may return either zero, so the host takes its own path).
namespace arith_detail {
template <class T>
BARACUDA_HD T host_fmax(T a, T b) {
  if (a != a) return b;
  if (b != b) return a;
  if (a > b) return a;
  if (b > a) return b;
  return std::signbit(a) ? b : a;
}
template <class T>
BARACUDA_HD T host_fmin(T a, T b) {
  if (a != a) return b;
  if (b != b) return a;
  if (a < b) return a;
  if (b < a) return b;
  return std::signbit(a) ? a : b;
}
}  // namespace arith_detail

#if defined(__CUDA_ARCH__)
BARACUDA_HD float fmax(float a, float b) { return ::fmaxf(a, b); }
BARACUDA_HD double fmax(double a, double b) { return ::fmax(a, b); }
BARACUDA_HD float fmin(float a, float b) { return ::fminf(a, b); }
BARACUDA_HD double fmin(double a, double b) { return ::fmin(a, b); }
#else
BARACUDA_HD float fmax(float a, float b) { return arith_detail::host_fmax(a, b); }
BARACUDA_HD double fmax(double a, double b) { return arith_detail::host_fmax(a, b); }
BARACUDA_HD float fmin(float a, float b) { return arith_detail::host_fmin(a, b); }
BARACUDA_HD double fmin(double a, double b) { return arith_detail::host_fmin(a, b); }
#endif

// max / min that propagate NaN (the first operand's when both are) and order -0 < +0, as
// PyTorch's maximum / minimum / clamp / amax on CUDA.
template <class C>
BARACUDA_HD C nan_max(C a, C b) {
  if constexpr (std::is_integral_v<C>) return a > b ? a : b;
  else return (a != a) ? a : ((b != b) ? b : fmax(a, b));
}
template <class C>
BARACUDA_HD C nan_min(C a, C b) {
  if constexpr (std::is_integral_v<C>) return a < b ? a : b;
  else return (a != a) ? a : ((b != b) ? b : fmin(a, b));
}

}  // namespace baracuda
