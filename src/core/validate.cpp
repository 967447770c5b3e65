#include "core/validate.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "core/checked_math.hpp"

namespace baracuda {

void detail::append(std::string& s, const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  s += buf;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Status check_layout(std::string_view op, std::string_view field, const TensorLayout& t) {
  if (t.rank < 0 || t.rank > kMaxRank)
    return error(StatusCode::kInvalidProblem, op, ": ", field, " rank = ", t.rank, " must be in [0, ",
                 kMaxRank, "]");
  int64_t n = 1;
  for (int d = 0; d < t.rank; ++d) {
    if (t.shape[d] < 0)
      return error(StatusCode::kInvalidProblem, op, ": ", field, " shape[", d, "] = ", t.shape[d],
                   " must be >= 0");
    if (!checked_mul(n, t.shape[d], &n))
      return error(StatusCode::kInvalidProblem, op, ": ", field, " shape ", shape_string(t),
                   " has more than 2^63 elements");
  }
  int64_t lo = 0, hi = 0;
  if (!t.byte_extent(&lo, &hi))
    return error(StatusCode::kInvalidProblem, op, ": ", field, " strides with shape ", shape_string(t),
                 " address more than 2^63 bytes");
  return {};
}

Status check_view(std::string_view op, std::string_view field, const TensorLayout& t,
                  const void* data, DType want_dtype, std::span<const int64_t> want_shape) {
  if (Status s = check_layout(op, field, t); !s.ok()) return s;
  if (t.dtype != want_dtype)
    return error(StatusCode::kInvalidProblem, op, ": ", field, " dtype ", dtype_name(t.dtype),
                 " does not match the descriptor's ", dtype_name(want_dtype));
  const std::span<const int64_t> got(t.shape, t.rank);
  if (!std::equal(got.begin(), got.end(), want_shape.begin(), want_shape.end()))
    return error(StatusCode::kInvalidProblem, op, ": ", field, " shape ", shape_string(got),
                 " does not match the expected ", shape_string(want_shape));
  if (data == nullptr && t.numel() > 0)
    return error(StatusCode::kInvalidProblem, op, ": ", field, " data is null with ", t.numel(),
                 " elements");
  if (reinterpret_cast<uintptr_t>(data) % dtype_size(t.dtype) != 0)
    return error(StatusCode::kMisalignedOperand, op, ": ", field, " data ", data,
                 " is not aligned to its ", dtype_size(t.dtype), "-byte element");
  return {};
}

Status check_no_internal_overlap(std::string_view op, std::string_view field, const TensorLayout& t) {
  // Sufficient condition for distinct addresses: sorted by |stride|, each stride exceeds the
  // furthest reach of all smaller axes.
  if (t.numel() <= 1) return {};
  int idx[kMaxRank];
  int n = 0;
  for (int d = 0; d < t.rank; ++d)
    if (t.shape[d] > 1) idx[n++] = d;
  std::sort(idx, idx + n, [&](int a, int b) {
    return std::abs(t.stride[a]) < std::abs(t.stride[b]);
  });
  int64_t reach = 0;  // max offset reachable by the smaller axes
  for (int i = 0; i < n; ++i) {
    const int64_t s = std::abs(t.stride[idx[i]]);
    if (s <= reach)
      return error(StatusCode::kInvalidProblem, op, ": ", field, " has internally overlapping strides ",
                   shape_string(std::span<const int64_t>(t.stride, t.rank)), " for shape ", shape_string(t),
                   " (two indices share memory)");
    reach += s * (t.shape[idx[i]] - 1);
  }
  return {};
}

bool ranges_overlap(const TensorLayout& a, const void* a_data, const TensorLayout& b, const void* b_data) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  int64_t alo = 0, ahi = 0, blo = 0, bhi = 0;
  a.byte_extent(&alo, &ahi);
  b.byte_extent(&blo, &bhi);
  const intptr_t pa = reinterpret_cast<intptr_t>(a_data), pb = reinterpret_cast<intptr_t>(b_data);
  return pa + alo < pb + bhi && pb + blo < pa + ahi;
}

bool views_may_overlap(const TensorLayout& a, const void* a_data, const TensorLayout& b, const void* b_data) {
  if (!ranges_overlap(a, a_data, b, b_data)) return false;
  if (!a.identical(b)) return true;
  const int64_t es = static_cast<int64_t>(dtype_size(a.dtype));
  int64_t d = reinterpret_cast<intptr_t>(b_data) - reinterpret_cast<intptr_t>(a_data);
  if (d % es != 0) return true;
  d /= es;
  // axes by decreasing |stride|; with nested strides an offset difference has one
  // representation sum k_a * s_a (|k_a| < n_a), found greedily
  int idx[kMaxRank], n = 0;
  for (int x = 0; x < std::min(a.rank, kMaxRank); ++x)
    if (a.shape[x] > 1) idx[n++] = x;
  std::sort(idx, idx + n, [&](int p, int q) { return std::abs(a.stride[p]) > std::abs(a.stride[q]); });
  int64_t reach_below[kMaxRank + 1] = {};
  for (int i = n - 1; i >= 0; --i) {
    const int64_t s = std::abs(a.stride[idx[i]]);
    if (s <= reach_below[i + 1]) return true;
    reach_below[i] = reach_below[i + 1] + s * (a.shape[idx[i]] - 1);
  }
  // depth-first over the (at most two) quotients that leave a remainder the smaller axes reach
  auto representable = [&](auto&& self, int i, int64_t rem) -> bool {
    if (i == n) return rem == 0;
    const int64_t s = std::abs(a.stride[idx[i]]), lim = a.shape[idx[i]] - 1;
    const int64_t k = rem / s;
    for (int64_t c : {k - 1, k, k + 1}) {
      if (c < -lim || c > lim) continue;
      const int64_t r = rem - c * s;
      if (std::abs(r) <= reach_below[i + 1] && self(self, i + 1, r)) return true;
    }
    return false;
  };
  return representable(representable, 0, d);
}

Status check_workspace_budget(std::string_view op, size_t need, size_t max_workspace_bytes) {
  if (need <= max_workspace_bytes) return {};
  return error(StatusCode::kUnsupported, op, ": needs ", need, " workspace bytes (max_workspace_bytes = ",
               max_workspace_bytes, ")");
}

Status check_operands(std::string_view op, const OperandList& list) {
  const std::span<const Operand> ops(list.v, static_cast<size_t>(list.n));
  for (const Operand& o : ops) {
    if (Status s = check_view(op, o.name, *o.view, o.data, o.dtype, std::span<const int64_t>(o.shape, o.rank)); !s.ok())
      return s;
    if (o.output)
      if (Status s = check_no_internal_overlap(op, o.name, *o.view); !s.ok()) return s;
  }
  for (const Operand& o : ops) {
    if (!o.output) continue;
    for (const Operand& t : ops)
      if (&t != &o && views_may_overlap(*o.view, o.data, *t.view, t.data))
        return error(StatusCode::kInvalidProblem, op, ": ", o.name, " overlaps ", t.name);
  }
  return {};
}

}  // namespace baracuda
