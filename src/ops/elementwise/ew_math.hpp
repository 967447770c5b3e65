// Scalar math for the elementwise ops, usable from device code (nvcc) and from plain host C++
// (the float64 reference, compiled by g++). Overloaded for float and double; on the device the
// CUDA full-precision functions are called, on the host the C library's (and a few own
// implementations where the C library has none: erfinv, erfcx, digamma, trigamma).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/arith.hpp"
#include "core/hd.hpp"

namespace baracuda::ew::m {

#define EW_UNARY_FN(name, fname, dname)                   \
  BARACUDA_HD float name(float x) { return ::fname(x); }       \
  BARACUDA_HD double name(double x) { return ::dname(x); }
EW_UNARY_FN(exp, expf, exp)
EW_UNARY_FN(exp2, exp2f, exp2)
EW_UNARY_FN(expm1, expm1f, expm1)
EW_UNARY_FN(log, logf, log)
EW_UNARY_FN(log2, log2f, log2)
EW_UNARY_FN(log10, log10f, log10)
EW_UNARY_FN(log1p, log1pf, log1p)
EW_UNARY_FN(sqrt, sqrtf, sqrt)
EW_UNARY_FN(cbrt, cbrtf, cbrt)
EW_UNARY_FN(sin, sinf, sin)
EW_UNARY_FN(cos, cosf, cos)
EW_UNARY_FN(tan, tanf, tan)
EW_UNARY_FN(asin, asinf, asin)
EW_UNARY_FN(acos, acosf, acos)
EW_UNARY_FN(atan, atanf, atan)
EW_UNARY_FN(sinh, sinhf, sinh)
EW_UNARY_FN(cosh, coshf, cosh)
EW_UNARY_FN(tanh, tanhf, tanh)
EW_UNARY_FN(asinh, asinhf, asinh)
EW_UNARY_FN(acosh, acoshf, acosh)
EW_UNARY_FN(atanh, atanhf, atanh)
EW_UNARY_FN(erf, erff, erf)
EW_UNARY_FN(erfc, erfcf, erfc)
EW_UNARY_FN(lgamma, lgammaf, lgamma)
EW_UNARY_FN(fabs, fabsf, fabs)
EW_UNARY_FN(floor, floorf, floor)
EW_UNARY_FN(ceil, ceilf, ceil)
EW_UNARY_FN(trunc, truncf, trunc)
EW_UNARY_FN(rint, rintf, rint)  // half-to-even under the default rounding mode
#undef EW_UNARY_FN

#define EW_BINARY_FN(name, fname, dname)                            \
  BARACUDA_HD float name(float x, float y) { return ::fname(x, y); }     \
  BARACUDA_HD double name(double x, double y) { return ::dname(x, y); }
EW_BINARY_FN(fmod, fmodf, fmod)
EW_BINARY_FN(pow, powf, pow)
EW_BINARY_FN(atan2, atan2f, atan2)
EW_BINARY_FN(hypot, hypotf, hypot)
EW_BINARY_FN(copysign, copysignf, copysign)
EW_BINARY_FN(nextafter, nextafterf, nextafter)
#undef EW_BINARY_FN

using ::baracuda::fmax;  // NaN-ignoring, -0 below +0 on host and device (core/arith.hpp)
using ::baracuda::fmin;

BARACUDA_HD float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
BARACUDA_HD double fma(double a, double b, double c) { return ::fma(a, b, c); }

template <class T> BARACUDA_HD bool isnan(T x) { return x != x; }
template <class T> BARACUDA_HD bool isinf(T x) { return x == std::numeric_limits<T>::infinity() || x == -std::numeric_limits<T>::infinity(); }
template <class T> BARACUDA_HD bool isfinite(T x) { return !isnan(x) && !isinf(x); }
BARACUDA_HD bool signbit(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x) >> 31;
#else
  return std::signbit(x);
#endif
}
BARACUDA_HD bool signbit(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned long long>(__double_as_longlong(x)) >> 63;
#else
  return std::signbit(x);
#endif
}

