// baracuda/core/scalar.hpp — a host number carried in a descriptor (fill values, alphas ...).
//
// Holds an exact int64 or a double, so integer fills above 2^53 stay exact. Conversion to an
// element type happens once, at select(), with PyTorch's rules (see core/convert.hpp).
#pragma once

#include <cstdint>

namespace baracuda {

struct Scalar {
  enum class Kind : uint8_t { kFloat, kInt, kBool };
  Kind kind = Kind::kFloat;
  double f = 0.0;
  int64_t i = 0;

  constexpr Scalar() = default;
  constexpr Scalar(double v) : kind(Kind::kFloat), f(v) {}                        // NOLINT
  constexpr Scalar(float v) : kind(Kind::kFloat), f(v) {}                         // NOLINT
  constexpr Scalar(int v) : kind(Kind::kInt), f(static_cast<double>(v)), i(v) {}  // NOLINT
  constexpr Scalar(int64_t v) : kind(Kind::kInt), f(static_cast<double>(v)), i(v) {}  // NOLINT
  constexpr Scalar(bool v) : kind(Kind::kBool), f(v ? 1.0 : 0.0), i(v ? 1 : 0) {}      // NOLINT

  constexpr bool is_int() const { return kind != Kind::kFloat; }  // int or bool (i holds the value)
  constexpr bool is_bool() const { return kind == Kind::kBool; }
  constexpr double as_double() const { return is_int() ? static_cast<double>(i) : f; }

  friend constexpr bool operator==(const Scalar& a, const Scalar& b) {
    return a.kind == b.kind && (a.is_int() ? a.i == b.i : (a.f == b.f || (a.f != a.f && b.f != b.f)));
  }
};

}  // namespace baracuda
