// AnyPlan over the op table: one erased model per row of ops.def, selected by the op's name.
#include <cuda_runtime_api.h>

#include <string>
#include <type_traits>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "core/validate.hpp"

namespace baracuda {

// ---------------------------------------------------------------- a row's types

namespace {

template <class Plan>
using DescOf = DescriptorOf<Plan>;
template <class M>
using SpanOf = operands_detail::SpanElem<M>;  // the element type of a span field (void otherwise)

// The typed Args from views bound by name. A span field (a variable-count operand list) takes
// its elements from views named "field[i]"; they are kept in `lists` (TensorMut) and `refs`
// (the TensorRef copies a span<const TensorRef> points at).
template <class Args>
Status bind_named(std::string_view op, std::span<const NamedView> views, Args* a, std::vector<std::vector<TensorMut>>* lists,
                  std::vector<std::vector<TensorRef>>* refs) {
  for_each_field(*a, [&](std::string_view, auto& m) {
    if constexpr (!std::is_void_v<typename SpanOf<std::remove_cvref_t<decltype(m)>>::type>) lists->emplace_back();
  });
  for (const NamedView& v : views) {
    std::string_view field;
    int element = -1;
    bool bound = false;
    size_t span_k = 0;
    if (operands_detail::split_operand_name(v.name, &field, &element)) {
      for_each_field(*a, [&](std::string_view name, auto& m) {
        using M = std::remove_cvref_t<decltype(m)>;
        constexpr bool kSpan = !std::is_void_v<typename SpanOf<M>::type>;
        if (!bound && name == field) {
          if constexpr (std::is_base_of_v<TensorLayout, M>) {
            if (element < 0) m = v.view, bound = true;
          } else if constexpr (std::is_array_v<M>) {
            if (element >= 0 && static_cast<size_t>(element) < std::extent_v<M>) m[element] = v.view, bound = true;
          } else if constexpr (kSpan) {
            if (element >= 0) {
              std::vector<TensorMut>& store = (*lists)[span_k];
              if (store.size() <= static_cast<size_t>(element)) store.resize(static_cast<size_t>(element) + 1);
              store[static_cast<size_t>(element)] = v.view;
              bound = true;
            }
          }
        }
        if constexpr (kSpan) ++span_k;
      });
    }
    if (!bound) return error(StatusCode::kInvalidProblem, op, ": '", v.name, "' is not an operand of ", op);
  }
  size_t k = 0;
  for_each_field(*a, [&](std::string_view, auto& m) {
    using M = std::remove_cvref_t<decltype(m)>;
    using E = typename SpanOf<M>::type;
    if constexpr (std::is_same_v<E, TensorMut>) {
      m = M((*lists)[k].data(), (*lists)[k].size());
      ++k;
    } else if constexpr (std::is_same_v<E, TensorRef>) {
      std::vector<TensorRef>& r = refs->emplace_back((*lists)[k].begin(), (*lists)[k].end());
      m = M(r.data(), r.size());
      ++k;
    }
  });
  return {};
}

}  // namespace

// ---------------------------------------------------------------- the erased plan

struct AnyPlan::Model {
  const OpInfo* info = nullptr;
  virtual ~Model() = default;
  virtual std::string problem() const = 0;
  virtual const OperandSpecs& operands() const = 0;
  virtual size_t workspace_size() const = 0;
  virtual const KernelSku& sku() const = 0;
  virtual PrecisionGuarantee precision_guarantee() const = 0;
  virtual Status can_implement(std::span<const NamedView> views) const = 0;
  virtual Status run(cudaStream_t stream, Workspace ws, std::span<const NamedView> views) const = 0;
  virtual const void* descriptor_if(const std::type_info& t) const = 0;
  virtual const void* plan_if(const std::type_info& t) const = 0;
  virtual Result<std::shared_ptr<const AnyPlan::Bound::Model>> bind(std::shared_ptr<const Model> self,
                                                                    std::span<const NamedView> views) const = 0;
};

struct AnyPlan::Bound::Model {
  virtual ~Model() = default;
  virtual Status run(cudaStream_t stream, Workspace ws) const = 0;
};

namespace {

template <class Plan>
struct BoundModel final : AnyPlan::Bound::Model {
  std::shared_ptr<const AnyPlan::Model> keep;  // the plan's owner
  const Plan* plan = nullptr;
  ArgsOf<Plan> args{};
  std::vector<std::vector<TensorMut>> lists;
  std::vector<std::vector<TensorRef>> refs;
  Status run(cudaStream_t stream, Workspace ws) const override { return plan->run(stream, ws, args); }
};

template <class Plan>
struct RowModel final : AnyPlan::Model {
  using Desc = DescOf<Plan>;
  using Args = ArgsOf<Plan>;
  Plan plan;

