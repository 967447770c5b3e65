// Float64 reference of ReducePlan: textbook definitions, one output at a time.
#include "reduce_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace baracuda::ref {

std::vector<bool> reduced_axes(const ReduceDescriptor& d) {
  std::vector<bool> r(static_cast<size_t>(std::max(d.rank, 0)), d.num_dims == 0);
  for (int i = 0; i < d.num_dims; ++i) {
    const int a = d.dims[i] < 0 ? d.dims[i] + d.rank : d.dims[i];
    if (a >= 0 && a < d.rank) r[static_cast<size_t>(a)] = true;
  }
  return r;
}

ReduceResult reduce_one(const ReduceDescriptor& d, const std::vector<double>& xs) {
  constexpr double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double n = static_cast<double>(xs.size());
  ReduceResult r;
  double sum_abs = 0;
  for (double v : xs) sum_abs += std::fabs(v);
  switch (d.op) {
    case ReduceKind::kSum:
      for (double v : xs) r.value += v;
      r.mag = sum_abs;
      break;
    case ReduceKind::kNanSum:
      for (double v : xs)
        if (!std::isnan(v)) r.value += v, r.mag += std::fabs(v);
      break;
    case ReduceKind::kMean:
      for (double v : xs) r.value += v;
      r.value /= n;  // 0 / 0: NaN for an empty reduction
      r.mag = sum_abs / n;
      break;
    case ReduceKind::kNanMean: {
      double c = 0;
      for (double v : xs)
        if (!std::isnan(v)) r.value += v, r.mag += std::fabs(v), c += 1;
      r.value /= c;
      r.mag /= c;
      break;
    }
    case ReduceKind::kProd:
      r.value = 1;
      for (double v : xs) r.value *= v;
      r.mag = std::fabs(r.value) * std::max(1.0, n);  // each factor's rounding
      break;
    case ReduceKind::kAmax: case ReduceKind::kAmin: case ReduceKind::kArgmax: case ReduceKind::kArgmin: case ReduceKind::kMax:
    case ReduceKind::kMin: {
      const bool mx = d.op == ReduceKind::kAmax || d.op == ReduceKind::kArgmax || d.op == ReduceKind::kMax;
      r.value = xs.empty() ? nan : xs[0];
      for (size_t i = 1; i < xs.size(); ++i) {
        if (std::isnan(r.value)) break;  // the first NaN is the extreme
        const double v = xs[i];
        if (std::isnan(v) || (mx ? v > r.value : v < r.value)) r.value = v, r.index = static_cast<int64_t>(i);
      }
      break;
    }
    case ReduceKind::kAll:
      r.value = 1;
      for (double v : xs) r.value = r.value != 0 && v != 0 ? 1 : 0;
      break;
    case ReduceKind::kAny:
      for (double v : xs) r.value = r.value != 0 || v != 0 ? 1 : 0;
      break;
    case ReduceKind::kCountNonzero:
      for (double v : xs) r.value += v != 0 ? 1 : 0;  // NaN counts
      break;
    case ReduceKind::kLogSumExp: {
      double m = -inf;
      bool has_nan = false;
      for (double v : xs) has_nan |= std::isnan(v), m = std::max(m, v);
      if (has_nan) r.value = nan;
      else if (std::isinf(m)) r.value = m;
      else {
        double s = 0;
        for (double v : xs) s += std::exp(v - m);
        r.value = m + std::log(s);
      }
      r.mag = std::fabs(r.value) + 1;
      break;
    }
    case ReduceKind::kNorm: {
      const double p = d.p;
      if (p == 0) {
        for (double v : xs) r.value += v != 0 ? 1 : 0;
      } else if (std::isinf(p)) {
        r.value = p > 0 ? 0 : inf;
        for (double v : xs) {
          const double a = std::fabs(v);
          if (std::isnan(a) || std::isnan(r.value)) r.value = nan;
          else r.value = p > 0 ? std::max(r.value, a) : std::min(r.value, a);
        }
      } else {
        double s = 0;
        for (double v : xs) s += std::pow(std::fabs(v), p);
        r.value = std::pow(s, 1.0 / p);
        r.mag = std::fabs(r.value) * std::max(1.0, std::fabs(p));
      }
      break;
    }
    case ReduceKind::kAminmax: {
      ReduceDescriptor e = d;
      e.op = ReduceKind::kAmax;
      const ReduceResult hi = reduce_one(e, xs);
      e.op = ReduceKind::kAmin;
      r = reduce_one(e, xs);
      r.value2 = hi.value;
      break;
    }
    case ReduceKind::kVarMean: case ReduceKind::kStdMean: {
      ReduceDescriptor e = d;
      e.op = d.op == ReduceKind::kVarMean ? ReduceKind::kVar : ReduceKind::kStd;
      const ReduceResult v = reduce_one(e, xs);
      e.op = ReduceKind::kMean;
      const ReduceResult m = reduce_one(e, xs);
      r = v;
      r.value2 = m.value;
      r.mag2 = m.mag;
      break;
    }
    case ReduceKind::kVar: case ReduceKind::kStd: {
      double mean = 0, m2 = 0, sq = 0;
      for (double v : xs) mean += v;
      mean /= n;
      for (double v : xs) m2 += (v - mean) * (v - mean), sq += v * v;
      const double dof = std::max(0.0, n - d.correction);
      r.value = m2 / dof;
      r.mag = sq / std::max(1.0, dof);  // the cancellation an f32 Welford update sees
      if (d.op == ReduceKind::kStd) {
        r.mag = std::sqrt(r.mag) + std::fabs(std::sqrt(r.value));
        r.value = std::sqrt(r.value);
      }
      break;
    }
  }
  return r;
}

