// The scalar functions of the elementwise ops of group "special" (the 5th column of
// BARACUDA_EW_OPS, elementwise_ops.hpp): their op_<name> structs.
// ew_ops.hpp describes the structs; ew_ops_common.hpp holds what several groups share.
// Included by ew_inst_special.cu (its kernels) and by ew_ops.hpp (every op).
#pragma once

#include "ops/elementwise/ew_ops_common.hpp"

#include "ops/elementwise/ew_ops_macros.inc"

namespace baracuda::ew {

// ------------------------------------------------------------------ special functions
EW_UN(erf) {
  F1 { UNUSED_P; return m::erf(x); }
  D1 { UNUSED_P; return g * C(1.12837916709551257390) * m::exp(-x * x); }
};
EW_UN(erfc) {
  F1 { UNUSED_P; return m::erfc(x); }
  D1 { UNUSED_P; return -g * C(1.12837916709551257390) * m::exp(-x * x); }
};
EW_UN(erfinv) {
  static constexpr FlatDepth kDepth{.many16 = 2};
  F1 { UNUSED_P; return m::erfinv(x); }
  D1 { UNUSED_P; const C y = m::erfinv(x); return g * C(0.88622692545275801365) * m::exp(y * y); }
};
EW_UN(lgamma) {
  static constexpr FlatDepth kDepth{.one = 1, .one16 = 1, .vec_one = 4};  // long series / recurrences
  F1 { UNUSED_P; return m::lgamma(x); }
  D1 { UNUSED_P; return g * m::digamma(x); }
};
EW_UN(digamma) {
  static constexpr FlatDepth kDepth{.one = 1, .one16 = 1};  // long series / recurrences
  F1 { UNUSED_P; return m::digamma(x); }
  D1 { UNUSED_P; return g * m::trigamma(x); }
};
EW_UN(erfcx) {
  F1 { UNUSED_P; return m::erfcx(x); }
  D1 { UNUSED_P; return g * (C(2) * x * m::erfcx(x) - C(1.12837916709551257390)); }
};
EW_UN(ndtri) {
  F1 { UNUSED_P; return m::ndtri(x); }
  D1 { UNUSED_P; const C y = m::ndtri(x); return g * C(2.50662827463100050242) * m::exp(y * y / C(2)); }
};
EW_UN(i0) {
  F1 { UNUSED_P; return m::bessel_i0(x); }
  D1 { UNUSED_P; return g * m::bessel_i1(x); }
};
EW_UN(i1) {
  F1 { UNUSED_P; return m::bessel_i1(x); }
  D1 {  // I1'(x) = I0(x) - I1(x) / x, 1/2 at 0
    UNUSED_P;
    if (x == C(0)) return g * C(0.5);
    return g * (m::bessel_i0(x) - m::bessel_i1(x) / x);
  }
};
EW_UN(i0e) {  // exp(-|x|) I0(x); i0e'(x) = i1e(x) - sgn(x) i0e(x) (0 at the kink x = 0, as PyTorch)
  F1 { UNUSED_P; return m::bessel_i0e(x); }
  D1 { UNUSED_P; return g * (m::bessel_i1e(x) - sgn(x) * m::bessel_i0e(x)); }
};
EW_UN(i1e) {  // exp(-|x|) I1(x); i1e'(x) = i0e(x) - i1e(x) (sgn(x) + 1/x), 1/2 at 0
  static constexpr FlatDepth kDepth{.vec_many = 4};  // backward: 4 bf16 a thread (FlatDepth note)
  F1 { UNUSED_P; return m::bessel_i1e(x); }
  D1 {
    UNUSED_P;
    if (x == C(0)) return g * C(0.5);
    return g * (m::bessel_i0e(x) - m::bessel_i1e(x) * (sgn(x) + C(1) / x));
  }
};
// (a, x): regularized lower / upper incomplete gamma; differentiable in x only (PyTorch has no
// derivative in a either)
EW_UN(igamma) {
  static constexpr FlatDepth kDepth{.vec_many = 4};  // divergent series (FlatDepth note)
  F2 { UNUSED_P; return m::igamma_pq(a, b, false); }
  D2 { UNUSED_P; da = C(0); db = g * m::igamma_dx(a, b); }
};
EW_UN(igammac) {
  static constexpr FlatDepth kDepth{.vec_many = 2};  // divergent lanes (FlatDepth note)
  F2 { UNUSED_P; return m::igamma_pq(a, b, true); }
  D2 { UNUSED_P; da = C(0); db = -g * m::igamma_dx(a, b); }
};
// p0 = n
EW_UN(polygamma) {
  static constexpr FlatDepth kDepth{.one = 1, .one16 = 1, .vec_many = 2};  // long series / recurrences, divergent
  F1 { return m::polygamma(static_cast<int>(p.v[0]), x); }
  D1 { return g * m::polygamma(static_cast<int>(p.v[0]) + 1, x); }
};
EW_UN(zeta) {
  static constexpr FlatDepth kDepth{.vec_many = 2};  // divergent series (FlatDepth note)
  F2 { UNUSED_P; return m::zeta(a, b); }
};
EW_UN(sigmoid) {
  F1 { UNUSED_P; return sigmoid(x); }
  D1 { UNUSED_P; const C y = sigmoid(x); return g * (C(1) - y) * y; }
};
EW_UN(ndtr) {
  F1 { UNUSED_P; return C(0.5) * m::erfc(-x * C(0.70710678118654752440)); }
  D1 { UNUSED_P; return g * m::exp(C(-0.5) * x * x) * C(0.39894228040143267794); }
};
EW_UN(log_ndtr) {
  F1 {
    UNUSED_P;
    const C t = x * C(0.70710678118654752440);
    if (x < C(-1)) return m::log(m::erfcx(-t) / C(2)) - t * t;
    return m::log1p(-m::erfc(t) / C(2));
  }
  D1 { const C y = f(x, p); return g / (C(2.50662827463100050242) * m::exp(y + x * x / C(2))); }
};
EW_UN(entr) {
  static constexpr FlatDepth kDepth{.many16 = 2};
  F1 {
    UNUSED_P;
    if (x != x) return x;
    if (x > C(0)) return -x * m::log(x);
    if (x == C(0)) return C(0);
    return -cinf<C>();
  }
  D1 { UNUSED_P; return g * -(C(1) + m::log(x)); }
};
EW_UN(xlogy) {
  static constexpr FlatDepth kDepth{.many16 = 2};
  F2 { UNUSED_P; if (b != b) return b; if (a == C(0)) return C(0); return a * m::log(b); }
  D2 {
    UNUSED_P;
    da = g * ((b != b) ? b : (a == C(0) ? C(0) : m::log(b)));
    db = g * a / b;
  }
};
EW_UN(xlog1py) {
  static constexpr FlatDepth kDepth{.many16 = 2};
  F2 { UNUSED_P; if (b != b) return b; if (a == C(0)) return C(0); return a * m::log1p(b); }
  D2 {
    UNUSED_P;
    da = g * ((b != b) ? b : (a == C(0) ? C(0) : m::log1p(b)));
    db = g * a / (C(1) + b);
  }
};

}  // namespace baracuda::ew

#include "ops/elementwise/ew_ops_macros_end.inc"
