// Reference adapter of the scan rows: x's lines along `dim` gathered in element order, then
// reference/scan_ref.cpp's definitions line by line.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "baracuda/ops/scan.hpp"
#include "elementwise_ref.hpp"
#include "harness/buffer.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"
#include "scan_ref.hpp"

namespace baracuda::harness {

namespace {

std::vector<std::vector<int64_t>> lines_of(const ScanDescriptor& d) {
  return line_indices(std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)), d.rank == 0 ? 0 : (d.dim < 0 ? d.dim + d.rank : d.dim));
}

std::vector<double> gather(const std::vector<double>& v, const std::vector<int64_t>& at) { return gather_at(v, at); }

Status scan(RefCall& c) {
  const ScanDescriptor& d = c.desc<ScanDescriptor>();
  const std::vector<double>& x = c["x"].in;
  RefOperand& y = c["y"];
  RefOperand* ix = c.find("indices");
  const int64_t n = static_cast<int64_t>(x.size());
  y.want.assign(static_cast<size_t>(n), 0);
  y.mag.assign(static_cast<size_t>(n), 0);
  if (ix) ix->want.assign(static_cast<size_t>(n), 0);
  const DType out = y.spec->dtype;
  for (const std::vector<int64_t>& line : lines_of(d)) {
    const ref::ScanLine r = ref::scan_line(d, gather(x, line));
    for (size_t i = 0; i < line.size(); ++i) {
      const size_t f = static_cast<size_t>(line[i]);
      y.want[f] = is_floating(out) ? ref::store_as(out, r.value[i]) : static_cast<double>(ref::store_int(out, static_cast<int64_t>(r.value[i])));
      y.mag[f] = r.mag[i] > 0 ? r.mag[i] : std::fabs(r.value[i]);
      if (ix) ix->want[f] = static_cast<double>(r.index[i]);
    }
  }
  y.exact = !is_floating(out) || d.op == ScanKind::kCummax || d.op == ScanKind::kCummin;
  if (ix) ix->exact = true;
  return {};
}

// The backward's inputs: x in a range where the products stay O(1) (cumprod), y the forward of
// x (cumprod, logcumsumexp: the kernels read it as the forward's output), indices a valid
// cummax pattern (each position keeps the previous index or takes its own).
void scan_backward_fill(RefCall& c) {
  const ScanDescriptor& d = c.desc<ScanDescriptor>();
  const std::vector<std::vector<int64_t>> lines = lines_of(d);
  const int64_t n = numel_of(std::span<const int64_t>(d.shape, static_cast<size_t>(d.rank)));
  const int64_t L = d.rank == 0 ? 1 : d.shape[d.dim < 0 ? d.dim + d.rank : d.dim];
  if (RefOperand* ix = c.find("indices")) {
    ix->in.assign(static_cast<size_t>(n), 0);
    for (const std::vector<int64_t>& line : lines) {
      int64_t cur = 0;
      for (int64_t q = 0; q < L; ++q) {
        if (q == 0 || (c.rng()() & 1)) cur = q;
        const int64_t e = d.reverse ? L - 1 - q : q, ce = d.reverse ? L - 1 - cur : cur;
        ix->in[static_cast<size_t>(line[static_cast<size_t>(e)])] = static_cast<double>(ce);
      }
    }
    ix->given = true;
  }
  RefOperand* x = c.find("x");
  RefOperand* y = c.find("y");
  if (!x || !y) return;
  const bool prod = d.op == ScanKind::kCumprod;
  std::uniform_real_distribution<double> u(prod ? 0.7 : -2.0, prod ? 1.4 : 2.0);
  x->in.assign(static_cast<size_t>(n), 0);
  for (double& v : x->in) v = ref::store_as(d.dtype, u(c.rng()));
  y->in.assign(static_cast<size_t>(n), 0);
  for (const std::vector<int64_t>& line : lines) {  // the forward, O(L) per line
    double acc = prod ? 1.0 : -std::numeric_limits<double>::infinity();
    for (int64_t q = 0; q < L; ++q) {
      const size_t f = static_cast<size_t>(line[static_cast<size_t>(d.reverse ? L - 1 - q : q)]);
      const double v = x->in[f];
      if (d.exclusive) y->in[f] = ref::store_as(y->spec->dtype, acc);
      acc = prod ? acc * v : std::max(acc, v) + std::log1p(std::exp(-std::fabs(acc - v)));
      if (!d.exclusive) y->in[f] = ref::store_as(y->spec->dtype, acc);
    }
  }
  x->given = y->given = true;
}

Status scan_backward(RefCall& c) {
  const ScanDescriptor& d = c.desc<ScanDescriptor>();
  const RefOperand* x = c.find("x");
  const RefOperand* ix = c.find("indices");
  const std::vector<double>& dy = c["dy"].in;
  RefOperand& dx = c["dx"];
  dx.want.assign(dy.size(), 0);
  dx.mag.assign(dy.size(), 0);
  for (const std::vector<int64_t>& line : lines_of(d)) {
    std::vector<int64_t> idx;
    if (ix) idx = as_ints(gather(ix->in, line));
    std::vector<double> mag;
    const std::vector<double> g = ref::scan_backward_line(d, x ? gather(x->in, line) : std::vector<double>(line.size(), 0.0),
                                                          gather(dy, line), idx, &mag);
    // the kernels read the forward's y as stored (cumprod: the prefix product; logcumsumexp:
    // exp(x - y)): its rounding is a relative error of up to eps(y) (times |y| inside exp)
    const RefOperand* y = c.find("y");
    double ymax = 1;
    if (y)
      for (int64_t f : line)
        if (std::isfinite(y->in[static_cast<size_t>(f)])) ymax = std::max(ymax, std::fabs(y->in[static_cast<size_t>(f)]));
    const double ey = y ? rounding_eps(y->spec->dtype) * (d.op == ScanKind::kLogCumSumExp ? ymax : 1.0) : 0.0;
    if (y && dx.extra.empty()) dx.extra.assign(dy.size(), 0);
    for (size_t i = 0; i < line.size(); ++i) {
      dx.want[static_cast<size_t>(line[i])] = ref::store_as(d.dtype, g[i]);
      dx.mag[static_cast<size_t>(line[i])] = mag[i];
      if (y) dx.extra[static_cast<size_t>(line[i])] = 2 * ey * mag[i];
    }
  }
  return {};
}

}  // namespace

OpRef ref_scan() { return {nullptr, &scan, nullptr}; }
OpRef ref_scan_backward() { return {&scan_backward_fill, &scan_backward, nullptr}; }

}  // namespace baracuda::harness
