// Float64 reference of the scans: for each position the set of elements it covers, folded from
// scratch.
#include "scan_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "baracuda/core/dtype.hpp"

namespace baracuda::ref {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Element index of scan position q.
int64_t elem(const ScanDescriptor& d, int64_t L, int64_t q) { return d.reverse ? L - 1 - q : q; }
// Positions covered by the output at position q: [0, end(q)).
int64_t cover_end(const ScanDescriptor& d, int64_t q) { return d.exclusive ? q : q + 1; }

double log_sum_exp(const std::vector<double>& v) {
  if (v.empty()) return -kInf;
  double m = -kInf;
  for (double t : v) {
    if (std::isnan(t)) return kNaN;
    m = std::max(m, t);
  }
  if (std::isinf(m)) return m;
  double s = 0;
  for (double t : v) s += std::exp(t - m);
  return m + std::log(s);
}

}  // namespace

ScanLine scan_line(const ScanDescriptor& d, const std::vector<double>& xs) {
  const int64_t L = static_cast<int64_t>(xs.size());
  ScanLine r;
  r.value.assign(xs.size(), 0);
  r.index.assign(xs.size(), 0);
  r.mag.assign(xs.size(), 0);
  const bool ints = !is_floating(d.dtype);
  for (int64_t q = 0; q < L; ++q) {
    std::vector<double> cov;
    std::vector<int64_t> at;
    for (int64_t p = 0; p < cover_end(d, q); ++p) cov.push_back(xs[static_cast<size_t>(elem(d, L, p))]), at.push_back(elem(d, L, p));
    const size_t e = static_cast<size_t>(elem(d, L, q));
    double v = 0, mag = 0;
    switch (d.op) {
      case ScanKind::kCumsum:
        if (ints) {
          uint64_t s = 0;
          for (double t : cov) s += static_cast<uint64_t>(static_cast<int64_t>(t));
          v = static_cast<double>(static_cast<int64_t>(s));
        } else {
          for (double t : cov) v += t, mag += std::fabs(t);
        }
        break;
      case ScanKind::kCumprod:
        if (ints) {
          uint64_t s = 1;
          for (double t : cov) s *= static_cast<uint64_t>(static_cast<int64_t>(t));
          v = static_cast<double>(static_cast<int64_t>(s));
        } else {
          v = 1;
          for (double t : cov) v *= t;
          mag = std::fabs(v) * static_cast<double>(cov.size());
        }
        break;
      case ScanKind::kLogCumSumExp:
        v = log_sum_exp(cov);
        mag = std::fabs(v) + static_cast<double>(cov.size());
        break;
      default: {  // cummax / cummin: the last index of the extreme; the last NaN once there is one
        const bool mx = d.op == ScanKind::kCummax;
        int64_t best = -1;
        for (size_t i = 0; i < cov.size(); ++i) {
          if (std::isnan(cov[i])) best = static_cast<int64_t>(i);
        }
        if (best < 0) {
          for (size_t i = 0; i < cov.size(); ++i)
            if (best < 0 || (mx ? cov[i] >= cov[static_cast<size_t>(best)] : cov[i] <= cov[static_cast<size_t>(best)]))
              best = static_cast<int64_t>(i);
        }
        v = cov[static_cast<size_t>(best)];
        r.index[e] = at[static_cast<size_t>(best)];
        break;
      }
    }
    r.value[e] = v;
    r.mag[e] = mag;
  }
  return r;
}

std::vector<double> scan_backward_line(const ScanDescriptor& d, const std::vector<double>& xs, const std::vector<double>& dy,
                                       const std::vector<int64_t>& indices, std::vector<double>* mag) {
  const int64_t L = static_cast<int64_t>(dy.size());
  std::vector<double> dx(dy.size(), 0), m(dy.size(), 0);
  if (d.op == ScanKind::kCummax || d.op == ScanKind::kCummin) {
    for (int64_t j = 0; j < L; ++j) {
      const int64_t i = indices[static_cast<size_t>(j)];
      if (i < 0 || i >= L) continue;
      dx[static_cast<size_t>(i)] += dy[static_cast<size_t>(j)];
      m[static_cast<size_t>(i)] += std::fabs(dy[static_cast<size_t>(j)]);
    }
  } else {
    std::vector<double> y;  // logcumsumexp: the forward, in float64
    if (d.op == ScanKind::kLogCumSumExp) y = scan_line(d, xs).value;
    // dx at element of position i: Σ over outputs at positions j covering i
    for (int64_t i = 0; i < L; ++i) {
      const size_t ei = static_cast<size_t>(elem(d, L, i));
      for (int64_t j = 0; j < L; ++j) {
        if (!(i < cover_end(d, j))) continue;
        const size_t ej = static_cast<size_t>(elem(d, L, j));
        double term = dy[ej];
        if (d.op == ScanKind::kCumprod)
          for (int64_t k = 0; k < cover_end(d, j); ++k)
            if (k != i) term *= xs[static_cast<size_t>(elem(d, L, k))];
        if (d.op == ScanKind::kLogCumSumExp) term *= std::exp(xs[ei] - y[ej]);
        dx[ei] += term;
        m[ei] += std::fabs(term) * (d.op == ScanKind::kCumprod ? static_cast<double>(L) : 1.0);
      }
    }
  }
  if (mag) *mag = m;
  return dx;
}

}  // namespace baracuda::ref
