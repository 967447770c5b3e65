// The kernel form of an elementwise op's parameters (the p.v[] each op in ew_ops.hpp reads),
// computed from the descriptor's Scalars. Header-only: the library and the float64 reference
// both use it.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <string_view>

#include "baracuda/core/half_bits.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "core/checked_math.hpp"
#include "core/validate.hpp"

namespace baracuda::ew {

inline double dtype_max(DType t) {
  switch (t) {
    case DType::f16: return 65504.0;
    case DType::bf16: return 3.3895313892515355e38;
    case DType::f32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

// v as the 16-bit storage type t holds it (f32, then round to nearest even, as c10's
// BFloat16 / Half constructors); v itself for every other t.
inline double round_to_storage(DType t, double v) {
  if (t == DType::bf16) return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v)));
  if (t == DType::f16) return f16_bits_to_float(float_to_f16_bits(static_cast<float>(v)));
  return v;
}

// The format code of ew_ops.hpp's round_to_data: 1 bf16, 2 f16, 0 any other dtype (no rounding).
inline double fmt16(DType t) { return t == DType::bf16 ? 1.0 : (t == DType::f16 ? 2.0 : 0.0); }

// PyTorch's CUDA kernels of these ops read a Python-scalar operand as the tensors' own dtype
// (their functors take scalar_t, not opmath_t): on bf16 / f16 data the scalar is rounded to that
// format before the f32 math, so remainder(x, 0.3) on bf16 uses 0.30078125 and x == 0.1 compares
// with bf16(0.1). Every other op reads it as f32 (f64 for f64). docs/notes/torch-scalar-operands.md
// gives the evidence per op. k: the operand's position (div: only a scalar dividend).
inline bool scalar_read_as_storage(EwOp op, int k) {
  switch (op) {
    case EwOp::remainder: case EwOp::fmod: case EwOp::pow: case EwOp::copysign: case EwOp::xlogy: case EwOp::xlog1py:
    case EwOp::eq: case EwOp::ne: case EwOp::lt: case EwOp::le: case EwOp::gt: case EwOp::ge: case EwOp::where:
    case EwOp::atan2: case EwOp::hypot: case EwOp::nextafter: case EwOp::logaddexp: case EwOp::logaddexp2:
      return true;
    // PyTorch takes no number here, only a tensor of the data's own dtype: the value rounded to it
    case EwOp::lerp: case EwOp::lerp_scalar: case EwOp::isclose: case EwOp::heaviside:
      return true;
    case EwOp::div: case EwOp::div_trunc: case EwOp::div_floor: return k == 0;
    default: return false;
  }
}
// The same for op parameters: threshold's threshold and value, hardshrink's and softshrink's lambda.
inline bool params_read_as_storage(EwOp op) {
  return op == EwOp::threshold || op == EwOp::hardshrink || op == EwOp::softshrink;
}
// A binary op on a tensor and a Python scalar, in that order (x / s, x ** s, ldexp(x, s) ...).
inline bool tensor_then_scalar(const ElementwiseDescriptor& d) {
  return d.num_operands == 2 && !d.operand[0].is_scalar && d.operand[1].is_scalar;
}

// ldexp with a Python-float exponent on f32 data: PyTorch forms 2^b in double before the multiply;
// on f64 data its pow takes the sqrt path for b = 0.5 (sqrt(2), where the GPU's pow is 1 ulp
// low). Otherwise (f64: a pow on the GPU; bf16 / f16: 2^b rounded to the data's format) the
// kernel forms 2^b.
inline bool ldexp_scalar_factor(const ElementwiseDescriptor& d) {
  if (!tensor_then_scalar(d)) return false;
  if (d.operand[1].value.is_int() || d.operand[1].value.is_bool()) return false;
  auto c = ew_common_dtype(d);
  return c.ok() && (*c == DType::f32 || (*c == DType::f64 && d.operand[1].value.as_double() == 0.5));
}

// Division by a Python scalar: PyTorch multiplies by the reciprocal (true division: formed in
// double and rounded to the compute type; rounding_mode='trunc': formed in the compute type).
// Not for integer math.
inline bool divides_by_reciprocal(const ElementwiseDescriptor& d) {
  return (d.op == EwOp::div || d.op == EwOp::div_trunc) && tensor_then_scalar(d);
}

