#include "core/validate.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "core/checked_math.hpp"

namespace baracuda {

namespace {
// Insertion sort of at most kMaxRank axis indices (std::sort's 16-element insertion threshold
// makes GCC warn about reading past an 8-element array it never reaches).
template <class Less>
void sort_axes(int* idx, int n, Less less) {
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && less(idx[j], idx[j - 1]); --j) std::swap(idx[j], idx[j - 1]);
}
}  // namespace

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
  // the extent is checked as if every empty axis had one element: an empty view's strides still
  // reach no further than 2^63 bytes (geometry code multiplies them)
  TensorLayout nominal = t;
  for (int d = 0; d < t.rank; ++d) nominal.shape[d] = std::max<int64_t>(t.shape[d], 1);
  if (!t.byte_extent(&lo, &hi) || !nominal.byte_extent(&lo, &hi))
    return error(StatusCode::kInvalidProblem, op, ": ", field, " strides ", shape_string(std::span<const int64_t>(t.stride, t.rank)),
                 " with shape ", shape_string(t), " address more than 2^63 bytes");
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
  int64_t lo = 0, hi = 0;
  uintptr_t a = 0;
  if (data != nullptr && t.byte_extent(&lo, &hi) && (!checked_address(data, lo, &a) || !checked_address(data, hi, &a)))
    return error(StatusCode::kInvalidProblem, op, ": ", field, " data ", data, " with strides ",
                 shape_string(std::span<const int64_t>(t.stride, t.rank)), " reaches past the address space");
  return {};
}

Status check_no_internal_overlap(std::string_view op, std::string_view field, const TensorLayout& t) {
  // Sufficient condition for distinct addresses: sorted by |stride|, each stride exceeds the
  // furthest reach of all smaller axes. Strides whose reach leaves int64 (|INT64_MIN| included)
  // are refused: no valid view addresses that far.
  if (t.numel() <= 1) return {};
  int idx[kMaxRank];
  int64_t mag[kMaxRank] = {};
  int n = 0;
  for (int d = 0; d < t.rank; ++d) {
    if (t.shape[d] <= 1) continue;
    if (!checked_abs(t.stride[d], &mag[d]))
      return error(StatusCode::kInvalidProblem, op, ": ", field, " stride[", d, "] = ", t.stride[d], " has no magnitude in int64");
    idx[n++] = d;
  }
  sort_axes(idx, n, [&](int a, int b) { return mag[a] < mag[b]; });
  int64_t reach = 0;  // max offset reachable by the smaller axes
  for (int i = 0; i < n; ++i) {
    const int64_t s = mag[idx[i]];
    if (s <= reach)
      return error(StatusCode::kInvalidProblem, op, ": ", field, " has internally overlapping strides ",
                   shape_string(std::span<const int64_t>(t.stride, t.rank)), " for shape ", shape_string(t),
                   " (two indices share memory)");
    if (!checked_mul_add(s, t.shape[idx[i]] - 1, reach, &reach))
      return error(StatusCode::kInvalidProblem, op, ": ", field, " strides ", shape_string(std::span<const int64_t>(t.stride, t.rank)),
                   " with shape ", shape_string(t), " address more than 2^63 elements");
  }
  return {};
}

namespace {
// [base + lo, base + hi) of a view in bytes, as 128-bit integers (no pointer wrap); false when
// the layout's extent does not fit int64 (such a view fails check_layout).
bool byte_range(const TensorLayout& t, const void* data, __int128* lo, __int128* hi) {
  int64_t l = 0, h = 0;
  if (!t.byte_extent(&l, &h)) return false;
  const __int128 p = static_cast<__int128>(reinterpret_cast<uintptr_t>(data));
  *lo = p + l;
  *hi = p + h;
  return true;
}
}  // namespace

bool ranges_overlap(const TensorLayout& a, const void* a_data, const TensorLayout& b, const void* b_data) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  __int128 alo = 0, ahi = 0, blo = 0, bhi = 0;
  if (!byte_range(a, a_data, &alo, &ahi) || !byte_range(b, b_data, &blo, &bhi)) return true;  // unknowable: assume so
  return alo < bhi && blo < ahi;
}