// a * b rounded on its own, never fused with a following add (nvcc contracts a * b + c into an
// FMA by default): for formulas PyTorch computes in separate kernels.
BARACUDA_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
BARACUDA_HD double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

BARACUDA_HD float rsqrt(float x) {
#if defined(__CUDA_ARCH__)
  return ::rsqrtf(x);
#else
  return 1.0f / std::sqrt(x);
#endif
}
BARACUDA_HD double rsqrt(double x) {
#if defined(__CUDA_ARCH__)
  return ::rsqrt(x);
#else
  return 1.0 / std::sqrt(x);
#endif
}

// frexp with PyTorch's exponent for 0, inf and NaN (0; the value itself is the mantissa).
BARACUDA_HD float frexp(float x, int* e) {
  *e = 0;
  return isfinite(x) ? ::frexpf(x, e) : x;
}
BARACUDA_HD double frexp(double x, int* e) {
  *e = 0;
  return isfinite(x) ? ::frexp(x, e) : x;
}
BARACUDA_HD float ldexp(float x, int e) { return ::ldexpf(x, e); }
BARACUDA_HD double ldexp(double x, int e) { return ::ldexp(x, e); }

// ---- host implementations where the C library has none (double; float goes through double)
namespace host {
// erfinv: a rational first guess refined by Newton steps on erf (quadratic convergence).
inline double erfinv(double y) {
  if (y != y || y < -1.0 || y > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1.0) return std::numeric_limits<double>::infinity();
  if (y == -1.0) return -std::numeric_limits<double>::infinity();
  if (y == 0.0) return y;  // keeps -0
  // Giles' single-precision approximation as the starting point.
  double w = -std::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    x = p * y;
  } else {
    w = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    x = p * y;
  }
  const double two_over_sqrt_pi = 1.1283791670955126;
  // Newton on erf near 0; near +-1 on erfc against 1 - |y| (exact for |y| >= 1/2), whose
  // residual keeps its relative accuracy where erf(x) - y would cancel
  const double ay = std::fabs(y), t = 1.0 - ay;
  double ax = std::fabs(x);
  for (int it = 0; it < 6; ++it) {
    const double d = two_over_sqrt_pi * std::exp(-ax * ax);
    if (!(d > 0.0)) break;
    ax -= ay < 0.5 ? (std::erf(ax) - ay) / d : -(std::erfc(ax) - t) / d;
  }
  return y < 0 ? -ax : ax;
}
// erfcx(x) = exp(x^2) erfc(x): direct below 25, asymptotic series above, exp(x^2)*2 - ... for x < 0.
inline double erfcx(double x) {
  if (x != x) return x;
  if (x < 0.0) {
    if (x < -26.7) return std::numeric_limits<double>::infinity();
    return 2.0 * std::exp(x * x) - std::exp(x * x) * std::erfc(-x);
  }
  if (x < 25.0) return std::exp(x * x) * std::erfc(x);
  if (x == std::numeric_limits<double>::infinity()) return 0.0;
  const double inv2x2 = 1.0 / (2.0 * x * x);
  double term = 1.0, sum = 1.0;
  for (int n = 1; n <= 10; ++n) {
    term *= -(2.0 * n - 1.0) * inv2x2;
    sum += term;
  }
  return sum / (x * 1.7724538509055160273);
}
}  // namespace host

BARACUDA_HD float erfinv(float x) {
#if defined(__CUDA_ARCH__)
  return ::erfinvf(x);
#else
  return static_cast<float>(host::erfinv(x));
#endif
}
BARACUDA_HD double erfinv(double x) {
#if defined(__CUDA_ARCH__)
  return ::erfinv(x);
#else
  return host::erfinv(x);
#endif
}
BARACUDA_HD float erfcx(float x) {
#if defined(__CUDA_ARCH__)
  return ::erfcxf(x);
#else
  return static_cast<float>(host::erfcx(x));
#endif
}
BARACUDA_HD double erfcx(double x) {
#if defined(__CUDA_ARCH__)
  return ::erfcx(x);
#else
  return host::erfcx(x);
#endif
}

