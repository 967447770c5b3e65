// The scalar function of every elementwise op and its derivative, written once.
//
// Included by the kernels (nvcc, C = float / double / int64_t) and by the float64 reference
// (g++, C = double / int64_t). Each op is a struct op_<name> with
//   unary:   static C f(C x, const P<C>& p);            static C df(C x, C g, const P<C>& p);
//   binary:  static C f(C a, C b, const P<C>& p);       static void df(C a, C b, C g, const P<C>& p, C& da, C& db);
//   ternary: static C f(C a, C b, C c, const P<C>& p);  static void df(C a, C b, C c, C g, const P<C>& p, C& da, C& db, C& dc);
// (df only for ops with a nonzero grad_mask). p holds the op's parameters after
// ew::kernel_params() (ew_params.hpp) turned the descriptor's Scalars into the form used here.
// Formulas follow PyTorch's CUDA kernels, including their NaN and signed-zero behaviour
// (docs/notes/torch-pointwise-probe.txt holds what PyTorch 2.11 returns on special values).
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#include "baracuda/core/half_bits.hpp"
#include "ops/elementwise/ew_math.hpp"

namespace baracuda::ew {

template <class C>
struct P {
  C v[4];
};

template <class C> inline constexpr bool kIsInt = std::is_integral_v<C>;

// Integer helpers: wrap-around arithmetic in 64 bits (narrowing on store reproduces PyTorch's
// wrap-around in every integer width), and CUDA's i8/i16/i32 division-by-zero result (-1).
// (wadd, wsub, wmul, wneg, nan_max, nan_min: core/arith.hpp)
BARACUDA_HD bool fits32(int64_t a) { return a == static_cast<int32_t>(a); }
// 64-bit division is a long software sequence on the GPU: divide in 32 bits when both fit.
BARACUDA_HD int64_t idiv(int64_t a, int64_t b) {
  if (b == 0) return -1;
  if (b == -1) return wneg(a);
  if (fits32(a) && fits32(b)) return static_cast<int32_t>(a) / static_cast<int32_t>(b);
  return a / b;
}
BARACUDA_HD int64_t imod(int64_t a, int64_t b) {
  if (b == 0) return -1;
  if (b == -1) return 0;
  if (fits32(a) && fits32(b)) return static_cast<int32_t>(a) % static_cast<int32_t>(b);
  return a % b;
}
BARACUDA_HD int64_t iabs(int64_t a) { return a < 0 ? wneg(a) : a; }

template <class C> BARACUDA_HD C sgn(C x) { return static_cast<C>((C(0) < x) - (x < C(0))); }
template <class C> BARACUDA_HD C cinf() { return std::numeric_limits<C>::infinity(); }
template <class C> BARACUDA_HD C cnan() { return std::numeric_limits<C>::quiet_NaN(); }
template <class C> BARACUDA_HD C sigmoid(C x) { return C(1) / (C(1) + m::exp(-x)); }
// v rounded to the data's 16-bit format (fmt 1: bf16, 2: f16; else v): PyTorch's scalar_t
// arithmetic inside a kernel that keeps an intermediate in the storage type.
template <class C> BARACUDA_HD C round_to_data(C v, C fmt) {
#if defined(__CUDA_ARCH__)  // the hardware conversions (same rounding, NaN kept)
  if (fmt == C(1)) return static_cast<C>(__bfloat162float(__float2bfloat16_rn(static_cast<float>(v))));
  if (fmt == C(2)) return static_cast<C>(__half2float(__float2half_rn(static_cast<float>(v))));
#else
  if (fmt == C(1)) return static_cast<C>(bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v))));
  if (fmt == C(2)) return static_cast<C>(f16_bits_to_float(float_to_f16_bits(static_cast<float>(v))));
#endif
  return v;
}
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

