// Reference adapters of the softmax rows: each line along `dim` through
// reference/softmax_norm_loss_ref.cpp's rows. Error scale per element (64 accumulator epsilons
// of it): the exponent's rounding |x - m| and the line sum's growth log2(L + 1) relative to |y|
// (softmax), absolute for log_softmax together with |log s|; the backward's sum Σ|dy·y| (Σ|dy|)
// likewise.
#include <cmath>
#include <random>

#include "baracuda/ops/softmax.hpp"
#include "elementwise_ref.hpp"
#include "harness/buffer.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "softmax_norm_loss_ref.hpp"

namespace baracuda::harness {

namespace {

std::vector<std::vector<int64_t>> lines_of(const SoftmaxDescriptor& d) {
  const int axis = d.rank == 0 ? 0 : (d.dim < 0 ? d.dim + d.rank : d.dim);
  return line_indices(std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)), axis);
}

// The forward of one line as the plan defines it (softmin: softmax of -x).
std::vector<double> forward_line(const SoftmaxDescriptor& d, std::vector<double> x) {
  if (d.op == SoftmaxKind::kSoftmin)
    for (double& v : x) v = -v;
  return ref::softmax_row(x, d.op == SoftmaxKind::kLogSoftmax);
}

Status forward(RefCall& c) {
  const SoftmaxDescriptor& d = c.desc<SoftmaxDescriptor>();
  const std::vector<double>& x = c["x"].in;
  RefOperand& y = c["y"];
  y.want.assign(x.size(), 0);
  y.mag.assign(x.size(), 0);
  const bool log = d.op == SoftmaxKind::kLogSoftmax;
  for (const std::vector<int64_t>& line : lines_of(d)) {
    std::vector<double> xl = gather_at(x, line);
    const std::vector<double> r = forward_line(d, xl);
    if (d.op == SoftmaxKind::kSoftmin)
      for (double& v : xl) v = -v;
    double m = -INFINITY, s = 0;
    for (double v : xl) m = std::max(m, v);
    for (double v : xl) s += std::exp(v - m);
    const double grow = std::log2(static_cast<double>(line.size()) + 1);
    for (size_t i = 0; i < line.size(); ++i) {
      const size_t f = static_cast<size_t>(line[i]);
      y.want[f] = r[i];
      const double dm = std::isfinite(m) && std::isfinite(xl[i]) ? std::fabs(xl[i] - m) : 0.0;
      y.mag[f] = log ? dm + std::fabs(std::log(s)) + grow : std::fabs(r[i]) * (1 + dm + grow);
    }
  }
  return {};
}

// The backward's y: the forward of random x, stored in y's dtype (a valid softmax / log_softmax).
void backward_fill(RefCall& c) {
  const SoftmaxDescriptor& d = c.desc<SoftmaxDescriptor>();
  RefOperand& y = c["y"];
  const int64_t n = y.spec->numel();
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  std::vector<double> x(static_cast<size_t>(n));
  for (double& v : x) v = u(c.rng());
  y.in.assign(static_cast<size_t>(n), 0);
  for (const std::vector<int64_t>& line : lines_of(d)) {
    const std::vector<double> r = forward_line(d, gather_at(x, line));
    for (size_t i = 0; i < line.size(); ++i) y.in[static_cast<size_t>(line[i])] = ref::store_as(y.spec->dtype, r[i]);
  }
  y.given = true;
}

Status backward(RefCall& c) {
  const SoftmaxDescriptor& d = c.desc<SoftmaxDescriptor>();
  const std::vector<double>& y = c["y"].in;
  const std::vector<double>& dy = c["dy"].in;
  RefOperand& dx = c["dx"];
  dx.want.assign(y.size(), 0);
  dx.mag.assign(y.size(), 0);
  const bool log = d.op == SoftmaxKind::kLogSoftmax;
  for (const std::vector<int64_t>& line : lines_of(d)) {
    const std::vector<double> yl = gather_at(y, line), dl = gather_at(dy, line);
    std::vector<double> g = ref::softmax_backward_row(yl, dl, log);
    double sabs = 0;
    for (size_t i = 0; i < line.size(); ++i) sabs += log ? std::fabs(dl[i]) : std::fabs(dl[i] * yl[i]);
    const double grow = 1 + std::log2(static_cast<double>(line.size()) + 1);
    for (size_t i = 0; i < line.size(); ++i) {
      const size_t f = static_cast<size_t>(line[i]);
      dx.want[f] = d.op == SoftmaxKind::kSoftmin ? -g[i] : g[i];
      dx.mag[f] = log ? std::fabs(dl[i]) + std::exp(yl[i]) * sabs * grow : std::fabs(yl[i]) * (std::fabs(dl[i]) + sabs * grow);
    }
  }
  return {};
}

}  // namespace

OpRef ref_softmax() { return {nullptr, &forward, nullptr}; }
OpRef ref_softmax_backward() { return {&backward_fill, &backward, nullptr}; }

}  // namespace baracuda::harness
