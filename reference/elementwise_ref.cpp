#include "elementwise_ref.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "baracuda/core/half_bits.hpp"
#include "ops/elementwise/ew_ops.hpp"

namespace baracuda::ref {

namespace {
template <class Op, int Ar, class C>
C eval(const C* x, const C* pv) {
  ew::P<C> p;
  for (int k = 0; k < 4; ++k) p.v[k] = pv[k];
  C out[1];
  ew::Fwd<Op, Ar>::apply(x, out, p);
  return out[0];
}
template <class Op, int Ar, unsigned G>
void deriv(const double* x, double g, const double* pv, double* dx) {
  for (int k = 0; k < 3; ++k) dx[k] = 0.0;
  if constexpr (G != 0) {
    ew::P<double> p;
    for (int k = 0; k < 4; ++k) p.v[k] = pv[k];
    double in[4] = {g, x[0], Ar > 1 ? x[1] : 0.0, Ar > 2 ? x[2] : 0.0};
    ew::Bwd<Op, Ar>::apply(in, dx, p);
  }
}

// fp8 rounding: nearest-even on the format's grid; overflow -> NaN (e4m3) / inf (e5m2), or
// the largest finite value when saturating.
double round_fp8(double v, bool e4m3, bool sat) {
  if (std::isnan(v)) return v;
  const int mant = e4m3 ? 3 : 2;
  const int emin = e4m3 ? -6 : -14;
  const double maxv = e4m3 ? 448.0 : 57344.0;
  const double a = std::fabs(v);
  if (std::isinf(v)) return sat ? std::copysign(maxv, v) : (e4m3 ? std::numeric_limits<double>::quiet_NaN() : v);
  int e = a == 0 ? emin : std::max(emin, static_cast<int>(std::floor(std::log2(a))));
  double q = std::ldexp(1.0, e - mant);
  double r = std::nearbyint(a / q) * q;
  if (r > maxv) {
    // beyond the midpoint between max and the next (non-existent) step
    const double next = maxv + std::ldexp(1.0, static_cast<int>(std::floor(std::log2(maxv))) - mant);
    // the midpoint rounds to even: e4m3's max (1.110b x 2^8) is even, e5m2's (1.11b x 2^15) odd
    if (sat) r = maxv;
    else if (e4m3 ? a <= (maxv + next) / 2 : a < (maxv + next) / 2) r = maxv;
    else return e4m3 ? std::numeric_limits<double>::quiet_NaN() : std::copysign(std::numeric_limits<double>::infinity(), v);
  }
  return std::copysign(r, v);
}

int64_t f2i_sat(double v, int64_t lo, int64_t hi, int64_t nan_value) {
  if (std::isnan(v)) return nan_value;
  const double t = std::trunc(v);
  if (t <= static_cast<double>(lo)) return lo;
  if (t >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(t);
}
}  // namespace

// The op's forward in C, for ops that have a C (floating or integer) form; NaN / 0 otherwise.
template <class C>
C forward_in(EwOp op, const C* x, const C* p) {
  switch (op) {
#define BARACUDA_X(name, arity, kind, grad, group)                                             \
  case EwOp::name:                                                                             \
    if constexpr (std::is_integral_v<C> ? ew_kind_has_ints(EwKind::kind) : ew_kind_has_floats(EwKind::kind)) \
      return eval<ew::op_##name, arity, C>(x, p);                                              \
    break;
    BARACUDA_EW_OPS(BARACUDA_X)
#undef BARACUDA_X
  }
  if constexpr (std::is_integral_v<C>) return 0;
  else return std::numeric_limits<C>::quiet_NaN();
}

double ew_forward(EwOp op, const double* x, const double* p) { return forward_in(op, x, p); }
int64_t ew_forward_int(EwOp op, const int64_t* x, const int64_t* p) { return forward_in(op, x, p); }
float ew_forward_f32(EwOp op, const float* x, const float* p) { return forward_in(op, x, p); }

void ew_backward(EwOp op, const double* x, double g, const double* p, double* dx) {
  switch (op) {
#define BARACUDA_X(name, arity, kind, grad, group) \
  case EwOp::name: deriv<ew::op_##name, arity, grad>(x, g, p, dx); return;
    BARACUDA_EW_OPS(BARACUDA_X)
#undef BARACUDA_X
  }
}

double store_as(DType t, double v, bool sat) {
  switch (t) {
    case DType::f64: return v;
    case DType::f32: return static_cast<double>(static_cast<float>(v));
    case DType::f16: return f16_bits_to_float(float_to_f16_bits(static_cast<float>(v)));
    case DType::bf16: return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v)));
    case DType::f8e4m3: return round_fp8(static_cast<float>(v), true, sat);
    case DType::f8e5m2: return round_fp8(static_cast<float>(v), false, sat);
    case DType::boolean: return v != 0.0 ? 1.0 : 0.0;  // NaN -> true
    case DType::i64: return static_cast<double>(f2i_sat(v, INT64_MIN, INT64_MAX, INT64_MIN));
    case DType::i32: return static_cast<double>(f2i_sat(v, INT32_MIN, INT32_MAX, 0));
    case DType::i16: return static_cast<double>(static_cast<int16_t>(f2i_sat(v, INT32_MIN, INT32_MAX, 0)));
    case DType::i8: return static_cast<double>(static_cast<int8_t>(f2i_sat(v, INT32_MIN, INT32_MAX, 0)));
    case DType::u8: return static_cast<double>(static_cast<uint8_t>(f2i_sat(v, INT64_MIN, INT64_MAX, INT64_MIN)));
    default: return v;
  }
}