  explicit RowModel(Plan p) : plan(std::move(p)) {}
  std::string problem() const override { return to_string(plan.descriptor()); }
  const OperandSpecs& operands() const override { return plan.expected_operands(); }
  size_t workspace_size() const override { return plan.workspace_size(); }
  const KernelSku& sku() const override { return plan.sku(); }
  PrecisionGuarantee precision_guarantee() const override { return plan.precision_guarantee(); }

  template <class F>
  Status with_args(std::span<const NamedView> views, F&& f) const {
    Args a{};
    std::vector<std::vector<TensorMut>> lists;
    std::vector<std::vector<TensorRef>> refs;
    refs.reserve(4);
    if (Status s = bind_named(info->name, views, &a, &lists, &refs); !s.ok()) return s;
    return f(a);
  }
  Status can_implement(std::span<const NamedView> views) const override {
    return with_args(views, [&](const Args& a) { return plan.can_implement(a); });
  }
  Status run(cudaStream_t stream, Workspace ws, std::span<const NamedView> views) const override {
    return with_args(views, [&](const Args& a) { return plan.run(stream, ws, a); });
  }
  const void* descriptor_if(const std::type_info& t) const override {
    return t == typeid(Desc) ? &plan.descriptor() : nullptr;
  }
  const void* plan_if(const std::type_info& t) const override { return t == typeid(Plan) ? &plan : nullptr; }
  Result<std::shared_ptr<const AnyPlan::Bound::Model>> bind(std::shared_ptr<const AnyPlan::Model> self,
                                                            std::span<const NamedView> views) const override {
    auto b = std::make_shared<BoundModel<Plan>>();
    b->keep = std::move(self);
    b->plan = &plan;
    b->refs.reserve(4);
    if (Status s = bind_named(info->name, views, &b->args, &b->lists, &b->refs); !s.ok()) return s;
    if (Status s = plan.can_implement(b->args); !s.ok()) return s;
    return std::shared_ptr<const AnyPlan::Bound::Model>(std::move(b));
  }
};

// Every field of v as (name, value); nested structs as "scaling.factor".
template <class T>
void list_fields(const T& v, const std::string& prefix, std::vector<std::pair<std::string, std::string>>* out) {
  for_each_field(v, [&](std::string_view name, const auto& m) {
    using M = std::remove_cvref_t<decltype(m)>;
    if constexpr (Described<M>) {
      list_fields(m, cat(prefix, name, "."), out);
    } else {
      std::string text;
      describe_put(text, m);
      out->emplace_back(cat(prefix, name), std::move(text));
    }
  });
}

template <class Plan>
std::vector<std::pair<std::string, std::string>> default_fields() {
  std::vector<std::pair<std::string, std::string>> out;
  list_fields(DescOf<Plan>{}, std::string(), &out);
  return out;
}

// The row's selectors, parallel to kInfos.
struct Row {
  std::vector<std::pair<std::string, std::string>> (*fields)();
  Result<std::shared_ptr<const AnyPlan::Model>> (*select_line)(const OpInfo&, std::string_view, const PlanPreference&);
  Result<std::shared_ptr<const AnyPlan::Model>> (*select_desc)(const OpInfo&, const void*, const std::type_info&,
                                                              const PlanPreference&);
};

template <class Plan>
Result<std::shared_ptr<const AnyPlan::Model>> wrap(const OpInfo& info, const DescOf<Plan>& d, const PlanPreference& pref) {
  Result<Plan> p = Plan::select(d, pref);
  if (!p) return p.status();
  auto m = std::make_shared<RowModel<Plan>>(std::move(*p));
  m->info = &info;
  return std::shared_ptr<const AnyPlan::Model>(std::move(m));
}

template <class Plan>
Result<std::shared_ptr<const AnyPlan::Model>> select_line(const OpInfo& info, std::string_view line, const PlanPreference& pref) {
  DescOf<Plan> d{};
  if (Status s = from_string(line, &d); !s.ok()) return Status(s.code(), cat(info.name, ": ", s.message()));
  return wrap<Plan>(info, d, pref);
}

template <class Plan>
Result<std::shared_ptr<const AnyPlan::Model>> select_desc(const OpInfo& info, const void* desc, const std::type_info& t,
                                                          const PlanPreference& pref) {
  if (t != typeid(DescOf<Plan>))
    return error(StatusCode::kInvalidProblem, info.name, ": the descriptor given is not a ", Describe<DescOf<Plan>>::kName);
  return wrap<Plan>(info, *static_cast<const DescOf<Plan>*>(desc), pref);
}

const OpInfo kInfos[] = {
#define BARACUDA_OP(name, Plan, family, direction) OpInfo{#name, #family, Direction::direction, #Plan},
#include "baracuda/ops/ops.def"
#undef BARACUDA_OP
};

const Row kRows[] = {
#define BARACUDA_OP(name, Plan, family, direction) {&default_fields<Plan>, &select_line<Plan>, &select_desc<Plan>},
#include "baracuda/ops/ops.def"
#undef BARACUDA_OP
};

// The row called `name`: its info and selectors, or {nullptr, nullptr}.
std::pair<const OpInfo*, const Row*> find_row(std::string_view name) {
  for (size_t i = 0; i < std::size(kInfos); ++i)
    if (kInfos[i].name == name) return {&kInfos[i], &kRows[i]};
  return {nullptr, nullptr};
}

Status no_such_op(std::string_view op) {
  std::string names;
  for (const OpInfo& i : kInfos) names += cat(names.empty() ? "" : ", ", i.name);
  return error(StatusCode::kInvalidProblem, "no op named '", op, "' (ops: ", names, ")");
}

const KernelSku kNoSku{};
const OperandSpecs kNoOperands{};
const OpInfo kNoOp{"none", "none", Direction::kForward, "none"};

Status not_selected() {
  return Status(StatusCode::kInvalidProblem, "AnyPlan: the plan was not selected (obtain one from AnyPlan::select)");
}

}  // namespace

std::span<const OpInfo> op_table() { return kInfos; }

const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& i : kInfos)
    if (i.name == name) return &i;
  return nullptr;
}

