#include "pad_ref.hpp"

#include <cmath>

namespace baracuda::ref {

int64_t numel(const int64_t* shape, int rank) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

std::vector<int64_t> out_shape(const PadDescriptor& d) {
  std::vector<int64_t> s(d.rank);
  for (int a = 0; a < d.rank; ++a) s[a] = d.in_shape[a] + d.pad_low[a] + d.pad_high[a];
  return s;
}

int64_t pad_source_index(PadMode mode, int64_t n, int64_t lo, int64_t o) {
  int64_t i = o - lo;
  switch (mode) {
    case PadMode::kConstant:
      return (i >= 0 && i < n) ? i : -1;
    case PadMode::kReflect:
      // reflect about the edge elements (which are not repeated) until inside
      while (i < 0 || i >= n) {
        if (n == 1) return 0;
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
      }
      return i;
    case PadMode::kReplicate:
      return i < 0 ? 0 : (i >= n ? n - 1 : i);
    case PadMode::kCircular:
      return ((i % n) + n) % n;
  }
  return -1;
}

std::vector<int64_t> pad_source_map(const PadDescriptor& d) {
  const std::vector<int64_t> os = out_shape(d);
  const int64_t total = numel(os.data(), d.rank);
  std::vector<int64_t> map(static_cast<size_t>(total));
  std::vector<int64_t> idx(d.rank, 0);
  for (int64_t f = 0; f < total; ++f) {
    int64_t src = 0;
    for (int a = 0; a < d.rank; ++a) {
      const int64_t s = pad_source_index(d.mode, d.in_shape[a], d.pad_low[a], idx[a]);
      if (s < 0) {
        src = -1;
        break;
      }
      src = src * d.in_shape[a] + s;
    }
    map[static_cast<size_t>(f)] = src;
    for (int a = d.rank - 1; a >= 0; --a) {  // row-major increment
      if (++idx[a] < os[a]) break;
      idx[a] = 0;
    }
  }
  return map;
}

std::vector<double> pad_forward(const PadDescriptor& d, const std::vector<double>& x) {
  const std::vector<int64_t> map = pad_source_map(d);
  const double fill = d.value.as_double();
  std::vector<double> y(map.size());
  for (size_t f = 0; f < map.size(); ++f) y[f] = map[f] < 0 ? fill : x[static_cast<size_t>(map[f])];
  return y;
}

std::vector<double> pad_backward(const PadDescriptor& d, const std::vector<double>& dy) {
  const std::vector<int64_t> map = pad_source_map(d);
  std::vector<double> dx(static_cast<size_t>(numel(d.in_shape, d.rank)), 0.0);
  for (size_t f = 0; f < map.size(); ++f)
    if (map[f] >= 0) dx[static_cast<size_t>(map[f])] += dy[f];
  return dx;
}

}  // namespace baracuda::ref