std::vector<double> reduce_backward_one(const ReduceDescriptor& d, const std::vector<double>& xs, double y, double dy,
                                        int64_t index, std::vector<double>* mag, double y2, double dy2) {
  const double n = static_cast<double>(xs.size());
  double mean = 0;
  for (double v : xs) mean += v;
  mean /= n;
  const double dof = std::max(0.0, n - d.correction);
  std::vector<double> dx(xs.size(), 0.0);
  if (mag) mag->assign(xs.size(), 0.0);
  // PyTorch's masks: amax / amin x == y; norm ±inf |x| == y or both NaN; nanmean !isnan(x)
  const bool inf_norm = d.op == ReduceKind::kNorm && std::isinf(d.p);
  auto in_mask = [&](double x) {
    if (d.op == ReduceKind::kAmax || d.op == ReduceKind::kAmin) return x == y;
    if (inf_norm) return std::fabs(x) == y || (std::isnan(x) && std::isnan(y));
    return !std::isnan(x);
  };
  double count = 0, count_max = 0;  // aminmax: count the min's ties, count_max the max's
  for (double v : xs) count += in_mask(v) ? 1 : 0;
  if (d.op == ReduceKind::kAminmax) {
    count = count_max = 0;
    for (double v : xs) count += v == y ? 1 : 0, count_max += v == y2 ? 1 : 0;
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i], s = x > 0 ? 1 : (x < 0 ? -1 : 0);
    double v = 0, m = std::fabs(dy);
    switch (d.op) {
      case ReduceKind::kSum: v = dy; break;
      case ReduceKind::kNanSum: v = std::isnan(x) ? 0 : dy; break;
      case ReduceKind::kMean: v = dy / n; m = std::fabs(v); break;
      case ReduceKind::kLogSumExp: v = dy * std::exp(x - y); m = std::fabs(v) * (std::fabs(x) + std::fabs(y) + 1); break;
      case ReduceKind::kProd: {  // the product of the others, exactly
        v = dy;
        for (size_t j = 0; j < xs.size(); ++j)
          if (j != i) v *= xs[j];
        m = std::fabs(v) * n;
        break;
      }
      case ReduceKind::kAmax: case ReduceKind::kAmin: case ReduceKind::kNanMean:  // (dy / count) * mask
        v = dy / count * (in_mask(x) ? 1.0 : 0.0);
        m = std::fabs(v);
        break;
      case ReduceKind::kNorm:
        if (inf_norm) {  // sgn(x) * mask * dy / count
          v = (std::isnan(x) ? x : s) * (in_mask(x) ? 1.0 : 0.0) * (dy / count);
          m = std::fabs(v);
          break;
        }
        if (d.p == 0) v = 0;
        else if (d.p == 1) v = dy * s;
        else if (d.p == 2) v = y == 0 ? 0 : dy * x / y;
        else v = y == 0 ? 0 : dy * s * std::pow(std::fabs(x), d.p - 1) / std::pow(y, d.p - 1);
        m = std::fabs(v) * std::max(1.0, std::fabs(d.p));
        break;
      case ReduceKind::kVar: case ReduceKind::kVarMean:
        v = dy * 2 * (x - mean) / dof;
        m = std::fabs(dy) * 2 * (std::fabs(x) + std::fabs(mean)) / dof;
        if (d.op == ReduceKind::kVarMean) v += dy2 / n, m += std::fabs(dy2) / n;
        break;
      case ReduceKind::kStd: case ReduceKind::kStdMean:
        v = y == 0 ? 0 : dy * (x - mean) / (dof * y);
        m = y == 0 ? 0 : std::fabs(dy) * (std::fabs(x) + std::fabs(mean)) / (dof * std::fabs(y));
        if (d.op == ReduceKind::kStdMean) v += dy2 / n, m += std::fabs(dy2) / n;
        break;
      case ReduceKind::kAminmax:  // amin's (dy / count) * (x == y) plus amax's with dy2 and y2
        v = dy / count * (x == y ? 1.0 : 0.0) + dy2 / count_max * (x == y2 ? 1.0 : 0.0);
        m = std::fabs(dy / count) + std::fabs(dy2 / count_max);
        break;
      case ReduceKind::kMax: case ReduceKind::kMin: v = static_cast<int64_t>(i) == index ? dy : 0; break;
      default: break;
    }
    dx[i] = v;
    if (mag) (*mag)[i] = m;
  }
  return dx;
}

}  // namespace baracuda::ref
