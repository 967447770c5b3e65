// The scalar functions of the elementwise ops of group "binary" (the 5th column of
// BARACUDA_EW_OPS, elementwise_ops.hpp): their op_<name> structs and the helpers only they use.
// ew_ops.hpp describes the structs; ew_ops_common.hpp holds what several groups share.
// Included by ew_inst_binary.cu (its kernels) and by ew_ops.hpp (every op).
#pragma once

#include "ops/elementwise/ew_ops_common.hpp"

#include "ops/elementwise/ew_ops_macros.inc"

namespace baracuda::ew {

// Python floor division of floats (c10's div_floor_floating). PyTorch instantiates it on the
// storage type; by c10's operator overloads fmod, the difference and the quotient are f32 there,
// and only the floor (and its +1 snap) is kept in the 16-bit format (fmt 1: bf16, 2: f16).
// recip: b is a Python scalar, which PyTorch's kernel divides by as a multiply with the f32 (f64)
// reciprocal (recip: that reciprocal, nonzero; 0 for a tensor divisor).
template <class C> BARACUDA_HD C div_floor_f(C a, C b, C recip = C(0), C fmt = C(0)) {
  if (b == C(0)) return a / b;
  const C mod = m::fmod(a, b);
  C div = recip != C(0) ? (a - mod) * recip : (a - mod) / b;
  if (mod != C(0) && (b < C(0)) != (mod < C(0))) div -= C(1);
  if (div == C(0)) return m::signbit(a) != m::signbit(b) ? C(-0.0) : C(0.0);  // copysign(0, a / b)
  C fl = round_to_data(m::floor(div), fmt);
  if (div - fl > C(0.5)) fl = round_to_data(fl + C(1), fmt);
  return fl;
}
template <class C> BARACUDA_HD C div_floor_any(C a, C b, C recip = C(0), C fmt = C(0)) {
  if constexpr (kIsInt<C>) {
    (void)recip;
    (void)fmt;
    const int64_t q = idiv(a, b);
    if ((a < 0) != (b < 0) && imod(a, b) != 0) return q - 1;
    return q;
  } else {
    return div_floor_f(a, b, recip, fmt);
  }
}
// Integer power by squaring with PyTorch's negative-exponent rule.
BARACUDA_HD int64_t ipow(int64_t a, int64_t b) {
  if (b < 0) {
    if (a == 1) return 1;
    if (a == -1) return (b & 1) ? -1 : 1;
    return 0;
  }
  int64_t r = 1;
  while (b) {
    if (b & 1) r = wmul(r, a);
    b >>= 1;
    a = wmul(a, a);
  }
  return r;
}

// ------------------------------------------------------------------ binary arithmetic
// p0 alpha
EW_UN(add) {
  F2 { if constexpr (kIsInt<C>) return wadd(a, wmul(p.v[0], b)); else return a + p.v[0] * b; }
  D2 { (void)a; (void)b; da = g; db = p.v[0] * g; }
};
EW_UN(sub) {
  F2 { if constexpr (kIsInt<C>) return wsub(a, wmul(p.v[0], b)); else return a - p.v[0] * b; }
  D2 { (void)a; (void)b; da = g; db = -(p.v[0] * g); }
};
EW_UN(rsub) {
  F2 { if constexpr (kIsInt<C>) return wsub(b, wmul(p.v[0], a)); else return b - p.v[0] * a; }
  D2 { (void)a; (void)b; da = -(p.v[0] * g); db = g; }
};
EW_UN(mul) {
  F2 { UNUSED_P; if constexpr (kIsInt<C>) return wmul(a, b); else return a * b; }
  D2 { UNUSED_P; da = g * b; db = g * a; }
};
// p0 = 1: b is the reciprocal of a scalar divisor, multiplied (PyTorch's division by a Python
// scalar; the scalar has no gradient). Else a true division.
EW_UN(div) {
  F2 { return p.v[0] != C(0) ? a * b : a / b; }
  D2 { da = p.v[0] != C(0) ? g * b : g / b; db = -g * a / (b * b); }
};
// p0 = 1: b holds 1 / divisor (a Python-scalar divisor); else on bf16 / f16 data (p3 = 1 / 2) the
// quotient is rounded to that format before the trunc (PyTorch: trunc(Half / Half), a Half quotient)
EW_UN(div_trunc) {
  F2 {
    if constexpr (kIsInt<C>) return idiv(a, b);
    else return m::trunc(p.v[0] != C(0) ? a * b : round_to_data(a / b, p.v[3]));
  }
  D2 { UNUSED_P; (void)a; (void)b; (void)g; da = C(0); db = C(0); }
};
// p0 = 1: b is a Python scalar (PyTorch's reciprocal form); p3: the data's 16-bit format
EW_UN(div_floor) {
  F2 { return div_floor_any(a, b, p.v[0] != C(0) ? p.v[1] : C(0), p.v[3]); }
  F2_DENSE { return div_floor_any(a, b, C(0), p.v[3]); }
  D2 { UNUSED_P; (void)a; (void)b; (void)g; da = C(0); db = C(0); }
};
EW_UN(remainder) {
  F2 {
    UNUSED_P;
    if constexpr (kIsInt<C>) {
      int64_t r = imod(a, b);
      if (r != 0 && (r < 0) != (b < 0)) r = wadd(r, b);
      return r;
    } else {
      C r = m::fmod(a, b);
      if (r != C(0) && (b < C(0)) != (r < C(0))) r += b;
      return r;
    }
  }
  D2 { UNUSED_P; da = g; db = -g * div_floor_any(a, b); }
};
EW_UN(fmod) {
  F2 { UNUSED_P; if constexpr (kIsInt<C>) return imod(a, b); else return m::fmod(a, b); }
  D2 { UNUSED_P; da = g; db = -g * m::trunc(a / b); }
};
// p0: how PyTorch computes tensor ** Python scalar (ew::kernel_params picks it; b holds the
// exponent, rounded to the data's format): 0 pow(a, b) (also tensor ** tensor); 1 a (exponent
// 1); 2 one (0); 3 sqrt (0.5); 4 rsqrt (-0.5); 5 1 / a (-1); 6 a * a (2 after rounding);
// 7 a * a * a with the square rounded to the data's format (p1: 1 bf16, 2 f16, 0 none);
// 8 1 / (a * a) divided in double, the square rounded likewise. The derivative is pow's.
EW_UN(pow) {
  static constexpr FlatDepth kDepth{.many = 2};
  F2 {
    if constexpr (kIsInt<C>) {
      UNUSED_P;
      return ipow(a, b);
    } else {
      if (p.v[0] == C(0)) return m::pow(a, b);  // the common case first: one uniform branch
      switch (static_cast<int>(p.v[0])) {
        case 1: return a;
        case 2: return C(1);
        case 3: return m::sqrt(a);
        case 4: return m::rsqrt(a);
        case 5: return C(1) / a;
        case 6: return a * a;
        case 7: return round_to_data(a * a, p.v[1]) * a;
        case 8: return static_cast<C>(1.0 / static_cast<double>(round_to_data(a * a, p.v[1])));
        default: return m::pow(a, b);
      }
    }
  }
  F2_DENSE {
    UNUSED_P;
    if constexpr (kIsInt<C>) return ipow(a, b);
    else return m::pow(a, b);
  }
  D2 {
    UNUSED_P;
    da = b == C(0) ? C(0) : g * b * m::pow(a, b - C(1));
    db = (a == C(0) && b >= C(0)) ? C(0) : g * m::pow(a, b) * m::log(a);
  }
};
// pow's function, but computed in f64: not measured with two vectors per thread, so it keeps one
struct op_float_power : op_pow {
  static constexpr FlatDepth kDepth{};
};
EW_UN(atan2) {
  F2 { UNUSED_P; return m::atan2(a, b); }
  D2 {
    UNUSED_P;
    const C den = a * a + b * b;
    const C recip = den == C(0) ? C(0) : C(1) / den;
    da = g * b * recip;
    db = g * -a * recip;
  }
};
EW_UN(hypot) {
  F2 { UNUSED_P; return m::hypot(a, b); }
  D2 {
    UNUSED_P;
    const C h = m::hypot(a, b);
    da = g * a / h;
    db = g * b / h;
  }
};
EW_UN(copysign) {
  F2 { UNUSED_P; return m::copysign(a, b); }
  D2 {
    UNUSED_P;
    da = a == C(0) ? C(0) : g * (m::copysign(a, b) / a);
    db = C(0);
  }
};
// PyTorch: an integer exponent scales exactly (its ldexp kernel); a float one is a * 2^b with 2^b
// rounded to the exponent's 16-bit format (p1 = 1 / 2), a separate pow. p0 = 1: integer exponent;
// 2: b already holds 2^b (a Python-float exponent: PyTorch's pow(2.0, b) in double).
template <class C> BARACUDA_HD C ldexp_factor(C b, const P<C>& p) {
  return p.v[0] == C(2) ? b : round_to_data(m::pow(C(2), b), p.v[1]);
}
EW_UN(ldexp) {
  static constexpr FlatDepth kDepth{.many = 2};
  F2 {
    if (p.v[0] == C(1) && m::fabs(b) < C(2147483648.0)) return m::ldexp(a, static_cast<int>(b));
    return a * ldexp_factor(b, p);
  }
  D2 { da = g * (p.v[0] == C(2) ? b : m::pow(C(2), b)); db = C(0); }
};
EW_UN(logaddexp) {
  F2 {
    UNUSED_P;
    if (m::isinf(a) && a == b) return a;
    const C mx = a > b ? a : b;
    return mx + m::log1p(m::exp(-m::fabs(a - b)));
  }
  D2 {
    UNUSED_P;
    da = g / (C(1) + m::exp(b - a));
    db = g / (C(1) + m::exp(a - b));
  }
};
EW_UN(logaddexp2) {
  static constexpr FlatDepth kDepth{.many16 = 2};
  F2 {
    UNUSED_P;
    if (m::isinf(a) && a == b) return a;
    const C mx = a > b ? a : b;
    return mx + m::log1p(m::exp2(-m::fabs(a - b))) * C(1.44269504088896340736);
  }
  D2 {
    UNUSED_P;
    da = g / (C(1) + m::exp2(b - a));
    db = g / (C(1) + m::exp2(a - b));
  }
};
EW_UN(maximum) {
  F2 { UNUSED_P; return nan_max(a, b); }
  D2 {
    UNUSED_P;
    da = a == b ? g / C(2) : (a < b ? C(0) : g);
    db = a == b ? g / C(2) : (a > b ? C(0) : g);
  }
};
EW_UN(minimum) {
  F2 { UNUSED_P; return nan_min(a, b); }
  D2 {
    UNUSED_P;
    da = a == b ? g / C(2) : (a > b ? C(0) : g);
    db = a == b ? g / C(2) : (a < b ? C(0) : g);
  }
};
EW_UN(fmax) {
  F2 { UNUSED_P; if constexpr (kIsInt<C>) return a > b ? a : b; else return m::fmax(a, b); }
  D2 {
    UNUSED_P;
    const bool to_a = a >= b || b != b;
    da = to_a ? g : C(0);
    db = to_a ? C(0) : g;
  }
};
EW_UN(fmin) {
  F2 { UNUSED_P; if constexpr (kIsInt<C>) return a < b ? a : b; else return m::fmin(a, b); }
  D2 {
    UNUSED_P;
    const bool to_a = a <= b || b != b;
    da = to_a ? g : C(0);
    db = to_a ? C(0) : g;
  }
};
// nextafter one ulp of the result's format, as PyTorch: p0 = 0 the compute type's own
// (f32 / f64), 1 bf16, 2 f16 (c10's nextafter on the 16-bit pattern: a literal operand is
// rounded to that format first). a and b hold values of the format (a Scalar b was rounded to it
// by kernel_literal). f32 and bf16 step the f32 pattern by 1 or 2^16 (a bf16 pattern is the upper
// half of its f32 one); f16 converts to its pattern and back. One integer step for every format:
// the per-format paths side by side (nextafterf, software f16 conversions) made the bf16 flat
// kernel 1,600 SASS instructions (now 552) and 0.83x PyTorch (now 0.95x).
template <class U> BARACUDA_HD U ulp_step_toward(U from, U to, U sign, U step) {
  const U af = from & static_cast<U>(~sign), at = to & static_cast<U>(~sign);
  // one step toward `to`; from a zero: `to`'s zero, else the smallest subnormal of its sign
  U r = (af > at || ((from ^ to) & sign)) ? static_cast<U>(from - step) : static_cast<U>(from + step);
  r = af == 0 ? (at == 0 ? to : static_cast<U>((to & sign) | step)) : r;
  return from == to ? from : r;
}
EW_UN(nextafter) {
  static constexpr FlatDepth kDepth{.many16 = 2};
  F2 {
    if constexpr (std::is_same_v<C, double>)
      if (p.v[0] == C(0)) return m::nextafter(a, b);  // f64 data
    const bool nan = a != a || b != b;  // a select, not an early return: no divergent exit per element
    const float fa = static_cast<float>(a), fb = static_cast<float>(b);
    float r;
    if (p.v[0] == C(2)) {
#if defined(__CUDA_ARCH__)
      r = __half2float(__ushort_as_half(
          ulp_step_toward<uint16_t>(__half_as_ushort(__float2half_rn(fa)), __half_as_ushort(__float2half_rn(fb)), 0x8000u, 1u)));
#else
      r = f16_bits_to_float(ulp_step_toward<uint16_t>(float_to_f16_bits(fa), float_to_f16_bits(fb), 0x8000u, 1u));
#endif
    } else {
      const uint32_t step = p.v[0] == C(1) ? 0x10000u : 1u;
      r = std::bit_cast<float>(ulp_step_toward<uint32_t>(std::bit_cast<uint32_t>(fa), std::bit_cast<uint32_t>(fb), 0x80000000u, step));
    }
    return nan ? a + b : static_cast<C>(r);
  }
};
EW_UN(heaviside) {
  F2 { UNUSED_P; return a == C(0) ? b : C(a > C(0)); }
};

}  // namespace baracuda::ew

#include "ops/elementwise/ew_ops_macros_end.inc"
