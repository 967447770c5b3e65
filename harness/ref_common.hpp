// Helpers the reference adapters share: logical index maps between shapes, |v|, integer views
// of double values.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "baracuda/core/dtype.hpp"

namespace baracuda::harness {

inline std::vector<double> abs_of(std::vector<double> v) {
  for (double& e : v) e = std::fabs(e);
  return v;
}

inline std::vector<int64_t> as_ints(const std::vector<double>& v) {
  std::vector<int64_t> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = static_cast<int64_t>(v[i]);
  return r;
}

// v held in an integer dtype (PyTorch's static_cast of an in-range value; wraps otherwise).
inline double wrap_int(DType dt, int64_t v) {
  switch (dt) {
    case DType::i8: return static_cast<int8_t>(v);
    case DType::u8: return static_cast<uint8_t>(v);
    case DType::i16: return static_cast<int16_t>(v);
    case DType::i32: return static_cast<int32_t>(v);
    default: return static_cast<double>(v);
  }
}

inline int64_t numel_of(std::span<const int64_t> s) {
  int64_t n = 1;
  for (int64_t e : s) n *= e;
  return n;
}

// The row-major index, in an operand of shape `in` broadcast to `out` (right-aligned, extent-1
// axes stretched), of the element at row-major index f of `out`.
inline int64_t broadcast_index(std::span<const int64_t> out, int64_t f, std::span<const int64_t> in) {
  int64_t idx = 0, mul = 1;
  const int off = static_cast<int>(out.size()) - static_cast<int>(in.size());
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    const int64_t c = f % out[static_cast<size_t>(d)];
    f /= out[static_cast<size_t>(d)];
    const int s = d - off;
    if (s < 0) continue;
    if (in[static_cast<size_t>(s)] != 1) idx += c * mul;
    mul *= in[static_cast<size_t>(s)];
  }
  return idx;
}

// Row-major flat indices of each line along `axis` of `shape` (rank 0: one line of one), in
// element order; lines in row-major order of the other axes.
inline std::vector<std::vector<int64_t>> line_indices(std::span<const int64_t> shape, int axis) {
  const int rank = static_cast<int>(shape.size());
  const int64_t n = numel_of(shape);
  const int64_t L = rank == 0 ? 1 : shape[static_cast<size_t>(axis)];
  std::vector<std::vector<int64_t>> lines(static_cast<size_t>(L == 0 ? 0 : n / L));
  for (int64_t f = 0; f < n; ++f) {
    int64_t rem = f, line = 0, mul = 1;
    for (int a = rank - 1; a >= 0; --a) {
      const int64_t c = rem % shape[static_cast<size_t>(a)];
      rem /= shape[static_cast<size_t>(a)];
      if (a != axis) line += c * mul, mul *= shape[static_cast<size_t>(a)];
    }
    lines[static_cast<size_t>(line)].push_back(f);
  }
  return lines;
}

// The values of v at the indices `at`.
inline std::vector<double> gather_at(const std::vector<double>& v, const std::vector<int64_t>& at) {
  std::vector<double> r;
  r.reserve(at.size());
  for (int64_t f : at) r.push_back(v[static_cast<size_t>(f)]);
  return r;
}

}  // namespace baracuda::harness
