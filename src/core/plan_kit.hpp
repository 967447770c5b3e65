// The steps every plan's select() and run() share, written once.
//
//   Result<FooPlan> FooPlan::select(const FooDescriptor& d, const PlanPreference& pref) {
//     FooPlan p;
//     if (Status s = begin_select(kOp, d, pref, &p.sku_); !s.ok()) return s;  // enums, preference, backend, arch
//     ... the family's own validation and choices, p.operands_ = ..., p.guarantee_ = ...
//     if (Status s = resolve_operands<FooArgs>(kOp, p.operands_); !s.ok()) return s;
//     return p;
//   }
//   Status FooPlan::can_implement(const FooArgs& a) const {
//     return check_plan_args(kOp, selected(), operands_, a);  // + the family's own checks
//   }
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/operands.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "core/arch.hpp"
#include "core/validate.hpp"

namespace baracuda {

// The accumulator (and math) type of float data: f64 for f64, f32 otherwise.
constexpr DType acc_of(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

// What a float op that accumulates in acc_of(dt) promises (bitwise deterministic by default).
inline PrecisionGuarantee float_guarantee(DType dt, bool bit_exact = false, Determinism det = Determinism::kRunToRun) {
  PrecisionGuarantee g;
  g.accumulator = g.math = acc_of(dt);
  g.bit_exact = bit_exact;
  g.determinism = det;
  return g;
}

namespace plan_kit_detail {
template <class E>
Status bad_enum(std::string_view op, const std::string& field, E v) {
  return error(StatusCode::kInvalidProblem, op, ": ", field, " = ", static_cast<int64_t>(v), " is not a ",
               enum_type_name<E>(), " (", enum_names<E>(), ")");
}
template <class M>
Status check_member_enums(std::string_view op, const std::string& name, const M& m);
}  // namespace plan_kit_detail

// Every enum-valued field of a described struct (DType included; optional and array fields and
// nested structs too) holds one of its enumerators: a value cast from an arbitrary integer
// (a C caller's, a fuzzer's) is refused with the field named, before anything indexes a table by it.
template <Described T>
Status check_enums(std::string_view op, const T& obj, const std::string& prefix = {}) {
  Status s;
  for_each_field(obj, [&](std::string_view name, const auto& m) {
    if (s.ok()) s = plan_kit_detail::check_member_enums(op, cat(prefix, name), m);
  });
  return s;
}

template <class M>
Status plan_kit_detail::check_member_enums(std::string_view op, const std::string& name, const M& m) {
  if constexpr (DescribedEnum<M>) {
    if (!enum_valid(m)) return bad_enum(op, name, m);
  } else if constexpr (std::is_base_of_v<TensorLayout, M>) {
    if (!enum_valid(m.dtype)) return bad_enum(op, cat(name, ".dtype"), m.dtype);
  } else if constexpr (std::is_array_v<M>) {
    for (size_t i = 0; i < std::extent_v<M>; ++i)
      if (Status s = check_member_enums(op, cat(name, "[", i, "]"), m[i]); !s.ok()) return s;
  } else if constexpr (requires { m.has_value(); *m; }) {
    if (m.has_value()) return check_member_enums(op, name, *m);
  } else if constexpr (Described<M>) {
    return check_enums(op, m, cat(name, "."));
  } else if constexpr (requires { describe_check_enums(m); }) {
    if (!describe_check_enums(m))
      return error(StatusCode::kInvalidProblem, op, ": ", name, " holds a dtype or enum value outside its range");
  }
  return {};
}

// The preference's own fields, the forced backend against the one this implementation uses,
// and the target architecture; fills sku's backend and arch. A plan with several candidate
// implementations walks them with select_first (core/select_first.hpp) instead.
Status begin_select(std::string_view op, const PlanPreference& pref, KernelSku* sku, Backend backend = Backend::kBespoke);

template <Described Desc>
Status begin_select(std::string_view op, const Desc& d, const PlanPreference& pref, KernelSku* sku,
                    Backend backend = Backend::kBespoke) {
  if (Status s = check_enums(op, d); !s.ok()) return s;
  return begin_select(op, pref, sku, backend);
}

// "<op>: dtype f8e4m3 is not supported (supported: f32, f16, bf16, f64)" unless List has t.
template <class List>
Status check_dtype(std::string_view op, std::string_view field, DType t, List) {
  if (List::contains(t)) return {};
  return error(StatusCode::kUnsupported, op, ": ", field, " ", dtype_name(t), " is not supported (supported: ", List::names(),
               ")");
}

// What run() and can_implement() check first: the plan was selected, and the views match the
// expected operands (check_args).
template <Described Args>
Status check_plan_args(std::string_view op, bool selected, const OperandSpecs& operands, const Args& args) {
  if (!selected)
    return error(StatusCode::kInvalidProblem, op, ": the plan was not selected (a default-constructed plan runs nothing; "
                 "obtain one from select())");
  return check_args(op, operands, args);
}

// Whether a call has nothing to write: every output (and in-out) view has no element or is an
// absent optional one. run() then returns OK before any CUDA call (the fuzzer checks it).
template <Described Args>
bool writes_nothing(const OperandSpecs& operands, const Args& args) {
  for (const OperandSpec& o : operands) {
    if (!o.writes()) continue;
    const BoundView v = bound_view(args, o.field, o.element);
    if (v.layout && v.data && v.layout->numel() > 0) return false;
  }
  return true;
}

}  // namespace baracuda
