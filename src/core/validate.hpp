// Shared host-side validation of views and descriptors. Every op reports errors through these,
// so messages read the same everywhere: "<op>: <field> <what is wrong>".
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

namespace detail {
inline void append(std::string& s, std::string_view v) { s += v; }
inline void append(std::string& s, const char* v) { s += v; }
inline void append(std::string& s, const std::string& v) { s += v; }
void append(std::string& s, const void* p);  // hex address
template <class T>
  requires std::is_arithmetic_v<T>
void append(std::string& s, T v) {
  if constexpr (std::is_same_v<T, bool>) s += v ? "true" : "false";
  else s += std::to_string(v);
}
}  // namespace detail

// Concatenates strings and numbers: cat("pad: pad_low[", 2, "] = ", -3).
template <class... Ts>
std::string cat(const Ts&... parts) {
  std::string s;
  (detail::append(s, parts), ...);
  return s;
}

template <class... Ts>
Status error(StatusCode code, const Ts&... parts) {
  return Status(code, cat(parts...));
}

// "[2, 3, 4]"
std::string shape_string(std::span<const int64_t> shape);
inline std::string shape_string(const TensorLayout& t) {
  return shape_string(std::span<const int64_t>(t.shape, t.rank < 0 ? 0 : t.rank));
}

// rank in [0, kMaxRank], extents >= 0, numel and byte extent representable in int64.
Status check_layout(std::string_view op, std::string_view field, const TensorLayout& t);

// check_layout + dtype and shape equal to what the descriptor promised, data non-null when
// numel > 0, data aligned to the element size.
Status check_view(std::string_view op, std::string_view field, const TensorLayout& t,
                  const void* data, DType want_dtype, std::span<const int64_t> want_shape);

// The stride of v's axes [from, to) merged into one (size-1 axes skipped; 1 when every one is
// size 1); false when their strides do not nest (the axes are not one strided run).
bool merged_stride(const TensorLayout& v, int from, int to, int64_t* stride);

// An output whose distinct indices could share memory (a stride-0 axis, interleaved strides).
Status check_no_internal_overlap(std::string_view op, std::string_view field, const TensorLayout& t);

// Byte ranges of two operands intersect (used where no aliasing is allowed).
bool ranges_overlap(const TensorLayout& a, const void* a_data, const TensorLayout& b, const void* b_data);

// Whether two views can address a common byte. Exact for two views of identical layout whose
// strides nest (no internal overlap), e.g. the two halves of a split axis; otherwise the
// byte-range test (conservative).
bool views_may_overlap(const TensorLayout& a, const void* a_data, const TensorLayout& b, const void* b_data);

// One named operand of a plan call: view, data pointer, expected dtype and shape, output or not.
struct Operand {
  std::string_view name;
  const TensorLayout* view;
  const void* data;
  DType dtype;
  int64_t shape[kMaxRank];
  int rank;
  bool output;
};

// The operands of one call (at most 12), kept on the stack.
struct OperandList {
  Operand v[12];
  int n = 0;
  void push_back(const Operand& o) { v[n++] = o; }
};

// A descriptor's rank (in [min_rank, 8]) and shape (every extent >= 0, at most 2^58 elements:
// the row kernels form element counts times 16 bytes), naming the field; *numel the product.
Status check_shape(std::string_view op, int rank, const int64_t* shape, int min_rank, int64_t* numel);

// kUnsupported when a plan's workspace exceeds PlanPreference::max_workspace_bytes.
Status check_workspace_budget(std::string_view op, size_t need, size_t max_workspace_bytes);

// check_view on each, no internal overlap in outputs, no output touching any other operand.
Status check_operands(std::string_view op, const OperandList& list);

}  // namespace baracuda
