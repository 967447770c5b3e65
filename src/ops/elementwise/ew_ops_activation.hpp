// The scalar functions of the elementwise ops of group "activation" (the 5th column of
// BARACUDA_EW_OPS, elementwise_ops.hpp): their op_<name> structs and the helpers only they use.
// ew_ops.hpp describes the structs; ew_ops_common.hpp holds what several groups share.
// Included by ew_inst_activation.cu (its kernels) and by ew_ops.hpp (every op).
#pragma once

#include "ops/elementwise/ew_ops_common.hpp"

#include "ops/elementwise/ew_ops_macros.inc"

namespace baracuda::ew {

// gelu(x) = x Phi(x) and gelu'(x) = cdf + x pdf, as PyTorch's Gelu / GeluBackward kernels; the
// _of forms take e = erf(x / sqrt 2), for a caller that needs both (geglu's backward)
template <class C> BARACUDA_HD C erf_sqrt1_2(C x) { return m::erf(x * C(0.70710678118654752440)); }
template <class C> BARACUDA_HD C gelu_erf_of(C x, C e) { return C(0.5) * x * (C(1) + e); }
template <class C> BARACUDA_HD C gelu_erf_d_of(C x, C e) {
  const C cdf = C(0.5) * (C(1) + e);
  const C pdf = m::exp(C(-0.5) * x * x) * C(0.39894228040143267794);
  return cdf + x * pdf;
}
template <class C> BARACUDA_HD C gelu_erf(C x) { return gelu_erf_of(x, erf_sqrt1_2(x)); }
template <class C> BARACUDA_HD C gelu_erf_d(C x) { return gelu_erf_d_of(x, erf_sqrt1_2(x)); }
template <class C> inline constexpr C kGeluBeta = C(0.79788456080286535588);  // sqrt(2/pi)
template <class C> inline constexpr C kGeluKappa = C(0.044715);
// PyTorch: x_cube = x * x * x, inner = beta * (x + kappa * x_cube) (the add contracted into an
// fma), (0.5 x)(1 + tanh(inner)); beta in the compute type (f32: 0.79788458).
template <class C> BARACUDA_HD C gelu_tanh_f(C x) {
  const C x_cube = x * x * x;
  const C inner = kGeluBeta<C> * m::fma(kGeluKappa<C>, x_cube, x);
  return C(0.5) * x * (C(1) + m::tanh(inner));
}
template <class C> BARACUDA_HD C gelu_tanh_d(C x) {
  const C x_sq = x * x;
  const C inner = kGeluBeta<C> * (x + kGeluKappa<C> * x_sq * x);
  const C t = m::tanh(inner);
  const C left = C(0.5) * x, right = C(1) + t;
  const C left_d = C(0.5) * right;
  const C right_d = left * (C(1) - t * t) * kGeluBeta<C> * (C(1) + C(3) * kGeluKappa<C> * x_sq);
  return left_d + right_d;
}
template <class C> BARACUDA_HD C silu_f(C x) { return x / (C(1) + m::exp(-x)); }
template <class C> BARACUDA_HD C silu_d(C x) {
  const C s = sigmoid(x);
  return s * (C(1) + x * (C(1) - s));
}

// ------------------------------------------------------------------ activations
EW_UN(relu) {
  F1 { UNUSED_P; return x <= C(0) ? C(0) : x; }
  D1 { UNUSED_P; return x <= C(0) ? C(0) : g; }
};
EW_UN(relu6) {
  F1 { UNUSED_P; if constexpr (!kIsInt<C>) if (x != x) return x; return nan_min(nan_max(x, C(0)), C(6)); }
  D1 { UNUSED_P; return (x <= C(0) || x >= C(6)) ? C(0) : g; }
};
// p0 negative slope (rrelu: (lower + upper) / 2, resolved on the host)
EW_UN(leaky_relu) {
  F1 { return x > C(0) ? x : x * p.v[0]; }
  D1 { return x > C(0) ? g : g * p.v[0]; }
};
struct op_rrelu : op_leaky_relu {};
// p0 negcoef = alpha * scale, p1 poscoef = scale, p2 negiptcoef = input_scale (selu, celu alike)
EW_UN(elu) {
  F1 { return x > C(0) ? x * p.v[1] : m::expm1(x * p.v[2]) * p.v[0]; }
  D1 { return x <= C(0) ? g * p.v[2] * p.v[0] * m::exp(x * p.v[2]) : g * p.v[1]; }
};
struct op_selu : op_elu {};
struct op_celu : op_elu {};
EW_UN(gelu) {
  static constexpr FlatDepth kDepth{.many16 = 2};
  F1 { UNUSED_P; return gelu_erf(x); }
  D1 { UNUSED_P; return g * gelu_erf_d(x); }
};
EW_UN(gelu_tanh) {
  static constexpr FlatDepth kDepth{.many16 = 2};
  F1 { UNUSED_P; return gelu_tanh_f(x); }
  D1 { UNUSED_P; return g * gelu_tanh_d(x); }
};
EW_UN(silu) {
  F1 { UNUSED_P; return silu_f(x); }
  D1 { UNUSED_P; return g * silu_d(x); }
};
EW_UN(mish) {
  static constexpr FlatDepth kDepth{.one = 4, .many = 2};
  F1 { UNUSED_P; return x * m::tanh(m::log1p(m::exp(x))); }
  D1 {
    UNUSED_P;
    const C s = sigmoid(x);
    const C t = m::tanh(m::log1p(m::exp(x)));
    return g * (t + x * s * (C(1) - t * t));
  }
};
EW_UN(logsigmoid) {
  F1 { UNUSED_P; const C mn = x < C(0) ? x : C(0); return mn - m::log1p(m::exp(-m::fabs(x))); }
  D1 {
    UNUSED_P;
    const bool neg = x < C(0);
    const C z = m::exp(-m::fabs(x));
    return g * ((neg ? C(1) : C(0)) - (neg ? C(1) : C(-1)) * (z / (C(1) + z)));
  }
};
// hardsigmoid, hardswish: PyTorch multiplies by 1/6 formed in f32 (1.0f / 6.0f), for f64 data too
// (hardsigmoid(0.0) is 0.50000001490116 in f64); the gradient likewise.
template <class C> inline constexpr C kOneSixthF32 = static_cast<C>(1.0f / 6.0f);
template <class C> BARACUDA_HD C relu6_shift3(C x) {
  C t = x + C(3);
  t = t < C(0) ? C(0) : t;
  return t > C(6) ? C(6) : t;
}
EW_UN(hardsigmoid) {
  F1 { UNUSED_P; return relu6_shift3(x) * kOneSixthF32<C>; }
  D1 { UNUSED_P; return (x > C(-3) && x < C(3)) ? g * kOneSixthF32<C> : C(0); }
};
EW_UN(hardswish) {
  F1 { UNUSED_P; return x * relu6_shift3(x) * kOneSixthF32<C>; }
  D1 {
    UNUSED_P;
    if (x <= C(-3)) return C(0);
    if (x < C(3)) return g * (x / C(3) + C(0.5));
    return g;
  }
};
// p0 min_val, p1 max_val
EW_UN(hardtanh) {
  F1 { if (x != x) return x; return m::fmin(m::fmax(x, p.v[0]), p.v[1]); }
  D1 { return (x <= p.v[0] || x >= p.v[1]) ? C(0) : g; }
};
// p0 lambd
EW_UN(hardshrink) {
  F1 { return (x >= -p.v[0] && x <= p.v[0]) ? C(0) : x; }
  D1 { return (x >= -p.v[0] && x <= p.v[0]) ? C(0) : g; }
};
EW_UN(softshrink) {
  F1 { return (x >= -p.v[0] && x <= p.v[0]) ? C(0) : (x > C(0) ? x - p.v[0] : x + p.v[0]); }
  D1 { return (x >= -p.v[0] && x <= p.v[0]) ? C(0) : g; }
};
// tanhshrink and softsign are Python composites in PyTorch (x - tanh(x), x / (|x| + 1)): on bf16 /
// f16 data (p0 = 1 / 2) tanh(x) and |x| + 1 are rounded to that format first.
EW_UN(tanhshrink) {
  F1 { return x - round_to_data(m::tanh(x), p.v[0]); }
  D1 { UNUSED_P; const C t = m::tanh(x); return g * t * t; }
};
// p0 beta, p1 threshold
EW_UN(softplus) {
  static constexpr FlatDepth kDepth{.one = 4, .one16 = 1};
  F1 { return (x * p.v[0]) > p.v[1] ? x : m::log1p(m::exp(x * p.v[0])) / p.v[0]; }
  D1 {
    const C z = m::exp(x * p.v[0]);
    return (x * p.v[0]) > p.v[1] ? g : g * z / (z + C(1));
  }
};
EW_UN(softsign) {
  F1 { return x / round_to_data(m::fabs(x) + C(1), p.v[0]); }
  D1 { UNUSED_P; const C d = C(1) + m::fabs(x); return g / (d * d); }
};
// p0 threshold, p1 value
EW_UN(threshold) {
  F1 { return x <= p.v[0] ? p.v[1] : x; }
  D1 { return x <= p.v[0] ? C(0) : g; }
};
EW_UN(prelu) {
  F2 { UNUSED_P; return a > C(0) ? a : b * a; }
  D2 {
    UNUSED_P;
    da = a > C(0) ? g : b * g;
    db = a > C(0) ? C(0) : a * g;
  }
};
EW_UN(glu) {
  F2 { UNUSED_P; return a * sigmoid(b); }
  D2 {
    UNUSED_P;
    const C s = sigmoid(b);
    da = g * s;
    db = g * a * s * (C(1) - s);
  }
};
EW_UN(swiglu) {
  F2 { UNUSED_P; return silu_f(a) * b; }
  D2 {
    UNUSED_P;
    da = g * b * silu_d(a);
    db = g * silu_f(a);
  }
};
// p0 = 1: tanh approximation
EW_UN(geglu) {
  F2 { return (p.v[0] != C(0) ? gelu_tanh_f(a) : gelu_erf(a)) * b; }
  D2 {
    if (p.v[0] != C(0)) {
      da = g * b * gelu_tanh_d(a);
      db = g * gelu_tanh_f(a);
      return;
    }
    // one erf for both results (the compiler did not merge two calls: bf16 918 -> 625 µs)
    const C e = erf_sqrt1_2(a);
    da = g * b * gelu_erf_d_of(a, e);
    db = g * gelu_erf_of(a, e);
  }
};
EW_UN(reglu) {
  F2 { UNUSED_P; return (a <= C(0) ? C(0) : a) * b; }
  D2 {
    UNUSED_P;
    da = a <= C(0) ? C(0) : g * b;
    db = g * (a <= C(0) ? C(0) : a);
  }
};

}  // namespace baracuda::ew

#include "ops/elementwise/ew_ops_macros_end.inc"
