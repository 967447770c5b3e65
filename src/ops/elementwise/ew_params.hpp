// The kernel form of an elementwise op's parameters (the p.v[] each op in ew_ops.hpp reads),
// computed from the descriptor's Scalars. Header-only: the library and the float64 reference
// both use it.
#pragma once

#include <array>
#include <cmath>
#include <limits>
#include <string_view>

#include "baracuda/ops/elementwise.hpp"
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

// The kernel form of the op's parameters (ew_ops.hpp documents each).
inline Result<std::array<double, 4>> kernel_params(std::string_view opn, const ElementwiseDescriptor& d, DType result,
                                                    bool int_math) {
  std::array<double, 4> p{};
  for (int k = 0; k < kEwMaxParams; ++k) p[k] = d.param[k].as_double();
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
    case EwOp::nextafter:
      p[0] = result == DType::bf16 ? 1.0 : (result == DType::f16 ? 2.0 : 0.0);
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