Result<std::vector<std::pair<std::string, std::string>>> AnyPlan::fields(std::string_view op) {
  const auto [info, r] = find_row(op);
  if (!r) return no_such_op(op);
  return r->fields();
}

Result<AnyPlan> AnyPlan::select(std::string_view op, std::string_view problem, const PlanPreference& pref) {
  const auto [info, r] = find_row(op);
  if (!r) return no_such_op(op);
  auto m = r->select_line(*info, problem, pref);
  if (!m) return m.status();
  AnyPlan p;
  p.m_ = std::move(*m);
  return p;
}

Result<AnyPlan> AnyPlan::select_typed(std::string_view op, const void* desc, const std::type_info& type,
                                      const PlanPreference& pref) {
  const auto [info, r] = find_row(op);
  if (!r) return no_such_op(op);
  auto m = r->select_desc(*info, desc, type, pref);
  if (!m) return m.status();
  AnyPlan p;
  p.m_ = std::move(*m);
  return p;
}

const OpInfo& AnyPlan::op() const { return m_ ? *m_->info : kNoOp; }
std::string AnyPlan::problem() const { return m_ ? m_->problem() : std::string(); }
std::string AnyPlan::repro() const {
  std::string s(op().name);
  const std::string p = problem();
  if (!p.empty()) s += ' ' + p;
  return s;
}
const OperandSpecs& AnyPlan::operands() const { return m_ ? m_->operands() : kNoOperands; }
size_t AnyPlan::workspace_size() const { return m_ ? m_->workspace_size() : 0; }
const KernelSku& AnyPlan::sku() const { return m_ ? m_->sku() : kNoSku; }
PrecisionGuarantee AnyPlan::precision_guarantee() const { return m_ ? m_->precision_guarantee() : PrecisionGuarantee{}; }
Status AnyPlan::can_implement(std::span<const NamedView> views) const {
  return m_ ? m_->can_implement(views) : not_selected();
}
Status AnyPlan::run(cudaStream_t stream, Workspace ws, std::span<const NamedView> views) const {
  return m_ ? m_->run(stream, ws, views) : not_selected();
}
Result<AnyPlan::Bound> AnyPlan::bind(std::span<const NamedView> views) const {
  if (!m_) return not_selected();
  auto b = m_->bind(m_, views);
  if (!b) return b.status();
  Bound r;
  r.m_ = std::move(*b);
  return r;
}

Status AnyPlan::Bound::run(cudaStream_t stream, Workspace ws) const {
  return m_ ? m_->run(stream, ws) : Status(StatusCode::kInvalidProblem, "AnyPlan::Bound: nothing was bound");
}

const void* AnyPlan::descriptor_if(const std::type_info& t) const { return m_ ? m_->descriptor_if(t) : nullptr; }
const void* AnyPlan::plan_if(const std::type_info& t) const { return m_ ? m_->plan_if(t) : nullptr; }

}  // namespace baracuda