// sin(pi x) and tan(pi x) with exact argument reduction on the device (sinpi/cospi): near the
// poles of digamma/trigamma the product pi * x would lose the distance to the integer.
namespace host {
// Exact reduction to |r| <= 1/2 (x - nearbyint(x) is exact), then the small-argument function.
inline double sinpi(double x) {
  const double n = std::nearbyint(x), s = std::sin(3.14159265358979323846 * (x - n));
  return std::fmod(n, 2.0) != 0.0 ? -s : s;
}
inline double tanpi(double x) { return std::tan(3.14159265358979323846 * (x - std::nearbyint(x))); }
}  // namespace host
BARACUDA_HD float sinpi(float x) {
#if defined(__CUDA_ARCH__)
  return ::sinpif(x);
#else
  return static_cast<float>(host::sinpi(x));
#endif
}
BARACUDA_HD double sinpi(double x) {
#if defined(__CUDA_ARCH__)
  return ::sinpi(x);
#else
  return host::sinpi(x);
#endif
}
BARACUDA_HD float tanpi(float x) {
#if defined(__CUDA_ARCH__)
  return ::sinpif(x) / ::cospif(x);
#else
  return static_cast<float>(host::tanpi(x));
#endif
}
BARACUDA_HD double tanpi(double x) {
#if defined(__CUDA_ARCH__)
  return ::sinpi(x) / ::cospi(x);
#else
  return host::tanpi(x);
#endif
}

// Inverse normal CDF: CUDA's normcdfinv on the device; sqrt(2) erfinv(2p - 1) on the host.
BARACUDA_HD float ndtri(float p) {
#if defined(__CUDA_ARCH__)
  return ::normcdfinvf(p);
#else
  return static_cast<float>(1.41421356237309504880 * host::erfinv(2.0 * p - 1.0));
#endif
}
BARACUDA_HD double ndtri(double p) {
#if defined(__CUDA_ARCH__)
  return ::normcdfinv(p);
#else
  return 1.41421356237309504880 * host::erfinv(2.0 * p - 1.0);
#endif
}
// Modified Bessel functions of the first kind, orders 0 and 1 (even / odd in x). The C++
// library's cyl_bessel_i throws where its series stops converging; beyond |x| = 713 both
// overflow double anyway.
namespace host {
inline double bessel_i(double order, double x) {
  const double ax = std::fabs(x);
  if (ax != ax) return ax;
  if (ax > 713.0) return std::numeric_limits<double>::infinity();
  return std::cyl_bessel_i(order, ax);
}
}  // namespace host
BARACUDA_HD float bessel_i0(float x) {
#if defined(__CUDA_ARCH__)
  return ::cyl_bessel_i0f(x);
#else
  return static_cast<float>(host::bessel_i(0.0, x));
#endif
}
BARACUDA_HD double bessel_i0(double x) {
#if defined(__CUDA_ARCH__)
  return ::cyl_bessel_i0(x);
#else
  return host::bessel_i(0.0, x);
#endif
}
BARACUDA_HD float bessel_i1(float x) {
#if defined(__CUDA_ARCH__)
  return ::cyl_bessel_i1f(x);
#else
  const double r = host::bessel_i(1.0, x);
  return static_cast<float>(x < 0 ? -r : r);
#endif
}
BARACUDA_HD double bessel_i1(double x) {
#if defined(__CUDA_ARCH__)
  return ::cyl_bessel_i1(x);
#else
  const double r = host::bessel_i(1.0, x);
  return x < 0 ? -r : r;
#endif
}

