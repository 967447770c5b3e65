// baracuda/core/any_plan.hpp — any op's plan behind one type, chosen by the op's name.
//
// The op table (include/baracuda/ops/ops.def) lists every plan type once. AnyPlan selects a
// row's plan from a problem line or a typed descriptor, reports what the typed plan reports
// (operands, workspace, sku, precision guarantee) and runs it on views bound by operand name:
//
//   auto plan = AnyPlan::select("rope", "dtype=bf16 seq=4096 heads_q=32 heads_k=8 head_dim=128");
//   for (const OperandSpec& o : plan->operands()) ...            // allocate what it expects
//   NamedView views[] = {{"q", q}, {"q_out", q_out}, {"k", k}, {"k_out", k_out}};
//   Status s = plan->run(stream, {}, views);
//
// The benchmark CLI, the contract tests and the Python package are built on it. The typed
// plans stay the primary API: AnyPlan adds one virtual call and, in run(), the binding of names
// to the typed Args (a few string compares per operand; nothing is allocated unless the op
// takes a variable-count operand list).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "baracuda/core/operands.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

// A plan type's descriptor and Args, read off its select() and can_implement() signatures.
namespace plan_traits_detail {
template <class F>
struct FirstParam;
template <class R, class A, class... Rest>
struct FirstParam<R (*)(A, Rest...)> {
  using type = std::remove_cvref_t<A>;
};
template <class F>
struct OnlyParam;
template <class R, class C, class A>
struct OnlyParam<R (C::*)(A) const> {
  using type = std::remove_cvref_t<A>;
};
}  // namespace plan_traits_detail
template <class Plan>
using DescriptorOf = typename plan_traits_detail::FirstParam<decltype(&Plan::select)>::type;
template <class Plan>
using ArgsOf = typename plan_traits_detail::OnlyParam<decltype(&Plan::can_implement)>::type;

// One row of the op table.
struct OpInfo {
  std::string_view name;    // "rope_backward": what --list prints and AnyPlan::select takes
  std::string_view family;  // "rope"
  Direction direction = Direction::kForward;
  std::string_view plan;    // "RopeBackwardPlan"
};

// Every row of ops.def, in its order.
std::span<const OpInfo> op_table();
// The row called `name`, or nullptr.
const OpInfo* find_op(std::string_view name);

// A view bound to the operand called `name` ("q", "in[1]"); inputs are read through it.
struct NamedView {
  std::string_view name;
  TensorMut view;
};

class AnyPlan {
 public:
  AnyPlan() = default;

  // Parses `problem` ("k=v k=v", the fields of op's descriptor; to_string's form) and selects.
  static Result<AnyPlan> select(std::string_view op, std::string_view problem, const PlanPreference& pref = {});
  // Selects for a typed descriptor; an error when Desc is not op's descriptor type.
  template <class Desc>
    requires(!std::is_convertible_v<const Desc&, std::string_view>)
  static Result<AnyPlan> select(std::string_view op, const Desc& desc, const PlanPreference& pref = {}) {
    return select_typed(op, &desc, typeid(Desc), pref);
  }

  // The fields of op's descriptor and their default values, in the problem-line syntax (what
  // a problem line may set; the bindings' keyword arguments).
  static Result<std::vector<std::pair<std::string, std::string>>> fields(std::string_view op);

  bool selected() const { return m_ != nullptr; }
  const OpInfo& op() const;
  std::string problem() const;  // the descriptor as a problem line (fields that differ from the default)
  std::string repro() const;    // "<op> <problem>": AnyPlan::select / baracuda_bench --op reruns it
  const OperandSpecs& operands() const;
  size_t workspace_size() const;
  const KernelSku& sku() const;
  PrecisionGuarantee precision_guarantee() const;
  // The typed plan's can_implement / run on the views bound by name. A name that is no operand
  // of the op is an error; an operand without a view is an empty one (which the plan rejects
  // unless the operand is unused).
  Status can_implement(std::span<const NamedView> views) const;
  Status run(cudaStream_t stream, Workspace ws, std::span<const NamedView> views) const;

  // The views bound once: Bound::run then skips the name binding (timing loops, graph capture,
  // a binding that calls one plan many times on the same buffers). Copies share the binding;
  // it keeps the plan alive.
  class Bound {
   public:
    Status run(cudaStream_t stream, Workspace ws) const;
    struct Model;

   private:
    friend class AnyPlan;
    std::shared_ptr<const Model> m_;
  };
  Result<Bound> bind(std::span<const NamedView> views) const;

  // The typed descriptor / plan, or nullptr when the type is not this op's.
  template <class Desc>
  const Desc* descriptor() const {
    return static_cast<const Desc*>(descriptor_if(typeid(Desc)));
  }
  template <class Plan>
  const Plan* plan() const {
    return static_cast<const Plan*>(plan_if(typeid(Plan)));
  }

  struct Model;  // the erased plan: one implementation per op table row (src/ops/op_table.cpp)

 private:
  static Result<AnyPlan> select_typed(std::string_view op, const void* desc, const std::type_info& type,
                                      const PlanPreference& pref);
  const void* descriptor_if(const std::type_info& t) const;
  const void* plan_if(const std::type_info& t) const;
  std::shared_ptr<const Model> m_;
};

}  // namespace baracuda
