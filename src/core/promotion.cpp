#include "baracuda/core/promotion.hpp"

#include <optional>

#include "core/validate.hpp"

namespace baracuda {

namespace {

bool is_float_t(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64; }
bool is_exotic(DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2 || is_complex(t); }

// Integer rank for promotion: u8 is special (u8 + i8 -> i16).
int int_bits(DType t) {
  switch (t) {
    case DType::i8: case DType::u8: return 8;
    case DType::i16: return 16;
    case DType::i32: return 32;
    default: return 64;
  }
}
int float_rank(DType t) {
  switch (t) {
    case DType::f16: case DType::bf16: return 1;
    case DType::f32: return 2;
    default: return 3;
  }
}

// An absent tier is std::nullopt.
using Opt = std::optional<DType>;

Opt promote_opt(Opt a, Opt b, bool* ok) {
  if (!a) return b;
  if (!b) return a;
  auto r = promote_types(*a, *b);
  if (!r) {
    *ok = false;
    return a;
  }
  return *r;
}

Opt combine_categories(Opt higher, Opt lower, bool* ok) {
  if (higher && is_float_t(*higher)) return higher;
  if ((higher && *higher == DType::boolean) || (lower && is_float_t(*lower))) return promote_opt(higher, lower, ok);
  if (higher) return higher;
  return lower;
}

}  // namespace

Result<DType> promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_exotic(a) || is_exotic(b))
    return error(StatusCode::kUnsupported, "promote_types: ", dtype_name(a), " and ", dtype_name(b), " do not promote");
  if (a == DType::boolean) return b;
  if (b == DType::boolean) return a;
  const bool fa = is_float_t(a), fb = is_float_t(b);
  if (fa && fb) {
    if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16)) return DType::f32;
    return float_rank(a) >= float_rank(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  if (a == DType::u8 || b == DType::u8) {  // both integers
    const DType o = a == DType::u8 ? b : a;
    return o == DType::i8 ? DType::i16 : o;
  }
  return int_bits(a) >= int_bits(b) ? a : b;
}

DType scalar_dtype(const Scalar& s) {
  if (s.is_bool()) return DType::boolean;
  if (s.is_int()) return DType::i64;
  return DType::f32;
}

Result<DType> result_type(std::span<const PromotionOperand> operands) {
  Opt tier[3];
  bool ok = true;
  for (const PromotionOperand& o : operands) {
    Opt& t = tier[static_cast<int>(o.tier) % 3];
    t = promote_opt(t, o.dtype, &ok);
    if (!ok) break;
  }
  const Opt r = ok ? combine_categories(tier[0], combine_categories(tier[1], tier[2], &ok), &ok) : Opt{};
  if (!ok || !r) return error(StatusCode::kUnsupported, "result_type: the operand dtypes do not promote");
  return *r;
}

bool can_cast(DType from, DType to) {
  if (is_float_t(from) && (is_integral(to) || to == DType::boolean)) return false;
  if (from != DType::boolean && to == DType::boolean) return false;
  return true;
}

}  // namespace baracuda
