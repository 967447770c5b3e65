// baracuda/core/operands.hpp — the operands a plan expects, and how they bind to its Args.
//
// Every plan reports expected_operands(): one OperandSpec per view its run() reads or writes,
// derived from the descriptor alone (name, role, dtype, shape; strides are the caller's). The
// names are the fields of the plan's Args ("q", "in[1]" for element 1 of an array field), so
// the generic check (check_args), AnyPlan, the contract tests, the benchmark and the bindings
// all allocate, bind and check operands from the same list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "baracuda/core/describe.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

BARACUDA_ENUM(OperandRole, uint8_t, (kIn, "in"), (kOut, "out"), (kInOut, "inout"));

struct OperandSpec {
  std::string_view name;  // an Args field ("q"), or element i of an array / span field ("in[1]")
  OperandRole role = OperandRole::kIn;
  DType dtype = DType::f32;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  // Outputs: bit i set = this output may be exactly input i of the list (same data, same
  // strides): the op is in place on it. Any other overlap with another operand is an error.
  uint32_t alias_mask = 0;
  // The view may have any shape with the spec's number of elements (embedding's indices of any
  // shape): the generic check compares numel, and the op checks how the shape relates to the
  // other operands. Allocators use `shape` as given.
  bool any_shape = false;
  // The view may be left empty (data null): the op then skips it (an optional gradient).
  bool optional = false;
  // The view must have exactly these strides on every axis of extent > 1 (the descriptor fixed
  // them at select, e.g. a GEMM's operand layouts); allocators use them.
  bool fixed_strides = false;
  int64_t stride[kMaxRank] = {};
  // The data pointer must be a multiple of this many bytes (0: the element size only).
  int alignment = 0;
  // Where the view sits in the Args (resolve_operands): field index of the DESCRIBE line and
  // element (-1: the field itself).
  int16_t field = -1, element = -1;

  std::span<const int64_t> dims() const { return {shape, static_cast<size_t>(rank)}; }
  int64_t numel() const;  // saturates at INT64_MAX
  bool writes() const { return role != OperandRole::kIn; }
};

// A plan's operands in a fixed order (inputs as the op reads them, then outputs).
class OperandSpecs {
 public:
  OperandSpec& add(std::string_view name, OperandRole role, DType dtype, std::span<const int64_t> shape);
  OperandSpec& add(std::string_view name, OperandRole role, DType dtype, std::initializer_list<int64_t> shape) {
    return add(name, role, dtype, std::span<const int64_t>(shape.begin(), shape.size()));
  }
  OperandSpec& input(std::string_view name, DType dtype, std::span<const int64_t> shape) { return add(name, OperandRole::kIn, dtype, shape); }
  OperandSpec& input(std::string_view name, DType dtype, std::initializer_list<int64_t> shape) { return add(name, OperandRole::kIn, dtype, shape); }
  OperandSpec& output(std::string_view name, DType dtype, std::span<const int64_t> shape) { return add(name, OperandRole::kOut, dtype, shape); }
  OperandSpec& output(std::string_view name, DType dtype, std::initializer_list<int64_t> shape) { return add(name, OperandRole::kOut, dtype, shape); }
  // An operand whose layout the descriptor fixes: shape and strides of `l` (rank 0..8).
  OperandSpec& add_layout(std::string_view name, OperandRole role, const TensorLayout& l);
  // Declares that output `out` may be exactly input `in` (in place; inputs among the first 32).
  void may_alias(std::string_view out, std::string_view in);

  size_t size() const { return v_.size(); }
  bool empty() const { return v_.empty(); }
  const OperandSpec& operator[](size_t i) const { return v_[i]; }
  OperandSpec& operator[](size_t i) { return v_[i]; }
  auto begin() const { return v_.begin(); }
  auto end() const { return v_.end(); }
  auto begin() { return v_.begin(); }
  auto end() { return v_.end(); }
  const OperandSpec* find(std::string_view name) const;
  int index_of(std::string_view name) const;  // -1 when absent

 private:
  std::vector<OperandSpec> v_;
};

// "inputs[17]": the name of element i of a span field, kept for the process's lifetime (an
// OperandSpec holds its name as a string_view; a variable-count operand list names its elements
// at select).
std::string_view element_name(std::string_view field, size_t i);

// One operand of a call as check_operands sees it.
struct BoundView {
  const TensorLayout* layout = nullptr;  // nullptr: the Args has no such field or element
  const void* data = nullptr;
  bool skip = false;  // left out of the check (an op's own rule covers it)
};

