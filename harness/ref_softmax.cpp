// Reference adapters of the softmax rows: each line along `dim` through
// reference/softmax_norm_loss_ref.cpp's rows. Error scale per element (64 accumulator epsilons
// of it): the exponent's rounding |x - m| and the line sum's growth log2(L + 1) relative to |y|
// (softmax), absolute for log_softmax together with |log s|; the backward's sum Σ|dy·y| (Σ|dy|)
// likewise. Masks (bool, additive, causal): the line's argument is formed as the header defines
// (reference/softmax_norm_loss_ref.cpp's masked_line), the fill gives a bool mask 3/4 kept and an
// additive one 1/4 -inf, and removes every entry of the first line (masked_rows' case).
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

// The masks of one line (flat element indices `line` of x's row-major order): keep / add per
// element and the causal query index.
ref::LineMask mask_of(const SoftmaxDescriptor& d, RefCall& c, const std::vector<int64_t>& line, bool backward) {
  ref::LineMask m;
  if (d.mask_dtype && (!backward || *d.mask_dtype == DType::boolean)) {
    m.values = gather_at(c["mask"].in, line);
    m.kind = *d.mask_dtype == DType::boolean ? ref::MaskKind::kKeep : ref::MaskKind::kAdd;
  }
  if (d.causal) {
    const int axis = d.dim < 0 ? d.dim + d.rank : d.dim;
    int64_t inner = 1;
    for (int a = axis; a < d.rank; ++a) inner *= d.shape[a];
    m.causal = true;
    m.q = line.empty() ? 0 : line[0] / inner % d.shape[axis - 1];
    m.diagonal = d.diagonal;
  }
  m.zero_rows = d.masked_rows == MaskedRows::kZero;
  return m;
}

// The forward of one line as the plan defines it (softmin: softmax of -x), masks applied.
std::vector<double> forward_line(const SoftmaxDescriptor& d, std::vector<double> x, const ref::LineMask& m) {
  if (d.op == SoftmaxKind::kSoftmin)
    for (double& v : x) v = -v;
  return ref::masked_softmax_row(x, m, d.op == SoftmaxKind::kLogSoftmax);
}

// A mask's values: bool 3/4 kept, additive 1/4 -inf and the rest in [-2, 2]; the first line
// fully removed.
void fill_mask(RefCall& c) {
  const SoftmaxDescriptor& d = c.desc<SoftmaxDescriptor>();
  RefOperand* mk = c.find("mask");
  if (!mk) return;
  const bool keep = mk->spec->dtype == DType::boolean;
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  mk->in.resize(static_cast<size_t>(mk->spec->numel()));
  for (double& v : mk->in) {
    const uint64_t r = c.rng()();
    v = keep ? ((r & 3) != 0 ? 1.0 : 0.0) : ((r & 3) == 0 ? -INFINITY : ref::store_as(mk->spec->dtype, u(c.rng())));
  }
  const auto lines = lines_of(d);
  if (!lines.empty())
    for (int64_t f : lines[0]) mk->in[static_cast<size_t>(f)] = keep ? 0.0 : -INFINITY;
  mk->given = true;
}

Status forward(RefCall& c) {
  const SoftmaxDescriptor& d = c.desc<SoftmaxDescriptor>();
  const std::vector<double>& x = c["x"].in;
  RefOperand& y = c["y"];
  y.want.assign(x.size(), 0);
  y.mag.assign(x.size(), 0);
  const bool log = d.op == SoftmaxKind::kLogSoftmax;
  for (const std::vector<int64_t>& line : lines_of(d)) {
    const ref::LineMask m = mask_of(d, c, line, false);
    std::vector<double> xl = gather_at(x, line);
    const std::vector<double> r = forward_line(d, xl, m);
    if (d.op == SoftmaxKind::kSoftmin)
      for (double& v : xl) v = -v;
    xl = ref::apply_line_mask(xl, m);
    double mx = -INFINITY, s = 0;
    for (double v : xl) mx = std::max(mx, v);
    for (double v : xl) s += std::exp(v - mx);
    const double grow = std::log2(static_cast<double>(line.size()) + 1);
    for (size_t i = 0; i < line.size(); ++i) {
      const size_t f = static_cast<size_t>(line[i]);
      y.want[f] = r[i];
      const double dm = std::isfinite(mx) && std::isfinite(xl[i]) ? std::fabs(xl[i] - mx) : 0.0;
      y.mag[f] = log ? dm + std::fabs(std::log(s)) + grow : std::fabs(r[i]) * (1 + dm + grow);
    }
  }
  return {};
}

// The backward's y: the forward of random x (masks applied), stored in y's dtype (a valid
// softmax / log_softmax).
void backward_fill(RefCall& c) {
  const SoftmaxDescriptor& d = c.desc<SoftmaxDescriptor>();
  fill_mask(c);
  RefOperand& y = c["y"];
  const int64_t n = y.spec->numel();
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  std::vector<double> x(static_cast<size_t>(n));
  for (double& v : x) v = u(c.rng());
  y.in.assign(static_cast<size_t>(n), 0);
  for (const std::vector<int64_t>& line : lines_of(d)) {
    const std::vector<double> r = forward_line(d, gather_at(x, line), mask_of(d, c, line, true));
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
    std::vector<double> g = ref::masked_softmax_backward_row(yl, dl, mask_of(d, c, line, true), log);
    double sabs = 0;
    for (size_t i = 0; i < line.size(); ++i) sabs += log ? std::fabs(dl[i]) : std::fabs(dl[i] * yl[i]);
    const double grow = 1 + std::log2(static_cast<double>(line.size()) + 1);
    for (size_t i = 0; i < line.size(); ++i) {
      const size_t f = static_cast<size_t>(line[i]);
      dx.want[f] = d.op == SoftmaxKind::kSoftmin ? -g[i] : g[i];
      const double e = std::isinf(yl[i]) ? 0.0 : std::exp(yl[i]);
      dx.mag[f] = log ? std::fabs(dl[i]) + e * sabs * grow : std::fabs(yl[i]) * (std::fabs(dl[i]) + sabs * grow);
      if (!std::isfinite(dx.mag[f])) dx.mag[f] = 0;  // a NaN line (masked_rows nan): NaN wanted, or 0 where removed
    }
  }
  return {};
}

}  // namespace

OpRef ref_softmax() { return {&fill_mask, &forward, nullptr}; }
OpRef ref_softmax_backward() { return {&backward_fill, &backward, nullptr}; }

}  // namespace baracuda::harness