int64_t store_int(DType t, int64_t v) {
  switch (t) {
    case DType::i8: return static_cast<int8_t>(v);
    case DType::u8: return static_cast<uint8_t>(v);
    case DType::i16: return static_cast<int16_t>(v);
    case DType::i32: return static_cast<int32_t>(v);
    case DType::boolean: return v != 0;
    default: return v;
  }
}


// k (in units of the compute type's epsilon) per op; default 4.
double ew_tolerance_k(EwOp op) {
  switch (op) {
    case EwOp::lgamma: case EwOp::erfinv: case EwOp::log_ndtr: case EwOp::pow: case EwOp::float_power:
    case EwOp::digamma: case EwOp::erfcx: case EwOp::ndtri: case EwOp::i0: case EwOp::i1: case EwOp::i0e: case EwOp::i1e: case EwOp::igamma: case EwOp::igammac:
    case EwOp::polygamma: case EwOp::zeta:
    case EwOp::tan: case EwOp::acosh: case EwOp::atanh: case EwOp::asinh: case EwOp::logit:
    case EwOp::mish: case EwOp::logaddexp: case EwOp::logaddexp2: case EwOp::xlog1py: case EwOp::entr: case EwOp::erfc:
    case EwOp::gelu_tanh: case EwOp::geglu: case EwOp::tanhshrink: case EwOp::expm1: case EwOp::cosh: case EwOp::sinh:
    case EwOp::ldexp: case EwOp::hypot: case EwOp::softplus: case EwOp::logsigmoid:
      return 64;
    case EwOp::sinc:  // (z cos z - sin z) cancels near tan(z) = z, in f32 as in PyTorch
      return 256;
    default: return 8;
  }
}

double ew_tolerance(DType out, double k, double ref) {
  // f64 results are compared with a reference of the same precision: its own rounding,
  // amplified by the op's conditioning (1 - x*x near |x| = 1 ...), needs the wider factor.
  const double ce = out == DType::f64 ? 16 * 2.220446049250313e-16 : 1.1920929e-7;
  double rtol = k * ce;
  if (out == DType::f16 || out == DType::bf16) rtol += (out == DType::f16 ? 9.765625e-4 : out == DType::bf16 ? 7.8125e-3 : 0.0);
  return rtol * (1.0 + std::fabs(ref));
}

// The relative error a derivative inherits from x² rounded in the compute type before 1 - x²
// (asin, acos, atanh) or x² - 1 (acosh), as PyTorch's formulas round it (separate tensor ops, so
// the kernels do not fuse it either): x² / |1 - x²| times the exponent of (1 - x²) in the
// derivative (1/2 under the square roots), per unit roundoff. Repro of the need: dasin/dx0 f32
// [41, 77] seed 70288 (x² near 1 - 1e-2: 19 ulp from the float64 reference).
double ew_backward_conditioning(EwOp op, double x) {
  const double x2 = x * x, d = std::fabs(1.0 - x2);
  if (!(d > 0)) return 0;
  switch (op) {
    case EwOp::asin: case EwOp::acos: case EwOp::acosh: return 0.5 * x2 / d;
    case EwOp::atanh: return x2 / d;
    default: return 0;
  }
}

// Ops whose result is defined by the precision itself (floor division and remainder jump at
// integers, nextafter steps one ulp of the compute type): their reference is evaluated in the
// kernel's own precision, with IEEE-exact steps only.
bool ew_discontinuous(EwOp op) {
  return op == EwOp::div_floor || op == EwOp::div_trunc || op == EwOp::remainder || op == EwOp::fmod || op == EwOp::nextafter;
}

double ew_forward_at(EwOp op, const double* x, const double* p, DType compute_out) {
  if (ew_discontinuous(op) && compute_out != DType::f64) {
    float xf[3] = {static_cast<float>(x[0]), static_cast<float>(x[1]), static_cast<float>(x[2])};
    float pf[4] = {static_cast<float>(p[0]), static_cast<float>(p[1]), static_cast<float>(p[2]), static_cast<float>(p[3])};
    return ew_forward_f32(op, xf, pf);
  }
  return ew_forward(op, x, p);
}

}  // namespace baracuda::ref