// The value scalar operand k of d enters the kernel's math with (before the kernel's own
// conversion to f32 / f64): the Scalar, rounded to bf16 / f16 where PyTorch does that, or the
// divisor's reciprocal. Used by the library (fill_scalars) and by the float64 reference's callers.
// backward: PyTorch's derivative formulas of pow, xlogy and xlog1py take the Scalar as a double
// (pow_backward's exponent, log(base)), so their gradients read it unrounded.
inline double kernel_literal(const ElementwiseDescriptor& d, int k, bool backward = false) {
  const double v = d.operand[k].value.as_double();
  auto common = ew_common_dtype(d);
  if (!common) return v;
  if (k == 1 && divides_by_reciprocal(d) && is_floating(*common)) {
    if (d.op == EwOp::div_trunc && *common != DType::f64) return static_cast<double>(1.0f / static_cast<float>(v));
    return 1.0 / v;
  }
  if (backward && (d.op == EwOp::pow || d.op == EwOp::xlogy || d.op == EwOp::xlog1py)) return v;
  // ldexp(f32 x, float): PyTorch's x * pow(2.0, b), 2^b a 0-dim f64 formed first (read as f32)
  if (d.op == EwOp::ldexp && k == 1 && ldexp_scalar_factor(d)) return std::pow(2.0, v);
  return scalar_read_as_storage(d.op, k) ? round_to_storage(*common, v) : v;
}

// Parameter k as integer kernels read it (EwScalars::i): an integer Scalar exactly (int64 beyond
// 2^53 included), unless kernel_params replaced its value; otherwise p[k] truncated (NaN: 0;
// beyond int64: saturated).
inline int64_t kernel_int_param(const ElementwiseDescriptor& d, const std::array<double, 4>& p, int k) {
  if (d.param[k].is_int() && p[k] == static_cast<double>(d.param[k].i)) return d.param[k].i;
  return saturating_float_to_int(p[k]);  // NaN 0, beyond int64 saturated (never UB)
}