// How the flat kernel (the contiguous case) shapes a thread's work for an op (op struct: static
// constexpr FlatDepth kDepth{...}; RowsShape): vectors per thread for a one-input adapter (a
// unary op's forward: one, one16) and for a several-input one (every backward, binary and
// ternary forwards: many, many16), for 4- and 8-byte storage and for 2-byte storage (or less);
// and vec_one / vec_many, the elements per vector of either (0: 16 bytes' worth; also the rows
// kernel's). Default: two vectors for one input, one for several, 16-byte vectors. Measured on
// the H200, 2^28 elements:
//   one = one16 = 1 (heavy: one always): the scalar function is long enough that inlining it 8
//     (f32) / 16 (bf16) times per thread costs more than a second vector in flight gains:
//     lgamma f32 848 -> 743 µs, bf16 881 -> 799 µs; digamma, polygamma 2-10 % faster. The same for
//     every op of the special group lost 6-18 % on memory-bound ones (sigmoid, erf, i0, ndtr).
//   many = 2 / many16 = 2: two also for several inputs, in 4- and 8-byte types / in 2-byte
//     types: the op's work outweighs the per-thread set-up. Against one vector, same run: f32
//     pow fwd 945 -> 875 µs, mish bwd 841 -> 761, sinc bwd 795 -> 752, ldexp fwd 784 -> 742; bf16
//     (ratio of times) gelu bwd 0.90, xlogy / xlog1py fwd 0.91, frexp bwd 0.92, logaddexp2 /
//     nextafter fwd 0.935, entr bwd 0.94, expm1 / gelu_tanh / erfinv bwd 0.95. Two for every
//     multi-input adapter lost up to 29 % (f32) and 140 % (bf16) on long special functions
//     (igamma, igammac, zeta, i0e / i1e bwd), 5-13 % on div_floor, remainder and, in bf16, pow /
//     ldexp / mish / sinc: the two sets differ.
//   Session 26, a bare benchmark of the flat kernel (same H200, data in [0.25, 2] as the sweep):
//     one = 4: f32 erfc 540 -> 523 µs, mish 532 -> 522, softplus 552 -> 528 (but exp, sigmoid,
//     sinc +1-3 %, log_ndtr +10 %: not the default). Session 32, after the flat kernel's set-up
//     cut (7edea60), median of 5 beside PyTorch: erfc is back at one = 2 (one = 2 / 4 / 8:
//     508.7 / 525.8 / 528.7 µs, PyTorch 509.9); softplus keeps 4 (524.0 against 532.7 at 2),
//     mish is even (527.5 / 527.8) and keeps 4; one16 = 1: bf16 sinc 443 -> 423, softplus
//     531 -> 512 (erfc, mish, exp: no gain or a loss); vec_one = 4: bf16 lgamma 797 -> 729
//     (f32 lgamma loses at 2: 753 -> 898); vec_many = 2: polygamma's backward bf16 16.5 -> 12.9
//     ms, f32 14.8 -> 13.0 ms (lanes of a warp take different series lengths; fewer elements per
//     thread, more threads), while its forward lost 2-3 % at 2 in the sweep; session 32, the same
//     for lanes of unequal work, median of 3 (µs, bf16 / f32, 16-byte vectors -> the choice):
//     igammac fwd 19803 / 14944 -> 13878 / 13704 and zeta 15549 / 14239 -> 12431 / 12565 at 2
//     (igammac bwd 1653 / 1502 -> 1540 / 1520); igamma fwd bf16 9876 -> 8344, bwd bf16 1634 ->
//     1600 and i1e bwd bf16 1048 -> 974 at 4, f32 unchanged (at 2 their f32 backward lost 2-13 %);
//     logit's branch on eps (below) with one16 = 1: bf16 463 -> 439 µs at eps < 0, 425 -> 434 at
//     eps >= 0.
struct FlatDepth {
  int one = 2, one16 = 2, many = 1, many16 = 1;
  int vec_one = 0, vec_many = 0;
};

