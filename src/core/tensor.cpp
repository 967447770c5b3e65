#include "baracuda/core/tensor.hpp"

#include "core/hash.hpp"

#include <algorithm>

#include "core/checked_math.hpp"

namespace baracuda {

bool parse_dtype(std::string_view name, DType* out) {
#define BARACUDA_X(e, str, size, kind) \
  if (name == str) {                   \
    *out = DType::e;                   \
    return true;                       \
  }
  BARACUDA_DTYPES(BARACUDA_X)
#undef BARACUDA_X
  return false;
}

namespace {
// The axes a layout may index (a rank outside [0, kMaxRank] indexes none; check_layout refuses it).
int axes(int rank) { return rank < 0 || rank > kMaxRank ? 0 : rank; }
}  // namespace

int64_t TensorLayout::numel() const {
  if (rank < 0 || rank > kMaxRank) return 0;
  int64_t n = 1;
  for (int d = 0; d < rank; ++d)
    if (!checked_mul(n, shape[d], &n)) return INT64_MAX;  // saturates; validation rejects it
  return n;
}

bool TensorLayout::is_contiguous() const {
  int64_t expect = 1;
  for (int d = axes(rank) - 1; d >= 0; --d) {
    if (shape[d] == 0) return true;
    if (shape[d] != 1 && stride[d] != expect) return false;
    if (!checked_mul(expect, shape[d], &expect)) return false;
  }
  return true;
}

bool TensorLayout::byte_extent(int64_t* lo, int64_t* hi) const {
  *lo = *hi = 0;
  if (rank < 0 || rank > kMaxRank) return false;
  if (numel() == 0) return true;
  int64_t min_off = 0, max_off = 0;
  for (int d = 0; d < rank; ++d) {
    int64_t span = 0, last = 0;
    if (shape[d] < 0 || !checked_sub(shape[d], 1, &last) || !checked_mul(stride[d], last, &span)) return false;
    if (span < 0) {
      if (!checked_add(min_off, span, &min_off)) return false;
    } else if (!checked_add(max_off, span, &max_off)) {
      return false;
    }
  }
  const int64_t es = static_cast<int64_t>(dtype_size(dtype));
  int64_t lo_b = 0, hi_b = 0;
  if (!checked_mul(min_off, es, &lo_b) || !checked_mul(max_off, es, &hi_b) ||
      !checked_add(hi_b, es, &hi_b))
    return false;
  *lo = lo_b;
  *hi = hi_b;
  return true;
}

void TensorLayout::set_contiguous_strides() {
  int64_t s = 1;
  for (int d = axes(rank) - 1; d >= 0; --d) {
    stride[d] = s;
    // past int64 the layout is invalid anyway (check_layout says so); saturate, never overflow
    if (!checked_mul(s, std::max<int64_t>(shape[d], 1), &s)) s = INT64_MAX;
  }
}

TensorLayout TensorLayout::contiguous() const {
  TensorLayout c = *this;
  c.set_contiguous_strides();
  return c;
}

bool TensorLayout::identical(const TensorLayout& o) const {
  if (dtype != o.dtype || rank != o.rank) return false;
  for (int i = 0; i < axes(rank); ++i)
    if (shape[i] != o.shape[i] || stride[i] != o.stride[i]) return false;
  return true;
}

size_t TensorLayout::hash() const {
  Fnv1a f;
  f.mix(dtype);
  f.mix(rank);
  for (int i = 0; i < axes(rank); ++i) f.mix(shape[i]), f.mix(stride[i]);
  return f.value();
}

TensorLayout TensorLayout::make(DType dtype, std::span<const int64_t> shape,
                                std::span<const int64_t> strides) {
  TensorLayout t;
  t.dtype = dtype;
  if (shape.size() > static_cast<size_t>(kMaxRank) ||
      (!strides.empty() && strides.size() != shape.size())) {
    t.rank = -1;
    return t;
  }
  t.rank = static_cast<int>(shape.size());
  std::copy(shape.begin(), shape.end(), t.shape);
  if (strides.empty()) {
    t.set_contiguous_strides();
  } else {
    std::copy(strides.begin(), strides.end(), t.stride);
  }
  return t;
}

}  // namespace baracuda