// The kernel form of the op's parameters (ew_ops.hpp documents each).
inline Result<std::array<double, 4>> kernel_params(std::string_view opn, const ElementwiseDescriptor& d, DType result,
                                                    bool int_math) {
  std::array<double, 4> p{};
  for (int k = 0; k < kEwMaxParams; ++k) p[k] = d.param[k].as_double();
  const auto common_r = ew_common_dtype(d);  // an op without operands (tests) has none: `result` stands in
  const DType common = common_r.ok() ? *common_r : result;
  if (params_read_as_storage(d.op))
    for (double& v : p) v = round_to_storage(common, v);
  switch (d.op) {
    case EwOp::round: {
      if (!d.param[0].is_int()) return error(StatusCode::kInvalidProblem, opn, ": round decimals must be an integer");
      const int64_t dec = d.param[0].i;
      if (dec > 300 || dec < -300) return error(StatusCode::kInvalidProblem, opn, ": round decimals = ", dec, " is out of range");
      p = {std::pow(10.0, static_cast<double>(dec < 0 ? -dec : dec)), dec < 0 ? 1.0 : 0.0, dec != 0 ? 1.0 : 0.0, 0.0};
      break;
    }
    case EwOp::polygamma:
      if (!d.param[0].is_int() || d.param[0].i < 0 || d.param[0].i > 100)
        return error(StatusCode::kInvalidProblem, opn, ": polygamma order n = ", p[0], " must be an integer in [0, 100]");
      break;
    case EwOp::nextafter:  // the step of the common dtype's format (the kernel reads its bits exactly)
      p[0] = fmt16(common);
      break;
    case EwOp::nan_to_num:
      if (std::isnan(p[1])) p[1] = dtype_max(result);
      if (std::isnan(p[2])) p[2] = -dtype_max(result);
      break;
    case EwOp::clamp:
      p = {std::isnan(p[0]) ? 0.0 : p[0], std::isnan(p[1]) ? 0.0 : p[1], std::isnan(p[0]) ? 0.0 : 1.0, std::isnan(p[1]) ? 0.0 : 1.0};
      if (int_math) {
        if (!std::isnan(d.param[0].as_double()) && !d.param[0].is_int())
          return error(StatusCode::kInvalidProblem, opn, ": clamp of an integer tensor needs integer bounds");
        if (!std::isnan(d.param[1].as_double()) && !d.param[1].is_int())
          return error(StatusCode::kInvalidProblem, opn, ": clamp of an integer tensor needs integer bounds");
      }
      break;
    case EwOp::div: case EwOp::div_trunc:
      p = {divides_by_reciprocal(d) && !int_math ? 1.0 : 0.0, 0, 0, 0};  // p0: b holds 1 / divisor
      if (d.op == EwOp::div_trunc && !int_math && p[0] == 0) p[3] = fmt16(common);  // p3: trunc of the 16-bit quotient
      break;
    case EwOp::div_floor:  // b stays the divisor; p0: PyTorch's scalar-divisor form, p3: the floor kept in 16 bits
      p = {0, 0, 0, 0};
      if (!int_math) {
        if (tensor_then_scalar(d)) {  // p1: PyTorch's reciprocal of the divisor, formed in the compute type
          const double v = d.operand[1].value.as_double();
          p[0] = 1.0;
          p[1] = common == DType::f64 ? 1.0 / v : static_cast<double>(1.0f / static_cast<float>(v));
        }
        p[3] = fmt16(common);
      }
      break;
    case EwOp::isclose:
      if (!(p[0] >= 0) || !(p[1] >= 0))
        return error(StatusCode::kInvalidProblem, opn, ": isclose needs rtol >= 0 and atol >= 0 (rtol = ", p[0], ", atol = ", p[1], ")");
      if (int_math) {  // the f32 test on integer data reads rtol, atol from their f32 bits
        p[3] = p[0] == 0 && p[1] == 0 ? 1.0 : 0.0;  // PyTorch: zero tolerances = equality only
        p[0] = std::bit_cast<uint32_t>(static_cast<float>(p[0]));
        p[1] = std::bit_cast<uint32_t>(static_cast<float>(p[1]));
      } else {
        p[3] = fmt16(common);
      }
      break;
    case EwOp::pow: case EwOp::float_power:
      // tensor ** Python scalar: PyTorch's special cases (ew_ops.hpp op_pow), tested on the
      // exponent as given (0, 1, 0.5, -0.5, -1), then on it converted to the data's type (2, 3,
      // -2: exp.to<scalar_t>(), so 2.00000001 is 2 for f32 data too). float_power is pow on f64.
      p = {0, 0, 0, 0};
      if (!int_math && tensor_then_scalar(d)) {
        const double e = d.operand[1].value.as_double();
        const DType cd = d.op == EwOp::float_power ? DType::f64 : common;
        const double r = cd == DType::f64 ? e : round_to_storage(cd, static_cast<float>(e));
        p[0] = e == 0 ? 2 : e == 1 ? 1 : e == 0.5 ? 3 : e == -0.5 ? 4 : e == -1 ? 5 : r == 2 ? 6 : r == 3 ? 7 : r == -2 ? 8 : 0;
        p[1] = fmt16(cd);
      }
      break;
    case EwOp::lcm:  // the integer width the product wraps to before the abs
      p = {dtype_size(result) == 8 ? 64.0 : 32.0, 0, 0, 0};
      break;
    case EwOp::tanhshrink: case EwOp::softsign:  // composites: the intermediate in the 16-bit format
      p = {fmt16(result), 0, 0, 0};
      break;
    case EwOp::ldexp:  // p0: 1 integer exponent (exact scaling), 2 b holds 2^b (a float Scalar);
                       // p1: 2^b rounded to the exponent tensor's 16-bit format
      p = {0, 0, 0, 0};
      if (!d.operand[1].is_scalar) {
        p[0] = is_integral(d.operand[1].dtype) || d.operand[1].dtype == DType::boolean ? 1.0 : 0.0;
        p[1] = fmt16(d.operand[1].dtype);
      } else if (d.operand[1].value.is_int() || d.operand[1].value.is_bool()) {
        p[0] = 1.0;
      } else if (ldexp_scalar_factor(d)) {
        p[0] = 2.0;
      } else {
        p[1] = fmt16(common);  // f64: pow on the GPU; bf16 / f16: pow(2.0, b) rounded to the data's format
      }
      break;
    case EwOp::rrelu: p = {(p[0] + p[1]) / 2.0, 0, 0, 0}; break;
    case EwOp::elu: p = {p[0] * p[1], p[1], p[2], 0}; break;
    case EwOp::selu: {
      const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
      p = {alpha * scale, scale, 1.0, 0};
      break;
    }
    case EwOp::celu:
      if (p[0] == 0.0) return error(StatusCode::kInvalidProblem, opn, ": celu alpha must be nonzero");
      p = {p[0], 1.0, 1.0 / p[0], 0};
      break;
    case EwOp::add: case EwOp::sub: case EwOp::rsub:
      if (int_math && !d.param[0].is_int())
        return error(StatusCode::kInvalidProblem, opn, ": alpha must be an integer for integral inputs (it is ", p[0], ")");
      if (result == DType::boolean && d.op == EwOp::add && d.param[0].is_int() && d.param[0].i != 1 && d.param[0].i != 0)
        return error(StatusCode::kInvalidProblem, opn, ": alpha for bool add must be a bool");
      break;
    default: break;
  }
  return p;
}


}  // namespace baracuda::ew