// digamma (psi): reflection below 0, recurrence up to 10, then the asymptotic series
// (the standard Cephes scheme, as PyTorch's calc_digamma). psi(+-0) = -+inf, psi(-n) = NaN.
template <class T>
BARACUDA_HD T digamma(T x) {
  const T inf = std::numeric_limits<T>::infinity();
  if (x == T(0)) return signbit(x) ? inf : -inf;
  if (x != x || x == -inf) return std::numeric_limits<T>::quiet_NaN();
  if (x == inf) return inf;
  T result = 0;
  if (x < T(0)) {
    if (x == trunc(x)) return std::numeric_limits<T>::quiet_NaN();
    // psi(1 - x) - psi(x) = pi / tan(pi x), with the fractional part r of x (tan(pi r) =
    // tan(pi x)); in double for every type, as PyTorch's kernel
    const double pi = 3.14159265358979323846, r = static_cast<double>(x) - trunc(static_cast<double>(x));
    result = static_cast<T>(-pi / tan(pi * r));
    x = T(1) - x;
  }
  while (x < T(10)) {
    result -= T(1) / x;
    x += T(1);
  }
  if (x == T(10)) return result + T(2.25175258906672110764);
  const T z = T(1) / (x * x);
  const T poly = z * (T(8.33333333333333333333E-2) +
                      z * (T(-8.33333333333333333333E-3) +
                           z * (T(3.96825396825396825397E-3) +
                                z * (T(-4.16666666666666666667E-3) +
                                     z * (T(7.57575757575757575758E-3) +
                                          z * (T(-2.10927960927960927961E-2) + z * T(8.33333333333333333333E-2)))))));
  return (log(x) - T(0.5) / x - poly) + result;  // PyTorch's association
}
// Hurwitz zeta(x, q) = sum_k (k + q)^-x by Euler-Maclaurin summation (the Cephes scheme PyTorch
// uses): direct terms until the tail starts at a >= 9, then the Bernoulli corrections. x > 1.
template <class T>
BARACUDA_HD T zeta_series(T x, T q) {
  const T eps = T(1.11022302462515654042E-16);  // Cephes' MACHEP, for float data too (as PyTorch)
  const T A[] = {T(12.0), T(-720.0), T(30240.0), T(-1209600.0), T(47900160.0), T(-1.8924375803183791606e9),
                 T(7.47242496e10), T(-2.950130727918164224e12), T(1.1646782814350067249e14),
                 T(-4.5979787224074726105e15), T(1.8152105401943546773e17), T(-7.1661652561756670113e18)};
  T s = pow(q, -x), a = q, b = T(0);
  int i = 0;
  while (i < 9 || a <= T(9)) {
    i += 1;
    a += T(1);
    b = pow(a, -x);
    s += b;
    if (fabs(b / s) < eps) return s;
  }
  if (s == T(0)) return s;  // every term underflowed (huge x): the corrections would be 0 * inf
  const T w = a;
  s += b * w / (x - T(1));
  s -= T(0.5) * b;
  T fa = T(1), k = T(0);
  for (int j = 0; j < 12; ++j) {
    fa *= x + k;
    b /= w;
    const T t = fa * b / A[j];
    s += t;
    if (fabs(t / s) < eps) return s;
    k += T(1);
    fa *= x + k;
    b /= w;
    k += T(1);
  }
  return s;
}
template <class T>
BARACUDA_HD T zeta(T x, T q) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  if (x == T(1)) return inf;
  if (x < T(1)) return nan;
  if (q <= T(0)) {
    if (q == floor(q)) return inf;
    if (x != floor(x)) return nan;  // q^-x is not real
  }
  // q < 0 (x an integer here): the direct sum first walks -q terms one by one (PyTorch's loop
  // does, up to 2^52 steps in f64: a GPU hang; found by the ew-parity dump). Past 1024 of them,
  // split: with n = ceil(-q), q' = q + n in (0, 1) and r = 1 - q', the n negative terms are
  // (-1)^x (zeta(x, r) - zeta(x, r + n)). Up to 1024 the direct sum is PyTorch's, bit for bit.
  if (q < T(-1024)) {
    const T n = ceil(-q), qp = q + n, r = T(1) - qp;
    const T sign = fmod(x, T(2)) == T(0) ? T(1) : T(-1);
    return zeta_series(x, qp) + sign * (zeta_series(x, r) - zeta_series(x, r + n));
  }
  return zeta_series(x, q);
}

