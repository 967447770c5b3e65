// baracuda/ops/elementwise_ops.hpp — the list of pointwise ops, declared once.
//
// X(name, arity, kind, grad_mask, group)
//   arity      number of operands (1..3); each may be a tensor or a scalar
//   kind       dtype rule (EwKind): which input dtypes are accepted and what the result is
//   grad_mask  bit i set: the op is differentiable in operand i (0: no backward)
//   group      the kernel translation unit that instantiates the op (build parallelism)
// Parameters (ElementwiseDescriptor::param[0..3]) are listed after each op as p0, p1 ...;
// defaults are PyTorch's and are filled by ew_default_params() / ElementwiseDescriptor::make.
//
// The scalar math (forward and derivative) of each op lives once, in
// src/ops/elementwise/ew_ops_<group>.hpp (ew_ops.hpp includes them all), shared by the GPU kernels
// and the float64 reference.
#pragma once

#include <cstdint>

// clang-format off
#define BARACUDA_EW_OPS(X)                                                                    \
  /* ---- unary math ---- */                                                                  \
  X(abs, 1, kNumBool, 1, unary)                                                               \
  X(neg, 1, kNum, 1, unary)                                                                   \
  X(sign, 1, kNumBool, 1, unary)         /* sign(NaN) = 0, as PyTorch's CUDA kernel */        \
  X(square, 1, kNumBoolToInt, 1, unary)                                                       \
  X(ceil, 1, kNum, 1, unary)                                                                  \
  X(floor, 1, kNum, 1, unary)                                                                 \
  X(round, 1, kNum, 1, unary)            /* p0 = decimals (integer; 0 = half-to-even) */      \
  X(trunc, 1, kNum, 1, unary)                                                                 \
  X(frac, 1, kFloatOnly, 1, unary)                                                            \
  X(frexp, 1, kFloatOnly, 1, unary)      /* mantissa; FrexpPlan gives mantissa and exponent */ \
  X(exp, 1, kFloat, 1, unary)                                                                 \
  X(exp2, 1, kFloat, 1, unary)                                                                \
  X(expm1, 1, kFloat, 1, unary)                                                               \
  X(log, 1, kFloat, 1, unary)                                                                 \
  X(log2, 1, kFloat, 1, unary)                                                                \
  X(log10, 1, kFloat, 1, unary)                                                               \
  X(log1p, 1, kFloat, 1, unary)                                                               \
  X(sqrt, 1, kFloat, 1, unary)                                                                \
  X(rsqrt, 1, kFloat, 1, unary)                                                               \
  X(cbrt, 1, kFloat, 1, unary)           /* real cube root (jax.lax.cbrt) */                  \
  X(reciprocal, 1, kFloat, 1, unary)                                                          \
  X(sin, 1, kFloat, 1, unary)                                                                 \
  X(cos, 1, kFloat, 1, unary)                                                                 \
  X(tan, 1, kFloat, 1, unary)                                                                 \
  X(asin, 1, kFloat, 1, unary)                                                                \
  X(acos, 1, kFloat, 1, unary)                                                                \
  X(atan, 1, kFloat, 1, unary)                                                                \
  X(sinh, 1, kFloat, 1, unary)                                                                \
  X(cosh, 1, kFloat, 1, unary)                                                                \
  X(tanh, 1, kFloat, 1, unary)                                                                \
  X(asinh, 1, kFloat, 1, unary)                                                               \
  X(acosh, 1, kFloat, 1, unary)                                                               \
  X(atanh, 1, kFloat, 1, unary)                                                               \
  X(sinc, 1, kFloat, 1, unary)           /* sin(pi x)/(pi x), 1 at 0 */                       \
  X(deg2rad, 1, kFloat, 1, unary)                                                             \
  X(rad2deg, 1, kFloat, 1, unary)                                                             \
  X(nan_to_num, 1, kNumBool, 1, unary)   /* p0 nan, p1 posinf, p2 neginf (NaN param: dtype max/lowest) */ \
  X(logit, 1, kFloat, 1, unary)          /* p0 eps (< 0: none) */                             \
  X(isfinite, 1, kPredicate, 0, unary)                                                        \
  X(isinf, 1, kPredicate, 0, unary)                                                           \
  X(isnan, 1, kPredicate, 0, unary)                                                           \
  X(isposinf, 1, kPredicate, 0, unary)                                                        \
  X(isneginf, 1, kPredicate, 0, unary)                                                        \
  X(signbit, 1, kPredicate, 0, unary)                                                         \
  X(bitwise_not, 1, kBitwise, 0, logic)                                                       \
  X(logical_not, 1, kLogical, 0, logic)                                                       \
  X(clamp, 1, kNum, 1, unary)            /* p0 min, p1 max (NaN: that bound absent) */        \
  X(to, 1, kCast, 1, unary)              /* copy / cast to the descriptor's out_dtype */      \
  /* ---- special functions ---- */                                                           \
  X(erf, 1, kFloat, 1, special)                                                               \
  X(erfc, 1, kFloat, 1, special)                                                              \
  X(erfinv, 1, kFloat, 1, special)                                                            \
  X(lgamma, 1, kFloat, 1, special)                                                            \
  X(digamma, 1, kFloat, 1, special)      /* psi; psi(+-0) = -+inf, negative integers NaN */   \
  X(erfcx, 1, kFloat, 1, special)        /* exp(x^2) erfc(x) */                               \
  X(ndtri, 1, kFloat, 1, special)        /* inverse of ndtr */                                \
  X(i0, 1, kFloat, 1, special)           /* modified Bessel I0 */                             \
  X(i1, 1, kFloat, 1, special)           /* modified Bessel I1 (torch.special.i1) */          \
  X(i0e, 1, kFloat, 1, special)          /* exp(-|x|) I0(x) */                                \
  X(i1e, 1, kFloat, 1, special)          /* exp(-|x|) I1(x) */                                \
  X(igamma, 2, kFloat, 2, special)       /* P(a, x), regularized lower incomplete gamma */    \
  X(igammac, 2, kFloat, 2, special)      /* Q(a, x) = 1 - P(a, x) */                          \
  X(polygamma, 1, kFloat, 1, special)    /* p0 = n (integer >= 0): n-th derivative of digamma */ \
  X(zeta, 2, kFloat, 0, special)         /* Hurwitz zeta(x, q) */                             \
  X(sigmoid, 1, kFloat, 1, special)                                                           \
  X(ndtr, 1, kFloat, 1, special)                                                              \
  X(log_ndtr, 1, kFloat, 1, special)                                                          \
  X(entr, 1, kFloat, 1, special)                                                              \
  X(xlogy, 2, kFloat, 3, special)                                                             \
  X(xlog1py, 2, kFloat, 3, special)                                                           \
  /* ---- activations ---- */                                                                 \
  X(relu, 1, kNum, 1, activation)                                                             \
  X(relu6, 1, kNum, 1, activation)                                                            \
  X(leaky_relu, 1, kFloatOnly, 1, activation)   /* p0 negative_slope = 0.01 */                \
  X(rrelu, 1, kFloatOnly, 1, activation)        /* eval: slope (p0 lower + p1 upper) / 2 */   \
  X(elu, 1, kFloatOnly, 1, activation)          /* p0 alpha = 1, p1 scale = 1, p2 input_scale = 1 */ \
  X(selu, 1, kFloatOnly, 1, activation)                                                       \
  X(celu, 1, kFloatOnly, 1, activation)         /* p0 alpha = 1 */                            \
  X(gelu, 1, kFloatOnly, 1, activation)         /* erf form */                                \
  X(gelu_tanh, 1, kFloatOnly, 1, activation)    /* approximate='tanh' */                      \
  X(silu, 1, kFloatOnly, 1, activation)                                                       \
  X(mish, 1, kFloatOnly, 1, activation)                                                       \
  X(logsigmoid, 1, kFloatOnly, 1, activation)                                                 \
  X(hardsigmoid, 1, kFloatOnly, 1, activation)                                                \
  X(hardswish, 1, kFloatOnly, 1, activation)                                                  \
  X(hardtanh, 1, kFloatOnly, 1, activation)     /* p0 min_val = -1, p1 max_val = 1 */         \
  X(hardshrink, 1, kFloatOnly, 1, activation)   /* p0 lambd = 0.5 */                          \
  X(softshrink, 1, kFloatOnly, 1, activation)   /* p0 lambd = 0.5 */                          \
  X(tanhshrink, 1, kFloatOnly, 1, activation)                                                 \
  X(softplus, 1, kFloatOnly, 1, activation)     /* p0 beta = 1, p1 threshold = 20 */          \
  X(softsign, 1, kFloatOnly, 1, activation)                                                   \
  X(threshold, 1, kFloatOnly, 1, activation)    /* p0 threshold, p1 value */                  \
  X(prelu, 2, kFloatOnly, 3, activation)        /* (x, weight broadcast per channel) */       \
  /* gated halves a (value) and b (gate) of a split axis, see split_halves() */               \
  X(glu, 2, kFloatOnly, 3, activation)          /* a * sigmoid(b) */                          \
  X(swiglu, 2, kFloatOnly, 3, activation)       /* silu(a) * b */                             \
  X(geglu, 2, kFloatOnly, 3, activation)        /* gelu(a) * b; p0 = 1: tanh approximation */ \
  X(reglu, 2, kFloatOnly, 3, activation)        /* relu(a) * b */                             \
  /* ---- binary arithmetic ---- */                                                           \
  X(add, 2, kNumBool, 3, binary)                /* a + p0 * b (p0 alpha = 1) */               \
  X(sub, 2, kNum, 3, binary)                    /* a - p0 * b */                              \
  X(rsub, 2, kNum, 3, binary)                   /* b - p0 * a */                              \
  X(mul, 2, kNumBool, 3, binary)                                                              \
  X(div, 2, kFloat, 3, binary)                  /* true division */                           \
  X(div_trunc, 2, kNum, 3, binary)              /* rounding_mode='trunc' */                   \
  X(div_floor, 2, kNum, 3, binary)              /* rounding_mode='floor' == floor_divide */   \
  X(remainder, 2, kNum, 3, binary)              /* sign of the divisor (Python %) */          \
  X(fmod, 2, kNum, 3, binary)                   /* sign of the dividend (C fmod) */           \
  X(pow, 2, kNum, 3, binary)                                                                  \
  X(float_power, 2, kFloatPower, 3, binary)     /* computed and returned in f64 */            \
  X(atan2, 2, kFloat, 3, binary)                                                              \
  X(hypot, 2, kFloatOnly, 3, binary)                                                          \
  X(copysign, 2, kFloat, 3, binary)                                                           \
  X(ldexp, 2, kFloat, 1, binary)                /* a * 2^b */                                 \
  X(logaddexp, 2, kFloatOnly, 3, binary)                                                      \
  X(logaddexp2, 2, kFloatOnly, 3, binary)                                                     \
  X(maximum, 2, kNumBool, 3, binary)            /* NaN-propagating */                         \
  X(minimum, 2, kNumBool, 3, binary)                                                          \
  X(fmax, 2, kNumBool, 3, binary)               /* NaN-ignoring */                            \
  X(fmin, 2, kNumBool, 3, binary)                                                             \
  X(nextafter, 2, kFloatOnly, 0, binary)                                                      \
  X(heaviside, 2, kNumBool, 0, binary)                                                        \
  X(gcd, 2, kInt, 0, logic)                                                                   \
  X(lcm, 2, kInt, 0, logic)                                                                   \
  X(lerp_scalar, 2, kFloatOnly, 3, ternary)     /* lerp(a, b, p0 weight) */                   \
  X(masked_fill, 2, kMasked, 1, ternary)        /* (x, bool mask) -> mask ? p0 : x */         \
  /* ---- comparison and logic ---- */                                                        \
  X(eq, 2, kCompare, 0, logic)                                                                \
  X(ne, 2, kCompare, 0, logic)                                                                \
  X(lt, 2, kCompare, 0, logic)                                                                \
  X(le, 2, kCompare, 0, logic)                                                                \
  X(gt, 2, kCompare, 0, logic)                                                                \
  X(ge, 2, kCompare, 0, logic)                                                                \
  X(isclose, 2, kCompare, 0, logic)             /* p0 rtol = 1e-5, p1 atol = 1e-8, p2 equal_nan = 0 */ \
  X(logical_and, 2, kLogical, 0, logic)                                                       \
  X(logical_or, 2, kLogical, 0, logic)                                                        \
  X(logical_xor, 2, kLogical, 0, logic)                                                       \
  X(bitwise_and, 2, kBitwise, 0, logic)                                                       \
  X(bitwise_or, 2, kBitwise, 0, logic)                                                        \
  X(bitwise_xor, 2, kBitwise, 0, logic)                                                       \
  X(bitwise_left_shift, 2, kInt, 0, logic)                                                    \
  X(bitwise_right_shift, 2, kInt, 0, logic)                                                   \
  /* ---- ternary ---- */                                                                     \
  X(where, 3, kSelect, 6, ternary)              /* (bool cond, a, b) */                       \
  X(clamp_tensor, 3, kNum, 7, ternary)          /* (x, min, max) */                           \
  X(addcmul, 3, kNum, 7, ternary)               /* a + p0 * b * c (p0 value = 1) */           \
  X(addcdiv, 3, kFloatOnly, 7, ternary)         /* a + p0 * b / c */                          \
  X(lerp, 3, kFloatOnly, 7, ternary)            /* (start, end, weight) */                    \
  X(fma, 3, kFloatOnly, 7, ternary)             /* a * b + c, one rounding */