// The view-typed fields of an Args struct (DESCRIBEd): TensorRef / TensorMut, fixed arrays of
// them, or std::span<const TensorRef> / std::span<const TensorMut>.
namespace operands_detail {
template <class M>
constexpr bool kIsView = std::is_base_of_v<TensorLayout, M>;
template <class M>
struct SpanElem {
  using type = void;
};
template <class E>
struct SpanElem<std::span<E>> {
  using type = std::remove_const_t<E>;
};
template <class M>
BoundView element_of(const M& m, int element) {
  if constexpr (kIsView<M>) {
    if (element < 0) return {&m, m.data};
  } else if constexpr (std::is_array_v<M>) {
    if (element >= 0 && static_cast<size_t>(element) < std::extent_v<M>) return element_of(m[element], -1);
  } else if constexpr (!std::is_void_v<typename SpanElem<M>::type>) {
    if (element >= 0 && static_cast<size_t>(element) < m.size()) return element_of(m[static_cast<size_t>(element)], -1);
  }
  return {};
}
// "in[2]" -> ("in", 2); "q" -> ("q", -1); false on a malformed index.
bool split_operand_name(std::string_view name, std::string_view* field, int* element);
}  // namespace operands_detail

// The view of spec's field / element in args (BoundView{} when absent).
template <Described A>
BoundView bound_view(const A& args, int field, int element) {
  BoundView r;
  int i = 0;
  for_each_field(args, [&](std::string_view, const auto& m) {
    if (i++ == field) r = operands_detail::element_of(m, element);
  });
  return r;
}

// Every expected operand's extents are >= 0 and its element count and byte size fit int64 (a
// descriptor whose shapes multiply past 2^63 is refused at select, naming the operand).
Status check_operand_sizes(std::string_view op, const OperandSpecs& specs);

// Fills every spec's field / element from its name; Internal when a name is no field of A.
// Ends with check_operand_sizes.
template <Described A>
Status resolve_operands(std::string_view op, OperandSpecs& specs) {
  for (OperandSpec& s : specs) {
    std::string_view field;
    int element = -1;
    const int at = operands_detail::split_operand_name(s.name, &field, &element) ? field_index<A>(field) : -1;
    if (at < 0) return Status(StatusCode::kInternal, std::string(op) + ": operand '" + std::string(s.name) + "' is no field of " +
                                                         std::string(Describe<A>::kName));
    s.field = static_cast<int16_t>(at);
    s.element = static_cast<int16_t>(element);
  }
  return check_operand_sizes(op, specs);
}

// Every spec's view against the spec: a valid layout, the spec's dtype and shape, data
// non-null when there are elements and aligned to the element; outputs (and in-out operands)
// without internal overlap, touching no other operand unless exactly an input of alias_mask.
// Errors name the op, the operand and the field that is wrong.
Status check_operands(std::string_view op, const OperandSpecs& specs, std::span<const BoundView> views);

// A view field of args (not an array or span) that holds data but is no operand of the plan's
// descriptor (a weight passed to a plan selected without one): refused by name, as nothing
// checked its shape, strides or overlap (a kernel binding it anyway would read or write it).
template <Described A>
Status check_undeclared(std::string_view op, const OperandSpecs& specs, const A& args) {
  std::string_view bad;
  int i = 0;
  for_each_field(args, [&](std::string_view name, const auto& m) {
    const int at = i++;
    if constexpr (operands_detail::kIsView<std::remove_cvref_t<decltype(m)>>) {
      if (!bad.empty() || !m.data) return;
      for (const OperandSpec& s : specs)
        if (s.field == at) return;
      bad = name;
    }
  });
  if (bad.empty()) return {};
  return Status(StatusCode::kInvalidProblem,
                std::string(op) + ": " + std::string(bad) + " holds data but is not an operand of this descriptor (leave it empty)");
}

template <Described A>
Status check_args(std::string_view op, const OperandSpecs& specs, const A& args) {
  BoundView inline_views[16];
  std::vector<BoundView> more;
  BoundView* v = inline_views;
  if (specs.size() > 16) more.resize(specs.size()), v = more.data();
  for (size_t i = 0; i < specs.size(); ++i) v[i] = bound_view(args, specs[i].field, specs[i].element);
  if (Status s = check_operands(op, specs, std::span<const BoundView>(v, specs.size())); !s.ok()) return s;
  return check_undeclared(op, specs, args);
}

}  // namespace baracuda