// trigamma (psi'): reflection below 1/2, recurrence up to 6, asymptotic series.
template <class T>
BARACUDA_HD T trigamma(T x) {
  const T pi = T(3.14159265358979323846);
  T sign = 1, result = 0;
  if (x < T(0.5)) {
    sign = -1;
    const T s = sinpi(x);
    result -= pi * pi / (s * s);
    x = T(1) - x;
  }
  // recurrence up to 12 in f64 (PyTorch stops at 6 with fewer terms: ~1e-9 relative), 6 in f32
  // (truncation ~1e-11), then 1/x + 1/(2x^2) + sum B_2k / x^(2k+1) through B_10
  const T lim = sizeof(T) == 4 ? T(6) : T(12);
  while (x < lim) {
    result += T(1) / (x * x);
    x += T(1);
  }
  const T ixx = T(1) / (x * x);
  result += (T(1) + T(1) / (T(2) * x) +
             ixx * (T(1) / T(6) - ixx * (T(1) / T(30) - ixx * (T(1) / T(42) - ixx * (T(1) / T(30) - ixx * (T(5) / T(66))))))) / x;
  return sign * result;
}

// polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 2; digamma and trigamma below.
template <class T>
BARACUDA_HD T polygamma(int n, T x) {
  if (n == 0) return digamma(x);
  if (n == 1) return trigamma(x);
  const T fact = exp(lgamma(T(n) + T(1)));
  return ((n % 2) ? T(1) : T(-1)) * fact * zeta(T(n) + T(1), x);
}

// Exponentially scaled modified Bessel functions i0e(x) = exp(-|x|) I0(x) (even) and
// i1e(x) = exp(-|x|) I1(x) (odd). While I_nu(|x|) is finite in the type (|x| <= 80 in float,
// 700 in double) the product of exp(-|x|) and I_nu; beyond, Hankel's large-argument series
// e^-x I_nu(x) = (2 pi x)^-1/2 sum_k t_k, t_0 = 1, t_k = t_(k-1) ((2k-1)^2 - 4 nu^2) / (8 k x),
// whose terms fall by more than 1/100 per step there.
template <class T> BARACUDA_HD T bessel_ie_large(T ax, T mu) {
  T t = T(1), s = T(1);
  for (int k = 1; k < 40; ++k) {
    t *= (T(2 * k - 1) * T(2 * k - 1) - mu) / (T(8 * k) * ax);
    s += t;
    if (fabs(t) <= std::numeric_limits<T>::epsilon() * fabs(s)) break;
  }
  return s * T(0.39894228040143267794) / sqrt(ax);  // 1/sqrt(2 pi): 2 pi x overflows near the type's max
}
template <class T> BARACUDA_HD T bessel_ie_cut() { return sizeof(T) == 4 ? T(80) : T(700); }
template <class T> BARACUDA_HD T bessel_i0e(T x) {
  const T ax = fabs(x);
  if (ax != ax) return ax;
  if (ax <= bessel_ie_cut<T>()) return exp(-ax) * bessel_i0(ax);
  return bessel_ie_large(ax, T(0));
}
template <class T> BARACUDA_HD T bessel_i1e(T x) {
  const T ax = fabs(x);
  if (ax != ax) return ax;
  const T r = ax <= bessel_ie_cut<T>() ? exp(-ax) * bessel_i1(ax) : bessel_ie_large(ax, T(4));
  return x < T(0) ? -r : r;
}

// log(1 + t) - t without the cancellation near 0: with s = t / (2 + t), log(1 + t) =
// 2 atanh(s) = 2 (s + s^3/3 + s^5/5 ...) and t - 2s = s t, so the difference is
// -s t + 2 (s^3/3 + s^5/5 ...); |s| <= 1/3 for |t| < 1/2.
template <class T> BARACUDA_HD T log1pmx(T t) {
  if (!(fabs(t) < T(0.5))) return log1p(t) - t;
  const T s = t / (T(2) + t), s2 = s * s;
  T term = s * s2, sum = T(0);
  for (int k = 3; k < 80; k += 2) {
    const T add = term / T(k);
    sum += add;
    if (fabs(add) <= std::numeric_limits<T>::epsilon() * fabs(sum)) break;
    term *= s2;
  }
  return T(2) * sum - s * t;
}

