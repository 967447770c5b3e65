// The scalar functions of the elementwise ops of group "logic" (the 5th column of
// BARACUDA_EW_OPS, elementwise_ops.hpp): their op_<name> structs and the helpers only they use.
// ew_ops.hpp describes the structs; ew_ops_common.hpp holds what several groups share.
// Included by ew_inst_logic.cu (its kernels) and by ew_ops.hpp (every op).
#pragma once

#include "ops/elementwise/ew_ops_common.hpp"

#include "ops/elementwise/ew_ops_macros.inc"

namespace baracuda::ew {

// trailing zero bits of x != 0
BARACUDA_HD int ctz32(uint32_t x) {
#ifdef __CUDA_ARCH__
  return __ffs(static_cast<int>(x)) - 1;
#else
  return __builtin_ctz(x);
#endif
}
// Stein's binary gcd: shifts, min / max and a subtraction per step (no division; the warp runs
// its slowest lane's steps, and a 32-bit remainder costs more than a whole step here)
BARACUDA_HD uint32_t ugcd32(uint32_t u, uint32_t v) {
  if (u == 0 || v == 0) return u | v;
  const int k = ctz32(u | v);
  u >>= ctz32(u);
  do {
    v >>= ctz32(v);
    const uint32_t lo = u < v ? u : v, hi = u < v ? v : u;
    u = lo;
    v = hi - lo;
  } while (v != 0);
  return u << k;
}
BARACUDA_HD bool fits_u32(int64_t a, int64_t b) {
  return static_cast<uint64_t>(a) <= 0xffffffffu && static_cast<uint64_t>(b) <= 0xffffffffu;
}
BARACUDA_HD int64_t igcd(int64_t a, int64_t b) {
  a = iabs(a);
  b = iabs(b);
  if (fits_u32(a, b)) return ugcd32(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
  while (b != 0) {
    const int64_t t = static_cast<int64_t>(static_cast<uint64_t>(a) % static_cast<uint64_t>(b));
    a = b;
    b = t;
  }
  return a;
}

// ------------------------------------------------------------------ unary math (group logic)
EW_UN(bitwise_not) {
  F1 { UNUSED_P; if constexpr (kIsInt<C>) return ~x; else return C(0); }
};
EW_UN(logical_not) {
  F1 { UNUSED_P; return C(x == C(0)); }
};

// ------------------------------------------------------------------ binary arithmetic (group logic)
EW_UN(gcd) {
  F2 { UNUSED_P; return igcd(a, b); }
};
// PyTorch: abs(a / g * b) in the arithmetic of the integer type (C's int for i8 / i16 / u8 / i32,
// int64 for i64), so a product that wraps is wrapped before the abs (lcm(-12, 917260141) on i32 is
// 1877780196; on i16 lcm(200, 199) = abs(39800) is stored as -25736). p0: 32 or 64.
EW_UN(lcm) {
  F2 {
    const int64_t g = igcd(a, b);
    if (g == 0) return 0;
    // a / g is exact: in 32 bits when both fit (a 64-bit division is a long software sequence)
    const int64_t q = fits32(a) && fits32(g) ? static_cast<int32_t>(a) / static_cast<int32_t>(g) : a / g;
    int64_t r = wmul(q, b);
    if (p.v[0] != 64) r = static_cast<int32_t>(static_cast<uint32_t>(r));  // wrap to 32 bits
    return iabs(r);
  }
};

// ------------------------------------------------------------------ comparison and logic
#define EW_CMP(name, expr) \
  EW_UN(name) { F2 { UNUSED_P; return C(expr); } };
EW_CMP(eq, a == b)
EW_CMP(ne, a != b)
EW_CMP(lt, a < b)
EW_CMP(le, a <= b)
EW_CMP(gt, a > b)
EW_CMP(ge, a >= b)
EW_CMP(logical_and, a != C(0) && b != C(0))
EW_CMP(logical_or, a != C(0) || b != C(0))
EW_CMP(logical_xor, (a != C(0)) != (b != C(0)))
#undef EW_CMP
// p0 rtol, p1 atol, p2 equal_nan, p3 the data's 16-bit format (1 bf16, 2 f16, else 0).
// PyTorch's composite (TensorCompare.cpp): a == b, or a finite |a - b| <= atol + |rtol * b|,
// every step a kernel of its own, so rounded to the data's dtype and never fused into an FMA.
// Integer and bool data: the test runs in f32 (PyTorch casts to the default dtype), and p0, p1
// hold the f32 bit patterns of rtol and atol (ew::kernel_params), as p.v is integral there;
// p3 = 1 there: both zero, equality only (PyTorch returns before the f32 test).
EW_UN(isclose) {
  F2 {
    if (a == b) return C(1);
    if constexpr (kIsInt<C>) {
      if (p.v[3] != 0) return C(0);
      const float rtol = std::bit_cast<float>(static_cast<uint32_t>(p.v[0]));
      const float atol = std::bit_cast<float>(static_cast<uint32_t>(p.v[1]));
      const float fb = static_cast<float>(b);
      const float actual = m::fabs(static_cast<float>(a) - fb);
      const float allowed = atol + m::fabs(m::mul_rn(rtol, fb));
      return C(m::isfinite(actual) && actual <= allowed);
    } else {
      if (p.v[2] != C(0) && a != a && b != b) return C(1);
      const C actual = m::fabs(round_to_data(a - b, p.v[3]));
      const C allowed = round_to_data(p.v[1] + round_to_data(m::fabs(m::mul_rn(p.v[0], b)), p.v[3]), p.v[3]);
      return C(m::isfinite(actual) && actual <= allowed);
    }
  }
};
#define EW_BITWISE(name, op) \
  EW_UN(name) { F2 { UNUSED_P; if constexpr (kIsInt<C>) return a op b; else return C(0); } };
EW_BITWISE(bitwise_and, &)
EW_BITWISE(bitwise_or, |)
EW_BITWISE(bitwise_xor, ^)
#undef EW_BITWISE
EW_UN(bitwise_left_shift) {
  F2 {
    UNUSED_P;
    if constexpr (kIsInt<C>) return (b < 0 || b >= 64) ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << b);
    else return C(0);
  }
};
EW_UN(bitwise_right_shift) {
  F2 {
    UNUSED_P;
    if constexpr (kIsInt<C>) return (b < 0 || b >= 64) ? (a < 0 ? -1 : 0) : (a >> b);
    else return C(0);
  }
};

}  // namespace baracuda::ew

#include "ops/elementwise/ew_ops_macros_end.inc"
