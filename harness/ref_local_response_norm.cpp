// Reference adapters of the local_response_norm rows: each line of channels (one batch index and
// spatial position) through reference/softmax_norm_loss_ref.cpp's local_response_norm_line and
// its backward. Error scales (64 accumulator epsilons of them): each output's |terms| (|y|; |dy| /
// d^beta plus the window term's Σ |u_j| · coef · |x|) times the window sum's growth
// 4 + log2(window) and the pow's 1 + |beta|.
#include <algorithm>
#include <cmath>

#include "baracuda/ops/local_response_norm.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "softmax_norm_loss_ref.hpp"

namespace baracuda::harness {

namespace {

std::vector<std::vector<int64_t>> lines_of(const LocalResponseNormDescriptor& d) {
  return line_indices(std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)), 1);
}

double growth(const LocalResponseNormDescriptor& d) {
  const double w = static_cast<double>(std::min(d.size, d.shape[1]));
  return (4 + std::log2(w + 1)) * (1 + std::fabs(d.beta));
}

// d_c of a line (the window sums), for the backward's scales.
std::vector<double> dens(const LocalResponseNormDescriptor& d, const std::vector<double>& x) {
  const int64_t C = static_cast<int64_t>(x.size());
  std::vector<double> r(x.size());
  for (int64_t c = 0; c < C; ++c) {
    double s = 0;
    for (int64_t j = std::max<int64_t>(0, c - d.size / 2); j <= std::min(C - 1, c + (d.size - 1) / 2); ++j)
      s += x[static_cast<size_t>(j)] * x[static_cast<size_t>(j)];
    r[static_cast<size_t>(c)] = d.k + d.alpha / static_cast<double>(d.size) * s;
  }
  return r;
}

Status forward(RefCall& c) {
  const LocalResponseNormDescriptor& d = c.desc<LocalResponseNormDescriptor>();
  const std::vector<double>& x = c["input"].in;
  RefOperand& y = c["output"];
  y.want.assign(x.size(), 0.0), y.mag.assign(x.size(), 0.0);
  const double gr = growth(d);
  for (const auto& line : lines_of(d)) {
    const std::vector<double> yl = ref::local_response_norm_line(gather_at(x, line), d.size, d.alpha, d.beta, d.k);
    for (size_t i = 0; i < line.size(); ++i) {
      const size_t f = static_cast<size_t>(line[i]);
      y.want[f] = yl[i], y.mag[f] = std::fabs(yl[i]) * gr;
    }
  }
  return {};
}

Status backward(RefCall& c) {
  const LocalResponseNormDescriptor& d = c.desc<LocalResponseNormDescriptor>();
  const std::vector<double>& x = c["input"].in;
  const std::vector<double>& dy = c["doutput"].in;
  RefOperand& dx = c["dinput"];
  dx.want.assign(x.size(), 0.0), dx.mag.assign(x.size(), 0.0);
  const double gr = growth(d), coef = 2 * std::fabs(d.alpha * d.beta) / static_cast<double>(d.size);
  for (const auto& line : lines_of(d)) {
    const std::vector<double> xl = gather_at(x, line), dyl = gather_at(dy, line);
    const std::vector<double> dxl = ref::local_response_norm_line_backward(xl, dyl, d.size, d.alpha, d.beta, d.k), den = dens(d, xl);
    const int64_t C = static_cast<int64_t>(xl.size());
    for (int64_t cc = 0; cc < C; ++cc) {
      double u = 0;
      for (int64_t j = std::max<int64_t>(0, cc - (d.size - 1) / 2); j <= std::min(C - 1, cc + d.size / 2); ++j) {
        const size_t k = static_cast<size_t>(j);
        u += std::fabs(dyl[k] * xl[k]) * std::pow(den[k], -d.beta - 1);
      }
      const size_t i = static_cast<size_t>(cc), f = static_cast<size_t>(line[i]);
      dx.want[f] = dxl[i];
      dx.mag[f] = (std::fabs(dyl[i]) * std::pow(den[i], -d.beta) + coef * std::fabs(xl[i]) * u) * gr;
    }
  }
  return {};
}

}  // namespace

OpRef ref_local_response_norm() { return {nullptr, &forward, nullptr}; }
OpRef ref_local_response_norm_backward() { return {nullptr, &backward, nullptr}; }

}  // namespace baracuda::harness
