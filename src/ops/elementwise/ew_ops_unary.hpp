// The scalar functions of the elementwise ops of group "unary" (the 5th column of
// BARACUDA_EW_OPS, elementwise_ops.hpp): their op_<name> structs and the helpers only they use.
// ew_ops.hpp describes the structs; ew_ops_common.hpp holds what several groups share.
// Included by ew_inst_unary.cu (its kernels) and by ew_ops.hpp (every op).
#pragma once

#include "ops/elementwise/ew_ops_common.hpp"

#include "ops/elementwise/ew_ops_macros.inc"

namespace baracuda::ew {

template <class C> BARACUDA_HD C cnan() { return std::numeric_limits<C>::quiet_NaN(); }

// ------------------------------------------------------------------ unary math
EW_UN(abs) {
  F1 { UNUSED_P; if constexpr (kIsInt<C>) return iabs(x); else return m::fabs(x); }
  D1 { UNUSED_P; return g * sgn(x); }
};
EW_UN(neg) {
  F1 { UNUSED_P; if constexpr (kIsInt<C>) return wneg(x); else return -x; }
  D1 { UNUSED_P; (void)x; return -g; }
};
EW_UN(sign) {
  F1 { UNUSED_P; return sgn(x); }
  D1 { UNUSED_P; (void)x; (void)g; return C(0); }
};
EW_UN(square) {
  F1 { UNUSED_P; if constexpr (kIsInt<C>) return wmul(x, x); else return x * x; }
  D1 { UNUSED_P; return g * C(2) * x; }
};
#define EW_ROUNDING(name, fn)                                              \
  EW_UN(name) {                                                            \
    F1 { UNUSED_P; if constexpr (kIsInt<C>) return x; else return m::fn(x); } \
    D1 { UNUSED_P; (void)x; (void)g; return C(0); }                        \
  };
EW_ROUNDING(ceil, ceil)
EW_ROUNDING(floor, floor)
EW_ROUNDING(trunc, trunc)
#undef EW_ROUNDING
// p0 = 10^|decimals|, p1 = decimals < 0, p2 = decimals != 0
EW_UN(round) {
  F1 {
    if constexpr (kIsInt<C>) { UNUSED_P; return x; }
    else {
      if (p.v[2] == C(0)) return m::rint(x);
      return p.v[1] != C(0) ? m::rint(x / p.v[0]) * p.v[0] : m::rint(x * p.v[0]) / p.v[0];
    }
  }
  D1 { UNUSED_P; (void)x; (void)g; return C(0); }
};
EW_UN(frac) {
  F1 { UNUSED_P; return x - m::trunc(x); }
  D1 { UNUSED_P; (void)x; return g; }
};
// frexp's mantissa (x = m 2^e, |m| in [0.5, 1)); dm/dx = 2^-e. FrexpBoth gives m and e at once.
EW_UN(frexp) {
  static constexpr FlatDepth kDepth{.many16 = 2};
  F1 { UNUSED_P; int e; return m::frexp(x, &e); }
  D1 { UNUSED_P; int e; m::frexp(x, &e); return g * m::ldexp(C(1), -e); }
};
EW_UN(exp) {
  F1 { UNUSED_P; return m::exp(x); }
  D1 { UNUSED_P; return g * m::exp(x); }
};
EW_UN(exp2) {
  F1 { UNUSED_P; return m::exp2(x); }
  D1 { UNUSED_P; return g * m::exp2(x) * C(0.69314718055994530942); }
};
EW_UN(expm1) {
  static constexpr FlatDepth kDepth{.many16 = 2};
  F1 { UNUSED_P; return m::expm1(x); }
  D1 { UNUSED_P; return g * (m::expm1(x) + C(1)); }
};
EW_UN(log) {
  F1 { UNUSED_P; return m::log(x); }
  D1 { UNUSED_P; return g / x; }
};
EW_UN(log2) {
  F1 { UNUSED_P; return m::log2(x); }
  D1 { UNUSED_P; return g / (x * C(0.69314718055994530942)); }
};
EW_UN(log10) {
  F1 { UNUSED_P; return m::log10(x); }
  D1 { UNUSED_P; return g / (x * C(2.30258509299404568402)); }
};
EW_UN(log1p) {
  F1 { UNUSED_P; return m::log1p(x); }
  D1 { UNUSED_P; return g / (x + C(1)); }
};
EW_UN(sqrt) {
  F1 { UNUSED_P; return m::sqrt(x); }
  D1 { UNUSED_P; return g / (C(2) * m::sqrt(x)); }
};
EW_UN(rsqrt) {
  F1 { UNUSED_P; return m::rsqrt(x); }
  D1 { UNUSED_P; const C y = m::rsqrt(x); return C(-0.5) * g * y * y * y; }
};
EW_UN(cbrt) {
  F1 { UNUSED_P; return m::cbrt(x); }
  D1 { UNUSED_P; const C y = m::cbrt(x); return g / (C(3) * y * y); }
};
EW_UN(reciprocal) {
  F1 { UNUSED_P; return C(1) / x; }
  D1 { UNUSED_P; const C y = C(1) / x; return -g * y * y; }
};
EW_UN(sin) {
  F1 { UNUSED_P; return m::sin(x); }
  D1 { UNUSED_P; return g * m::cos(x); }
};
EW_UN(cos) {
  F1 { UNUSED_P; return m::cos(x); }
  D1 { UNUSED_P; return -g * m::sin(x); }
};
EW_UN(tan) {
  F1 { UNUSED_P; return m::tan(x); }
  D1 { UNUSED_P; const C y = m::tan(x); return g * (C(1) + y * y); }
};
// asin, acos, acosh, atanh backward: PyTorch's autograd formulas (separate tensor ops:
// grad * (-self * self + 1).rsqrt(), ...): x² rounded before the 1 -/- 1 (a contracted FMA
// differs near |x| = 1, where the difference cancels: dacos/dx0 f64 at x² ≈ 1 - 2.9e-4, 300 ulp),
// and rsqrt times the gradient (a division by sqrt held the bf16 backward at 59 % of copy).
EW_UN(asin) {
  F1 { UNUSED_P; return m::asin(x); }
  D1 { UNUSED_P; return g * m::rsqrt(C(1) - m::mul_rn(x, x)); }
};
EW_UN(acos) {
  F1 { UNUSED_P; return m::acos(x); }
  D1 { UNUSED_P; return -g * m::rsqrt(C(1) - m::mul_rn(x, x)); }
};
EW_UN(atan) {
  F1 { UNUSED_P; return m::atan(x); }
  D1 { UNUSED_P; return g / (x * x + C(1)); }
};
EW_UN(sinh) {
  F1 { UNUSED_P; return m::sinh(x); }
  D1 { UNUSED_P; return g * m::cosh(x); }
};
EW_UN(cosh) {
  F1 { UNUSED_P; return m::cosh(x); }
  D1 { UNUSED_P; return g * m::sinh(x); }
};
EW_UN(tanh) {
  F1 { UNUSED_P; return m::tanh(x); }
  D1 { UNUSED_P; const C y = m::tanh(x); return g * (C(1) - y * y); }
};
EW_UN(asinh) {
  F1 { UNUSED_P; return m::asinh(x); }
  D1 { UNUSED_P; return g / m::sqrt(x * x + C(1)); }
};
EW_UN(acosh) {
  F1 { UNUSED_P; return m::acosh(x); }
  D1 { UNUSED_P; return g * m::rsqrt(m::mul_rn(x, x) - C(1)); }
};
EW_UN(atanh) {
  F1 { UNUSED_P; return m::atanh(x); }
  D1 { UNUSED_P; return g / (C(1) - m::mul_rn(x, x)); }
};
EW_UN(sinc) {
  static constexpr FlatDepth kDepth{.one16 = 1, .many = 2};
  F1 {
    UNUSED_P;
    if (x == C(0)) return C(1);
    const C px = C(3.14159265358979323846) * x;
    return m::sin(px) / px;
  }
  D1 {  // (z cos z - sin z) / z^2 at z = pi x; its Taylor series where that cancels (|z| < 1/2)
    UNUSED_P;
    const C pi = C(3.14159265358979323846);
    const C z = pi * x;
    if (m::fabs(z) < C(0.5)) {
      const C z2 = z * z;
      return g * pi * z * (C(-1) / C(3) + z2 * (C(1) / C(30) + z2 * (C(-1) / C(840) + z2 * (C(1) / C(45360)))));
    }
    return g * (z * m::cos(z) - m::sin(z)) / (z * x);
  }
};
EW_UN(deg2rad) {
  F1 { UNUSED_P; return x * C(0.017453292519943295769); }
  D1 { UNUSED_P; (void)x; return g * C(0.017453292519943295769); }
};
EW_UN(rad2deg) {
  F1 { UNUSED_P; return x * C(57.295779513082320877); }
  D1 { UNUSED_P; (void)x; return g * C(57.295779513082320877); }
};
// p0 nan replacement, p1 +inf replacement, p2 -inf replacement (resolved on the host)
EW_UN(nan_to_num) {
  F1 {
    if constexpr (kIsInt<C>) { UNUSED_P; return x; }
    else return x != x ? p.v[0] : (x == cinf<C>() ? p.v[1] : (x == -cinf<C>() ? p.v[2] : x));
  }
  D1 { UNUSED_P; return m::isfinite(x) ? g : C(0); }
};
// p0 eps (< 0: none)
EW_UN(logit) {
  static constexpr FlatDepth kDepth{.one16 = 1};
  F1 {
    // eps < 0 (PyTorch's default, no clamp): a uniform branch skips the clamp's selects, as
    // PyTorch's kernel has a lambda per case; else clamp to [eps, 1 - eps] (NaN passes)
    if (p.v[0] < C(0)) return m::log(x / (C(1) - x));
    const C lo = p.v[0], hi = C(1) - p.v[0];
    const C z = x < lo ? lo : (x > hi ? hi : x);
    return m::log(z / (C(1) - z));
  }
  D1 {
    if (p.v[0] < C(0)) return (x < C(0) || x > C(1)) ? cnan<C>() : g / (x * (C(1) - x));
    const C lo = p.v[0], hi = C(1) - p.v[0];
    return (x < lo || x > hi) ? C(0) : g / (x * (C(1) - x));
  }
};
#define EW_PRED(name, float_expr, int_expr)                                      \
  EW_UN(name) {                                                                  \
    F1 { UNUSED_P; if constexpr (kIsInt<C>) return C(int_expr); else return C(float_expr); } \
  };
EW_PRED(isfinite, m::isfinite(x), true)
EW_PRED(isinf, m::isinf(x), false)
EW_PRED(isnan, x != x, false)
EW_PRED(isposinf, x == cinf<C>(), false)
EW_PRED(isneginf, x == -cinf<C>(), false)
EW_PRED(signbit, m::signbit(x), x < 0)
#undef EW_PRED
// p0 min, p1 max, p2 has_min, p3 has_max
EW_UN(clamp) {
  F1 {
    if constexpr (kIsInt<C>) {
      C y = x;
      if (p.v[2] != C(0)) y = nan_max(y, p.v[0]);
      if (p.v[3] != C(0)) y = nan_min(y, p.v[1]);
      return y;
    } else {
      // Branch-free (a branch per element cost 20 % of bandwidth in bf16): the bounds are
      // uniform, an absent one is an infinity; a NaN bound gives NaN (x's own NaN first).
      const C lo = p.v[2] != C(0) ? p.v[0] : -cinf<C>(), hi = p.v[3] != C(0) ? p.v[1] : cinf<C>();
      const C nan_bound = lo != lo ? lo : hi;
      C y = m::fmin(m::fmax(x, lo), hi);
      y = (lo != lo || hi != hi) ? nan_bound : y;
      return x != x ? x : y;
    }
  }
  D1 {
    const bool ok = (p.v[2] == C(0) || x >= p.v[0]) && (p.v[3] == C(0) || x <= p.v[1]);
    return ok ? g : C(0);
  }
};
EW_UN(to) {
  F1 { UNUSED_P; return x; }
  D1 { UNUSED_P; (void)x; return g; }
};

}  // namespace baracuda::ew

#include "ops/elementwise/ew_ops_macros_end.inc"
