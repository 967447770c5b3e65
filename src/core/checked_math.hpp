// The one checked-arithmetic vocabulary for values a caller provides (shapes, strides, offsets,
// counts, pointers, float parameters that become integers). Every function returns false instead
// of overflowing, wrapping or converting out of range; callers turn false into a Status naming the
// operand and field. Host side.
#pragma once

#include <cmath>
#include <cstdint>

namespace baracuda {

inline bool checked_mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool checked_add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
inline bool checked_sub(int64_t a, int64_t b, int64_t* out) { return !__builtin_sub_overflow(a, b, out); }
// |a|; false for INT64_MIN (whose magnitude int64 cannot hold).
inline bool checked_abs(int64_t a, int64_t* out) {
  if (a == INT64_MIN) return false;
  *out = a < 0 ? -a : a;
  return true;
}
// |a| saturating at INT64_MAX (for ordering axes by stride: INT64_MIN sorts with the largest).
inline int64_t saturating_abs(int64_t a) { return a == INT64_MIN ? INT64_MAX : (a < 0 ? -a : a); }
// ceil(a / b) for a >= 0, b > 0, without forming a + b - 1 (which may overflow).
inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }
// a * b + c
inline bool checked_mul_add(int64_t a, int64_t b, int64_t c, int64_t* out) {
  int64_t p = 0;
  return checked_mul(a, b, &p) && checked_add(p, c, out);
}
// The product of n extents (each >= 0); false when it exceeds INT64_MAX.
inline bool checked_product(const int64_t* v, int n, int64_t* out) {
  int64_t p = 1;
  for (int i = 0; i < n; ++i)
    if (!checked_mul(p, v[i], &p)) return false;
  *out = p;
  return true;
}
// base + bytes as an address; false when it leaves [0, 2^64) (a wrapped pointer).
inline bool checked_address(const void* base, int64_t bytes, uintptr_t* out) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  if (bytes >= 0) return !__builtin_add_overflow(b, static_cast<uintptr_t>(bytes), out);
  const uintptr_t m = static_cast<uintptr_t>(-(bytes + 1)) + 1;  // |bytes| without negating INT64_MIN
  if (m > b) return false;
  *out = b - m;
  return true;
}
// A float value truncated toward zero into int64 (C's conversion, made total): false for NaN and
// for values outside [-2^63, 2^63) — converting those is undefined behaviour in C++.
inline bool checked_float_to_int(double v, int64_t* out) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}
// A float value into int64, saturating: NaN -> 0, beyond the range -> INT64_MIN / INT64_MAX.
inline int64_t saturating_float_to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v < -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

}  // namespace baracuda
