#include "core/scalar_convert.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>

#include "baracuda/core/half_bits.hpp"
#include "core/validate.hpp"

namespace baracuda {

namespace {

template <class I>
Result<uint64_t> int_bits(std::string_view op, std::string_view field, DType dt, const Scalar& v) {
  using L = std::numeric_limits<I>;
  const double lo_ok = std::is_signed_v<I> ? static_cast<double>(L::min()) : -static_cast<double>(L::max());
  const double hi_ok = static_cast<double>(L::max());
  int64_t iv = 0;
  if (v.is_int()) {
    const bool in_range = std::is_signed_v<I> ? (v.i >= static_cast<int64_t>(L::min()) && v.i <= static_cast<int64_t>(L::max()))
                                              : (v.i >= -static_cast<int64_t>(L::max()) && v.i <= static_cast<int64_t>(L::max()));
    if (!in_range) return error(StatusCode::kInvalidProblem, op, ": ", field, " = ", v.i, " overflows ", dtype_name(dt));
    iv = v.i;
  } else {
    // 2^63 is the first double past int64's range: compare against it, never convert it
    if (!std::isfinite(v.f) || v.f < lo_ok || v.f > hi_ok || std::fabs(v.f) >= 9223372036854775808.0)
      return error(StatusCode::kInvalidProblem, op, ": ", field, " = ", v.f, " cannot be converted to ", dtype_name(dt),
                   " without overflow");
    iv = static_cast<int64_t>(std::trunc(v.f));
  }
  using U = std::make_unsigned_t<I>;
  return static_cast<uint64_t>(static_cast<U>(static_cast<I>(iv)));
}

}  // namespace

Result<uint64_t> scalar_to_bits(std::string_view op, std::string_view field, DType dt, const Scalar& v) {
  const double d = v.as_double();
  switch (dt) {
    case DType::f32: return static_cast<uint64_t>(std::bit_cast<uint32_t>(static_cast<float>(d)));
    case DType::f64: return std::bit_cast<uint64_t>(d);
    case DType::f16: return static_cast<uint64_t>(float_to_f16_bits(static_cast<float>(d)));
    case DType::bf16: return static_cast<uint64_t>(float_to_bf16_bits(static_cast<float>(d)));
    case DType::i8: return int_bits<int8_t>(op, field, dt, v);
    case DType::u8: return int_bits<uint8_t>(op, field, dt, v);
    case DType::i16: return int_bits<int16_t>(op, field, dt, v);
    case DType::i32: return int_bits<int32_t>(op, field, dt, v);
    case DType::i64: return int_bits<int64_t>(op, field, dt, v);
    case DType::boolean: return uint64_t{v.is_int() ? v.i != 0 : d != 0.0};  // NaN -> true
    default: return error(StatusCode::kUnsupported, op, ": no conversion of ", field, " to ", dtype_name(dt));
  }
}

}  // namespace baracuda