// clang-format on

namespace baracuda {

// How an op's result dtype follows from its inputs (PyTorch's rules; see ew_result_dtype).
enum class EwKind : uint8_t {
  kFloat,         // any input; result = promoted type, integral/bool promoted to f32
  kFloatOnly,     // floating inputs only; result = promoted type
  kNum,           // integer or floating (no bool); result = promoted type
  kNumBool,       // any input; result = promoted type (bool stays bool)
  kNumBoolToInt,  // like kNumBool but a bool result becomes i64 (square)
  kBitwise,       // integer or bool; result = promoted type
  kInt,           // integer only; result = promoted type
  kCompare,       // any inputs; result bool (computed in the promoted type)
  kPredicate,     // any input; result bool
  kLogical,       // any inputs; result bool (nonzero is true)
  kFloatPower,    // any numeric; result f64
  kCast,          // one input; result = out_dtype (required)
  kSelect,        // (bool cond, a, b): result = promoted type of a and b
  kMasked,        // (x, bool mask): result = dtype of x
};

// Which compute families an op kind has: floating (f32/f64 math) and integer (i64 math).
constexpr bool ew_kind_has_floats(EwKind k) { return k != EwKind::kBitwise && k != EwKind::kInt; }
constexpr bool ew_kind_has_ints(EwKind k) {
  return k != EwKind::kFloat && k != EwKind::kFloatOnly && k != EwKind::kFloatPower;
}
// Kinds whose result is bool whatever the inputs.
constexpr bool ew_kind_bool_result(EwKind k) {
  return k == EwKind::kCompare || k == EwKind::kPredicate || k == EwKind::kLogical;
}

enum class EwOp : uint16_t {
#define BARACUDA_X(name, arity, kind, grad, group) name,
  BARACUDA_EW_OPS(BARACUDA_X)
#undef BARACUDA_X
};

inline constexpr int kNumEwOps = 0
#define BARACUDA_X(name, arity, kind, grad, group) +1
    BARACUDA_EW_OPS(BARACUDA_X)
#undef BARACUDA_X
    ;

}  // namespace baracuda