#define EW_UN(name) struct op_##name
#define F1 template <class C> BARACUDA_HD static C f(C x, const P<C>& p)
#define D1 template <class C> BARACUDA_HD static C df(C x, C g, const P<C>& p)
#define F2 template <class C> BARACUDA_HD static C f(C a, C b, const P<C>& p)
#define D2 template <class C> BARACUDA_HD static void df(C a, C b, C g, const P<C>& p, C& da, C& db)
// f where every operand is a tensor (the flat kernel; no Python-scalar operand), for a binary op
// whose f branches on how a scalar operand is treated (pow's special exponents, div_floor's
// reciprocal): the flat kernel's code then holds no branch it never takes (Fwd::apply_dense).
#define F2_DENSE template <class C> BARACUDA_HD static C f_dense(C a, C b, const P<C>& p)
#define F3 template <class C> BARACUDA_HD static C f(C a, C b, C c, const P<C>& p)
#define D3 template <class C> BARACUDA_HD static void df(C a, C b, C c, C g, const P<C>& p, C& da, C& db, C& dc)
#define UNUSED_P (void)p

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
EW_UN(bitwise_not) {
  F1 { UNUSED_P; if constexpr (kIsInt<C>) return ~x; else return C(0); }
};
EW_UN(logical_not) {
  F1 { UNUSED_P; return C(x == C(0)); }
};
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
// PyTorch's lerp: the endpoint-exact two-branch formula.
template <class C> BARACUDA_HD C lerp_f(C a, C b, C w) {
  return m::fabs(w) < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
}
// p0 weight
EW_UN(lerp_scalar) {
  F2 { return lerp_f(a, b, p.v[0]); }
  D2 { (void)a; (void)b; da = g * (C(1) - p.v[0]); db = g * p.v[0]; }
};
// (x, mask) -> mask ? p0 : x
EW_UN(masked_fill) {
  F2 { return b != C(0) ? p.v[0] : a; }
  D2 { UNUSED_P; (void)a; da = b != C(0) ? C(0) : g; db = C(0); }
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

// ------------------------------------------------------------------ ternary
EW_UN(where) {
  F3 { UNUSED_P; return a != C(0) ? b : c; }
  D3 {
    UNUSED_P;
    da = C(0);
    db = a != C(0) ? g : C(0);
    dc = a != C(0) ? C(0) : g;
    (void)b; (void)c;
  }
};
EW_UN(clamp_tensor) {
  F3 { UNUSED_P; return nan_min(nan_max(a, b), c); }
  D3 {  // PyTorch: when max < min everything goes to max
    UNUSED_P;
    const bool inverted = c < b;
    da = (!inverted && a >= b && a <= c) ? g : C(0);
    db = (!inverted && a < b) ? g : C(0);
    dc = (inverted || a > c) ? g : C(0);
  }
};
// p0 value
// PyTorch: a + value * (b * c) and a + value * (b / c), the add contracted into an fma
EW_UN(addcmul) {
  F3 { if constexpr (kIsInt<C>) return wadd(a, wmul(p.v[0], wmul(b, c))); else return m::fma(p.v[0], b * c, a); }
  D3 { (void)a; da = g; db = g * p.v[0] * c; dc = g * p.v[0] * b; }
};
EW_UN(addcdiv) {
  F3 { if constexpr (kIsInt<C>) return wadd(a, wmul(p.v[0], idiv(b, c))); else return m::fma(p.v[0], b / c, a); }
  D3 { (void)a; da = g; db = g * p.v[0] / c; dc = -g * p.v[0] * b / (c * c); }
};
EW_UN(lerp) {
  F3 { UNUSED_P; return lerp_f(a, b, c); }
  D3 {
    UNUSED_P;
    da = g * (C(1) - c);
    db = g * c;
    dc = g * (b - a);
  }
};
EW_UN(fma) {
  F3 { UNUSED_P; return m::fma(a, b, c); }
  D3 { UNUSED_P; (void)c; da = g * b; db = g * a; dc = g; }
};

#undef EW_UN
#undef F1
#undef D1
#undef F2
#undef F2_DENSE
#undef D2
#undef F3
#undef D3
#undef UNUSED_P

// flat_depth<Op>: the op's FlatDepth (Op::kDepth), or the default.
template <class Op, class = void> inline constexpr FlatDepth flat_depth{};
template <class Op> inline constexpr FlatDepth flat_depth<Op, std::void_t<decltype(Op::kDepth)>> = Op::kDepth;

// Uniform adapters: the engine calls apply(in[], out[], p) with NI inputs and NO outputs.
// Forward: in = operands, out = {result}. Backward: in = {g, operands...}, out = {d operand...}.
template <class Op, int Arity>
struct Fwd {
  static constexpr int NI = Arity, NO = 1;
  static constexpr FlatDepth kDepth = flat_depth<Op>;
  template <int O, class TO> using out_t = TO;  // storage type of output O (rows kernel)
  template <class C>
  BARACUDA_HD static void apply(const C* in, C* out, const P<C>& p) {
    if constexpr (Arity == 1) out[0] = Op::f(in[0], p);
    else if constexpr (Arity == 2) out[0] = Op::f(in[0], in[1], p);
    else out[0] = Op::f(in[0], in[1], in[2], p);
  }
  // every operand a tensor (the flat kernel): the op's f_dense where it has one
  template <class C>
  BARACUDA_HD static void apply_dense(const C* in, C* out, const P<C>& p) {
    if constexpr (Arity == 2 && requires(C a, const P<C>& q) { Op::f_dense(a, a, q); }) out[0] = Op::f_dense(in[0], in[1], p);
    else apply(in, out, p);
  }
};
// frexp's two results (FrexpPlan): out = {mantissa, exponent}; the exponent is stored as i32
// whatever the mantissa's storage type.
struct FrexpBoth {
  static constexpr int NI = 1, NO = 2;
  static constexpr FlatDepth kDepth{};
  template <int O, class TO> using out_t = std::conditional_t<O == 1, int32_t, TO>;
  template <class C>
  BARACUDA_HD static void apply(const C* in, C* out, const P<C>&) {
    int e;
    out[0] = m::frexp(in[0], &e);
    out[1] = static_cast<C>(e);
  }
};
template <class Op, int Arity>
struct Bwd {
  static constexpr int NI = Arity + 1, NO = Arity;
  static constexpr FlatDepth kDepth = flat_depth<Op>;
  template <int O, class TO> using out_t = TO;
  template <class C>
  BARACUDA_HD static void apply(const C* in, C* out, const P<C>& p) {
    if constexpr (Arity == 1) out[0] = Op::df(in[1], in[0], p);
    else if constexpr (Arity == 2) Op::df(in[1], in[2], in[0], p, out[0], out[1]);
    else Op::df(in[1], in[2], in[3], in[0], p, out[0], out[1], out[2]);
  }
};

}  // namespace baracuda::ew