bool views_may_overlap(const TensorLayout& a, const void* a_data, const TensorLayout& b, const void* b_data) {
  if (!ranges_overlap(a, a_data, b, b_data)) return false;
  if (!a.identical(b)) return true;
  const int64_t es = static_cast<int64_t>(dtype_size(a.dtype));
  const __int128 diff = static_cast<__int128>(reinterpret_cast<uintptr_t>(b_data)) - static_cast<__int128>(reinterpret_cast<uintptr_t>(a_data));
  if (es == 0 || diff % es != 0 || diff / es > INT64_MAX || diff / es < -INT64_MAX) return true;
  const int64_t d = static_cast<int64_t>(diff / es);
  // axes by decreasing |stride|; with nested strides an offset difference has one
  // representation sum k_a * s_a (|k_a| < n_a), found greedily
  int idx[kMaxRank], n = 0;
  int64_t mag[kMaxRank] = {};
  for (int x = 0; x < std::min(a.rank, kMaxRank); ++x) {
    if (a.shape[x] <= 1) continue;
    if (!checked_abs(a.stride[x], &mag[x])) return true;
    idx[n++] = x;
  }
  sort_axes(idx, n, [&](int p, int q) { return mag[p] > mag[q]; });
  int64_t reach_below[kMaxRank + 1] = {};
  for (int i = n - 1; i >= 0; --i) {
    const int64_t s = mag[idx[i]];
    if (s <= reach_below[i + 1]) return true;
    if (!checked_mul_add(s, a.shape[idx[i]] - 1, reach_below[i + 1], &reach_below[i])) return true;
  }
  // depth-first over the (at most two) quotients that leave a remainder the smaller axes reach
  // (|rem| <= reach_below[i] throughout, so c * s and rem - c * s stay inside int64)
  auto representable = [&](auto&& self, int i, int64_t rem) -> bool {
    if (i == n) return rem == 0;
    const int64_t s = mag[idx[i]], lim = a.shape[idx[i]] - 1;
    const int64_t k = rem / s;
    for (int64_t c : {k - 1, k, k + 1}) {
      if (c < -lim || c > lim) continue;
      const int64_t r = rem - c * s;
      if ((r < 0 ? -r : r) <= reach_below[i + 1] && self(self, i + 1, r)) return true;
    }
    return false;
  };
  if ((d < 0 ? -d : d) > reach_below[0]) return false;
  return representable(representable, 0, d);
}

Status check_shape(std::string_view op, int rank, const int64_t* shape, int min_rank, int64_t* numel) {
  if (rank < min_rank || rank > kMaxRank)
    return error(StatusCode::kInvalidProblem, op, ": rank = ", rank, " must be in [", min_rank, ", ", kMaxRank, "]");
  for (int a = 0; a < rank; ++a)
    if (shape[a] < 0) return error(StatusCode::kInvalidProblem, op, ": shape[", a, "] = ", shape[a], " must be >= 0");
  if (!checked_product(shape, rank, numel) || *numel > (int64_t{1} << 58))
    return error(StatusCode::kInvalidProblem, op, ": shape has more than 2^58 elements");
  return {};
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

bool merged_stride(const TensorLayout& v, int from, int to, int64_t* stride) {
  int64_t s = 1, extent = 1;
  bool first = true;
  for (int a = to - 1; a >= from; --a) {
    if (v.shape[a] == 1) continue;
    if (first) {
      s = v.stride[a];
      first = false;
    } else if (int64_t want = 0; !checked_mul(s, extent, &want) || v.stride[a] != want) {
      return false;  // (a caller's stride times an extent can pass 2^63: no run then)
    }
    if (!checked_mul(extent, v.shape[a], &extent)) return false;
  }
  *stride = s;
  return true;
}

}  // namespace baracuda
