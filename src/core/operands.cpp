// Operand lists and the one argument check every plan's can_implement() starts with.
#include "baracuda/core/operands.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <string>

#include "core/checked_math.hpp"
#include "core/validate.hpp"

namespace baracuda {

int64_t OperandSpec::numel() const {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d)
    if (!checked_mul(n, shape[d], &n)) return INT64_MAX;
  return n;
}

Status check_operand_sizes(std::string_view op, const OperandSpecs& specs) {
  for (const OperandSpec& s : specs) {
    const std::span<const int64_t> dims = s.dims();
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] < 0)
        return error(StatusCode::kInvalidProblem, op, ": ", s.name, " would have shape ", shape_string(dims), " (extent ", d,
                     " is negative)");
    int64_t n = 0, bytes = 0;
    if (!checked_product(dims.data(), s.rank, &n) || !checked_mul(n, static_cast<int64_t>(dtype_size(s.dtype)), &bytes))
      return error(StatusCode::kInvalidProblem, op, ": ", s.name, " would have shape ", shape_string(dims),
                   ": more than 2^63 elements or bytes");
  }
  return {};
}

std::string_view element_name(std::string_view field, size_t i) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> names;  // node-based: the strings never move
  std::string name = cat(field, "[", i, "]");
  std::lock_guard<std::mutex> lock(mu);
  return *names.insert(std::move(name)).first;
}

OperandSpec& OperandSpecs::add(std::string_view name, OperandRole role, DType dtype, std::span<const int64_t> shape) {
  OperandSpec s;
  s.name = name;
  s.role = role;
  s.dtype = dtype;
  s.rank = static_cast<int>(std::min(shape.size(), static_cast<size_t>(kMaxRank)));
  std::copy(shape.begin(), shape.begin() + s.rank, s.shape);
  v_.push_back(s);
  return v_.back();
}

OperandSpec& OperandSpecs::add_layout(std::string_view name, OperandRole role, const TensorLayout& l) {
  OperandSpec& s = add(name, role, l.dtype, std::span<const int64_t>(l.shape, static_cast<size_t>(std::clamp(l.rank, 0, kMaxRank))));
  s.fixed_strides = true;
  std::copy(l.stride, l.stride + s.rank, s.stride);
  return s;
}

void OperandSpecs::may_alias(std::string_view out, std::string_view in) {
  const int o = index_of(out), i = index_of(in);
  if (o >= 0 && i >= 0 && i < 32) v_[static_cast<size_t>(o)].alias_mask |= uint32_t{1} << i;
}

const OperandSpec* OperandSpecs::find(std::string_view name) const {
  const int i = index_of(name);
  return i < 0 ? nullptr : &v_[static_cast<size_t>(i)];
}

int OperandSpecs::index_of(std::string_view name) const {
  for (size_t i = 0; i < v_.size(); ++i)
    if (v_[i].name == name) return static_cast<int>(i);
  return -1;
}

bool operands_detail::split_operand_name(std::string_view name, std::string_view* field, int* element) {
  *element = -1;
  const size_t open = name.find('[');
  *field = name.substr(0, open);
  if (open == std::string_view::npos) return !field->empty();
  if (name.back() != ']' || open + 2 > name.size() - 1) return false;
  int e = 0;
  for (char c : name.substr(open + 1, name.size() - open - 2)) {
    if (c < '0' || c > '9' || e > 100000) return false;
    e = e * 10 + (c - '0');
  }
  *element = e;
  return !field->empty();
}

Status check_operands(std::string_view op, const OperandSpecs& specs, std::span<const BoundView> views) {
  static const TensorLayout kAbsent;  // rank 0: a missing view reads as one that has no data
  auto layout = [&](size_t i) -> const TensorLayout& { return views[i].layout ? *views[i].layout : kAbsent; };
  for (size_t i = 0; i < specs.size(); ++i) {
    const OperandSpec& s = specs[i];
    if (views[i].skip || (s.optional && views[i].data == nullptr)) continue;
    if (views[i].data == nullptr && layout(i).rank == 0 && s.rank > 0 && s.numel() > 0) {
      std::string want;
      describe_put(want, TensorLayout::make(s.dtype, s.dims()));
      return error(StatusCode::kInvalidProblem, op, ": ", s.name, " is missing (expected ", want, ")");
    }
    const TensorLayout& l = layout(i);
    const bool reshaped = s.any_shape && l.rank >= 0 && l.rank <= kMaxRank && l.numel() == s.numel();
    if (s.any_shape && !reshaped && l.rank >= 0 && l.rank <= kMaxRank && l.numel() != s.numel())
      return error(StatusCode::kInvalidProblem, op, ": ", s.name, " shape ", shape_string(l), " has ", l.numel(),
                   " elements; the descriptor says ", s.numel(), " (any shape)");
    const std::span<const int64_t> want = reshaped ? std::span<const int64_t>(l.shape, static_cast<size_t>(l.rank)) : s.dims();
    if (Status st = check_view(op, s.name, l, views[i].data, s.dtype, want); !st.ok()) return st;
    if (s.fixed_strides)
      for (int d = 0; d < s.rank; ++d)
        if (s.shape[d] > 1 && l.stride[d] != s.stride[d])
          return error(StatusCode::kInvalidProblem, op, ": ", s.name, " strides ", shape_string(std::span<const int64_t>(l.stride, static_cast<size_t>(l.rank))),
                       " differ from the descriptor's ", shape_string(std::span<const int64_t>(s.stride, static_cast<size_t>(s.rank))));
    if (s.alignment > 0 && l.numel() > 0 && reinterpret_cast<uintptr_t>(views[i].data) % static_cast<uintptr_t>(s.alignment) != 0)
      return error(StatusCode::kMisalignedOperand, op, ": ", s.name, " data ", views[i].data, " is not aligned to ", s.alignment,
                   " bytes (the descriptor's pointer_alignment)");
    if (s.writes())
      if (Status st = check_no_internal_overlap(op, s.name, layout(i)); !st.ok()) return st;
  }
  for (size_t o = 0; o < specs.size(); ++o) {
    if (!specs[o].writes() || views[o].skip || (specs[o].optional && views[o].data == nullptr)) continue;
    for (size_t t = 0; t < specs.size(); ++t) {
      if (t == o || views[t].skip || (specs[t].optional && views[t].data == nullptr) || !views_may_overlap(layout(o), views[o].data, layout(t), views[t].data)) continue;
      const bool exact = views[o].data == views[t].data && layout(o).identical(layout(t));
      const bool allowed = t < 32 && (specs[o].alias_mask >> t & 1u);
      if (exact && allowed) continue;
      if (allowed)
        return error(StatusCode::kInvalidProblem, op, ": ", specs[o].name, " overlaps ", specs[t].name,
                     " without being exactly in place (same data and strides)");
      return error(StatusCode::kInvalidProblem, op, ": ", specs[o].name, " overlaps ", specs[t].name,
                   exact ? " (the op has no in-place form for this pair)" : "");
    }
  }
  return {};
}

}  // namespace baracuda
