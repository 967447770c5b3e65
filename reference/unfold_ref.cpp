#include "unfold_ref.hpp"

namespace baracuda::ref {

namespace {

int axis(const UnfoldBackwardDescriptor& d) { return d.dim < 0 ? d.dim + d.rank : d.dim; }
int64_t windows(const UnfoldBackwardDescriptor& d) { return (d.shape[axis(d)] - d.size) / d.step + 1; }

// For every element of the unfolded view (row-major), its source element of x (row-major).
template <class F>
void each_window_element(const UnfoldBackwardDescriptor& d, F&& f) {
  const int dim = axis(d);
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < dim; ++a) outer *= d.shape[a];
  for (int a = dim + 1; a < d.rank; ++a) inner *= d.shape[a];
  const int64_t len = d.shape[dim], nw = windows(d);
  int64_t o = 0;  // flat index in the unfolded view: [outer, W, inner, size]
  for (int64_t b = 0; b < outer; ++b)
    for (int64_t w = 0; w < nw; ++w)
      for (int64_t r = 0; r < inner; ++r)
        for (int64_t k = 0; k < d.size; ++k, ++o) f(o, (b * len + w * d.step + k) * inner + r);
}

int64_t count(const int64_t* s, size_t n) {
  int64_t c = 1;
  for (size_t i = 0; i < n; ++i) c *= s[i];
  return c;
}

}  // namespace

std::vector<int64_t> unfold_shape(const UnfoldBackwardDescriptor& d) {
  std::vector<int64_t> s(d.shape, d.shape + d.rank);
  s[static_cast<size_t>(axis(d))] = windows(d);
  s.push_back(d.size);
  return s;
}

std::vector<double> unfold_forward(const UnfoldBackwardDescriptor& d, const std::vector<double>& x) {
  const std::vector<int64_t> s = unfold_shape(d);
  std::vector<double> out(static_cast<size_t>(count(s.data(), s.size())));
  each_window_element(d, [&](int64_t o, int64_t src) { out[static_cast<size_t>(o)] = x[static_cast<size_t>(src)]; });
  return out;
}

std::vector<double> unfold_backward(const UnfoldBackwardDescriptor& d, const std::vector<double>& dout) {
  std::vector<double> dx(static_cast<size_t>(count(d.shape, static_cast<size_t>(d.rank))), 0.0);
  each_window_element(d, [&](int64_t o, int64_t src) { dx[static_cast<size_t>(src)] += dout[static_cast<size_t>(o)]; });
  return dx;
}

}  // namespace baracuda::ref