// Regularized incomplete gamma functions P(a, x) = igamma, Q(a, x) = 1 - P = igammac.
// log(x^a e^-x / Gamma(a)): below a = 20 directly; above, with Stirling's series for lgamma(a)
// and t = (x - a) / a, as a (log1p(t) - t) + log(a) / 2 - log(2 pi) / 2 - (Stirling's
// correction), which keeps its accuracy where a log x, x and lgamma(a) cancel.
template <class T> BARACUDA_HD T igamma_log_prefactor(T a, T x) {
  if (a < T(20)) return a * log(x) - x - lgamma(a);
  const T ia = T(1) / a, ia2 = ia * ia;
  const T corr = ia * (T(1) / T(12) - ia2 * (T(1) / T(360) - ia2 * (T(1) / T(1260) - ia2 * (T(1) / T(1680) -
                 ia2 * (T(1) / T(1188) - ia2 * (T(691) / T(360360)))))));
  return a * log1pmx((x - a) / a) + T(0.5) * log(a) - T(0.91893853320467274178) - corr;
}
// lgamma(1 + a) for |a| <= 0.2 by its Taylor series -gamma a + sum_k>=2 (-1)^k zeta(k) a^k / k
// (lgamma(1 + a) itself loses a when a is below the type's epsilon); lgamma(1 + a) beyond.
template <class T> BARACUDA_HD T lgamma1p(T a) {
  if (!(fabs(a) <= T(0.2))) return lgamma(T(1) + a);
  constexpr double kZeta[] = {1.6449340668482264, 1.2020569031595943, 1.0823232337111382, 1.0369277551433699,
                              1.0173430619844491, 1.0083492773819228, 1.0040773561979443, 1.0020083928260822,
                              1.0009945751278181, 1.0004941886041195, 1.0002460865533080, 1.0001227133475785,
                              1.0000612481350587, 1.0000305882363070, 1.0000152822594087, 1.0000076371976379,
                              1.0000038172932650, 1.0000019082127165, 1.0000009539620338, 1.0000004769329869,
                              1.0000002384505027, 1.0000001192199259};
  const T t = -a;  // Horner in t = -a: sum_k zeta(k) t^k / k = t^2 (zeta(2)/2 + t (zeta(3)/3 + ...))
  const int n = sizeof(T) == 4 ? 10 : 22;
  T h = T(0);
  for (int k = n - 1; k >= 0; --k) h = h * t + T(kZeta[k] / (k + 2));
  return a * T(-0.57721566490153286061) + t * t * h;
}
// P by its power series x^a e^-x / Gamma(a + 1) sum_n x^n / ((a+1) ... (a+n)) (x < a + 1: the
// terms fall from the start). 1 / Gamma(a + 1) rather than 1 / (a Gamma(a)): 1 / a overflows for
// a tiny a (P(2.7e-39, 2.3e-26) is 1; we gave inf, found by the ew-parity dump).
template <class T> BARACUDA_HD T igamma_series(T a, T x) {
  T ap = a, del = T(1), sum = T(1);
  for (int n = 0; n < 100000; ++n) {
    ap += T(1);
    del *= x / ap;
    sum += del;
    if (fabs(del) <= fabs(sum) * std::numeric_limits<T>::epsilon()) break;
  }
  const T lp = a < T(20) ? a * log(x) - x - lgamma1p(a) : igamma_log_prefactor(a, x) - log(a);
  return sum * exp(lp);
}
// Q for small a at x <= 1.1 (where 1 - P cancels: Q(1e-38, 1e-20) is 5e-37), from
// gamma(a, x) = x^a sum_n (-x)^n / (n! (a + n)):  Q = -expm1(a log x - lgamma(1 + a))
// - x^a / Gamma(a) sum_n>=1 (-x)^n / (n! (a + n)).
template <class T> BARACUDA_HD T igammac_small_a(T a, T x) {
  T fac = T(1), sum = T(0);
  for (int n = 1; n < 200; ++n) {
    fac *= -x / T(n);
    const T term = fac / (a + T(n));
    sum += term;
    if (fabs(term) <= std::numeric_limits<T>::epsilon() * fabs(sum)) break;
  }
  const T lx = log(x);
  return -expm1(a * lx - lgamma1p(a)) - exp(a * lx - lgamma(a)) * sum;
}
// Q by Legendre's continued fraction 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)),
// evaluated with the modified Lentz method (x >= a + 1).
template <class T> BARACUDA_HD T igammac_fraction(T a, T x) {
  const T tiny = std::numeric_limits<T>::min() / std::numeric_limits<T>::epsilon();
  T b = x + T(1) - a, c = T(1) / tiny, d = T(1) / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const T an = -T(i) * (T(i) - a);
    b += T(2);
    d = an * d + b;
    if (fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (fabs(c) < tiny) c = tiny;
    d = T(1) / d;
    const T del = d * c;
    h *= del;
    if (fabs(del - T(1)) <= std::numeric_limits<T>::epsilon()) break;
  }
  return h * exp(igamma_log_prefactor(a, x));
}
// Large a (above 1e3 in float, 1e7 in double, where the series would take sqrt(a) terms): the
// leading term of Temme's uniform expansion, Q = erfc(eta sqrt(a/2)) / 2 + R, P = erfc(-eta
// sqrt(a/2)) / 2 - R, R = exp(-a eta^2 / 2) / sqrt(2 pi a) c0(eta), eta^2 / 2 = lambda - 1 -
// log(lambda), lambda = x / a, c0 = 1 / (lambda - 1) - 1 / eta (its Taylor series near eta = 0).
// The next term is below c1(0) / a = 1 / (540 a) of the R factor: 2e-8 (float), 3e-14 (double).
template <class T> BARACUDA_HD T igamma_uniform(T a, T x, bool upper) {
  const T t = (x - a) / a, l = log1pmx(t);  // l = -eta^2 / 2
  const T eta = copysign(sqrt(T(-2) * l), t);
  const T c0 = fabs(eta) < T(0.02) ? T(-1) / T(3) + eta * (T(1) / T(12) - eta * (T(2) / T(135) - eta * (T(1) / T(864))))
                                   : T(1) / t - T(1) / eta;
  const T r = exp(a * l) / sqrt(T(6.28318530717958647692) * a) * c0;
  const T z = eta * sqrt(a / T(2));
  return upper ? T(0.5) * erfc(z) + r : T(0.5) * erfc(-z) - r;
}
// Boundary values as PyTorch (and SciPy): NaN outside a, x >= 0 and for (0, 0) and (inf, inf).
template <class T> BARACUDA_HD T igamma_pq(T a, T x, bool upper) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  if (a != a || x != x || a < T(0) || x < T(0)) return nan;
  if (a == T(0)) return x > T(0) ? (upper ? T(0) : T(1)) : nan;
  if (x == T(0)) return upper ? T(1) : T(0);
  if (a == inf) return x == inf ? nan : (upper ? T(1) : T(0));
  if (x == inf) return upper ? T(0) : T(1);
  if (a > (sizeof(T) == 4 ? T(1e3) : T(1e7))) return igamma_uniform(a, x, upper);
  if (x < a + T(1)) {
    // small a next to x <= 1.1: Q directly (the region of SciPy's igamc series)
    if (upper && x <= T(1.1) && (x <= T(0.5) ? a < T(-0.4) / log(x) : a < T(1.1) * x)) return igammac_small_a(a, x);
    const T p = igamma_series(a, x);
    return upper ? T(1) - p : p;
  }
  const T q = igammac_fraction(a, x);
  return upper ? q : T(1) - q;
}
// dP/dx = x^(a-1) e^-x / Gamma(a) (= -dQ/dx). Inside a, x in (0, inf) through the stable
// prefactor; elsewhere PyTorch's formula exp((a - 1) log x - x - lgamma(a)) as it evaluates
// (igamma(1, 0)' is NaN there, igamma(-1, 1)' is 0, igamma(3, inf)' is NaN ...).
template <class T> BARACUDA_HD T igamma_dx(T a, T x) {
  const T inf = std::numeric_limits<T>::infinity();
  if (a > T(0) && x > T(0) && a < inf && x < inf) return exp(igamma_log_prefactor(a, x) - log(x));
  return exp((a - T(1)) * log(x) - x - lgamma(a));
}

}  // namespace baracuda::ew::m
