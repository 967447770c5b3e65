// Overflow-checked int64 arithmetic for shape and extent math (host side).
#pragma once

#include <cstdint>

namespace baracuda {

inline bool checked_mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool checked_add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

}  // namespace baracuda
